use std::time::Duration;

use super::*;

const HAND_WRITTEN: &str = r#"{
  "schedule": 1,
  "faults": [
    {"at": 5, "fault": "kill", "target": "leader of queue/0", "for": 4},
    {"at": 12.5, "fault": "partition", "isolate": "active-controller", "for": 6},
    {"at": 20, "fault": "slow", "targets": ["follower of queue/0"], "delay_ms": 200,
     "jitter_ms": 50, "for": 5},
    {"at": 30, "fault": "partition", "shape": "bridge", "cut": [["node 1", "node 2"]], "for": 2},
    {"at": 33, "fault": "disk", "target": "node 2", "mode": "eio", "for": 1.5},
    {"at": 40, "fault": "reassign", "partition": "queue/1", "replicas": [3, 1],
     "throttle_bytes_per_s": 2048, "for": 3},
    {"at": 40.5, "fault": "cancel-reassignment", "partition": "queue/1"},
    {"at": 41, "fault": "crash-all", "for": 0.5, "restart": ["node 3", ["leader of queue/0", 6.5]]},
    {"at": 50, "fault": "kill", "target": "leader of queue/0", "once_in_isr": "follower 2 of queue/0",
     "of": "queue/0", "within": 1.2, "for": 2.5},
    {"at": 55, "fault": "torn-write", "target": "follower of queue/0", "seed": 77, "for": 3}
  ]
}"#;

