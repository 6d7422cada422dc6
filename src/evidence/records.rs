//! The record types of a run, with their schema versions. Every record
//! carries `"schema": "proofbench.<kind>/<major>"`; docs/RECORD-FORMAT.md
//! documents them field by field.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::trials::{RoundRecord, RowStop, TrialFacts, TrialRecord};
use crate::cli::Profile;
use crate::envelope::Envelope;
use crate::measure::counters::CounterRecord;
use crate::measure::interference::Interference;
use crate::measure::rusage::Rusage;
use crate::plan::{Cell, RunOptions, TrialPlan};
use crate::stats::{Sample, Summary, TrialEstimate};
use crate::workloads::contract::{Direction, TableShape, Unit};

pub const RUN_SCHEMA: &str = "proofbench.run/2";
pub const ROW_SCHEMA: &str = "proofbench.row/2";
pub const WORKER_SCHEMA: &str = "proofbench.worker-report/2";

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

/// Why a trial stopped taking samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// `--runs N` samples were taken.
    Fixed,
    /// The CI half-width of the trial's median reached the target.
    CiTarget,
    /// The trial's share of the cell's time budget was used up.
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
    /// The trial (worker process) that took it, from 0.
    #[serde(default)]
    pub trial: u32,
    /// Order taken within its trial, from 0, warmup samples first.
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
    /// Where the worker ran and what else ran meanwhile.
    #[serde(default)]
    pub facts: Option<TrialFacts>,
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
            facts: None,
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
    /// The first sample of each trial (a warmup sample when there is one):
    /// their median.
    pub first_value: f64,
    /// The row's headline median.
    pub steady_median: f64,
    /// first_value / steady_median.
    pub ratio: f64,
}

/// Statistics of a row: the headline over trials, and the descriptive
/// statistics of every timed sample pooled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowStats {
    /// The work window over trials: the median of the trial medians, its
    /// 95% interval, the spreads within and between trials, sensitivity.
    pub headline: TrialEstimate,
    /// The total window over trials, where the workload records one.
    pub total_headline: Option<TrialEstimate>,
    /// Of the work-window values of every timed sample, pooled.
    pub work: Summary,
    /// Of the total-window values, where the workload records them.
    pub total: Option<Summary>,
    pub cold: Option<ColdStart>,
}

/// The timed values of each trial, in trial order (trials without timed
/// samples left out).
fn by_trial(samples: &[SampleRecord], value: impl Fn(&SampleRecord) -> Option<f64>) -> Vec<Vec<f64>> {
    let mut trials: Vec<(u32, Vec<f64>)> = Vec::new();
    for s in samples.iter().filter(|s| !s.warmup) {
        let Some(v) = value(s) else { continue };
        match trials.iter_mut().find(|(t, _)| *t == s.trial) {
            Some((_, vs)) => vs.push(v),
            None => trials.push((s.trial, vec![v])),
        }
    }
    trials.sort_by_key(|(t, _)| *t);
    trials.into_iter().map(|(_, v)| v).collect()
}

