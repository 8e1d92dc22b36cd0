//! One function per kafka anomaly kind, over the history read once and indexed
//! here: which sends carried each message, which poll first read it, which
//! offsets of each key are known to exist, and each key's final log. The
//! definitions are docs/anomalies.md's ("Maelstrom's kafka").

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::reading::{Kafka, Key, Msg, Polled, Send};
use crate::history::Outcome;
use crate::verdict::{Anomaly, AnomalyKind, OpRef};

/// A key's final log: what its final polls read from offset 0 on.
pub(super) struct FinalLog {
    /// The first message read at each offset.
    records: BTreeMap<i64, Msg>,
    /// The drain reached the end: a final poll from where the others had read
    /// up to returned nothing.
    pub(super) complete: bool,
}

pub(super) struct Analysis<'k, 'a> {
    pub(super) k: &'k Kafka<'a>,
    /// Per (key, message): the sends that carried it (indices into `k.sends`).
    sent: HashMap<(Key, Msg), Vec<usize>>,
    /// Per (key, message): the first poll or final poll that returned it.
    first_read: HashMap<(Key, Msg), usize>,
    /// Per key: offsets known to hold a message (acknowledged or read).
    known: HashMap<Key, BTreeSet<i64>>,
    /// Per key: the highest offset any poll returned, and that poll.
    highest: HashMap<Key, (i64, usize)>,
    pub(super) finals: HashMap<Key, FinalLog>,
}

impl<'k, 'a> Analysis<'k, 'a> {
    pub(super) fn new(k: &'k Kafka<'a>) -> Analysis<'k, 'a> {
        let mut a = Analysis {
            k,
            sent: HashMap::new(),
            first_read: HashMap::new(),
            known: HashMap::new(),
            highest: HashMap::new(),
            finals: HashMap::new(),
        };
        for (i, s) in k.sends.iter().enumerate() {
            a.sent.entry((s.key, s.msg)).or_default().push(i);
            a.known.entry(s.key).or_default().extend(s.offset);
        }
        for (i, p) in k.polls.iter().enumerate() {
            for &(o, m) in &p.records {
                a.first_read.entry((p.key, m)).or_insert(i);
                a.known.entry(p.key).or_default().insert(o);
                let h = a.highest.entry(p.key).or_insert((o, i));
                if o > h.0 {
                    *h = (o, i);
                }
            }
            if p.is_final {
                a.drained(p);
            }
        }
        a
    }

    /// Follow the drain of a key by its next final poll.
    fn drained(&mut self, p: &Polled) {
        let log = self.finals.entry(p.key).or_insert(FinalLog {
            records: BTreeMap::new(),
            complete: false,
        });
        let reached = log.records.keys().next_back().map_or(0, |o| o + 1);
        let contiguous = p.from.is_some_and(|f| f <= reached);
        if contiguous && p.records.is_empty() {
            log.complete = true;
        }
        for &(o, m) in &p.records {
            log.records.entry(o).or_insert(m);
        }
    }

    /// Whether every send of a message to a key failed.
    fn all_failed(&self, key: Key, msg: Msg) -> bool {
        self.sent.get(&(key, msg)).is_some_and(|s| {
            s.iter()
                .all(|&i| self.k.ops[self.k.sends[i].op].outcome == Outcome::Fail)
        })
    }

    fn anomaly(&self, kind: AnomalyKind, key: Key, message: String) -> Anomaly {
        let mut a = Anomaly::new(kind, message);
        a.key = Some(self.k.key_name(key).into());
        a
    }

    /// Sends acknowledged but never read.
    pub(super) fn unobserved(&self) -> usize {
        self.k
            .sends
            .iter()
            .filter(|s| s.offset.is_some() && !self.first_read.contains_key(&(s.key, s.msg)))
            .count()
    }
}

