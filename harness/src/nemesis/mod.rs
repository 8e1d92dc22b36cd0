//! The nemesis: the faults of docs/faults.md on a schedule drawn from the run's seed.
//!
//! Two layers, as elsewhere in watermark, over the `fault` kinds:
//! - [`Planner`] (`planner`) is the schedule without I/O: from the seed it draws when the next
//!   step comes (every `interval` ± 25 %), whether it starts a fault or ends the oldest
//!   active one, which fault and which targets (a kill or pause hits a process drawn
//!   uniformly among those up, the controller included). It keeps to what the cluster
//!   can survive: at most a minority of nodes killed or paused at once (plus perhaps
//!   the controller), and a partition or a crash-all only alone — crash-all is the one
//!   fault that takes the majority down, and only when asked for. A draw that would
//!   take down more ends the oldest fault instead.
//! - [`Nemesis`] (`runner`) applies the planner's steps to a [`Cluster`](crate::cluster::Cluster) and reports each start
//!   and end as a [`NemesisEvent`] (the run writes them into history.jsonl as
//!   `"process":"nemesis"` events).
//!
//! Only `isolate-leader` depends on the cluster's state (the leader comes from the
//! controller's metadata); every random draw is made whatever that state is, so a seed
//! gives the same schedule on every run.
//!
//! A `scenario` replaces the random schedule with a fixed script.

mod fault;
mod planner;
mod runner;
mod scenario;

pub use fault::{Fault, FaultKind, NemesisEvent, node_args};
pub use planner::{Planner, Step};
pub use runner::Nemesis;
pub use scenario::Scenario;
