//! runner::stream: what the launched side of a launched run says
//! ([`Event`], one JSON line each on its stdout) and the observer that says
//! it ([`StreamOut`]). The launching side reads it in [`super::remote`].

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::evidence::{Row, RunDir, RunRecord, TrialRecord};
use crate::model::Cell;

use super::observer::{Coming, Observer};
use super::signals;

/// The first thing the launched side says, so that a launcher that prints
/// something else (a login banner on stdout) is told apart from a stream.
pub const STREAM_SCHEMA: &str = "proofbench-stream/1";

/// One line of the stream from the launched side.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// The run's record as it starts: the launched side's envelope and plan.
    Start {
        schema: String,
        run: Box<RunRecord>,
    },
    RoundStarted {
        round: u32,
        coming: Coming,
    },
    TrialStarted {
        cell: usize,
        trial: u32,
        round: u32,
    },
    TrialFinished {
        cell: usize,
        trial: Box<TrialRecord>,
    },
    /// A row as it is decided, with the text its trials' workers wrote on
    /// stderr (its log).
    Row {
        row: Box<Row>,
        log: String,
    },
    /// The run's record as it ends: rounds, counts, time, the machine after.
    End {
        run: Box<RunRecord>,
    },
}

/// The launched side's observer: every event as one JSON line on stdout,
/// flushed at once. A failed write (the connection gone) stops the run as
/// a signal would.
pub struct StreamOut {
    out: std::io::Stdout,
}

impl StreamOut {
    pub fn new() -> StreamOut {
        StreamOut { out: std::io::stdout() }
    }

    /// Writes one event; a write that fails stops the run.
    pub fn send(&mut self, event: &Event) {
        let ok = serde_json::to_string(event).ok().is_some_and(|mut line| {
            line.push('\n');
            let mut out = self.out.lock();
            out.write_all(line.as_bytes()).and_then(|_| out.flush()).is_ok()
        });
        if !ok {
            signals::stop();
        }
    }
}

impl Default for StreamOut {
    fn default() -> Self {
        StreamOut::new()
    }
}

impl Observer for StreamOut {
    fn round_started(&mut self, round: u32, coming: &Coming) {
        self.send(&Event::RoundStarted { round, coming: *coming });
    }

    fn trial_started(&mut self, cell: &Cell, trial: u32, round: u32) {
        self.send(&Event::TrialStarted { cell: cell.index, trial, round });
    }

    fn trial_finished(&mut self, cell: &Cell, trial: &TrialRecord) {
        self.send(&Event::TrialFinished { cell: cell.index, trial: Box::new(trial.clone()) });
    }

    fn row_finished(&mut self, row: &Row, _rows: &[Row], dir: &RunDir) -> anyhow::Result<()> {
        let log = std::fs::read(dir.path().join(format!("logs/{}.log", row.cell.row_id))).unwrap_or_default();
        self.send(&Event::Row { row: Box::new(row.clone()), log: String::from_utf8_lossy(&log).into_owned() });
        Ok(())
    }
}
