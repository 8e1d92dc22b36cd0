//! The settings the harness may give every broker: the replicas' (truncation, flush
//! policy, ISR lag, fetch wait, storage failure timeout) and the controller voters'
//! (session and election timeouts, the leader rebalance, unclean election), each
//! optional — absent, the broker uses its own default ([`defaults`]).
//!
//! One declaration serves three readers: clap (each field is a `--kebab-name`
//! option of `broker node`, the controller's half of `broker controller`, and of
//! `watermark run`), serde (the same snake_case names in run.json), and
//! [`Settings::to_args`], which renders the settings back into the command line a
//! broker is started with, in declaration order.

use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Bug;

/// The brokers' own defaults, for a setting not given.
pub mod defaults {
    pub const REPLICA_LAG_TIME_MAX_MS: u64 = 10_000;
    pub const REPLICA_FETCH_WAIT_MAX_MS: u64 = 500;
    pub const REPLICA_FETCH_MAX_RECORDS: u64 = 1000;
    pub const STORAGE_FAILURE_TIMEOUT_MS: u64 = 2000;
    pub const SESSION_TIMEOUT_MS: u64 = 3000;
    pub const ELECTION_TIMEOUT_MS: u64 = 1000;
    pub const LEADER_IMBALANCE_CHECK_INTERVAL_MS: u64 = 300_000;
}

/// How a follower that becomes follower, or restarts, decides where to truncate its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Truncation {
    /// KIP-101 with the KIP-279 fix: ask the leader for the end offset of the largest epoch ≤ ours.
    Epoch,
    /// Pre-0.11 Kafka: truncate to the local high watermark (loses data, diverges logs).
    Hw,
}

/// What every broker is given: its replicas' settings, its controller voter's, and a
/// planted bug.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct Settings {
    #[command(flatten)]
    #[serde(flatten)]
    pub replica: ReplicaSettings,
    #[command(flatten)]
    #[serde(flatten)]
    pub controller: ControllerSettings,
    /// Plant a known bug in every broker (see `watermark selftest`; a dedicated
    /// controller acts only on the controller's own: elect-out-of-isr, no-epoch-bump).
    #[arg(long, value_enum, value_name = "NAME")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bug: Option<Bug>,
}

/// The replicas' settings (`broker node` only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct ReplicaSettings {
    /// How a follower settles its log with a new leader, or after a restart
    /// [default: epoch].
    #[arg(long, value_enum)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
    /// fsync the log after this many messages (default: never, like Kafka).
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_messages: Option<u64>,
    /// fsync the log at least this often, in milliseconds (default: never).
    #[arg(allow_negative_numbers = true, long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<u64>,
    /// Keep unflushed bytes in process memory, so SIGKILL loses them like a power cut.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulate_page_cache: bool,
    /// A follower behind the leader for longer than this leaves the ISR
    /// (replica.lag.time.max.ms) [default: 10000].
    #[arg(allow_negative_numbers = true, long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_lag_time_max_ms: Option<u64>,
    /// How long an empty follower fetch waits in the leader's purgatory for data
    /// (replica.fetch.wait.max.ms) [default: 500].
    #[arg(allow_negative_numbers = true, long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_fetch_wait_max_ms: Option<u64>,
    /// The most records a follower asks for in one FETCH (replica.fetch.max.bytes,
    /// counted in records) [default: 1000].
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_fetch_max_records: Option<u64>,
    /// A partition whose storage keeps failing (ENOSPC, EIO) this long makes the node
    /// leave every ISR, as a broker whose log dir went offline [default: 2000].
    #[arg(allow_negative_numbers = true, long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_failure_timeout_ms: Option<u64>,
}

/// The controller voters' settings (every voter must be given the same).
#[derive(Debug, Clone, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct ControllerSettings {
    /// The controller declares a broker silent for longer than this dead (the
    /// brokers' session timeout; a new controller's grace period too); at least
    /// 200, the brokers' heartbeat interval [default: 3000].
    #[arg(allow_negative_numbers = true, long, value_name = "MS", value_parser = clap::value_parser!(u64).range(200..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_timeout_ms: Option<u64>,
    /// A controller voter that hears no leader for this long (up to 1.5×) starts an
    /// election [default: 1000].
    #[arg(allow_negative_numbers = true, long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election_timeout_ms: Option<u64>,
    /// Every this many ms the active controller hands each partition back to its
    /// preferred replica (the first) when that one is alive and in the ISR (Kafka's
    /// auto leader rebalance, leader.imbalance.check.interval); 0 turns it off
    /// [default: 300000].
    #[arg(allow_negative_numbers = true, long, value_name = "MS")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// Let the controller elect a replica outside the ISR when no ISR member is alive
    /// (may lose data).
    #[arg(long)]
    #[serde(default)]
    pub unclean_election: bool,
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

impl ReplicaSettings {
    pub fn truncation(&self) -> Truncation {
        self.truncation.unwrap_or(Truncation::Epoch)
    }

    pub fn replica_lag_time_max(&self) -> Duration {
        ms(self
            .replica_lag_time_max_ms
            .unwrap_or(defaults::REPLICA_LAG_TIME_MAX_MS))
    }

    pub fn replica_fetch_wait_max(&self) -> Duration {
        ms(self
            .replica_fetch_wait_max_ms
            .unwrap_or(defaults::REPLICA_FETCH_WAIT_MAX_MS))
    }

    pub fn replica_fetch_max_records(&self) -> usize {
        self.replica_fetch_max_records
            .unwrap_or(defaults::REPLICA_FETCH_MAX_RECORDS) as usize
    }

