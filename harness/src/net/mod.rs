//! The network between broker processes, under the harness's control: a TCP proxy on
//! every directed link ([`proxy`]), the cut links of a partition as plain data
//! (`grudge`), the partition shapes the nemesis draws (`topology`), and the degraded
//! conditions a proxy can put on a link short of a cut ([`shaping`]).

mod grudge;
pub mod proxy;
pub mod shaping;
mod topology;

pub use grudge::Grudge;
pub use shaping::{Conditions, Flaky, Slow};
pub use topology::Topology;
