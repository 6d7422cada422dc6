//! The record types of a run, with their schema versions. Every record
//! carries `"schema": "proofbench.<kind>/<major>"`; docs/RECORD-FORMAT.md
//! documents them field by field.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::Profile;
use crate::envelope::Envelope;
use crate::measure::counters::CounterRecord;
use crate::measure::rusage::Rusage;
use crate::plan::{Cell, RunOptions};
use crate::stats::{Sample, Summary};
use crate::workloads::contract::{Direction, TableShape, Unit};

pub const RUN_SCHEMA: &str = "proofbench.run/1";
pub const ROW_SCHEMA: &str = "proofbench.row/1";
pub const WORKER_SCHEMA: &str = "proofbench.worker-report/1";

/// The verdict of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran and verified: a performance result.
    Ok,
    /// Ran, but the verifier failed: never in a performance table.
    Invalid,
    /// Crashed or returned an error (exit code or signal recorded).
    Failed,
    /// Killed after the per-cell timeout.
    Timeout,
    /// Not possible on this machine; the reason says why.
    Skipped,
}

impl Status {
    pub const ALL: [Status; 5] = [Status::Ok, Status::Invalid, Status::Failed, Status::Timeout, Status::Skipped];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Invalid => "invalid",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Skipped => "skipped",
        }
    }

    /// Whether this status makes `run` exit with 1.
    pub fn is_failure(self) -> bool {
        matches!(self, Status::Invalid | Status::Failed | Status::Timeout)
    }
}

/// Why sampling stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// `--runs N` samples were taken.
    Fixed,
    /// The CI half-width of the median reached the target.
    CiTarget,
    /// The cell's time budget was used up.
    Budget,
    /// The sample cap was reached.
    Cap,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Fixed => "fixed",
            StopReason::CiTarget => "ci-target",
            StopReason::Budget => "budget",
            StopReason::Cap => "cap",
        }
    }
}

/// One sample: one timed execution of the cell's work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Order taken, from 0, warmup samples first.
    pub index: u32,
    /// Warmup samples are kept but excluded from the statistics.
    pub warmup: bool,
    /// Iterations batched into this sample (1 unless the workload is batched).
    pub iters: u64,
    /// Operations the sample did.
    pub ops: u64,
    /// Bytes the sample moved (MB/s rows).
    pub bytes: u64,
    /// The work window, nanoseconds.
    pub work_ns: u64,
    /// The total window (e.g. spawn + work + join), where the workload has one.
    pub total_ns: Option<u64>,
    /// The work window in the row's unit.
    pub value: f64,
    /// The total window in the row's unit.
    pub total_value: Option<f64>,
}

/// What the verifier found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerifierRecord {
    /// The workload's verifier, in words.
    pub description: String,
    pub passed: bool,
    /// Expected value, and what it was derived from.
    pub expected: String,
    /// Value observed (the first failing sample's, or the last sample's).
    pub observed: String,
    /// How many samples were checked (calibration, warmup and timed).
    pub checked_samples: u32,
}

/// How the samples were taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementRecord {
    pub clock: String,
    pub clock_resolution_ns: u64,
    /// Median cost of reading the clock, nanoseconds.
    pub timer_overhead_ns: f64,
    /// Batched workloads: cost of one empty loop iteration, nanoseconds.
    pub loop_overhead_ns_per_iter: Option<f64>,
    /// Whether timer/loop overhead was subtracted from the values (it is not).
    pub overhead_subtracted: bool,
    pub iters_per_sample: u64,
    /// Batched workloads: samples spent finding `iters_per_sample`.
    pub calibration_samples: u32,
    /// Batched workloads: the warmup samples were shorter than the target,
    /// so the batch grew once more before the timed samples.
    pub iters_grown_after_warmup: bool,
    pub prepare_ms: f64,
    pub settle_ms: u64,
    pub warmup_samples: u32,
    pub timed_samples: u32,
    /// Wall time of the timed samples, milliseconds.
    pub timed_phase_ms: f64,
    pub stop_reason: Option<StopReason>,
    /// Relative CI half-width of the median when sampling stopped.
    pub ci_rel_half_width_at_stop: Option<f64>,
}

/// The one line a worker prints on its report channel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    pub schema: String,
    pub status: Status,
    pub reason: Option<String>,
    pub samples: Vec<SampleRecord>,
    pub verifier: Option<VerifierRecord>,
    pub measurement: Option<MeasurementRecord>,
    pub details: Value,
    /// The worker process's own account from the first warmup sample to the
    /// last timed sample.
    pub rusage_measured: Option<Rusage>,
    /// Software and hardware counters over the timed samples.
    #[serde(default)]
    pub counters: Option<CounterRecord>,
}

impl WorkerReport {
    pub fn new(status: Status, reason: Option<String>) -> WorkerReport {
        WorkerReport {
            schema: WORKER_SCHEMA.to_string(),
            status,
            reason,
            samples: Vec::new(),
            verifier: None,
            measurement: None,
            details: Value::Null,
            rusage_measured: None,
            counters: None,
        }
    }
}

/// How the worker process ended, from the parent's side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub signal_name: Option<String>,
    pub timed_out: bool,
    /// Wall time from spawn to reap, milliseconds.
    pub wall_ms: f64,
    /// The kernel's account of the worker and its reaped children (wait4).
    pub rusage: Option<Rusage>,
}

