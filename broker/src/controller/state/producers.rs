//! InitProducerId: the controller hands each idempotent producer an id of its own
//! (Kafka allocates them through the controller too, KIP-98 / KIP-730).
//!
//! An id is unique across controller failovers and restarts because it is allocated
//! by a command of the controller's Raft log: every voter applies the InitProducerId
//! commands in log order to the replicated counter (`producer_ids_allocated`, in the
//! snapshots too), so a new active controller, or the whole quorum restarted,
//! carries on from the last id committed. An id answered to a producer is committed,
//! hence never given again. A producer starts at epoch 0; a new id rather than a new
//! epoch is how a producer starts over, so no epoch needs to be remembered here.

use serde::{Deserialize, Serialize};

use super::{ControllerState, Effects};
use crate::error::{ApiError, Code};

/// `POST /v1/producers`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerId {
    pub producer_id: u64,
    pub producer_epoch: u32,
}

impl ControllerState {
    /// Apply an InitProducerId command: the next id of the replicated counter.
    pub fn init_producer_id(&mut self) -> Result<(ProducerId, Effects), ApiError> {
        let id = self.producer_ids_allocated;
        if id >= i64::MAX as u64 {
            return Err(ApiError::new(
                Code::RequestTimedOut,
                "the cluster gave out every producer id it has",
            ));
        }
        self.producer_ids_allocated = id + 1;
        let answer = ProducerId {
            producer_id: id,
            producer_epoch: 0,
        };
        let effects = Effects {
            dirty: true,
            ..Effects::default()
        };
        Ok((answer, effects))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Command, Config, ControllerState};

    fn fresh() -> ControllerState {
        let config = Config {
            session_timeout_ms: 1000,
            unclean_election: false,
            leader_imbalance_check_interval_ms: 0,
            bugs: crate::bugs::Bugs::default(),
        };
        ControllerState::new(config, &[1, 2, 3])
    }

    #[test]
    fn ids_are_unique_within_and_across_snapshots_and_restarts() {
        let mut first = fresh();
        let a = first.init_producer_id().unwrap().0;
        let b = first.init_producer_id().unwrap().0;
        assert_ne!(a.producer_id, b.producer_id);
        assert_eq!((a.producer_epoch, b.producer_epoch), (0, 0));
        // Another voter (or the same after a restart) restored from a snapshot goes on
        // from the replicated counter, whatever the term.
        let config = Config {
            session_timeout_ms: 1000,
            unclean_election: false,
            leader_imbalance_check_interval_ms: 0,
            bugs: crate::bugs::Bugs::default(),
        };
        let mut second = ControllerState::restore(config, &[1, 2, 3], first.durable()).unwrap();
        second.observe_epoch(1);
        let c = second.init_producer_id().unwrap().0;
        assert!(![a.producer_id, b.producer_id].contains(&c.producer_id));
    }

    #[test]
    fn voters_applying_the_same_log_hand_out_the_same_ids() {
        let (mut x, mut y) = (fresh(), fresh());
        for _ in 0..3 {
            let (ax, _) = x.apply(&Command::InitProducerId);
            let (ay, _) = y.apply(&Command::InitProducerId);
            assert_eq!(ax.unwrap(), ay.unwrap());
        }
        assert_eq!(x.durable(), y.durable());
    }
}
