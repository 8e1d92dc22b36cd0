//! The commands of `watermark`, one module each, with its arguments beside the code
//! that does the job: `run` (one campaign) and `series` (`--test-count`), `replay`,
//! `check`, `export`, `selftest`, `shrink`, `serve`. (`report` renders from `crate::report`.)

pub(crate) mod campaign_process;
pub(crate) mod check;
pub(crate) mod corpus;
pub(crate) mod export;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod selftest;
pub(crate) mod series;
pub(crate) mod serve;
pub(crate) mod shrink;
