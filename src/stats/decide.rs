//! Decided verdicts: whether B differs from A, from trial pairs, as one of
//! three words (docs/METHODOLOGY.md, "Decided verdicts: SAME, DIFFERENT,
//! UNKNOWN").
//!
//! A **trial pair** is a fresh pair of worker processes, A and B, whose
//! timed samples alternate; each sample of B has a sample of A a few
//! milliseconds away, and their log ratio `ln b - ln a` is one paired
//! observation. A pair is summarised by the **median of its sample log
//! ratios** ([`pair_summary`]). Samples of one pair share their two
//! processes' memory layout, pages and placement, so they cannot tell how
//! the next pair of processes will come out: the interval of the change is
//! taken **across trial pairs**, from their summaries ([`across_pairs`]),
//! as `stats::trials` does across trials: the median of the summaries with
//! a Student t interval centred on it, half-width `t(n - 1) f(n) s /
//! sqrt(n)` (`f` is [`super::trials::median_factor`]), exponentiated, so
//! the ratio always lies inside its own interval. From
//! [`ORDER_MIN_VALUES`] (12) pairs on, where one exists at the level, the
//! interval is the median's from order statistics instead (`order`,
//! interpolated as Hettmansperger and Sheather do): no standard deviation
//! enters it, so a pair or two far out (one side in another speed mode
//! than the other) do not widen it, and the median still lies inside it.
//! Which interval a look uses depends on its pair count and level alone,
//! never on the values. [`within_pair`] gives the
//! interval of one pair alone, from its samples; it is marked
//! [`Scope::WithinPair`] because it does **not** hold the variation between
//! processes and is narrower than the truth warrants.
//!
//! **The decision** ([`Plan::decide`]) is re-made at the looks: at
//! `min_pairs`, then at about twice the pairs of the look before, and at
//! `max_pairs` (3, 6 and 10 pairs by default: [`Design::look_pairs`]); a row
//! between two looks takes another pair. Each look is allotted its level
//! `alpha_k` (weighted Bonferroni across the planned looks: the levels sum
//! to `alpha`). The first look gets [`FIRST_LOOK_SHARE`] of `alpha`, the
//! later looks share the rest equally ([`Design::levels`]); a design of one
//! look gives it all of `alpha`:
//!
//! - **DIFFERENT** when the two-sided `1 - alpha_k` interval excludes 1 (or
//!   the band `1 / (1 + min_effect) ..= 1 + min_effect`), with the
//!   direction of the ratio;
//! - **SAME** when two one-sided tests at `alpha_k` each put the ratio
//!   inside `1 / (1 + e) ..= 1 + e` (`e` the equivalence band, 2% unless
//!   given): the `1 - 2 alpha_k` interval lies inside that band. Before the
//!   last look a row stops as SAME only when the change its point suggests
//!   could not be called DIFFERENT even at the last look with the spread
//!   seen so far (`|ln ratio| - t_last f(max) s / sqrt(max) <= ln(1 +
//!   min_effect)`); a row leaning away from 1 spends its budget to find out
//!   whether it is DIFFERENT, and is SAME only at the end;
//! - **UNKNOWN** otherwise: too few pairs yet, take another
//!   ([`Decision::more_pairs`]), or the budget is spent.
//!
//! DIFFERENT is tested first: a 1% change inside a 2% band is reported as
//! the change it is when the pairs can show it.
//!
//! **Rows whose pairs ended** ([`Plan::at_end`]): once a row can take no
//! more pairs (the run's budget, an interruption, rounds left out: never
//! its own values), the look it reached is its last and spends all of
//! `alpha` the looks before it left; `compare` judges finished runs so.
//!
//! **Why Bonferroni.** Whatever the correlation between looks, the chance of
//! a false DIFFERENT at any look is at most the sum of the looks' levels,
//! `alpha`; a false SAME (the true ratio outside the band) needs one of
//! the one-sided tests to reject falsely at some look, again at most
//! `alpha`. Group-sequential boundaries (Pocock, O'Brien-Fleming) rely on
//! the statistic following a Brownian motion across looks, which a t
//! statistic with 2 to 9 degrees of freedom over medians does not.
//!
//! **Why half at the first look.** A run's budget buys most rows their
//! first look and no more (117 of 145 rows of a `noise --lockstep` of the
//! default selection on a 2-core machine stopped at 3 pairs), so an equal
//! split spends most of `alpha` on looks few rows reach: at the first of 8
//! looks it leaves `alpha / 8`, t(2) = 12.6, where half of `alpha` gives
//! 6.2. The tests (`spending`) compare the schemes on the same simulated
//! rows (2,000 each, 3 to 10 pairs), every one keeping the false-DIFFERENT
//! rate (normal A/A: half-first 2.4%, equal 1.6%, Pocock 2.0%,
//! O'Brien-Fleming 1.3%). With the budget ending at the first look, a 2%
//! change at 0.5% spread is DIFFERENT in 58% of rows against the equal
//! split's 20% (Pocock 52%, O'Brien-Fleming 1%); with the whole budget, a 2%
//! change at 1% spread is DIFFERENT in 89% against 94% (Pocock 88%,
//! O'Brien-Fleming 96%, which decides a 10% change after 5.4 pairs against
//! 4.7 and lets 3.8% of A/A rows in two speed modes through against 2.2%).
//!
//! **Why the looks double.** A look after every pair spent `alpha / 2 / 7`
//! on each of 4 to 10 pairs, looks whose only use is stopping a row a pair
//! sooner; a row that needed its whole budget was judged at 0.36%. Looks
//! at 3, 6 and 10 call a 2% change at 1% spread with the whole budget in
//! 96.7% of rows against 88.8%, keep the first look's power and decide a
//! 10% change after 4.8 pairs against 4.7 (the `spending` tests).
//!
//! Identical summaries (a deterministic metric) give the exact ratio: a
//! zero-width interval, decided on the point, as `stats::change::paired`
//! does.
//!
//! Pure: no I/O, no clock, no randomness.

