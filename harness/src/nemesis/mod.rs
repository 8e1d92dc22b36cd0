//! The nemesis: the faults of docs/faults.md on a schedule drawn from the run's seed.
//!
//! Two ways to schedule faults, each as a pure planner (no I/O: decisions from the
//! seed and what it is shown) and a runner that applies them to a
//! [`Cluster`](crate::system::broker::Cluster) and reports each step as a [`NemesisEvent`]
//! (the run writes them into history.jsonl as `"process":"nemesis"` events):
//!
//! - the replication package (`--nemesis replication`, the default): [`Aimed`]
//!   (`aimed`) draws fault [`Pattern`]s (`pattern`) aimed at the roles the
//!   cluster's metadata names at that moment ([`ClusterView`], `view`), with
//!   durations around the cluster's own timeouts, favouring patterns that reach
//!   replication transitions the campaign has not exercised yet ([`Coverage`],
//!   `coverage`, from the brokers' `EVENT` lines); [`ReplicationNemesis`]
//!   (`replication`) observes, asks, records the decision and plays the pattern's
//!   [`Script`] of [`Action`]s (`action`).
//! - fault lists (`--nemesis kill,pause,…`): [`Planner`] (`planner`) draws when the
//!   next step comes (every `interval` ± 25 %), whether it starts a fault or ends
//!   the oldest active one, which fault and which targets (a kill or pause hits a
//!   process drawn uniformly among those up, the controller included). It keeps to
//!   what the cluster can survive: at most a minority of nodes killed or paused at
//!   once (plus perhaps the controller), and a partition or a crash-all only alone;
//!   degraded links (`slow`, `flaky`, `throttle`) overlap the others, one of each
//!   kind at a time.
//!   [`Nemesis`] (`runner`) applies its steps. Only `isolate-leader` depends on the
//!   cluster's state; every random draw is made whatever that state is, so a seed
//!   gives the same schedule on every run.
//!
//! A `scenario` replaces either with a fixed script.

mod action;
mod aimed;
pub mod coverage;
mod fault;
mod pattern;
mod planner;
mod replication;
mod runner;
mod scenario;
mod view;

pub use action::{Action, Script};
pub use aimed::{Aimed, Decision, Plan};
pub use coverage::{Coverage, Transition};
pub use fault::{Degradation, DiskMode, Fault, FaultKind, NemesisEvent, needs_page_cache};
pub use pattern::{Pattern, Settings as PackageSettings};
pub use planner::{Planner, Step};
pub use replication::{ReplicationNemesis, view_of};
pub use runner::Nemesis;
pub use scenario::Scenario;
pub use view::{ClusterView, PartitionView, Timeouts};
