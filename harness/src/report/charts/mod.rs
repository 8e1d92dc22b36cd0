//! The report's charts as inline SVG: a timeline of operations per process,
//! latency and throughput over time, each with the fault periods shaded, all in
//! one plotting [`frame`].
//!
//! Pictures stay small whatever the run's length: beyond a few thousand operations
//! the timeline draws one mark per process per pixel column (coloured by the worst
//! outcome in it: info over fail over ok), the latency plot draws per-column
//! percentiles, and throughput is always bucketed. Operations an anomaly involves
//! are always drawn one by one, with an `id` the anomaly text links to.

pub mod frame;
mod latency;
mod throughput;
mod timeline;

pub use frame::{Faults, TimeAxis};
pub use latency::latency;
pub use throughput::throughput;
pub use timeline::timeline;

/// Beyond this many operations in view, the timeline and latency plot bucket.
pub const DETAIL_LIMIT: usize = 3000;