    pub fn storage_failure_timeout(&self) -> Duration {
        ms(self
            .storage_failure_timeout_ms
            .unwrap_or(defaults::STORAGE_FAILURE_TIMEOUT_MS))
    }
}

impl ControllerSettings {
    pub fn session_timeout(&self) -> Duration {
        ms(self
            .session_timeout_ms
            .unwrap_or(defaults::SESSION_TIMEOUT_MS))
    }

    pub fn election_timeout(&self) -> Duration {
        ms(self
            .election_timeout_ms
            .unwrap_or(defaults::ELECTION_TIMEOUT_MS))
    }

    /// None: the check is off.
    pub fn leader_imbalance_check_interval(&self) -> Option<Duration> {
        match self
            .leader_imbalance_check_interval_ms
            .unwrap_or(defaults::LEADER_IMBALANCE_CHECK_INTERVAL_MS)
        {
            0 => None,
            v => Some(ms(v)),
        }
    }
}

impl Settings {
    /// The truncation rule the replicas follow: `hw` also under `--bug hw-truncation`.
    pub fn truncation(&self) -> Truncation {
        if self.bug == Some(Bug::HwTruncation) {
            Truncation::Hw
        } else {
            self.replica.truncation()
        }
    }

    /// The command line of a `broker node` so set: `--name value` for every setting
    /// given (`--name` alone for a switch that is on), in declaration order.
    pub fn to_args(&self) -> Vec<String> {
        render::<Settings>(self)
    }

    /// The command line of a dedicated `broker controller`: the controller's
    /// settings and the bug.
    pub fn controller_args(&self) -> Vec<String> {
        let mut args = render::<ControllerSettings>(&self.controller);
        if let Some(bug) = self.bug {
            args.extend(["--bug".to_string(), bug.to_string()]);
        }
        args
    }
}

/// `value`'s fields as the options clap declares for `T`: each argument's id is its
/// field's name, which is also its serde name.
fn render<T: Args + Serialize>(value: &T) -> Vec<String> {
    let fields = match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => return Vec::new(),
    };
    let command = T::augment_args(clap::Command::new("settings"));
    let mut args = Vec::new();
    for arg in command.get_arguments() {
        let (Some(long), Some(v)) = (arg.get_long(), fields.get(arg.get_id().as_str())) else {
            continue;
        };
        match v {
            Value::Bool(true) => args.push(format!("--{long}")),
            Value::Bool(false) | Value::Null => {}
            Value::String(s) => args.extend([format!("--{long}"), s.clone()]),
            other => args.extend([format!("--{long}"), other.to_string()]),
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Node {
        #[command(flatten)]
        settings: Settings,
    }

    #[derive(Parser)]
    struct Controller {
        #[command(flatten)]
        controller: ControllerSettings,
        #[arg(long, value_enum)]
        bug: Option<Bug>,
    }

    fn every_setting() -> Settings {
        Settings {
            replica: ReplicaSettings {
                truncation: Some(Truncation::Hw),
                flush_messages: Some(10),
                flush_ms: Some(1000),
                simulate_page_cache: true,
                replica_lag_time_max_ms: Some(3000),
                replica_fetch_wait_max_ms: Some(250),
                replica_fetch_max_records: Some(200),
                storage_failure_timeout_ms: Some(1500),
            },
            controller: ControllerSettings {
                session_timeout_ms: Some(2000),
                election_timeout_ms: Some(900),
                leader_imbalance_check_interval_ms: Some(0),
                unclean_election: true,
            },
            bug: Some(Bug::StaleRead),
        }
    }

    #[test]
    fn the_rendered_command_line_reads_back_to_the_same_settings() {
        let s = every_setting();
        let mut argv = vec!["node".to_string()];
        argv.extend(s.to_args());
        let back = Node::try_parse_from(&argv).unwrap().settings;
        assert_eq!(back, s, "{argv:?}");
        assert_eq!(&argv[1..3], ["--truncation", "hw"]);
        let mut argv = vec!["controller".to_string()];
        argv.extend(s.controller_args());
        let back = Controller::try_parse_from(&argv).unwrap();
        assert_eq!(back.controller, s.controller);
        assert_eq!(back.bug, s.bug);
        assert!(Settings::default().to_args().is_empty());
    }

    #[test]
    fn run_json_spells_the_settings_as_the_command_line_does() {
        let json = serde_json::to_value(every_setting()).unwrap();
        assert_eq!(json["truncation"], "hw");
        assert_eq!(json["bug"], "stale-read");
        assert_eq!(json["session_timeout_ms"], 2000);
        let back: Settings = serde_json::from_value(json).unwrap();
        assert_eq!(back, every_setting());
        // What an older run.json holds: nulls and falses.
        let old: Settings = serde_json::from_value(serde_json::json!({
            "truncation": "epoch", "unclean_election": false, "bug": null, "flush_messages": null
        }))
        .unwrap();
        assert_eq!(old.replica.truncation, Some(Truncation::Epoch));
        assert_eq!(old.bug, None);
    }

    #[test]
    fn absent_settings_are_the_brokers_defaults() {
        let s = Settings::default();
        assert_eq!(s.controller.session_timeout(), Duration::from_secs(3));
        assert_eq!(s.replica.replica_lag_time_max(), Duration::from_secs(10));
        assert_eq!(s.truncation(), Truncation::Epoch);
        let hw = Settings {
            bug: Some(Bug::HwTruncation),
            ..Settings::default()
        };
        assert_eq!(hw.truncation(), Truncation::Hw);
        assert_eq!(
            every_setting().controller.leader_imbalance_check_interval(),
            None
        );
    }
}