use serde::{Deserialize, Serialize};

use super::estimators::{mad, median, stddev};
use super::trials::{median_factor, t_quantile};

mod order;

pub use order::ORDER_MIN_VALUES;

/// The overall false-verdict rate a design keeps unless told otherwise.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// The equivalence band unless told otherwise (2%, as `--equivalence 2%`).
pub const DEFAULT_EQUIVALENCE: f64 = 0.02;

/// The first look: with fewer pairs the t quantile (12.7 at one degree of
/// freedom, before any division of alpha) leaves nothing to decide.
pub const DEFAULT_MIN_PAIRS: usize = 3;

/// The share of `alpha` the first look is allotted when a design has more
/// than one (the later looks share the rest equally).
pub const FIRST_LOOK_SHARE: f64 = 0.5;

/// The budget of trial pairs per row unless told otherwise.
pub const DEFAULT_MAX_PAIRS: usize = 10;

/// How far apart the looks are unless told otherwise: each look after the
/// first at about twice the pairs of the one before ([`Design::look_pairs`]).
pub const DEFAULT_LOOK_GROWTH: f64 = 2.0;

/// The largest budget a design may plan (its quantiles are tabulated).
pub const MAX_PLANNED_PAIRS: usize = 1000;

/// A spread of log ratios at or below this is none: equal ratios differ in
/// the last bits of their logs (as in `stats::change::paired`).
const NO_SPREAD: f64 = 1e-12;

/// The median absolute deviation of normal values times this is their
/// standard deviation.
const MAD_TO_SD: f64 = 1.4826;

/// What an interval of the change covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Across trial pairs: holds the variation between processes.
    AcrossPairs,
    /// One trial pair's samples alone: does NOT hold the variation between
    /// processes, so it is narrower than a repeat of the experiment needs.
    WithinPair,
}

