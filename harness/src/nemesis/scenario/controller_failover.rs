//! `controller-failover`: the leader of partition 0 is killed, and right after it
//! the active controller (unless the leader was the controller itself): the new
//! leader must be elected by a new controller, under a higher controller epoch,
//! which first gives the brokers a session timeout to reach it. When the kills leave
//! no majority of controller voters (two of three brokers), no controller exists: a
//! moment later the old leader comes back first (a restarted broker leads nothing),
//! so the controller elected then is not the killed one. Then both come back.

use std::time::Duration;

use super::script::{Cond, Instr, Num, Op, Ref, Test};
use super::{FAILOVER, NEW_WRITES, OVERWRITE, look, warm_up};

/// How long the scenario keeps a killed controller down when no majority of voters
/// is left without it.
const CONTROLLER_BACK: Duration = Duration::from_secs(1);

/// `nodes` brokers; `dedicated`: the controller is a process of its own.
pub fn script(nodes: usize, dedicated: bool) -> Vec<Instr> {
    let (old, controller) = (Ref::Is("start"), Ref::Is("controller"));
    let mut s = warm_up();
    // A quorum of one when dedicated: no controller until it is back. Else, with no
    // majority of voters left, the old leader comes back first (as a restarted
    // broker it leads nothing), so a controller other than the killed one is
    // elected, under a higher epoch, and elects the new leader.
    let back_first = if dedicated {
        vec![
            Instr::Sleep(CONTROLLER_BACK),
            Instr::Do(Op::RestartIfDown(controller.clone())),
        ]
    } else {
        vec![Instr::If(
            Cond::RunningAtMost(nodes / 2),
            vec![
                Instr::Sleep(CONTROLLER_BACK),
                Instr::Do(Op::RestartIfDown(old.clone())),
            ],
            vec![],
        )]
    };
    s.extend([
        Instr::Await {
            until: Cond::ActiveController { fault: "kill" },
            within: Duration::ZERO,
            bind: Some("controller"),
            or_fail: Some("scenario: no broker answers as the active controller".into()),
        },
        Instr::Do(Op::Kill(old.clone())),
        // The leader may be the controller itself: then one kill fails both over.
        Instr::IfDiffer(
            controller.clone(),
            old.clone(),
            vec![Instr::Do(Op::Kill(controller.clone()))],
        ),
    ]);
    s.extend(back_first);
    s.extend([
        // The new leader takes writes before the others return.
        Instr::Await {
            until: Cond::LeaderMoved {
                from: old.clone(),
                running: true,
                above_epoch_of: (!dedicated).then_some("controller"),
            },
            within: FAILOVER + CONTROLLER_BACK,
            bind: Some("new"),
            or_fail: None,
        },
        Instr::IfBound(vec!["new"], vec![look(Ref::Is("new"), "new-end")]),
        Instr::IfBound(
            vec!["new-end"],
            vec![Instr::Await {
                until: Cond::Replica(
                    Ref::Is("new"),
                    Test::LeoAtLeast(Num {
                        leo_of: "new-end",
                        plus: OVERWRITE,
                    }),
                ),
                within: NEW_WRITES,
                bind: None,
                or_fail: None,
            }],
        ),
        Instr::Do(Op::RestartIfDown(controller)),
        Instr::Do(Op::RestartIfDown(old)),
    ]);
    s
}