/// Every kafka anomaly, by kind, then key, then offsets.
pub(super) fn all(a: &Analysis) -> Vec<Anomaly> {
    let mut found = lost_writes(a);
    found.extend(seen_twice(a));
    found.extend(bad_reads(a));
    found.extend(polls(a));
    found.extend(nonmonotonic_sends(a));
    found.extend(nonmonotonic_commits(a));
    found.sort_by(|x, y| {
        let key = |a: &Anomaly| a.key.as_ref().map(ToString::to_string);
        (x.kind, key(x), &x.offsets).cmp(&(y.kind, key(y), &y.offsets))
    });
    found
}

/// lost-write: where a key's drain completed, an acknowledged send — or a message
/// a poll read — missing from its final log; elsewhere, an acknowledged send that
/// no poll returned although a poll returned a later offset of its key.
fn lost_writes(a: &Analysis) -> Vec<Anomaly> {
    let k = a.k;
    let mut found = Vec::new();
    let mut lost = |s: Option<&Send>, key: Key, msg: Msg, why: String, reader: Option<usize>| {
        let mut x = a.anomaly(
            AnomalyKind::LostWrite,
            key,
            format!("message {} {why}", k.show(msg)),
        );
        x.offsets.extend(s.and_then(|s| s.offset));
        x.values = vec![k.exported(msg)];
        x.ops.extend(s.map(|s| k.send_ref(s)));
        x.ops.extend(reader.map(|i| k.poll_ref(&k.polls[i])));
        found.push(x);
    };
    for s in k.sends.iter() {
        let Some(o) = s.offset else { continue };
        match a.finals.get(&s.key).filter(|l| l.complete) {
            Some(log) if !log.records.values().any(|m| *m == s.msg) => {
                let why = format!("(acknowledged at offset {o}) is missing from the final log");
                lost(
                    Some(s),
                    s.key,
                    s.msg,
                    why,
                    a.first_read.get(&(s.key, s.msg)).copied(),
                );
            }
            Some(_) => {}
            None if a.first_read.contains_key(&(s.key, s.msg)) => {}
            None => {
                if let Some(&(h, poll)) = a.highest.get(&s.key).filter(|(h, _)| *h > o) {
                    let why = format!(
                        "(acknowledged at offset {o}) was never read, though a poll read up to offset {h}"
                    );
                    lost(Some(s), s.key, s.msg, why, Some(poll));
                }
            }
        }
    }
    // Messages only a poll vouches for (their sends in doubt), gone from a
    // complete final log.
    let mut read: Vec<(&(Key, Msg), &usize)> = a.first_read.iter().collect();
    read.sort_by_key(|(_, i)| **i);
    for (&(key, msg), &i) in read {
        let Some(log) = a.finals.get(&key).filter(|l| l.complete) else {
            continue;
        };
        let sends = a.sent.get(&(key, msg)).map_or(&[][..], Vec::as_slice);
        let acked = sends.iter().any(|&s| k.sends[s].offset.is_some());
        if k.polls[i].is_final || sends.is_empty() || acked || a.all_failed(key, msg) {
            continue;
        }
        if !log.records.values().any(|m| *m == msg) {
            let first = sends.first().map(|&s| &k.sends[s]);
            lost(
                first,
                key,
                msg,
                "was read by a poll but is missing from the final log".into(),
                Some(i),
            );
        }
    }
    found
}

/// Where a message was seen at an offset: a send's acknowledgement or a poll.
#[derive(Clone, Copy)]
enum Witness {
    Send(usize),
    Poll(usize),
}

