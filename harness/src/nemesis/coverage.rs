//! Fault coverage: which replication transitions a campaign exercised — leader
//! elections (clean or not, of a replica that had just restarted), ISR shrinks (by
//! the controller, by the leader's lag check) and expansions, truncations (by leader
//! epoch or by HW, and whether they removed records), fenced requests,
//! `NOT_ENOUGH_REPLICAS`, a new controller epoch.
//!
//! Counted from the brokers' `EVENT` lines ([`crate::system::broker::events`]) and from the
//! leader epochs the nemesis saw in the controller's metadata. The nemesis reads it
//! while the campaign runs to favour faults that reach transitions not yet seen
//! (greybox feedback); the run prints it, and stores it in results.json under
//! `coverage` for the report. Brokers that print no events leave every count at zero
//! (the observed leader changes still count).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::fault::NemesisEvent;
use crate::names::by_name;
use crate::system::broker::events::{self, BrokerEvent};
use crate::system::view::ClusterView;

/// A replication transition the campaign may or may not have exercised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum Transition {
    /// The controller elected a leader (after the topic's first leaders).
    LeaderElection,
    /// A leader elected from outside the ISR (`--unclean-election`).
    UncleanElection,
    /// A leader elected less than a session timeout after it came back.
    RestartedLeader,
    /// A replica left the ISR because the controller fenced or expired its broker.
    IsrShrinkController,
    /// A replica left the ISR because the leader found it lagging.
    IsrShrinkLag,
    /// A replica joined the ISR again.
    IsrExpand,
    /// A follower cut its log at a leader epoch's end (KIP-101/KIP-279).
    TruncateEpoch,
    /// A follower cut its log at its high watermark (`--truncation hw`).
    TruncateHw,
    /// A truncation that removed at least one record.
    TruncateRecords,
    /// A request refused for a stale epoch or a lost leadership.
    Fenced,
    /// A deposed leader's linearizable read refused: it asked the controller to
    /// confirm a leadership the controller had given another (the controller's
    /// `fenced` of `confirm_leadership`). Reachable only by linearizable reads.
    DeposedRead,
    /// An acks=all write refused because the ISR was below min.insync.replicas.
    NotEnoughReplicas,
    /// A controller started a new controller epoch.
    ControllerFailover,
    /// A partition's storage failed (a full or failing disk): appends refused.
    StorageFailure,
    /// A reassignment started: replicas added to a partition's.
    ReassignStarted,
    /// A reassignment completed: its replicas caught up, the removed ones left.
    ReassignCompleted,
    /// A reassignment was cancelled, back to its original replicas.
    ReassignCancelled,
    /// A reassignment in progress when a new controller took over (it resumes it).
    ReassignResumed,
}

by_name!(Transition => "transition");

/// The transitions by area, as the summary and the report group them.
pub const AREAS: [(&str, &[Transition]); 6] = {
    use Transition::*;
    [
        (
            "elections",
            &[LeaderElection, UncleanElection, RestartedLeader],
        ),
        ("ISR", &[IsrShrinkController, IsrShrinkLag, IsrExpand]),
        ("truncation", &[TruncateEpoch, TruncateHw, TruncateRecords]),
        (
            "fencing",
            &[Fenced, DeposedRead, NotEnoughReplicas, ControllerFailover],
        ),
        ("storage", &[StorageFailure]),
        (
            "reassigning",
            &[
                ReassignStarted,
                ReassignCompleted,
                ReassignCancelled,
                ReassignResumed,
            ],
        ),
    ]
};

