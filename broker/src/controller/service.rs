//! The active controller's shell around the Raft voter and the pure state: it decides
//! commands from heartbeats and the clock, proposes them to the quorum, answers once
//! they are applied, and carries out their effects (log lines, LeaderAndIsr pushes).
//!
//! A process serves as the controller only while it is the Raft leader, has taken
//! over in its term (see [`Controller::run_takeovers`]) and holds its lease (a
//! majority of voters acknowledged it within 0.8 election timeout); otherwise it
//! answers `NOT_CONTROLLER` with the leader it knows of. So a paused or cut-off former
//! controller refuses requests by itself, and whatever it still tries to propose
//! cannot commit: the quorum has moved to a higher term.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openraft::error::{ClientWriteError, RaftError};
use openraft::{RaftMetrics, ServerState};

use super::push::Pusher;
use super::raft::{Identity, Leases, Voter};
use super::state::{Applied, Command, ControllerState, Effects, Millis};
use crate::error::{ApiError, Code};
use crate::events::{self, Api, Event, FenceReason};
use crate::protocol::{
    BrokerId, ConfirmLeadership, Heartbeat, HeartbeatResponse, Metadata, NO_LEADER, PartitionState,
    TopicPartition,
};

/// How often the liveness ticker looks for silent brokers.
pub const TICK_INTERVAL: Duration = Duration::from_millis(100);

/// Ticks this far apart mean the controller itself did not run in between (SIGSTOP,
/// or a starved machine), not that the brokers were silent.
const STALL_THRESHOLD_MS: Millis = 1000;

/// How long a proposal may wait for the quorum to commit it (below the nodes' own
/// timeout for a controller call, so they get an answer).
const COMMIT_TIMEOUT: Duration = Duration::from_millis(1500);

/// The controller side of a broker process.
pub struct Controller {
    identity: Arc<Identity>,
    /// The Raft voter: ask it for the current core each time (a storage error
    /// replaces it).
    voter: Arc<Voter>,
    /// Shared with the Raft state machine, which applies the log to it.
    state: Arc<Mutex<ControllerState>>,
    leases: Arc<Leases>,
    /// How long an acknowledgement keeps this leader's lease.
    lease: Duration,
    pusher: Pusher,
    clock: Instant,
    /// The term this process took over in (0: not the active controller).
    active_term: AtomicU64,
    /// Taken over, and the reassignments in progress not resumed yet.
    resume_due: AtomicBool,
}

impl Controller {
    pub fn new(
        identity: Arc<Identity>,
        voter: Arc<Voter>,
        state: Arc<Mutex<ControllerState>>,
        leases: Arc<Leases>,
        lease: Duration,
        pusher: Pusher,
    ) -> Self {
        Controller {
            identity,
            voter,
            state,
            leases,
            lease,
            pusher,
            clock: Instant::now(),
            active_term: AtomicU64::new(0),
            resume_due: AtomicBool::new(false),
        }
    }

    /// Milliseconds since the controller started, on the monotonic clock.
    pub fn now(&self) -> Millis {
        self.clock.elapsed().as_millis() as Millis
    }

    fn lock(&self) -> MutexGuard<'_, ControllerState> {
        // Commands replace parts of the state whole, so a panic elsewhere cannot tear it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The active controller as this voter knows it: itself only while it serves as
    /// the controller (not as a deposed leader that has not heard of its successor
    /// yet), else the leader it knows of (None: none).
    pub fn controller_id(&self) -> Option<BrokerId> {
        match self.active() {
            Ok(_) => Some(self.identity.id),
            Err(e) => e
                .extra
                .get("controller_id")
                .and_then(|c| c.as_i64())
                .filter(|&c| c >= 0)
                .map(|c| c as BrokerId),
        }
    }

    /// The controller epoch, if this process is the active controller now; else
    /// `NOT_CONTROLLER` naming the one it knows of.
    pub fn active(&self) -> Result<i32, ApiError> {
        let (leader, term, known) = {
            let m = self.voter.raft().metrics();
            let m = m.borrow();
            (
                m.state == ServerState::Leader,
                m.current_term,
                m.current_leader,
            )
        };
        let me = self.identity.id as u64;
        let ours = self.active_term.load(Ordering::SeqCst) == term;
        let voters = &self.identity.quorum.voters;
        if leader && ours && self.leases.held(me, voters, self.lease) {
            return Ok(term as i32);
        }
        let hint = known.filter(|&l| l != me || !leader);
        Err(self.not_controller(hint))
    }

