//! Reading a schedule file. Every error names the line (of the fault, or of the
//! field within it) and the field, and says what is expected: a user writes these
//! files by hand.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::target::{Target, partition_ref};
use super::{Entry, Links, REASSIGN_SETTLE, ScheduleFile, Spec, VERSION};
use crate::nemesis::fault::Degradation;
use crate::system::DiskMode;
use crate::system::clock::ClockFault;

/// What is wrong with a schedule file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    /// 1-based; 0 when no line applies.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            n => write!(f, "line {n}: {}", self.message),
        }
    }
}

impl std::error::Error for ScheduleError {}

fn at_line(line: usize, message: String) -> ScheduleError {
    ScheduleError { line, message }
}

/// The line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Where `part` (a slice of `text`) starts in it.
fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

fn json_error(e: &serde_json::Error, what: &str) -> ScheduleError {
    let full = e.to_string();
    let message = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(m, _)| m)
        .to_string();
    at_line(e.line(), format!("{what}: {message}"))
}

/// Read a schedule file's text.
pub fn parse(text: &str) -> Result<ScheduleFile, ScheduleError> {
    let top: BTreeMap<String, &RawValue> = serde_json::from_str(text).map_err(|e| {
        json_error(
            &e,
            "not a schedule (a JSON object {\"schedule\": 1, \"faults\": [...]})",
        )
    })?;
    let line = |raw: &RawValue| line_of(text, offset_in(text, raw.get()));
    for (key, raw) in &top {
        if ![
            "schedule",
            "faults",
            "seed",
            "time_limit",
            "kills_cut_power",
        ]
        .contains(&key.as_str())
        {
            return Err(at_line(
                line(raw),
                format!(
                    "unknown field `{key}` (a schedule has `schedule`, `faults`, and optionally \
                     `seed`, `time_limit` and `kills_cut_power`)"
                ),
            ));
        }
    }
    match top.get("schedule") {
        None => {
            return Err(at_line(
                1,
                "no `schedule` field (write \"schedule\": 1)".into(),
            ));
        }
        Some(raw) if raw.get().trim() != VERSION.to_string() => {
            return Err(at_line(
                line(raw),
                format!(
                    "field `schedule`: version {} is not known (this watermark reads {VERSION})",
                    raw.get()
                ),
            ));
        }
        Some(_) => {}
    }
    let Some(faults) = top.get("faults") else {
        return Err(at_line(1, "no `faults` field (a list of faults)".into()));
    };
    let raws: Vec<&RawValue> = serde_json::from_str(faults.get()).map_err(|_| {
        at_line(
            line(faults),
            "field `faults`: expected a list of faults".into(),
        )
    })?;
    let seed = match top.get("seed") {
        None => None,
        Some(raw) => Some(raw.get().trim().parse::<u64>().map_err(|_| {
            at_line(
                line(raw),
                format!("field `seed`: expected a whole number, got {}", raw.get()),
            )
        })?),
    };
    let time_limit = match top.get("time_limit") {
        None => None,
        Some(raw) => match raw.get().trim().parse::<f64>() {
            Ok(t) if t > 0.0 && t <= 86_400.0 => Some(t),
            _ => {
                return Err(at_line(
                    line(raw),
                    format!(
                        "field `time_limit`: expected seconds in (0, 86400], got {}",
                        raw.get()
                    ),
                ));
            }
        },
    };
    let kills_cut_power = match top.get("kills_cut_power") {
        None => None,
        Some(raw) => Some(raw.get().trim().parse::<bool>().map_err(|_| {
            at_line(
                line(raw),
                format!(
                    "field `kills_cut_power`: expected true or false, got {}",
                    raw.get()
                ),
            )
        })?),
    };
    let mut out = Vec::with_capacity(raws.len());
    for (i, raw) in raws.into_iter().enumerate() {
        let base = line(raw);
        let map = match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(at_line(
                    base,
                    format!(
                        "fault {}: expected an object {{\"at\": …, \"fault\": …}}",
                        i + 1
                    ),
                ));
            }
        };
        let fields = Fields {
            map,
            raw: raw.get(),
            text,
            base,
            n: i + 1,
            kind: String::new(),
            used: Vec::new(),
        };
        out.push(entry(fields)?);
    }
    Ok(ScheduleFile {
        faults: out,
        seed,
        time_limit,
        kills_cut_power,
    })
}

