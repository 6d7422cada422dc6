//! The measurement profile (`quick`, `full`, `seed`): the size of every
//! parameter, and the trials, budgets and timeout each profile defaults to.

use std::time::Duration;

use clap::ValueEnum;

use super::names::named_enum;

named_enum! {
    /// Measurement profile: the size of every parameter.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
    pub enum Profile {
        /// Seconds per workload (the default).
        Quick = "quick",
        /// Minutes: larger sizes, more samples.
        Full = "full",
        /// The exact parameters of the source documents.
        Seed = "seed",
    }
}

impl Profile {
    /// The per-cell timeout when `--timeout` is not given.
    pub fn default_timeout(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_secs(60),
            Profile::Full | Profile::Seed => Duration::from_secs(600),
        }
    }
}

/// The least time budget one trial's timed samples may have.
pub const MIN_TRIAL_BUDGET_MS: u64 = 10;

/// A profile's defaults for trials and their samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileDefaults {
    /// Trials every cell gets.
    pub trials: u32,
    /// Trials every cell gets when it is measured under two or more
    /// variants: the first look of their decided verdicts (`stats::decide`),
    /// after which a row takes more pairs only until it is SAME or
    /// DIFFERENT.
    pub paired_trials: u32,
    /// Trials a cell may get while its interval is wider than the target.
    pub max_trials: u32,
    /// Time budget for the timed samples of one cell, over its trials, ms.
    pub cell_budget_ms: u64,
    /// No extra round starts after this much of the run, ms.
    pub run_budget_ms: u64,
}

impl ProfileDefaults {
    /// The defaults of a profile (docs/METHODOLOGY.md says why these).
    pub fn of(profile: Profile) -> ProfileDefaults {
        match profile {
            Profile::Quick => ProfileDefaults { trials: 3, paired_trials: 3, max_trials: 10, cell_budget_ms: 900, run_budget_ms: 150_000 },
            Profile::Full => {
                ProfileDefaults { trials: 5, paired_trials: 5, max_trials: 10, cell_budget_ms: 10_000, run_budget_ms: 4 * 3_600_000 }
            }
            Profile::Seed => {
                ProfileDefaults { trials: 5, paired_trials: 5, max_trials: 10, cell_budget_ms: 20_000, run_budget_ms: 8 * 3_600_000 }
            }
        }
    }
}
