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

pub mod file;
#[cfg(test)]
mod file_tests;
pub mod script;

use clap::ValueEnum;

use crate::names::by_name;
use file::ScenarioFile;

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
    /// it, the producers retry (`--retries`, 10 unless given: enough to outlast the
    /// election) on the new leader, which appends the values again (`duplicate`). Valid with `--idempotent`: the new
    /// leader knows the batches from the replicated producer state.
    DuplicateOnLeaderCrash,
}

by_name!(Scenario => "scenario");

impl Scenario {
    /// Its file's text, as shipped in the repository's `scenarios/` folder.
    fn text(self) -> &'static str {
        match self {
            Scenario::Kip101DataLoss => include_str!("../../../../scenarios/kip101-data-loss.json"),
            Scenario::Kip101Divergence => {
                include_str!("../../../../scenarios/kip101-divergence.json")
            }
            Scenario::Kip279Divergence => {
                include_str!("../../../../scenarios/kip279-divergence.json")
            }
            Scenario::DuplicateOnRetry => {
                include_str!("../../../../scenarios/duplicate-on-retry.json")
            }
            Scenario::ControllerFailover => {
                include_str!("../../../../scenarios/controller-failover.json")
            }
            Scenario::SeedHwLoss => include_str!("../../../../scenarios/seed-hw-loss.json"),
            Scenario::SeedHwDivergence => {
                include_str!("../../../../scenarios/seed-hw-divergence.json")
            }
            Scenario::UncleanElection => {
                include_str!("../../../../scenarios/unclean-election.json")
            }
            Scenario::Acks1LeaderCrash => {
                include_str!("../../../../scenarios/acks1-leader-crash.json")
            }
            Scenario::DuplicateOnLeaderCrash => {
                include_str!("../../../../scenarios/duplicate-on-leader-crash.json")
            }
        }
    }

    /// Its file, read (built in, and each read by a test: an error says which).
    pub fn file(self) -> Result<ScenarioFile, String> {
        ScenarioFile::parse(self.text()).map_err(|e| format!("scenarios/{self}.json: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_has_its_file_named_after_it_and_opening_with_its_help() {
        for s in Scenario::value_variants() {
            let f = ScenarioFile::parse(s.text()).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            let v = s.to_possible_value().unwrap();
            assert_eq!(f.name, v.get_name());
            let help = v.get_help().unwrap().to_string();
            assert!(
                f.about.starts_with(&help),
                "{}: {} / {help}",
                f.name,
                f.about
            );
            assert!(!f.script.is_empty());
            assert_eq!(ScenarioFile::parse(&f.to_text()).unwrap(), f, "{}", f.name);
        }
    }

    #[test]
    fn the_seeds_cases_play_with_two_replicas_and_the_kip_divergences_need_the_page_cache() {
        let f = |s: Scenario| s.file().unwrap().options;
        assert_eq!(f(Scenario::SeedHwLoss).replicas(), 2);
        assert_eq!(f(Scenario::SeedHwLoss).min_insync, Some(1));
        assert_eq!(f(Scenario::Kip101DataLoss).replicas(), 3);
        assert!(f(Scenario::Kip101Divergence).simulate_page_cache);
        assert!(!f(Scenario::Kip279Divergence).simulate_page_cache);
        assert!(f(Scenario::Kip279Divergence).dedicated_controller);
        assert_eq!(f(Scenario::DuplicateOnRetry).retries, Some(5));
        assert_eq!(f(Scenario::DuplicateOnLeaderCrash).retries, Some(10));
    }
}
