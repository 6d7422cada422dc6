//! Progress on stderr: a bar counting trials, with the round and the cell's
//! name, on a terminal; one plain line per finished trial otherwise (CI
//! logs); nothing with --quiet.
//!
//! The bar never moves backwards. A run has two phases: the planned trials
//! (every cell's minimum, known from the start) and the extra trials that
//! rows whose interval is still wide may get, round after round, while the
//! run's budget lasts (known only as each round starts). Counting both
//! against one total would make it grow as extra rounds are planned, and
//! the bar jump back (95% to 80%). So the bar counts the planned trials
//! first, against the planned total (which can only shrink, as a skipped or
//! failed cell gives up its later trials); then, past the minimum, the
//! extra trials as a phase of their own, against the most that may still
//! run (every cell still measuring taken to the maximum), which can only
//! shrink too, as cells reach their target or the budget. In each phase
//! the position grows and the total does not: the fraction never falls.
//! The extra phase's total is an upper bound, so that phase may end early.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::evidence::TrialRecord;
use crate::model::Cell;
use crate::report::terminal::{clean, to_stderr};
use crate::text::format::counted;

use super::observer::{Coming, Observer};

/// Which trials the bar counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Every cell's planned minimum.
    Planned,
    /// Trials past the minimum, for rows whose interval is still wide.
    Extra,
}

/// What the bar shows at a round's start: its phase, position and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    pub phase: Phase,
    pub pos: u64,
    pub len: u64,
}

/// The bar at a round's start, with `planned_done` planned trials and
/// `extra_done` extra trials finished, and `coming` still to come: the
/// planned phase while planned trials remain, the extra phase after.
pub fn bar(planned_done: u64, extra_done: u64, coming: &Coming) -> Bar {
    if coming.planned > 0 {
        Bar { phase: Phase::Planned, pos: planned_done, len: planned_done + coming.planned as u64 }
    } else {
        Bar { phase: Phase::Extra, pos: extra_done, len: extra_done + coming.extra_at_most as u64 }
    }
}

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    /// Planned trials finished.
    planned_done: u64,
    /// Extra trials finished.
    extra_done: u64,
    /// What the bar shows (its position grows with each trial).
    shown: Bar,
    round: u32,
}