    fn not_controller(&self, hint: Option<u64>) -> ApiError {
        let id = hint.map_or(NO_LEADER, |l| l as BrokerId);
        let known = match hint {
            Some(l) => format!("the active controller is broker {l}"),
            None => "no active controller is known (is a majority of voters running?)".into(),
        };
        ApiError::new(
            Code::NotController,
            format!(
                "broker {} is not the active controller; {known}",
                self.identity.id
            ),
        )
        .with("controller_id", id)
    }

    /// Propose a command and wait until it is applied (its effects are carried out
    /// by [`Controller::run_announcements`], even if this wait is given up).
    pub async fn propose(&self, command: Command) -> Result<Applied, ApiError> {
        self.active()?;
        let written =
            tokio::time::timeout(COMMIT_TIMEOUT, self.voter.raft().client_write(command)).await;
        let resp = match written {
            Ok(Ok(resp)) => resp,
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                return Err(self.not_controller(f.leader_id));
            }
            Ok(Err(e)) => {
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    format!("the controller quorum did not take the change: {e}"),
                ));
            }
            Err(_) => {
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    format!(
                        "the controller quorum did not commit the change within {COMMIT_TIMEOUT:?}; \
                         it may still"
                    ),
                ));
            }
        };
        match resp.data.outcome {
            Some(Ok(applied)) => Ok(applied),
            Some(Err(body)) => Err(ApiError::from_body(&body)
                .unwrap_or_else(|| ApiError::invalid(format!("refused: {body}")))),
            None => Err(ApiError::invalid("the command had no answer")),
        }
    }

    /// Log the changes, print their event lines (once: only the active controller
    /// carries out effects, never a voter merely applying the log) and push them to
    /// the brokers, under controller epoch `epoch`.
    fn carry_out(&self, epoch: i32, mut effects: Effects) {
        for line in &effects.events {
            eprintln!("{line}");
        }
        // Whether an elected leader came back recently is the active controller's
        // clock's to say, not the log's.
        self.lock()
            .stamp_elections(&mut effects.transitions, self.now());
        for event in &effects.transitions {
            events::emit(self.identity.id, event);
        }
        if effects.pushes.is_empty() {
            return;
        }
        let (brokers, broker_epochs) = {
            let s = self.lock();
            (s.brokers_info(), s.broker_epochs())
        };
        self.pusher
            .push(epoch, &brokers, &broker_epochs, effects.pushes);
    }

    /// Carry out, in log order, the effects of the entries this voter applied as
    /// their leader, forever.
    pub async fn run_announcements(
        self: Arc<Self>,
        mut announced: tokio::sync::mpsc::UnboundedReceiver<(i32, Effects)>,
    ) {
        while let Some((epoch, effects)) = announced.recv().await {
            // Entries of an earlier term of ours, committed only after we lost the
            // leadership, are the new controller's to announce (its takeover does).
            if self.active_term.load(Ordering::SeqCst) == epoch as u64 {
                self.carry_out(epoch, effects);
            }
        }
    }

    /// `POST /internal/heartbeat`.
    pub async fn heartbeat(&self, hb: &Heartbeat) -> Result<HeartbeatResponse, ApiError> {
        self.active()?;
        let now = self.now();
        let decision = self.lock().heartbeat_decision(hb, now)?;
        match decision {
            None => Ok(self.lock().heartbeat_response(hb.broker_id)),
            Some(command) => match self.propose(command).await? {
                Applied::Heartbeat(resp) => Ok(resp),
                other => Err(ApiError::invalid(format!("a heartbeat answered {other:?}"))),
            },
        }
    }

    /// `POST /internal/confirm-leadership`: answered only after the quorum confirmed
    /// this controller's leadership (a linearizable read of the state).
    pub async fn confirm_leadership(
        &self,
        req: &ConfirmLeadership,
    ) -> Result<PartitionState, ApiError> {
        self.active()?;
        match tokio::time::timeout(COMMIT_TIMEOUT, self.voter.raft().ensure_linearizable()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                eprintln!("controller: leadership not confirmed: {e}");
                return Err(self.not_controller(None));
            }
            Err(_) => {
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    "the controller quorum did not confirm this controller in time",
                ));
            }
        }
        let answer = self.lock().confirm_leadership(req);
        if answer.as_ref().is_err_and(|e| e.code == Code::NotLeader) {
            let tp = TopicPartition {
                topic: req.topic.clone(),
                partition: req.partition,
            };
            let event = Event::fenced(Api::ConfirmLeadership, FenceReason::NotLeader, &tp);
            events::emit(self.identity.id, &event);
        }
        answer
    }

    /// `GET /v1/metadata`: the state as this voter has applied it, and who leads.
    pub fn metadata(&self) -> Metadata {
        let mut md = self.lock().metadata();
        md.controller_id = self.controller_id().unwrap_or(NO_LEADER);
        md
    }

    /// Follow the Raft leadership forever: when this voter becomes leader and has
    /// applied its term's first entry (so its state holds everything committed
    /// before), it takes over — a grace period for every broker, LeaderAndIsr for
    /// every partition under the new epoch; when it loses leadership, it stops. A
    /// re-opened voter is followed from its start, as a follower.
    pub async fn run_takeovers(self: Arc<Self>) {
        let mut generations = self.voter.generations();
        loop {
            generations.borrow_and_update();
            let mut rx = self.voter.raft().metrics();
            loop {
                // A copy: the watch stays unlocked while a takeover is carried out.
                let metrics = rx.borrow_and_update().clone();
                self.follow(&metrics);
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() {
                        // The core ended: wait for its successor.
                        self.active_term.store(0, Ordering::SeqCst);
                        if generations.changed().await.is_err() {
                            return;
                        }
                        break;
                    },
                    _ = generations.changed() => break,
                }
            }
        }
    }

    /// What [`Self::run_takeovers`] does at each change of the voter's metrics.
    fn follow(&self, m: &RaftMetrics<u64, openraft::EmptyNode>) {
        if m.current_leader.is_some() {
            self.identity.established.store(true, Ordering::Relaxed);
        }
        let term = m.current_term;
        if m.state != ServerState::Leader {
            self.active_term.store(0, Ordering::SeqCst);
        } else if self.active_term.load(Ordering::SeqCst) != term
            && m.last_applied.map(|l| l.leader_id.term) == Some(term)
        {
            let now = self.now();
            let effects = self.lock().take_over(term as i32, now);
            self.active_term.store(term, Ordering::SeqCst);
            self.resume_due.store(true, Ordering::SeqCst);
            self.carry_out(term as i32, effects);
        }
    }

    /// Resume the reassignments in progress: every one, once after a takeover (until
    /// that command commits), then those that may complete but have not.
    async fn resume_reassignments(&self) {
        let takeover = self.resume_due.load(Ordering::SeqCst);
        let decision = self.lock().resume_decision(takeover);
        let Some(command) = decision else {
            self.resume_due.store(false, Ordering::SeqCst);
            return;
        };
        match self.propose(command).await {
            Ok(_) => self.resume_due.store(false, Ordering::SeqCst),
            Err(e) => eprintln!("controller: reassignments not resumed: {e}"),
        }
    }

    /// Run the liveness ticker forever: while active, propose the expiry of brokers
    /// silent past the session timeout, resume reassignments, and now and then hand
    /// leaderships back to the preferred replicas.
    pub async fn run_ticker(self: Arc<Self>) {
        let mut interval = tokio::time::interval(TICK_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_tick: Option<Millis> = None;
        let interval_ms = self.lock().config().leader_imbalance_check_interval_ms;
        let mut next_check: Option<Millis> = None;
        loop {
            interval.tick().await;
            let now = self.now();
            if let Some(from) = last_tick.filter(|&t| now.saturating_sub(t) > STALL_THRESHOLD_MS) {
                let effects = self.lock().stalled(from, now);
                for line in &effects.events {
                    eprintln!("{line}");
                }
            }
            last_tick = Some(now);
            if self.active().is_err() {
                next_check = None;
                continue;
            }
            let decision = self.lock().expiry_decision(now);
            if let Some(command) = decision
                && let Err(e) = self.propose(command).await
            {
                eprintln!("controller: broker expiry not committed: {e}");
            }
            self.resume_reassignments().await;
            // Preferred-replica elections, one interval after this controller
            // became active and every interval after.
            if interval_ms > 0 {
                let due = *next_check.get_or_insert(now + interval_ms);
                if now >= due {
                    next_check = Some(now + interval_ms);
                    let decision = self.lock().preferred_decision();
                    if let Some(command) = decision
                        && let Err(e) = self.propose(command).await
                    {
                        eprintln!("controller: preferred replica election not committed: {e}");
                    }
                }
            }
        }
    }
}
