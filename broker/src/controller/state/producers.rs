//! InitProducerId: the controller hands each idempotent producer an id of its own
//! (Kafka allocates them through the controller too, KIP-98 / KIP-730).
//!
//! An id is unique across controller restarts without a durable counter: its high
//! 32 bits are the controller epoch, which every controller incarnation bumps and
//! persists before answering anyone, and its low 32 bits count the ids this
//! incarnation gave out. A producer starts at epoch 0; a new id rather than a new
//! epoch is how a producer starts over, so no epoch needs to be remembered here.

use serde::Serialize;

use super::{ControllerState, Effects};
use crate::error::{ApiError, Code};

/// `POST /v1/producers`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProducerId {
    pub producer_id: u64,
    pub producer_epoch: u32,
}

impl ControllerState {
    /// Allocate a producer id (changes nothing durable).
    pub fn init_producer_id(&mut self) -> Result<(ProducerId, Effects), ApiError> {
        let count = self.producers_allocated;
        if count == u32::MAX {
            return Err(ApiError::new(
                Code::RequestTimedOut,
                "this controller incarnation gave out every producer id it has; restart it",
            ));
        }
        self.producers_allocated += 1;
        let epoch = u64::from(self.controller_epoch.max(0) as u32);
        let id = ProducerId {
            producer_id: (epoch << 32) | u64::from(count),
            producer_epoch: 0,
        };
        Ok((id, Effects::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, ControllerState, Durable};

    fn start(durable: Durable) -> ControllerState {
        let config = Config {
            session_timeout_ms: 1000,
            unclean_election: false,
        };
        ControllerState::start(config, &[1, 2, 3], durable, 0)
            .unwrap()
            .0
    }

    #[test]
    fn ids_are_unique_within_and_across_controller_incarnations() {
        let mut first = start(Durable::default());
        let a = first.init_producer_id().unwrap().0;
        let b = first.init_producer_id().unwrap().0;
        assert_ne!(a.producer_id, b.producer_id);
        assert_eq!((a.producer_epoch, b.producer_epoch), (0, 0));
        // The next incarnation starts from what the first persisted (its epoch).
        let mut second = start(first.durable());
        let c = second.init_producer_id().unwrap().0;
        assert!(![a.producer_id, b.producer_id].contains(&c.producer_id));
    }
}
