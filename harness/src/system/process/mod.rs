//! Processes under the harness's control: each in its own process group, killed
//! with the harness ([`supervisor`]), and the crashes of those that die on their own
//! ([`crash`]).

pub mod crash;
pub mod supervisor;
