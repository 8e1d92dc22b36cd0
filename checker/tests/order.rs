//! The order every history keeps (docs/history.md, "Order"): a duplicate or
//! decreasing index, a completion timed before its invocation and a process's time
//! running backwards are found, each with its line; the shipped Jepsen and
//! Porcupine histories keep the order.

use std::path::{Path, PathBuf};

use checker::format;

fn line(index: u64, time: u64, process: u64, kind: &str) -> String {
    format!(
        r#"{{"index":{index},"time":{time},"process":{process},"type":"{kind}","f":"read","value":null}}"#
    )
}

fn disorders(lines: &[String]) -> Vec<(usize, String)> {
    let text = lines.join("\n") + "\n";
    let p = format::parse(&text, format::Format::Jsonl).unwrap();
    p.disorders
        .into_iter()
        .map(|d| (d.line, d.message))
        .collect()
}

#[test]
fn an_ordered_history_has_no_disorder() {
    let d = disorders(&[
        line(0, 10, 0, "invoke"),
        line(1, 10, 1, "invoke"),
        line(2, 30, 0, "ok"),
        line(3, 20, 1, "ok"),
    ]);
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn duplicate_and_decreasing_indices_name_their_lines() {
    let d = disorders(&[
        line(0, 10, 0, "invoke"),
        line(0, 20, 0, "ok"),
        line(2, 30, 1, "invoke"),
        line(1, 40, 1, "ok"),
    ]);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[0].0, 2);
    assert!(d[0].1.contains("duplicate index 0"), "{d:?}");
    assert_eq!(d[1].0, 4);
    assert!(d[1].1.contains("index 1 after index 2"), "{d:?}");
}

#[test]
fn a_completion_before_its_invocation_and_time_running_backwards() {
    let d = disorders(&[
        line(0, 100, 0, "invoke"),
        line(1, 50, 0, "ok"),
        line(2, 200, 1, "invoke"),
        line(3, 300, 1, "ok"),
        line(4, 250, 1, "invoke"),
        line(5, 260, 1, "ok"),
    ]);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[0].0, 2);
    assert!(
        d[0].1
            .contains("timed 50, before its invocation (index 0) at 100"),
        "{d:?}"
    );
    assert_eq!(d[1].0, 5);
    assert!(
        d[1].1.contains("time runs backwards for process 1"),
        "{d:?}"
    );
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_none_or(|e| e != "md") {
            out.push(p);
        }
    }
}

#[test]
fn the_shipped_histories_keep_the_order() {
    let mut all = Vec::new();
    files(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
        &mut all,
    );
    assert!(all.len() > 10, "{all:?}");
    for path in all {
        let text = std::fs::read_to_string(&path).unwrap();
        let fmt = format::detect(&text).unwrap();
        let p = format::parse(&text, fmt).unwrap();
        assert!(
            p.disorders.is_empty(),
            "{}: {:?}",
            path.display(),
            p.disorders
        );
    }
}
