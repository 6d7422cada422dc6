//! Facts of a run that several stages share: what the user asked for as the
//! records keep it ([`RunOptions`]), the seed a run uses unless told
//! otherwise. (The moments the records hold are read by `measure::clock`.)

use serde::{Deserialize, Serialize};

use super::names::named_enum;
use super::{PinStrategy, Profile};

/// The seed of a run unless `--seed` is given (fixed, so that runs repeat).
pub const DEFAULT_SEED: u64 = 0x5EED_2026;

/// What the user asked for: validated by clap, not yet resolved against the
/// registry and the topology. `run.json` records it as `options`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub selection: Vec<String>,
    pub profile: Profile,
    pub workers: Option<String>,
    pub oversubscribe: bool,
    /// Pinning strategies; more than one makes `pin` an axis.
    pub pin: Vec<PinStrategy>,
    /// `--runtime`: the values of the `runtime` axis, as typed.
    pub runtime: Option<String>,
    /// `--allocator`: the values of the `allocator` axis, as typed.
    #[serde(default)]
    pub allocator: Option<String>,
    /// `--compare-cores` or `--compare-strategies`.
    pub compare: Option<CompareMode>,
    pub runs: Option<u32>,
    /// `--trials N`: trials per cell (exactly N unless `--max-trials`).
    #[serde(default)]
    pub trials: Option<u32>,
    /// `--max-trials N`: the most trials a cell may get.
    #[serde(default)]
    pub max_trials: Option<u32>,
    /// `--run-budget`: no extra round starts after this much of the run, ms.
    #[serde(default)]
    pub run_budget_ms: Option<u64>,
    pub time_budget_ms: Option<u64>,
    pub timeout_ms: u64,
    pub warmup: Option<u32>,
    pub settle_ms: Option<u64>,
    pub ci_target_pct: Option<f64>,
    pub params: Vec<String>,
    pub include_selftest: bool,
    /// Where the cells' scratch directories go (`--io-dir`; `null`: the system temp dir).
    pub io_dir: Option<String>,
    /// A fault to inject into the selected workloads that have it (tests only).
    pub inject_fault: Option<String>,
    /// `--variant NAME=SPEC`, as typed (none: a run without variants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// `--base NAME`: the variant the others are compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// `--perf-pass`: one extra run of each ok row's worker under perf,
    /// outside the timed samples (absent: no profiling pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_pass: Option<PerfPass>,
    /// `--lockstep`: the variants of a cell run as one set of worker
    /// processes alive together, taking their timed samples in turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lockstep: bool,
    /// `--equivalence`: the band of SAME for the variants' decided
    /// verdicts, a fraction (absent: 2%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
}

named_enum! {
    /// The profiling pass of `run --perf-pass`: how perf watches the one
    /// extra run of each row's worker.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
    pub enum PerfPass {
        /// `perf stat`: counts of events (software events where the machine
        /// has no PMU).
        Stat = "stat",
        /// `perf record -g`: sampled call stacks, with a `perf report` top
        /// and a flame graph.
        Record = "record",
    }
}

/// A preset of the worker and pinning axes (RustFiber's comparison modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompareMode {
    /// One pinning strategy at every worker count.
    Cores,
    /// Every pinning strategy at the largest worker count (the allowed physical cores).
    Strategies,
}