/// An interval of the ratio B / A, centred on the median log ratio.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairInterval {
    /// exp(median of the log ratios).
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Degrees of freedom (values - 1; infinite when every log ratio was
    /// the same and the interval is the exact ratio).
    pub df: f64,
    /// How many log ratios it came from: pairs across, samples within.
    pub values: usize,
    pub scope: Scope,
}

/// The sample log ratios `ln b - ln a` of paired observations (B over A),
/// in order; `None` when the lengths differ, are zero, or a value is not
/// positive and finite.
pub fn log_ratios(a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    let ok = |x: &f64| x.is_finite() && *x > 0.0;
    if a.is_empty() || a.len() != b.len() || !a.iter().all(ok) || !b.iter().all(ok) {
        return None;
    }
    Some(a.iter().zip(b).map(|(x, y)| y.ln() - x.ln()).collect())
}

/// One trial pair's summary: the median of its sample log ratios; `None`
/// when there are none or one is not finite.
pub fn pair_summary(log_ratios: &[f64]) -> Option<f64> {
    (!log_ratios.is_empty() && log_ratios.iter().all(|x| x.is_finite())).then(|| median(log_ratios))
}

/// The median of `xs` (at least two, finite) with the half-width `t f(n) s
/// / sqrt(n)` around it, on the log scale; the half-width is 0 when the
/// values have no spread.
fn centred(xs: &[f64], t: f64) -> (f64, f64) {
    let n = xs.len();
    let s = stddev(xs);
    let hw = if s <= NO_SPREAD { 0.0 } else { t * median_factor(n) * s / (n as f64).sqrt() };
    (median(xs), hw)
}

/// `exp` of the log-scale point `m` and its bounds `lo <= m <= hi` as
/// `(ratio, lo, hi)`, the bounds holding the ratio even where `exp` rounds
/// a last bit away.
fn exp_bounds(m: f64, lo: f64, hi: f64) -> (f64, f64, f64) {
    let r = m.exp();
    (r, lo.exp().min(r), hi.exp().max(r))
}

fn interval(xs: &[f64], level: f64, scope: Scope) -> Option<PairInterval> {
    let n = xs.len();
    if n < 2 || !xs.iter().all(|x| x.is_finite()) || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let df = (n - 1) as f64;
    let order = if scope == Scope::AcrossPairs { order_bounds(xs, level, ORDER_MIN_VALUES) } else { None };
    let (m, lo, hi) = order.unwrap_or_else(|| {
        let (m, hw) = centred(xs, t_quantile((1.0 + level) / 2.0, df));
        (m, m - hw, m + hw)
    });
    let (ratio, elo, ehi) = exp_bounds(m, lo, hi);
    let df = if lo == hi { f64::INFINITY } else { df };
    Some(PairInterval { ratio, lo: elo, hi: ehi, level, df, values: n, scope })
}

/// The median of `xs` (finite) with its order-statistic interval at
/// `level` ([`order::interval`]), `(m, lo, hi)` on the log scale, where
/// `xs` holds at least `from` values ([`ORDER_MIN_VALUES`]) and such an interval
/// exists at `level`; else `None` (the t interval applies).
fn order_bounds(xs: &[f64], level: f64, from: usize) -> Option<(f64, f64, f64)> {
    if !order::applies(xs.len(), level, from) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (lo, hi) = order::interval(&sorted, level)?;
    let m = median(&sorted);
    Some((m, lo.min(m), hi.max(m)))
}

/// The interval of the change across trial pairs, from their summaries (log
/// ratios, at least two, finite) at `level`: [`Scope::AcrossPairs`].
/// `None` with fewer than two summaries, a value not finite or a level
/// outside (0, 1).
///
/// Cost: O(pairs).
pub fn across_pairs(summaries: &[f64], level: f64) -> Option<PairInterval> {
    interval(summaries, level, Scope::AcrossPairs)
}

