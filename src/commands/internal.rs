//! The hidden subcommands proofbench runs of itself: `worker` (one trial of
//! one cell, for the runner), `noop` (the child of `os.process-spawn`) and
//! `malloc-provider` (how the runner checks an `--allocator preload:`
//! library).

use std::process::ExitCode;

/// `proofbench worker`: one cell as JSON on stdin, one report line out.
pub fn worker() -> anyhow::Result<ExitCode> {
    crate::worker::main().map(|_| ExitCode::SUCCESS)
}

/// `proofbench noop TOKEN`: prints TOKEN.
pub fn noop(token: &str) -> anyhow::Result<ExitCode> {
    println!("{token}");
    Ok(ExitCode::SUCCESS)
}

/// `proofbench malloc-provider`: the file of the object `malloc` is bound to
/// in this process.
pub fn malloc_provider() -> anyhow::Result<ExitCode> {
    println!("{}", crate::workloads::alloc::allocator::malloc_provider().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}
