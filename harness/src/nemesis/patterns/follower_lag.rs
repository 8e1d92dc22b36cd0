//! `follower-lag`: cut a follower from its leader (not from the controller) for
//! about the lag time; in turn healed on a throttled link, the leader killed while
//! it catches up — the ISR's expansion rule, which no other pattern reaches.

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, favour, Pattern, Roles, cut, heal, just_past, ms, pair, shorter};
use crate::nemesis::action::{Action, Script};
use crate::nemesis::coverage::Transition::{self, *};
use crate::nemesis::fault::Degradation;
use crate::proc::Proc;

pub struct FollowerLag;

/// How long after the lag time the leader's ISR shrink may take to be agreed with
/// the controller and let writes through (its ISR check, the AlterPartition round
/// trip, a loaded machine).
const SHRINK_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Pattern for FollowerLag {
    fn name(&self) -> &'static str {
        "follower-lag"
    }

    fn targets(&self) -> &'static [Transition] {
        &[IsrShrinkLag, IsrExpand, LeaderElection]
    }

    /// The most: a follower catching up on a throttled link as the leader dies
    /// reaches the ISR's expansion rule, which no other pattern reaches, and the
    /// election's, whose next in line is then out of the ISR. (It also leads each
    /// round: its weight counts while no partition suits it.)
    fn base_weight(&self) -> f64 {
        4.0
    }

    /// Once, for its first variant: a follower catching up as the leader dies.
    fn per_round(&self) -> u32 {
        1
    }

    /// Its catch-up-then-kill opens the one window no other pattern opens (a
    /// follower back in the ISR, or next in line outside it, without what the
    /// leader acknowledged), so that no seed leaves it to the end of a round a
    /// minute does not finish.
    fn leads_round(&self) -> bool {
        true
    }

    /// The follower cut off must reach the controller (else it expires and leaves
    /// the ISR by the controller's hand), and so must the leader.
    fn needs_controller_apart(&self) -> bool {
        true
    }

    /// A follower that rejoined the ISR, or was elected, without records the leader
    /// acknowledged loses them, which a lossless topic's checker finds whatever
    /// comes after: three to one.
    fn topic_weight(&self, topic: &str, settings: &PackageSettings) -> f64 {
        favour(&settings.lossless_topics, topic, 3.0)
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let zero = std::time::Duration::ZERO;
        let (leader, next) = (aim.leader, aim.next);
        let mut roles = aim.roles();
        roles.follower = Some(next);
        let grudge = pair(leader, next);
        let s = Script::default();
        if aim.turn % 2 != 0 {
            roles.variant = Some("lag");
            // Past the lag time, but not by much: the shrink comes once the lag time
            // is over, and the rest of the hold only idles.
            let held = if rng.random_bool(0.67) {
                just_past(rng, t.lag)
            } else {
                shorter(rng, t.lag)
            };
            let s = s
                .then(zero, cut("cut-follower", &grudge))
                .then(held, heal("cut-follower", &grudge));
            return (roles, s);
        }
        // Out of the ISR past the lag time, then back on a throttled link: it catches
        // up slowly, and the leader dies meanwhile. Only the ISR the controller agreed
        // to may elect: a follower must not rejoin it before it has everything the HW
        // covers. Cut well past the lag time and the clients' request timeout (the
        // writes sent as the cut began wait for it until the shrink, and time out):
        // after the shrink, the leader commits and acknowledges for seconds without
        // it, which it must then fetch — a KiB or two a second, so hundreds of
        // records take seconds, on the links between the two only (its heartbeats to
        // the controller, and its fetches from other leaders, go at full speed). The
        // leader dies as soon as the controller shows the follower back in the ISR
        // (which it may be only once it has everything the HW covers), or after a
        // second or so of catching up, whichever comes first — and the path between
        // them goes down with it, so that what the leader had already sent is not
        // delivered after its death: the follower holds what it had caught up when
        // the controller elects.
        roles.variant = Some("catch-up-then-kill-leader");
        let throttle = Action::Degrade {
            procs: vec![Proc::Node(next), Proc::Node(leader)],
            between: true,
            how: Degradation::Throttle {
                bytes_per_s: rng.random_range(2..=8) * 256,
            },
            seed: rng.random(),
        };
        let restore = throttle.undo().expect("a degradation is undone");
        let held = t.lag.max(t.client) + t.client.mul_f64(rng.random_range(1.0..1.7));
        // Kafka's contract (replica.lag.time.max.ms): once the lag time is over the
        // leader drops the follower it cannot reach and acknowledges with the rest
        // — when the rest are enough (min.insync.replicas) — until the heal.
        let rest = aim.partition.map_or(0, |p| {
            p.isr.iter().filter(|&&r| r != next).count() as u32
        });
        let s = if rest >= aim.settings.min_insync.max(1) {
            s.available(t.lag + SHRINK_GRACE, held)
        } else {
            s
        };
        let s = s
            .then(zero, cut("cut-follower", &grudge))
            .then(held, throttle)
            .then(zero, heal("cut-follower", &grudge))
            .then(
                ms(rng, 50..150),
                Action::KillOnceInIsr {
                    leader,
                    follower: next,
                    topic: aim.topic(),
                    partition: aim.partition_number(),
                    within: ms(rng, 800..1500),
                },
            )
            .then(zero, cut("cut-follower", &grudge))
            .then(
                just_past(rng, t.session) + aim.takeover(Proc::Node(leader)),
                heal("cut-follower", &grudge),
            )
            .then(zero, Action::Restart(Proc::Node(leader)))
            .then(ms(rng, 300..1000), restore);
        (roles, s)
    }
}
