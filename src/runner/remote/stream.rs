//! runner::stream: what the launched side of a launched run says
//! ([`Event`], one JSON line each on its stdout) and the observer that says
//! it ([`StreamOut`]). The launching side reads it in [`crate::runner::remote`].

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::evidence::{Row, RunDir, RunRecord, TrialRecord};
use crate::model::Cell;

use crate::process::signals;
use crate::runner::observe::{Coming, Observer};

/// The first thing the launched side says, so that a launcher that prints
/// something else (a login banner on stdout) is told apart from a stream.
pub const STREAM_SCHEMA: &str = "proofbench-stream/2";

/// The most of a row's log one [`Event::Log`] carries: a worker that wrote
/// 100 MB on its stderr costs either side a piece at a time.
pub const LOG_PIECE: usize = 1 << 20;

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
    /// A piece of the text a cell's trials' workers wrote on stderr (its
    /// log), at most [`LOG_PIECE`] bytes, in order, before the cell's row.
    Log {
        cell: usize,
        text: String,
    },
    /// A row as it is decided, with the rest of its log (empty when its
    /// log came in [`Event::Log`] pieces).
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

    fn row_finished(&mut self, row: &Row, dir: &RunDir) -> anyhow::Result<()> {
        if let Ok(file) = std::fs::File::open(dir.path().join(format!("logs/{}.log", row.cell.row_id))) {
            for text in log_pieces(file) {
                self.send(&Event::Log { cell: row.cell.index, text });
            }
        }
        self.send(&Event::Row { row: Box::new(row.clone()), log: String::new() });
        Ok(())
    }
}

/// The text of `file` in pieces of at most [`LOG_PIECE`] bytes, each cut
/// between two characters (bytes that are not UTF-8 replaced).
fn log_pieces(file: impl std::io::Read) -> impl Iterator<Item = String> {
    let mut file = std::io::BufReader::new(file);
    let mut carry: Vec<u8> = Vec::new();
    std::iter::from_fn(move || {
        let mut buf = std::mem::take(&mut carry);
        let want = LOG_PIECE.saturating_sub(buf.len());
        let got = std::io::Read::read_to_end(&mut std::io::Read::take(&mut file, want as u64), &mut buf).unwrap_or(0);
        if buf.is_empty() {
            return None;
        }
        // A character cut by the piece's end goes to the next piece.
        let keep = match std::str::from_utf8(&buf) {
            Ok(_) => buf.len(),
            Err(e) if e.error_len().is_none() && got > 0 => e.valid_up_to().max(1),
            Err(_) => buf.len(),
        };
        carry = buf.split_off(keep);
        Some(String::from_utf8_lossy(&buf).into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_goes_in_pieces_of_at_most_a_mib_each_cut_between_characters() {
        // 2.5 MiB of three-byte characters, a piece boundary inside one of them.
        let text: String = "x".to_string() + &"€".repeat((5 * LOG_PIECE / 2) / 3);
        let pieces: Vec<String> = log_pieces(text.as_bytes()).collect();
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= LOG_PIECE), "{:?}", pieces.iter().map(String::len).collect::<Vec<_>>());
        assert_eq!(pieces.concat(), text);
        assert_eq!(log_pieces(&b""[..]).count(), 0);
        assert_eq!(log_pieces(&b"a\xffb"[..]).collect::<Vec<_>>(), ["a\u{fffd}b"]);
    }
}