impl RowStats {
    /// Statistics of the timed (non-warmup) samples, grouped by trial;
    /// `noise` is the band the sensitivity is computed for. `None` without
    /// any timed sample.
    pub fn of(samples: &[SampleRecord], noise: f64) -> Option<RowStats> {
        let work_trials = by_trial(samples, |s| Some(s.value));
        let slices: Vec<&[f64]> = work_trials.iter().map(Vec::as_slice).collect();
        let headline = crate::stats::estimate(&slices, noise)?;
        let all: Vec<f64> = work_trials.concat();
        let work = Summary::of(&Sample::new(&all).ok()?);
        let timed = samples.iter().filter(|s| !s.warmup).count();
        let totals = by_trial(samples, |s| s.total_value);
        let (total, total_headline) = if totals.iter().map(Vec::len).sum::<usize>() == timed {
            let slices: Vec<&[f64]> = totals.iter().map(Vec::as_slice).collect();
            (Sample::new(&totals.concat()).ok().map(|s| Summary::of(&s)), crate::stats::estimate(&slices, noise))
        } else {
            (None, None)
        };
        let mut firsts: Vec<(u32, f64)> = Vec::new();
        for s in samples {
            if !firsts.iter().any(|(t, _)| *t == s.trial) {
                firsts.push((s.trial, s.value));
            }
        }
        let first_values: Vec<f64> = firsts.iter().map(|(_, v)| *v).collect();
        let cold = (!first_values.is_empty()).then(|| {
            let first_value = crate::stats::median(&first_values);
            ColdStart {
                first_value,
                steady_median: headline.median,
                ratio: if headline.median != 0.0 { first_value / headline.median } else { f64::NAN },
            }
        });
        Some(RowStats { headline, total_headline, work, total, cold })
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
    /// The worst of its trials' statuses (ok only when every trial is ok).
    pub status: Status,
    pub reason: Option<String>,
    /// The first failing trial's verifier, else the last trial's, with the
    /// samples checked over every trial.
    pub verifier: Option<VerifierRecord>,
    /// How the first trial sampled (each trial's is in `trials`).
    pub measurement: Option<MeasurementRecord>,
    /// Every sample of every trial, each with its trial number.
    pub samples: Vec<SampleRecord>,
    pub stats: Option<RowStats>,
    /// The first trial's workload-specific facts.
    pub details: Value,
    /// The worker processes together: wall time and rusage summed, the
    /// last trial's pid and ending.
    pub process: ProcessRecord,
    /// Every trial's own account over its samples, summed.
    pub rusage_measured: Option<Rusage>,
    /// Counters over the timed samples of every trial (software always;
    /// hardware where permitted, else why not). Absent in rows without
    /// timed samples.
    #[serde(default)]
    pub counters: Option<CounterRecord>,
    /// The trials, in the order they ran.
    #[serde(default)]
    pub trials: Vec<TrialRecord>,
    /// The trials the plan asked for (`--trials`, or the profile's minimum).
    #[serde(default)]
    pub trials_planned: u32,
    /// Why the row stopped adding trials.
    #[serde(default)]
    pub stop: Option<RowStop>,
    /// When the trials disagree beyond their samples' noise: by how much,
    /// and the likely cause from what the trials recorded.
    #[serde(default)]
    pub disagreement: Option<String>,
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

    /// Headline median (the median of the trial medians), for ok rows with samples.
    pub fn median(&self) -> Option<f64> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().map(|s| s.headline.median)).flatten()
    }

    /// The headline's 95% interval, for ok rows that have one.
    pub fn interval(&self) -> Option<(f64, f64)> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().and_then(|s| s.headline.bounds())).flatten()
    }

    /// `(median, lo, hi)` for ok rows, the bounds equal to the median when
    /// there is no interval (a plot then draws no whisker).
    pub fn median_with_bounds(&self) -> Option<(f64, f64, f64)> {
        let m = self.median()?;
        let (lo, hi) = self.interval().unwrap_or((m, m));
        Some((m, lo, hi))
    }

    /// The headline over trials, for ok rows.
    pub fn headline(&self) -> Option<&TrialEstimate> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().map(|s| &s.headline)).flatten()
    }

    /// Median of the total window, for ok rows that have one.
    pub fn total_median(&self) -> Option<f64> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().and_then(|s| s.total_headline.as_ref()).map(|t| t.median)).flatten()
    }

    /// Trials whose interference made them disturbed.
    pub fn disturbed_trials(&self) -> usize {
        self.trials.iter().filter(|t| t.disturbed()).count()
    }

    /// A row recorded before trials (`proofbench.row/1`) as one trial of
    /// the current shape, its statistics recomputed from its samples.
    pub fn upgrade_from_v1(&mut self) {
        // What its one worker reported, as the row kept it.
        let report = WorkerReport {
            samples: self.samples.clone(),
            verifier: self.verifier.clone(),
            measurement: self.measurement.clone(),
            rusage_measured: self.rusage_measured,
            ..WorkerReport::new(self.status, self.reason.clone())
        };
        let trial = TrialRecord::from_report(0, 0, self.status, self.reason.clone(), self.process.clone(), &report);
        self.trials = vec![TrialRecord { started_utc: self.started_utc.clone(), finished_utc: self.finished_utc.clone(), ..trial }];
        self.trials_planned = 1;
        self.stop = Some(RowStop::Fixed);
        self.stats = RowStats::of(&self.samples, crate::stats::DEFAULT_NOISE);
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
    /// How many trials each cell gets (absent in runs before trials: one each).
    #[serde(default)]
    pub trials: Option<TrialPlan>,
    /// The rounds as they ran: each cell's next trial, in a shuffled order.
    #[serde(default)]
    pub rounds: Vec<RoundRecord>,
    /// What else took this machine's CPUs over the whole run (a local run only).
    #[serde(default)]
    pub interference: Option<Interference>,
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