/// The interval of the change from one trial pair alone, from its sample
/// log ratios, at `level`: [`Scope::WithinPair`], which does not hold the
/// variation between processes (a fresh pair may land outside it). For a
/// row with a single pair; `None` as for [`across_pairs`].
///
/// Cost: O(samples).
pub fn within_pair(log_ratios: &[f64], level: f64) -> Option<PairInterval> {
    interval(log_ratios, level, Scope::WithinPair)
}

/// Which way B moved from A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// B's value is above A's (ratio above 1): slower for a time, faster
    /// for a throughput.
    Higher,
    /// B's value is below A's (ratio below 1).
    Lower,
}

/// Why a row is not decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// Fewer pairs than the design's first look: take another.
    FewPairs,
    /// Neither verdict yet: take another pair.
    NotYet,
    /// The last look came and neither verdict held.
    BudgetSpent,
    /// A summary was NaN or infinite.
    BadInput,
    /// The design itself is invalid (see [`Design::check`]).
    BadDesign,
}

/// The verdict about a change, at one look.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Decision {
    /// The `1 - alpha_k` interval `lo..=hi` of the ratio B / A excludes 1
    /// (and the minimum effect's band); `ratio` lies inside it and its
    /// side of 1 is `direction`.
    Different { direction: Direction, ratio: f64, lo: f64, hi: f64 },
    /// The `1 - 2 alpha_k` interval `lo..=hi` lies inside `1 / (1 + band)
    /// ..= 1 + band`.
    Same { band: f64, ratio: f64, lo: f64, hi: f64 },
    /// Neither, and why.
    Unknown { why: Why },
}

impl Decision {
    /// The word a report prints: DIFFERENT, SAME or UNKNOWN.
    pub fn word(&self) -> &'static str {
        match self {
            Decision::Different { .. } => "DIFFERENT",
            Decision::Same { .. } => "SAME",
            Decision::Unknown { .. } => "UNKNOWN",
        }
    }

    /// Whether the row should take another trial pair (undecided, and the
    /// budget not spent).
    pub fn more_pairs(&self) -> bool {
        matches!(self, Decision::Unknown { why: Why::FewPairs | Why::NotYet })
    }
}

/// A sequential design: looks after every pair from `min_pairs` to
/// `max_pairs`, keeping the overall false-DIFFERENT and false-SAME rates
/// each at most `alpha`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The first look (at least 2).
    pub min_pairs: usize,
    /// The last look: the budget of trial pairs.
    pub max_pairs: usize,
    /// The overall two-sided false-DIFFERENT rate, and the false-SAME rate.
    pub alpha: f64,
    /// The band of SAME: 0.02 is +-2%.
    pub equivalence: f64,
    /// The smallest change DIFFERENT may call: 0.0 calls any (default).
    pub min_effect: f64,
    /// The share of `alpha` the first look is allotted (the later looks
    /// share the rest equally); `None`, as in records written before the
    /// share existed, splits `alpha` equally across the looks.
    #[serde(default)]
    pub first_look_share: Option<f64>,
    /// How far apart the looks are: each look after the first at about
    /// this many times the pairs of the one before, the last at
    /// `max_pairs` ([`Design::look_pairs`]); `None`, as in records written
    /// before it existed, looks after every pair.
    #[serde(default)]
    pub look_growth: Option<f64>,
}

impl Default for Design {
    fn default() -> Design {
        Design {
            min_pairs: DEFAULT_MIN_PAIRS,
            max_pairs: DEFAULT_MAX_PAIRS,
            alpha: DEFAULT_ALPHA,
            equivalence: DEFAULT_EQUIVALENCE,
            min_effect: 0.0,
            first_look_share: Some(FIRST_LOOK_SHARE),
            look_growth: Some(DEFAULT_LOOK_GROWTH),
        }
    }
}

