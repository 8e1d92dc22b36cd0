//! Knossos's queues: `enqueue` a value, `dequeue` one. A FIFO queue dequeues its
//! oldest value; an unordered queue any value it holds (a multiset). Empty
//! initially, or the values given. The state is a row in the search's [`Rows`]
//! arena: the values in order (FIFO), or a count per value (unordered).
//!
//! A dequeue that never completed removed an unknown value, or nothing: from a
//! FIFO queue that is its head ([`QueueOp::DequeueAny`]). (Knossos reads such a
//! dequeue as dequeuing `nil`, which never fits, so it can only never have
//! happened — a violation where the dequeue took the head is then reported.
//! From an unordered queue, removing a value never lets a later operation fit
//! that did not, so never having happened is exact there, and such a dequeue is
//! left out.)

use super::model::{Model, Val, name};
use super::rows::{RowId, Rows};

/// An operation on a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueOp {
    Enqueue(Val),
    /// A dequeue that returned this value.
    Dequeue(Val),
    /// A dequeue whose value is unknown (FIFO: the head, whatever it is).
    DequeueAny,
}

fn describe(names: &[String], op: &QueueOp) -> String {
    match op {
        QueueOp::Enqueue(v) => format!("enqueue {}", name(names, *v)),
        QueueOp::Dequeue(v) => format!("dequeue → {}", name(names, *v)),
        QueueOp::DequeueAny => "dequeue → ?".to_string(),
    }
}

/// A first-in, first-out queue.
#[derive(Debug, Clone, Default)]
pub struct FifoQueue {
    pub names: Vec<String>,
    /// The values before any operation, oldest first.
    pub init: Vec<Val>,
}

impl Model for FifoQueue {
    type Op = QueueOp;
    /// The values, oldest first.
    type State = RowId;
    type Arena = Rows;

    fn init(&self, rows: &mut Rows) -> RowId {
        rows.intern(&self.init)
    }

    fn step(&self, rows: &mut Rows, s: &RowId, op: &QueueOp) -> Option<RowId> {
        let mut scratch = std::mem::take(&mut rows.scratch);
        scratch.clear();
        let row = rows.get(*s);
        let fits = match *op {
            QueueOp::Enqueue(v) => {
                scratch.extend_from_slice(row);
                scratch.push(v);
                true
            }
            QueueOp::Dequeue(v) if row.first() == Some(&v) => {
                scratch.extend_from_slice(&row[1..]);
                true
            }
            QueueOp::Dequeue(_) => false,
            QueueOp::DequeueAny if !row.is_empty() => {
                scratch.extend_from_slice(&row[1..]);
                true
            }
            QueueOp::DequeueAny => false,
        };
        rows.scratch = scratch;
        fits.then(|| rows.intern_scratch())
    }

    fn describe_op(&self, op: &QueueOp) -> String {
        describe(&self.names, op)
    }

    fn describe_state(&self, rows: &Rows, s: &RowId) -> String {
        let vs: Vec<&str> = rows.get(*s).iter().map(|&v| name(&self.names, v)).collect();
        format!("[{}]", vs.join(" "))
    }

    fn arena_bytes(&self, rows: &Rows) -> usize {
        rows.bytes()
    }
}

/// A queue that hands out its values in any order: a multiset.
#[derive(Debug, Clone, Default)]
pub struct UnorderedQueue {
    pub names: Vec<String>,
    /// How many of each value (by id) the queue holds before any operation.
    pub init: Vec<u32>,
}

impl Model for UnorderedQueue {
    type Op = QueueOp;
    /// A count per value.
    type State = RowId;
    type Arena = Rows;

    fn init(&self, rows: &mut Rows) -> RowId {
        rows.fixed(self.init.len());
        rows.intern(&self.init)
    }

    fn step(&self, rows: &mut Rows, s: &RowId, op: &QueueOp) -> Option<RowId> {
        let (v, delta) = match *op {
            QueueOp::Enqueue(v) => (v, 1i64),
            QueueOp::Dequeue(v) => (v, -1),
            // Left out by the reader (see the module's doc).
            QueueOp::DequeueAny => return None,
        };
        let count = rows.get(*s)[v as usize] as i64 + delta;
        if count < 0 {
            return None;
        }
        let mut scratch = std::mem::take(&mut rows.scratch);
        scratch.clear();
        scratch.extend_from_slice(rows.get(*s));
        scratch[v as usize] = count as u32;
        rows.scratch = scratch;
        Some(rows.intern_scratch())
    }

    fn describe_op(&self, op: &QueueOp) -> String {
        describe(&self.names, op)
    }

    fn describe_state(&self, rows: &Rows, s: &RowId) -> String {
        let mut vs = Vec::new();
        for (v, &n) in rows.get(*s).iter().enumerate() {
            for _ in 0..n {
                vs.push(name(&self.names, v as Val));
            }
        }
        format!("{{{}}}", vs.join(" "))
    }

    fn arena_bytes(&self, rows: &Rows) -> usize {
        rows.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["nil", "1", "2"].map(String::from).into()
    }

    #[test]
    fn fifo_dequeues_the_oldest_value() {
        let m = FifoQueue {
            names: names(),
            init: vec![2],
        };
        let mut rows = Rows::default();
        let s0 = m.init(&mut rows);
        let s1 = m.step(&mut rows, &s0, &QueueOp::Enqueue(1)).unwrap();
        assert_eq!(m.describe_state(&rows, &s1), "[2 1]");
        assert_eq!(m.step(&mut rows, &s1, &QueueOp::Dequeue(1)), None);
        let s2 = m.step(&mut rows, &s1, &QueueOp::Dequeue(2)).unwrap();
        assert_eq!(m.describe_state(&rows, &s2), "[1]");
        let empty = m.step(&mut rows, &s2, &QueueOp::DequeueAny).unwrap();
        assert_eq!(m.step(&mut rows, &empty, &QueueOp::DequeueAny), None);
        assert_eq!(m.step(&mut rows, &empty, &QueueOp::Dequeue(0)), None);
        assert_eq!(m.describe_op(&QueueOp::DequeueAny), "dequeue → ?");
    }

    #[test]
    fn unordered_dequeues_any_value_it_holds() {
        let m = UnorderedQueue {
            names: names(),
            init: vec![0, 0, 1],
        };
        let mut rows = Rows::default();
        let s0 = m.init(&mut rows);
        let s1 = m.step(&mut rows, &s0, &QueueOp::Enqueue(1)).unwrap();
        let s2 = m.step(&mut rows, &s1, &QueueOp::Enqueue(1)).unwrap();
        assert_eq!(m.describe_state(&rows, &s2), "{1 1 2}");
        let s3 = m.step(&mut rows, &s2, &QueueOp::Dequeue(2)).unwrap();
        assert_eq!(m.step(&mut rows, &s3, &QueueOp::Dequeue(2)), None);
        let s4 = m.step(&mut rows, &s3, &QueueOp::Dequeue(1)).unwrap();
        assert_eq!(
            m.step(&mut rows, &s4, &QueueOp::Dequeue(1))
                .map(|s| m.describe_state(&rows, &s)),
            Some("{}".to_string())
        );
        assert_eq!(m.step(&mut rows, &s0, &QueueOp::Dequeue(1)), None);
    }
}
