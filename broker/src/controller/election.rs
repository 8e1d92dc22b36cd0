//! Leader election rules, as Kafka's controller applies them: pure functions over a
//! partition's replicas, ISR and the set of live brokers.
//!
//! Clean election picks the first replica, in replica order, that is alive and in the
//! ISR: every ISR member holds every committed record, so nothing acknowledged with
//! `acks=all` is lost. Unclean election (`--unclean-election`) falls back to the first
//! live replica even outside the ISR: the partition becomes available again, at the
//! price of losing whatever the ISR had committed beyond that replica's log.

use crate::bugs::Bug;
use crate::bugs::Bugs;
use crate::protocol::BrokerId;

/// The outcome of an election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Election {
    /// A live ISR member leads; the ISR is unchanged.
    Clean(BrokerId),
    /// No ISR member is alive; this live out-of-sync replica leads with ISR = [it].
    Unclean(BrokerId),
    /// Nobody eligible is alive: the partition is offline (leader -1).
    Offline,
}

/// Elect a leader among `replicas` (in replica order). `bugs`: the controller's
/// planted bugs — PLANTED BUG (elect-out-of-isr): the clean election's pick need
/// not be in the ISR.
pub fn elect(
    replicas: &[BrokerId],
    isr: &[BrokerId],
    alive: impl Fn(BrokerId) -> bool,
    unclean: bool,
    bugs: Bugs,
) -> Election {
    let eligible = |b: BrokerId| bugs.has(Bug::ElectOutOfIsr) || isr.contains(&b);
    if let Some(&b) = replicas.iter().find(|&&b| eligible(b) && alive(b)) {
        return Election::Clean(b);
    }
    match replicas.iter().find(|&&b| alive(b)) {
        Some(&b) if unclean => Election::Unclean(b),
        _ => Election::Offline,
    }
}

/// The ISR a newly elected `leader` leads: `isr` when it is a member, else just the
/// leader, as Kafka's controller has it (an unclean leader's ISR is itself). A clean
/// election's leader is always a member, but for the planted bug elect-out-of-isr.
pub fn isr_led_by(isr: Vec<BrokerId>, leader: BrokerId) -> Vec<BrokerId> {
    if isr.contains(&leader) {
        isr
    } else {
        vec![leader]
    }
}

/// Round-robin replica assignment (Kafka's, with the topic's start given instead of
/// drawn): partition `p` takes `replication_factor` brokers starting at index `p`
/// (the topic's start plus its partition number) of the sorted broker ids, so the
/// first replica (the preferred leader) rotates over the brokers.
pub fn assign_replicas(
    brokers: &[BrokerId],
    partition: u32,
    replication_factor: u32,
) -> Vec<BrokerId> {
    let n = brokers.len();
    (0..replication_factor as usize)
        .map(|i| brokers[(partition as usize + i) % n])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_election_takes_first_live_isr_member_in_replica_order() {
        let alive = |b| b != 1;
        assert_eq!(
            elect(&[1, 2, 3], &[3, 2, 1], alive, false, Bugs::default()),
            Election::Clean(2)
        );
        assert_eq!(
            elect(&[1, 2, 3], &[1, 3], alive, true, Bugs::default()),
            Election::Clean(3)
        );
    }

    #[test]
    fn elect_out_of_isr_takes_the_first_live_replica_in_or_out_of_the_isr() {
        let alive = |b| b != 1;
        let bug = Bugs::planted(Some(Bug::ElectOutOfIsr));
        // 2 is alive but out of the ISR: the rule skips it, the planted bug does not.
        assert_eq!(
            elect(&[1, 2, 3], &[1, 3], alive, false, Bugs::default()),
            Election::Clean(3)
        );
        assert_eq!(
            elect(&[1, 2, 3], &[1, 3], alive, false, bug),
            Election::Clean(2)
        );
    }

    #[test]
    fn a_leader_outside_the_isr_leads_an_isr_of_itself() {
        assert_eq!(isr_led_by(vec![1, 3], 3), vec![1, 3]);
        assert_eq!(isr_led_by(vec![1, 3], 2), vec![2]);
    }

    #[test]
    fn no_live_isr_member_is_offline_unless_unclean() {
        let alive = |b| b == 3;
        assert_eq!(
            elect(&[1, 2, 3], &[1, 2], alive, false, Bugs::default()),
            Election::Offline
        );
        assert_eq!(
            elect(&[1, 2, 3], &[1, 2], alive, true, Bugs::default()),
            Election::Unclean(3)
        );
        assert_eq!(
            elect(&[1, 2, 3], &[1], |_| false, true, Bugs::default()),
            Election::Offline
        );
    }

    #[test]
    fn round_robin_rotates_the_preferred_leader() {
        let ids = [1, 2, 3];
        assert_eq!(assign_replicas(&ids, 0, 3), vec![1, 2, 3]);
        assert_eq!(assign_replicas(&ids, 1, 3), vec![2, 3, 1]);
        assert_eq!(assign_replicas(&ids, 2, 2), vec![3, 1]);
        assert_eq!(assign_replicas(&ids, 4, 1), vec![2]);
    }
}
