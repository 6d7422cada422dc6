//! What a run's observers hear: each trial and row as it ends (criterion's
//! `Report` pattern), so that the rounds know nothing of progress bars,
//! terminal tables, JSON streams, plots or the history. Adding an output is
//! one more implementation of [`Observer`].

use std::path::Path;

use crate::evidence::{Row, RunDir, TrialRecord};
use crate::model::Cell;

/// What happens during a run, as the observers see it. Every method does
/// nothing unless an observer overrides it.
pub trait Observer {
    /// Round `round` starts; `coming` trials are now planned from here on.
    fn round_started(&mut self, _round: u32, _coming: usize) {}
    fn trial_started(&mut self, _cell: &Cell, _trial: u32, _round: u32) {}
    fn trial_finished(&mut self, _cell: &Cell, _trial: &TrialRecord) {}
    /// A row was decided and written (`rows`: every row so far, it last).
    fn row_finished(&mut self, _row: &Row, _rows: &[Row], _dir: &RunDir) -> anyhow::Result<()> {
        Ok(())
    }
    /// The run's records are final in `dir`.
    fn run_finished(&mut self, _dir: &Path) -> anyhow::Result<()> {
        Ok(())
    }
}
