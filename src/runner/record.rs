//! runner::record: the run's record as it starts (the plan and the
//! machine, every cell not yet run) and what its end adds (how it ended,
//! its rounds, its wall and CPU time, what else took the machine
//! meanwhile, its rows by status), and the commit it measures.

use std::path::Path;
use std::time::Instant;

use crate::evidence::{RUN_SCHEMA, RunCpu, RunDir, RunRecord, StatusCounts};
use crate::measure::affinity;
use crate::measure::interference::{self, Interference};
use crate::measure::rusage::Rusage;

use crate::envelope::Envelope;
use crate::plan::Plan;

use super::config::{RunConfig, RunSpec};
use super::local::rounds::Outcome;

/// The commit of the system under test: `--commit REV` as given (`none`
/// for none), else `git rev-parse HEAD` in the current directory (none
/// outside a repository or without git).
pub fn commit_of(flag: Option<&str>) -> Option<String> {
    match flag {
        Some("none") => None,
        Some(rev) => Some(rev.to_string()),
        None => {
            let out = std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (out.status.success() && !text.is_empty()).then_some(text)
        }
    }
}

/// This process's peak resident set since its last exec (VmHWM), KiB.
fn own_peak_rss_kib() -> Option<u64> {
    <procfs_core::process::Status as procfs_core::FromRead>::from_file("/proc/self/status").ok()?.vmhwm
}

/// What the run's end measures against: its start.
pub(crate) struct Start {
    wall: Instant,
    /// This process may have been exec'd by another (cargo run does that),
    /// whose CPU time and reaped children the kernel's counters still hold:
    /// the run counts from here.
    cpu_self: Rusage,
    cpu_children: Rusage,
    machine: interference::Snapshot,
}

impl Start {
    pub(crate) fn now() -> Start {
        Start {
            wall: Instant::now(),
            cpu_self: Rusage::this_process(),
            cpu_children: Rusage::children(),
            machine: interference::Snapshot::read(),
        }
    }
}

/// The run's record as it starts: `spec` planned as `plan` under `label`
/// on the machine `envelope` describes, in `dir`, with the commit
/// `--commit` names (or git's HEAD); nothing measured, every planned cell
/// not run. A local run's and a launched run's first record alike.
pub(crate) fn starting(spec: &RunSpec, label: String, envelope: Envelope, plan: Plan, dir: &RunDir, commit: Option<&str>) -> RunRecord {
    RunRecord {
        schema: RUN_SCHEMA.to_string(),
        id: dir.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        label,
        commit: commit_of(commit),
        profile: spec.options.measurement.profile,
        seed: spec.seed,
        options: spec.options.clone(),
        started_utc: envelope.started_utc.clone(),
        envelope,
        finished_utc: None,
        wall_s: None,
        cpu: None,
        interrupted: false,
        complete: false,
        counts: None,
        // Nothing has run yet: a run killed before its finish record (a node
        // that failed) still lists every cell it did not finish.
        not_run: plan.cells.iter().map(|c| c.row_id.clone()).collect(),
        plan: plan.cells,
        launcher: None,
        trials: Some(plan.trials),
        rounds: Vec::new(),
        interference: None,
        kind: spec.kind,
        variants: plan.variants,
    }
}

/// What the run's end adds to its record: how it ended, its rounds, the
/// machine after it, its wall and CPU time, what else took the machine
/// meanwhile, and the rows per status.
pub(crate) fn finish_record(run: &mut RunRecord, cfg: &RunConfig, outcome: &Outcome, start: &Start) {
    run.interrupted = outcome.interrupted || crate::process::signals::interrupted();
    run.rounds = outcome.rounds.clone();
    run.not_run =
        cfg.plan.cells.iter().filter(|c| !outcome.rows.iter().any(|r| r.cell.index == c.index)).map(|c| c.row_id.clone()).collect();
    run.complete = run.not_run.is_empty() && !run.interrupted;
    run.envelope.finish(Path::new("/"));
    run.finished_utc = run.envelope.finished_utc.clone();
    let wall_s = start.wall.elapsed().as_secs_f64();
    run.wall_s = Some(wall_s);
    let mut cpu = RunCpu { parent: Rusage::this_process().since(&start.cpu_self), workers: Rusage::children().since(&start.cpu_children) };
    // Everything the machine did that was not this run (parent and workers).
    let cpus = affinity::current_thread().unwrap_or_default();
    let own_ms = cpu.parent.plus(&cpu.workers).cpu_seconds() * 1e3;
    run.interference = Some(Interference::between(&start.machine, &interference::Snapshot::read(), &cpus, own_ms, wall_s * 1e3));
    // Peaks are not differences: take this process's own high-water mark (reset at
    // exec) and the largest worker's.
    cpu.parent.max_rss_kib = own_peak_rss_kib().unwrap_or(0);
    cpu.workers.max_rss_kib =
        outcome.rows.iter().flat_map(|r| &r.trials).filter_map(|t| t.process.rusage.map(|u| u.max_rss_kib)).max().unwrap_or(0);
    run.cpu = Some(cpu);
    run.counts = Some(StatusCounts::of(outcome.rows.iter().map(|r| &r.status)));
}
