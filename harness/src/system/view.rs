//! The roles a system shows at one moment, as the seam hands them to the nemesis:
//! each partition of the workload's topics (who leads, in which order the controller
//! would elect the others, the ISR), the live nodes, the active controller — for our
//! broker, read from the controller's metadata. Plain data, so the planners stay
//! pure: the same view, coverage and seed give the same decision.

use serde_json::{Value, json};

use crate::proc::Proc;
use workloads::api::Metadata;

/// One partition as the controller describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionView {
    pub topic: String,
    pub partition: u32,
    /// None while the partition has no leader.
    pub leader: Option<i32>,
    pub leader_epoch: i64,
    pub isr: Vec<i32>,
    /// In the order the controller prefers them when it elects.
    pub replicas: Vec<i32>,
    /// A reassignment in progress: the replicas it adds (empty: none).
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

impl PartitionView {
    /// The followers in the order the controller would elect them if the leader
    /// died now: ISR members first, each group in replica order.
    pub fn followers(&self) -> Vec<i32> {
        let Some(leader) = self.leader else {
            return Vec::new();
        };
        let others = self.replicas.iter().copied().filter(|&r| r != leader);
        let (mut in_isr, out): (Vec<i32>, Vec<i32>) = others.partition(|r| self.isr.contains(r));
        in_isr.extend(out);
        in_isr
    }
}

/// The cluster at the moment of a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// Every node id.
    pub nodes: Vec<i32>,
    /// Nodes the controller counts alive.
    pub alive: Vec<i32>,
    /// The workload's topics, whose partitions patterns aim at.
    pub topics: Vec<String>,
    /// The partitions of the workload's topics, topic by topic (empty if the
    /// controller did not answer).
    pub partitions: Vec<PartitionView>,
    /// The active controller: the broker it runs in, or the dedicated controller
    /// (None: no controller answered).
    pub controller: Option<Proc>,
    /// The active controller's controller epoch (0: none answered).
    pub controller_epoch: i64,
}

impl ClusterView {
    /// Partition `partition` of `topic`, if the view shows it.
    pub fn partition(&self, topic: &str, partition: u32) -> Option<&PartitionView> {
        self.partitions
            .iter()
            .find(|p| p.topic == topic && p.partition == partition)
    }

    /// The view of `topics` in the controller's metadata (None: no answer).
    pub fn new(nodes: &[i32], metadata: Option<&Metadata>, topics: &[&str]) -> ClusterView {
        let Some(meta) = metadata else {
            return ClusterView {
                nodes: nodes.to_vec(),
                alive: Vec::new(),
                topics: topics.iter().map(|t| t.to_string()).collect(),
                partitions: Vec::new(),
                controller: None,
                controller_epoch: 0,
            };
        };
        let partitions = topics
            .iter()
            .flat_map(|&topic| meta.topics.iter().filter(move |t| t.name == topic))
            .flat_map(|t| t.partitions.iter().map(move |p| (t, p)))
            .map(|(t, p)| PartitionView {
                topic: t.name.clone(),
                partition: p.partition,
                leader: (p.leader >= 0).then_some(p.leader),
                leader_epoch: p.leader_epoch,
                isr: p.isr.clone(),
                replicas: p.replicas.clone(),
                adding: p.adding.clone(),
                removing: p.removing.clone(),
            })
            .collect();
        // A controller id that names no broker is a dedicated controller's.
        let controller = meta.controller_id.filter(|&c| c > 0).map(|c| {
            if nodes.contains(&c) {
                Proc::Node(c)
            } else {
                Proc::Controller
            }
        });
        ClusterView {
            nodes: nodes.to_vec(),
            controller,
            controller_epoch: meta.controller_epoch,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            alive: meta
                .brokers
                .iter()
                .filter(|b| b.alive)
                .map(|b| b.id)
                .collect(),
            partitions,
        }
    }

    /// Partitions of the workload's topics whose leader is alive and have a
    /// follower: what a pattern aimed at a leader can hit.
    pub fn led(&self) -> Vec<&PartitionView> {
        self.partitions
            .iter()
            .filter(|p| {
                p.leader.is_some_and(|l| self.alive.contains(&l)) && !p.followers().is_empty()
            })
            .collect()
    }

