//! Progress on stderr: a bar counting trials, with the round and the cell's
//! name, on a terminal; one plain line per finished trial otherwise (CI
//! logs); nothing with --quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::evidence::TrialRecord;
use crate::model::Cell;
use crate::report::terminal::{clean, to_stderr};

use super::observer::Observer;

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    /// Trials finished.
    done: u64,
    /// Trials known to be coming, finished ones included.
    total: u64,
    round: u32,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let mut p = Progress { bar: None, plain: false, done: 0, total: 0, round: 0 };
        if quiet {
            return p;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials {wide_msg} (eta {eta})")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            // One redraw a second: enough for a clock, negligible load on a
            // machine that is being measured.
            bar.enable_steady_tick(Duration::from_secs(1));
            p.bar = Some(bar);
        } else {
            p.plain = true;
        }
        p
    }

    /// A handle that prints without garbling the bar.
    pub fn printer(&self) -> Printer {
        Printer { bar: self.bar.clone() }
    }
}

/// Prints around the progress bar.
#[derive(Clone)]
pub struct Printer {
    bar: Option<ProgressBar>,
}

impl Printer {
    /// Runs `f` (which prints) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

impl Observer for Progress {
    fn round_started(&mut self, round: u32, coming: usize) {
        self.round = round;
        self.total = self.done + coming as u64;
        if let Some(b) = &self.bar {
            b.set_length(self.total);
        } else if self.plain {
            eprintln!("proofbench: round {}: {coming} trials to run", round + 1);
        }
    }

    fn trial_started(&mut self, cell: &Cell, trial: u32, round: u32) {
        if let Some(b) = &self.bar {
            b.set_message(clean(&format!("round {} · {} (trial {})", round + 1, cell.display_name(), trial + 1)).into_owned());
        }
    }

    fn trial_finished(&mut self, cell: &Cell, trial: &TrialRecord) {
        self.done += 1;
        if let Some(b) = &self.bar {
            b.inc(1);
        } else if self.plain {
            to_stderr(&format!(
                "[round {} {}/{}] {} trial {}: {} ({:.1} s)\n",
                self.round + 1,
                self.done,
                self.total,
                cell.display_name(),
                trial.trial + 1,
                trial.status.as_str(),
                trial.process.wall_ms / 1e3
            ));
        }
    }

    fn run_finished(&mut self, _dir: &std::path::Path) -> anyhow::Result<()> {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        Ok(())
    }
}