#[test]
fn a_hand_written_schedule_reads_and_writes_back_the_same() {
    let file = parse(HAND_WRITTEN).unwrap();
    assert_eq!(file.faults.len(), 10);
    assert_eq!(
        file.faults[6].fault,
        Spec::CancelReassignment {
            topic: "queue".into(),
            partition: 1,
        }
    );
    assert_eq!(
        file.faults[9].fault,
        Spec::TornWrite {
            target: Target::parse("follower of queue/0").unwrap(),
            seed: 77,
        }
    );
    assert_eq!(
        file.faults[8].fault,
        Spec::KillOnceInIsr {
            target: Target::parse("leader of queue/0").unwrap(),
            follower: Target::parse("follower 2 of queue/0").unwrap(),
            topic: "queue".into(),
            partition: 0,
            within: Duration::from_millis(1200),
        }
    );
    assert_eq!(
        file.faults[7].fault,
        Spec::CrashAll {
            restarts: vec![
                (Target::Node(3), Duration::ZERO),
                (
                    Target::parse("leader of queue/0").unwrap(),
                    Duration::from_millis(6500)
                ),
            ],
        }
    );
    let Spec::Reassign { throttle, .. } = &file.faults[5].fault else {
        panic!("a reassignment")
    };
    assert_eq!(*throttle, Some(2048));
    assert_eq!(file.faults[5].lasts, Some(Duration::from_secs(3)));
    assert_eq!(file.faults[0].line, 4);
    assert_eq!(file.faults[0].at, Duration::from_secs(5));
    assert_eq!(file.faults[1].lasts, Some(Duration::from_secs(6)));
    assert_eq!(
        file.faults[2].fault,
        Spec::Degrade {
            targets: vec![Target::parse("follower of queue/0").unwrap()],
            between: false,
            how: Degradation::Slow {
                delay_ms: 200,
                jitter_ms: 50
            },
            seed: 0,
        }
    );
    let again = parse(&file.to_text()).unwrap();
    let strip = |f: &ScheduleFile| {
        f.faults
            .iter()
            .map(|e| Entry {
                line: 0,
                ..e.clone()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&again), strip(&file));
    // One fault a line: the line of a fault is its number plus one.
    assert_eq!(again.faults[3].line, 5);
}

/// The error for `text`, as shown.
fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn a_malformed_schedule_is_refused_naming_the_line_and_the_field() {
    let cases: &[(&str, &str)] = &[
        ("not json", "line 1: not a schedule"),
        (r#"{"faults": []}"#, "no `schedule` field"),
        (r#"{"schedule": 2, "faults": []}"#, "version 2 is not known"),
        (
            r#"{"schedule": 1, "faults": [], "x": 1}"#,
            "unknown field `x`",
        ),
        (
            "{\"schedule\": 1,\n\"kills_cut_power\": \"yes\", \"faults\": []}",
            "line 2: field `kills_cut_power`: expected true or false",
        ),
        (
            "{\"schedule\": 1, \"faults\": [\n{\"at\": 1, \"fault\": \"kil\", \"target\": \"node 1\"}\n]}",
            "line 2: fault 1 (`kil`): field `fault`: `kil` is not a fault",
        ),
        (
            "{\"schedule\": 1, \"faults\": [\n{\"at\": 1, \"fault\": \"kill\"},\n{\"at\": 2, \"fault\": \"kill\", \"target\": \"boss\"}\n]}",
            "line 2: fault 1 (`kill`): field `target`: missing",
        ),
        (
            "{\"schedule\": 1, \"faults\": [\n{\"at\": 1, \"fault\": \"kill\", \"target\": \"node 1\"},\n{\"at\": 2, \"fault\": \"kill\", \"target\": \"boss\"}\n]}",
            "line 3: fault 2 (`kill`): field `target`: `boss` names no process",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"kill\", \"target\": \"node 1\", \"once_in_isr\": \"node 2\", \"of\": \"queue/0\"}]}",
            "field `within`: missing",
        ),
        (
            "{\"schedule\": 1, \"faults\": [\n{\"fault\": \"kill\", \"target\": \"node 1\"}]}",
            "line 2: fault 1 (`kill`): field `at`: missing",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": -1, \"fault\": \"kill\", \"target\": \"node 1\"}]}",
            "field `at`: expected seconds (0 or more)",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"kill\", \"target\": \"node 1\", \"delay_ms\": 3}]}",
            "field `delay_ms`: not a field of `kill` (it takes: at, fault, for, plan, process, target, trigger)",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"partition\"}]}",
            "takes one of `isolate`",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"disk\", \"target\": \"node 1\"}]}",
            "field `for`: missing",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"reassign\", \"partition\": \"queue\", \"replicas\": [1]}]}",
            "field `partition`: `queue` names no partition",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"reassign\", \"partition\": \"queue/0\", \"replicas\": [1], \"throttle_bytes_per_s\": \"fast\"}]}",
            "field `throttle_bytes_per_s`",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"crash-all\", \"restart\": [[\"node 1\"]]}]}",
            "field `restart`: expected a list of processes in restart order",
        ),
        (
            "{\"schedule\": 1, \"faults\": [{\"at\": 1, \"fault\": \"crash-all\", \"restart\": [\"boss\"]}]}",
            "field `restart`: `boss` names no process",
        ),
        (
            "{\"schedule\": 1, \"faults\": [3]}",
            "fault 1: expected an object",
        ),
    ];
    for (text, expected) in cases {
        let e = error(text);
        assert!(
            e.contains(expected),
            "{text}\n  gave: {e}\n  expected: {expected}"
        );
    }
}

/// Whether a schedule's kills cut power is written down as the run recorded it,
/// and read back.
#[test]
fn whether_kills_cut_power_survives_a_round_trip() {
    let text = "{\"schedule\": 1, \"kills_cut_power\": false, \"faults\": [\n\
                {\"at\": 1, \"fault\": \"lose-unflushed\", \"target\": \"node 1\"}\n]}";
    let s = parse(text).unwrap();
    assert_eq!(s.kills_cut_power, Some(false));
    assert_eq!(parse(&s.to_text()).unwrap(), s);
    assert_eq!(
        parse(r#"{"schedule": 1, "faults": []}"#)
            .unwrap()
            .kills_cut_power,
        None
    );
}