impl Transition {
    /// The transitions a cluster so configured can reach: a truncation by HW only
    /// under `--truncation hw` (or a broker planted with it), and then none by leader
    /// epoch; an unclean election only with `--unclean-election`. Neither the
    /// reassignments' nor a deposed leader's read: the campaign adds those it makes
    /// (it reassigns; its reads are linearizable).
    pub fn reachable(hw_truncation: bool, unclean_election: bool) -> BTreeSet<Transition> {
        Transition::value_variants()
            .iter()
            .copied()
            .filter(|t| match t {
                Transition::TruncateHw => hw_truncation,
                Transition::TruncateEpoch => !hw_truncation,
                Transition::UncleanElection => unclean_election,
                Transition::DeposedRead => false,
                t => !t.reconfiguration(),
            })
            .collect()
    }

    /// Is it a transition only a reconfiguration of the cluster (a reassignment)
    /// reaches? Reachable only by campaigns that reconfigure.
    pub fn reconfiguration(self) -> bool {
        matches!(
            self,
            Transition::ReassignStarted
                | Transition::ReassignCompleted
                | Transition::ReassignCancelled
                | Transition::ReassignResumed
        )
    }
}

/// What a campaign exercised; see the module doc. Serialized as results.json's
/// `coverage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// Every transition, with how often it happened (zero if never).
    pub transitions: BTreeMap<Transition, u64>,
    /// Records removed by truncations, in all.
    pub truncated_records: u64,
    /// Fenced requests by `api/reason`.
    pub fenced: BTreeMap<String, u64>,
    /// Leader changes the nemesis saw in the controller's metadata (leader epochs
    /// going up), whether or not the brokers print events.
    pub leader_changes_observed: u64,
    /// Event lines counted (those before the workload started are not).
    pub event_lines: u64,
    /// How often the nemesis chose each of its patterns.
    #[serde(default)]
    pub patterns: BTreeMap<String, u64>,
    /// How often a pattern had each kind of overlapping fault beside it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overlaps: BTreeMap<String, u64>,
    /// Transitions this configuration can reach that never happened.
    #[serde(default)]
    pub unseen: Vec<Transition>,
    /// What the campaign did not test that it should have (no leader election).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Events before this unix time (ms) are the cluster's start, not the campaign's.
    #[serde(skip)]
    since_ms: u64,
    /// Reassignments started and not yet completed or cancelled.
    #[serde(skip)]
    reassigning: BTreeSet<(String, u32)>,
    /// The leader epoch last seen of each partition (topic, partition).
    #[serde(skip)]
    epochs: BTreeMap<(String, u32), i64>,
}

impl Coverage {
    /// Coverage of events from `since_ms` (unix ms) on.
    pub fn new(since_ms: u64) -> Coverage {
        Coverage {
            transitions: Transition::value_variants()
                .iter()
                .map(|&t| (t, 0))
                .collect(),
            since_ms,
            ..Coverage::default()
        }
    }

    fn count(&mut self, t: Transition) {
        *self.transitions.entry(t).or_default() += 1;
    }

    /// How often `t` happened.
    pub fn get(&self, t: Transition) -> u64 {
        self.transitions.get(&t).copied().unwrap_or(0)
    }

    /// Count one broker event (events before `since_ms`, and kinds that are not
    /// transitions, count for nothing).
    pub fn add(&mut self, e: &BrokerEvent) {
        if e.ts_ms != 0 && e.ts_ms < self.since_ms {
            return;
        }
        self.event_lines += 1;
        match e.kind.as_str() {
            "leader_elected" => {
                self.count(Transition::LeaderElection);
                if e.clean == Some(false) {
                    self.count(Transition::UncleanElection);
                }
                if e.recently_restarted == Some(true) {
                    self.count(Transition::RestartedLeader);
                }
            }
            "isr_shrink" => match e.cause.as_deref() {
                Some("lag") => self.count(Transition::IsrShrinkLag),
                _ => self.count(Transition::IsrShrinkController),
            },
            "isr_expand" => self.count(Transition::IsrExpand),
            "truncate" => {
                match e.rule.as_deref() {
                    Some("hw") => self.count(Transition::TruncateHw),
                    _ => self.count(Transition::TruncateEpoch),
                }
                let removed = e.records.unwrap_or(0);
                if removed > 0 {
                    self.count(Transition::TruncateRecords);
                    self.truncated_records += removed;
                }
            }
            "fenced" => {
                self.count(Transition::Fenced);
                if e.api.as_deref() == Some("confirm_leadership") {
                    self.count(Transition::DeposedRead);
                }
                let key = format!(
                    "{}/{}",
                    e.api.as_deref().unwrap_or("?"),
                    e.reason.as_deref().unwrap_or("?")
                );
                *self.fenced.entry(key).or_default() += 1;
            }
            "not_enough_replicas" => self.count(Transition::NotEnoughReplicas),
            "controller_epoch" => {
                self.count(Transition::ControllerFailover);
                for _ in 0..self.reassigning.len() {
                    self.count(Transition::ReassignResumed);
                }
            }
            "storage_failure" => self.count(Transition::StorageFailure),
            "reassignment" => self.reassignment(e),
            _ => {}
        }
    }

