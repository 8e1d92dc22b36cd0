//! `kip101-data-loss`, KIP-101's first failure: every node crashes; the followers
//! come back first, learn the (still dead) leader and truncate to their stale HW;
//! the controller then elects one of them; acknowledged records are lost, and the
//! old leader's log diverges when it returns.

use super::script::{Instr, Op, Ref};
use super::{leader_moved, new_writes, warm_up};

pub fn script() -> Vec<Instr> {
    let mut s = warm_up();
    s.extend([
        Instr::Do(Op::CrashAll),
        // The followers come back at once: the controller still names the old leader.
        Instr::Do(Op::Restart(Ref::Followers("start"))),
        leader_moved(Ref::Is("start"), "new"),
        new_writes("new", "start"),
        Instr::Do(Op::Restart(Ref::AllButFollowers("start"))),
    ]);
    s
}