/// One fault's fields as they are read, to name each in an error.
struct Fields<'a> {
    map: Map<String, Value>,
    raw: &'a str,
    text: &'a str,
    base: usize,
    n: usize,
    kind: String,
    used: Vec<&'static str>,
}

impl Fields<'_> {
    fn err(&self, field: &str, message: impl fmt::Display) -> ScheduleError {
        let needle = format!("\"{field}\"");
        let line = self.raw.find(&needle).map_or(self.base, |at| {
            line_of(self.text, offset_in(self.text, self.raw) + at)
        });
        let kind = match self.kind.as_str() {
            "" => String::new(),
            k => format!(" (`{k}`)"),
        };
        at_line(
            line,
            format!("fault {}{kind}: field `{field}`: {message}", self.n),
        )
    }

    fn take(&mut self, field: &'static str) -> Option<Value> {
        self.used.push(field);
        self.map.get(field).cloned()
    }

    fn string(&mut self, field: &'static str) -> Result<Option<String>, ScheduleError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(field, format!("expected a string, got {v}"))),
        }
    }

    fn required<T>(&self, field: &str, v: Option<T>, what: &str) -> Result<T, ScheduleError> {
        v.ok_or_else(|| self.err(field, format!("missing ({what})")))
    }

    fn target(&mut self, field: &'static str) -> Result<Target, ScheduleError> {
        let s = self.string(field)?;
        let s = self.required(field, s, "a process: `leader of queue/0`, `node 2`, …")?;
        Target::parse(&s).map_err(|e| self.err(field, e))
    }

    /// A partition, `TOPIC/P`; `what` says what it is for when it is missing.
    fn partition(
        &mut self,
        field: &'static str,
        what: &str,
    ) -> Result<(String, u32), ScheduleError> {
        let s = self.string(field)?;
        let s = self.required(field, s, what)?;
        partition_ref(&s).map_err(|e| self.err(field, e))
    }

    fn targets(&mut self, field: &'static str) -> Result<Vec<Target>, ScheduleError> {
        let v = self.take(field);
        let Some(Value::Array(items)) = v else {
            return Err(self.err(field, "expected a list of processes, e.g. [\"node 1\"]"));
        };
        let mut out = Vec::new();
        for item in items {
            let Value::String(s) = item else {
                return Err(self.err(field, format!("expected a process name, got {item}")));
            };
            out.push(Target::parse(&s).map_err(|e| self.err(field, e))?);
        }
        if out.is_empty() {
            return Err(self.err(field, "names no process"));
        }
        Ok(out)
    }

    fn seconds(&mut self, field: &'static str) -> Result<Option<Duration>, ScheduleError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(s) if (0.0..1e9).contains(&s) => Ok(Some(Duration::from_secs_f64(s))),
                _ => Err(self.err(field, format!("expected seconds (0 or more), got {n}"))),
            },
            Some(v) => Err(self.err(field, format!("expected seconds, got {v}"))),
        }
    }

    fn number(&mut self, field: &'static str, max: u64) -> Result<Option<u64>, ScheduleError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some_and(|x| x <= max) => Ok(n.as_u64()),
            Some(v) => Err(self.err(
                field,
                format!("expected a whole number 0 to {max}, got {v}"),
            )),
        }
    }

    fn signed(&mut self, field: &'static str) -> Result<Option<i64>, ScheduleError> {
        const MAX: i64 = 365 * 24 * 3_600_000;
        match self.take(field) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_i64().is_some_and(|x| x.abs() <= MAX) => Ok(n.as_i64()),
            Some(v) => Err(self.err(
                field,
                format!("expected a whole number -{MAX} to {MAX}, got {v}"),
            )),
        }
    }

    fn whole(&mut self, field: &'static str, max: u64) -> Result<u64, ScheduleError> {
        let v = self.number(field, max)?;
        self.required(field, v, "a whole number")
    }

    fn flag(&mut self, field: &'static str) -> Result<bool, ScheduleError> {
        match self.take(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(b),
            Some(v) => Err(self.err(field, format!("expected true or false, got {v}"))),
        }
    }

    /// Refuse a field this kind does not take.
    fn finish(&self) -> Result<(), ScheduleError> {
        if let Some(k) = self.map.keys().find(|k| !self.used.contains(&k.as_str())) {
            let mut takes = self.used.clone();
            takes.sort();
            takes.dedup();
            return Err(self.err(
                k,
                format!(
                    "not a field of `{}` (it takes: {})",
                    self.kind,
                    takes.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

fn entry(mut f: Fields<'_>) -> Result<Entry, ScheduleError> {
    let kind = f.string("fault")?;
    f.kind = f.required("fault", kind, "the fault's name: `kill`, `partition`, …")?;
    let at = f.seconds("at")?;
    let at = f.required("at", at, "seconds from the workload's start")?;
    let lasts = f.seconds("for")?;
    let process = f.string("process")?;
    let plan = f.number("plan", u64::MAX)?;
    let trigger = f.string("trigger")?;
    let fault = spec(&mut f)?;
    if matches!(fault, Spec::Disk { .. }) && lasts.is_none() {
        return Err(f.err("for", "missing (a disk fault lasts a while: seconds)"));
    }
    f.finish()?;
    Ok(Entry {
        at,
        lasts,
        fault,
        process,
        plan,
        trigger,
        line: f.base,
    })
}

const KINDS: &str = "kill, pause, lose-unflushed, torn-write, corrupt, hold-answers, crash-all, partition, slow, \
                     flaky, throttle, disk, reassign, cancel-reassignment, add-partitions, clock-offset, \
                     clock-step, clock-strobe";

fn spec(f: &mut Fields<'_>) -> Result<Spec, ScheduleError> {
    let kind = f.kind.clone();
    Ok(match kind.as_str() {
        "kill" if f.map.contains_key("once_in_isr") => {
            let target = f.target("target")?;
            let follower = f.target("once_in_isr")?;
            let (topic, partition) =
                f.partition("of", "the partition whose ISR it waits on: TOPIC/P")?;
            let within = f.seconds("within")?;
            let within = f.required("within", within, "how long it waits: seconds")?;
            Spec::KillOnceInIsr {
                target,
                follower,
                topic,
                partition,
                within,
            }
        }
        "kill" => Spec::Kill(f.target("target")?),
        "pause" => Spec::Pause(f.target("target")?),
        "lose-unflushed" => Spec::LoseUnflushed(f.target("target")?),
        "clock-offset" | "clock-step" | "clock-strobe" => {
            let target = f.target("target")?;
            let offset = f.signed("offset_ms")?;
            let offset_ms = f.required("offset_ms", offset, "milliseconds, + or -")?;
            let fault = match kind.as_str() {
                "clock-offset" => ClockFault::Offset { offset_ms },
                "clock-step" => ClockFault::Step { offset_ms },
                _ => ClockFault::Strobe {
                    offset_ms,
                    period_ms: f.whole("period_ms", 3_600_000)?,
                },
            };
            Spec::Clock { target, fault }
        }
        "corrupt" => Spec::Corrupt {
            target: f.target("target")?,
            seed: f.whole("seed", u64::MAX)?,
        },
        "torn-write" => Spec::TornWrite {
            target: f.target("target")?,
            seed: f.whole("seed", u64::MAX)?,
        },
        "hold-answers" => Spec::HoldAnswers(f.target("target")?),
        "crash-all" => Spec::CrashAll {
            restarts: restarts(f)?,
        },
        "partition" => {
            let shape = f.string("shape")?.unwrap_or_else(|| "schedule".to_string());
            let links = match (f.map.contains_key("isolate"), f.map.contains_key("cut")) {
                (true, false) => Links::Isolate(f.target("isolate")?),
                (false, true) => Links::Cut(cut(f)?),
                _ => {
                    return Err(f.err(
                        "isolate",
                        "a partition takes one of `isolate` (a process) or `cut` (a list of \
                         [from, to] pairs)",
                    ));
                }
            };
            Spec::Partition { shape, links }
        }
        "slow" | "flaky" | "throttle" => {
            let targets = f.targets("targets")?;
            let between = f.flag("between")?;
            let seed = f.number("seed", u64::MAX)?.unwrap_or(0);
            let how = match kind.as_str() {
                "slow" => Degradation::Slow {
                    delay_ms: f.whole("delay_ms", 600_000)?,
                    jitter_ms: f.number("jitter_ms", 600_000)?.unwrap_or(0),
                },
                "flaky" => Degradation::Flaky {
                    reset_pct: f.number("reset_pct", 100)?.unwrap_or(0) as u32,
                    loss_pct: f.number("loss_pct", 100)?.unwrap_or(0) as u32,
                },
                _ => Degradation::Throttle {
                    bytes_per_s: f.whole("bytes_per_s", u64::MAX)?.max(1),
                },
            };
            Spec::Degrade {
                targets,
                between,
                how,
                seed,
            }
        }
        "disk" => {
            let target = f.target("target")?;
            let mode = match f.string("mode")?.as_deref() {
                None | Some("enospc") => DiskMode::Enospc,
                Some("eio") => DiskMode::Eio,
                Some(other) => {
                    return Err(f.err("mode", format!("`{other}`: expected enospc or eio")));
                }
            };
            Spec::Disk { target, mode }
        }
        "reassign" => {
            let (topic, partition) = f.partition("partition", "TOPIC/P")?;
            let replicas = match f.take("replicas") {
                Some(Value::Array(ids)) if !ids.is_empty() => ids
                    .iter()
                    .map(|v| v.as_i64().and_then(|n| i32::try_from(n).ok()))
                    .collect::<Option<Vec<i32>>>(),
                _ => None,
            };
            let replicas =
                f.required("replicas", replicas, "a list of node ids, e.g. [1, 2, 3]")?;
            let settle = f.seconds("settle")?.unwrap_or(REASSIGN_SETTLE);
            let throttle = f
                .number("throttle_bytes_per_s", u64::MAX)?
                .map(|b| b.max(1));
            let from = if f.map.contains_key("from") {
                f.targets("from")?
            } else {
                f.used.push("from");
                Vec::new()
            };
            Spec::Reassign {
                topic,
                partition,
                replicas,
                settle,
                from,
                throttle,
            }
        }
        "cancel-reassignment" => {
            let (topic, partition) = f.partition("partition", "TOPIC/P")?;
            Spec::CancelReassignment { topic, partition }
        }
        "add-partitions" => {
            let topic = f.string("topic")?;
            let topic = f.required("topic", topic, "the topic to grow")?;
            let count = f.whole("count", 10_000)? as u32;
            Spec::AddPartitions { topic, count }
        }
        other => {
            return Err(f.err(
                "fault",
                format!("`{other}` is not a fault (one of: {KINDS})"),
            ));
        }
    })
}

/// A crash-all's `restart`: the processes in restart order, each a name or a
/// `[name, seconds after the one before]` pair (none: all at once).
fn restarts(f: &mut Fields<'_>) -> Result<Vec<(Target, Duration)>, ScheduleError> {
    let bad = |f: &Fields<'_>| {
        f.err(
            "restart",
            "expected a list of processes in restart order, each a name or [name, seconds \
             after the one before]",
        )
    };
    let items = match f.take("restart") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(bad(f)),
    };
    let mut out = Vec::new();
    for item in items {
        let (name, gap) = match &item {
            Value::String(s) => (s.as_str(), 0.0),
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(s), Value::Number(n)] => match n.as_f64() {
                    Some(g) if (0.0..3600.0).contains(&g) => (s.as_str(), g),
                    _ => return Err(f.err("restart", format!("{n}: expected seconds 0 to 3600"))),
                },
                _ => return Err(bad(f)),
            },
            _ => return Err(bad(f)),
        };
        let target = Target::parse(name).map_err(|e| f.err("restart", e))?;
        out.push((target, Duration::from_secs_f64(gap)));
    }
    Ok(out)
}

fn cut(f: &mut Fields<'_>) -> Result<Vec<(Target, Target)>, ScheduleError> {
    let v = f.take("cut");
    let bad = |f: &Fields<'_>| f.err("cut", "expected a list of [from, to] pairs of processes");
    let Some(Value::Array(pairs)) = v else {
        return Err(bad(f));
    };
    let mut out = Vec::new();
    for pair in pairs {
        let Some([Value::String(a), Value::String(b)]) = pair.as_array().map(Vec::as_slice) else {
            return Err(bad(f));
        };
        let a = Target::parse(a).map_err(|e| f.err("cut", e))?;
        let b = Target::parse(b).map_err(|e| f.err("cut", e))?;
        out.push((a, b));
    }
    if out.is_empty() {
        return Err(bad(f));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
