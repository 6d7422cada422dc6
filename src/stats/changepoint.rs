//! Change points in a series of run medians: where a row's level shifted.
//!
//! The method is PELT (Killick, Fearnhead and Eckley 2012: the exact
//! optimal partition under a penalty, with pruning) on the logarithms of
//! the medians, a change in the mean of a normal with a known standard
//! deviation `sigma`. A partition costs the sum of its segments' squared
//! deviations from their means, in units of `sigma²`, plus [`PENALTY`] per
//! change: a change is taken only when it explains more than `PENALTY`
//! units of the series' variation, a likelihood-ratio test whose level is
//! the chance that noise alone explains as much (docs/METHODOLOGY.md has
//! the figures, and why PELT was chosen over E-divisive means with a
//! permutation test: measured on recorded A/A noise of this machine by
//! `the_methods_compared_on_recorded_noise` in the tests). Levels that
//! then differ by less than `min_effect` (the row's noise floor, the
//! smallest change worth naming) are merged, the closest first; each
//! boundary left is a [`Change`], its size the ratio of the levels' means
//! (after / before) with a 95% interval (Student's t, from the runs'
//! pooled spread around the levels named: a step does not widen it).
//!
//! Incremental: a [`Detector`] takes one median at a time ([`Detector::push`])
//! and keeps, for every prefix, the cost of its best partition and where
//! that partition's last change is. A push examines only the candidates
//! PELT has not pruned, which after a change are the runs since (about)
//! that change: the segment after the last change, never the whole series
//! again. Its work is counted (`Detector::last_work`, in tests); the series without
//! any change is the worst case, one step per run held (10,000 runs:
//! scripts/changepoints.sh prints the time). Nothing is stored between
//! queries: a caller that keeps a detector appends to it, `history
//! changes` rebuilds it from the history's medians on each query (the same
//! pushes, linear-to-quadratic in the runs but cheap at their scale).
//!
//! Pure: no I/O, no clock, no randomness. The values must be positive and
//! finite (a median of a time or a rate); [`Detector::push`] refuses others.

use std::ops::Range;

/// The cost of one change, in units of `sigma²`: a change is named only
/// when splitting there takes more than this from the sum of squared
/// deviations (`2 ln 10,000` ≈ 18.4, with 3 more for the change's unknown
/// place: a one-place test at about 1e-5; chosen by the A/A simulations of
/// docs/METHODOLOGY.md so that a series of one build shows no change in at
/// least 95 of 100).
pub const PENALTY: f64 = 21.4;

/// The fewest runs a level needs: one run alone is an outlier until a
/// second agrees with it.
pub const MIN_SIZE: usize = 2;

/// `scipy.stats.norm.ppf(0.975)`: the two-sided 95% normal quantile.
const Z95: f64 = 1.959963984540054;

/// How the detector judges a series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// The standard deviation of one run's log median around its level
    /// (positive and finite).
    pub sigma: f64,
    /// The smallest change named, as a fraction (0.05: 5%); levels closer
    /// than this are one level.
    pub min_effect: f64,
    /// The cost of a change in units of `sigma²` ([`PENALTY`]).
    pub penalty: f64,
    /// The fewest runs of a level ([`MIN_SIZE`], at least 1).
    pub min_size: usize,
}

impl Settings {
    /// The settings of `history changes`: [`PENALTY`], [`MIN_SIZE`], and the
    /// larger of `sigma` and the noise implied by `min_effect` (a floor of
    /// `f` is the 95% bound of the difference of two runs, `1.96 √2 sigma`
    /// in logs), so that a series quieter than its floor is not cut finer
    /// than the floor. A series of equal values with no smallest change
    /// still gets a positive `sigma` (`f64::EPSILON`): it has one level.
    pub fn new(sigma: f64, min_effect: f64) -> Settings {
        let implied = (1.0 + min_effect.max(0.0)).ln() / (Z95 * std::f64::consts::SQRT_2);
        let sigma = sigma.max(implied).max(f64::EPSILON);
        Settings { sigma, min_effect: min_effect.max(0.0), penalty: PENALTY, min_size: MIN_SIZE }
    }
}

