//! Progress on stderr: a bar counting trials, with the round, the cell's
//! name and the time left, on a terminal; at most one line per round
//! otherwise (CI logs, a file): the round of how many, the cells done, the
//! trials that failed by name, and the time left; nothing with --quiet.
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
//! The extra phase's total is an upper bound, so that phase may end early,
//! and its time left is a most. Before the first round the bar has no
//! length (an empty bar, not a full one at 0/0).
//!
//! Everything else the run says on stderr while the bar is up goes through
//! [`crate::text::out::to_stderr`], which clears the bar first and
//! redraws it after (the bar is registered there while it is up), so that
//! no stale frame is left above a message.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::evidence::{Row, RunDir, TrialRecord};
use crate::model::{Cell, Status};
use crate::text::format::{counted, seconds};
use crate::text::out::{clean, to_stderr};

use crate::runner::observe::{Coming, Observer};

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

/// The time left after `done` trials took `elapsed`, with `left` trials to
/// come at the same pace; none before the first trial.
pub fn time_left(done: u64, elapsed: Duration, left: u64) -> Option<Duration> {
    (done > 0).then(|| elapsed.mul_f64(left as f64 / done as f64))
}

/// The bar's length as indicatif is given it: none while nothing is
/// counted (indicatif draws a length of 0 as a full bar).
pub fn length(b: &Bar) -> Option<u64> {
    (b.len > 0).then_some(b.len)
}

/// The text beside the bar: the count, the round and the cell (`current`),
/// and the time left (`eta 40 s` in the planned phase; `at most 2 min 5 s
/// left` in the extra phase, whose total is a most).
pub fn frame_text(b: &Bar, current: &str, left: Option<Duration>) -> String {
    let count = match (b.phase, b.len) {
        (_, 0) => "starting".to_string(),
        (Phase::Planned, len) => format!("{}/{len} trials", b.pos),
        (Phase::Extra, len) => format!("{}/{len} extra trials at most", b.pos),
    };
    let left = match (left, b.phase) {
        (None, _) => String::new(),
        (Some(d), Phase::Planned) => format!(" (eta {})", seconds(d.as_secs_f64())),
        (Some(d), Phase::Extra) => format!(" (at most {} left)", seconds(d.as_secs_f64())),
    };
    let current = if current.is_empty() { String::new() } else { format!(" {current}") };
    format!("{count}{current}{left}")
}

/// What one round did, for its line in a log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundDone {
    /// The round, from 0.
    pub round: u32,
    /// Past the plan's minimum (extra trials for rows still wide).
    pub extra: bool,
    /// The plan's fewest and most trials per cell (rounds).
    pub min: u32,
    pub max: u32,
    pub trials: usize,
    /// The trials that failed, timed out or were invalid: `name (status)`.
    pub failed: Vec<String>,
    pub skipped: usize,
    /// Rows written so far, and the cells planned.
    pub rows: usize,
    pub cells: usize,
}

