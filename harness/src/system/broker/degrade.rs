//! Degraded links on a running cluster (docs/faults.md#degraded-links): the proxies
//! to and from chosen processes slowed, made flaky or throttled, short of a cut.

use crate::net::Conditions;
use crate::net::proxy::Link;
use crate::proc::Proc;

use super::Cluster;

impl Cluster {
    /// Change the conditions of every link to or from one of `procs` — between
    /// processes and from clients — with `change`, leaving the rest of each link's
    /// conditions as they are. Each link's connections draw from its own seed, derived
    /// from `seed` and the link's place in the cluster.
    pub(super) fn degrade_around(
        &mut self,
        procs: &[Proc],
        seed: u64,
        change: impl Fn(&mut Conditions),
    ) {
        let between = self
            .links
            .iter()
            .filter(|((from, to), _)| procs.contains(from) || procs.contains(to))
            .map(|(_, link)| link);
        let clients = self
            .client_links
            .iter()
            .filter(|(to, _)| procs.contains(to))
            .map(|(_, link)| link);
        condition(between.chain(clients), seed, change);
    }

    /// Change the conditions of the links between `procs` only (both ways), as
    /// [`degrade`](Self::degrade) does: a slow path between two processes, while
    /// their other links — to the controller, to clients — stay as they are.
    pub(super) fn degrade_between(
        &mut self,
        procs: &[Proc],
        seed: u64,
        change: impl Fn(&mut Conditions),
    ) {
        let between = self
            .links
            .iter()
            .filter(|((from, to), _)| procs.contains(from) && procs.contains(to))
            .map(|(_, link)| link);
        condition(between, seed, change);
    }

    /// Restore every link to full health (cut links stay cut: see `heal`).
    pub(super) fn restore_links(&mut self) {
        for link in self.links.values().chain(self.client_links.values()) {
            link.condition(Conditions::default(), 0);
        }
    }

    /// How many links (between processes or from clients) are degraded now.
    pub fn degraded_links(&self) -> usize {
        self.links
            .values()
            .chain(self.client_links.values())
            .filter(|link| link.conditions() != Conditions::default())
            .count()
    }
}

/// Change each of `links`' conditions, the `i`-th link's draws seeded from `seed`
/// and its place.
fn condition<'a>(
    links: impl Iterator<Item = &'a Link>,
    seed: u64,
    change: impl Fn(&mut Conditions),
) {
    for (i, link) in links.enumerate() {
        let mut conditions = link.conditions();
        change(&mut conditions);
        let link_seed = seed ^ (i as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407);
        link.condition(conditions, link_seed);
    }
}
