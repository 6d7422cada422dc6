//! bisect: `proofbench bisect`, the commit between a good and a bad
//! revision that moved a row.
//!
//! The search itself ([`search`]) is pure: it walks the commits between
//! `--good` and `--bad` (first parent, oldest first, index 0 the good one)
//! through a [`Lab`], which builds a commit and measures one commit's build
//! against another's (a paired A/B in lockstep, decided SAME, DIFFERENT or
//! UNKNOWN). The real lab (git worktrees, the build command, the runner)
//! is [`session`]; the tests use a fake one. The rules it keeps:
//!
//! - good against bad first: not DIFFERENT, no search (exit 1);
//! - each step measures the midpoint (B) against the known-good side of the
//!   range (A): DIFFERENT in the direction of good..bad moves the bad side,
//!   SAME moves the good side; UNKNOWN is measured again with more rounds
//!   ([`ATTEMPTS`]);
//! - the question of a step is which side of the change B is on, so its
//!   interval also places it ([`Side`]): wholly on the good side of the
//!   half-way point of the change still tracked (half of its log ratio:
//!   good..bad's at first, then the step's that last moved the bad side,
//!   less what the good side's moves took of it), B is on the
//!   good side even when it is UNKNOWN, or DIFFERENT by a smaller change of
//!   its own (said as another change: the search follows the change it was
//!   asked about, not the first small one it meets); wholly past the
//!   half-way point, on the bad side. A step neither decided nor placed
//!   ends the search saying so;
//! - a commit that does not build is skipped, as `git bisect skip` does: its
//!   nearest buildable neighbour inside the range is measured instead;
//! - a culprit is named only when it is DIFFERENT (same direction) against
//!   its parent, measured again; otherwise the change is spread over the
//!   range that was last DIFFERENT, listed;
//! - once a culprit is named, good..parent and culprit..bad are measured
//!   too (their builds exist): DIFFERENT there says the range held another
//!   change.
//!
//! Never touches a file or a process: the lab does.

pub mod git;
pub mod page;
pub mod record;
pub mod session;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

/// How many times a step is measured while it is UNKNOWN (each attempt a
/// fresh A/B run with more rounds than the one before).
pub const ATTEMPTS: u32 = 2;

/// One commit of the range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
}

impl Commit {
    /// The first 10 hex digits.
    pub fn short(&self) -> &str {
        &self.sha[..self.sha.len().min(10)]
    }

    /// The subject cut to `max` characters, `…` for the rest (the steps'
    /// lines and table; the culprit's whole message is on its page).
    pub fn headline(&self, max: usize) -> String {
        let s = &self.subject;
        if s.chars().count() <= max { s.clone() } else { format!("{}…", s.chars().take(max.saturating_sub(1)).collect::<String>()) }
    }
}

/// What one A/B said of B against A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    Same,
    /// DIFFERENT, B worse than A.
    Worse,
    /// DIFFERENT, B better than A.
    Better,
    Unknown,
}

impl Call {
    /// The decided verdict's word.
    pub fn word(self) -> &'static str {
        match self {
            Call::Same => "SAME",
            Call::Worse | Call::Better => "DIFFERENT",
            Call::Unknown => "UNKNOWN",
        }
    }

    /// The word with the direction: `DIFFERENT (worse)`.
    pub fn said(self) -> String {
        match self {
            Call::Worse => "DIFFERENT (worse)".into(),
            Call::Better => "DIFFERENT (better)".into(),
            c => c.word().into(),
        }
    }

    pub fn different(self) -> bool {
        matches!(self, Call::Worse | Call::Better)
    }
}

/// One A/B measurement of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub call: Call,
    /// B's median over A's, and its 95% interval.
    pub ratio: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    /// The A/B run's directory.
    pub run_dir: Option<String>,
    /// Why the verdict is what it is (the comparison's reason).
    pub reason: String,
    /// The A/B run's wall time.
    pub seconds: f64,
}

impl Measured {
    /// `1.027 (1.014..1.040)`, or `-` without a ratio.
    pub fn ratio_text(&self) -> String {
        match (self.ratio, self.ci95) {
            (Some(r), Some([lo, hi])) => format!("{r:.3} ({lo:.3}..{hi:.3})"),
            (Some(r), None) => format!("{r:.3}"),
            _ => "-".into(),
        }
    }
}

/// Why a step was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Good against bad: is there a change at all?
    Confirm,
    /// A midpoint against the good side of the range.
    Search,
    /// The culprit against its parent, again.
    Culprit,
    /// good..parent or culprit..bad: did the range hold another change?
    Range,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Confirm => "good vs bad",
            Purpose::Search => "search",
            Purpose::Culprit => "culprit vs parent",
            Purpose::Range => "rest of the range",
        }
    }
}

/// One step: commit `b` (its index in the range) measured against `a`, in
/// one or more attempts (the last one's verdict stands).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub purpose: Purpose,
    pub a: usize,
    pub b: usize,
    pub attempts: Vec<Measured>,
    /// The side of good..bad's change the step's interval placed B on,
    /// where that and not the verdict alone moved the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
}