/// Why a [`Design`] cannot be planned.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DesignError {
    #[error("min_pairs must be at least 2 (one pair has no spread across pairs), got {0}")]
    FewPairs(usize),
    #[error("max_pairs ({max}) must be at least min_pairs ({min}) and at most {MAX_PLANNED_PAIRS}")]
    MaxPairs { min: usize, max: usize },
    #[error("alpha must lie between 0 and 0.5, got {0}")]
    Alpha(f64),
    #[error("the equivalence band must be a finite fraction above 0, got {0}")]
    Equivalence(f64),
    #[error("the minimum effect must be a finite fraction of 0 or more, got {0}")]
    MinEffect(f64),
    #[error("the first look's share of alpha must lie above 0 and below 1, got {0}")]
    FirstLookShare(f64),
    #[error("the growth from one look to the next must be a finite factor above 1, got {0}")]
    LookGrowth(f64),
}

impl Design {
    /// Whether the design can be planned.
    ///
    /// # Errors
    ///
    /// The first [`DesignError`] that applies.
    pub fn check(&self) -> Result<(), DesignError> {
        if self.min_pairs < 2 {
            return Err(DesignError::FewPairs(self.min_pairs));
        }
        if self.max_pairs < self.min_pairs || self.max_pairs > MAX_PLANNED_PAIRS {
            return Err(DesignError::MaxPairs { min: self.min_pairs, max: self.max_pairs });
        }
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(DesignError::Alpha(self.alpha));
        }
        if !(self.equivalence.is_finite() && self.equivalence > 0.0) {
            return Err(DesignError::Equivalence(self.equivalence));
        }
        if !(self.min_effect.is_finite() && self.min_effect >= 0.0) {
            return Err(DesignError::MinEffect(self.min_effect));
        }
        if let Some(share) = self.first_look_share
            && !(share > 0.0 && share < 1.0)
        {
            return Err(DesignError::FirstLookShare(share));
        }
        if let Some(g) = self.look_growth
            && !(g.is_finite() && g > 1.0)
        {
            return Err(DesignError::LookGrowth(g));
        }
        Ok(())
    }

    /// The design of a run whose rows take `min` to `max` trials (its trial
    /// plan): its first look at `min` pairs (at least 2), its last at `max`
    /// (at least the first), SAME within `equivalence`, any change
    /// DIFFERENT. Check it before use: a band of 0 is refused there.
    pub fn for_trials(min: u32, max: u32, equivalence: f64) -> Design {
        let min_pairs = (min as usize).clamp(2, MAX_PLANNED_PAIRS);
        let max_pairs = (max as usize).clamp(min_pairs, MAX_PLANNED_PAIRS);
        Design { min_pairs, max_pairs, equivalence, ..Design::default() }
    }

    /// How many looks the design plans.
    pub fn looks(&self) -> usize {
        self.look_pairs().len()
    }

    /// The pair counts the design looks at, first to last: every count
    /// from `min_pairs` to `max_pairs` without a `look_growth`; with one
    /// `g`, `min_pairs`, then each next look at `ceil(g x` the one
    /// before`)` while that stays below `max_pairs` and leaves it more than
    /// `sqrt(g)` times as far (3, 6, 10 for 3 to 10 pairs at 2; 3, 6, 12,
    /// 30 for 3 to 30), then `max_pairs`.
    pub fn look_pairs(&self) -> Vec<usize> {
        let (min, max) = (self.min_pairs, self.max_pairs.max(self.min_pairs));
        let Some(g) = self.look_growth.filter(|g| g.is_finite() && *g > 1.0) else {
            return (min..=max).collect();
        };
        let mut looks = vec![min];
        loop {
            let last = looks[looks.len() - 1];
            let next = ((last as f64 * g).ceil() as usize).max(last + 1);
            if next >= max || (next as f64) * g.sqrt() >= max as f64 {
                break;
            }
            looks.push(next);
        }
        if max > min {
            looks.push(max);
        }
        looks
    }

    /// The level each look is allotted, first look first: with a
    /// `first_look_share`, that share of `alpha` at the first look and the
    /// rest split equally over the others (all of `alpha` for one look);
    /// without, `alpha / looks` each. They sum to `alpha`.
    pub fn levels(&self) -> Vec<f64> {
        let looks = self.looks();
        match self.first_look_share {
            Some(share) if looks > 1 => {
                let later = self.alpha * (1.0 - share) / (looks - 1) as f64;
                std::iter::once(self.alpha * share).chain(std::iter::repeat_n(later, looks - 1)).collect()
            }
            _ => vec![self.alpha / looks as f64; looks],
        }
    }
}

