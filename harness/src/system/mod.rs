//! The system under test, as a campaign drives it.
//!
//! - [`process`]: processes under the harness's control (process groups, kill on
//!   drop, `PR_SET_PDEATHSIG`) and the crashes of those that die on their own;
//! - [`broker`]: our broker's cluster: its processes behind a proxy on every link,
//!   its API, its event lines.

pub mod broker;
pub mod process;
