//! `duplicate-on-retry`: with `acks=all`, the leader of partition 0 appends and
//! replicates the producers' sends, but its answers never reach them (a one-way
//! cut of leader → clients). Each producer times out, and with `--retries` sends
//! again once the answers flow: the value is appended a second time, at a new
//! offset — the `duplicate` a producer without idempotence is allowed to cause.
//! With `--retries 0` those sends end `info` and every value is in the log once;
//! with `--idempotent` the leader recognises the retried batch and answers with the
//! first attempt's offset.

use std::time::Duration;

use super::script::{Instr, Op, Ref};
use super::warm_up;

/// How long the leader's answers are held: three of the clients' request timeouts
/// (3 s), so that a send started in the cut's first six seconds — also by a worker
/// first held up on a poll of the same leader — times out, whatever the leader did.
const ANSWERS_HELD: Duration = Duration::from_secs(9);
/// How long the script lets the producers' retries land after the heal (their
/// backoff is at most 1 s per retry).
const RETRIES_LAND: Duration = Duration::from_secs(4);

pub fn script() -> Vec<Instr> {
    let mut s = warm_up();
    s.extend([
        Instr::Do(Op::HoldAnswers(Ref::Is("start"))),
        Instr::Sleep(ANSWERS_HELD),
        Instr::Do(Op::ReleaseAnswers(Ref::Is("start"))),
        Instr::Sleep(RETRIES_LAND),
    ]);
    s
}
