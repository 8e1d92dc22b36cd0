//! The leader's ISR changes: every [`ISR_CHECK_INTERVAL`] each leader looks for a
//! change to propose (lagging followers out, caught-up ones in) and sends it to the
//! controller (AlterPartition); nothing changes locally until the controller accepts.
//!
//! A proposal in flight is followed from send to a definite answer. While it is in
//! flight the leader keeps the maximal ISR (KIP-497/KIP-841): the HW also waits for the
//! members the proposal adds, since the controller may have accepted them already.
//! Forgetting them early is how acknowledged records get lost: the controller persists
//! `{L,G,F}`, the answer is lost, the leader's HW passes F's LEO, and the controller
//! later elects F. So the proposal is kept until the answer is definite:
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
use std::time::Duration;

use super::partitions::{Partition, ReplicaManager};
use crate::error::{ApiError, Code};
use crate::events::{Event, IsrCause};
use crate::protocol::{AlterPartition, IsrMemberEpoch, PartitionState};
use crate::replica::{IsrChange, PendingIsr};
use crate::rpc::CallError;

/// How often leaders look for ISR changes to propose.
const ISR_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// How long a leader waits before proposing again an ISR change that was refused,
/// or before sending again one that got no answer.
const ISR_RETRY_BACKOFF: Duration = Duration::from_millis(500);

/// Look for ISR changes to propose, forever.
pub async fn run(manager: Arc<ReplicaManager>) {
    loop {
        tokio::time::sleep(ISR_CHECK_INTERVAL).await;
        for part in manager.all() {
            if let Some((req, sent)) = propose(&manager, &part) {
                tokio::spawn(send(manager.clone(), part, req, sent));
            }
        }
    }
}

/// The AlterPartition to send for `part` now, if it leads and has a change to
/// propose (then pending); a change the isr-unchecked bug applied on the spot is
/// only logged.
fn propose(
    manager: &ReplicaManager,
    part: &Arc<Partition>,
) -> Option<(AlterPartition, PendingIsr)> {
    let ctx = manager.ctx();
    let now = ctx.now_ms();
    if now < part.isr_retry_at_ms.load(Ordering::Relaxed) {
        return None;
    }
    match manager.update(part, |r| r.propose_isr(now))? {
        IsrChange::ShrunkUnchecked { from, to } => {
            eprintln!(
                "node {}: {}: ISR {from:?} -> {to:?} without the controller (--bug isr-unchecked)",
                ctx.id,
                part.name()
            );
            for event in Event::isr_changes(&part.tp, &from, &to, IsrCause::Lag, IsrCause::CaughtUp)
            {
                manager.emit(&event);
            }
            None
        }
        IsrChange::Propose {
            pending,
            member_epochs,
        } => {
            let req = AlterPartition {
                broker_id: ctx.id,
                broker_epoch: ctx.broker_epoch(),
                topic: part.tp.topic.clone(),
                partition: part.tp.partition,
                leader_epoch: pending.leader_epoch,
                partition_epoch: pending.partition_epoch,
                new_isr: pending.isr.clone(),
                new_isr_epochs: member_epochs
                    .into_iter()
                    .map(|(broker_id, broker_epoch)| IsrMemberEpoch {
                        broker_id,
                        broker_epoch,
                    })
                    .collect(),
            };
            Some((req, pending))
        }
    }
}

/// What an AlterPartition outcome tells the leader.
#[derive(Debug)]
enum Verdict {
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
fn judge(answer: Result<PartitionState, CallError>) -> Verdict {
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
async fn send(
    manager: Arc<ReplicaManager>,
    part: Arc<Partition>,
    req: AlterPartition,
    sent: PendingIsr,
) {
    let ctx = manager.ctx();
    let name = format!("node {}: {}", ctx.id, part.name());
    let old_isr = part.read().isr().to_vec();
    let mut unanswered = 0u32;
    loop {
        let answer = ctx.controller_post("/internal/alter-partition", &req).await;
        match judge(answer) {
            Verdict::Accepted(state) => {
                eprintln!(
                    "{name}: ISR {old_isr:?} -> {:?} accepted (partition epoch {})",
                    state.isr, state.partition_epoch
                );
                manager.apply_partition_state(state);
                // Applied now, or a newer state was already: either way answered.
                manager.update(&part, |r| r.clear_pending_isr(&sent));
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
                let retry_at = ctx.now_ms() + ISR_RETRY_BACKOFF.as_millis() as u64;
                part.isr_retry_at_ms.store(retry_at, Ordering::Relaxed);
                eprintln!("{name}: ISR {old_isr:?} -> {:?} refused: {e}", req.new_isr);
                manager.update(&part, |r| r.clear_pending_isr(&sent));
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
                if !part.read().is_pending(&sent) {
                    // A newer state replaced the proposal: nothing left to ask.
                    break;
                }
            }
        }
    }
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
