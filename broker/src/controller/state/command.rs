//! The commands of the controller's Raft log, and how each applies to the state.
//! Applying is deterministic (no clock, no randomness): every voter applies the same
//! commands in the same order and ends in the same state. Validation happens here, at
//! apply time, against the state as of the command's place in the log: a stale
//! AlterPartition is fenced even if it looked current when it was proposed.

use serde::{Deserialize, Serialize};

use super::preferred::PreferredElection;
use super::{ControllerState, Effects, ProducerId};
use crate::error::ApiError;
use crate::protocol::{
    AlterPartition, AlterReassignment, BrokerId, BrokerInfo, CreatePartitions, CreateTopic,
    Heartbeat, HeartbeatResponse, PartitionState, TopicMetadata, TopicPartition,
};

/// One entry of the controller's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// A heartbeat that changes the state: a broker registers, restarted (new broker
    /// epoch), or is back after being declared dead.
    Heartbeat(Heartbeat),
    /// The active controller found these brokers silent past the session timeout.
    Expire { brokers: Vec<Expiry> },
    /// `POST /v1/topics`.
    CreateTopic(CreateTopic),
    /// A leader's ISR proposal.
    AlterPartition(AlterPartition),
    /// `POST /v1/producers`: allocate the next producer id.
    InitProducerId,
    /// The active controller's periodic check found partitions to hand back to
    /// their preferred replica.
    ElectPreferred { partitions: Vec<PreferredElection> },
    /// `POST /v1/topics/{topic}/partitions`: grow a topic (CreatePartitions).
    CreatePartitions(CreatePartitions),
    /// `POST` (a target) or `DELETE` (cancel) `/v1/topics/{t}/partitions/{p}/reassign`.
    AlterReassignment(AlterReassignment),
    /// Take these partitions' reassignments on from the step the state holds:
    /// proposed by a new active controller as it takes over (`takeover`: every one
    /// in progress), and by its periodic check (the ones that may complete now).
    ResumeReassignments {
        partitions: Vec<TopicPartition>,
        takeover: bool,
    },
    /// `POST /v1/brokers/{id}/decommission`.
    Decommission { broker_id: BrokerId },
}

/// A broker the active controller declares dead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expiry {
    pub broker_id: BrokerId,
    /// The broker epoch that fell silent: if the broker registered a new process
    /// meanwhile, the expiry no longer applies.
    pub broker_epoch: Option<u64>,
    /// Why, for the log.
    pub why: String,
}

/// A command's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    Heartbeat(HeartbeatResponse),
    Expired,
    Topic(TopicMetadata),
    Partition(PartitionState),
    Producer(ProducerId),
    Elected,
    Resumed,
    Broker(BrokerInfo),
}

impl ControllerState {
    /// Apply one committed command: its answer (a refusal too may have effects: a
    /// fenced AlterPartition is an event).
    pub fn apply(&mut self, command: &Command) -> (Result<Applied, ApiError>, Effects) {
        match command {
            Command::Heartbeat(hb) => match self.apply_heartbeat(hb) {
                Ok((resp, fx)) => (Ok(Applied::Heartbeat(resp)), fx),
                Err(e) => (Err(e), Effects::default()),
            },
            Command::Expire { brokers } => (Ok(Applied::Expired), self.apply_expire(brokers)),
            Command::CreateTopic(req) => match self.create_topic(req) {
                Ok((meta, fx)) => (Ok(Applied::Topic(meta)), fx),
                Err(e) => (Err(e), Effects::default()),
            },
            Command::AlterPartition(req) => {
                let (answer, fx) = self.alter_partition(req);
                (answer.map(Applied::Partition), fx)
            }
            Command::InitProducerId => match self.init_producer_id() {
                Ok((id, fx)) => (Ok(Applied::Producer(id)), fx),
                Err(e) => (Err(e), Effects::default()),
            },
            Command::ElectPreferred { partitions } => {
                (Ok(Applied::Elected), self.apply_preferred(partitions))
            }
            Command::CreatePartitions(req) => match self.create_partitions(req) {
                Ok((meta, fx)) => (Ok(Applied::Topic(meta)), fx),
                Err(e) => (Err(e), Effects::default()),
            },
            Command::AlterReassignment(req) => match self.alter_reassignment(req) {
                Ok((state, fx)) => (Ok(Applied::Partition(state)), fx),
                Err(e) => (Err(e), Effects::default()),
            },
            Command::ResumeReassignments {
                partitions,
                takeover,
            } => (
                Ok(Applied::Resumed),
                self.apply_resume(partitions, *takeover),
            ),
            Command::Decommission { broker_id } => match self.decommission(*broker_id) {
                Ok((info, fx)) => (Ok(Applied::Broker(info)), fx),
                Err(e) => (Err(e), Effects::default()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_back_as_written() {
        let cmds = [
            Command::Heartbeat(Heartbeat {
                broker_id: 2,
                broker_epoch: 7,
                address: None,
            }),
            Command::Heartbeat(Heartbeat {
                broker_id: 4,
                broker_epoch: 8,
                address: Some("127.0.0.1:9004".into()),
            }),
            Command::CreatePartitions(CreatePartitions {
                topic: "queue".into(),
                count: 3,
            }),
            Command::AlterReassignment(AlterReassignment {
                topic: "queue".into(),
                partition: 0,
                replicas: Some(vec![2, 3]),
            }),
            Command::AlterReassignment(AlterReassignment {
                topic: "queue".into(),
                partition: 0,
                replicas: None,
            }),
            Command::ResumeReassignments {
                partitions: vec![TopicPartition {
                    topic: "queue".into(),
                    partition: 0,
                }],
                takeover: true,
            },
            Command::Decommission { broker_id: 3 },
            Command::Expire {
                brokers: vec![Expiry {
                    broker_id: 3,
                    broker_epoch: None,
                    why: "silent".into(),
                }],
            },
            Command::InitProducerId,
            Command::ElectPreferred {
                partitions: vec![PreferredElection {
                    topic: "queue".into(),
                    partition: 1,
                    leader_epoch: 4,
                }],
            },
        ];
        for c in cmds {
            let text = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Command>(&text).unwrap(), c, "{text}");
        }
    }
}
