//! worker: the child side of a cell. Reads the cell as JSON on stdin, pins,
//! prepares the workload outside any timed window, measures it, and prints
//! one report line.
//!
//! The report goes to a private duplicate of the original stdout; file
//! descriptor 1 itself is pointed at stderr, so that anything a workload
//! prints lands in the log instead of corrupting the report.
//!
//! Before any of that the process splits into a guard and the worker proper
//! ([`guard`]): nothing the trial starts outlives it, nor the run.

pub mod guard;
pub mod sampling;
pub mod stopping;

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::panic::{AssertUnwindSafe, catch_unwind};

use anyhow::Context;

use crate::evidence::{WorkerReport, dir::parse_record};
use crate::measure::counters::Probe;
use crate::measure::{affinity, clock, lockstep};
use crate::model::{CELL_SCHEMA, Cell, SkipKind, Status};
use crate::workloads::command::CommandWorkload;
use crate::workloads::contract::{PrepareContext, Prepared, Workload};
use crate::workloads::registry;

/// Entry point of `proofbench worker`.
pub fn main() -> anyhow::Result<()> {
    guard::split()?;
    // SAFETY: duplicating and redirecting this process's own standard
    // descriptors; no memory is involved.
    let fd = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("duplicating stdout for the report");
    }
    // SAFETY: as above.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(std::io::Error::last_os_error()).context("redirecting stdout to stderr");
    }
    let allowed = affinity::current_thread().context("reading this worker's CPU affinity")?;
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).context("reading the cell from stdin")?;
    let cell: Cell = parse_record(&input, CELL_SCHEMA, std::path::Path::new("<stdin>"), None)?;
    // SAFETY: getppid has no preconditions (the parent is the worker's guard).
    let guard_pid = unsafe { libc::getppid() };
    eprintln!("proofbench worker pid {} for {} (guard pid {guard_pid})", std::process::id(), cell.row_id);
    // The children a workload forks must not hold the report channel.
    let cx = PrepareContext::new(&cell, allowed, vec![fd]);
    // A lockstep pair's side: the runner's token paces its timed samples.
    let report = match lockstep::Baton::from_env() {
        Ok(mut gate) => {
            // SAFETY: the worker proper has one thread yet; what the workload starts must not see it.
            unsafe { std::env::remove_var(lockstep::ENV) };
            run_cell(&cell, &cx, gate.as_mut())
        }
        Err(e) => WorkerReport::new(Status::Failed, Some(format!("lockstep: {e}"))),
    };
    // SAFETY: `fd` was duplicated above and is owned by nothing else.
    let mut out = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut line = serde_json::to_string(&report).context("serializing the report")?;
    line.push('\n');
    out.write_all(line.as_bytes()).context("writing the report")?;
    Ok(())
}

/// Prepares and measures one cell with the worker's context `cx` (its
/// timed samples paced by `gate` in a lockstep pair); every failure becomes
/// a report.
pub fn run_cell(cell: &Cell, cx: &PrepareContext, gate: Option<&mut lockstep::Baton>) -> WorkerReport {
    let workload: Box<dyn Workload> = match &cell.command {
        Some(def) => Box::new(CommandWorkload { def: def.clone() }),
        None => match registry::find(&cell.workload) {
            Some(w) => w,
            None => return WorkerReport::new(Status::Failed, Some(format!("this worker has no workload '{}'", cell.workload))),
        },
    };
    let spec = workload.spec();
    if let Some(cpu) = cell.cpu_for(0)
        && let Err(e) = affinity::pin_current_thread(cpu)
    {
        return WorkerReport::new(Status::Failed, Some(format!("cannot pin the worker to CPU {cpu}: {e}")));
    }
    // Before prepare: inherited hardware counters then follow the threads
    // and processes the workload makes.
    let probe = Probe::open();
    let t0 = clock::now_ns();
    let prepared = catch_unwind(AssertUnwindSafe(|| workload.prepare(cell, cx)));
    let prepare_ms = (clock::now_ns() - t0) as f64 / 1e6;
    match prepared {
        Ok(Ok(Prepared::Ready(inst))) => sampling::measure(cell, &cx.allowed, &spec, inst, prepare_ms, probe, gate),
        Ok(Ok(Prepared::Skip(reason))) => WorkerReport::skipped(SkipKind::Machine, reason),
        Ok(Ok(Prepared::NotApplicable(reason))) => WorkerReport::skipped(SkipKind::ByDesign, reason),
        Ok(Err(e)) => WorkerReport::new(Status::Failed, Some(format!("prepare failed: {e:#}"))),
        Err(_) => WorkerReport::new(Status::Failed, Some("prepare panicked (see the log)".into())),
    }
}
