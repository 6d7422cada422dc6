//! What a run's observers hear: each trial and row as it ends (criterion's
//! `Report` pattern), so that the rounds know nothing of progress bars,
//! terminal tables, JSON streams, plots or the history. Adding an output is
//! one more implementation of [`Observer`].
//!
//! The observers themselves are in `observers` ([`Observers`] fans a run
//! out to them), the progress bar and lines in `progress`.

pub mod observers;
pub mod progress;

pub use observers::Observers;

use std::path::Path;

use crate::evidence::{Row, RunDir, TrialRecord};
use crate::model::Cell;

/// What a round's start knows of the trials still to come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Coming {
    /// Trials in this round.
    pub this_round: usize,
    /// Trials of the plan's minimum still to run, this round's included (0
    /// from the first round past the minimum).
    pub planned: usize,
    /// The most extra trials (past the minimum, for rows whose interval is
    /// still wide) that may still run, this round's included: every cell
    /// still measuring taken to the plan's maximum. Never more than at the
    /// round before: cells only leave.
    pub extra_at_most: usize,
    /// The plan's fewest and most trials per cell: the rounds planned, and
    /// the most there may be.
    #[serde(default)]
    pub min_trials: u32,
    #[serde(default)]
    pub max_trials: u32,
}

impl Coming {
    /// What round `round` (from 0) of `cells` cells, each with `round`
    /// trials so far, leaves to come under a plan of `min` to `max` trials.
    pub fn at(round: u32, cells: usize, min: u32, max: u32) -> Coming {
        Coming {
            this_round: cells,
            planned: cells * min.saturating_sub(round) as usize,
            extra_at_most: cells * max.saturating_sub(round.max(min)) as usize,
            min_trials: min,
            max_trials: max,
        }
    }
}

/// What happens during a run, as the observers see it. Every method does
/// nothing unless an observer overrides it.
pub trait Observer {
    /// Round `round` starts, with what is still to come.
    fn round_started(&mut self, _round: u32, _coming: &Coming) {}
    fn trial_started(&mut self, _cell: &Cell, _trial: u32, _round: u32) {}
    fn trial_finished(&mut self, _cell: &Cell, _trial: &TrialRecord) {}
    /// A row was decided and written to `dir` (an observer that needs the
    /// rows so far reads them there: a run of 100,000 rows is not held in
    /// memory).
    fn row_finished(&mut self, _row: &Row, _dir: &RunDir) -> anyhow::Result<()> {
        Ok(())
    }
    /// The run's records are final in `dir`.
    fn run_finished(&mut self, _dir: &Path) -> anyhow::Result<()> {
        Ok(())
    }
}
