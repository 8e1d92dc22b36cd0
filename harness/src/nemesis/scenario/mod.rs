//! Fixed fault scripts (`watermark run --scenario NAME`): the failures KIP-101 and
//! KIP-279 fixed, reproduced on every run against `--truncation hw` and harmless
//! against `--truncation epoch`.
//!
//! A script replaces the random schedule: it is a schedule source like the others,
//! written as data ([`script::Instr`]: fault operations, bounded waits on what the
//! system shows — who leads, each replica's HW and LEO — and branches on what they
//! found), one file per scenario. Every step it takes is a nemesis event in
//! history.jsonl, named as the random faults are (`crash-all`, `restart`, `pause`,
//! `resume`, `kill`, `lose-unflushed`, `partition`, `heal`). Every wait is bounded: a
//! script that does not see what it waits for goes on after its deadline (under
//! epoch truncation some of what a script waits for never happens, by design).
//!
//! The scripts work on partition 0 of the workload's topic, with three or more nodes.
//! Two more show a producer's retry appending a value twice (`duplicate-on-retry`)
//! and a controller failover in the middle of a leader's (`controller-failover`).

mod controller_failover;
mod duplicate_on_retry;
mod kip101_data_loss;
mod kip101_divergence;
mod kip279_divergence;
mod leader_crash;
pub mod script;
mod seed;
mod unclean_election;

use std::time::Duration;

use broker_config::ReplicaSettings;
use clap::ValueEnum;

use crate::names::by_name;
use script::{Cond, Instr, Num, Ref, ScriptSource, Test};

/// The scripts `--scenario` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// KIP-101's first failure: acknowledged records lost after every node crashed.
    ///
    /// KIP-101 scenario 1: every node crashes; the followers come back first, learn
    /// the (still dead) leader, truncate to their stale HW; the controller then elects
    /// one of them; acknowledged records are lost, and the old leader's log diverges
    /// when it returns.
    Kip101DataLoss,
    /// KIP-101's second failure: logs diverge after two followers lost unflushed bytes.
    ///
    /// KIP-101 scenario 2: one follower loses its unflushed bytes (power cut) and
    /// leaves the ISR; then the leader stalls while the other follower loses its
    /// unflushed bytes and comes back at once; it is elected with a shorter log and
    /// (with the first follower back in its ISR) takes new writes at offsets the old
    /// leader already committed; the old leader returns, keeps what its HW covers, and
    /// the logs diverge.
    Kip101Divergence,
    /// KIP-279's failure: leadership moves twice before a follower caught up.
    ///
    /// KIP-279's fast leader failover: leadership moves twice before a follower has
    /// caught up with the first move. A follower cut off from its peers (not from the
    /// controller) is told of the interim leader, truncates to its stale HW, and is
    /// elected when the interim leader dies a moment later; the acknowledged records
    /// its HW did not cover are gone, and the first leader's log diverges when it
    /// returns. The interim leader's epoch is one the final leader never saw: its
    /// follower asks about it after a restart, which is what KIP-279's answer (the
    /// largest epoch at or below the one asked for) is for.
    Kip279Divergence,
    /// A producer's retry writes a value twice (acks=all, answers lost).
    ///
    /// The leader of partition 0 appends and replicates the sends, but its answers
    /// to the clients are held (a one-way cut) past their request timeout; the
    /// producers retry (`--retries`, 5 unless given) once the answers flow, and the
    /// values are appended again. Caught as `duplicate`; valid with `--retries 0` or
    /// `--idempotent`.
    DuplicateOnRetry,
    /// The controller fails over in the middle of a leader failover.
    ///
    /// The leader of partition 0 is killed, and right after it the active
    /// controller (unless the leader was the controller itself): the new leader
    /// must be elected by a new controller, under a higher controller epoch, which
    /// first gives the brokers a session timeout to reach it. When the kills leave
    /// no majority of controller voters (two of three brokers), no controller
    /// exists: a moment later the old leader comes back first (a restarted broker
    /// leads nothing), so the controller elected then is not the killed one. Then
    /// both come back.
    ControllerFailover,
    /// The seed's first case: two replicas, a follower's stale HW, offsets lost.
    ///
    /// Two replicas, min.insync.replicas 1: leader A, follower B. Once B holds a
    /// record its HW does not cover yet (the HW reaches a follower one FETCH round
    /// after its records do), B is cut from A, restarts and truncates to its HW;
    /// then A dies. B is elected without the records it cut, which A had
    /// acknowledged. Caught as `lost-write` under `--truncation hw`; valid under
    /// epoch truncation.
    SeedHwLoss,
    /// The seed's second case: two replicas crash and come back in the wrong order.
    ///
    /// Two replicas, min.insync.replicas 1: leader A, follower B. Both go down at
    /// once — B in a power cut (its unflushed records lost), A frozen with its log
    /// whole — and B comes back first: elected with the shorter log, it takes new
    /// writes at offsets A committed; A comes back, keeps what its HW covers, and the
    /// logs diverge.
    /// Caught under `--truncation hw`; valid under epoch truncation (the restarted B
    /// is not elected: it left the ISR as a new process).
    SeedHwDivergence,
    /// No ISR member alive: an unclean election loses what the ISR committed.
    ///
    /// A follower falls out of the ISR (cut from the leader past the lag time);
    /// then the leader and the other follower die. With `--unclean-election` the
    /// follower outside the ISR is elected, without the records the ISR committed
    /// since (`lost-write`, and an unclean election in the coverage); without it the
    /// partition stays offline until an ISR member returns, and nothing is lost.
    UncleanElection,
    /// acks=1 loses what a leader acknowledged alone when it crashes.
    ///
    /// With `--acks 1` (the default under this scenario) the leader of partition 0 is
    /// cut from its followers for a second — under the lag time, so they stay in the
    /// ISR — while it acknowledges sends on its own append; then it dies, and a
    /// follower without those records is elected (`lost-write`). With `--acks all`
    /// nothing acknowledged is lost.
    Acks1LeaderCrash,
    /// A leader that dies after replicating a send and before answering: retried,
    /// it is written twice.
    ///
    /// The leader of partition 0 holds its answers to the clients for a second (the
    /// sends are appended, replicated and committed), then dies: the answers die with
    /// it, the producers retry (`--retries`, 5 unless given) on the new leader, which
    /// appends the values again (`duplicate`). Valid with `--idempotent`: the new
    /// leader knows the batches from the replicated producer state.
    DuplicateOnLeaderCrash,
}

