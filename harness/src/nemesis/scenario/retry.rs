//! The script of `--scenario duplicate-on-retry`: with `acks=all`, the leader of
//! partition 0 appends and replicates the producers' sends, but its answers never
//! reach them (a one-way cut of leader → clients). Each producer times out, and with
//! `--retries` sends again once the answers flow: the value is appended a second
//! time, at a new offset — the `duplicate` a producer without idempotence is allowed
//! to cause. With `--retries 0` those sends end `info` and every value is in the log
//! once; with `--idempotent` the leader recognises the retried batch and answers
//! with the first attempt's offset.

use std::time::Duration;

use serde_json::json;

use super::Script;
use crate::error::Result;
use crate::nemesis::fault::NemesisEvent;
use crate::proc::Proc;

/// How long the leader's answers are held: three of the clients' request timeouts
/// (3 s), so that a send started in the cut's first six seconds — also by a worker
/// first held up on a poll of the same leader — times out, whatever the leader did.
const ANSWERS_HELD: Duration = Duration::from_secs(9);
/// How long the script lets the producers' retries land after the heal (their
/// backoff is at most 1 s per retry).
const RETRIES_LAND: Duration = Duration::from_secs(4);
/// The topology named in the cut's and the heal's nemesis events.
const TOPOLOGY: &str = "leader-answers-to-clients";

impl Script<'_> {
    pub(super) async fn duplicate_on_retry(&mut self) -> Result<()> {
        let (leader, _, _) = self.warm_up().await?;
        let value = json!({"topology": TOPOLOGY, "cut": [[leader, "clients"]]});
        self.cluster.cut_client_answers(Proc::Node(leader));
        (self.on_event)(NemesisEvent::new("partition", value.clone()));
        tokio::time::sleep(ANSWERS_HELD).await;
        self.cluster.heal_client_answers(Proc::Node(leader));
        (self.on_event)(NemesisEvent::new("heal", value));
        tokio::time::sleep(RETRIES_LAND).await;
        Ok(())
    }
}
