//! Real time as the search walks it: doubly linked lists over index arrays, from
//! which linearized operations are lifted and restored in O(1).
//!
//! - [`LinOp`]: an operation with its place in real time, what both lists are
//!   built from.
//! - [`Timeline`]: the call and return entries of the *determinate* operations
//!   (those with a return the search must reach), in real-time order. The calls
//!   before the first return are the operations that may take effect next.
//! - [`Pending`]: the calls of the *indeterminate* operations (`info`, or never
//!   completed), in invocation order. One may take effect once it was invoked
//!   before the timeline's first return, or never; `same` links each to the
//!   previous identical one, so that identical operations are taken in
//!   invocation order only (they are interchangeable).

/// An operation for the search: its model operation and its place in real time.
#[derive(Debug, Clone)]
pub struct LinOp<O> {
    pub op: O,
    /// Position of the invocation in the history's event order.
    pub invoke: usize,
    /// Position of the completion; `None` if it may take effect any time after its
    /// invocation (info, or never completed).
    pub complete: Option<usize>,
}

pub(super) const NIL: u32 = u32::MAX;
pub(super) const HEAD: u32 = 0;

/// The determinate operations' calls and returns: node 0 is the head.
pub(super) struct Timeline {
    pub(super) next: Vec<u32>,
    prev: Vec<u32>,
    /// The operation of each node (an index into the search's operations).
    pub(super) op: Vec<u32>,
    /// For a call node, its return node; `NIL` for return nodes.
    pub(super) ret: Vec<u32>,
    /// The entry's position in the history's event order.
    pub(super) pos: Vec<usize>,
}

impl Timeline {
    /// `ops` are the operations' indices; an operation without a completion gets
    /// its return after every event (the plain search's reading of `info`).
    pub(super) fn new<O>(all: &[LinOp<O>], ops: &[u32]) -> Timeline {
        let mut entries: Vec<(usize, bool, u32)> = Vec::with_capacity(ops.len() * 2);
        for &i in ops {
            let o = &all[i as usize];
            entries.push((o.invoke, false, i));
            entries.push((o.complete.unwrap_or(usize::MAX), true, i));
        }
        entries.sort_unstable();
        let n = entries.len() + 1;
        let mut l = Timeline {
            next: vec![NIL; n],
            prev: vec![NIL; n],
            op: vec![NIL; n],
            ret: vec![NIL; n],
            pos: vec![0; n],
        };
        let mut ret_node = vec![NIL; all.len()];
        for (k, &(pos, is_ret, op)) in entries.iter().enumerate() {
            let node = k as u32 + 1;
            l.op[node as usize] = op;
            l.pos[node as usize] = pos;
            if is_ret {
                ret_node[op as usize] = node;
            }
            l.prev[node as usize] = node - 1;
            l.next[node as usize - 1] = node;
        }
        for node in 1..n {
            let r = ret_node[l.op[node] as usize];
            if r != node as u32 {
                l.ret[node] = r;
            }
        }
        l
    }

    #[inline(always)]
    pub(super) fn first(&self) -> u32 {
        self.next[HEAD as usize]
    }

    #[inline(always)]
    fn unlink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = n;
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    #[inline(always)]
    fn relink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = e;
        if n != NIL {
            self.prev[n as usize] = e;
        }
    }

    /// Take a call and its return out of the list.
    #[inline(always)]
    pub(super) fn lift(&mut self, call: u32) {
        self.unlink(call);
        self.unlink(self.ret[call as usize]);
    }

    /// Undo `lift`, in reverse order.
    #[inline(always)]
    pub(super) fn unlift(&mut self, call: u32) {
        self.relink(self.ret[call as usize]);
        self.relink(call);
    }
}

/// The indeterminate operations' calls: node 0 is the head, node `k + 1` the
/// `k`-th indeterminate operation in invocation order.
pub(super) struct Pending {
    pub(super) next: Vec<u32>,
    prev: Vec<u32>,
    pub(super) op: Vec<u32>,
    /// Position of the invocation in the history's event order.
    pub(super) invoke: Vec<usize>,
    /// The previous node with an identical operation (`HEAD`: none).
    pub(super) same: Vec<u32>,
}

impl Pending {
    /// `ops` in invocation order; `class[i]` names the operation `ops[i]` is
    /// identical to (equal classes: interchangeable operations).
    pub(super) fn new<O>(all: &[LinOp<O>], ops: &[u32], class: &[u32]) -> Pending {
        let n = ops.len() + 1;
        let mut p = Pending {
            next: vec![NIL; n],
            prev: vec![NIL; n],
            op: vec![NIL; n],
            invoke: vec![0; n],
            same: vec![HEAD; n],
        };
        let mut last_of: std::collections::HashMap<u32, u32> = Default::default();
        for (k, (&i, &c)) in ops.iter().zip(class).enumerate() {
            let node = k as u32 + 1;
            p.op[node as usize] = i;
            p.invoke[node as usize] = all[i as usize].invoke;
            p.prev[node as usize] = node - 1;
            p.next[node as usize - 1] = node;
            if let Some(prev) = last_of.insert(c, node) {
                p.same[node as usize] = prev;
            }
        }
        p
    }

    #[inline(always)]
    pub(super) fn first(&self) -> u32 {
        self.next[HEAD as usize]
    }

    #[inline(always)]
    pub(super) fn lift(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = n;
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    #[inline(always)]
    pub(super) fn unlift(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = e;
        if n != NIL {
            self.prev[n as usize] = e;
        }
    }
}