/// Which side of the tracked change a commit is on: its interval against
/// the good side lies wholly before the change's half-way point (`Good`)
/// or wholly past it (`Bad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Good,
    Bad,
}

impl Side {
    /// `nearer good`.
    pub fn said(self) -> &'static str {
        match self {
            Side::Good => "nearer good",
            Side::Bad => "nearer bad",
        }
    }

    /// Where `m`'s interval lies against the half-way point of a change of
    /// `total` (good..bad's ratio): `None` when it holds that point, or
    /// when either has no figure.
    pub fn of(m: &Measured, total: Option<f64>) -> Option<Side> {
        let (total, [lo, hi]) = (total.filter(|t| t.is_finite() && *t > 0.0 && *t != 1.0)?, m.ci95?);
        let half = total.sqrt();
        let (before, past) = if total > 1.0 { (hi < half, lo > half) } else { (lo > half, hi < half) };
        if before {
            Some(Side::Good)
        } else if past {
            Some(Side::Bad)
        } else {
            None
        }
    }
}

impl Step {
    /// The verdict of the step: its last attempt's.
    pub fn result(&self) -> &Measured {
        self.attempts.last().expect("a step has an attempt")
    }

    /// The verdict with the side it placed B on, where that moved the
    /// search: `UNKNOWN, nearer good`.
    pub fn said(&self) -> String {
        match self.side {
            Some(side) => format!("{}, {}", self.result().call.said(), side.said()),
            None => self.result().call.said(),
        }
    }
}

/// How the search ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Answer {
    /// Commit `index` moved the row: DIFFERENT against its parent `parent`
    /// (the nearest buildable commit before it), measured twice.
    Culprit { index: usize, parent: usize },
    /// Good against bad was not DIFFERENT: nothing to search.
    NoChange { call: Call },
    /// The step measuring `at` against `lo` stayed UNKNOWN: the change lies
    /// in `lo+1..=hi`, not narrowed further.
    Undecided { lo: usize, hi: usize, at: usize },
    /// `lo` against `hi` was DIFFERENT, yet no single commit in
    /// `lo+1..=hi` is DIFFERENT against its parent: the change is spread
    /// over them.
    Spread { lo: usize, hi: usize },
    /// Every commit strictly between `lo` and `hi` failed to build: the
    /// change is one of `lo+1..=hi`.
    Unbuildable { lo: usize, hi: usize },
}

/// The search's record: its steps in order, the answer, what else the
/// range held, and the commits skipped because they did not build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub steps: Vec<Step>,
    pub answer: Answer,
    /// Other changes the range held.
    pub other_changes: Vec<OtherChange>,
    /// The parts of the range beside the culprit (good..parent,
    /// culprit..bad) whose measurement stayed UNKNOWN: whether they held
    /// another change could not be told. Absent in records from before it.
    #[serde(default)]
    pub undecided_ranges: Vec<(usize, usize)>,
    pub skipped: Vec<usize>,
}

/// A change besides the one searched for: `b` against `a` was DIFFERENT
/// where the search did not expect it (`note` says where).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OtherChange {
    pub a: usize,
    pub b: usize,
    pub call: Call,
    pub note: String,
}

/// What the search needs of the world: builds and measurements, by index
/// into the range (0 = good, last = bad).
pub trait Lab {
    /// Builds commit `i` (once: later calls answer from the first);
    /// `Ok(false)` when it does not build. Errors end the search (a stop
    /// signal, git failing).
    fn build(&mut self, i: usize) -> anyhow::Result<bool>;
    /// Measures `b`'s build against `a`'s, both built; `attempt` counts
    /// from 1, each later one with more rounds. A [`Purpose::Culprit`]
    /// measurement is a run of its own, never one made for another step of
    /// the same two commits.
    fn measure(&mut self, purpose: Purpose, a: usize, b: usize, attempt: u32) -> anyhow::Result<Measured>;
    /// Called after each step, once it is placed (to print it and save the
    /// record).
    fn step_done(&mut self, _step: &Step) {}
}

/// Measures `b` against `a` until decided or [`ATTEMPTS`] are spent.
fn step(lab: &mut dyn Lab, purpose: Purpose, a: usize, b: usize) -> anyhow::Result<Step> {
    let mut s = Step { purpose, a, b, attempts: Vec::new(), side: None };
    for attempt in 1..=ATTEMPTS {
        s.attempts.push(lab.measure(purpose, a, b, attempt)?);
        if s.result().call != Call::Unknown {
            break;
        }
    }
    Ok(s)
}

/// Keeps a finished step: the lab hears of it, the outcome holds it.
fn keep(lab: &mut dyn Lab, out: &mut Outcome, s: Step) {
    lab.step_done(&s);
    out.steps.push(s);
}

