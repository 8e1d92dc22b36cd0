//! The seed's own two cases of KIP-101, on exactly two replicas with
//! min.insync.replicas 1 (leader A, follower B), as the seed tells them: a
//! follower's HW reaches it one FETCH round after its records do, so a follower that
//! restarts and truncates to its HW cuts records its leader acknowledged (the first
//! case, `seed-hw-loss`); and two replicas that crash and come back in the wrong
//! order diverge (the second, `seed-hw-divergence`). With a live workload the
//! offsets are wherever B's HW lags its log when the script strikes: the script
//! waits for B to hold records its HW does not cover (the seed's "second fetch
//! round"), and for the second case for B to hold records not yet flushed.

use std::time::Duration;

use super::script::{Cond, Instr, Links, Op, Ref, Test};
use super::{FAILOVER, leader_moved, new_writes, wait, warm_up_on};

/// How long the script waits for the follower to be in the state it strikes in.
const STATE: Duration = Duration::from_secs(10);
/// Records the follower must hold unflushed before the power cut (about a second
/// of the workload's sends to the partition).
const UNFLUSHED: u64 = 40;

/// The first case: B restarts and truncates to its HW, then A dies, and B leads
/// without the records it cut.
pub fn hw_loss() -> Vec<Instr> {
    let (a, b) = (Ref::Is("start"), Ref::Follower("start", 0));
    let path = Links::Between(b.clone(), a.clone());
    let mut s = warm_up_on(2);
    s.extend([
        // B holds a record its HW does not cover yet.
        wait(Cond::Replica(b.clone(), Test::PendingAtLeast(1)), STATE),
        // Cut from A (not from the controller), B restarts: it truncates to its HW
        // at once under hw, and cannot fetch the records back.
        Instr::Do(Op::Cut("cut-follower", path.clone())),
        Instr::Do(Op::Kill(b.clone())),
        Instr::Do(Op::Restart(b.clone())),
        wait(Cond::Replica(b, Test::Any), STATE),
        // Then A dies; B is the ISR's only live member.
        Instr::Do(Op::Kill(a.clone())),
        Instr::Do(Op::Heal("cut-follower", path)),
        leader_moved(a.clone(), "new"),
        new_writes("new", "start"),
        Instr::Do(Op::Restart(a)),
    ]);
    s
}

/// The second case: both go down — B in a power cut, A frozen (SIGSTOP: its log
/// stays whole, as a crashed process's stays in the OS page cache; the brokers
/// simulate the page cache, so a SIGKILL would be a power cut for A too, and lose
/// what B lost as well) — B comes back first and leads, then A comes back.
pub fn hw_divergence() -> Vec<Instr> {
    let (a, b) = (Ref::Is("start"), Ref::Follower("start", 0));
    let mut s = warm_up_on(2);
    s.extend([
        wait(
            Cond::Replica(b.clone(), Test::UnflushedAtLeast(UNFLUSHED)),
            STATE,
        ),
        Instr::Do(Op::LoseUnflushed(b.clone())),
        Instr::Do(Op::Pause(a.clone())),
        // The wrong order: B first.
        Instr::Do(Op::Restart(b)),
        Instr::Await {
            until: Cond::LeaderMoved {
                from: a.clone(),
                running: true,
                above_epoch_of: None,
            },
            within: FAILOVER,
            bind: Some("new"),
            or_fail: None,
        },
        new_writes("new", "start"),
        Instr::Do(Op::Resume(a)),
    ]);
    s
}
