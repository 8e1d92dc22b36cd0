//! `kip279-divergence`, KIP-279's failure: leadership moves twice before a follower
//! has caught up with the first move. A follower cut off from its peers (not from
//! the controller) is told of the interim leader, truncates to its stale HW, and is
//! elected when the interim leader dies a moment later; the acknowledged records
//! its HW did not cover are gone, and the first leader's log diverges when it
//! returns. The interim leader's epoch is one the final leader never saw: its
//! follower asks about it after a restart, which is what KIP-279's answer (the
//! largest epoch at or below the one asked for) is for.

use std::time::Duration;

use super::script::{Cond, Instr, Links, Num, Op, Ref, Test};
use super::{FAILOVER, leader_moved, look, new_writes, warm_up};

/// How long the script lets uncommitted records pile up behind a stalled follower
/// (well under the broker's 10 s replica lag time, so nobody leaves the ISR
/// meanwhile).
const PILE_UP: Duration = Duration::from_secs(4);
/// Uncommitted records the script wants piled up before it goes on.
const PILED: u64 = 3;
/// How long the script waits after the HW moved for the acknowledgements to reach
/// the clients.
const ACKS_OUT: Duration = Duration::from_millis(300);

pub fn script() -> Vec<Instr> {
    // The controller elects the first live ISR member in replica order: `interim`
    // leads after `old`, then `last` after `interim`.
    let (old, interim, last) = (
        Ref::Is("start"),
        Ref::Follower("start", 0),
        Ref::Follower("start", 1),
    );
    let stall = Links::OneWay(interim.clone(), old.clone());
    let isolate = Links::FromPeers(last.clone());
    let wait = |until, within| Instr::Await {
        until,
        within,
        bind: None,
        or_fail: None,
    };
    let mut s = warm_up();
    s.extend([
        // The interim leader stops fetching from the leader (one direction only, so
        // nothing else stalls), and acks=all records pile up above the HW on the
        // leader and on `last`, which holds them but does not know they will commit.
        Instr::Do(Op::Cut("one-way", stall.clone())),
        wait(
            Cond::Replica(last.clone(), Test::PendingAtLeast(PILED)),
            PILE_UP,
        ),
        // `last` is cut off from its peers (it still reaches the controller), so it
        // learns nothing more from any leader; then the interim leader catches up
        // and the old leader commits and acknowledges the piled-up records.
        Instr::Do(Op::Cut("isolate-from-peers", isolate.clone())),
        Instr::Do(Op::Heal("one-way", stall)),
        look(last.clone(), "held"),
        Instr::IfBound(
            vec!["held"],
            vec![wait(
                Cond::Replica(
                    old.clone(),
                    Test::HwAtLeast(Num {
                        leo_of: "held",
                        plus: 0,
                    }),
                ),
                PILE_UP,
            )],
        ),
        Instr::Sleep(ACKS_OUT),
        look(old.clone(), "end"),
        // First failover: the old leader stalls; the controller elects the interim
        // leader and tells `last`, which becomes its follower (under hw it truncates
        // to its stale HW at once; under epoch it waits for the interim leader's
        // OffsetsForLeaderEpoch answer, which never comes).
        Instr::Do(Op::Pause(old.clone())),
        leader_moved(old.clone(), "interim-led"),
        Instr::IfBound(
            vec!["interim-led"],
            vec![wait(
                Cond::Replica(last.clone(), Test::LeaderIs(interim.clone())),
                FAILOVER,
            )],
        ),
        // Second failover, before `last` caught up: the interim leader dies, and
        // `last` is the only live ISR member left.
        Instr::Do(Op::Kill(interim.clone())),
        Instr::Do(Op::Heal("isolate-from-peers", isolate)),
        leader_moved(interim.clone(), "new"),
        // The interim leader comes back as a follower, so acks=all writes flow
        // again, at offsets the old leader committed; then the old leader returns.
        Instr::Do(Op::Restart(interim)),
        new_writes("new", "end"),
        Instr::Do(Op::Resume(old)),
    ]);
    s
}
