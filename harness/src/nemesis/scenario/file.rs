//! A scenario as a file: its script (the [`Instr`]s of [`super::script`]) and the
//! options it needs, in JSON a user can read and write by hand — the scenarios
//! `--scenario` names are such files, shipped in the repository's `scenarios/`
//! folder and built into the binary; `watermark run --schedule FILE` plays any
//! other (docs/faults.md, "Scenario files"):
//!
//! ```json
//! {"schedule": 1, "scenario": "acks1-leader-crash",
//!  "about": "acks=1 loses what a leader acknowledged alone when it crashes.",
//!  "options": {"acks": "1"},
//!  "script": [
//!   {"step": "await", "until": {"is": "committed", "records": 100}, "within": 30, "bind": "start"},
//!   {"step": "cut", "shape": "isolate-from-peers", "links": {"from_peers": "start"}},
//!   {"step": "sleep", "for": 1},
//!   {"step": "kill", "target": "start"}
//!  ]}
//! ```
//!
//! A file is read with serde into the representation here, each error naming its
//! line, column and field (serde_json's), then turned into instructions.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::script::{Cond, Instr, Links, Num, Op, Ref, ScriptSource, Test};

/// A scenario file: its script and the options it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioFile {
    /// Its name (`kip101-data-loss`), as the report and history name it.
    pub name: String,
    /// What it shows, in a sentence or a few.
    pub about: String,
    pub options: ScenarioOptions,
    pub script: Vec<Instr>,
}

/// What a scenario needs of the campaign; each applies unless the command line says
/// otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioOptions {
    /// The replicas of partition 0 the script plays with (3 unless given): the run
    /// needs three brokers and this replication factor at least.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// The controller as a process of its own (when the script takes two of three
    /// brokers out of action, no majority of voters would be left otherwise).
    #[serde(default, skip_serializing_if = "is_false")]
    pub dedicated_controller: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_factor: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_insync: Option<u32>,
    /// The producers' acks: `0`, `1` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acks: Option<Acks>,
    /// The producers' retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// The brokers simulate a page cache: a killed broker loses its unflushed bytes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub simulate_page_cache: bool,
    /// The brokers flush their logs every this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<u64>,
}

/// A producer's acks as a scenario file names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Acks {
    #[serde(rename = "0")]
    Zero,
    #[serde(rename = "1")]
    One,
    #[serde(rename = "all")]
    All,
}

fn is_false(b: &bool) -> bool {
    !b
}

impl ScenarioOptions {
    /// The replicas the script plays with.
    pub fn replicas(&self) -> u32 {
        self.replicas.unwrap_or(3)
    }
}

/// The file as serde reads and writes it: its steps read one by one (`S`: a
/// step's raw text), so that an error names the step's line.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr<S> {
    schedule: u64,
    scenario: String,
    #[serde(default)]
    about: String,
    #[serde(default)]
    options: ScenarioOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    script: Vec<S>,
}

/// One instruction as the file writes it: `{"step": "kill", "target": "start"}`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case", deny_unknown_fields)]
enum Step {
    Await {
        until: CondRepr,
        #[serde(with = "seconds")]
        within: Duration,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bind: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        or_fail: Option<String>,
    },
    Sleep {
        #[serde(rename = "for", with = "seconds")]
        lasts: Duration,
    },
    IfBound {
        names: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        then: Vec<Step>,
    },
    IfDiffer {
        a: Ref,
        b: Ref,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        then: Vec<Step>,
    },
    If {
        cond: CondRepr,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        then: Vec<Step>,
        #[serde(rename = "else", default, skip_serializing_if = "Vec::is_empty")]
        otherwise: Vec<Step>,
    },
    RequireReplicas {
        of: String,
        at_least: usize,
        or_fail: String,
    },
    Note {
        text: String,
    },
    CrashAll,
    Kill {
        target: Ref,
    },
    LoseUnflushed {
        target: Ref,
    },
    Pause {
        target: Ref,
    },
    Resume {
        target: Ref,
    },
    Restart {
        target: Ref,
    },
    RestartIfDown {
        target: Ref,
    },
    Cut {
        shape: String,
        links: LinksRepr,
    },
    Heal {
        shape: String,
        links: LinksRepr,
    },
    HoldAnswers {
        target: Ref,
    },
    ReleaseAnswers {
        target: Ref,
    },
}