by_name!(Scenario => "scenario");

impl Scenario {
    /// Does the script need the controller as a process of its own? The divergence
    /// scripts take two of three brokers out of action around the failover they
    /// stage (a follower cut from its peers that must still reach the controller; a
    /// stalled leader while both followers go down), which, with every broker a
    /// voter, would leave no majority to elect a controller at the moment the KIP's
    /// timeline needs one.
    /// The seed's cases cut a follower from its leader, which must still reach
    /// the controller; `unclean-election` kills two of three brokers.
    pub fn needs_dedicated_controller(self) -> bool {
        matches!(
            self,
            Scenario::Kip101Divergence
                | Scenario::Kip279Divergence
                | Scenario::SeedHwLoss
                | Scenario::SeedHwDivergence
                | Scenario::UncleanElection
        )
    }

    /// The replicas of partition 0 the script plays with: the seed's two, or three.
    pub fn replicas(self) -> u32 {
        match self {
            Scenario::SeedHwLoss | Scenario::SeedHwDivergence => 2,
            _ => 3,
        }
    }

    /// The topics' replication factor and min.insync.replicas unless given: the
    /// seed's cases have two replicas, of which one suffices.
    pub fn replication(self) -> Option<(u32, u32)> {
        (self.replicas() == 2).then_some((2, 1))
    }

    /// The producers' acks unless given.
    pub fn acks_one(self) -> bool {
        self == Scenario::Acks1LeaderCrash
    }

    /// Does the script need the producers to retry (5 times, unless given)?
    pub fn retries(self) -> bool {
        matches!(
            self,
            Scenario::DuplicateOnRetry | Scenario::DuplicateOnLeaderCrash
        )
    }

    /// What the script needs of every broker's replicas.
    pub fn settings(self, replica: &mut ReplicaSettings) {
        match self {
            // The followers must lose their unflushed bytes when killed: the last
            // second's, so the new leader soon writes past the old leader's end.
            Scenario::Kip101Divergence => {
                replica.simulate_page_cache = true;
                replica.flush_ms = Some(1000);
            }
            // B loses its unflushed records in the power cut: up to two seconds'
            // worth, more than the half second A's HW checkpoint lags behind.
            Scenario::SeedHwDivergence => {
                replica.simulate_page_cache = true;
                replica.flush_ms = Some(2000);
            }
            _ => {}
        }
    }

