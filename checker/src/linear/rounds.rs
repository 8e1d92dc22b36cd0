//! Checking every key of a history: each key's search on a bounded number of
//! threads, in rounds of growing memo budgets, and the keys' verdicts folded into
//! one result, a non-linearizable key explained (docs/anomalies.md).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::Options;
use super::model::Model;
use super::search::{GaveUp, Limits, Outcome as SearchOutcome, Search};
use super::split::Part;
use crate::verdict::{Anomaly, AnomalyKind, CheckerResult, Explanation, OpRef};

/// A key's verdict, with states already described.
enum KeyVerdict {
    Ok,
    Illegal {
        prefix: Vec<usize>,
        states: Vec<String>,
        blocked: usize,
        pending: Vec<usize>,
    },
    GaveUp(GaveUp),
}

/// The first round's memo budget per key; each round multiplies it by four.
const FIRST_ROUND: usize = 1 << 12;

/// A key being checked: its search (once started) and its verdict (once known).
struct Slot<M: Model> {
    search: Option<Search<M>>,
    verdict: Option<KeyVerdict>,
    entries: usize,
}

/// Check every key, on a bounded number of threads, in rounds of growing memo
/// budgets. A round ends when every open key has finished or reached the budget;
/// after a round that proved some key non-linearizable, the open keys are left
/// unjudged (the history is invalid either way, as in Porcupine, which stops at
/// the first violation). Because each search is deterministic and budgets count
/// memo entries, not time, the keys reported do not depend on thread timing.
pub(super) fn run<M: Model>(
    model: &M,
    parts: Vec<Part<'_, M::Op>>,
    limits: &Limits,
    options: &Options,
) -> CheckerResult {
    let slots = rounds(model, &parts, limits, options);
    fold(model, &parts, slots, options)
}

/// Run rounds, the budget four times larger each time, until every key has a
/// verdict or a round ends with a key proved non-linearizable or given up on.
fn rounds<M: Model>(
    model: &M,
    parts: &[Part<'_, M::Op>],
    limits: &Limits,
    options: &Options,
) -> Vec<Slot<M>> {
    let mut slots: Vec<Slot<M>> = parts
        .iter()
        .map(|_| Slot {
            search: None,
            verdict: None,
            entries: 0,
        })
        .collect();
    let threads = options.threads.clamp(1, parts.len().max(1));
    let mut budget = FIRST_ROUND;
    loop {
        let open: Vec<(usize, &mut Slot<M>)> = slots
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| s.verdict.is_none())
            .collect();
        if open.is_empty() {
            break;
        }
        let round = Round {
            model,
            parts,
            limits,
            options,
            budget,
        };
        round.run(open, threads);
        let done =
            |f: fn(&KeyVerdict) -> bool| slots.iter().any(|s| s.verdict.as_ref().is_some_and(f));
        if done(|v| matches!(v, KeyVerdict::Illegal { .. } | KeyVerdict::GaveUp(_))) {
            break;
        }
        budget = budget.saturating_mul(4);
    }
    slots
}

/// One round: what every key's search needs, and the round's memo budget per key.
struct Round<'r, 'a, M: Model> {
    model: &'r M,
    parts: &'r [Part<'a, M::Op>],
    limits: &'r Limits,
    options: &'r Options,
    budget: usize,
}

impl<M: Model> Round<'_, '_, M> {
    /// Search the open keys, taken one at a time from a shared queue by `threads`
    /// threads, the calling one among them.
    fn run(&self, open: Vec<(usize, &mut Slot<M>)>, threads: usize) {
        let queue = Mutex::new(open);
        let work = || {
            loop {
                let Some((p, slot)) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                    break;
                };
                self.search(p, slot);
            }
        };
        if threads == 1 {
            work();
        } else {
            // The calling thread works too: one spawn fewer, and it is already
            // running when other threads may still wait for a core.
            std::thread::scope(|s| {
                for _ in 1..threads {
                    s.spawn(work);
                }
                work();
            });
        }
    }

    /// Search key `p` up to the budget, going on from where its last round stopped;
    /// once it has a verdict, its states are described and its memo freed.
    fn search(&self, p: usize, slot: &mut Slot<M>) {
        let model = self.model;
        let ops = &self.parts[p].ops;
        let search = slot
            .search
            .get_or_insert_with(|| Search::new(model, ops, self.options.plain));
        let outcome = search.run(model, ops, self.limits, self.budget);
        slot.verdict = outcome.map(|outcome| match outcome {
            SearchOutcome::Linearizable => KeyVerdict::Ok,
            SearchOutcome::GaveUp(why) => KeyVerdict::GaveUp(why),
            SearchOutcome::Illegal(f) => KeyVerdict::Illegal {
                states: f
                    .states
                    .iter()
                    .map(|s| search.describe_state(model, s))
                    .collect(),
                prefix: f.prefix,
                blocked: f.blocked,
                pending: f.pending,
            },
        });
        slot.entries = search.cache_entries();
        if slot.verdict.is_some() {
            slot.search = None; // free the memo
        }
    }
}