/// A condition as the file writes it: `{"is": "committed", "records": 100}`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "is", rename_all = "kebab-case", deny_unknown_fields)]
enum CondRepr {
    Committed {
        records: u64,
    },
    LeaderMoved {
        from: Ref,
        #[serde(default, skip_serializing_if = "is_false")]
        running: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        above_epoch_of: Option<String>,
    },
    Replica {
        of: Ref,
        test: TestRepr,
    },
    IsrWithout {
        of: Ref,
    },
    ActiveController {
        fault: String,
    },
    Down {
        of: Ref,
    },
    RunningAtMost {
        count: usize,
    },
    NoMajorityRunning,
    DedicatedController,
}

/// A test of a replica's state: `"any"`, `{"pending_at_least": 1}`, …
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum TestRepr {
    Any,
    LeoAtLeast(Num),
    HwAtLeast(Num),
    PendingAtLeast(u64),
    UnflushedAtLeast(u64),
    LeaderIs(Ref),
}

/// Links: `{"between": ["start", "follower 0 of start"]}`, …
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum LinksRepr {
    OneWay(Ref, Ref),
    FromPeers(Ref),
    Between(Ref, Ref),
}

/// Seconds, as a number (fractions allowed), not negative.
mod seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        let secs = d.as_secs_f64();
        if secs.fract() == 0.0 {
            s.serialize_u64(d.as_secs())
        } else {
            s.serialize_f64(secs)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        if !(0.0..1e9).contains(&secs) {
            return Err(serde::de::Error::custom(format!(
                "{secs} is not a number of seconds from 0 to 1e9"
            )));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

impl ScenarioFile {
    /// Whether a schedule file's text is a scenario's (it has a `script`) rather
    /// than a list of faults.
    pub fn is_one(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.get("script").is_some())
    }

    /// Read a scenario file's text (Err: what is wrong, and on which line: a step's
    /// error names the line the step starts on).
    pub fn parse(text: &str) -> Result<ScenarioFile, String> {
        let repr: FileRepr<&RawValue> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if repr.schedule != crate::nemesis::schedule_file::VERSION {
            return Err(format!(
                "\"schedule\": {} is not a version this watermark reads (it reads {})",
                repr.schedule,
                crate::nemesis::schedule_file::VERSION
            ));
        }
        if repr.scenario.is_empty() {
            return Err("\"scenario\": a scenario needs a name".to_string());
        }
        let mut script = Vec::with_capacity(repr.script.len());
        for (i, raw) in repr.script.iter().enumerate() {
            let step: Step = serde_json::from_str(raw.get()).map_err(|e| {
                // The raw text is a slice of `text`: where it starts is its line.
                let at = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
                let line = 1 + text.get(..at).unwrap_or("").matches('\n').count();
                let what = e.to_string();
                let what = what.split(" at line ").next().unwrap_or(&what);
                format!("line {line}: step {}: {what}", i + 1)
            })?;
            script.push(Instr::from(step));
        }
        Ok(ScenarioFile {
            name: repr.scenario,
            about: repr.about,
            options: repr.options,
            script,
        })
    }

    /// The file's text: one step a line, a branch's steps indented under it.
    pub fn to_text(&self) -> String {
        let head = serde_json::to_string(&FileRepr::<Step> {
            schedule: crate::nemesis::schedule_file::VERSION,
            scenario: self.name.clone(),
            about: self.about.clone(),
            options: self.options.clone(),
            script: Vec::new(),
        })
        .unwrap_or_default();
        let mut out = head[..head.len().saturating_sub(1)].to_string();
        out.push_str(",\n\"script\": [\n");
        write_steps(&mut out, &self.script, 1);
        out.push_str("]}\n");
        out
    }

    /// The script as a schedule source, on partition 0 of `topic`, in a cluster of
    /// `nodes` (with the controller a process of its own: `dedicated`).
    pub fn source(&self, topic: &str, nodes: &[i32], dedicated: bool) -> ScriptSource {
        ScriptSource::new(topic, 0, nodes, dedicated, self.script.clone())
    }
}

/// `steps`, one a line at `depth`, a branch's blocks opened on their own lines.
fn write_steps(out: &mut String, steps: &[Instr], depth: usize) {
    let pad = " ".repeat(depth);
    for (i, instr) in steps.iter().enumerate() {
        let blocks: Vec<(&str, &[Instr])> = match instr {
            Instr::IfBound(_, then) | Instr::IfDiffer(_, _, then) => vec![("then", then)],
            Instr::If(_, then, otherwise) if otherwise.is_empty() => vec![("then", then)],
            Instr::If(_, then, otherwise) => vec![("then", then), ("else", otherwise)],
            _ => Vec::new(),
        };
        // The step without its blocks: they follow, a step a line.
        let bare = match instr.clone() {
            Instr::IfBound(names, _) => Instr::IfBound(names, Vec::new()),
            Instr::IfDiffer(a, b, _) => Instr::IfDiffer(a, b, Vec::new()),
            Instr::If(cond, _, _) => Instr::If(cond, Vec::new(), Vec::new()),
            other => other,
        };
        let line = serde_json::to_string(&Step::from(&bare)).unwrap_or_default();
        out.push_str(&pad);
        if blocks.is_empty() {
            out.push_str(&line);
        } else {
            out.push_str(&line[..line.len().saturating_sub(1)]);
            for (key, block) in blocks {
                out.push_str(&format!(", \"{key}\": [\n"));
                write_steps(out, block, depth + 1);
                out.push_str(&pad);
                out.push(']');
            }
            out.push('}');
        }
        out.push_str(if i + 1 < steps.len() { ",\n" } else { "\n" });
    }
}

impl From<Step> for Instr {
    fn from(step: Step) -> Instr {
        let block = |steps: Vec<Step>| steps.into_iter().map(Instr::from).collect();
        match step {
            Step::Await {
                until,
                within,
                bind,
                or_fail,
            } => Instr::Await {
                until: until.into(),
                within,
                bind,
                or_fail,
            },
            Step::Sleep { lasts } => Instr::Sleep(lasts),
            Step::IfBound { names, then } => Instr::IfBound(names, block(then)),
            Step::IfDiffer { a, b, then } => Instr::IfDiffer(a, b, block(then)),
            Step::If {
                cond,
                then,
                otherwise,
            } => Instr::If(cond.into(), block(then), block(otherwise)),
            Step::RequireReplicas {
                of,
                at_least,
                or_fail,
            } => Instr::Replicas {
                name: of,
                at_least,
                or_fail,
            },
            Step::Note { text } => Instr::Note(text),
            Step::CrashAll => Instr::Do(Op::CrashAll),
            Step::Kill { target } => Instr::Do(Op::Kill(target)),
            Step::LoseUnflushed { target } => Instr::Do(Op::LoseUnflushed(target)),
            Step::Pause { target } => Instr::Do(Op::Pause(target)),
            Step::Resume { target } => Instr::Do(Op::Resume(target)),
            Step::Restart { target } => Instr::Do(Op::Restart(target)),
            Step::RestartIfDown { target } => Instr::Do(Op::RestartIfDown(target)),
            Step::Cut { shape, links } => Instr::Do(Op::Cut(shape, links.into())),
            Step::Heal { shape, links } => Instr::Do(Op::Heal(shape, links.into())),
            Step::HoldAnswers { target } => Instr::Do(Op::HoldAnswers(target)),
            Step::ReleaseAnswers { target } => Instr::Do(Op::ReleaseAnswers(target)),
        }
    }
}

impl From<&Instr> for Step {
    /// The step of an instruction (a branch's blocks included).
    fn from(instr: &Instr) -> Step {
        let block = |steps: &[Instr]| steps.iter().map(Step::from).collect();
        match instr {
            Instr::Await {
                until,
                within,
                bind,
                or_fail,
            } => Step::Await {
                until: until.into(),
                within: *within,
                bind: bind.clone(),
                or_fail: or_fail.clone(),
            },
            Instr::Sleep(d) => Step::Sleep { lasts: *d },
            Instr::IfBound(names, then) => Step::IfBound {
                names: names.clone(),
                then: block(then),
            },
            Instr::IfDiffer(a, b, then) => Step::IfDiffer {
                a: a.clone(),
                b: b.clone(),
                then: block(then),
            },
            Instr::If(cond, then, otherwise) => Step::If {
                cond: cond.into(),
                then: block(then),
                otherwise: block(otherwise),
            },
            Instr::Replicas {
                name,
                at_least,
                or_fail,
            } => Step::RequireReplicas {
                of: name.clone(),
                at_least: *at_least,
                or_fail: or_fail.clone(),
            },
            Instr::Note(text) => Step::Note { text: text.clone() },
            Instr::Do(op) => op_step(op),
        }
    }
}

fn op_step(op: &Op) -> Step {
    let target = |r: &Ref| r.clone();
    match op {
        Op::CrashAll => Step::CrashAll,
        Op::Kill(r) => Step::Kill { target: target(r) },
        Op::LoseUnflushed(r) => Step::LoseUnflushed { target: target(r) },
        Op::Pause(r) => Step::Pause { target: target(r) },
        Op::Resume(r) => Step::Resume { target: target(r) },
        Op::Restart(r) => Step::Restart { target: target(r) },
        Op::RestartIfDown(r) => Step::RestartIfDown { target: target(r) },
        Op::Cut(shape, links) => Step::Cut {
            shape: shape.clone(),
            links: links.into(),
        },
        Op::Heal(shape, links) => Step::Heal {
            shape: shape.clone(),
            links: links.into(),
        },
        Op::HoldAnswers(r) => Step::HoldAnswers { target: target(r) },
        Op::ReleaseAnswers(r) => Step::ReleaseAnswers { target: target(r) },
    }
}

impl From<CondRepr> for Cond {
    fn from(c: CondRepr) -> Cond {
        match c {
            CondRepr::Committed { records } => Cond::Committed(records),
            CondRepr::LeaderMoved {
                from,
                running,
                above_epoch_of,
            } => Cond::LeaderMoved {
                from,
                running,
                above_epoch_of,
            },
            CondRepr::Replica { of, test } => Cond::Replica(of, test.into()),
            CondRepr::IsrWithout { of } => Cond::IsrWithout(of),
            CondRepr::ActiveController { fault } => Cond::ActiveController { fault },
            CondRepr::Down { of } => Cond::Down(of),
            CondRepr::RunningAtMost { count } => Cond::RunningAtMost(count),
            CondRepr::NoMajorityRunning => Cond::NoMajorityRunning,
            CondRepr::DedicatedController => Cond::DedicatedController,
        }
    }
}

impl From<&Cond> for CondRepr {
    fn from(c: &Cond) -> CondRepr {
        match c.clone() {
            Cond::Committed(records) => CondRepr::Committed { records },
            Cond::LeaderMoved {
                from,
                running,
                above_epoch_of,
            } => CondRepr::LeaderMoved {
                from,
                running,
                above_epoch_of,
            },
            Cond::Replica(of, test) => CondRepr::Replica {
                of,
                test: match test {
                    Test::Any => TestRepr::Any,
                    Test::LeoAtLeast(n) => TestRepr::LeoAtLeast(n),
                    Test::HwAtLeast(n) => TestRepr::HwAtLeast(n),
                    Test::PendingAtLeast(n) => TestRepr::PendingAtLeast(n),
                    Test::UnflushedAtLeast(n) => TestRepr::UnflushedAtLeast(n),
                    Test::LeaderIs(r) => TestRepr::LeaderIs(r),
                },
            },
            Cond::IsrWithout(of) => CondRepr::IsrWithout { of },
            Cond::ActiveController { fault } => CondRepr::ActiveController { fault },
            Cond::Down(of) => CondRepr::Down { of },
            Cond::RunningAtMost(count) => CondRepr::RunningAtMost { count },
            Cond::NoMajorityRunning => CondRepr::NoMajorityRunning,
            Cond::DedicatedController => CondRepr::DedicatedController,
        }
    }
}

impl From<TestRepr> for Test {
    fn from(t: TestRepr) -> Test {
        match t {
            TestRepr::Any => Test::Any,
            TestRepr::LeoAtLeast(n) => Test::LeoAtLeast(n),
            TestRepr::HwAtLeast(n) => Test::HwAtLeast(n),
            TestRepr::PendingAtLeast(n) => Test::PendingAtLeast(n),
            TestRepr::UnflushedAtLeast(n) => Test::UnflushedAtLeast(n),
            TestRepr::LeaderIs(r) => Test::LeaderIs(r),
        }
    }
}

impl From<LinksRepr> for Links {
    fn from(l: LinksRepr) -> Links {
        match l {
            LinksRepr::OneWay(a, b) => Links::OneWay(a, b),
            LinksRepr::FromPeers(r) => Links::FromPeers(r),
            LinksRepr::Between(a, b) => Links::Between(a, b),
        }
    }
}

impl From<&Links> for LinksRepr {
    fn from(l: &Links) -> LinksRepr {
        match l.clone() {
            Links::OneWay(a, b) => LinksRepr::OneWay(a, b),
            Links::FromPeers(r) => LinksRepr::FromPeers(r),
            Links::Between(a, b) => LinksRepr::Between(a, b),
        }
    }
}
