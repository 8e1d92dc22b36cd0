//! watermark's workloads: what the clients do to the cluster while the nemesis
//! strikes, and how each outcome is recorded. Each workload names the checker that
//! judges its operations.
//!
//! - [`client`]: the broker client (leaders from metadata, ok / fail / info).
//! - [`queue`]: producers and consumers on a partitioned topic, and the final drain.
//! - [`producer`]: the queue's sends, retried as Kafka's producer retries.
//! - [`register`]: read / write / cas on keys of the broker's register view.
//! - [`mixed`]: both in one campaign, the workers split between them.
//! - [`recorder`]: where operations go as they happen.
//! - [`workload`]: what a campaign needs of a workload, whichever it is.
//! - `pacing`: how a worker paces its operations, shared by both.

pub mod api;
pub mod client;
pub mod mixed;
mod pacing;
pub mod producer;
pub mod queue;
pub mod recorder;
pub mod register;
pub mod workload;

pub use workload::Workload;
