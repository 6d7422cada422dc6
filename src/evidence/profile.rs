//! The record of a row's profiling pass (`run --perf-pass`): one extra run
//! of the row's worker under perf, outside its timed samples and their
//! statistics, and a command workload's own `[workload.profile]` command
//! run once the same way. Its files are under `profiles/<row>/`; the record
//! holds what the report shows of them (perf stat's counts, `perf report`'s
//! top lines), so that the report stays a function of the records.

use serde::{Deserialize, Serialize};

use crate::model::PerfPass;

crate::model::named_enum! {
    /// How a profiling pass ended.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum ProfileStatus {
        /// It ran and left its files.
        Ok = "ok",
        /// It did not run: the reason says why (perf missing or not
        /// permitted, a row not ok, a launched run, an interrupted run).
        Skipped = "skipped",
        /// It ran and went wrong: the reason says how. The row is unaffected.
        Failed = "failed",
    }
}

/// The profiling pass of one row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    /// `stat` or `record` (`--perf-pass`).
    pub mode: PerfPass,
    /// How the host-side pass (perf around the worker) ended.
    pub status: ProfileStatus,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
    /// What `perf --version` said (absent when perf was not found).
    pub perf_version: Option<String>,
    /// The words perf ran with, before the worker's own (paths relative to
    /// the run directory); empty when it did not run.
    #[serde(default)]
    pub command: Vec<String>,
    /// Spawn to reap of the profiled worker, ms.
    pub wall_ms: Option<f64>,
    /// The files the pass left, paths relative to the run directory.
    #[serde(default)]
    pub files: Vec<ProfileFile>,
    /// `stat`: each event's count as perf stat printed it.
    #[serde(default)]
    pub counters: Vec<PerfCounter>,
    /// `record`: the samples perf recorded (the flame graph's width).
    pub samples: Option<u64>,
    /// `record`: the first 20 lines of `perf report --stdio --no-children
    /// -g none`, its `#` header left out.
    #[serde(default)]
    pub top: Vec<String>,
    /// The command workload's `[workload.profile]` command (the guest-side
    /// pass); absent for a workload without one.
    pub guest: Option<GuestProfile>,
}

crate::model::named_enum! {
    /// What a file of a profiling pass holds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum ProfileFileKind {
        /// perf's and the profiled worker's stderr.
        Log = "log",
        /// perf stat's CSV output.
        PerfStat = "perf-stat",
        /// perf record's data.
        PerfData = "perf-data",
        /// `perf report`'s top 20.
        PerfReport = "perf-report",
        /// One `stack count` line per call stack: the flame graph's input.
        FoldedStacks = "folded-stacks",
        /// The flame graph (SVG).
        FlameGraph = "flame-graph",
    }
}

/// One file of a profiling pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileFile {
    pub kind: ProfileFileKind,
    /// Relative to the run directory: `profiles/<row>/<file>`.
    pub path: String,
}

/// One event of perf stat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerfCounter {
    /// The event as perf names it (`task-clock`, `context-switches`, ...).
    pub event: String,
    /// Its count (`null` when perf could not count it).
    pub value: Option<f64>,
    /// The unit perf gave (`msec` for task-clock), empty for counts.
    pub unit: String,
    /// Why there is no value: perf's `<not supported>` or `<not counted>`.
    pub note: Option<String>,
}

/// The guest-side pass: a command workload's `[workload.profile]` command,
/// run once in a worker like one sample of the workload, its output kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuestProfile {
    pub status: ProfileStatus,
    pub reason: Option<String>,
    /// The command as run, its placeholders filled.
    pub command: Vec<String>,
    /// Spawn to reap of its worker, ms.
    pub wall_ms: Option<f64>,
    /// `profiles/<row>/guest.log`: the worker's stderr, which holds the
    /// command's output (stdout, then stderr).
    pub output: Option<String>,
}

impl ProfileRecord {
    /// A pass that did not run, and why.
    pub fn skipped(mode: PerfPass, reason: impl Into<String>) -> ProfileRecord {
        ProfileRecord {
            mode,
            status: ProfileStatus::Skipped,
            reason: Some(reason.into()),
            perf_version: None,
            command: Vec::new(),
            wall_ms: None,
            files: Vec::new(),
            counters: Vec::new(),
            samples: None,
            top: Vec::new(),
            guest: None,
        }
    }
}