/// A round's line in a log: `proofbench: round 2 of 3: 150 trials, 11 of
/// 150 cells done; failed: os.x (timeout); about 40 s left (at most 2 min
/// with extra trials)`. `left`: the time the planned trials still take and
/// the most the extra ones may add (none after the last round).
pub fn round_line(r: &RoundDone, left: Option<(Option<Duration>, Option<Duration>)>) -> String {
    let of = if r.extra || r.round >= r.min { format!("of at most {}", r.max) } else { format!("of {}", r.min) };
    let kind = if r.extra { "extra trials" } else { "trials" };
    let mut line =
        format!("proofbench: round {} {of}: {} {kind}, {} of {} done", r.round + 1, r.trials, r.rows, counted(r.cells, "cell", "cells"));
    if r.skipped > 0 {
        line.push_str(&format!(", {} skipped", r.skipped));
    }
    if !r.failed.is_empty() {
        const SHOWN: usize = 5;
        let mut named = r.failed.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
        if r.failed.len() > SHOWN {
            named.push_str(&format!(" and {} more", r.failed.len() - SHOWN));
        }
        line.push_str(&format!("; failed: {named}"));
    }
    match left {
        None => line.push_str("; done"),
        Some((Some(planned), Some(most))) if most > planned => {
            line.push_str(&format!("; about {} left (at most {})", seconds(planned.as_secs_f64()), seconds(most.as_secs_f64())))
        }
        Some((Some(planned), _)) => line.push_str(&format!("; about {} left", seconds(planned.as_secs_f64()))),
        Some((None, Some(most))) => line.push_str(&format!("; at most {} left", seconds(most.as_secs_f64()))),
        Some((None, None)) => {}
    }
    line.push('\n');
    line
}

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    started: Instant,
    /// Planned trials finished.
    planned_done: u64,
    /// Extra trials finished.
    extra_done: u64,
    /// What the bar shows (its position grows with each trial).
    shown: Bar,
    /// The round, the cell and its trial now running.
    current: String,
    /// The round under way, for its line in a log (none before the first).
    this_round: Option<RoundDone>,
    /// Rows written, and the cells planned (the first round's).
    rows: usize,
    cells: usize,
}

/// The bar's look: indicatif draws the spinner, the clock and the bar;
/// the text beside it is [`frame_text`].
fn style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {wide_msg}").expect("valid template").progress_chars("=> ")
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let mut p = Progress {
            bar: None,
            plain: false,
            started: Instant::now(),
            planned_done: 0,
            extra_done: 0,
            shown: Bar { phase: Phase::Planned, pos: 0, len: 0 },
            current: String::new(),
            this_round: None,
            rows: 0,
            cells: 0,
        };
        if quiet {
            return p;
        }
        if std::io::stderr().is_terminal() {
            // No length until the first round says it.
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(style());
            bar.set_message(frame_text(&p.shown, "", None));
            // One redraw a second: enough for a clock, negligible load on a
            // machine that is being measured.
            bar.enable_steady_tick(Duration::from_secs(1));
            crate::text::out::set_bar(Some(bar.clone()));
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

    /// The time the trials still to come on the bar may take.
    fn left(&self) -> Option<Duration> {
        time_left(self.planned_done + self.extra_done, self.started.elapsed(), self.shown.len - self.shown.pos)
    }

    fn redraw(&self) {
        if let Some(b) = &self.bar {
            b.set_message(clean(&frame_text(&self.shown, &self.current, self.left())).into_owned());
        }
    }

    /// The line of the round that ended, in a log; `coming`: what the next
    /// round leaves to come (none when the run ended).
    fn say_round(&mut self, coming: Option<&Coming>) {
        let Some(mut r) = self.this_round.take() else { return };
        if !self.plain {
            return;
        }
        (r.rows, r.cells) = (self.rows, self.cells);
        let done = self.planned_done + self.extra_done;
        let elapsed = self.started.elapsed();
        let left = coming.map(|c| {
            let planned = (c.planned > 0).then(|| time_left(done, elapsed, c.planned as u64)).flatten();
            let most = time_left(done, elapsed, (c.planned + c.extra_at_most) as u64);
            (planned, most)
        });
        to_stderr(&round_line(&r, left));
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
            Some(_) => crate::text::out::around_bar(f),
            None => f(),
        }
    }
}

impl Observer for Progress {
    fn round_started(&mut self, round: u32, coming: &Coming) {
        self.say_round(Some(coming));
        if round == 0 {
            self.cells = coming.this_round;
        }
        let next = bar(self.planned_done, self.extra_done, coming);
        self.this_round = Some(RoundDone {
            round,
            extra: next.phase == Phase::Extra,
            min: coming.min_trials,
            max: coming.max_trials,
            ..RoundDone::default()
        });
        self.shown = next;
        if let Some(b) = &self.bar {
            match length(&next) {
                Some(len) => b.set_length(len),
                None => b.unset_length(),
            }
            b.set_position(next.pos);
        }
        self.redraw();
    }