/// The buildable commit nearest `mid` strictly between `lo` and `hi`
/// (`mid`, then `mid+1`, `mid-1`, `mid+2`...), recording those that do not
/// build in `skipped`; `None` when none does.
fn buildable_near(lab: &mut dyn Lab, mid: usize, lo: usize, hi: usize, skipped: &mut Vec<usize>) -> anyhow::Result<Option<usize>> {
    for d in 0..(hi - lo) {
        for c in [mid.checked_add(d), mid.checked_sub(d)].into_iter().flatten() {
            if c <= lo || c >= hi || skipped.contains(&c) || (d == 0 && c != mid) {
                continue;
            }
            if lab.build(c)? {
                return Ok(Some(c));
            }
            skipped.push(c);
        }
    }
    Ok(None)
}

/// Bisects the range of `n` commits (index 0 good, `n - 1` bad) through
/// `lab`. An error is the lab's (a stop signal, a good or bad commit that
/// does not build).
pub fn search(n: usize, lab: &mut dyn Lab) -> anyhow::Result<Outcome> {
    anyhow::ensure!(n >= 2, "the range holds a single commit: --good and --bad are the same");
    let (good, bad) = (0, n - 1);
    for (i, flag) in [(good, "--good"), (bad, "--bad")] {
        if !lab.build(i)? {
            anyhow::bail!("the {flag} commit does not build (its log is in the bisect's builds directory)");
        }
    }
    let mut out = Outcome {
        steps: Vec::new(),
        answer: Answer::NoChange { call: Call::Unknown },
        other_changes: Vec::new(),
        undecided_ranges: Vec::new(),
        skipped: Vec::new(),
    };
    let confirm = step(lab, Purpose::Confirm, good, bad)?;
    let dir = confirm.result().call;
    // The ratio of the change still tracked, between the range's two
    // sides: good..bad's at first, then the last step's that moved the bad
    // side, less what the good side's moves took of it.
    let mut total = confirm.result().ratio;
    keep(lab, &mut out, confirm);
    if !dir.different() {
        out.answer = Answer::NoChange { call: dir };
        return Ok(out);
    }
    let (mut lo, mut hi) = (good, bad);
    // The good side against which `hi` was last found DIFFERENT.
    let mut hi_against = good;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let Some(m) = buildable_near(lab, mid, lo, hi, &mut out.skipped)? else {
            out.answer = Answer::Unbuildable { lo, hi };
            return Ok(out);
        };
        let mut s = step(lab, Purpose::Search, lo, m)?;
        let (call, ratio) = (s.result().call, s.result().ratio);
        let side = Side::of(s.result(), total);
        let past = |total: Option<f64>| total.zip(ratio).map(|(t, r)| t / r);
        // The side moves the search where the verdict alone would not
        // (UNKNOWN), or would follow a smaller change than the one asked
        // about (DIFFERENT, nearer good), or would hold B on the good side
        // past the change's half-way point (SAME within the band).
        s.side = match (call, side) {
            (Call::Unknown, placed) => placed,
            (c, Some(Side::Good)) if c == dir => side,
            (Call::Same, Some(Side::Bad)) => side,
            _ => None,
        };
        keep(lab, &mut out, s);
        let opposite = call.different() && call != dir;
        if opposite {
            // Another change, the other way: the tracked one is not between
            // lo and m in sum; it is said, and the search goes on above m.
            out.other_changes.push(OtherChange { a: lo, b: m, call, note: "the other way from good..bad".into() });
            lo = m;
            total = past(total);
        } else if side == Some(Side::Good) {
            if call == dir {
                out.other_changes.push(OtherChange {
                    a: lo,
                    b: m,
                    call,
                    note: "a smaller change the same way, wholly before half of the one tracked: the search went on past it".into(),
                });
            }
            lo = m;
            total = past(total);
        } else if call == dir || side == Some(Side::Bad) {
            hi = m;
            hi_against = lo;
            total = ratio;
        } else if call == Call::Same {
            lo = m;
            total = past(total);
        } else {
            out.answer = Answer::Undecided { lo, hi, at: m };
            return Ok(out);
        }
    }
    let confirm = step(lab, Purpose::Culprit, lo, hi)?;
    let call = confirm.result().call;
    keep(lab, &mut out, confirm);
    if call != dir {
        out.answer = Answer::Spread { lo: hi_against, hi };
        return Ok(out);
    }
    out.answer = Answer::Culprit { index: hi, parent: lo };
    if lo != good {
        let s = step(lab, Purpose::Range, good, lo)?;
        let call = s.result().call;
        // Said once: a smaller change the search passed is the same one.
        if call.different() && !out.other_changes.iter().any(|o| o.call == call && o.b <= lo) {
            out.other_changes.push(OtherChange { a: good, b: lo, call: s.result().call, note: "good..parent: before the culprit".into() });
        }
        if call == Call::Unknown {
            out.undecided_ranges.push((good, lo));
        }
        keep(lab, &mut out, s);
    }
    if hi != bad {
        let s = step(lab, Purpose::Range, hi, bad)?;
        let call = s.result().call;
        if call.different() {
            out.other_changes.push(OtherChange { a: hi, b: bad, call, note: "culprit..bad: after the culprit".into() });
        }
        if call == Call::Unknown {
            out.undecided_ranges.push((hi, bad));
        }
        keep(lab, &mut out, s);
    }
    Ok(out)
}