/// A checked [`Design`] with each look's level and t quantiles tabulated,
/// to decide many looks cheaply.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    design: Design,
    /// Per pair count (pairs - min_pairs): the level alpha_k of the look
    /// there, 0 where the design takes no look.
    levels: Vec<f64>,
    /// Per pair count: t(1 - alpha_k / 2, pairs - 1), the DIFFERENT
    /// interval's quantile (infinite where there is no look).
    t_different: Vec<f64>,
    /// Per pair count: t(1 - alpha_k, pairs - 1), the SAME interval's.
    t_same: Vec<f64>,
    /// Every pair count is the last look taken ([`Plan::at_end`]).
    ended: bool,
    /// From this many pairs on, a look's intervals come from order
    /// statistics ([`ORDER_MIN_VALUES`]; the tests compare the t interval
    /// alone with it).
    order_from: usize,
}

impl Plan {
    /// Plans `design` at its [`Design::levels`] (weighted Bonferroni).
    ///
    /// # Errors
    ///
    /// The design's [`DesignError`].
    ///
    /// Cost: O(looks) quantiles.
    pub fn new(design: Design) -> Result<Plan, DesignError> {
        design.check()?;
        Ok(Plan::with_levels(design, &design.levels()))
    }

    /// Plans a checked `design` with `levels[k]` at its look `k` (the tests
    /// compare other spending schemes, and naive repeated testing, with it).
    fn with_levels(design: Design, levels: &[f64]) -> Plan {
        let mut per_pairs = vec![0.0; design.max_pairs - design.min_pairs + 1];
        for (n, a) in design.look_pairs().into_iter().zip(levels) {
            per_pairs[n - design.min_pairs] = *a;
        }
        Plan::by_pairs(design, per_pairs)
    }

    /// Plans a checked `design` with `levels[n - min_pairs]` at `n` pairs
    /// (0: no look there).
    fn by_pairs(design: Design, levels: Vec<f64>) -> Plan {
        let t = |p: f64, n: usize| t_quantile(p, (n - 1) as f64);
        let quantiles = |two_sided: f64| -> Vec<f64> {
            (design.min_pairs..=design.max_pairs)
                .zip(&levels)
                .map(|(n, a)| if *a > 0.0 { t(1.0 - a / two_sided, n) } else { f64::INFINITY })
                .collect()
        };
        Plan { design, t_different: quantiles(2.0), t_same: quantiles(1.0), levels, ended: false, order_from: ORDER_MIN_VALUES }
    }

    /// The plan for rows whose pairs have ended (the run's budget, an
    /// interruption, or rounds left out stopped them, never their own
    /// values): the look a row reached is its last, and it is allotted all
    /// of `alpha` the looks before it left unspent (`alpha` less the levels
    /// of the looks before it; at the planned last look, its own level). The
    /// false-verdict rate stays at `alpha` by the same union bound, so long
    /// as where the pairs end does not depend on their values (the tests
    /// simulate it). A row ended at its first look is judged at `alpha`,
    /// not half of it; a row that was already decided stays decided the
    /// same way (its level only grows). What `compare` judges a finished
    /// run's rows with.
    ///
    /// Cost: O(looks) quantiles.
    pub fn at_end(&self) -> Plan {
        let mut spent = 0.0;
        let left: Vec<f64> = self
            .levels
            .iter()
            .map(|a| {
                let l = (self.design.alpha - spent).max(*a);
                spent += a;
                l
            })
            .collect();
        Plan { ended: true, order_from: self.order_from, ..Plan::by_pairs(self.design, left) }
    }

