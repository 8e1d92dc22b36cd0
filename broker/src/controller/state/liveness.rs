//! Broker liveness: what the active controller decides from heartbeats and silence
//! (commands to propose), and how registrations, restarts and deaths apply to the
//! partitions each broker replicates. A broker the voters were not started with
//! joins with its first heartbeat, which must give the address it is reached at.

use super::command::{Command, Expiry};
use super::{BrokerState, ChangedBy, ControllerState, Effects, Liveness, Millis};
use crate::bugs::Bug;
use crate::controller::election::{Election, elect, isr_led_by};
use crate::error::ApiError;
use crate::events::Event;
use crate::protocol::{
    BrokerId, Heartbeat, HeartbeatResponse, NO_LEADER, PartitionState, TopicPartition,
};

impl ControllerState {
    /// The active controller got a heartbeat at `now`: record it, and say whether it
    /// changes the replicated state (a registration, a restart, a return from the
    /// dead), in which case the command must be committed before answering.
    pub fn heartbeat_decision(
        &mut self,
        hb: &Heartbeat,
        now: Millis,
    ) -> Result<Option<Command>, ApiError> {
        let id = hb.broker_id;
        let Some(broker) = self.brokers.get(&id) else {
            // A broker the voters were not started with joins with its first
            // heartbeat, which must say where other brokers reach it.
            self.check_joining(hb)?;
            self.sessions.heard(id, now);
            self.sessions.came_back(id, now);
            return Ok(Some(Command::Heartbeat(hb.clone())));
        };
        self.sessions.heard(id, now);
        // A first registration, a restart or a return from the dead starts the
        // broker's time back (not a broker merely heard again after a takeover).
        if broker.broker_epoch != Some(hb.broker_epoch) || broker.liveness == Liveness::Dead {
            self.sessions.came_back(id, now);
        }
        let moved = hb.address.is_some() && hb.address != broker.address;
        let changes = broker.broker_epoch != Some(hb.broker_epoch)
            || broker.liveness != Liveness::Alive
            || moved;
        Ok(changes.then(|| Command::Heartbeat(hb.clone())))
    }

    /// A heartbeat from a broker the controller does not know may register it only
    /// with an address and a positive id.
    fn check_joining(&self, hb: &Heartbeat) -> Result<(), ApiError> {
        let id = hb.broker_id;
        if id <= 0 || hb.address.as_deref().is_none_or(str::is_empty) {
            return Err(ApiError::invalid(format!(
                "broker {id} is not one of the controller's brokers {:?} and gives no \
                 address to join with",
                self.brokers.keys().collect::<Vec<_>>()
            )));
        }
        Ok(())
    }

    /// The answer to broker `id`'s heartbeat: its partitions as the state holds
    /// them, and every other partition of the cluster (UpdateMetadata).
    pub fn heartbeat_response(&self, id: BrokerId) -> HeartbeatResponse {
        let (partitions, other_partitions) = self
            .partitions
            .values()
            .cloned()
            .partition(|p| p.replicas.contains(&id));
        HeartbeatResponse {
            controller_epoch: self.controller_epoch,
            brokers: self.brokers_info(),
            partitions,
            other_partitions,
        }
    }

    /// Apply a state-changing heartbeat: register, or handle a restart as a failure
    /// followed by a start (KIP-380), or a return from the dead.
    pub(super) fn apply_heartbeat(
        &mut self,
        hb: &Heartbeat,
    ) -> Result<(HeartbeatResponse, Effects), ApiError> {
        let id = hb.broker_id;
        let mut effects = Effects::default();
        if !self.brokers.contains_key(&id) {
            self.check_joining(hb)?;
            self.brokers.insert(id, BrokerState::pending(true));
            effects.events.push(format!(
                "broker {id}: joins the cluster at {}",
                hb.address.as_deref().unwrap_or("?")
            ));
        }
        let broker = &self.brokers[&id];
        let was = broker.liveness;
        let known_epoch = broker.broker_epoch;
        let mut started = was != Liveness::Alive;
        match known_epoch {
            None => {
                effects.events.push(format!(
                    "broker {id}: registered (broker epoch {})",
                    hb.broker_epoch
                ));
            }
            Some(old) if old != hb.broker_epoch => {
                effects.events.push(format!(
                    "broker {id}: restarted (broker epoch {old} -> {}), leaving every ISR",
                    hb.broker_epoch
                ));
                self.set_liveness(id, Liveness::Dead);
                self.broker_failed(id, "restarted", &mut effects);
                started = true;
            }
            Some(_) if was == Liveness::Dead => {
                effects.events.push(format!("broker {id}: alive again"));
            }
            Some(_) => {}
        }
        let b = self.brokers.get_mut(&id).expect("checked above");
        effects.dirty |= b.broker_epoch != Some(hb.broker_epoch) || b.liveness != Liveness::Alive;
        b.broker_epoch = Some(hb.broker_epoch);
        b.liveness = Liveness::Alive;
        if let Some(addr) = hb
            .address
            .as_ref()
            .filter(|a| b.address.as_ref() != Some(*a))
        {
            effects
                .events
                .push(format!("broker {id}: reached at {addr}"));
            b.address = Some(addr.clone());
            effects.dirty = true;
        }
        if started {
            self.elect_offline(&format!("broker {id} came back"), &mut effects);
            // A reassignment waiting for a target replica to lead may go on.
            self.advance_reassignments(&mut effects);
        }
        Ok((self.heartbeat_response(id), effects))
    }

