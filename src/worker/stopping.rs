//! The stopping rule: when to stop taking timed samples. Pure: it sees the
//! values so far and the elapsed time, never a clock.

use crate::evidence::StopReason;
use crate::model::MeasureSpec;
use crate::stats;

/// The decision after a timed sample, with the relative CI half-width of the
/// median when it was computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub stop: Option<StopReason>,
    pub ci_rel_half_width: Option<f64>,
}

/// The fewest timed samples a trial needs before it may stop, after a
/// timed sample of `last_sample_ns`: the profile's minimum, or as many of
/// such samples as fit in the trial's budget when fewer do (at least one: a
/// trial of long samples is one sample, and the row's trials give it its
/// spread).
pub fn min_samples(m: &MeasureSpec, last_sample_ns: u64) -> u32 {
    let budget_ns = m.budget_ms.saturating_mul(1_000_000);
    let fit = budget_ns.checked_div(last_sample_ns).unwrap_or(u64::MAX);
    m.min_samples.min(u32::try_from(fit).unwrap_or(u32::MAX)).max(1)
}

/// Decides whether to stop after the timed samples `values` of a trial took
/// `elapsed_ns` in all, the last of them `last_sample_ns`.
///
/// `--runs N` stops at exactly N. Otherwise: never before [`min_samples`];
/// then stop at the sample cap, when one more sample of the last one's
/// length would overrun the trial's budget, or when the bootstrap 95% CI
/// half-width of the median (two samples or more) is within
/// `ci_target_pct` of the median.
pub fn decide(values: &[f64], elapsed_ns: u64, last_sample_ns: u64, m: &MeasureSpec, seed: u64) -> Decision {
    let n = values.len() as u32;
    if let Some(fixed) = m.fixed_runs {
        let stop = (n >= fixed).then_some(StopReason::Fixed);
        return Decision { stop, ci_rel_half_width: None };
    }
    if n < min_samples(m, last_sample_ns) {
        return Decision { stop: None, ci_rel_half_width: None };
    }
    let median = stats::median(values);
    let rel = (n >= 2 && median != 0.0)
        .then(|| stats::bootstrap_median_ci(values, 0.95, stats::DEFAULT_RESAMPLES, seed).half_width() / median.abs());
    let budget_ns = m.budget_ms.saturating_mul(1_000_000);
    let stop = if n >= m.max_samples {
        Some(StopReason::Cap)
    } else if rel.is_some_and(|r| r * 100.0 <= m.ci_target_pct) {
        Some(StopReason::CiTarget)
    } else if elapsed_ns.saturating_add(last_sample_ns) > budget_ns {
        Some(StopReason::Budget)
    } else {
        None
    };
    Decision { stop, ci_rel_half_width: rel }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;

    fn spec() -> MeasureSpec {
        MeasureSpec { min_samples: 5, max_samples: 20, budget_ms: 1000, ci_target_pct: 2.0, ..MeasureSpec::for_profile(Profile::Quick) }
    }

    #[test]
    fn never_stops_before_the_minimum() {
        let d = decide(&[1.0; 4], 10_000_000_000, 1, &spec(), 1);
        assert_eq!(d.stop, None);
    }

    #[test]
    fn long_samples_take_as_many_as_fit_in_the_budget_and_at_least_one() {
        // 600 ms samples against a 1 s budget: one, with the budget as reason.
        assert_eq!(min_samples(&spec(), 600_000_000), 1);
        assert_eq!(decide(&[1.0], 600_000_000, 600_000_000, &spec(), 1).stop, Some(StopReason::Budget));
        // 300 ms samples: three fit; a fourth would overrun.
        assert_eq!(min_samples(&spec(), 300_000_000), 3);
        let noisy = [1.0, 1.3, 0.8];
        assert_eq!(decide(&noisy[..2], 600_000_000, 300_000_000, &spec(), 1).stop, None);
        assert_eq!(decide(&noisy, 900_000_000, 300_000_000, &spec(), 1).stop, Some(StopReason::Budget));
        // Short samples keep the minimum of five; a 3 s sample still runs once.
        assert_eq!(min_samples(&spec(), 1_000), 5);
        assert_eq!(min_samples(&spec(), 3_000_000_000), 1);
        assert_eq!(min_samples(&spec(), 0), 5);
    }

    #[test]
    fn stops_on_a_tight_interval() {
        let d = decide(&[100.0, 100.5, 99.5, 100.2, 99.8], 1, 1, &spec(), 1);
        assert_eq!(d.stop, Some(StopReason::CiTarget));
        assert!(d.ci_rel_half_width.unwrap() <= 0.02);
    }

    #[test]
    fn a_wide_interval_continues_until_the_budget_or_the_cap() {
        let noisy = [100.0, 150.0, 60.0, 130.0, 80.0];
        assert_eq!(decide(&noisy, 100_000_000, 10_000_000, &spec(), 1).stop, None);
        // The next sample of the last one's length would overrun 1 s.
        assert_eq!(decide(&noisy, 950_000_000, 100_000_000, &spec(), 1).stop, Some(StopReason::Budget));
        let many: Vec<f64> = (0..20).map(|i| if i % 2 == 0 { 50.0 } else { 150.0 }).collect();
        assert_eq!(decide(&many, 1, 1, &spec(), 1).stop, Some(StopReason::Cap));
    }

    #[test]
    fn fixed_runs_ignore_the_rule() {
        let m = MeasureSpec { fixed_runs: Some(3), ..spec() };
        assert_eq!(decide(&[1.0, 2.0], 1, 1, &m, 1).stop, None);
        assert_eq!(decide(&[1.0, 2.0, 90.0], u64::MAX / 2, 1, &m, 1).stop, Some(StopReason::Fixed));
    }
}
