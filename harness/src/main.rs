use std::process::ExitCode;

use clap::Parser;
use watermark::cli::Cli;
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
    cli.execute().into()
}
