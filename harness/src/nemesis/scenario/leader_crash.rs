//! Two ways a leader's death costs a producer (seed 002 §4 and §5): with acks=1 it
//! takes with it what it acknowledged alone (`acks1-leader-crash`); with acks=all it
//! takes the answers to sends its followers had replicated, which a retrying
//! producer then writes again (`duplicate-on-leader-crash`).

use std::time::Duration;

use super::script::{Instr, Links, Op, Ref};
use super::{leader_moved, warm_up};

/// How long the leader acknowledges alone (acks=1) or holds its answers (acks=all):
/// under the lag time, so its followers stay in the ISR, and under the clients'
/// request timeout, so the sends still wait for their answers.
const ALONE: Duration = Duration::from_secs(1);
/// How long the answers stay held after the leader died: past the clients' request
/// timeout (3 s), so that the sends it had answered end in doubt — the answers are
/// lost with the leader — rather than being delivered late.
const ANSWERS_LOST: Duration = Duration::from_secs(4);
/// How long the producers' retries have to land on the new leader before the old
/// one returns (a retry waits for its backoff and looks the leader up again).
const RETRIES_LAND: Duration = Duration::from_secs(5);

/// acks=1: the leader cut from its followers acknowledges on its own append, then
/// dies; a follower without those records is elected.
pub fn acks1() -> Vec<Instr> {
    let leader = Ref::Is("start");
    let cut = Links::FromPeers(leader.clone());
    let mut s = warm_up();
    s.extend([
        Instr::Do(Op::Cut("isolate-from-peers", cut.clone())),
        Instr::Sleep(ALONE),
        Instr::Do(Op::Kill(leader.clone())),
        Instr::Do(Op::Heal("isolate-from-peers", cut)),
        leader_moved(leader.clone(), "new"),
        Instr::Sleep(RETRIES_LAND),
        Instr::Do(Op::Restart(leader)),
    ]);
    s
}

/// acks=all: the leader appends and replicates, its answers held, then dies; the
/// producers retry on the new leader.
pub fn duplicate() -> Vec<Instr> {
    let leader = Ref::Is("start");
    let mut s = warm_up();
    s.extend([
        Instr::Do(Op::HoldAnswers(leader.clone())),
        Instr::Sleep(ALONE),
        Instr::Do(Op::Kill(leader.clone())),
        Instr::Sleep(ANSWERS_LOST),
        Instr::Do(Op::ReleaseAnswers(leader.clone())),
        leader_moved(leader.clone(), "new"),
        Instr::Sleep(RETRIES_LAND),
        Instr::Do(Op::Restart(leader)),
    ]);
    s
}
