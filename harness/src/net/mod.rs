//! The network between broker processes, under the harness's control: a TCP proxy on
//! every directed link ([`proxy`]) and the partition shapes that cut them ([`topology`]).

pub mod proxy;
pub mod topology;
