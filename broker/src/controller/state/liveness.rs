//! Broker liveness: registration and restarts (broker epochs), the session timeout,
//! and what a broker's death or return does to the partitions it replicates.

use super::{ChangedBy, ControllerState, Effects, Liveness, Millis};
use crate::controller::election::{Election, elect};
use crate::error::ApiError;
use crate::events::Event;
use crate::protocol::{
    BrokerId, Heartbeat, HeartbeatResponse, NO_LEADER, PartitionState, TopicPartition,
};

impl ControllerState {
    /// `POST /internal/heartbeat`: register, detect restarts, keep the broker alive.
    pub fn heartbeat(
        &mut self,
        hb: &Heartbeat,
        now: Millis,
    ) -> Result<(HeartbeatResponse, Effects), ApiError> {
        let id = hb.broker_id;
        let Some(broker) = self.brokers.get(&id) else {
            return Err(ApiError::invalid(format!(
                "broker {id} is not one of the controller's brokers {:?}",
                self.brokers.keys().collect::<Vec<_>>()
            )));
        };
        let was = broker.liveness;
        let known_epoch = broker.broker_epoch;
        let mut effects = Effects::default();
        let mut started = was != Liveness::Alive;
        // Whether the broker (re)joins now: a first registration, a restart, or back
        // from the dead (not a broker merely heard again after a controller restart).
        let mut came_back = was == Liveness::Dead;
        match known_epoch {
            None => {
                effects.events.push(format!(
                    "broker {id}: registered (broker epoch {})",
                    hb.broker_epoch
                ));
                effects.dirty = true;
                came_back = true;
            }
            Some(old) if old != hb.broker_epoch => {
                effects.events.push(format!(
                    "broker {id}: restarted (broker epoch {old} -> {}), leaving every ISR",
                    hb.broker_epoch
                ));
                self.set_liveness(id, Liveness::Dead);
                self.broker_failed(id, "restarted", now, &mut effects);
                effects.dirty = true;
                started = true;
                came_back = true;
            }
            Some(_) if was == Liveness::Dead => {
                effects.events.push(format!("broker {id}: alive again"));
            }
            Some(_) => {}
        }
        let b = self.brokers.get_mut(&id).expect("checked above");
        b.broker_epoch = Some(hb.broker_epoch);
        b.last_heartbeat = Some(now);
        b.liveness = Liveness::Alive;
        if came_back {
            b.alive_since = Some(now);
        }
        if started {
            self.elect_offline(&format!("broker {id} came back"), now, &mut effects);
        }
        let response = HeartbeatResponse {
            controller_epoch: self.controller_epoch,
            brokers: self.brokers_info(),
            partitions: self
                .partitions
                .values()
                .filter(|p| p.replicas.contains(&id))
                .cloned()
                .collect(),
        };
        Ok((response, effects))
    }

    /// The controller itself did not run from `from` to `now` (it was paused or starved
    /// of CPU): that time does not count against any broker's silence, since their
    /// heartbeats were waiting in the controller's own sockets. Without this, a paused
    /// controller would declare every broker dead the moment it resumes and churn
    /// every partition through needless elections.
    pub fn stalled(&mut self, from: Millis, now: Millis) -> Effects {
        let gap = now.saturating_sub(from);
        for b in self.brokers.values_mut() {
            if let Some(last) = b.last_heartbeat.as_mut() {
                *last = last.saturating_add(gap).min(now);
            }
        }
        self.grace_until = self.grace_until.max(from).saturating_add(gap);
        Effects {
            events: vec![format!(
                "controller: did not run for {gap} ms (paused?); brokers' silence meanwhile does not count"
            )],
            ..Effects::default()
        }
    }

    /// The clock moved: declare dead every broker silent past the session timeout, and
    /// every broker not heard from since start once the grace period is over.
    pub fn tick(&mut self, now: Millis) -> Effects {
        let mut effects = Effects::default();
        let timeout = self.config.session_timeout_ms;
        let mut dead = Vec::new();
        for (&id, b) in &self.brokers {
            let why = match (b.liveness, b.last_heartbeat) {
                (Liveness::Alive, Some(last)) if now.saturating_sub(last) > timeout => format!(
                    "no heartbeat for {} ms, session timeout {timeout} ms",
                    now - last
                ),
                (Liveness::Pending, _) if now >= self.grace_until => {
                    format!("no heartbeat within {timeout} ms of the controller's start")
                }
                _ => continue,
            };
            effects.events.push(format!("broker {id}: dead ({why})"));
            dead.push(id);
        }
        // All of them are dead before any election, so none is elected only to be
        // replaced a moment later (as Kafka handles a batch of dead brokers).
        for &id in &dead {
            self.set_liveness(id, Liveness::Dead);
        }
        for &id in &dead {
            self.broker_failed(id, "died", now, &mut effects);
        }
        if !dead.is_empty() && self.config.unclean_election {
            // A broker that was still pending is dead now: an unclean election that
            // waited for it may go ahead.
            self.elect_offline("no ISR member can come back any more", now, &mut effects);
        }
        effects
    }

    /// Broker `id` died or restarted: it leaves every ISR (never emptying one), and the
    /// partitions it led elect a new leader.
    fn broker_failed(&mut self, id: BrokerId, why: &str, now: Millis, effects: &mut Effects) {
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
                next.leader_epoch += 1;
                next.partition_epoch += 1;
                let unclean = self.unclean_allowed(&isr);
                match elect(&p.replicas, &isr, |b| self.is_alive(b), unclean) {
                    Election::Clean(b) => {
                        next.leader = b;
                        next.isr = isr;
                        effects.transitions.push(self.elected(&next, true, id, now));
                    }
                    Election::Unclean(b) => {
                        next.leader = b;
                        next.isr = vec![b];
                        why.push_str(UNCLEAN_WARNING);
                        effects
                            .transitions
                            .push(self.elected(&next, false, id, now));
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
    /// `previous` (-1: the partition was offline).
    fn elected(
        &self,
        next: &PartitionState,
        clean: bool,
        previous: BrokerId,
        now: Millis,
    ) -> Event {
        let recently_restarted = self
            .brokers
            .get(&next.leader)
            .and_then(|b| b.alive_since)
            .is_some_and(|since| now.saturating_sub(since) < self.config.session_timeout_ms);
        Event::LeaderElected {
            topic: next.topic.clone(),
            partition: next.partition,
            leader: next.leader,
            leader_epoch: next.leader_epoch,
            clean,
            recently_restarted,
            previous_leader: (previous != NO_LEADER).then_some(previous),
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
    fn elect_offline(&mut self, why: &str, now: Millis, effects: &mut Effects) {
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
            let clean = match elect(&p.replicas, &p.isr, |b| self.is_alive(b), unclean) {
                Election::Clean(b) => {
                    // Drop members known dead (possible only for a partition created
                    // while all its replicas were down); the new leader stays.
                    next.leader = b;
                    next.isr
                        .retain(|&r| self.brokers[&r].liveness != Liveness::Dead);
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
            let event = self.elected(&next, clean, NO_LEADER, now);
            effects.transitions.push(event);
            self.update(tp, next, &why, ChangedBy::Controller, effects);
        }
    }
}

const UNCLEAN_WARNING: &str = ", no live ISR member: UNCLEAN election of an out-of-sync replica, \
     records the old ISR committed beyond its log are lost";
