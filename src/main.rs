//! proofbench: parse the command line, dispatch to the pipeline, print
//! errors, map them to exit codes (0 ok; 1 rows failed or a failure of the
//! machine; 2 usage or input errors; 130 interrupted).

use std::process::ExitCode;

use clap::Parser;
use proofbench::cli::{Cli, Command};
use proofbench::{commands, exit_code_of};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return commands::usage_error(e),
    };
    let result = match cli.command {
        Command::Run(args) => proofbench::runner::run(&args, std::env::args().collect()),
        Command::Noise(args) => proofbench::runner::noise(&args, std::env::args().collect()),
        Command::List(args) => commands::list(&args),
        Command::Env(args) => commands::env(&args),
        Command::Report(args) => commands::report(&args),
        Command::Compare(args) => commands::compare(&args),
        Command::History(args) => proofbench::history::command::history(&args),
        Command::CheckClaims(args) => commands::check_claims(&args),
        Command::Worker(_) => proofbench::worker::main().map(|_| ExitCode::SUCCESS),
        Command::Noop { token } => {
            println!("{token}");
            return ExitCode::SUCCESS;
        }
        Command::MallocProvider => {
            println!("{}", proofbench::workloads::alloc::allocator::malloc_provider().unwrap_or_default());
            return ExitCode::SUCCESS;
        }
    };
    result.unwrap_or_else(|e| {
        proofbench::report::terminal::to_stderr(&format!("proofbench: error: {e:#}\n"));
        ExitCode::from(exit_code_of(&e))
    })
}
