//! The broker's end-to-end tests over real processes, one module per concern, in one
//! test binary: most of them wait on elections, session timeouts and fault holds far
//! more than they compute, so one binary keeps the test threads busy where a binary
//! per file leaves them idle behind its slowest test, and the tests link once.

mod support;

mod admin;
mod auth;
mod bad_input;
mod controller_quorum;
mod corruption;
mod disk;
mod durability;
mod events;
mod exact;
mod idempotence;
mod planted_abort;
mod reassignment;
mod register;
mod replication;
mod storage;
mod unclean;
