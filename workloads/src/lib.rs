//! watermark's workloads: what the clients do to the cluster while the nemesis
//! strikes, and how each outcome is recorded. Each workload names the checker that
//! judges its histories.
//!
//! - [`client`]: the broker client (leaders from metadata, ok / fail / info).
//! - [`queue`]: producers and consumers on a partitioned topic, and the final drain.
//! - [`recorder`]: where operations go as they happen.

pub mod api;
pub mod client;
pub mod queue;
pub mod recorder;