/// inconsistent-offsets (an offset seen with two messages) and duplicate (a
/// message seen at two offsets), across acknowledgements and polls.
fn seen_twice(a: &Analysis) -> Vec<Anomaly> {
    let k = a.k;
    let mut at: BTreeMap<(Key, i64), Vec<(Msg, Witness)>> = BTreeMap::new();
    let mut of: BTreeMap<(Key, Msg), Vec<(i64, Witness)>> = BTreeMap::new();
    let mut see = |key, o, m, w| {
        at.entry((key, o)).or_default().push((m, w));
        of.entry((key, m)).or_default().push((o, w));
    };
    for (i, s) in k.sends.iter().enumerate() {
        if let Some(o) = s.offset {
            see(s.key, o, s.msg, Witness::Send(i));
        }
    }
    for (i, p) in k.polls.iter().enumerate() {
        for &(o, m) in &p.records {
            see(p.key, o, m, Witness::Poll(i));
        }
    }
    let refs = |ws: &mut dyn Iterator<Item = Witness>| -> Vec<OpRef> {
        let mut seen = HashSet::new();
        ws.filter_map(|w| {
            let r = match w {
                Witness::Send(i) => k.send_ref(&k.sends[i]),
                Witness::Poll(i) => k.poll_ref(&k.polls[i]),
            };
            seen.insert(r.invoke).then_some(r)
        })
        .collect()
    };
    let mut found = Vec::new();
    for ((key, o), seen) in &at {
        let msgs: BTreeSet<Msg> = seen.iter().map(|s| s.0).collect();
        if msgs.len() < 2 {
            continue;
        }
        let shown: Vec<String> = msgs.iter().map(|m| k.show(*m)).collect();
        let message = format!(
            "offset {o} seen with {} messages: {}",
            msgs.len(),
            shown.join(", ")
        );
        let mut x = a.anomaly(AnomalyKind::InconsistentOffsets, *key, message);
        x.offsets = vec![*o];
        x.values = msgs.iter().map(|m| k.exported(*m)).collect();
        x.ops = refs(&mut seen.iter().map(|s| s.1));
        found.push(x);
    }
    for ((key, m), seen) in &of {
        let offsets: BTreeSet<i64> = seen.iter().map(|s| s.0).collect();
        if offsets.len() < 2 {
            continue;
        }
        let message = format!(
            "message {} seen at {} offsets: {offsets:?}",
            k.show(*m),
            offsets.len()
        );
        let mut x = a.anomaly(AnomalyKind::Duplicate, *key, message);
        x.offsets = offsets.into_iter().collect();
        x.values = vec![k.exported(*m)];
        x.ops = refs(&mut seen.iter().map(|s| s.1));
        found.push(x);
    }
    found
}

/// unexpected (a message polled that no send to its key carried) and
/// aborted-read (one whose every send failed), at the first poll of each.
fn bad_reads(a: &Analysis) -> Vec<Anomaly> {
    let k = a.k;
    let mut first: Vec<(&(Key, Msg), &usize)> = a.first_read.iter().collect();
    first.sort_by_key(|(_, i)| **i);
    let mut found = Vec::new();
    for (&(key, msg), &i) in first {
        let poll = &k.polls[i];
        let offset = poll.records.iter().find(|r| r.1 == msg).map_or(0, |r| r.0);
        let (kind, why) = match a.sent.get(&(key, msg)) {
            None => (AnomalyKind::Unexpected, "was never sent"),
            Some(_) if a.all_failed(key, msg) => (
                AnomalyKind::AbortedRead,
                "was read although its send failed",
            ),
            Some(_) => continue,
        };
        let mut x = a.anomaly(
            kind,
            key,
            format!("message {} at offset {offset} {why}", k.show(msg)),
        );
        x.offsets = vec![offset];
        x.values = vec![k.exported(msg)];
        if let Some(sends) = a.sent.get(&(key, msg)) {
            x.ops.extend(sends.iter().map(|&s| k.send_ref(&k.sends[s])));
        }
        x.ops.push(k.poll_ref(poll));
        found.push(x);
    }
    found
}

