//! Processes under the harness's control: each in its own process group, killed
//! with the harness ([`supervisor`]), and the crashes of those that die on their own
//! ([`crash`]); children whose stdin and stdout the harness reads and writes
//! ([`piped`]: the nodes of a system tested through Maelstrom's protocol).

pub mod crash;
mod groups;
pub mod piped;
pub mod supervisor;

pub use groups::{die_with_harness, install_panic_hook, kill_all, live_groups};