/// The noise of a series from itself: the standard deviation of its
/// successive log differences over `√2` (a step adds one difference, not a
/// shift of every value, so a few changes move it little). `None` for
/// fewer than 3 values or any that is not positive and finite. O(n).
pub fn noise_of(values: &[f64]) -> Option<f64> {
    if values.len() < 3 || values.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
        return None;
    }
    let d: Vec<f64> = values.windows(2).map(|w| w[1].ln() - w[0].ln()).collect();
    Some(super::stddev(&d) / std::f64::consts::SQRT_2)
}

/// Why a value or settings were refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Refused {
    #[error("a median must be positive and finite, not {0}")]
    Value(f64),
    #[error("the settings need a positive finite sigma, a finite min_effect >= 0, a penalty > 0 and min_size >= 1 ({0:?})")]
    Settings(Settings),
}

/// One change of level: `after` starts at run `at` (an index into the
/// series), `before` ends just before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub at: usize,
    pub before: Range<usize>,
    pub after: Range<usize>,
    /// Geometric mean of the level after over the level before.
    pub ratio: f64,
    /// Its 95% interval: Student's t with the runs' pooled spread around
    /// the levels named (`Detector::changes`).
    pub lo: f64,
    pub hi: f64,
}

/// The incremental detector: PELT over the pushed values (see the module
/// header). Memory: O(n); a push: O(candidates kept).
#[derive(Clone, Debug)]
pub struct Detector {
    settings: Settings,
    /// The first value's log: every log is taken relative to it, so that
    /// the sums keep their precision.
    origin: Option<f64>,
    /// Prefix sums of the logs and of their squares (n + 1 each).
    sum: Vec<f64>,
    sum2: Vec<f64>,
    /// `best[t]`: the cost of the best partition of the first t values
    /// (infinite when none has every level of `min_size` runs).
    best: Vec<f64>,
    /// `last[t]`: where that partition's last level starts.
    last: Vec<usize>,
    /// The prefixes PELT has not pruned: where the next level may start.
    candidates: Vec<usize>,
    work: usize,
    /// The candidates' costs during a push (kept to reuse its allocation).
    scratch: Vec<f64>,
}

impl Detector {
    /// A detector with nothing pushed.
    pub fn new(settings: Settings) -> Result<Detector, Refused> {
        let s = settings;
        let ok = s.sigma > 0.0 && s.sigma.is_finite() && s.min_effect >= 0.0 && s.min_effect.is_finite() && s.penalty > 0.0;
        if !ok || s.min_size == 0 || !s.penalty.is_finite() {
            return Err(Refused::Settings(settings));
        }
        Ok(Detector {
            settings,
            origin: None,
            sum: vec![0.0],
            sum2: vec![0.0],
            best: vec![-settings.penalty],
            last: vec![0],
            candidates: vec![0],
            work: 0,
            scratch: Vec::new(),
        })
    }

    /// A detector with `values` pushed in order.
    pub fn over(settings: Settings, values: &[f64]) -> Result<Detector, Refused> {
        let mut d = Detector::new(settings)?;
        for &v in values {
            d.push(v)?;
        }
        Ok(d)
    }

