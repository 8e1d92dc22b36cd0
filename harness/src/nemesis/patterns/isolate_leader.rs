//! `isolate-leader`: cut the leader from the controller and every replica while
//! clients still reach it — reads and acks from a deposed leader, its unreplicated
//! suffix, its truncation when it rejoins.

use rand::{Rng, RngCore};

use super::{Aim, PackageSettings, favour, Pattern, Roles, cut, heal, just_past};
use crate::nemesis::action::Script;
use crate::nemesis::coverage::Transition::{self, *};
use crate::net::Grudge;
use crate::proc::Proc;

pub struct IsolateLeader;

impl Pattern for IsolateLeader {
    fn name(&self) -> &'static str {
        "isolate-leader"
    }

    fn targets(&self) -> &'static [Transition] {
        &[
            LeaderElection,
            Fenced,
            DeposedRead,
            TruncateEpoch,
            TruncateRecords,
        ]
    }

    fn base_weight(&self) -> f64 {
        3.0
    }

    /// Twice, one variant after the other.
    fn per_round(&self) -> u32 {
        2
    }

    /// Its windows — a deposed leader still answering reads, and taking writes its
    /// clients wait on when it learns it was deposed — are opened by no other
    /// pattern held as long, and drawn late in a round a minute often does not
    /// reach its second variant: it leads the round after `follower-lag`.
    fn leads_round(&self) -> bool {
        true
    }

    /// A deposed leader's stale read is an anomaly only where reads are
    /// linearizable: three to one.
    fn topic_weight(&self, topic: &str, settings: &PackageSettings) -> f64 {
        favour(&settings.linearizable_topics, topic, 3.0)
    }

    fn moves_leader(&self) -> bool {
        true
    }

    fn script(&self, aim: &Aim<'_>, rng: &mut dyn RngCore) -> (Roles, Script) {
        let t = aim.timeouts();
        let leader = Proc::Node(aim.leader);
        let mut roles = aim.roles();
        // Past a session timeout (and a controller takeover, when it is the
        // controller), so another leader is elected while clients still reach this
        // one: in turn just past it (the deposed leader rejoins while writes sent to
        // it still wait for their acks) and past the clients' request timeout too, so
        // that the clients whose writes to it timed out have moved to the new leader
        // and written there while others still read from, and write to, the deposed
        // one — by one to two more request timeouts, as a write that reached it late
        // (a client still finding leaders, say) times out late too. (A leader stopped
        // for less than a session timeout: `leader-pause`.)
        let elected = t.session + aim.takeover(leader);
        let held = if aim.turn % 2 == 0 {
            roles.variant = Some("just-past-session");
            just_past(rng, elected)
        } else {
            roles.variant = Some("past-client-timeout");
            elected.max(t.client) + t.client.mul_f64(rng.random_range(1.0..2.0))
        };
        let grudge = Grudge::isolate(leader, &aim.settings.procs());
        let s = Script::default()
            .then(std::time::Duration::ZERO, cut("isolate-leader", &grudge))
            .then(held, heal("isolate-leader", &grudge));
        (roles, s)
    }
}
