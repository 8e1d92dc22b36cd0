//! `unclean-election`: no member of the ISR alive, and a replica outside it that is.
//! One follower falls out of the ISR (cut from the leader past the lag time) while
//! the others commit on; then the leader and the other follower die. With
//! `--unclean-election` the controller elects the replica outside the ISR, which
//! lacks what the ISR committed since; without it the partition waits, offline, for
//! an ISR member, and loses nothing.

use std::time::Duration;

use super::script::{Cond, Instr, Links, Op, Ref};
use super::{FAILOVER, leader_moved, wait, warm_up};

/// How long the ISR commits without the follower cut off before the failure.
const COMMITS: Duration = Duration::from_secs(1);
/// How long an unclean leader takes writes before the ISR's members return.
const UNCLEAN_WRITES: Duration = Duration::from_secs(2);

pub fn script() -> Vec<Instr> {
    let (leader, other, outside) = (
        Ref::Is("start"),
        Ref::Follower("start", 0),
        Ref::Follower("start", 1),
    );
    let path = Links::Between(outside.clone(), leader.clone());
    let mut s = warm_up();
    s.extend([
        Instr::Do(Op::Cut("cut-follower", path.clone())),
        wait(Cond::IsrWithout(outside), FAILOVER),
        Instr::Sleep(COMMITS),
        // Every ISR member dies; the replica outside it lives on, and its path back
        // to the leader is healed (nothing left to fetch from).
        Instr::Do(Op::Kill(leader.clone())),
        Instr::Do(Op::Kill(other.clone())),
        Instr::Do(Op::Heal("cut-follower", path)),
        // Elected only with --unclean-election; else offline meanwhile.
        leader_moved(leader.clone(), "new"),
        Instr::Sleep(UNCLEAN_WRITES),
        Instr::Do(Op::Restart(other)),
        Instr::Do(Op::Restart(leader)),
    ]);
    s
}