    /// The level of the look at `pairs` pairs; `None` where the plan takes
    /// no look (outside `min_pairs..=max_pairs`, or between two looks).
    pub fn look_alpha(&self, pairs: usize) -> Option<f64> {
        let k = pairs.checked_sub(self.design.min_pairs).filter(|k| *k < self.levels.len())?;
        self.tested(k).then(|| self.levels[k])
    }

    /// Whether the plan takes a look at `k` pairs past `min_pairs` (a
    /// level above 0); between two looks nothing is tested.
    fn tested(&self, k: usize) -> bool {
        self.levels[k] > 0.0
    }

    /// The decision after the pairs whose summaries (log ratios B over A,
    /// [`pair_summary`]) are `summaries`, in the order they ran. Beyond
    /// `max_pairs`, only the first `max_pairs` count (the plan's last look).
    ///
    /// Cost: O(pairs).
    pub fn decide(&self, summaries: &[f64]) -> Decision {
        let d = &self.design;
        if !summaries.iter().all(|x| x.is_finite()) {
            return Decision::Unknown { why: Why::BadInput };
        }
        if summaries.len() < d.min_pairs {
            return Decision::Unknown { why: Why::FewPairs };
        }
        let xs = &summaries[..summaries.len().min(d.max_pairs)];
        let (n, look) = (xs.len(), xs.len() - d.min_pairs);
        if !self.tested(look) {
            // Between two looks: nothing is tested, take another pair.
            return Decision::Unknown { why: Why::NotYet };
        }
        let effect = d.min_effect.ln_1p();
        let (m, lo, hi) = self.bounds(xs, look, 1.0);
        if lo > effect || hi < -effect {
            let direction = if m > 0.0 { Direction::Higher } else { Direction::Lower };
            let (ratio, lo, hi) = exp_bounds(m, lo, hi);
            return Decision::Different { direction, ratio, lo, hi };
        }
        let band = d.equivalence.ln_1p();
        let (_, lo_same, hi_same) = self.bounds(xs, look, 2.0);
        let inside = lo_same > -band && hi_same < band;
        let last = n == d.max_pairs;
        if inside && (last || self.ended || self.futile(xs, m, effect)) {
            let (ratio, lo, hi) = exp_bounds(m, lo_same, hi_same);
            return Decision::Same { band: d.equivalence, ratio, lo, hi };
        }
        Decision::Unknown { why: if last { Why::BudgetSpent } else { Why::NotYet } }
    }

    /// The median of `xs` (the pairs of the look `look`, finite) and the
    /// bounds of its interval on the log scale, `(m, lo, hi)`, at `1 -
    /// times x alpha_k`: `times` 1 for DIFFERENT's two-sided interval, 2 for
    /// SAME's. From [`ORDER_MIN_VALUES`] pairs on the median's
    /// order-statistic interval where one exists at that level, else the t
    /// interval centred on the median: chosen by the pair count and the
    /// level, never by the values.
    fn bounds(&self, xs: &[f64], look: usize, times: f64) -> (f64, f64, f64) {
        let level = 1.0 - times * self.levels[look];
        if let Some(b) = order_bounds(xs, level, self.order_from) {
            return b;
        }
        let t = if times > 1.0 { self.t_same[look] } else { self.t_different[look] };
        let (m, hw) = centred(xs, t);
        (m, m - hw, m + hw)
    }

    /// Whether `pairs` pairs reach the plan's last look.
    pub fn is_last(&self, pairs: usize) -> bool {
        pairs >= self.design.max_pairs
    }

    /// The design this plan carries out.
    pub fn design(&self) -> &Design {
        &self.design
    }