    /// A reassignment's step, and which are in progress (a new controller resumes them).
    fn reassignment(&mut self, e: &BrokerEvent) {
        let key = (
            e.topic.clone().unwrap_or_default(),
            e.partition.unwrap_or(0),
        );
        match e.step.as_deref() {
            Some("started") => {
                self.count(Transition::ReassignStarted);
                self.reassigning.insert(key);
            }
            Some("completed") => {
                self.count(Transition::ReassignCompleted);
                self.reassigning.remove(&key);
            }
            Some("cancelled") => {
                self.count(Transition::ReassignCancelled);
                self.reassigning.remove(&key);
            }
            _ => {}
        }
    }

    /// Count the leader changes since the last look at the metadata: each
    /// partition's leader epoch goes up by one per election.
    pub fn observe(&mut self, view: &ClusterView) {
        for p in &view.partitions {
            match self
                .epochs
                .insert((p.topic.clone(), p.partition), p.leader_epoch)
            {
                Some(before) if p.leader_epoch > before => {
                    self.leader_changes_observed += (p.leader_epoch - before) as u64;
                }
                _ => {}
            }
        }
    }

    /// Take in a decision the history records: a `plan` counts its pattern, and
    /// its overlapping fault's kind.
    pub fn note(&mut self, decision: &NemesisEvent) {
        if decision.f != "plan" {
            return;
        }
        if let Some(p) = decision.value["pattern"].as_str() {
            *self.patterns.entry(p.to_string()).or_default() += 1;
        }
        if let Some(k) = decision.value["overlap"]["kind"].as_str() {
            *self.overlaps.entry(k.to_string()).or_default() += 1;
        }
    }

