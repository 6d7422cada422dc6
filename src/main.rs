//! proofbench: parse the command line, dispatch to the pipeline, print
//! errors, map them to exit codes (0 ok; 1 rows failed or a failure of the
//! machine; 2 usage or input errors; 130 interrupted).

use std::process::ExitCode;

use clap::Parser;
use proofbench::cli::Cli;
use proofbench::commands;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return commands::usage_error(e),
    };
    commands::dispatch(cli).unwrap_or_else(|e| commands::error(&e))
}