    /// How many of the partitions of every topic `node` leads: a fault on a busier
    /// leader moves more of the workload at once (in the mixed workload, a leader
    /// of the register's partitions too).
    pub fn leads(&self, node: i32) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.leader == Some(node))
            .count()
    }

    /// How many of the workload's topics `node` leads a partition of: a fault on a
    /// leader of every topic reaches every workload's checker.
    pub fn topics_led(&self, node: i32) -> usize {
        let mut topics: Vec<&str> = self
            .partitions
            .iter()
            .filter(|p| p.leader == Some(node))
            .map(|p| p.topic.as_str())
            .collect();
        topics.dedup();
        topics.len()
    }

    /// Will the partition keep its leader, as far as the controller's preferred
    /// leader rebalance goes? It is led by its preferred replica (the first), or
    /// that one is dead. A partition whose preferred replica is alive and leads
    /// elsewhere moves back to it at the controller's next check, in the middle of
    /// whatever a fault aimed at it.
    pub fn settled(&self, p: &PartitionView) -> bool {
        match p.replicas.first() {
            Some(&preferred) => p.leader == Some(preferred) || !self.alive.contains(&preferred),
            None => true,
        }
    }

    /// For the history: each partition's topic, leader, epoch and ISR.
    pub fn to_json(&self) -> Value {
        let parts: Vec<Value> = self
            .partitions
            .iter()
            .map(|p| {
                json!({"topic": p.topic, "partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch, "isr": p.isr})
            })
            .collect();
        json!({"alive": self.alive, "controller": self.controller.map(Proc::to_json), "partitions": parts})
    }
}

#[cfg(test)]
impl ClusterView {
    /// For tests: nodes 1–3, all alive, `controller` active; each of `partitions`
    /// (topic, number, replicas) led by its first replica, every replica in its ISR.
    pub fn sample(controller: Proc, partitions: &[(&str, u32, &[i32])]) -> ClusterView {
        let mut topics: Vec<String> = Vec::new();
        for (t, _, _) in partitions {
            if !topics.iter().any(|x| x == t) {
                topics.push(t.to_string());
            }
        }
        ClusterView {
            nodes: vec![1, 2, 3],
            alive: vec![1, 2, 3],
            topics,
            partitions: partitions
                .iter()
                .map(|&(topic, partition, replicas)| PartitionView {
                    topic: topic.into(),
                    partition,
                    leader: replicas.first().copied(),
                    leader_epoch: 1,
                    isr: replicas.to_vec(),
                    replicas: replicas.to_vec(),
                    adding: vec![],
                    removing: vec![],
                })
                .collect(),
            controller: Some(controller),
            controller_epoch: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn followers_come_in_the_controllers_election_order() {
        let p = PartitionView {
            topic: "queue".into(),
            partition: 0,
            leader: Some(2),
            leader_epoch: 3,
            isr: vec![2, 3],
            replicas: vec![1, 2, 3],
            adding: vec![],
            removing: vec![],
        };
        // 1 is out of the ISR: the controller would elect 3 first.
        assert_eq!(p.followers(), vec![3, 1]);
        let leaderless = PartitionView { leader: None, ..p };
        assert!(leaderless.followers().is_empty());
    }

    #[test]
    fn the_view_reads_the_topic_from_the_metadata() {
        let meta: Metadata = serde_json::from_value(json!({
            "controller_epoch": 1,
            "brokers": [{"id": 1, "alive": true}, {"id": 2, "alive": true}, {"id": 3, "alive": false}],
            "topics": [{"name": "queue", "partitions": [
                {"partition": 0, "leader": 1, "leader_epoch": 2, "isr": [1, 2], "replicas": [1, 2, 3]},
                {"partition": 1, "leader": -1, "leader_epoch": 4, "isr": [3], "replicas": [3, 1, 2]}
            ]}, {"name": "other", "partitions": []}]
        }))
        .unwrap();
        let v = ClusterView::new(&[1, 2, 3], Some(&meta), &["queue"]);
        assert_eq!(v.alive, vec![1, 2]);
        assert_eq!(v.partitions.len(), 2);
        assert_eq!(v.partitions[0].topic, "queue");
        assert_eq!(v.partitions[1].leader, None);
        assert_eq!(v.led().len(), 1);
        assert_eq!(v.to_json()["partitions"][0]["leader"], 1);
        let blind = ClusterView::new(&[1, 2, 3], None, &["queue"]);
        assert!(blind.led().is_empty());
    }

    #[test]
    fn the_view_covers_every_topic_of_the_workload() {
        let meta: Metadata = serde_json::from_value(json!({
            "controller_epoch": 1,
            "brokers": [{"id": 1, "alive": true}, {"id": 2, "alive": true}, {"id": 3, "alive": true}],
            "topics": [{"name": "register", "partitions": [
                {"partition": 0, "leader": 2, "leader_epoch": 1, "isr": [1, 2, 3], "replicas": [2, 3, 1]}
            ]}, {"name": "queue", "partitions": [
                {"partition": 0, "leader": 1, "leader_epoch": 2, "isr": [1, 2, 3], "replicas": [1, 2, 3]},
                {"partition": 1, "leader": 2, "leader_epoch": 4, "isr": [2, 3, 1], "replicas": [2, 3, 1]}
            ]}, {"name": "other", "partitions": [
                {"partition": 0, "leader": 3, "leader_epoch": 1, "isr": [3], "replicas": [3]}
            ]}]
        }))
        .unwrap();
        let v = ClusterView::new(&[1, 2, 3], Some(&meta), &["queue", "register"]);
        let names: Vec<(&str, u32)> = v
            .partitions
            .iter()
            .map(|p| (p.topic.as_str(), p.partition))
            .collect();
        assert_eq!(names, vec![("queue", 0), ("queue", 1), ("register", 0)]);
        // Led partitions of every topic of the workload; `other` is none of them.
        assert_eq!(v.led().len(), 3);
        assert_eq!((v.leads(1), v.leads(2), v.leads(3)), (1, 2, 0));
        assert_eq!(
            (v.topics_led(1), v.topics_led(2), v.topics_led(3)),
            (1, 2, 0)
        );
        assert_eq!(v.to_json()["partitions"][2]["topic"], "register");
    }
}
