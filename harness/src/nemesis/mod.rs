//! The nemesis: the faults of docs/faults.md, on schedules drawn from the run's seed.
//!
//! One abstraction serves every schedule ([`schedule`]): a [`Source`] answers, each
//! time it is asked, the next typed step — a fault operation ([`Action`], `action`)
//! on processes or links, or one aimed at a role the system names when it is
//! applied — after a delay, given what the campaign sees; the [`Interpreter`]
//! (`interpreter`) is the one place that applies steps through the seam to the
//! system and records each in the history (`"process":"nemesis"` events). Sources
//! compose ([`compose`]: mix, sequence, stagger). Three sources:
//!
//! - the replication package (`--nemesis replication`, the default; `package`):
//!   fault [`patterns`] — one file each — aimed at the roles the cluster shows at
//!   that moment, with durations around the cluster's own timeouts, favouring
//!   patterns that reach replication transitions the campaign has not exercised yet
//!   ([`Coverage`], `coverage`, from the brokers' `EVENT` lines);
//! - a fault list (`--nemesis kill,pause,…`; `fault_list`): faults drawn uniformly
//!   on a seeded schedule, within what the cluster can survive;
//! - a scenario's script (`--scenario NAME`; `scenario`): fixed steps as data, with
//!   bounded waits on what the system shows.
//!
//! `fault`: the fault kinds a user names, degraded links, the history's events.

mod action;
pub mod compose;
pub mod coverage;
mod fault;
mod fault_list;
mod interpreter;
mod package;
pub mod patterns;
mod scenario;
pub mod schedule;
pub mod schedule_file;

pub use action::{Action, Script};
pub use coverage::{Coverage, Transition};
pub use fault::{Degradation, FaultKind, NemesisEvent, needs_page_cache};
pub use fault_list::{
    CRASH_ALL_RESTART_GAP, CRASH_ALL_RESTART_GAP_COMBINED, Change, Fault, FaultList, Planner,
};
pub use interpreter::{Interpreter, controller_mark};
pub use package::{Aimed, Decision, Package, Plan};
pub use patterns::{PackageSettings, Pattern, Roles, Timeouts};
pub use scenario::Scenario;
pub use scenario::file as scenario_file;
pub use schedule::{Next, Now, Source, Step, Taken};
