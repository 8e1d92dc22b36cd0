//! Jepsen EDN histories in every shape Jepsen and Knossos write them
//! (`tests/data/jepsen/`): one map per line with `:index`/`:time`, nemesis
//! operations carrying maps and sets, `:error` and `:exception` fields (with
//! `#object[…]` and hexadecimal ids); `#jepsen.history.Op{…}` records; one list
//! or one pretty-printed vector of operations after `;` comments, with `#_`
//! discards; Knossos's `[process type f value]` tuples. Each is recognised by
//! `--format auto`, read with the right line for every operation, and judged.

use std::path::PathBuf;

use checker::check::{Model, check};
use checker::format::{self, Format};
use checker::history::{EventType, Process};
use checker::linear::Options;
use checker::verdict::{Results, Validity};

fn read(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/jepsen")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn judge(name: &str) -> (format::Parsed, Model, Results) {
    let text = read(name);
    let fmt = format::detect(&text).unwrap();
    assert_eq!(fmt, Format::Edn, "{name}");
    let parsed = format::parse(&text, fmt).unwrap();
    let model = Model::infer(fmt, &parsed.events).unwrap();
    let r = check(fmt, &parsed.events, model, &[], &Options::default()).unwrap();
    (parsed, model, r)
}

#[test]
fn one_map_per_line_with_nemesis_errors_and_exceptions() {
    let (p, model, r) = judge("register-lines.edn");
    assert_eq!(model, Model::CasRegister);
    assert_eq!(p.events.len(), 21);
    assert_eq!(p.lines[20], 21);
    let e = &p.events[9];
    assert_eq!(
        (e.kind, e.error.as_deref()),
        (EventType::Info, Some("timeout"))
    );
    assert_eq!(
        p.events[8].error.as_deref(),
        Some(r#"["timeout","read timed out"]"#)
    );
    assert_eq!(p.events[5].process, Process::Nemesis);
    // The read of 4 needs the indeterminate cas; the nil read says nothing; the
    // last write never completed.
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
    let lin = &r.checkers["linearizable"];
    assert_eq!(lin.stats["ops-never-completed"], 1);
}

#[test]
fn tagged_records() {
    // The same history as records, except that the read sees 5: nobody wrote it.
    let (p, _, r) = judge("register-records.edn");
    assert_eq!(p.events.len(), 21);
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
    let a = &r.checkers["linearizable"].anomalies[0];
    assert_eq!(a.ops[0].text, "read → 5");
    assert_eq!(a.ops[0].complete, Some(11));
}

#[test]
fn one_list_after_a_comment_with_a_discarded_form() {
    let (p, _, r) = judge("register-list.edn");
    assert_eq!(p.events.len(), 8);
    // Each operation keeps its own line (the discarded one is skipped).
    assert_eq!(p.lines, vec![2, 3, 4, 5, 7, 8, 9, 10]);
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
}

#[test]
fn one_pretty_printed_vector() {
    let (p, model, r) = judge("mutex-vector.edn");
    assert_eq!(model, Model::Mutex);
    assert_eq!(p.events.len(), 8);
    assert_eq!(p.lines[1], 8);
    assert_eq!(r.valid, Validity::Invalid, "{}", r.render_text());
    let a = &r.checkers["linearizable"].anomalies[0];
    assert_eq!(a.ops[0].text, "acquire");
    assert_eq!(a.ops[0].process, 1);
}

#[test]
fn knossos_tuples() {
    let (p, model, r) = judge("set-tuples.edn");
    assert_eq!(model, Model::Set);
    assert_eq!(p.lines, (2..10).collect::<Vec<_>>());
    assert_eq!(r.valid, Validity::Valid, "{}", r.render_text());
}

#[test]
fn detection_of_every_shape_and_what_is_not_a_history() {
    for text in [
        "{:type :invoke, :f :read, :process 0}",
        "  \n; comment\n\n{:type :invoke, :f :read, :process 0}",
        "[{:type :invoke, :f :read, :process 0}]",
        "(\n {:type :invoke, :f :read, :process 0})",
        "#jepsen.history.Op{:type :invoke, :f :read, :process 0}",
        "#_ {:gone 1} {:type :invoke}",
        "{\n :type :invoke,\n :f :read}",
        "[0 :invoke :read nil]",
        // An exception trace naming jepsen.util is not a Jepsen log.
        "{:type :info, :f :read, :process 0, :exception {:trace [[jepsen.util$timeout invoke \"util.clj\" 1]]}}",
    ] {
        assert_eq!(format::detect(text), Ok(Format::Edn), "{text}");
    }
    assert_eq!(
        format::detect("{\"index\":0,\"time\":1,\"process\":0,\"type\":\"invoke\",\"f\":\"read\"}"),
        Ok(Format::Jsonl)
    );
    let e = format::detect("\n\nhello").unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.message.contains("--format"), "{e}");
    // A list that is not closed names the line it opens on.
    let e =
        format::parse("; x\n({:type :invoke, :f :read, :process 0}\n", Format::Edn).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("')'"), "{e}");
    // An element that is not an operation names its own line.
    let e = format::parse(
        "[{:type :invoke, :f :read, :process 0}\n :oops]",
        Format::Edn,
    )
    .unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}
