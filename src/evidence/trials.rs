//! The records of trials and rounds: what each worker process of a row did
//! and saw, why a row stopped adding trials, and the order of each round.

use serde::{Deserialize, Serialize};

use super::worker::{MeasurementRecord, ProcessRecord, TrialFacts, WorkerReport};
use crate::measure::rusage::Rusage;
use crate::model::{SkipKind, Status};

crate::model::named_enum! {
    /// Why a row stopped adding trials.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum RowStop {
        /// `--trials N`: exactly the trials asked for.
        Fixed = "fixed",
        /// The interval's half-width was within the target.
        CiTarget = "ci-target",
        /// Still wider than the target at `--max-trials`.
        MaxTrials = "max-trials",
        /// Still wider than the target, but the run's budget had no room for more.
        RunBudget = "run-budget",
        /// A trial was not ok (failed, invalid, timed out or skipped): no more were run.
        NotOk = "not-ok",
        /// The run was interrupted before the planned trials.
        Interrupted = "interrupted",
        /// Another variant of the same cell was not ok: the variants of a cell
        /// stop together, so that their rounds keep pairing them.
        VariantNotOk = "variant-not-ok",
        /// The variants' comparison was decided: SAME or DIFFERENT for every
        /// candidate against the base (`stats::decide`).
        Decided = "decided",
    }
}

/// One trial of a row: one worker process, as the parent saw it end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// From 0, in the order the row's trials ran.
    pub trial: u32,
    /// The round it ran in, from 0.
    pub round: u32,
    pub status: Status,
    pub reason: Option<String>,
    /// Of a skipped trial: whether its cell does not apply by design or
    /// this machine cannot run it (`null` otherwise, and in records made
    /// before the distinction: read as the machine's).
    #[serde(default)]
    pub skip: Option<SkipKind>,
    pub started_utc: String,
    pub finished_utc: String,
    /// How the worker process ended (pid, exit, wall time, rusage).
    pub process: ProcessRecord,
    pub warmup_samples: u32,
    pub timed_samples: u32,
    /// Median of its timed samples.
    pub median: Option<f64>,
    /// Whether its verifier passed every sample it checked (`None`: it never ran).
    pub verified: Option<bool>,
    /// How it sampled (batch size, stopping reason...).
    pub measurement: Option<MeasurementRecord>,
    pub rusage_measured: Option<Rusage>,
    /// Where it ran and what else ran meanwhile (absent when it measured nothing).
    pub facts: Option<TrialFacts>,
    /// The lockstep set it ran in (`run --lockstep`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lockstep: Option<LockstepRecord>,
    /// Why a trial of a `--lockstep` run ran one after its partners
    /// instead (a worker that does not take turns); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_in_lockstep: Option<String>,
}

/// A trial that ran as one side of a lockstep set: its worker alive with the
/// other variants' workers, their timed samples taken in turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockstepRecord {
    /// This trial's side in the set, from 0 (A).
    pub side: u32,
    /// The row ids of the set's sides, in side order.
    pub sides: Vec<String>,
    /// The one CPU every side ran on (cells of one thread); `None`: each
    /// kept its own placement.
    pub cpu: Option<usize>,
}

impl TrialRecord {
    /// The record of trial `trial` (in round `round`) from how its worker
    /// process ended and what the worker reported.
    pub fn from_report(
        trial: u32,
        round: u32,
        status: Status,
        reason: Option<String>,
        process: ProcessRecord,
        report: &WorkerReport,
    ) -> TrialRecord {
        let timed: Vec<f64> = report.samples.iter().filter(|s| !s.warmup).map(|s| s.value).collect();
        TrialRecord {
            trial,
            round,
            status,
            reason,
            // A skip the worker did not qualify (an older worker) is the machine's.
            skip: (status == Status::Skipped).then(|| report.skip.unwrap_or(SkipKind::Machine)),
            started_utc: String::new(),
            finished_utc: String::new(),
            process,
            warmup_samples: report.samples.iter().filter(|s| s.warmup).count() as u32,
            timed_samples: timed.len() as u32,
            median: (!timed.is_empty()).then(|| crate::stats::median(&timed)),
            verified: report.verifier.as_ref().map(|v| v.passed),
            measurement: report.measurement.clone(),
            rusage_measured: report.rusage_measured,
            facts: report.facts.clone(),
            lockstep: None,
            not_in_lockstep: None,
        }
    }

    /// Whether other processes or the hypervisor took a share of its CPUs.
    pub fn disturbed(&self) -> bool {
        self.facts.as_ref().and_then(|f| f.interference.as_ref()).is_some_and(|i| i.disturbed)
    }
}

/// One round: every cell still measuring runs its next trial, in an order
/// shuffled from the run's seed and the round's number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// From 0.
    pub index: u32,
    /// Cell indices (`cell.index`) in the order their trials ran.
    pub order: Vec<usize>,
    pub started_utc: String,
    pub finished_utc: Option<String>,
}
