//! What a worker process reports for one trial (its samples, verifier,
//! measurement, counters and what it saw of the machine), and how the
//! parent saw the process end.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::measure::counters::CounterRecord;
use crate::measure::interference::Interference;
use crate::measure::rusage::Rusage;
use crate::model::{SkipKind, Status};

pub const WORKER_SCHEMA: &str = "proofbench.worker-report/2";

crate::model::named_enum! {
    /// Why a trial stopped taking samples.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum StopReason {
        /// `--runs N` samples were taken.
        Fixed = "fixed",
        /// The CI half-width of the trial's median reached the target.
        CiTarget = "ci-target",
        /// The trial's share of the cell's time budget was used up.
        Budget = "budget",
        /// The sample cap was reached.
        Cap = "cap",
        /// The runner ended a lockstep pair's timed loop (its sample pairs
        /// were taken, or the other side failed).
        Lockstep = "lockstep",
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
    /// Of a skipped cell: whether it does not apply by design or this
    /// machine cannot run it (absent from older workers: the machine's).
    #[serde(default)]
    pub skip: Option<SkipKind>,
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
    /// The report of a cell skipped for `reason`, of the kind `kind`.
    pub fn skipped(kind: SkipKind, reason: String) -> WorkerReport {
        WorkerReport { skip: Some(kind), ..WorkerReport::new(Status::Skipped, Some(reason)) }
    }

    pub fn new(status: Status, reason: Option<String>) -> WorkerReport {
        WorkerReport {
            schema: WORKER_SCHEMA.to_string(),
            status,
            reason,
            skip: None,
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

/// What a trial's worker saw of the machine over its warmup and timed
/// samples: where its threads ran, how its memory was backed, and what else
/// took the CPUs it could use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialFacts {
    /// The CPUs the worker was allowed when it started (affinity and cpuset).
    pub allowed_cpus: Vec<usize>,
    /// The CPUs its live threads last ran on when the samples ended.
    pub thread_cpus: Vec<usize>,
    /// AnonHugePages of the whole worker when the samples ended, bytes.
    pub anon_huge_bytes: Option<u64>,
    /// Other processes' CPU time, steal and CPU pressure over the samples.
    pub interference: Option<Interference>,
}