/// The bar's look in `phase`.
fn style(phase: Phase) -> ProgressStyle {
    let template = match phase {
        Phase::Planned => "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials {wide_msg} (eta {eta})",
        // The total is the most that may run: no estimate of the end.
        Phase::Extra => "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} extra trials at most {wide_msg}",
    };
    ProgressStyle::with_template(template).expect("valid template").progress_chars("=> ")
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let mut p = Progress {
            bar: None,
            plain: false,
            planned_done: 0,
            extra_done: 0,
            shown: Bar { phase: Phase::Planned, pos: 0, len: 0 },
            round: 0,
        };
        if quiet {
            return p;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(style(Phase::Planned));
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
    /// A printer with no bar to hide.
    pub fn none() -> Printer {
        Printer { bar: None }
    }

    /// Runs `f` (which prints) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

impl Observer for Progress {
    fn round_started(&mut self, round: u32, coming: &Coming) {
        self.round = round;
        let next = bar(self.planned_done, self.extra_done, coming);
        if let Some(b) = &self.bar {
            if next.phase != self.shown.phase {
                b.set_style(style(next.phase));
                b.reset_eta();
            }
            b.set_length(next.len);
            b.set_position(next.pos);
        } else if self.plain {
            let (n, left) = (coming.this_round, next.len - next.pos);
            match next.phase {
                Phase::Planned => crate::report::terminal::to_stderr(&format!(
                    "proofbench: round {}: {} ({left} planned to run)\n",
                    round + 1,
                    counted(n, "trial", "trials")
                )),
                Phase::Extra => crate::report::terminal::to_stderr(&format!(
                    "proofbench: round {}: {} for rows whose interval is still wide (at most {left} more)\n",
                    round + 1,
                    counted(n, "extra trial", "extra trials")
                )),
            }
        }
        self.shown = next;
    }

    fn trial_started(&mut self, cell: &Cell, trial: u32, round: u32) {
        if let Some(b) = &self.bar {
            b.set_message(clean(&format!("round {} · {} (trial {})", round + 1, cell.display_name(), trial + 1)).into_owned());
        }
    }

    fn trial_finished(&mut self, cell: &Cell, trial: &TrialRecord) {
        match self.shown.phase {
            Phase::Planned => self.planned_done += 1,
            Phase::Extra => self.extra_done += 1,
        }
        self.shown.pos += 1;
        if let Some(b) = &self.bar {
            b.inc(1);
        } else if self.plain {
            let extra = if self.shown.phase == Phase::Extra { " extra" } else { "" };
            to_stderr(&format!(
                "[round {}{extra} {}/{}] {} trial {}: {} ({:.1} s)\n",
                self.round + 1,
                self.shown.pos,
                self.shown.len,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The fraction the bar shows after each trial of a run whose rounds
    /// have `cells` cells each, under a plan of `min` to `max` trials; with
    /// the phase.
    fn fractions(cells: &[usize], min: u32, max: u32) -> Vec<(Phase, f64)> {
        let (mut planned_done, mut extra_done) = (0u64, 0u64);
        let mut out = Vec::new();
        for (round, &n) in cells.iter().enumerate() {
            let coming = Coming::at(round as u32, n, min, max);
            let mut b = bar(planned_done, extra_done, &coming);
            out.push((b.phase, b.pos as f64 / b.len as f64));
            for _ in 0..n {
                match b.phase {
                    Phase::Planned => planned_done += 1,
                    Phase::Extra => extra_done += 1,
                }
                b.pos += 1;
                assert!(b.pos <= b.len, "round {round}: {b:?}");
                out.push((b.phase, b.pos as f64 / b.len as f64));
            }
        }
        out
    }

    #[test]
    fn the_bar_never_moves_backwards_and_extra_trials_are_a_phase_of_their_own() {
        // The default suite's rounds: 150 cells, 11 skipped in the first
        // round, extra trials for fewer and fewer rows.
        for (cells, min, max) in
            [(&[150, 139, 139, 115, 100, 35, 7][..], 3, 10), (&[5, 5, 5][..], 3, 3), (&[4, 1, 1, 1, 1][..], 2, 5), (&[3][..], 1, 1)]
        {
            let seen = fractions(cells, min, max);
            for w in seen.windows(2) {
                let ((pa, fa), (pb, fb)) = (w[0], w[1]);
                assert!(!(pa == Phase::Extra && pb == Phase::Planned), "{cells:?}: back to the planned phase");
                if pa == pb {
                    assert!(fb >= fa, "{cells:?}: the bar moved back from {fa} to {fb} in {pa:?}");
                }
            }
            let planned_end = seen.iter().rfind(|(p, _)| *p == Phase::Planned).unwrap().1;
            assert_eq!(planned_end, 1.0, "{cells:?}: the planned phase ends full");
        }
        // The planned phase counts the minimum: 150 cells x 3 at the start.
        let b = bar(0, 0, &Coming::at(0, 150, 3, 10));
        assert_eq!(b, Bar { phase: Phase::Planned, pos: 0, len: 450 });
        // 11 cells skipped in round 1: their later planned trials are gone.
        assert_eq!(bar(150, 0, &Coming::at(1, 139, 3, 10)), Bar { phase: Phase::Planned, pos: 150, len: 150 + 278 });
        // Past the minimum: at most 7 more trials for each of 115 cells.
        assert_eq!(bar(428, 0, &Coming::at(3, 115, 3, 10)), Bar { phase: Phase::Extra, pos: 0, len: 805 });
        assert_eq!(bar(428, 115, &Coming::at(4, 100, 3, 10)), Bar { phase: Phase::Extra, pos: 115, len: 115 + 600 });
    }
}
