use std::process::ExitCode;

use clap::Parser;
use watermark::cli::{Cli, Command};
use watermark::exit::Exit;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Valid
            };
            let _ = e.print();
            return code.into();
        }
    };
    let exit = match cli.command {
        Command::Run(args) => watermark::run::run(*args),
        Command::Check(args) => watermark::check::run(args),
        Command::Replay(args) => watermark::replay::run(args),
        Command::Report(args) => watermark::report::run(args),
        Command::Serve(args) => watermark::serve::run(args),
        Command::Selftest(args) => watermark::selftest::run(args),
    };
    exit.into()
}
