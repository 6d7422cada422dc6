//! The record types of a run, with their schema versions. Every record
//! carries `"schema": "proofbench.<kind>/<major>"`; docs/RECORD-FORMAT.md
//! documents them field by field.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::trials::{RoundRecord, RowStop, TrialRecord};
use super::worker::{MeasurementRecord, ProcessRecord, SampleRecord, VerifierRecord, WorkerReport};
use crate::envelope::Envelope;
use crate::measure::counters::CounterRecord;
use crate::measure::interference::Interference;
use crate::measure::rusage::Rusage;
use crate::model::run::RunOptions;
use crate::model::{Cell, Direction, Profile, TableShape, TrialPlan, Unit};
use crate::model::{SkipKind, Status};
use crate::stats::{Sample, Summary, TrialEstimate};

pub const RUN_SCHEMA: &str = "proofbench.run/2";
pub const ROW_SCHEMA: &str = "proofbench.row/2";

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
    /// Of a skipped row: whether its cell does not apply by design (the
    /// report lists it apart, not among the rows that are not ok) or this
    /// machine cannot run it; `null` for a row that is not skipped, and in
    /// records made before the distinction (read as the machine's).
    #[serde(default)]
    pub skip: Option<SkipKind>,
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
    /// A row of a variant: the sequential design its comparison with the
    /// base is decided by (the run's trial plan and `--equivalence`), so
    /// that whatever reads the row decides as the run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<crate::stats::decide::Design>,
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
    /// The profiling pass (`run --perf-pass`): absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::profile::ProfileRecord>,
}

impl Row {
    pub fn id(&self) -> &str {
        &self.cell.row_id
    }

    /// The axis values as text (`variant=b, workers=2`), or `-`: how
    /// `compare` and the history match rows.
    pub fn axes_text(&self) -> String {
        self.cell.axes_text_without("")
    }

    /// `2 of 3 trials disturbed (others took 38-46% of their CPUs, ...)`, for a
    /// row with disturbed trials. Here, beside the trials it reads, so that
    /// the report and `fleet` say it alike without `fleet` using `report`.
    pub fn disturbed_text(&self) -> Option<String> {
        let hit: Vec<&crate::measure::interference::Interference> =
            self.trials.iter().filter(|t| t.disturbed()).filter_map(|t| t.facts.as_ref()?.interference.as_ref()).collect();
        if hit.is_empty() {
            return None;
        }
        let range = |f: &dyn Fn(&&crate::measure::interference::Interference) -> f64| {
            let (lo, hi) = hit.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
            if (hi - lo) < 0.005 { format!("{:.0}%", 100.0 * hi) } else { format!("{:.0}-{:.0}%", 100.0 * lo, 100.0 * hi) }
        };
        let mut what = vec![format!("others took {} of their CPUs", range(&|i| i.others_share))];
        if hit.iter().any(|i| i.steal_ms > 0.0) {
            what.push(format!("the hypervisor stole {}", range(&|i| i.steal_share)));
        }
        if hit.iter().any(|i| i.pressure_share.is_some()) {
            what.push(format!("CPU pressure {}", range(&|i| i.pressure_share.unwrap_or(0.0))));
        }
        Some(format!("{} of {} trials disturbed ({})", hit.len(), self.trials.len(), what.join(", ")))
    }

    /// Whether the row was skipped because its cell does not apply by
    /// design (not because of the machine).
    pub fn skipped_by_design(&self) -> bool {
        self.status == Status::Skipped && self.skip == Some(SkipKind::ByDesign)
    }

