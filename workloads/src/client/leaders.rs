//! Where each partition's leader is: learned from the controller's metadata, or, when
//! the controller does not answer, from the nodes' (the highest leader epoch wins per
//! partition), and forgotten when an answer says it moved.

use std::net::SocketAddr;
use std::time::Duration;

use rand::Rng;

use super::Client;
use super::attempt::describe;
use crate::api::Metadata;

impl Client {
    /// Learn every partition's leader: from the controller, or, when it does not
    /// answer, from the nodes (the highest leader epoch wins per partition).
    pub(super) async fn refresh_metadata(&mut self) -> Result<Metadata, String> {
        let metadata = match self.get_metadata(self.config.controller).await {
            Ok(m) => m,
            Err(e) => self
                .nodes_metadata()
                .await
                .ok_or_else(|| format!("no metadata from the controller ({e}) or any node"))?,
        };
        self.learn(&metadata);
        Ok(metadata)
    }

    /// Every reachable node's view, merged; `None` if no node answered.
    async fn nodes_metadata(&mut self) -> Option<Metadata> {
        let mut ids: Vec<i32> = self.config.nodes.keys().copied().collect();
        if !ids.is_empty() {
            let start = self.rng.random_range(0..ids.len());
            ids.rotate_left(start);
        }
        let mut merged: Option<Metadata> = None;
        for id in ids {
            if let Ok(m) = self.get_metadata(self.config.nodes[&id]).await {
                merged = Some(match merged {
                    None => m,
                    Some(prev) => merge(prev, m),
                });
            }
        }
        merged
    }

    async fn get_metadata(&self, addr: SocketAddr) -> Result<Metadata, String> {
        let url = format!("http://{addr}/v1/metadata");
        let resp = self
            .http
            .get(&url)
            .timeout(self.config.request_timeout.min(Duration::from_secs(1)))
            .send()
            .await
            .map_err(|e| format!("GET {url}: {}", describe(&e)))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url} answered {}", resp.status()));
        }
        resp.json()
            .await
            .map_err(|e| format!("GET {url}: {}", describe(&e)))
    }

    fn learn(&mut self, m: &Metadata) {
        for t in &m.topics {
            for p in &t.partitions {
                let key = (t.name.clone(), p.partition);
                if p.leader > 0 {
                    self.leaders.insert(key, p.leader);
                } else {
                    self.leaders.remove(&key);
                }
            }
        }
    }
}

/// Keep, per partition, the entry with the highest leader epoch.
fn merge(mut a: Metadata, b: Metadata) -> Metadata {
    for tb in b.topics {
        match a.topics.iter_mut().find(|t| t.name == tb.name) {
            None => a.topics.push(tb),
            Some(ta) => {
                for pb in tb.partitions {
                    match ta
                        .partitions
                        .iter_mut()
                        .find(|p| p.partition == pb.partition)
                    {
                        None => ta.partitions.push(pb),
                        Some(pa) if pb.leader_epoch > pa.leader_epoch => *pa = pb,
                        Some(_) => {}
                    }
                }
            }
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(json: &str) -> Metadata {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn merge_keeps_the_newest_leader_epoch() {
        let a = meta(
            r#"{"topics":[{"name":"q","partitions":[{"partition":0,"leader":1,"leader_epoch":2}]}]}"#,
        );
        let b = meta(
            r#"{"topics":[{"name":"q","partitions":[{"partition":0,"leader":3,"leader_epoch":5},
                {"partition":1,"leader":2,"leader_epoch":1}]}]}"#,
        );
        let m = merge(a, b);
        assert_eq!(m.partition("q", 0).unwrap().leader, 3);
        assert_eq!(m.partition("q", 1).unwrap().leader, 2);
    }
}