    /// The active controller did not run from `from` to `now` (paused or starved):
    /// that time does not count against any broker's silence. Without this, a paused
    /// controller would declare every broker dead the moment it resumes.
    pub fn stalled(&mut self, from: Millis, now: Millis) -> Effects {
        self.sessions.stalled(from, now);
        Effects {
            events: vec![format!(
                "controller: did not run for {} ms (paused?); brokers' silence meanwhile does not count",
                now.saturating_sub(from)
            )],
            ..Effects::default()
        }
    }

    /// The active controller's clock moved: the brokers silent past the session
    /// timeout (or not heard from within the grace period of its takeover) to
    /// declare dead, if any.
    pub fn expiry_decision(&self, now: Millis) -> Option<Command> {
        let timeout = self.config.session_timeout_ms;
        let brokers: Vec<Expiry> = self
            .brokers
            .iter()
            .filter(|(_, b)| b.liveness != Liveness::Dead)
            .filter_map(|(&id, b)| {
                let why = self.sessions.silent(id, now, timeout)?;
                Some(Expiry {
                    broker_id: id,
                    broker_epoch: b.broker_epoch,
                    why,
                })
            })
            .collect();
        (!brokers.is_empty()).then_some(Command::Expire { brokers })
    }

    /// Apply an expiry: the brokers still in the epoch that fell silent are dead.
    pub(super) fn apply_expire(&mut self, expired: &[Expiry]) -> Effects {
        let mut effects = Effects::default();
        let mut dead = Vec::new();
        for e in expired {
            let Some(b) = self.brokers.get(&e.broker_id) else {
                continue;
            };
            if b.liveness == Liveness::Dead || b.broker_epoch != e.broker_epoch {
                continue;
            }
            effects
                .events
                .push(format!("broker {}: dead ({})", e.broker_id, e.why));
            dead.push(e.broker_id);
        }
        // All of them are dead before any election, so none is elected only to be
        // replaced a moment later (as Kafka handles a batch of dead brokers).
        for &id in &dead {
            self.set_liveness(id, Liveness::Dead);
            effects.dirty = true;
        }
        for &id in &dead {
            self.broker_failed(id, "died", &mut effects);
        }
        if !dead.is_empty() && self.config.unclean_election {
            // A broker that was still pending is dead now: an unclean election that
            // waited for it may go ahead.
            self.elect_offline("no ISR member can come back any more", &mut effects);
        }
        effects
    }

    /// Test driver of the active controller's heartbeat path: decide, and apply the
    /// command (if any) at once, as a quorum of one would.
    #[cfg(test)]
    pub fn heartbeat(
        &mut self,
        hb: &Heartbeat,
        now: Millis,
    ) -> Result<(HeartbeatResponse, Effects), ApiError> {
        match self.heartbeat_decision(hb, now)? {
            Some(Command::Heartbeat(hb)) => {
                let (resp, mut effects) = self.apply_heartbeat(&hb)?;
                self.stamp_elections(&mut effects.transitions, now);
                Ok((resp, effects))
            }
            _ => Ok((self.heartbeat_response(hb.broker_id), Effects::default())),
        }
    }

    /// Test driver of the active controller's liveness ticker.
    #[cfg(test)]
    pub fn tick(&mut self, now: Millis) -> Effects {
        match self.expiry_decision(now) {
            Some(Command::Expire { brokers }) => {
                let mut effects = self.apply_expire(&brokers);
                self.stamp_elections(&mut effects.transitions, now);
                effects
            }
            _ => Effects::default(),
        }
    }