    /// The code path its multiversioned kernel took (`details.code_path`),
    /// for rows of such a kernel (npb.ep, npb.cg, npb.mg).
    pub fn code_path(&self) -> Option<crate::model::isa::CodePath> {
        self.details.get(crate::model::isa::DETAIL)?.as_str().and_then(crate::model::isa::CodePath::from_name)
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

    /// Each trial's median of its timed samples, in trial order (empty
    /// without timed samples).
    pub fn trial_medians(&self) -> &[f64] {
        self.stats.as_ref().map_or(&[], |s| &s.headline.trial_medians)
    }

    /// The headline over trials, for ok rows.
    pub fn headline(&self) -> Option<&TrialEstimate> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().map(|s| &s.headline)).flatten()
    }

    /// Median of the total window, for ok rows that have one.
    pub fn total_median(&self) -> Option<f64> {
        (self.status == Status::Ok).then(|| self.stats.as_ref().and_then(|s| s.total_headline.as_ref()).map(|t| t.median)).flatten()
    }

    /// Each trial's median of its total window, in trial order (empty
    /// without a total window).
    pub fn total_trial_medians(&self) -> &[f64] {
        self.stats.as_ref().and_then(|s| s.total_headline.as_ref()).map_or(&[], |t| &t.trial_medians)
    }

    /// Whether a signal ended the run before this row's planned trials (it
    /// is kept with the trials that finished).
    pub fn cut_short(&self) -> bool {
        self.stop == Some(RowStop::Interrupted) && (self.trials.len() as u32) < self.trials_planned
    }

    /// What makes the row's status one its trials could not give, if
    /// anything: a row is made from at least one trial, and its status is
    /// its first trial's that is not ok, else ok (`runner::compose`). A
    /// row read from elsewhere (a launched side's stream) is checked so.
    pub fn status_contradiction(&self) -> Option<String> {
        let Some(last) = self.trials.last() else { return Some("without a trial".into()) };
        let deciding = self.trials.iter().find(|t| t.status != Status::Ok).unwrap_or(last);
        (deciding.status != self.status)
            .then(|| format!("as {}, where its trial {} is {}", self.status.as_str(), deciding.trial + 1, deciding.status.as_str()))
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

crate::model::named_enum! {
    /// What a run was for.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum RunKind {
        /// `proofbench run`.
        #[default]
        Run = "run",
        /// `proofbench noise`: the selection as two identical variants, the
        /// machine's noise profile.
        Noise = "noise",
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
    /// `run` or `noise` (absent in runs before it: `run`).
    #[serde(default)]
    pub kind: RunKind,
    /// The variants every cell was measured under (`--variant`), the base
    /// marked; empty in a run without variants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<crate::model::Variant>,
}

/// `incomplete: N of M cells ran` for a run without its finish record
/// (`finished` false: it was killed, or it is still running), `None` for a
/// run that has one.
pub fn incomplete_text(finished: bool, ran: usize, planned: usize) -> Option<String> {
    (!finished).then(|| format!("incomplete: {ran} of {planned} cells ran"))
}

/// How a run that did not run every planned cell stands: `incomplete: N of
/// M cells ran` without its finish record (see [`incomplete_text`]),
/// `interrupted: N of M cells ran` when a signal ended it early, `ended
/// early: N of M cells ran` when it finished without them otherwise;
/// `None` for a run that finished with every cell.
pub fn state_text(finished: bool, interrupted: bool, ran: usize, planned: usize) -> Option<String> {
    incomplete_text(finished, ran, planned).or_else(|| {
        (ran < planned).then(|| format!("{}: {ran} of {planned} cells ran", if interrupted { "interrupted" } else { "ended early" }))
    })
}

impl RunRecord {
    /// The submission this run was one machine's run of, which every run of
    /// that submission shares: the `--hosts` invocation that launched it
    /// ([`LauncherRecord::submission`]), else the Slurm submission its job
    /// belonged to ([`crate::envelope::SlurmFacts::submission`]); `None` for
    /// a run made on its own.
    pub fn submission(&self) -> Option<String> {
        self.launcher
            .as_ref()
            .and_then(|l| l.submission.clone())
            .or_else(|| self.envelope.slurm.as_ref().and_then(crate::envelope::SlurmFacts::submission))
    }

    /// The planned cells that have no row in `rows`.
    ///
    /// Cost: O(plan + rows).
    pub fn cells_without_row<'a>(&'a self, rows: &[Row]) -> Vec<&'a Cell> {
        let ran: std::collections::HashSet<usize> = rows.iter().map(|r| r.cell.index).collect();
        self.plan.iter().filter(|c| !ran.contains(&c.index)).collect()
    }

    /// `incomplete: N of M cells ran` when the run has no finish record
    /// (killed, or still running; see [`incomplete_text`]).
    pub fn incomplete(&self, rows: &[Row]) -> Option<String> {
        let planned = self.plan.len();
        incomplete_text(self.finished_utc.is_some(), planned - self.cells_without_row(rows).len(), planned)
    }
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
    /// The `--hosts` invocation this run was one host's run of (`hosts
    /// 20260101T000000Z-k3x9qa`: its start time and a random tag), which
    /// every host's run of that invocation shares. Named by the launching
    /// side, never by the launched one. Absent for a run of one launcher,
    /// and in runs recorded before the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission: Option<String>,
}
