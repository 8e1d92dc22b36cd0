//! Queue histories at campaign scale, generated from a seed: what the queue
//! workload writes (docs/history.md) — producers sending unique integers to the
//! partitions, consumers polling them back in batches, a final drain — with
//! `concurrency` processes interleaving their operations, some sends ending
//! `info` or `fail`, and nemesis events now and then. The history is valid: every
//! acknowledged value is in the log, each offset holds one value.
//!
//! Shared by the benchmarks (`#[path]`-included).

#![allow(dead_code)]

use std::io::Write;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Sends plus polls, before the final drain.
    pub ops: u64,
    /// Records a poll returns, on average (each between 0 and twice this).
    pub records_per_poll: u64,
    pub partitions: u64,
    pub concurrency: u64,
    pub seed: u64,
}

/// splitmix64: a small seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// An operation in flight.
enum Open {
    Send { partition: u64, value: u64 },
    Poll { partition: u64, from: u64 },
}

/// Counts of what was written.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub events: u64,
    pub sends: u64,
    pub polls: u64,
    pub records: u64,
    pub bytes: u64,
}

struct Writer<W: Write> {
    out: W,
    index: u64,
    time: u64,
    written: Written,
    line: String,
}

impl<W: Write> Writer<W> {
    fn event(&mut self, process: &str, kind: &str, f: &str, value: &str, error: Option<&str>) {
        use std::fmt::Write as _;
        self.time += 1_000 + (self.index * 7919) % 50_000;
        self.line.clear();
        let _ = write!(
            self.line,
            r#"{{"index":{},"time":{},"process":{process},"type":"{kind}","f":"{f}","value":{value}"#,
            self.index, self.time
        );
        if let Some(e) = error {
            let _ = write!(self.line, r#","error":"{e}""#);
        }
        self.line.push_str("}\n");
        self.out
            .write_all(self.line.as_bytes())
            .expect("write the history");
        self.written.bytes += self.line.len() as u64;
        self.written.events += 1;
        self.index += 1;
    }
}

/// Write a history of `shape` to `out`.
pub fn generate<W: Write>(shape: Shape, out: W) -> Written {
    let mut rng = Rng(shape.seed);
    let mut w = Writer {
        out,
        index: 0,
        time: 0,
        written: Written::default(),
        line: String::new(),
    };
    let parts = shape.partitions as usize;
    let conc = shape.concurrency;
    let mut logs: Vec<Vec<u64>> = vec![Vec::new(); parts];
    let mut open: Vec<Option<Open>> = (0..conc).map(|_| None).collect();
    // Each worker's process number (a new one after an `info`) and next value.
    let mut process: Vec<u64> = (0..conc).collect();
    let mut next_value: Vec<u64> = (0..conc).collect();
    let mut started = 0;
    let mut records = String::new();
    while started < shape.ops || open.iter().any(Option::is_some) {
        let k = rng.below(conc) as usize;
        let p = process[k].to_string();
        match open[k].take() {
            None if started < shape.ops => {
                started += 1;
                let partition = rng.below(shape.partitions);
                if rng.below(2) == 0 {
                    let value = next_value[k];
                    next_value[k] += conc;
                    let v = format!(r#"{{"partition":{partition},"value":{value}}}"#);
                    w.event(&p, "invoke", "send", &v, None);
                    open[k] = Some(Open::Send { partition, value });
                } else {
                    let hw = logs[partition as usize].len() as u64;
                    let back = rng.below(2 * shape.records_per_poll + 1);
                    let from = hw.saturating_sub(back);
                    let v = format!(r#"{{"partition":{partition},"offset":{from}}}"#);
                    w.event(&p, "invoke", "poll", &v, None);
                    open[k] = Some(Open::Poll { partition, from });
                }
                if rng.below(5_000) == 0 {
                    w.event(r#""nemesis""#, "info", "kill", "[1]", None);
                }
            }
            None => {}
            Some(Open::Send { partition, value }) => {
                w.written.sends += 1;
                let roll = rng.below(100);
                if roll == 0 {
                    let v = format!(r#"{{"partition":{partition},"value":{value}}}"#);
                    w.event(&p, "fail", "send", &v, Some("NOT_LEADER"));
                } else if roll == 1 {
                    // Indeterminate: it landed; the worker moves on.
                    logs[partition as usize].push(value);
                    let v = format!(r#"{{"partition":{partition},"value":{value}}}"#);
                    w.event(&p, "info", "send", &v, Some("timeout"));
                    process[k] += conc;
                } else {
                    let log = &mut logs[partition as usize];
                    let offset = log.len();
                    log.push(value);
                    let v =
                        format!(r#"{{"partition":{partition},"value":{value},"offset":{offset}}}"#);
                    w.event(&p, "ok", "send", &v, None);
                }
            }
            Some(Open::Poll { partition, from }) => {
                w.written.polls += 1;
                let log = &logs[partition as usize];
                let hw = log.len() as u64;
                let end = hw.min(from + 2 * shape.records_per_poll);
                write_records(&mut records, log, from, end);
                w.written.records += end - from;
                let v = format!(
                    r#"{{"partition":{partition},"records":[{records}],"high_watermark":{hw}}}"#
                );
                w.event(&p, "ok", "poll", &v, None);
            }
        }
    }
    // The final drain, from offset 0 of each partition, 1000 records a poll.
    let drainer = (process.iter().max().copied().unwrap_or(0) + conc).to_string();
    for (partition, log) in logs.iter().enumerate() {
        let hw = log.len() as u64;
        let mut from = 0;
        loop {
            let v = format!(r#"{{"partition":{partition},"offset":{from}}}"#);
            w.event(&drainer, "invoke", "final-poll", &v, None);
            let end = hw.min(from + 1000);
            write_records(&mut records, log, from, end);
            let v = format!(
                r#"{{"partition":{partition},"records":[{records}],"high_watermark":{hw}}}"#
            );
            w.event(&drainer, "ok", "final-poll", &v, None);
            if end >= hw {
                break;
            }
            from = end;
        }
    }
    w.out.flush().expect("flush the history");
    w.written
}

fn write_records(out: &mut String, log: &[u64], from: u64, end: u64) {
    use std::fmt::Write as _;
    out.clear();
    for o in from..end {
        if o > from {
            out.push(',');
        }
        let _ = write!(out, "[{o},{}]", log[o as usize]);
    }
}
