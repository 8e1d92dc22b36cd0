//! Where each partition's leader is: learned from the metadata — a dedicated
//! controller's, or else every broker's, asked at once (the highest leader epoch wins
//! per partition: a broker cut off from the quorum answers from an older copy) — and
//! forgotten when an answer says it moved.

use std::net::SocketAddr;
use std::time::Duration;

use super::Client;
use super::attempt::describe;
use crate::api::Metadata;

impl Client {
    /// Learn every partition's leader: from a dedicated controller, or, when there is
    /// none or it does not answer, from the brokers (the highest leader epoch wins
    /// per partition).
    pub(super) async fn refresh_metadata(&mut self) -> Result<Metadata, String> {
        let from_controller = match self.config.controller {
            Some(addr) => Some(get_metadata(&self.http, addr, self.timeout()).await),
            None => None,
        };
        let metadata = match from_controller {
            Some(Ok(m)) => m,
            Some(Err(e)) => self
                .nodes_metadata()
                .await
                .ok_or_else(|| format!("no metadata from the controller ({e}) or any node"))?,
            None => self
                .nodes_metadata()
                .await
                .ok_or_else(|| "no broker answered a metadata request".to_string())?,
        };
        self.learn(&metadata);
        Ok(metadata)
    }

    /// How many partitions `topic` has, by the metadata asked afresh (None: no
    /// metadata).
    pub async fn partition_count(&mut self, topic: &str) -> Option<u32> {
        let meta = self.refresh_metadata().await.ok()?;
        Some(meta.partition_count(topic))
    }

    fn timeout(&self) -> Duration {
        self.config.request_timeout.min(Duration::from_secs(1))
    }

    /// Every reachable node's view, asked at once and merged in node order; `None`
    /// if no node answered.
    async fn nodes_metadata(&mut self) -> Option<Metadata> {
        let mut asks = tokio::task::JoinSet::new();
        for (&id, &addr) in &self.config.nodes {
            let (http, timeout) = (self.http.clone(), self.timeout());
            asks.spawn(async move { (id, get_metadata(&http, addr, timeout).await) });
        }
        let mut answers = Vec::new();
        while let Some(joined) = asks.join_next().await {
            if let Ok((id, Ok(m))) = joined {
                answers.push((id, m));
            }
        }
        answers.sort_by_key(|(id, _)| *id);
        // The active controller as the brokers name it: the one that names itself.
        if let Some((id, _)) = answers.iter().find(|(id, m)| m.controller_id == Some(*id)) {
            self.controller_hint = Some(*id);
        }
        answers.into_iter().map(|(_, m)| m).reduce(merge)
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

async fn get_metadata(
    http: &reqwest::Client,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Metadata, String> {
    let url = format!("http://{addr}/v1/metadata");
    let resp = http
        .get(&url)
        .timeout(timeout)
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