    fn trial_started(&mut self, cell: &Cell, trial: u32, round: u32) {
        self.current = format!("round {} · {} (trial {})", round + 1, cell.display_name(), trial + 1);
        self.redraw();
    }

    fn trial_finished(&mut self, cell: &Cell, trial: &TrialRecord) {
        match self.shown.phase {
            Phase::Planned => self.planned_done += 1,
            Phase::Extra => self.extra_done += 1,
        }
        self.shown.pos += 1;
        if let Some(r) = &mut self.this_round {
            r.trials += 1;
            match trial.status {
                Status::Ok => {}
                Status::Skipped => r.skipped += 1,
                s => r.failed.push(format!("{} ({})", cell.display_name(), s.as_str())),
            }
        }
        if let Some(b) = &self.bar {
            b.set_position(self.shown.pos);
        }
        self.redraw();
    }

    fn row_finished(&mut self, _row: &Row, _dir: &RunDir) -> anyhow::Result<()> {
        self.rows += 1;
        Ok(())
    }

    fn run_finished(&mut self, _dir: &std::path::Path) -> anyhow::Result<()> {
        self.say_round(None);
        if let Some(b) = self.bar.take() {
            crate::text::out::set_bar(None);
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

    #[test]
    fn the_frame_has_no_full_bar_at_nothing_counted_and_a_time_left_in_both_phases() {
        let none = Bar { phase: Phase::Planned, pos: 0, len: 0 };
        assert_eq!(length(&none), None, "indicatif draws a length of 0 as a full bar");
        assert_eq!(frame_text(&none, "", None), "starting");
        let planned = Bar { phase: Phase::Planned, pos: 10, len: 40 };
        assert_eq!(length(&planned), Some(40));
        // 10 trials in 20 s: 30 more take about 60 s.
        let left = time_left(10, Duration::from_secs(20), 30);
        assert_eq!(left, Some(Duration::from_secs(60)));
        assert_eq!(
            frame_text(&planned, "round 1 · cpu.primes (trial 1)", left),
            "10/40 trials round 1 · cpu.primes (trial 1) (eta 60.0 s)"
        );
        let extra = Bar { phase: Phase::Extra, pos: 2, len: 12 };
        let left = time_left(42, Duration::from_secs(84), 10);
        assert_eq!(frame_text(&extra, "x", left), "2/12 extra trials at most x (at most 20.0 s left)");
        assert_eq!(time_left(0, Duration::from_secs(3), 10), None, "no pace before the first trial");
    }

    #[test]
    fn a_rounds_line_says_of_how_many_the_cells_done_the_failures_by_name_and_the_time_left() {
        let r = RoundDone {
            round: 0,
            extra: false,
            min: 3,
            max: 10,
            trials: 150,
            failed: vec!["os.a (timeout)".into(), "os.b (failed)".into()],
            skipped: 11,
            rows: 13,
            cells: 150,
        };
        let left = Some((Some(Duration::from_secs(40)), Some(Duration::from_secs(125))));
        assert_eq!(
            round_line(&r, left),
            "proofbench: round 1 of 3: 150 trials, 13 of 150 cells done, 11 skipped; failed: os.a (timeout), os.b (failed); about 40.0 s left (at most 2 min 5 s)\n"
        );
        let last = RoundDone { round: 6, extra: true, trials: 7, failed: Vec::new(), skipped: 0, rows: 150, ..r.clone() };
        assert_eq!(round_line(&last, None), "proofbench: round 7 of at most 10: 7 extra trials, 150 of 150 cells done; done\n");
        let many = RoundDone { failed: (0..8).map(|i| format!("c{i} (failed)")).collect(), ..r };
        let line = round_line(&many, Some((None, Some(Duration::from_secs(3)))));
        assert!(line.contains("c4 (failed) and 3 more; at most 3.0 s left"), "{line}");
    }
}
