//! Progress on stderr: a bar with the cell's name and an ETA on a terminal,
//! one plain line per finished cell otherwise (CI logs), nothing with --quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::evidence::Status;

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    total: usize,
}

impl Progress {
    pub fn new(total: usize, quiet: bool) -> Progress {
        if quiet {
            return Progress { bar: None, plain: false, total };
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg} (eta {eta})")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            // One redraw a second: enough for a clock, negligible load on a
            // machine that is being measured.
            bar.enable_steady_tick(Duration::from_secs(1));
            Progress { bar: Some(bar), plain: false, total }
        } else {
            Progress { bar: None, plain: true, total }
        }
    }

    pub fn start_cell(&self, name: &str) {
        if let Some(b) = &self.bar {
            b.set_message(name.to_string());
        }
    }

    pub fn finish_cell(&self, index: usize, name: &str, status: Status, seconds: f64) {
        if let Some(b) = &self.bar {
            b.inc(1);
        } else if self.plain {
            eprintln!("[{}/{}] {name}: {} ({seconds:.1} s)", index + 1, self.total, status.as_str());
        }
    }

    /// Runs `f` (which prints) without garbling the bar.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
