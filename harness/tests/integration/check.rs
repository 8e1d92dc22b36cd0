//! `watermark check` as a user runs it: the real binary on history files, checked
//! by exit code and output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../checker/tests/data/porcupine")
        .join(path)
}

fn watermark(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_watermark"))
        .arg("check")
        .args(args)
        .output()
        .expect("watermark runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn jepsen_logs_valid_and_invalid() {
    let o = watermark(&[path(&data("jepsen/etcd_002.log"))]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("verdict: valid"), "{}", stdout(&o));

    let o = watermark(&[path(&data("jepsen/etcd_000.log"))]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("verdict: INVALID"), "{out}");
    assert!(out.contains("nonlinearizable"), "{out}");
    assert!(out.contains("longest linearizable prefix"), "{out}");
    assert!(out.contains("model state after it"), "{out}");
    assert!(out.contains("cannot be linearized next"), "{out}");
}

#[test]
fn json_output_is_results_json() {
    let o = watermark(&[path(&data("kv/c10-bad.txt")), "--json"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    assert_eq!(v["valid"], serde_json::json!(false));
    let a = &v["checkers"]["linearizable"]["anomalies"][0];
    assert_eq!(a["kind"], "nonlinearizable");
    assert!(a["key"].is_string(), "{a}");
    assert!(a["explanation"]["prefix"].is_array(), "{a}");

    let o = watermark(&[
        path(&data("kv/c10-ok.txt")),
        "--json",
        "--format",
        "porcupine-kv",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn bad_usage_and_malformed_input_exit_64_saying_where() {
    let o = watermark(&["/nonexistent/history.jsonl"]);
    assert_eq!(code(&o), 64);
    assert!(
        stderr(&o).contains("cannot read /nonexistent/history.jsonl"),
        "{}",
        stderr(&o)
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("history.jsonl");
    std::fs::write(
        &bad,
        "{\"index\":0,\"time\":0,\"process\":0,\"type\":\"invoke\",\"f\":\"read\",\"value\":null}\n\
         {\"index\":1,\"time\":1,\"process\":0,\"type\":\"done\",\"f\":\"read\",\"value\":null}\n",
    )
    .unwrap();
    let o = watermark(&[path(&bad)]);
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("history.jsonl:2:"), "{}", stderr(&o));

    let o = watermark(&[path(&data("jepsen/etcd_000.log")), "--format", "jsonl"]);
    assert_eq!(code(&o), 64, "{}", stderr(&o));
    assert!(stderr(&o).contains(":1:"), "{}", stderr(&o));

    let o = watermark(&[path(&data("jepsen/etcd_000.log")), "--model", "bogus"]);
    assert_eq!(code(&o), 64);
    let o = watermark(&[path(&data("jepsen/etcd_000.log")), "--model", "kv"]);
    assert_eq!(code(&o), 64, "a register history is not a kv history");
    assert!(stderr(&o).contains("kv"), "{}", stderr(&o));
}

fn line(index: u64, process: u64, kind: &str, f: &str, value: serde_json::Value) -> String {
    serde_json::json!({"index": index, "time": index * 1000, "process": process, "type": kind, "f": f, "value": value})
        .to_string()
}

#[test]
fn a_mixed_run_folder_is_judged_by_both_checkers_each_on_its_own_operations() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("run.json"),
        json!({"workload": "mixed", "seed": 7}).to_string(),
    )
    .unwrap();
    // The queue's operations are fine; the register's read is stale.
    let history = [
        line(0, 0, "invoke", "send", json!({"partition": 0, "value": 1})),
        line(1, 1, "invoke", "write", json!({"key": "k0", "value": 5})),
        line(
            2,
            0,
            "ok",
            "send",
            json!({"partition": 0, "value": 1, "offset": 0}),
        ),
        line(3, 1, "ok", "write", json!({"key": "k0", "value": 5})),
        line(4, 3, "invoke", "read", json!({"key": "k0", "value": null})),
        line(5, 3, "ok", "read", json!({"key": "k0", "value": null})),
        line(
            6,
            4,
            "invoke",
            "final-poll",
            json!({"partition": 0, "offset": 0}),
        ),
        line(
            7,
            4,
            "ok",
            "final-poll",
            json!({"partition": 0, "records": [[0, 1]], "high_watermark": 1}),
        ),
    ]
    .join("\n");
    std::fs::write(d.join("history.jsonl"), history + "\n").unwrap();
    // The register topic's replica logs take no part in the queue analysis.
    std::fs::create_dir_all(d.join("nodes/1")).unwrap();
    let logs = [
        json!({"topic": "queue", "partition": 0, "log_end_offset": 1, "high_watermark": 1,
               "records": [{"offset": 0, "leader_epoch": 1, "key": null, "value": 1}]}),
        json!({"topic": "register", "partition": 0, "log_end_offset": 1, "high_watermark": 1,
               "records": [{"offset": 0, "leader_epoch": 1, "key": "k0", "value": 5}]}),
    ];
    let text: Vec<String> = logs.iter().map(|l| l.to_string()).collect();
    std::fs::write(d.join("nodes/1/final-log.jsonl"), text.join("\n") + "\n").unwrap();

    let o = watermark(&[path(d), "--json"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["checkers"]["queue"]["valid"], true, "{v}");
    assert_eq!(v["checkers"]["queue"]["stats"]["sends"], 1, "{v}");
    let lin = &v["checkers"]["linearizable"];
    assert_eq!(lin["valid"], false, "{v}");
    assert_eq!(lin["anomalies"][0]["kind"], "nonlinearizable");
    // The operation keeps its index in the whole history.
    assert_eq!(lin["anomalies"][0]["explanation"]["op"]["invoke"], 4);
    let o = watermark(&[path(d)]);
    assert!(
        stdout(&o).contains("checked as queue and cas-register, 2 replica logs"),
        "{}",
        stdout(&o)
    );

    // --model picks one view: the queue's operations alone are valid.
    let o = watermark(&[path(d), "--model", "queue"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = watermark(&[path(d), "--model", "cas-register", "--json"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["checkers"].get("queue").is_none(), "{v}");
}

#[test]
fn run_folder_queue_with_replica_logs() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("run.json"),
        json!({"workload": "queue", "seed": 7}).to_string(),
    )
    .unwrap();
    let history = [
        line(0, 0, "invoke", "send", json!({"partition": 0, "value": 1})),
        line(
            1,
            0,
            "ok",
            "send",
            json!({"partition": 0, "value": 1, "offset": 0}),
        ),
        line(2, 1, "invoke", "send", json!({"partition": 0, "value": 2})),
        line(3, 1, "info", "send", json!({"partition": 0, "value": 2})),
        line(
            4,
            2,
            "invoke",
            "final-poll",
            json!({"partition": 0, "offset": 0}),
        ),
        line(
            5,
            2,
            "ok",
            "final-poll",
            json!({"partition": 0, "records": [[0, 1]]}),
        ),
    ]
    .join("\n");
    std::fs::write(d.join("history.jsonl"), history + "\n").unwrap();
    let log = |v: i64| {
        json!({"topic": "queue", "partition": 0, "log_end_offset": 1, "high_watermark": 1,
               "records": [{"offset": 0, "leader_epoch": 1, "key": null, "value": v}]})
        .to_string()
    };
    for (node, v) in [("1", 1), ("2", 1)] {
        std::fs::create_dir_all(d.join("nodes").join(node)).unwrap();
        std::fs::write(
            d.join("nodes").join(node).join("final-log.jsonl"),
            log(v) + "\n",
        )
        .unwrap();
    }
    let o = watermark(&[path(d)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("checked as queue, 2 replica logs"),
        "{}",
        stdout(&o)
    );

    // A diverging replica is found through the run folder.
    std::fs::create_dir_all(d.join("nodes/3")).unwrap();
    std::fs::write(d.join("nodes/3/final-log.jsonl"), log(9) + "\n").unwrap();
    let o = watermark(&[path(&d.join("history.jsonl"))]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("replica-divergence"), "{}", stdout(&o));

    // A malformed replica log is bad input naming the file and line.
    std::fs::write(d.join("nodes/3/final-log.jsonl"), "{\"topic\":1}\n").unwrap();
    let o = watermark(&[path(d)]);
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("final-log.jsonl:1:"), "{}", stderr(&o));
}

#[test]
fn a_run_folder_whose_end_was_incomplete_gets_a_verdict_with_a_warning() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let history = [
        line(0, 0, "invoke", "send", json!({"partition": 0, "value": 1})),
        line(
            1,
            0,
            "ok",
            "send",
            json!({"partition": 0, "value": 1, "offset": 0}),
        ),
        line(
            2,
            1,
            "invoke",
            "final-poll",
            json!({"partition": 0, "offset": 0}),
        ),
        line(
            3,
            1,
            "ok",
            "final-poll",
            json!({"partition": 0, "records": [[0, 1]], "high_watermark": 1}),
        ),
    ]
    .join("\n");
    std::fs::write(d.join("history.jsonl"), history + "\n").unwrap();
    let run = |complete: bool| {
        json!({"workload": "queue", "seed": 7, "complete": complete,
               "notes": ["the healed cluster did not converge within 30s: node 2 lags"]})
        .to_string()
    };
    std::fs::write(d.join("run.json"), run(true)).unwrap();
    let o = watermark(&[path(d)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // `watermark run` said the end was incomplete: the history still gets its
    // verdict (the drain reached the high watermark), with a visible warning.
    std::fs::write(d.join("run.json"), run(false)).unwrap();
    let o = watermark(&[path(d)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("warning: the end of the run was incomplete"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("node 2 lags"), "{}", stdout(&o));
    let o = watermark(&[path(d), "--json"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("warning:"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let note = &v["checkers"]["queue"]["notes"][0];
    assert!(note.as_str().unwrap().contains("incomplete"), "{v}");

    // A run that never recorded its end (interrupted, or the harness died): the
    // history it recorded is judged, and the warning says so.
    let interrupted = json!({"workload": "queue", "seed": 7, "ended_at": null});
    std::fs::write(d.join("run.json"), interrupted.to_string()).unwrap();
    let o = watermark(&[path(d)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("warning: the run ended early"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn incomplete_register_history_gets_a_verdict() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("history.jsonl");
    // A crashed harness's prefix: the last write never completed, and the file
    // ends in a torn line.
    let history = [
        line(0, 0, "invoke", "write", json!({"key": 1, "value": 5})),
        line(1, 0, "ok", "write", json!({"key": 1, "value": 5})),
        line(2, 1, "invoke", "write", json!({"key": 1, "value": 6})),
        line(3, 2, "invoke", "read", json!({"key": 1, "value": null})),
        line(4, 2, "ok", "read", json!({"key": 1, "value": 6})),
    ]
    .join("\n");
    std::fs::write(&f, history + "\n{\"index\":5,\"ti").unwrap();
    // Linearizable with the open write as indeterminate (it took effect before
    // the read of 6): valid, and the pending invocation is noted.
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("1 invocation never completed: it was checked as indeterminate"),
        "{}",
        stdout(&o)
    );

    // A read of a value nobody wrote cannot be linearized.
    let history = [
        line(0, 0, "invoke", "write", json!({"key": 1, "value": 5})),
        line(1, 0, "ok", "write", json!({"key": 1, "value": 5})),
        line(2, 2, "invoke", "read", json!({"key": 1, "value": null})),
        line(3, 2, "ok", "read", json!({"key": 1, "value": 7})),
    ]
    .join("\n");
    std::fs::write(&f, history).unwrap();
    let o = watermark(&[path(&f), "--model", "register"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("read → 7"), "{}", stdout(&o));
}

#[test]
fn tiny_time_limit_gives_unknown() {
    // etcd_002 needs far more search steps than fit in a microsecond.
    let o = watermark(&[
        path(&data("jepsen/etcd_002.log")),
        "--checker-time-limit",
        "0.000001",
    ]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("time limit"), "{}", stdout(&o));
    let o = watermark(&[
        path(&data("jepsen/etcd_002.log")),
        "--checker-time-limit=-1",
    ]);
    assert_eq!(code(&o), 64);
    // The older name still works.
    let o = watermark(&[
        path(&data("jepsen/etcd_002.log")),
        "--time-limit",
        "0.000001",
    ]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn jepsen_edn_history() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("history.edn");
    // A failed cas did not happen (Knossos' reading); the read of 2 then needs
    // the indeterminate write of 2 to have happened.
    let edn = "{:type :invoke, :f :write, :value 1, :process 0, :time 0, :index 0}\n\
               {:type :ok, :f :write, :value 1, :process 0, :time 1, :index 1}\n\
               {:type :invoke, :f :cas, :value [3 4], :process 1, :time 2, :index 2}\n\
               {:type :fail, :f :cas, :value [3 4], :process 1, :time 3, :index 3}\n\
               {:type :invoke, :f :write, :value 2, :process 2, :time 4, :index 4}\n\
               {:type :info, :f :write, :value 2, :process 2, :time 5, :index 5, :error :timeout}\n\
               {:type :invoke, :f :read, :value nil, :process 3, :time 6, :index 6}\n\
               {:type :ok, :f :read, :value 2, :process 3, :time 7, :index 7}\n";
    std::fs::write(&f, edn).unwrap();
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("(edn), checked as cas-register"),
        "{}",
        stdout(&o)
    );

    std::fs::write(
        &f,
        edn.replace(":value 2, :process 3", ":value 4, :process 3"),
    )
    .unwrap();
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));

    std::fs::write(
        &f,
        "{:type :invoke, :f :write, :value 1, :process 0}\n{:type :ok :f}\n",
    )
    .unwrap();
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("history.edn:2:"), "{}", stderr(&o));
}

#[test]
fn knossos_models_by_name_and_inferred() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("history.edn");
    let op = |i: usize, p: u64, t: &str, f: &str, v: &str| {
        format!("{{:index {i}, :type :{t}, :process {p}, :f :{f}, :value {v}}}\n")
    };
    // Two holders at once: the mutex model is inferred from acquire/release.
    let mutex = [
        op(0, 0, "invoke", "acquire", "nil"),
        op(1, 0, "ok", "acquire", "nil"),
        op(2, 1, "invoke", "acquire", "nil"),
        op(3, 1, "ok", "acquire", "nil"),
    ]
    .concat();
    std::fs::write(&f, &mutex).unwrap();
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("checked as mutex"), "{}", stdout(&o));

    // Dequeued out of order: a FIFO queue could not, an unordered one could; the
    // operations do not say which, so --model does.
    let queue = [
        op(0, 0, "invoke", "enqueue", "1"),
        op(1, 0, "ok", "enqueue", "1"),
        op(2, 0, "invoke", "enqueue", "2"),
        op(3, 0, "ok", "enqueue", "2"),
        op(4, 1, "invoke", "dequeue", "nil"),
        op(5, 1, "ok", "dequeue", "2"),
    ]
    .concat();
    std::fs::write(&f, &queue).unwrap();
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 64);
    assert!(
        stderr(&o).contains("--model register|cas-register|mutex|multi-register|set|fifo-queue|unordered-queue|kv|queue"),
        "{}",
        stderr(&o)
    );
    let o = watermark(&[path(&f), "--model", "fifo-queue"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let o = watermark(&[path(&f), "--model", "unordered-queue"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // A model that does not fit the operations names the line.
    let o = watermark(&[path(&f), "--model", "set"]);
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("history.edn:1:"), "{}", stderr(&o));
}

#[test]
fn initial_state_as_json_or_edn() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("history.edn");
    // A register read as 0 before any write: only if it started at 0.
    std::fs::write(
        &f,
        "{:type :invoke, :f :read, :value nil, :process 0}\n\
         {:type :ok, :f :read, :value 0, :process 0}\n",
    )
    .unwrap();
    let o = watermark(&[path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let o = watermark(&[path(&f), "--initial", "0"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // A multi-register starting at x = y = 0, given in EDN.
    std::fs::write(
        &f,
        "{:type :invoke, :f :txn, :value [[:read :x nil] [:read :y nil]], :process 0}\n\
         {:type :ok, :f :txn, :value [[:read :x 0] [:read :y 0]], :process 0}\n",
    )
    .unwrap();
    let o = watermark(&[path(&f), "--initial", "{:x 0, :y 0}"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("checked as multi-register"),
        "{}",
        stdout(&o)
    );
    let o = watermark(&[path(&f), "--initial", r#"{"x": 0, "y": 1}"#]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));

    // Not a value, or not a state of the model: bad usage, saying why.
    let o = watermark(&[path(&f), "--initial", "{:x"]);
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("--initial"), "{}", stderr(&o));
    let o = watermark(&[path(&f), "--initial", "[1 2]"]);
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("initial state"), "{}", stderr(&o));
    let o = watermark(&[
        path(&data("jepsen/etcd_002.log")),
        "--model",
        "queue",
        "--initial",
        "0",
    ]);
    assert_eq!(code(&o), 64);
}

#[test]
fn a_jepsen_store_folder_is_checked_through_its_history_edn() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store/etcd-register/20260101T000000.000Z");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(
        store.join("history.edn"),
        "{:index 0, :time 10, :type :invoke, :process 0, :f :write, :value 3}\n\
         {:index 1, :time 20, :type :ok, :process 0, :f :write, :value 3}\n\
         {:index 2, :time 30, :type :invoke, :process 1, :f :read, :value nil}\n\
         {:index 3, :time 40, :type :ok, :process 1, :f :read, :value 3}\n",
    )
    .unwrap();
    std::fs::write(store.join("results.edn"), "{:valid? true}\n").unwrap();
    std::fs::write(
        store.join("jepsen.log"),
        "INFO jepsen.core - Run complete\n",
    )
    .unwrap();
    let o = watermark(&[path(&store)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("history.edn: 4 events (edn), checked as cas-register"),
        "{}",
        stdout(&o)
    );
    // A folder with neither history: bad usage naming both.
    let o = watermark(&[path(dir.path())]);
    assert_eq!(code(&o), 64);
    assert!(
        stderr(&o).contains("neither history.jsonl") && stderr(&o).contains("history.edn"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_history_out_of_order_is_bad_input_unless_lenient() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.jsonl");
    let ev = |index: u64, time: u64, p: u64, kind: &str, v: &str| {
        format!(
            "{{\"index\":{index},\"time\":{time},\"process\":{p},\"type\":\"{kind}\",\"f\":\"write\",\"value\":{v}}}\n"
        )
    };
    // A duplicate index on line 3, a completion before its invocation on line 4.
    let text = [
        ev(0, 10, 0, "invoke", "1"),
        ev(1, 20, 0, "ok", "1"),
        ev(1, 30, 1, "invoke", "2"),
        ev(2, 25, 1, "ok", "2"),
    ]
    .concat();
    std::fs::write(&file, text).unwrap();
    let o = watermark(&[path(&file)]);
    assert_eq!(code(&o), 64, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("history.jsonl:3: duplicate index 1"), "{err}");
    assert!(err.contains("1 more") && err.contains("--lenient"), "{err}");

    let o = watermark(&[path(&file), "--lenient", "--json"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: ") && err.contains("history.jsonl:3:"),
        "{err}"
    );
    assert!(
        err.contains("history.jsonl:4:") && err.contains("before its invocation"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let notes = v["checkers"]["linearizable"]["notes"].to_string();
    assert!(
        notes.contains("breaks its order at 2 events") && notes.contains("--lenient"),
        "{notes}"
    );
}
