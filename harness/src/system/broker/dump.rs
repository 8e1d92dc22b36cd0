//! The replicas' logs at the end of a run, read from every node (`GET /debug/log`
//! for each partition it holds) for the final-log divergence check.

use std::time::Duration;

use super::Cluster;
use crate::error::{HarnessError, Result};
use crate::proc::Proc;

/// Reading a whole replica log may take longer than the harness's other calls.
const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

impl Cluster {
    /// Read every node's log (GET /debug/log for each partition it holds, one line per
    /// partition) and hand it to `save`, node by node, in node order.
    pub(super) async fn dump_logs(
        &self,
        save: &mut dyn FnMut(i32, &str) -> Result<()>,
    ) -> Result<()> {
        for id in self.node_ids() {
            let addr = self.real_addr(Proc::Node(id)).ok_or_else(|| {
                HarnessError::new(format!("cannot dump node {id}'s log: it is not running"))
            })?;
            let mut held: Vec<(String, u32)> = self
                .admin
                .debug_partitions(addr)
                .await?
                .partitions
                .into_iter()
                .map(|r| (r.topic, r.partition))
                .collect();
            held.sort();
            let mut out = String::new();
            for (topic, partition) in held {
                let body = self
                    .admin
                    .debug_log(addr, &topic, partition, DUMP_TIMEOUT)
                    .await?;
                // One line per partition, whatever the broker's formatting.
                let line = if body.contains('\n') {
                    let value: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
                        HarnessError::new(format!("node {id}'s log of {topic}-{partition}: {e}"))
                    })?;
                    value.to_string()
                } else {
                    body.trim().to_string()
                };
                out.push_str(&line);
                out.push('\n');
            }
            save(id, &out)?;
        }
        Ok(())
    }
}