/// The cold first sample against the steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColdStart {
    /// The first sample of the cell (a warmup sample when there is one).
    pub first_value: f64,
    /// Median of the timed samples.
    pub steady_median: f64,
    /// first_value / steady_median.
    pub ratio: f64,
}

/// Statistics of a row's timed samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowStats {
    /// Of the work-window values.
    pub work: Summary,
    /// Of the total-window values, where the workload records them.
    pub total: Option<Summary>,
    pub cold: Option<ColdStart>,
}

impl RowStats {
    /// Statistics of the timed (non-warmup) samples; `None` without any.
    pub fn of(samples: &[SampleRecord], seed: u64) -> Option<RowStats> {
        let timed: Vec<&SampleRecord> = samples.iter().filter(|s| !s.warmup).collect();
        let work_values: Vec<f64> = timed.iter().map(|s| s.value).collect();
        let work = Summary::of(&Sample::new(&work_values).ok()?, seed);
        let totals: Vec<f64> = timed.iter().filter_map(|s| s.total_value).collect();
        let total = (totals.len() == timed.len()).then(|| Sample::new(&totals).ok()).flatten().map(|s| Summary::of(&s, seed));
        let cold = samples.first().map(|first| ColdStart {
            first_value: first.value,
            steady_median: work.median,
            ratio: if work.median != 0.0 { first.value / work.median } else { f64::NAN },
        });
        Some(RowStats { work, total, cold })
    }
}

/// The evidence record of one cell (one line of rows.jsonl).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub schema: String,
    /// The cell as planned: workload, parameters, axes, placement, sampling.
    pub cell: Cell,
    /// The workload's one-line summary.
    pub summary: String,
    /// How the report tabulates the row.
    pub shape: TableShape,
    pub unit: Unit,
    pub direction: Direction,
    /// The workload's timed region, in words.
    pub timed_region: String,
    /// What the total window adds, where there is one.
    pub total_window: Option<String>,
    pub status: Status,
    pub reason: Option<String>,
    pub verifier: Option<VerifierRecord>,
    pub measurement: Option<MeasurementRecord>,
    pub samples: Vec<SampleRecord>,
    pub stats: Option<RowStats>,
    pub details: Value,
    pub process: ProcessRecord,
    pub rusage_measured: Option<Rusage>,
    /// Counters over the timed samples (software always; hardware where
    /// permitted, else why not). Absent in rows without timed samples.
    #[serde(default)]
    pub counters: Option<CounterRecord>,
    /// Last lines of the worker's stderr (the whole of it is in `log`).
    pub stderr_tail: String,
    /// Paths relative to the run directory.
    pub log: String,
    pub raw: Option<String>,
    pub started_utc: String,
    pub finished_utc: String,
}

impl Row {
    pub fn id(&self) -> &str {
        &self.cell.row_id
    }

    /// Headline median, for ok rows with samples.
    pub fn median(&self) -> Option<f64> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().map(|s| s.work.median)).flatten()
    }

    /// Median of the total window, for ok rows that have one.
    pub fn total_median(&self) -> Option<f64> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().and_then(|s| s.total.as_ref()).map(|t| t.median)).flatten()
    }
}

/// Counts of rows per status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCounts {
    pub ok: usize,
    pub invalid: usize,
    pub failed: usize,
    pub timeout: usize,
    pub skipped: usize,
}

impl StatusCounts {
    pub fn of<'a>(statuses: impl IntoIterator<Item = &'a Status>) -> StatusCounts {
        let mut c = StatusCounts::default();
        for s in statuses {
            *match s {
                Status::Ok => &mut c.ok,
                Status::Invalid => &mut c.invalid,
                Status::Failed => &mut c.failed,
                Status::Timeout => &mut c.timeout,
                Status::Skipped => &mut c.skipped,
            } += 1;
        }
        c
    }

    pub fn failures(&self) -> usize {
        self.invalid + self.failed + self.timeout
    }
}

/// CPU time the run cost, from the kernel's accounting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCpu {
    /// This process (the parent).
    pub parent: Rusage,
    /// Every worker and their children.
    pub workers: Rusage,
}

/// run.json: the envelope, the plan and how the run went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    /// The run directory's name.
    pub id: String,
    pub label: String,
    /// The commit of the system under test (`--commit`, default the `git
    /// rev-parse HEAD` of the directory proofbench ran in; `None` outside a
    /// git repository). Absent in runs written before it existed.
    #[serde(default)]
    pub commit: Option<String>,
    pub profile: Profile,
    pub seed: u64,
    pub options: RunOptions,
    pub envelope: Envelope,
    pub plan: Vec<Cell>,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    pub wall_s: Option<f64>,
    pub cpu: Option<RunCpu>,
    /// Whether the run ended early on SIGINT/SIGTERM.
    pub interrupted: bool,
    /// Whether every planned cell has a row.
    pub complete: bool,
    pub counts: Option<StatusCounts>,
    /// Row ids of planned cells that have no row (interrupted runs).
    pub not_run: Vec<String>,
    /// The launcher the run went through (`--launcher`); absent for a local
    /// run. The envelope is then the launched side's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<LauncherRecord>,
}

/// How a run reached the machine it ran on (`run --launcher`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LauncherRecord {
    /// `--launcher` as typed, `{host}` included.
    pub template: String,
    /// The host of `--hosts` this run went to.
    pub host: Option<String>,
    /// The prefix words every launched process started with.
    pub prefix: Vec<String>,
    /// The proofbench binary on the launched side.
    pub remote_exe: String,
    /// The hostname of the machine that launched the run.
    pub launched_from: Option<String>,
}
