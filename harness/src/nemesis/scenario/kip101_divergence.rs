//! `kip101-divergence`, KIP-101's second failure: one follower loses its unflushed
//! bytes (a power cut) and leaves the ISR; then the leader stalls while the other
//! follower loses its unflushed bytes and comes back at once; it is elected with a
//! shorter log and (with the first follower back in its ISR) takes new writes at
//! offsets the old leader already committed; the old leader returns, keeps what its
//! HW covers, and the logs diverge.

use super::script::{Cond, Instr, Op, Ref};
use super::{FAILOVER, leader_moved, look, new_writes, warm_up};

pub fn script() -> Vec<Instr> {
    let (old, first, last) = (
        Ref::Is("start"),
        Ref::Follower("start", 0),
        Ref::Follower("start", 1),
    );
    let mut s = warm_up();
    s.extend([
        // One follower loses its unflushed bytes first and leaves the ISR, so the old
        // leader and the controller's first choice are all the ISR holds.
        Instr::Do(Op::LoseUnflushed(last.clone())),
        Instr::Await {
            until: Cond::IsrWithout(last.clone()),
            within: FAILOVER,
            bind: None,
            or_fail: None,
        },
        look(old.clone(), "end"),
        // The leader stalls; the other follower loses its unflushed bytes and comes
        // back at once, while the controller still names the stalled leader.
        Instr::Do(Op::Pause(old.clone())),
        Instr::Do(Op::LoseUnflushed(first.clone())),
        Instr::Do(Op::Restart(first)),
        // The other follower comes back too: with it in the ISR again, a new leader
        // can take acks=all writes (min.insync.replicas 2).
        leader_moved(old.clone(), "new"),
        Instr::Do(Op::Restart(last)),
        new_writes("new", "end"),
        Instr::Do(Op::Resume(old)),
    ]);
    s
}
