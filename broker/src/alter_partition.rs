//! A leader's ISR proposal in flight (AlterPartition), from send to a definite answer.
//!
//! While a proposal is in flight the leader keeps the maximal ISR (KIP-497/KIP-841):
//! the HW also waits for the members the proposal adds, since the controller may have
//! accepted them already. Forgetting them early is how acknowledged records get lost:
//! the controller persists `{L,G,F}`, the answer is lost, the leader's HW passes F's
//! LEO, and the controller later elects F. So the proposal is kept until the answer is
//! definite:
//! - accepted: the answered state is applied (it replaces the proposal);
//! - no answer (timeout, connection refused, no controller): the same request is sent
//!   again; if the controller applied it meanwhile, the retry is fenced (below);
//! - `FENCED_LEADER_EPOCH`: our epochs are stale — perhaps because this very proposal
//!   was applied. Only the controller's newer state (LeaderAndIsr push or heartbeat
//!   answer, both within a heartbeat interval) tells, and applying it replaces the
//!   proposal;
//! - any other refusal (a member not alive or restarted, KIP-903): definitely not
//!   applied, so the proposal is dropped and proposed again after a back-off.
//!
//! A proposal is only dropped by the exchange that sent it (same leader epoch,
//! partition epoch and ISR): a late answer to an older leadership's proposal leaves
//! the current one alone.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::error::{ApiError, Code};
use crate::node::{ISR_RETRY_BACKOFF, Node};
use crate::partition::Partition;
use crate::protocol::{AlterPartition, PartitionState};
use crate::replica::PendingIsr;
use crate::replica_manager;
use crate::rpc::CallError;

/// What an AlterPartition outcome tells the leader.
#[derive(Debug)]
pub enum Verdict {
    /// The controller accepted: its new state.
    Accepted(PartitionState),
    /// Fenced: our epochs are stale, perhaps by this very proposal. Keep it until a
    /// newer state arrives.
    Stale(ApiError),
    /// Definitely not applied.
    Rejected(ApiError),
    /// No answer we can act on: it may or may not have been applied. Send it again.
    NoAnswer(CallError),
}

/// Classify an AlterPartition outcome.
pub fn judge(answer: Result<PartitionState, CallError>) -> Verdict {
    match answer {
        Ok(state) => Verdict::Accepted(state),
        Err(CallError::Api(e)) => match e.code {
            Code::FencedLeaderEpoch => Verdict::Stale(e),
            // No controller reachable, or it could not persist: nothing definite.
            Code::NotController | Code::RequestTimedOut => Verdict::NoAnswer(CallError::Api(e)),
            _ => Verdict::Rejected(e),
        },
        Err(e @ CallError::Transport(_)) => Verdict::NoAnswer(e),
    }
}

/// Send `req` (whose ISR the replica holds as `sent`) until a definite answer, and act
/// on it (see the module doc).
pub async fn send(node: Arc<Node>, part: Arc<Partition>, req: AlterPartition, sent: PendingIsr) {
    let name = format!("node {}: {}-{}", node.id, req.topic, req.partition);
    let old_isr = part.lock().isr().to_vec();
    let mut unanswered = 0u32;
    loop {
        let answer = node
            .controller_post("/internal/alter-partition", &req)
            .await;
        match judge(answer) {
            Verdict::Accepted(state) => {
                eprintln!(
                    "{name}: ISR {old_isr:?} -> {:?} accepted (partition epoch {})",
                    state.isr, state.partition_epoch
                );
                replica_manager::apply_partition_state(&node, state);
                // Applied now, or a newer state was already: either way answered.
                replica_manager::update(&node, &part, |r| r.clear_pending_isr(&sent));
                break;
            }
            Verdict::Stale(e) => {
                eprintln!(
                    "{name}: ISR {old_isr:?} -> {:?} fenced ({e}); keeping it until the \
                     controller's newer state arrives",
                    req.new_isr
                );
                break;
            }
            Verdict::Rejected(e) => {
                let retry_at = node.now_ms() + ISR_RETRY_BACKOFF.as_millis() as u64;
                part.isr_retry_at_ms.store(retry_at, Ordering::Relaxed);
                eprintln!("{name}: ISR {old_isr:?} -> {:?} refused: {e}", req.new_isr);
                replica_manager::update(&node, &part, |r| r.clear_pending_isr(&sent));
                break;
            }
            Verdict::NoAnswer(e) => {
                if unanswered % 10 == 0 {
                    eprintln!(
                        "{name}: ISR {old_isr:?} -> {:?}: no answer ({e}); sending it again",
                        req.new_isr
                    );
                }
                unanswered += 1;
                tokio::time::sleep(ISR_RETRY_BACKOFF).await;
                if !part.lock().is_pending(&sent) {
                    // A newer state replaced the proposal: nothing left to ask.
                    break;
                }
            }
        }
    }
    part.purgatory.wake();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: Code) -> Result<PartitionState, CallError> {
        Err(CallError::Api(ApiError::new(code, "test")))
    }

    #[test]
    fn only_a_refusal_drops_the_proposal() {
        assert!(matches!(
            judge(api(Code::InvalidRequest)),
            Verdict::Rejected(_)
        ));
        assert!(matches!(
            judge(api(Code::UnknownTopicOrPartition)),
            Verdict::Rejected(_)
        ));
    }

    #[test]
    fn a_fenced_answer_keeps_the_proposal_for_the_newer_state() {
        // The retry of a proposal the controller applied is fenced by the partition
        // epoch it bumped: not a rejection.
        assert!(matches!(
            judge(api(Code::FencedLeaderEpoch)),
            Verdict::Stale(_)
        ));
    }

    #[test]
    fn no_answer_means_send_the_same_request_again() {
        let lost = Err(CallError::Transport("no answer within 2s".into()));
        assert!(matches!(judge(lost), Verdict::NoAnswer(_)));
        assert!(matches!(
            judge(api(Code::NotController)),
            Verdict::NoAnswer(_)
        ));
        assert!(matches!(
            judge(api(Code::RequestTimedOut)),
            Verdict::NoAnswer(_)
        ));
    }
}