    /// The look `summaries` reach (their count, at most `max_pairs`) and
    /// the summaries it uses; `None` before the first look or with a value
    /// not finite.
    fn look<'s>(&self, summaries: &'s [f64]) -> Option<(usize, &'s [f64])> {
        let d = &self.design;
        if summaries.len() < d.min_pairs || !summaries.iter().all(|x| x.is_finite()) {
            return None;
        }
        let xs = &summaries[..summaries.len().min(d.max_pairs)];
        Some((xs.len() - d.min_pairs, xs))
    }

    /// The p-value of DIFFERENT at the look `summaries` reach, adjusted for
    /// the looks (weighted Bonferroni: the look's own two-sided p-value of
    /// `|median| > ln(1 + min_effect)`, times `alpha / alpha_k`, at most 1): below `alpha`
    /// exactly when [`Plan::decide`] says DIFFERENT. What a false discovery
    /// control across rows (`stats::benjamini_hochberg`) takes; 1 between
    /// two looks (nothing is tested there). `None` before the first look or
    /// with a value not finite.
    ///
    /// Cost: O(pairs).
    pub fn p_different(&self, summaries: &[f64]) -> Option<f64> {
        let (look, xs) = self.look(summaries)?;
        if !self.tested(look) {
            return Some(1.0);
        }
        let n = xs.len();
        let (m, s) = (median(xs), stddev(xs));
        let effect = self.design.min_effect.ln_1p();
        let beyond = m.abs() - effect;
        if s <= NO_SPREAD {
            return Some(if beyond > 0.0 { 0.0 } else { 1.0 });
        }
        let p = if order::applies(n, 1.0 - self.levels[look], self.order_from) {
            // The level at which the order-statistic interval leaves the band.
            let mut sorted = xs.to_vec();
            sorted.sort_by(f64::total_cmp);
            order::p_beyond(&sorted, effect, true).min(order::p_beyond(&sorted, effect, false))
        } else {
            let t = beyond / (median_factor(n) * s / (n as f64).sqrt());
            let dist = statrs::distribution::StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
            2.0 * (1.0 - statrs::distribution::ContinuousCDF::cdf(&dist, t))
        };
        Some((p * self.design.alpha / self.levels[look]).min(1.0))
    }

    /// The smallest change DIFFERENT could call at the look `summaries`
    /// reach, with their spread: `(1 + min_effect) exp(hw) - 1`, `hw` the
    /// look's DIFFERENT half-width (0 for a metric without spread). What a
    /// row "can see". `None` before the first look, between two looks, or
    /// with a value not finite.
    ///
    /// Cost: O(pairs).
    pub fn sees(&self, summaries: &[f64]) -> Option<f64> {
        let (look, xs) = self.look(summaries)?;
        if !self.tested(look) {
            return None;
        }
        let (m, lo, hi) = self.bounds(xs, look, 1.0);
        let hw = (m - lo).max(hi - m);
        Some((1.0 + self.design.min_effect) * hw.exp() - 1.0)
    }

    /// Whether the point `m` of the pairs `xs` would not be DIFFERENT even
    /// at the last look with the spread seen so far: the early stop for
    /// SAME, `|m| - t_last f(max) s / sqrt(max) <= ln(1 + min_effect)`. From
    /// [`ORDER_MIN_VALUES`] pairs on (where intervals come from order
    /// statistics), `s` is the smaller
    /// of the standard deviation and the scaled median absolute deviation
    /// (`1.4826 MAD`), so that a pair or two far out, which those intervals
    /// pass over, do not stop a row as SAME either. (A smaller `s` only
    /// delays SAME: each SAME still needs its own interval inside the band.)
    fn futile(&self, xs: &[f64], m: f64, effect: f64) -> bool {
        let (last, max) = (self.levels.len() - 1, self.design.max_pairs);
        let mut s = stddev(xs);
        if xs.len() >= self.order_from {
            s = s.min(MAD_TO_SD * mad(xs));
        }
        let hw = if s <= NO_SPREAD { 0.0 } else { self.t_different[last] * median_factor(max) * s / (max as f64).sqrt() };
        m.abs() - hw <= effect
    }
}

#[cfg(test)]
mod tests;
