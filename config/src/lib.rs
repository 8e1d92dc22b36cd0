//! The broker's configuration as the harness passes it down, declared once.
//!
//! The broker and the harness are separate programs that meet only on the broker's
//! command line and HTTP API. What the harness may set on every broker — the
//! settings a campaign varies ([`Settings`]) and the planted bugs ([`Bug`]) — is
//! declared here, in one place: the broker's `node` and `controller` commands flatten
//! these structs into their command lines, and the harness flattens the same structs
//! into `watermark run`'s options, stores them in run.json and renders them back into
//! each broker's command line ([`Settings::to_args`]). Adding a setting or a bug is
//! one declaration here plus its implementation in the broker.

mod bug;
mod settings;

pub use bug::{Bug, Side};
pub use settings::{ControllerSettings, ReplicaSettings, Settings, Truncation, defaults};

#[cfg(test)]
mod docs {
    //! The docs list every setting and every bug: they are declared here alone.

    use clap::{Args, ValueEnum};

    fn doc(name: &str) -> String {
        let path = format!("{}/../docs/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Every option of [`crate::Settings`], as `--name`.
    fn options() -> Vec<String> {
        let command = crate::Settings::augment_args(clap::Command::new("settings"));
        command
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect()
    }

    #[test]
    fn every_setting_has_a_row_in_the_brokers_and_the_harness_tables() {
        // A table row whose first cell names the option (`--name` or `--name VALUE`).
        let has_row = |text: &str, option: &str| {
            text.lines().any(|l| {
                let first = l.strip_prefix('|').and_then(|r| r.split('|').next());
                first.is_some_and(|c| {
                    c.contains(&format!("`{option}`")) || c.contains(&format!("`{option} "))
                })
            })
        };
        for name in ["api.md", "running.md"] {
            let text = doc(name);
            for option in options() {
                assert!(
                    has_row(&text, &option),
                    "docs/{name} has no row for {option}"
                );
            }
        }
    }

    #[test]
    fn every_bug_has_a_row_in_the_brokers_table() {
        let broker = doc("broker.md");
        for bug in crate::Bug::value_variants() {
            let row = format!("| `{bug}` |");
            assert!(broker.contains(&row), "docs/broker.md has no row for {bug}");
        }
    }
}