    /// The values pushed.
    pub fn len(&self) -> usize {
        self.sum.len() - 1
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The segment costs the last push evaluated (its work).
    #[cfg(test)]
    pub fn last_work(&self) -> usize {
        self.work
    }

    /// The prefixes still candidates for the next level's start.
    #[cfg(test)]
    pub fn candidates(&self) -> usize {
        self.candidates.len()
    }

    /// The cost of the values `s..t` as one level, in units of `sigma²`.
    fn cost(&self, s: usize, t: usize) -> f64 {
        let n = (t - s) as f64;
        let a = self.sum[t] - self.sum[s];
        let b = self.sum2[t] - self.sum2[s];
        ((b - a * a / n).max(0.0)) / (self.settings.sigma * self.settings.sigma)
    }

    /// Appends one median (positive, finite). O(candidates).
    pub fn push(&mut self, value: f64) -> Result<(), Refused> {
        if !(value > 0.0 && value.is_finite()) {
            return Err(Refused::Value(value));
        }
        let origin = *self.origin.get_or_insert(value.ln());
        let x = value.ln() - origin;
        let n = self.len();
        self.sum.push(self.sum[n] + x);
        self.sum2.push(self.sum2[n] + x * x);
        let t = n + 1;
        let m = self.settings.min_size;
        // The best last level s..t among the candidates long enough.
        let (mut best, mut arg) = (f64::INFINITY, 0);
        let mut work = 0;
        let mut costs = std::mem::take(&mut self.scratch);
        costs.clear();
        for &s in &self.candidates {
            if t - s < m || !self.best[s].is_finite() {
                costs.push(f64::INFINITY);
                continue;
            }
            work += 1;
            let c = self.best[s] + self.cost(s, t);
            costs.push(c);
            if c + self.settings.penalty < best {
                (best, arg) = (c + self.settings.penalty, s);
            }
        }
        self.best.push(best);
        self.last.push(arg);
        // Pruning (the cost is that of a normal mean, so K = 0): a start
        // whose best continuation already costs more than the best
        // partition of 0..t can never be the last change of a later one.
        // Starts too recent to hold a level yet are kept.
        let mut i = 0;
        self.candidates.retain(|&s| {
            let c = costs[i];
            i += 1;
            t - s < m || c <= best
        });
        self.scratch = costs;
        if best.is_finite() {
            self.candidates.push(t);
        }
        self.work = work;
        Ok(())
    }

    /// The best partition of the values pushed, as PELT finds it (before
    /// levels closer than `min_effect` are merged): each level's range.
    pub fn segments(&self) -> Vec<Range<usize>> {
        let mut t = self.len();
        if t == 0 || !self.best[t].is_finite() {
            return if t == 0 { Vec::new() } else { std::iter::once(0..t).collect() };
        }
        let mut out = Vec::new();
        while t > 0 {
            let s = self.last[t];
            out.push(s..t);
            t = s;
        }
        out.reverse();
        out
    }

    /// The mean log (relative to the first value) of `r`.
    fn level(&self, r: &Range<usize>) -> f64 {
        (self.sum[r.end] - self.sum[r.start]) / r.len() as f64
    }

    /// The noise of one run around its level, for the intervals, with its
    /// 97.5% quantile: the pooled standard deviation of the logs around
    /// the means of `levels` (the levels named), with Student's t of
    /// `n - levels` degrees of freedom. A series too short for 2 degrees
    /// of freedom falls back on the settings' `sigma` and the normal
    /// quantile. Measured around the levels, so a step does not widen
    /// it as it widens the successive differences detection uses.
    fn residual_noise(&self, levels: &[Range<usize>]) -> (f64, f64) {
        let n = self.len();
        let df = n.saturating_sub(levels.len());
        if df < 2 {
            return (self.settings.sigma, Z95);
        }
        let ss: f64 = levels
            .iter()
            .map(|r| {
                let (s1, s2) = (self.sum[r.end] - self.sum[r.start], self.sum2[r.end] - self.sum2[r.start]);
                (s2 - s1 * s1 / r.len() as f64).max(0.0)
            })
            .sum();
        let sigma = (ss / df as f64).sqrt().max(f64::EPSILON);
        (sigma, super::trials::t_quantile(0.975, df as f64))
    }

    /// The changes named: PELT's levels with those closer than
    /// `min_effect` merged (the closest pair first), each boundary left
    /// with its ratio and interval. O(segments²).
    pub fn changes(&self) -> Vec<Change> {
        let mut levels = self.segments();
        let floor = (1.0 + self.settings.min_effect).ln();
        loop {
            let closest = levels
                .windows(2)
                .enumerate()
                .map(|(i, w)| (i, (self.level(&w[1]) - self.level(&w[0])).abs()))
                .filter(|&(_, d)| d < floor)
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let Some((i, _)) = closest else { break };
            let merged = levels[i].start..levels[i + 1].end;
            levels.splice(i..i + 2, [merged]);
        }
        let (sigma, q) = self.residual_noise(&levels);
        levels
            .windows(2)
            .map(|w| {
                let (before, after) = (w[0].clone(), w[1].clone());
                let d = self.level(&after) - self.level(&before);
                let half = q * sigma * (1.0 / before.len() as f64 + 1.0 / after.len() as f64).sqrt();
                Change { at: after.start, ratio: d.exp(), lo: (d - half).exp(), hi: (d + half).exp(), before, after }
            })
            .collect()
    }
}

#[cfg(test)]
mod edivisive;
#[cfg(test)]
mod tests;
