//! The hidden subcommands proofbench runs of itself: `worker` (one trial of
//! one cell, for the runner), `noop` (the child of `os.process-spawn`) and
//! `malloc-provider` (how the runner checks an `--allocator preload:`
//! library).

use std::io::Write;
use std::process::ExitCode;

/// `proofbench worker`: one cell as JSON on stdin, one report line out.
pub fn worker() -> anyhow::Result<ExitCode> {
    crate::worker::main().map(|_| ExitCode::SUCCESS)
}

/// `proofbench noop TOKEN`: prints TOKEN.
pub fn noop(token: &str) -> anyhow::Result<ExitCode> {
    // As println! costs (os.process-spawn times this process), without its
    // panic when stdout is closed.
    let _ = writeln!(std::io::stdout().lock(), "{token}");
    Ok(ExitCode::SUCCESS)
}

/// `proofbench malloc-provider`: the file of the object `malloc` is bound to
/// in this process.
pub fn malloc_provider() -> anyhow::Result<ExitCode> {
    let provider = crate::workloads::alloc::allocator::malloc_provider().unwrap_or_default();
    std::io::stdout().lock().write_all(format!("{provider}\n").as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