/// The keys' verdicts folded into one result: an anomaly for each key that is not
/// linearizable, unknown if a search gave up, and the memo entries the searches
/// used and the keys left unjudged as statistics.
fn fold<M: Model>(
    model: &M,
    parts: &[Part<'_, M::Op>],
    slots: Vec<Slot<M>>,
    options: &Options,
) -> CheckerResult {
    let verdicts: Vec<Option<(KeyVerdict, usize)>> = slots
        .into_iter()
        .map(|s| s.verdict.map(|v| (v, s.entries)))
        .collect();

    let mut anomalies = Vec::new();
    let mut gave_up: Option<GaveUp> = None;
    let mut entries = 0u64;
    let mut unjudged = 0u64;
    for (part, v) in parts.iter().zip(verdicts) {
        let Some((verdict, used)) = v else {
            unjudged += 1;
            continue;
        };
        entries += used as u64;
        match verdict {
            KeyVerdict::Ok => {}
            KeyVerdict::GaveUp(why) => {
                if gave_up.is_none() || why != GaveUp::Stopped {
                    gave_up = Some(why);
                }
            }
            KeyVerdict::Illegal {
                prefix,
                states,
                blocked,
                pending,
            } => anomalies.push(nonlinearizable(
                model, part, prefix, states, blocked, pending,
            )),
        }
    }
    let mut result = CheckerResult::from_anomalies(anomalies);
    if let Some(why) = gave_up {
        result.cap_unknown(gave_up_reason(why, options));
    }
    result.stats = BTreeMap::from([
        ("memo-entries".to_string(), entries),
        ("keys-unjudged".to_string(), unjudged),
    ]);
    result
}

/// A key that is not linearizable, explained: the operation `blocked` that cannot
/// follow the longest linearizable prefix, the model's states after it, and the
/// operations pending there (all by position in the key's operations).
fn nonlinearizable<M: Model>(
    model: &M,
    part: &Part<'_, M::Op>,
    prefix: Vec<usize>,
    states: Vec<String>,
    blocked: usize,
    pending: Vec<usize>,
) -> Anomaly {
    let r = |i: usize| OpRef::of(part.origin[i], model.describe_op(&part.ops[i].op));
    let op = r(blocked);
    let of = match part.narrowed_from {
        Some(all) if all > part.ops.len() => format!(
            "{} of the {} operations that conflict, of {all} in all",
            prefix.len(),
            part.ops.len()
        ),
        _ => format!("{} of {} operations", prefix.len(), part.ops.len()),
    };
    let mut a = Anomaly::new(
        AnomalyKind::Nonlinearizable,
        format!(
            "{} cannot be linearized after the longest linearizable prefix ({of})",
            op.text
        ),
    );
    a.key = part.key.clone();
    a.ops = vec![op.clone()];
    a.explanation = Some(Explanation {
        op,
        prefix: prefix.into_iter().map(r).collect(),
        states,
        pending: pending.into_iter().map(r).collect(),
    });
    a
}

/// Why the verdict is unknown: the limit a search reached.
fn gave_up_reason(why: GaveUp, options: &Options) -> String {
    match why {
        GaveUp::Time => format!(
            "time limit of {:.1}s reached",
            options.time_limit.unwrap_or_default().as_secs_f64()
        ),
        GaveUp::Memory | GaveUp::Stopped => {
            format!("memory budget of {} MiB reached", options.max_memory >> 20)
        }
    }
}
