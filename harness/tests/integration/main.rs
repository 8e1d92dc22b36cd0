//! The harness's end-to-end tests, one module per concern, in one test binary: most
//! of them wait on real clusters (elections, fault holds, time limits) far more than
//! they compute, so one binary keeps the test threads busy where a binary per file
//! leaves them idle behind its slowest test, and the tests link once.

mod report_fixtures;
mod support;

mod browser;
mod check;
mod ci;
mod cluster;
mod coverage;
mod crash;
mod disk;
mod install;
mod interop;
mod maelstrom;
mod nemesis;
mod netfaults;
mod register;
mod report;
mod run;
mod scenario;
mod schedule;
mod selftest;
mod serve;
mod workflow;
