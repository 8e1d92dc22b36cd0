//! Pushing LeaderAndIsr to brokers: one short-timeout request per affected broker,
//! all concurrent, fire and forget. A push that fails is not retried: the broker's
//! next heartbeat answer carries the controller's full view of its partitions, which
//! repairs anything it missed without a retry storm against a dead or cut-off broker.
//!
//! A broker is reached at the address this process was given for it (`--peers`,
//! `--brokers`: the harness's proxies), else, for a broker that joined by
//! heartbeat, at the address it registered with.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::auth::ClusterAuth;
use crate::protocol::{BrokerId, BrokerInfo, LeaderAndIsr, PartitionState};

/// How long one push may take.
const PUSH_TIMEOUT: Duration = Duration::from_secs(1);

/// Sends LeaderAndIsr requests to the brokers' addresses from `--brokers` (or
/// `--peers`), and to joined brokers' registered ones.
#[derive(Debug, Clone)]
pub struct Pusher {
    client: reqwest::Client,
    urls: BTreeMap<BrokerId, String>,
}

impl Pusher {
    pub fn new(
        brokers: &[(BrokerId, String)],
        auth: Option<&ClusterAuth>,
    ) -> Result<Pusher, reqwest::Error> {
        let client = reqwest::Client::builder()
            .default_headers(auth.map(ClusterAuth::headers).unwrap_or_default())
            .timeout(PUSH_TIMEOUT)
            .connect_timeout(PUSH_TIMEOUT)
            .build()?;
        let urls = brokers
            .iter()
            .map(|(id, addr)| (*id, push_url(addr)))
            .collect();
        Ok(Pusher { client, urls })
    }

    /// Send each broker its changed partitions, concurrently, without waiting, each
    /// naming the broker epoch the controller knows for its target (`broker_epochs`).
    /// Must be called inside a tokio runtime.
    pub fn push(
        &self,
        controller_epoch: i32,
        brokers: &[BrokerInfo],
        broker_epochs: &BTreeMap<BrokerId, u64>,
        pushes: BTreeMap<BrokerId, Vec<PartitionState>>,
    ) {
        for (id, partitions) in pushes {
            let registered = || {
                let b = brokers.iter().find(|b| b.id == id)?;
                b.address.as_deref().map(push_url)
            };
            let Some(url) = self.urls.get(&id).cloned().or_else(registered) else {
                continue;
            };
            let body = LeaderAndIsr {
                controller_epoch,
                broker_epoch: broker_epochs.get(&id).copied(),
                brokers: brokers.to_vec(),
                partitions,
            };
            let client = self.client.clone();
            tokio::spawn(async move {
                let outcome = match client.post(&url).json(&body).send().await {
                    Ok(resp) if resp.status().is_success() => return,
                    Ok(resp) => {
                        let status = resp.status();
                        let text = resp.text().await.unwrap_or_default();
                        format!("{status} {}", text.trim())
                    }
                    Err(e) => error_chain(&e),
                };
                eprintln!(
                    "push to broker {id} failed ({outcome}); its next heartbeat answer repairs it"
                );
            });
        }
    }
}

/// Where a broker at `addr` takes LeaderAndIsr.
fn push_url(addr: &str) -> String {
    format!("{}/internal/leader-and-isr", base_url(addr))
}

/// `127.0.0.1:9001` or `http://127.0.0.1:9001/` → `http://127.0.0.1:9001`.
pub fn base_url(addr: &str) -> String {
    let addr = addr.trim_end_matches('/');
    if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
