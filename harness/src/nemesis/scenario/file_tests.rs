//! Reading scenario files: the documented example, processes by name, and errors
//! that say where.

use super::file::ScenarioFile;
use super::script::{Cond, Instr, Op, Ref};

/// The example of docs/faults.md's "Scenario files".
fn documented_example() -> String {
    let doc = include_str!("../../../../docs/faults.md");
    let section = &doc[doc.find("### Scenario files").expect("the section")..];
    let start = section.find("```json\n").expect("an example") + "```json\n".len();
    section[start..start + section[start..].find("```").unwrap()].to_string()
}

#[test]
fn the_documented_example_reads() {
    let f = ScenarioFile::parse(&documented_example()).unwrap();
    assert_eq!(f.name, "leader-cut-then-killed");
    assert_eq!(f.script.len(), 8);
    assert_eq!(f.script[3], Instr::Do(Op::Kill(Ref::Is("start".into()))));
    assert!(
        matches!(&f.script[6], Instr::IfBound(names, then) if names == &["new"] && then.len() == 1)
    );
    assert!(ScenarioFile::is_one(&documented_example()));
    assert!(!ScenarioFile::is_one("{\"schedule\": 1, \"faults\": []}"));
}

#[test]
fn processes_are_named_by_what_the_steps_bound() {
    for (text, r) in [
        ("start", Ref::Is("start".into())),
        ("followers of start", Ref::Followers("start".into())),
        ("follower 1 of new", Ref::Follower("new".into(), 1)),
        (
            "all but followers of start",
            Ref::AllButFollowers("start".into()),
        ),
    ] {
        assert_eq!(Ref::try_from(text.to_string()).as_ref(), Ok(&r));
        assert_eq!(r.to_string(), text);
    }
    for bad in ["", "the boss", "follower x of start", "followers of "] {
        assert!(Ref::try_from(bad.to_string()).is_err(), "{bad:?}");
    }
}

#[test]
fn a_bad_file_is_refused_naming_its_line_and_what_is_wrong() {
    let with = |step: &str| {
        format!(
            "{{\"schedule\": 1, \"scenario\": \"s\", \"script\": [\n{{\"step\": \"sleep\", \"for\": 1}},\n{step}\n]}}"
        )
    };
    for (step, says) in [
        (
            "{\"step\": \"kil\", \"target\": \"start\"}",
            "unknown variant `kil`",
        ),
        (
            "{\"step\": \"kill\", \"target\": \"the boss\"}",
            "`the boss` names no process",
        ),
        ("{\"step\": \"kill\"}", "missing field `target`"),
        (
            "{\"step\": \"sleep\", \"for\": -1}",
            "not a number of seconds",
        ),
        (
            "{\"step\": \"await\", \"until\": {\"is\": \"committed\"}, \"within\": 1}",
            "missing field `records`",
        ),
        (
            "{\"step\": \"await\", \"until\": {\"is\": \"committed\", \"records\": 1}, \"within\": 1, \"bnd\": \"x\"}",
            "unknown field `bnd`",
        ),
    ] {
        let e = ScenarioFile::parse(&with(step)).unwrap_err();
        assert!(e.contains(says) && e.contains("line 3"), "{step}: {e}");
    }
    let e =
        ScenarioFile::parse("{\"schedule\": 2, \"scenario\": \"s\", \"script\": []}").unwrap_err();
    assert!(e.contains("version"), "{e}");
    let f = ScenarioFile::parse(&with(
        "{\"step\": \"if\", \"cond\": {\"is\": \"no-majority-running\"}, \"then\": []}",
    ))
    .unwrap();
    assert!(
        matches!(&f.script[1], Instr::If(Cond::NoMajorityRunning, then, otherwise) if then.is_empty() && otherwise.is_empty())
    );
}