    /// Broker `id` died or restarted: it leaves every ISR (never emptying one), and the
    /// partitions it led elect a new leader.
    fn broker_failed(&mut self, id: BrokerId, why: &str, effects: &mut Effects) {
        let affected: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.replicas.contains(&id))
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in affected {
            let p = &self.partitions[&tp];
            let mut isr: Vec<BrokerId> = p.isr.iter().copied().filter(|&b| b != id).collect();
            if isr.is_empty() {
                // Kafka keeps the last ISR member: it holds every committed record, so
                // the partition stays offline until it comes back (or unclean election).
                isr = p.isr.clone();
            }
            let mut next = p.clone();
            let mut why = format!("broker {id} {why}");
            if p.leader == id {
                // PLANTED BUG (no-epoch-bump): the successor leads in the same epoch.
                if !self.config.bugs.has(Bug::NoEpochBump) {
                    next.leader_epoch += 1;
                }
                next.partition_epoch += 1;
                let unclean = self.unclean_allowed(&isr);
                let bugs = self.config.bugs;
                match elect(&p.replicas, &isr, |b| self.is_alive(b), unclean, bugs) {
                    Election::Clean(b) => {
                        next.leader = b;
                        next.isr = isr_led_by(isr, b);
                        effects.transitions.push(self.elected(&next, true, id));
                    }
                    Election::Unclean(b) => {
                        next.leader = b;
                        next.isr = vec![b];
                        why.push_str(UNCLEAN_WARNING);
                        effects.transitions.push(self.elected(&next, false, id));
                    }
                    Election::Offline => {
                        next.leader = NO_LEADER;
                        next.isr = isr;
                        why.push_str(", no live ISR member: offline");
                    }
                }
            } else if isr != p.isr {
                next.isr = isr;
                next.partition_epoch += 1;
            } else {
                continue;
            }
            self.update(tp, next, &why, ChangedBy::Controller, effects);
        }
    }

    /// The event of `next`'s leader's election (`clean`: from the ISR), replacing
    /// `previous` (-1: the partition was offline). Applying the log knows no clock:
    /// whether the leader came back recently is left false here, for the active
    /// controller to [stamp](Self::stamp_elections) from its sessions.
    pub(super) fn elected(&self, next: &PartitionState, clean: bool, previous: BrokerId) -> Event {
        Event::LeaderElected {
            topic: next.topic.clone(),
            partition: next.partition,
            leader: next.leader,
            leader_epoch: next.leader_epoch,
            clean,
            recently_restarted: false,
            previous_leader: (previous != NO_LEADER).then_some(previous),
        }
    }

    /// The active controller at `now` marks each election in `transitions` whose new
    /// leader registered, restarted or came back from the dead less than a session
    /// timeout ago (by its own sessions: not before its takeover).
    pub fn stamp_elections(&self, transitions: &mut [Event], now: Millis) {
        let timeout = self.config.session_timeout_ms;
        for event in transitions {
            if let Event::LeaderElected {
                leader,
                recently_restarted,
                ..
            } = event
            {
                *recently_restarted = self.sessions.came_back_within(*leader, now, timeout);
            }
        }
    }

    /// Unclean election is a last resort: not while an ISR member may still come back
    /// within the grace period of a restarted controller, since it loses data.
    fn unclean_allowed(&self, isr: &[BrokerId]) -> bool {
        self.config.unclean_election
            && !isr
                .iter()
                .any(|b| self.brokers.get(b).map(|b| b.liveness) == Some(Liveness::Pending))
    }

    /// Offline partitions elect a leader again if an eligible replica is alive: after
    /// a broker came alive, or (unclean election) once the grace period is over.
    fn elect_offline(&mut self, why: &str, effects: &mut Effects) {
        let offline: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.leader == NO_LEADER)
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in offline {
            let p = &self.partitions[&tp];
            let mut next = p.clone();
            let mut why = why.to_string();
            let unclean = self.unclean_allowed(&p.isr);
            let bugs = self.config.bugs;
            let clean = match elect(&p.replicas, &p.isr, |b| self.is_alive(b), unclean, bugs) {
                Election::Clean(b) => {
                    // Drop members known dead (possible only for a partition created
                    // while all its replicas were down); the new leader stays.
                    next.leader = b;
                    next.isr
                        .retain(|&r| self.brokers[&r].liveness != Liveness::Dead);
                    next.isr = isr_led_by(std::mem::take(&mut next.isr), b);
                    true
                }
                Election::Unclean(b) => {
                    next.leader = b;
                    next.isr = vec![b];
                    why.push_str(UNCLEAN_WARNING);
                    false
                }
                Election::Offline => continue,
            };
            next.leader_epoch += 1;
            next.partition_epoch += 1;
            let event = self.elected(&next, clean, NO_LEADER);
            effects.transitions.push(event);
            self.update(tp, next, &why, ChangedBy::Controller, effects);
        }
    }
}

const UNCLEAN_WARNING: &str = ", no live ISR member: UNCLEAN election of an out-of-sync replica, \
     records the old ISR committed beyond its log are lost";