    /// The script, on partition 0 of `topic`, in a cluster of `nodes` (with a
    /// dedicated controller or not).
    pub fn script(self, topic: &str, nodes: &[i32], dedicated_controller: bool) -> ScriptSource {
        let instrs = match self {
            Scenario::Kip101DataLoss => kip101_data_loss::script(),
            Scenario::Kip101Divergence => kip101_divergence::script(),
            Scenario::Kip279Divergence => kip279_divergence::script(),
            Scenario::DuplicateOnRetry => duplicate_on_retry::script(),
            Scenario::ControllerFailover => {
                controller_failover::script(nodes.len(), dedicated_controller)
            }
            Scenario::SeedHwLoss => seed::hw_loss(),
            Scenario::SeedHwDivergence => seed::hw_divergence(),
            Scenario::UncleanElection => unclean_election::script(),
            Scenario::Acks1LeaderCrash => leader_crash::acks1(),
            Scenario::DuplicateOnLeaderCrash => leader_crash::duplicate(),
        };
        ScriptSource::new(topic, 0, nodes, instrs)
    }
}

/// How long a script waits for the first leader and committed records.
const WARM_UP: Duration = Duration::from_secs(30);
/// How long a script waits for the controller to move leadership.
const FAILOVER: Duration = Duration::from_secs(15);
/// How long a script waits for the new leader to take writes.
const NEW_WRITES: Duration = Duration::from_secs(15);
/// Records the partition must hold, committed, before a script strikes.
const MIN_COMMITTED: u64 = 100;
/// Records a new leader should write past the old leader's end before it returns.
const OVERWRITE: u64 = 20;

/// Every script starts so: wait until partition 0 has a leader with
/// `MIN_COMMITTED` committed records, bound to `start` (its leader, the followers,
/// its log end), on three replicas or more.
fn warm_up() -> Vec<Instr> {
    warm_up_on(3)
}

/// [`warm_up`] on `replicas` replicas or more.
fn warm_up_on(replicas: usize) -> Vec<Instr> {
    vec![
        Instr::Await {
            until: Cond::Committed(MIN_COMMITTED),
            within: WARM_UP,
            bind: Some("start"),
            or_fail: Some(format!(
                "scenario: partition 0 had no leader with {MIN_COMMITTED} committed records \
                 within {WARM_UP:?}"
            )),
        },
        Instr::Replicas {
            name: "start",
            at_least: replicas,
            or_fail: format!("scenario: partition 0 needs {replicas} replicas or more"),
        },
    ]
}

/// Wait until `node`'s log reaches `OVERWRITE` records past the log end bound to
/// `end` — if the leader it names was found.
fn new_writes(node: &'static str, end: &'static str) -> Instr {
    Instr::IfBound(
        vec![node],
        vec![Instr::Await {
            until: Cond::Replica(
                Ref::Is(node),
                Test::LeoAtLeast(Num {
                    leo_of: end,
                    plus: OVERWRITE,
                }),
            ),
            within: NEW_WRITES,
            bind: None,
            or_fail: None,
        }],
    )
}

/// Wait for a new leader than the one bound to `from`, bound to `bind`.
fn leader_moved(from: Ref, bind: &'static str) -> Instr {
    Instr::Await {
        until: Cond::LeaderMoved {
            from,
            running: false,
            above_epoch_of: None,
        },
        within: FAILOVER,
        bind: Some(bind),
        or_fail: None,
    }
}

/// Wait, at most `within`, for `until`, binding nothing.
fn wait(until: Cond, within: Duration) -> Instr {
    Instr::Await {
        until,
        within,
        bind: None,
        or_fail: None,
    }
}

/// Look once at `node`'s replica, bound to `bind`.
fn look(node: Ref, bind: &'static str) -> Instr {
    Instr::Await {
        until: Cond::Replica(node, Test::Any),
        within: Duration::ZERO,
        bind: Some(bind),
        or_fail: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_divergence_script_needs_the_page_cache_simulation() {
        let needs = |s: Scenario| {
            let mut r = ReplicaSettings::default();
            s.settings(&mut r);
            r.simulate_page_cache
        };
        assert!(!needs(Scenario::Kip101DataLoss));
        assert!(!needs(Scenario::Kip279Divergence));
        assert!(needs(Scenario::Kip101Divergence));
    }
}
