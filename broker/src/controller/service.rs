//! The shell around the pure state machine: one lock over [`ControllerState`], the
//! monotonic clock, persistence and pushes. Every event runs the same way: under the
//! lock, apply it; if the durable state changed, persist it before anything else (a
//! state that failed to persist is rolled back, so nobody acts on what a restart would
//! forget); then, with the lock released, log the changes and push them to the brokers.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::push::Pusher;
use super::state::{ControllerState, Effects, Millis};
use super::store::Store;
use crate::error::{ApiError, Code};
use crate::events;

/// How often the liveness ticker looks for silent brokers.
pub const TICK_INTERVAL: Duration = Duration::from_millis(100);

/// Ticks this far apart mean the controller itself did not run in between (SIGSTOP,
/// or a starved machine), not that the brokers were silent.
const STALL_THRESHOLD_MS: Millis = 1000;

/// The running controller, shared by the HTTP handlers and the liveness ticker.
pub struct Controller {
    state: Mutex<ControllerState>,
    store: Store,
    pusher: Pusher,
    clock: Instant,
}

impl Controller {
    /// `state` was started at `clock` (time 0) and has been persisted.
    pub fn new(state: ControllerState, store: Store, pusher: Pusher, clock: Instant) -> Self {
        Controller {
            state: Mutex::new(state),
            store,
            pusher,
            clock,
        }
    }

    /// Milliseconds since the controller started, on the monotonic clock.
    pub fn now(&self) -> Millis {
        self.clock.elapsed().as_millis() as Millis
    }

    fn lock(&self) -> MutexGuard<'_, ControllerState> {
        // The state is only replaced whole, so a panic elsewhere cannot leave it torn.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read the state.
    pub fn read<T>(&self, f: impl FnOnce(&ControllerState) -> T) -> T {
        f(&self.lock())
    }

    /// Apply one event (see the module doc). Must run on a multi-threaded tokio runtime:
    /// persisting blocks this thread on fsync.
    pub fn apply<T>(
        &self,
        f: impl FnOnce(&mut ControllerState, Millis) -> Result<(T, Effects), ApiError>,
    ) -> Result<T, ApiError> {
        let (out, effects, epoch, brokers, broker_epochs) = tokio::task::block_in_place(|| {
            let mut state = self.lock();
            let before = state.clone();
            let now = self.now();
            let (out, effects) = f(&mut state, now)?;
            let saved = match effects.dirty {
                true => self.store.save(&state.durable()),
                false => Ok(()),
            };
            if let Err(e) = saved {
                *state = before;
                eprintln!("controller: cannot persist its state: {e}; change rolled back");
                return Err(ApiError::new(
                    Code::RequestTimedOut,
                    format!("the controller could not persist its state: {e}"),
                ));
            }
            Ok((
                out,
                effects,
                state.controller_epoch(),
                state.brokers_info(),
                state.broker_epochs(),
            ))
        })?;
        for line in &effects.events {
            eprintln!("{line}");
        }
        for event in &effects.transitions {
            events::emit(events::CONTROLLER, event);
        }
        if !effects.pushes.is_empty() {
            self.pusher
                .push(epoch, &brokers, &broker_epochs, effects.pushes);
        }
        Ok(out)
    }

    /// Run the liveness ticker forever.
    pub async fn run_ticker(self: Arc<Self>) {
        let mut interval = tokio::time::interval(TICK_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_tick: Option<Millis> = None;
        loop {
            interval.tick().await;
            // `now` is read under the lock, so a pause cannot fall between the stall
            // check and the tick. A failed persist was logged and rolled back; the
            // next tick retries.
            let ticked = self.apply(|state, now| {
                let mut effects = Effects::default();
                if let Some(from) =
                    last_tick.filter(|&t| now.saturating_sub(t) > STALL_THRESHOLD_MS)
                {
                    effects = state.stalled(from, now);
                }
                effects.merge(state.tick(now));
                Ok((now, effects))
            });
            if let Ok(now) = ticked {
                last_tick = Some(now);
            }
        }
    }
}
