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
//!   ([`ATTEMPTS`]) and, still UNKNOWN, ends the search saying so;
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
}

impl Step {
    /// The verdict of the step: its last attempt's.
    pub fn result(&self) -> &Measured {
        self.attempts.last().expect("a step has an attempt")
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
    /// from 1, each later one with more rounds.
    fn measure(&mut self, a: usize, b: usize, attempt: u32) -> anyhow::Result<Measured>;
    /// Called after each step (to print it and save the record).
    fn step_done(&mut self, _step: &Step) {}
}

/// Measures `b` against `a` until decided or [`ATTEMPTS`] are spent.
fn step(lab: &mut dyn Lab, purpose: Purpose, a: usize, b: usize) -> anyhow::Result<Step> {
    let mut s = Step { purpose, a, b, attempts: Vec::new() };
    for attempt in 1..=ATTEMPTS {
        s.attempts.push(lab.measure(a, b, attempt)?);
        if s.result().call != Call::Unknown {
            break;
        }
    }
    lab.step_done(&s);
    Ok(s)
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
    let mut out =
        Outcome { steps: Vec::new(), answer: Answer::NoChange { call: Call::Unknown }, other_changes: Vec::new(), skipped: Vec::new() };
    let confirm = step(lab, Purpose::Confirm, good, bad)?;
    let dir = confirm.result().call;
    out.steps.push(confirm);
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
        let s = step(lab, Purpose::Search, lo, m)?;
        let call = s.result().call;
        out.steps.push(s);
        match call {
            c if c == dir => {
                hi = m;
                hi_against = lo;
            }
            Call::Same => lo = m,
            Call::Unknown => {
                out.answer = Answer::Undecided { lo, hi, at: m };
                return Ok(out);
            }
            opposite => {
                // Another change, the other way: the tracked one is not
                // between lo and m in sum; it is said, and the search goes on
                // above m.
                out.other_changes.push(OtherChange { a: lo, b: m, call: opposite, note: "the other way from good..bad".into() });
                lo = m;
            }
        }
    }
    let confirm = step(lab, Purpose::Culprit, lo, hi)?;
    let call = confirm.result().call;
    out.steps.push(confirm);
    if call != dir {
        out.answer = Answer::Spread { lo: hi_against, hi };
        return Ok(out);
    }
    out.answer = Answer::Culprit { index: hi, parent: lo };
    if lo != good {
        let s = step(lab, Purpose::Range, good, lo)?;
        if s.result().call.different() {
            out.other_changes.push(OtherChange { a: good, b: lo, call: s.result().call, note: "good..parent: before the culprit".into() });
        }
        out.steps.push(s);
    }
    if hi != bad {
        let s = step(lab, Purpose::Range, hi, bad)?;
        if s.result().call.different() {
            out.other_changes.push(OtherChange { a: hi, b: bad, call: s.result().call, note: "culprit..bad: after the culprit".into() });
        }
        out.steps.push(s);
    }
    Ok(out)
}