    /// Count several events, in the order they were printed (the brokers' logs are
    /// read one after the other: a controller's reassignment and the next
    /// controller's takeover are in two of them).
    pub fn add_all<'a>(&mut self, events: impl IntoIterator<Item = &'a BrokerEvent>) {
        let mut events: Vec<&BrokerEvent> = events.into_iter().collect();
        events.sort_by_key(|e| e.ts_ms);
        for e in events {
            self.add(e);
        }
    }

    /// The counts of events recounted from every `broker.log` under a cluster root
    /// (what the brokers printed after the nemesis last looked — the heal, the
    /// convergence — counts too); what the nemesis observed and chose is kept.
    pub fn recount(&mut self, root: &Path) {
        let mut fresh = Coverage::new(self.since_ms);
        fresh.add_all(&events::read_all(root));
        fresh.leader_changes_observed = self.leader_changes_observed;
        fresh.patterns = std::mem::take(&mut self.patterns);
        fresh.overlaps = std::mem::take(&mut self.overlaps);
        fresh.epochs = std::mem::take(&mut self.epochs);
        *self = fresh;
    }

    /// The transitions seen at least once (a leader change in the metadata counts
    /// as a leader election).
    pub fn seen(&self) -> BTreeSet<Transition> {
        let mut seen: BTreeSet<Transition> = self
            .transitions
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(t, _)| *t)
            .collect();
        if self.leader_changes_observed > 0 {
            seen.insert(Transition::LeaderElection);
        }
        seen
    }

    /// Did leadership move at all, by the brokers' events or the metadata?
    pub fn leader_changed(&self) -> bool {
        self.get(Transition::LeaderElection) > 0 || self.leader_changes_observed > 0
    }

    /// results.json: the verdict `results` with this coverage beside it, under
    /// `coverage`.
    pub fn beside<T: Serialize>(&self, results: &T) -> serde_json::Result<serde_json::Value> {
        let mut json = serde_json::to_value(results)?;
        if let Some(map) = json.as_object_mut() {
            map.insert("coverage".to_string(), serde_json::to_value(self)?);
        }
        Ok(json)
    }

    /// Fill in `unseen` (among `reachable`) and `warnings`, once the campaign is over.
    pub fn finish(&mut self, reachable: &BTreeSet<Transition>) {
        let seen = self.seen();
        self.unseen = reachable.difference(&seen).copied().collect();
        self.warnings.clear();
        let unclean = self.get(Transition::UncleanElection);
        if unclean > 0 {
            self.warnings.push(format!(
                "{unclean} unclean election(s): a replica outside the ISR was elected \
                 (--unclean-election), losing what the ISR had committed beyond its log"
            ));
        }
        if !self.leader_changed() {
            self.warnings.push(
                "no leader election: this campaign never moved a partition's leadership, \
                 so it tested no failover (use the default --nemesis, or a longer --time-limit)"
                    .to_string(),
            );
        }
    }

    /// The coverage for the run's summary: the transitions with their counts, by
    /// area, then each warning on its own line.
    pub fn summary(&self) -> String {
        let mut out =
            String::from("fault coverage (replication transitions the campaign went through):\n");
        for (area, transitions) in AREAS {
            // An area no transition of which this configuration can reach, and none
            // happened (no reassignment in a campaign that makes none).
            let idle = transitions
                .iter()
                .all(|&t| self.get(t) == 0 && !self.unseen.contains(&t));
            if idle && transitions.iter().all(|t| t.reconfiguration()) {
                continue;
            }
            let counts: Vec<String> = transitions
                .iter()
                .map(|&t| format!("{t} {}", self.get(t)))
                .collect();
            out.push_str(&format!("  {area:<11} {}\n", counts.join(", ")));
        }
        out.push_str(&format!(
            "  {} records truncated, {} leader changes seen in the metadata, {} broker events\n",
            self.truncated_records, self.leader_changes_observed, self.event_lines
        ));
        if !self.patterns.is_empty() {
            let chosen: Vec<String> = self
                .patterns
                .iter()
                .map(|(p, n)| format!("{p} {n}"))
                .collect();
            out.push_str(&format!("  nemesis patterns: {}\n", chosen.join(", ")));
        }
        if !self.overlaps.is_empty() {
            let overlaps: Vec<String> = self
                .overlaps
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            out.push_str(&format!("  overlapping faults: {}\n", overlaps.join(", ")));
        }
        if !self.unseen.is_empty() {
            let unseen: Vec<String> = self.unseen.iter().map(|t| t.to_string()).collect();
            out.push_str(&format!("  not exercised: {}\n", unseen.join(", ")));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixture lines in the brokers' format, one of each kind.
    const LINES: &str = r#"listening on 127.0.0.1:40001
EVENT {"ts_ms":900,"node":-1,"kind":"leader_elected","topic":"queue","partition":0,"leader":1,"leader_epoch":1,"clean":true,"recently_restarted":false,"previous_leader":null}
EVENT {"ts_ms":1000,"node":-1,"kind":"controller_epoch","epoch":2}
EVENT {"ts_ms":1001,"node":-1,"kind":"leader_elected","topic":"queue","partition":0,"leader":2,"leader_epoch":2,"clean":true,"recently_restarted":true,"previous_leader":1}
EVENT {"ts_ms":1002,"node":-1,"kind":"leader_elected","topic":"queue","partition":1,"leader":3,"leader_epoch":5,"clean":false,"recently_restarted":false,"previous_leader":2}
EVENT {"ts_ms":1003,"node":2,"kind":"isr_shrink","topic":"queue","partition":0,"replicas":[3],"isr":[1,2],"cause":"lag"}
EVENT {"ts_ms":1004,"node":-1,"kind":"isr_shrink","topic":"queue","partition":0,"replicas":[1],"isr":[2],"cause":"controller"}
EVENT {"ts_ms":1005,"node":2,"kind":"isr_expand","topic":"queue","partition":0,"replicas":[1],"isr":[1,2],"cause":"caught_up"}
EVENT {"ts_ms":1006,"node":1,"kind":"truncate","topic":"queue","partition":0,"to":118,"records":3,"rule":"epoch"}
EVENT {"ts_ms":1007,"node":3,"kind":"truncate","topic":"queue","partition":0,"to":120,"records":0,"rule":"epoch"}
EVENT {"ts_ms":1008,"node":1,"kind":"fenced","api":"produce","reason":"stale_leader_epoch"}
EVENT {"ts_ms":1009,"node":1,"kind":"fenced","api":"fetch","reason":"not_leader"}
EVENT {"ts_ms":1009,"node":-1,"kind":"fenced","api":"confirm_leadership","reason":"not_leader","topic":"register","partition":0}
EVENT {"ts_ms":1010,"node":2,"kind":"not_enough_replicas","topic":"queue","partition":0,"isr_size":1,"min_insync":2}
EVENT {"ts_ms":1011,"node":2,"kind":"become_leader","topic":"queue","partition":0,"leader_epoch":2}
EVENT {"ts_ms":1012,"node":2,"kind":"log_reopened","topic":"queue","partition":0,"leo":5,"hw":4}
EVENT {"ts_ms":1013,"node":3,"kind":"storage_failure","topic":"queue","partition":1,"what":"append: No space left on device (os error 28)"}
"#;

    fn covered() -> Coverage {
        let mut c = Coverage::new(1000);
        c.add_all(&events::parse_all(LINES));
        c
    }

    #[test]
    fn each_event_kind_counts_its_transition() {
        use Transition::*;
        let c = covered();
        // The first election (before the campaign started) does not count.
        assert_eq!(c.get(LeaderElection), 2);
        assert_eq!((c.get(UncleanElection), c.get(RestartedLeader)), (1, 1));
        assert_eq!((c.get(IsrShrinkLag), c.get(IsrShrinkController)), (1, 1));
        assert_eq!(c.get(IsrExpand), 1);
        assert_eq!((c.get(TruncateEpoch), c.get(TruncateHw)), (2, 0));
        assert_eq!((c.get(TruncateRecords), c.truncated_records), (1, 3));
        assert_eq!(c.get(Fenced), 3);
        assert_eq!(c.fenced["produce/stale_leader_epoch"], 1);
        // The controller refused a deposed leader's confirmation of a read.
        assert_eq!(c.get(DeposedRead), 1);
        assert_eq!(c.get(NotEnoughReplicas), 1);
        assert_eq!(c.get(ControllerFailover), 1);
        assert_eq!(c.get(StorageFailure), 1);
        assert_eq!(c.event_lines, 15);
        assert!(c.leader_changed());
    }

    #[test]
    fn without_events_every_count_is_zero_and_no_election_is_a_warning() {
        let mut c = Coverage::new(0);
        c.add_all(&events::parse_all(
            "listening on 127.0.0.1:1\nnode 1: started\n",
        ));
        assert!(c.transitions.values().all(|&n| n == 0));
        assert_eq!(c.transitions.len(), Transition::value_variants().len());
        let reachable = Transition::reachable(false, false);
        c.finish(&reachable);
        assert_eq!(c.unseen.len(), reachable.len());
        assert!(!reachable.contains(&Transition::TruncateHw));
        let hw = Transition::reachable(true, false);
        assert!(hw.contains(&Transition::TruncateHw) && !hw.contains(&Transition::TruncateEpoch));
        // Reads the campaign confirms add it; without them no leader asks.
        assert!(!reachable.contains(&Transition::DeposedRead));
        assert_eq!(c.warnings.len(), 1);
        assert!(c.summary().contains("warning: no leader election"));
        // Leadership seen moving in the metadata is enough.
        c.leader_changes_observed = 1;
        c.finish(&reachable);
        assert!(c.warnings.is_empty());
        assert!(!c.unseen.contains(&Transition::LeaderElection));
    }

    #[test]
    fn coverage_round_trips_through_results_json() {
        let mut c = covered();
        c.patterns.insert("kip101".into(), 2);
        c.finish(&Transition::reachable(true, false));
        let json = c.beside(&serde_json::json!({"valid": true})).unwrap()["coverage"].clone();
        assert_eq!(json["transitions"]["leader-election"], 2);
        assert_eq!(json["transitions"]["truncate-hw"], 0);
        assert_eq!(json["unseen"], serde_json::json!(["truncate-hw"]));
        let back: Coverage = serde_json::from_value(json).unwrap();
        assert_eq!(back.transitions, c.transitions);
        assert_eq!(back.patterns, c.patterns);
        let text = c.summary();
        assert!(text.contains("leader-election 2"), "{text}");
        assert!(text.contains("nemesis patterns: kip101 2"), "{text}");
        assert!(text.contains("not exercised: truncate-hw"), "{text}");
    }

    #[test]
    fn leader_epochs_going_up_in_the_metadata_count_as_leader_changes() {
        use crate::system::view::PartitionView;
        let view = |epochs: &[i64]| ClusterView {
            controller: None,
            controller_epoch: 0,
            nodes: vec![1, 2, 3],
            alive: vec![1, 2, 3],
            topics: vec!["queue".into(), "register".into()],
            partitions: epochs
                .iter()
                .enumerate()
                .map(|(i, &e)| PartitionView {
                    topic: if i < 2 { "queue" } else { "register" }.into(),
                    partition: i as u32 % 2,
                    leader: Some(1),
                    leader_epoch: e,
                    isr: vec![1],
                    replicas: vec![1],
                    adding: vec![],
                    removing: vec![],
                })
                .collect(),
        };
        let mut c = Coverage::new(0);
        c.observe(&view(&[1, 1, 1]));
        assert!(!c.leader_changed());
        c.observe(&view(&[1, 1, 1]));
        c.observe(&view(&[3, 2, 1]));
        // A look without the topic (the controller did not answer) changes nothing.
        c.observe(&ClusterView::new(&[1, 2, 3], None, &["queue"]));
        c.observe(&view(&[3, 2, 1]));
        assert_eq!(c.leader_changes_observed, 3);
        // Partition 0 of another topic is a partition of its own.
        c.observe(&view(&[3, 2, 2]));
        assert_eq!(c.leader_changes_observed, 4);
        assert!(c.leader_changed());
    }

    #[test]
    fn a_recount_reads_every_log_and_keeps_what_the_nemesis_saw() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("controller")).unwrap();
        std::fs::write(dir.path().join("controller/broker.log"), LINES).unwrap();
        let mut c = Coverage::new(1000);
        c.leader_changes_observed = 4;
        c.patterns.insert("crash-all".into(), 1);
        c.recount(dir.path());
        assert_eq!(c.get(Transition::LeaderElection), 2);
        assert_eq!(c.leader_changes_observed, 4);
        assert_eq!(c.patterns["crash-all"], 1);
    }
}
