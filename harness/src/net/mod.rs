//! The network between broker processes, under the harness's control: a TCP proxy on
//! every directed link ([`proxy`]), the cut links of a partition as plain data
//! (`grudge`), and the partition shapes the nemesis draws (`topology`).

mod grudge;
pub mod proxy;
mod topology;

pub use grudge::Grudge;
pub use topology::Topology;
