//! Facts of a run that several stages share: what the user asked for as the
//! records keep it ([`RunOptions`], from [`super::settings`]), the seed a run uses unless told
//! otherwise. (The moments the records hold are read by `measure::clock`.)

use serde::{Deserialize, Serialize};

use super::names::named_enum;

/// The seed of a run unless `--seed` is given (fixed, so that runs repeat).
pub const DEFAULT_SEED: u64 = 0x5EED_2026;

pub use super::settings::RunOptions;

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