/// nonmonotonic-poll (records below the offset asked for, or not ascending) and
/// poll-skip (offsets known to exist between the offset asked for and the highest
/// returned, not returned), per poll and key.
fn polls(a: &Analysis) -> Vec<Anomaly> {
    let k = a.k;
    let mut found = Vec::new();
    for p in &k.polls {
        let mut disorder = Vec::new();
        let mut highest: Option<i64> = None;
        for &(o, _) in &p.records {
            if p.from.is_some_and(|f| o < f) || highest.is_some_and(|h| o <= h) {
                disorder.push(o);
            }
            highest = Some(highest.map_or(o, |h| h.max(o)));
        }
        let from = p
            .from
            .map_or("unasked".to_string(), |f| format!("from offset {f}"));
        if !disorder.is_empty() {
            let message = format!(
                "poll {from} returned offsets {disorder:?} below the offset asked for or out of order"
            );
            let mut x = a.anomaly(AnomalyKind::NonmonotonicPoll, p.key, message);
            x.offsets = disorder;
            x.ops = vec![k.poll_ref(p)];
            found.push(x);
        }
        let (Some(f), Some(max)) = (p.from, highest) else {
            continue;
        };
        let returned: HashSet<i64> = p.records.iter().map(|r| r.0).collect();
        let skipped: Vec<i64> = a
            .known
            .get(&p.key)
            .into_iter()
            .flat_map(|known| known.range(f..max))
            .copied()
            .filter(|o| !returned.contains(o))
            .collect();
        if !skipped.is_empty() {
            let message = format!("poll {from} skipped offsets {skipped:?} that hold messages");
            let mut x = a.anomaly(AnomalyKind::PollSkip, p.key, message);
            x.offsets = skipped;
            x.ops = vec![k.poll_ref(p)];
            found.push(x);
        }
    }
    found
}

/// nonmonotonic-send: a process's acknowledged send to a key got a lower offset
/// than its previous acknowledged send to that key.
fn nonmonotonic_sends(a: &Analysis) -> Vec<Anomaly> {
    let k = a.k;
    let mut last: HashMap<(u64, Key), &Send> = HashMap::new();
    let mut found = Vec::new();
    for s in &k.sends {
        let Some(o) = s.offset else { continue };
        let process = k.ops[s.op].process();
        let Some(prev) = last.insert((process, s.key), s) else {
            continue;
        };
        let before = prev.offset.unwrap_or(i64::MIN);
        if o >= before {
            continue;
        }
        let message = format!(
            "process {process} sent {} at offset {before}, then {} at lower offset {o}",
            k.show(prev.msg),
            k.show(s.msg)
        );
        let mut x = a.anomaly(AnomalyKind::NonmonotonicSend, s.key, message);
        x.offsets = vec![o, before];
        x.values = vec![k.exported(prev.msg), k.exported(s.msg)];
        x.ops = vec![k.send_ref(prev), k.send_ref(s)];
        found.push(x);
    }
    found
}

/// nonmonotonic-commit: a listing of a key's committed offset, invoked after a
/// commit of offset c to that key was acknowledged, answered less than c (or
/// left the key out).
fn nonmonotonic_commits(a: &Analysis) -> Vec<Anomaly> {
    let k = a.k;
    // Per key: acknowledged commits by completion, with the highest so far.
    let mut by_key: HashMap<Key, Vec<(usize, usize)>> = HashMap::new();
    for (i, c) in k.commits.iter().enumerate() {
        if let Some(done) = k.ops[c.op].complete_pos {
            by_key.entry(c.key).or_default().push((done, i));
        }
    }
    for commits in by_key.values_mut() {
        commits.sort_unstable();
        for j in 1..commits.len() {
            if k.commits[commits[j - 1].1].offset > k.commits[commits[j].1].offset {
                commits[j].1 = commits[j - 1].1;
            }
        }
    }
    let mut found = Vec::new();
    for l in &k.listings {
        let Some(commits) = by_key.get(&l.key) else {
            continue;
        };
        let began = k.ops[l.op].invoke_pos;
        let n = commits.partition_point(|(done, _)| *done < began);
        let Some(&(_, best)) = n.checked_sub(1).and_then(|j| commits.get(j)) else {
            continue;
        };
        let c = &k.commits[best];
        if l.offset.is_some_and(|o| o >= c.offset) {
            continue;
        }
        let answered = l
            .offset
            .map_or("no offset".to_string(), |o| format!("offset {o}"));
        let message = format!(
            "listing the committed offset answered {answered} after a commit of offset {} was acknowledged",
            c.offset
        );
        let mut x = a.anomaly(AnomalyKind::NonmonotonicCommit, l.key, message);
        x.offsets = l.offset.into_iter().chain([c.offset]).collect();
        x.ops = vec![k.commit_ref(c), k.listing_ref(l)];
        found.push(x);
    }
    found
}
