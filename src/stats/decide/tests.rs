//! Tests of the decided verdicts: reference values from scipy, the rules at
//! one look, degenerate input, and the sequential design's error rates and
//! power by seeded simulation.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::*;
use crate::stats::testdata::{assert_rel, normal};

/// Every trial pair's summary ([`pair_summary`]), in order; `None` when a
/// pair has none.
fn summaries(pairs: &[Vec<f64>]) -> Option<Vec<f64>> {
    pairs.iter().map(|p| pair_summary(p)).collect()
}

/// The decision of `design` after the pairs summarised by `summaries`;
/// `Unknown { why: BadDesign }` when the design is invalid.
fn decide(design: &Design, summaries: &[f64]) -> Decision {
    match Plan::new(*design) {
        Ok(plan) => plan.decide(summaries),
        Err(_) => Decision::Unknown { why: Why::BadDesign },
    }
}

/// The default design with a look after every pair (as rows recorded
/// before `look_growth` are decided): the scipy references were taken at
/// every look.
fn every_pair() -> Design {
    Design { look_growth: None, ..Design::default() }
}

/// Five pairs' summaries: `DD` of src/stats/reference.py.
const DD: [f64; 5] = [0.0123, 0.0087, 0.0151, 0.0102, 0.0069];

#[test]
fn the_intervals_match_scipy() {
    // DECIDE_ACROSS_CI95 of src/stats/reference.py (scipy 1.17.1).
    let a = across_pairs(&DD, 0.95).unwrap();
    assert_rel(a.lo, 1.0054780481610934, 1e-12);
    assert_rel(a.hi, 1.0150490148008076, 1e-12);
    assert_eq!((a.ratio, a.df, a.values, a.scope), (0.0102f64.exp(), 4.0, 5, Scope::AcrossPairs));
    // DECIDE_WITHIN_CI95: one pair's seven sample log ratios.
    let w = within_pair(&[0.021, -0.004, 0.013, 0.030, 0.008, 0.017, 0.002], 0.95).unwrap();
    assert_rel(w.lo, 1.000024511205044, 1e-12);
    assert_rel(w.hi, 1.0263157922366186, 1e-12);
    assert_eq!((w.df, w.values, w.scope), (6.0, 7, Scope::WithinPair));
}

#[test]
fn the_decision_at_a_look_uses_the_looks_share_of_alpha_as_scipy_computes_it() {
    // 8 looks (5 to 12 pairs): the first gets half of alpha, the others
    // 0.025 / 7 each, summing to alpha.
    let design = Design { min_pairs: 5, max_pairs: 12, ..every_pair() };
    let plan = Plan::new(design).unwrap();
    assert_eq!((plan.look_alpha(4), plan.look_alpha(5), plan.look_alpha(6)), (None, Some(0.025), Some(0.025 / 7.0)));
    assert_eq!((plan.look_alpha(12), plan.look_alpha(13)), (Some(0.025 / 7.0), None));
    assert_rel(design.levels().iter().sum::<f64>(), 0.05, 1e-12);
    // DECIDE_DIFFERENT_CI: the (1 - alpha_1) interval excludes 1, so B is higher.
    let Decision::Different { direction, ratio, lo, hi } = plan.decide(&DD) else { panic!("{:?}", plan.decide(&DD)) };
    assert_eq!((direction, ratio), (Direction::Higher, 0.0102f64.exp()));
    assert_rel(lo, 1.004245463441675, 1e-12);
    assert_rel(hi, 1.0162948595177121, 1e-12);
    // A record written before the share existed splits alpha equally
    // (DECIDE_EQUAL_SPLIT_CI: alpha / 8 at 5 pairs of 3 to 10).
    let equal = Plan::new(Design { first_look_share: None, ..every_pair() }).unwrap();
    assert_eq!((equal.look_alpha(3), equal.look_alpha(10)), (Some(0.05 / 8.0), Some(0.05 / 8.0)));
    let Decision::Different { lo, hi, .. } = equal.decide(&DD) else { panic!("{:?}", equal.decide(&DD)) };
    assert_rel(lo, 1.001224842545564, 1e-12);
    assert_rel(hi, 1.0193609455343802, 1e-12);
    // One look gets all of alpha, whatever the share.
    assert_eq!(Design { min_pairs: 4, max_pairs: 4, ..Design::default() }.levels(), vec![0.05]);
    // A minimum effect of 2% forbids that DIFFERENT; the two one-sided tests
    // (DECIDE_TOST_CI, the 1 - 2 alpha_1 interval, inside 1/1.02..1.02; their
    // p-value DECIDE_TOST_P = 0.00245 is below alpha_1) make it SAME.
    assert!(0.0024507486629076728 < plan.look_alpha(5).unwrap());
    let design = Design { min_effect: 0.02, ..design };
    let Decision::Same { band, ratio, lo, hi } = decide(&design, &DD) else { panic!("{:?}", decide(&design, &DD)) };
    assert_eq!((band, ratio), (0.02, 0.0102f64.exp()));
    assert_rel(lo, 1.0054780481610934, 1e-12);
    assert_rel(hi, 1.0150490148008076, 1e-12);
    // A share outside (0, 1) is refused.
    for share in [0.0, 1.0, f64::NAN] {
        assert!(Plan::new(Design { first_look_share: Some(share), ..Design::default() }).is_err(), "{share}");
    }
}

#[test]
fn a_row_leaning_away_from_one_is_not_stopped_as_same_before_its_last_look() {
    // A 0.8% lean with 0.3% spread at 4 pairs: its TOST interval lies inside
    // the 2% band, but the last look could still call it DIFFERENT, so it
    // takes more pairs.
    let xs = [0.0092, 0.0045, 0.0115, 0.0068];
    let plan = Plan::new(every_pair()).unwrap();
    let tost = across_pairs(&xs, 1.0 - 2.0 * plan.look_alpha(4).unwrap()).unwrap();
    assert!(tost.lo > 1.0 / 1.02 && tost.hi < 1.02, "{tost:?}");
    assert_eq!(plan.decide(&xs), Decision::Unknown { why: Why::NotYet });
    // At a last look that cannot call it DIFFERENT, it is SAME within 3%.
    let last = Design { min_pairs: 3, max_pairs: 4, alpha: 0.01, equivalence: 0.03, ..Design::default() };
    assert!(matches!(decide(&last, &xs), Decision::Same { band: 0.03, .. }), "{:?}", decide(&last, &xs));
    // A tight A/A stops as SAME at the first look.
    assert!(matches!(plan.decide(&[0.001, -0.002, 0.0005]), Decision::Same { .. }));
    // A wide one is undecided, and UNKNOWN once the budget is spent.
    let wide = [0.05, -0.04, 0.01, 0.03, -0.06, 0.02, -0.01, 0.04, -0.03, 0.0];
    assert_eq!(plan.decide(&wide[..5]), Decision::Unknown { why: Why::NotYet });
    assert_eq!(plan.decide(&wide), Decision::Unknown { why: Why::BudgetSpent });
    assert!(plan.decide(&wide[..5]).more_pairs() && !plan.decide(&wide).more_pairs());
    // Pairs beyond the budget do not count: the last look stands.
    let more: Vec<f64> = wide.iter().copied().chain([0.5, 0.5, 0.5, 0.5]).collect();
    assert_eq!(plan.decide(&more), plan.decide(&wide));
}

#[test]
fn a_change_below_the_minimum_effect_is_not_different_and_the_direction_follows_the_point() {
    let slower = [-0.051, -0.049, -0.050];
    let d = decide(&Design::default(), &slower);
    let Decision::Different { direction: Direction::Lower, ratio, lo, hi } = d else { panic!("{d:?}") };
    assert!(lo <= ratio && ratio <= hi && hi < 1.0);
    assert_eq!(d.word(), "DIFFERENT");
    // With a 10% minimum effect a 5% change is neither DIFFERENT nor SAME.
    let big = Design { min_effect: 0.10, ..Design::default() };
    assert_eq!(decide(&big, &slower), Decision::Unknown { why: Why::NotYet });
}

#[test]
fn degenerate_input_is_unknown_or_none_and_never_panics() {
    let plan = Plan::new(Design::default()).unwrap();
    for few in [&[][..], &[0.1], &[0.1, 0.2]] {
        assert_eq!(plan.decide(few), Decision::Unknown { why: Why::FewPairs });
        assert!(plan.decide(few).more_pairs());
    }
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(plan.decide(&[0.0, bad, 0.0]), Decision::Unknown { why: Why::BadInput });
        assert_eq!(across_pairs(&[0.0, bad], 0.95), None);
        assert_eq!(within_pair(&[bad, 0.0], 0.95), None);
        assert_eq!(pair_summary(&[bad]), None);
        assert_eq!(log_ratios(&[1.0, bad], &[1.0, 1.0]), None);
    }
    assert_eq!(Decision::Unknown { why: Why::BadInput }.word(), "UNKNOWN");
    assert!(!plan.decide(&[f64::NAN; 3]).more_pairs());
    assert_eq!((across_pairs(&[0.1], 0.95), within_pair(&[], 0.95), across_pairs(&DD, 1.0)), (None, None, None));
    // Raw values: not positive, unequal lengths or none at all.
    assert_eq!(log_ratios(&[1.0, 0.0], &[1.0, 1.0]), None);
    assert_eq!(log_ratios(&[1.0], &[-1.0]), None);
    assert_eq!(log_ratios(&[1.0, 2.0], &[1.0]), None);
    assert_eq!(log_ratios(&[], &[]), None);
    assert_eq!(log_ratios(&[2.0, 4.0], &[4.0, 2.0]), Some(vec![2f64.ln(), -(2f64.ln())]));
    assert_eq!(summaries(&[vec![0.1, 0.3, 0.2], vec![]]), None);
    assert_eq!(summaries(&[vec![0.1, 0.3, 0.2], vec![-0.1]]), Some(vec![0.2, -0.1]));
    // Identical summaries (a deterministic metric): the exact ratio.
    assert!(matches!(plan.decide(&[0.0; 3]), Decision::Same { lo: 1.0, hi: 1.0, .. }));
    let exact = plan.decide(&[0.05; 3]);
    assert!(matches!(exact, Decision::Different { direction: Direction::Higher, lo, hi, .. } if lo == hi), "{exact:?}");
    assert_eq!(across_pairs(&[0.05; 3], 0.95).map(|i| i.df), Some(f64::INFINITY));
    // Designs that cannot be planned.
    let d = Design::default();
    for (bad, err) in [
        (Design { min_pairs: 1, ..d }, DesignError::FewPairs(1)),
        (Design { max_pairs: 2, ..d }, DesignError::MaxPairs { min: 3, max: 2 }),
        (Design { max_pairs: usize::MAX, ..d }, DesignError::MaxPairs { min: 3, max: usize::MAX }),
        (Design { alpha: 0.0, ..d }, DesignError::Alpha(0.0)),
        (Design { equivalence: f64::INFINITY, ..d }, DesignError::Equivalence(f64::INFINITY)),
        (Design { min_effect: -0.01, ..d }, DesignError::MinEffect(-0.01)),
    ] {
        assert_eq!(Plan::new(bad).unwrap_err(), err);
        assert_eq!(decide(&bad, &DD), Decision::Unknown { why: Why::BadDesign });
        assert!(!err.to_string().is_empty());
    }
    assert!(Design { alpha: f64::NAN, ..d }.check().is_err());
}

#[test]
fn every_point_lies_inside_its_interval_and_the_direction_follows_it() {
    // Random rows of 2 to 40 pairs, normal or in two modes, at several
    // designs: a verdict's ratio lies in its interval, DIFFERENT's interval
    // excludes 1 on its direction's side, SAME's lies inside its band.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let designs = [
        Design::default(),
        Design { min_pairs: 2, max_pairs: 5, alpha: 0.2, equivalence: 0.05, min_effect: 0.01, first_look_share: None, look_growth: None },
        lockstep(),
        Design { min_pairs: 2, max_pairs: 40, min_effect: 0.005, look_growth: None, ..lockstep() },
    ];
    let (mut different, mut same) = (0, 0);
    for i in 0..3000 {
        let n = 2 + i % 39;
        let shift = 0.03 * normal(&mut rng);
        let spread = [0.001, 0.01, 0.05][i % 3];
        let xs: Vec<f64> = (0..n).map(|_| shift + spread * normal(&mut rng) + if rng.random::<f64>() < 0.3 { 0.2 } else { 0.0 }).collect();
        let a = across_pairs(&xs, 0.95).unwrap();
        assert!(a.lo <= a.ratio && a.ratio <= a.hi, "{xs:?}: {a:?}");
        for design in &designs {
            match decide(design, &xs) {
                Decision::Different { direction, ratio, lo, hi } => {
                    different += 1;
                    assert!(lo <= ratio && ratio <= hi, "{xs:?}");
                    let side = if ratio > 1.0 { Direction::Higher } else { Direction::Lower };
                    assert_eq!(direction, side, "{xs:?}");
                    assert!(lo > 1.0 || hi < 1.0, "{xs:?}");
                }
                Decision::Same { band, ratio, lo, hi } => {
                    same += 1;
                    assert!(lo <= ratio && ratio <= hi && lo > 1.0 / (1.0 + band) && hi < 1.0 + band, "{xs:?}");
                }
                Decision::Unknown { .. } => {}
            }
        }
    }
    assert!(different > 500 && same > 100, "the rows must reach both verdicts: {different} {same}");
}

#[test]
fn the_p_value_is_below_alpha_exactly_when_the_row_is_different_and_sees_marks_the_edge() {
    // Random rows at three designs: `p_different < alpha` iff DIFFERENT; and
    // a row whose every summary is moved so that its median sits just
    // beyond what it `sees`, up or down, is DIFFERENT both ways, and just
    // inside it is not DIFFERENT at least one way (an order-statistic
    // interval need not be symmetric), its spread unchanged.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
    let designs = [
        Design::default(),
        Design { min_pairs: 2, max_pairs: 6, alpha: 0.1, equivalence: 0.03, min_effect: 0.01, first_look_share: None, look_growth: None },
        Design { min_effect: 0.002, ..lockstep() },
    ];
    let mut different = 0;
    for i in 0..3000 {
        let n = 2 + i % 30;
        let (shift, spread) = (0.02 * normal(&mut rng), [0.002, 0.01, 0.04][i % 3]);
        let far = |rng: &mut Xoshiro256PlusPlus| if rng.random::<f64>() < 0.1 { 0.3 * normal(rng) } else { 0.0 };
        let xs: Vec<f64> = (0..n).map(|_| shift + spread * normal(&mut rng) + far(&mut rng)).collect();
        for design in &designs {
            let plan = Plan::new(*design).unwrap();
            let (Some(p), Some(sees)) = (plan.p_different(&xs), plan.sees(&xs)) else {
                // Before the first look, or between two looks (nothing tested there).
                let between = plan.look_alpha(n.min(design.max_pairs)).is_none() && plan.p_different(&xs) == Some(1.0);
                assert!(n < design.min_pairs || between, "{n} pairs: {design:?}");
                assert!(n < design.min_pairs || plan.decide(&xs).more_pairs(), "{n} pairs: {design:?}");
                continue;
            };
            let is_different = matches!(plan.decide(&xs), Decision::Different { .. });
            different += usize::from(is_different);
            assert_eq!(p < design.alpha, is_different, "{xs:?}: p {p}");
            assert!((0.0..=1.0).contains(&p) && sees >= design.min_effect, "{p} {sees}");
            let m = median(&xs[..n.min(design.max_pairs)]);
            for (by, expect) in [(1.0 + 1e-6, true), (1.0 - 1e-6, false)] {
                let ways = [1.0, -1.0].map(|sign| {
                    let moved: Vec<f64> = xs.iter().map(|x| x - m + sign * sees.ln_1p() * by).collect();
                    matches!(plan.decide(&moved), Decision::Different { .. })
                });
                assert_eq!(ways[0] && ways[1], expect, "moved to {by} x sees {sees}: {ways:?} {xs:?}");
            }
        }
    }
    assert!(different > 300, "{different}");
    // No spread: the exact ratio, decided on the point; sees the minimum effect.
    let plan = Plan::new(Design::default()).unwrap();
    assert_eq!((plan.p_different(&[0.01; 3]), plan.sees(&[0.01; 3])), (Some(0.0), Some(0.0)));
    assert_eq!((plan.p_different(&[0.01; 2]), plan.sees(&[0.01, f64::NAN, 0.0])), (None, None));
}

#[test]
fn the_looks_double_and_nothing_is_tested_between_them() {
    let d = Design::default();
    assert_eq!((d.look_pairs(), d.looks()), (vec![3, 6, 10], 3));
    assert_eq!(Design { max_pairs: 30, ..d }.look_pairs(), vec![3, 6, 12, 30]);
    assert_eq!(Design { max_pairs: 4, ..d }.look_pairs(), vec![3, 4]);
    assert_eq!(Design { max_pairs: 3, ..d }.look_pairs(), vec![3]);
    assert_eq!(Design { look_growth: Some(1.5), max_pairs: 20, ..d }.look_pairs(), vec![3, 5, 8, 12, 20]);
    assert_eq!(every_pair().look_pairs(), (3..=10).collect::<Vec<_>>());
    assert_eq!(d.levels(), vec![0.025, 0.0125, 0.0125]);
    let plan = Plan::new(d).unwrap();
    assert_eq!(
        (plan.look_alpha(3), plan.look_alpha(4), plan.look_alpha(6), plan.look_alpha(10)),
        (Some(0.025), None, Some(0.0125), Some(0.0125))
    );
    // Four pairs 5% apart: DIFFERENT at a look, but nothing is tested at 4.
    let clear = [0.049, 0.051, 0.050, 0.050, 0.052, 0.048];
    assert!(matches!(plan.decide(&clear[..3]), Decision::Different { .. }));
    assert_eq!(plan.decide(&clear[..4]), Decision::Unknown { why: Why::NotYet });
    assert_eq!((plan.p_different(&clear[..4]), plan.sees(&clear[..4])), (Some(1.0), None));
    assert!(matches!(plan.decide(&clear), Decision::Different { .. }));
    // A row that ended between two looks is judged there with what the looks before it left.
    let ended = plan.at_end();
    for (n, level) in [(3, 0.05), (4, 0.025), (6, 0.025), (7, 0.0125), (10, 0.0125)] {
        assert_rel(ended.look_alpha(n).unwrap(), level, 1e-12);
    }
    assert!(matches!(ended.decide(&clear[..4]), Decision::Different { .. }));
    // A growth of 1 or less would never leave the first look.
    for g in [1.0, 0.5, f64::NAN, f64::INFINITY] {
        assert!(matches!(Plan::new(Design { look_growth: Some(g), ..d }), Err(DesignError::LookGrowth(_))), "{g}");
    }
}

#[test]
fn a_design_for_a_runs_trials_keeps_its_looks_possible() {
    assert_eq!(Design::for_trials(3, 10, 0.02), Design::default());
    let one = Design::for_trials(1, 1, 0.05);
    assert_eq!((one.min_pairs, one.max_pairs, one.equivalence), (2, 2, 0.05));
    assert!(one.check().is_ok());
    let fixed = Design::for_trials(5, 5, 0.02);
    assert_eq!((fixed.min_pairs, fixed.max_pairs, fixed.looks()), (5, 5, 1));
    assert_eq!(Design::for_trials(2, u32::MAX, 0.02).max_pairs, MAX_PLANNED_PAIRS);
    assert!(Design::for_trials(3, 10, 0.0).check().is_err(), "a band of 0 is refused by the check");
}

/// A `--lockstep` run's design: 3 to 30 pairs, looks at 3, 6, 12 and 30.
fn lockstep() -> Design {
    Design { max_pairs: 30, ..Design::default() }
}

#[test]
fn from_twelve_pairs_the_interval_comes_from_order_statistics_and_pairs_far_out_do_not_widen_it() {
    // OD of src/stats/reference.py: twelve pairs about 1.2% apart, two far
    // out (+61% and -29%), as a two-worker row showed.
    let od = [0.012, 0.009, 0.61, 0.011, 0.014, 0.010, -0.29, 0.013, 0.008, 0.015, 0.011, 0.012];
    // DECIDE_ORDER_CI95.
    let a = across_pairs(&od, 0.95).unwrap();
    assert_rel(a.lo, 1.0093061539006198, 1e-12);
    assert_rel(a.hi, 1.0138316660337852, 1e-12);
    assert_eq!((a.ratio, a.values, a.scope), (0.0115f64.exp(), 12, Scope::AcrossPairs));
    // Eleven of them: the t interval, which the far-out pairs widen past 1.
    let t = across_pairs(&od[..11], 0.95).unwrap();
    assert!(t.lo < 1.0 && t.hi > 1.1, "{t:?}");
    // The order of the pairs does not matter, only their values.
    let mut turned = od;
    turned.reverse();
    assert_eq!(across_pairs(&turned, 0.95), Some(a));
    // A --lockstep design's look at 12 pairs (alpha_k 0.025 / 3): DIFFERENT
    // with DECIDE_ORDER_CI; the t interval alone says UNKNOWN there.
    let plan = Plan::new(lockstep()).unwrap();
    assert_rel(plan.look_alpha(12).unwrap(), 0.025 / 3.0, 1e-12);
    let Decision::Different { direction, lo, hi, .. } = plan.decide(&od) else { panic!("{:?}", plan.decide(&od)) };
    assert_eq!(direction, Direction::Higher);
    assert_rel(lo, 1.00828126523233, 1e-12);
    assert_rel(hi, 1.014862196523541, 1e-12);
    let t_only = Plan { order_from: usize::MAX, ..plan.clone() };
    assert_eq!(t_only.decide(&od), Decision::Unknown { why: Why::NotYet });
    // Within one pair the samples keep the t interval.
    assert_eq!(within_pair(&od, 0.95).map(|w| w.lo < 1.0), Some(true));
}

#[test]
fn the_order_statistic_interval_narrows_with_the_level_and_holds_the_median() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    for n in [2usize, 3, 12, 13, 30, 31] {
        let mut xs: Vec<f64> = (0..n).map(|_| normal(&mut rng)).collect();
        xs.sort_by(f64::total_cmp);
        let m = median(&xs);
        let widest = 2f64.powi(1 - n as i32);
        // Above the widest interval's coverage there is none.
        assert_eq!(order::interval(&xs, 1.0 - widest / 2.0), None, "{n}");
        assert!(!order::applies(n, 1.0 - widest / 2.0, 2) && order::applies(n, 1.0 - widest, 2), "{n}");
        assert!(!order::applies(n, 0.5, n + 1), "{n}: fewer values than asked");
        assert_eq!(order::interval(&xs, 1.0 - widest), Some((xs[0], xs[n - 1])), "{n}");
        let mut before = (xs[0], xs[n - 1]);
        for step in 1..200 {
            let level = (1.0 - widest) * (1.0 - step as f64 / 200.0);
            let Some((lo, hi)) = order::interval(&xs, level) else { panic!("{n} at {level}") };
            assert!(before.0 <= lo && lo <= m && m <= hi && hi <= before.1, "{n} at {level}: {lo} {hi} after {before:?}");
            before = (lo, hi);
        }
        // The level at which it leaves a band: just above, outside; just below, not.
        let edge = (xs[n / 4] - m).abs() * 0.5;
        let shifted: Vec<f64> = xs.iter().map(|x| x - m + 2.0 * edge).collect();
        let p = order::p_beyond(&shifted, edge, true);
        if p > widest && p < 1.0 {
            assert!(order::interval(&shifted, 1.0 - p * 1.001).unwrap().0 > edge, "{n}: p {p}");
            assert!(order::interval(&shifted, 1.0 - p * 0.999).unwrap().0 <= edge, "{n}: p {p}");
        }
        assert_eq!(order::p_beyond(&shifted, edge, false), 1.0, "{n}: the median is above the band");
    }
}

/// Simulation of the sequential design: each row takes pairs until its
/// decision is made, each pair's summary drawn by `draw`.
mod sequential {
    use super::*;

    /// Draws one pair's summary.
    pub(super) type Draw = dyn Fn(&mut Xoshiro256PlusPlus) -> f64;

    #[derive(Debug, Default)]
    pub(super) struct Outcome {
        sims: usize,
        higher: usize,
        lower: usize,
        same: usize,
        pairs: usize,
    }

    impl Outcome {
        pub(super) fn share(&self, k: usize) -> f64 {
            k as f64 / self.sims as f64
        }
        pub(super) fn different(&self) -> f64 {
            self.share(self.higher + self.lower)
        }
        pub(super) fn same(&self) -> f64 {
            self.share(self.same)
        }
        pub(super) fn mean_pairs(&self) -> f64 {
            self.share(self.pairs)
        }
        /// Counts one row that ended after `n` pairs with `decision`.
        fn count(&mut self, n: usize, decision: &Decision) {
            self.pairs += n;
            match decision {
                Decision::Different { direction: Direction::Higher, .. } => self.higher += 1,
                Decision::Different { direction: Direction::Lower, .. } => self.lower += 1,
                Decision::Same { .. } => self.same += 1,
                Decision::Unknown { .. } => {}
            }
        }
    }

    /// Each simulated row draws its budget of pairs up front and reveals
    /// them one by one, so that plans compared on one seed see the same rows.
    pub(super) fn simulate(plan: &Plan, sims: usize, seed: u64, draw: &Draw) -> Outcome {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut out = Outcome { sims, ..Outcome::default() };
        let budget = plan.design.max_pairs;
        for _ in 0..sims {
            let row: Vec<f64> = (0..budget).map(|_| draw(&mut rng)).collect();
            let (n, decision) = (1..=budget)
                .map(|n| (n, plan.decide(&row[..n])))
                .find(|(_, d)| !d.more_pairs())
                .expect("the last look decides or spends the budget");
            out.count(n, &decision);
        }
        out
    }

    /// `rate` plus three binomial standard errors over `sims`: the
    /// simulation's tolerance, as `stats::runs` allows.
    pub(super) fn bound(rate: f64, sims: usize) -> f64 {
        rate + 3.0 * (rate * (1.0 - rate) / sims as f64).sqrt()
    }

    /// A/A pair summaries: normal, sd 1%.
    pub(super) fn aa_normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
        0.01 * normal(rng)
    }

    /// A/A, heavy-tailed: Student's t with 3 degrees of freedom, scale 1%.
    pub(super) fn aa_heavy(rng: &mut Xoshiro256PlusPlus) -> f64 {
        let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
        0.01 * normal(rng) / (chi2 / 3.0).sqrt()
    }

    /// A/A in two speed modes: each process of a pair is independently
    /// slow (ln(230 / 165) = 0.33 slower, this machine's two modes) with
    /// probability `p`, with 0.3% noise. p = 0.2 gives the 13% spread
    /// between processes measured on the development machine.
    pub(super) fn aa_modes(p: f64) -> impl Fn(&mut Xoshiro256PlusPlus) -> f64 {
        move |rng| {
            let mode = |rng: &mut Xoshiro256PlusPlus| if rng.random::<f64>() < p { 0.33 } else { 0.0 };
            0.003 * normal(rng) + mode(rng) - mode(rng)
        }
    }

    pub(super) fn shifted(ratio: f64, sd: f64) -> impl Fn(&mut Xoshiro256PlusPlus) -> f64 {
        move |rng| ratio.ln() + sd * normal(rng)
    }

    /// Each simulated row's pairs end at a look drawn apart from its values
    /// (uniform over the plan's looks, as a run's budget ends them): the
    /// live plan decides the looks before it, [`Plan::at_end`] the last.
    fn simulate_ended(plan: &Plan, sims: usize, seed: u64, draw: &Draw) -> Outcome {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let ended = plan.at_end();
        let d = plan.design;
        let mut out = Outcome { sims, ..Outcome::default() };
        for _ in 0..sims {
            let end = rng.random_range(d.min_pairs..=d.max_pairs);
            let row: Vec<f64> = (0..end).map(|_| draw(&mut rng)).collect();
            let live = (d.min_pairs..end).map(|n| (n, plan.decide(&row[..n]))).find(|(_, x)| !x.more_pairs());
            let (n, decision) = live.unwrap_or_else(|| (end, ended.decide(&row)));
            out.count(n, &decision);
        }
        out
    }

    #[test]
    fn rows_whose_pairs_ended_early_spend_the_alpha_left_and_keep_the_false_verdict_rate() {
        let sims = 4000;
        let limit = bound(DEFAULT_ALPHA, sims);
        let plan = Plan::new(Design::default()).unwrap();
        let ended = plan.at_end();
        // The levels: all of alpha at the first look, what is left after.
        let d = plan.design;
        assert_eq!(ended.look_alpha(d.min_pairs), Some(DEFAULT_ALPHA));
        assert!((ended.look_alpha(d.max_pairs).unwrap() - plan.look_alpha(d.max_pairs).unwrap()).abs() < 1e-12);
        for (name, draw) in [("normal", &aa_normal as &Draw), ("heavy", &aa_heavy), ("two modes", &aa_modes(0.2))] {
            let o = simulate_ended(&plan, sims, 41, draw);
            assert!(o.different() <= limit, "{name}: false DIFFERENT {} > {limit}", o.different());
            let beyond = simulate_ended(&plan, sims, 42, &shifted(1.03, 0.01));
            assert!(beyond.same() <= limit, "{name}: a 3% change SAME within 2% {}", beyond.same());
        }
        // What it buys where the budget ends at the first look: a 2% change
        // at 0.5% spread, and SAME for an A/A with small spread.
        let xs: Vec<Vec<f64>> = {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(43);
            (0..sims).map(|_| (0..d.min_pairs).map(|_| shifted(1.02, 0.005)(&mut rng)).collect()).collect()
        };
        let hits = |p: &Plan| xs.iter().filter(|x| matches!(p.decide(x), Decision::Different { .. })).count();
        assert!(hits(&ended) > hits(&plan) + sims / 10, "ended {} against live {}", hits(&ended), hits(&plan));
        // A row decided at a look stays decided the same way at its end.
        for x in &xs {
            if let Decision::Different { direction, .. } = plan.decide(x) {
                assert!(matches!(ended.decide(x), Decision::Different { direction: e, .. } if e == direction));
            }
        }
    }

    #[test]
    fn the_false_different_rate_over_all_looks_stays_at_alpha_where_naive_looks_exceed_it() {
        let sims = 4000;
        let limit = bound(DEFAULT_ALPHA, sims);
        let plan = Plan::new(Design::default()).unwrap();
        // Testing at 5% at every look: what the design must not do.
        let naive = Plan::with_levels(every_pair(), &[DEFAULT_ALPHA; 8]);
        let mut report = Vec::new();
        let cases: [(&str, &Draw); 3] = [("normal", &aa_normal), ("heavy t3", &aa_heavy), ("two modes p 0.2", &aa_modes(0.2))];
        for (i, (name, draw)) in cases.into_iter().enumerate() {
            let seq = simulate(&plan, sims, 100 + i as u64, draw);
            let every = simulate(&naive, sims, 100 + i as u64, draw);
            report.push(format!(
                "A/A {name}: false DIFFERENT {:.4} (naive {:.4}), SAME {:.3}, pairs {:.2}",
                seq.different(),
                every.different(),
                seq.same(),
                seq.mean_pairs()
            ));
            assert!(seq.different() <= limit, "{}", report.join("\n"));
            assert!(every.different() > limit, "naive looks must exceed the rate:\n{}", report.join("\n"));
        }
        // Every process slow half the time: three pairs in the same two modes
        // look like a change (a limit docs/METHODOLOGY.md states), printed only.
        let half = simulate(&plan, sims, 104, &aa_modes(0.5));
        report.push(format!("A/A two modes p 0.5: false DIFFERENT {:.4}", half.different()));
        eprintln!("{}", report.join("\n"));
    }

    #[test]
    fn a_one_percent_change_with_a_third_of_a_percent_spread_is_different_nine_times_in_ten() {
        let plan = Plan::new(Design::default()).unwrap();
        for (ratio, seed) in [(1.01, 1), (1.0 / 1.01, 2)] {
            let out = simulate(&plan, 1000, seed, &shifted(ratio, 0.003));
            let right = if ratio > 1.0 { out.higher } else { out.lower };
            assert!(out.share(right) >= 0.90, "ratio {ratio}: {out:?}");
        }
        // Figures for docs/METHODOLOGY.md (`-- --nocapture`).
        for (ratio, sd) in [(1.01, 0.003), (1.02, 0.01), (1.05, 0.02), (1.10, 0.03)] {
            let out = simulate(&plan, 1000, 9, &shifted(ratio, sd));
            eprintln!("change {ratio} sd {sd}: DIFFERENT {:.3}, SAME {:.3}, pairs {:.2}", out.different(), out.same(), out.mean_pairs());
        }
    }

    /// A change of `ratio` at spread `sd`, each pair far out with
    /// probability `p` (one side of it in another speed mode than the
    /// other: 25% either way, carrying no news of the change).
    pub(super) fn far_out(ratio: f64, sd: f64, p: f64) -> impl Fn(&mut Xoshiro256PlusPlus) -> f64 {
        move |rng| if rng.random::<f64>() < p { ratio.ln() + 0.25 * normal(rng) } else { ratio.ln() + sd * normal(rng) }
    }

    #[test]
    fn with_many_pairs_a_few_far_out_do_not_hide_a_change_and_the_rates_hold() {
        // The --lockstep design (looks at 3, 6, 12, 30): from 12 pairs the
        // intervals come from order statistics; against the t interval alone.
        let sims = 3000;
        let limit = bound(DEFAULT_ALPHA, sims);
        let plan = Plan::new(lockstep()).unwrap();
        let t_only = Plan { order_from: usize::MAX, ..plan.clone() };
        let mut report = Vec::new();
        let aa: [(&str, &Draw); 5] = [
            ("normal", &aa_normal),
            ("heavy t3", &aa_heavy),
            ("two modes p 0.2", &aa_modes(0.2)),
            ("far out 7%", &far_out(1.0, 0.01, 0.07)),
            ("far out 15%", &far_out(1.0, 0.01, 0.15)),
        ];
        for (i, (name, draw)) in aa.into_iter().enumerate() {
            let (o, t) = (simulate(&plan, sims, 300 + i as u64, draw), simulate(&t_only, sims, 300 + i as u64, draw));
            report.push(format!(
                "A/A {name}: false DIFFERENT {:.4} (t alone {:.4}), SAME {:.3}, pairs {:.1} ({:.1})",
                o.different(),
                t.different(),
                o.same(),
                o.mean_pairs(),
                t.mean_pairs()
            ));
            assert!(o.different() <= limit, "{}", report.join("\n"));
        }
        // A 3% change is rarely SAME within 2%, pairs far out or not.
        for (i, p) in [0.0, 0.07].into_iter().enumerate() {
            let o = simulate(&plan, sims, 310 + i as u64, &far_out(1.03, 0.01, p));
            report.push(format!("3% change, far out {p}: false SAME {:.4}", o.same()));
            assert!(o.same() <= limit, "{}", report.join("\n"));
        }
        // The power at a 1% change with 1% spread: about the t interval's
        // with no pair far out, far more with some.
        let mut power = |name: &str, seed: u64, draw: &Draw| {
            let (o, t) = (simulate(&plan, sims, seed, draw), simulate(&t_only, sims, seed, draw));
            report.push(format!(
                "1% change, {name}: DIFFERENT {:.3} (t alone {:.3}), SAME {:.3} ({:.3}), pairs {:.1} ({:.1})",
                o.different(),
                t.different(),
                o.same(),
                t.same(),
                o.mean_pairs(),
                t.mean_pairs()
            ));
            (o.share(o.higher), t.share(t.higher))
        };
        let normal = power("sd 1%", 320, &shifted(1.01, 0.01));
        let some = power("sd 1%, 7% of pairs far out", 321, &far_out(1.01, 0.01, 0.07));
        let more = power("sd 1%, 15% of pairs far out", 322, &far_out(1.01, 0.01, 0.15));
        eprintln!("{}", report.join("\n"));
        assert!(normal.0 >= normal.1 - 0.02, "{normal:?}");
        assert!(some.0 >= 0.75 && some.0 > some.1 + 0.3, "{some:?}");
        assert!(more.0 >= 0.65 && more.0 > more.1 + 0.4, "{more:?}");
    }

    #[test]
    fn an_a_a_with_small_spread_ends_same_and_a_change_beyond_the_band_is_rarely_same() {
        let sims = 2000;
        let plan = Plan::new(Design::default()).unwrap();
        let tight = simulate(&plan, sims, 21, &shifted(1.0, 0.005));
        assert!(tight.same() >= 0.95, "{tight:?}");
        // A true 5% change against the 2% band, and a change just at the
        // band's edge (the hardest for the one-sided tests), at spreads from
        // narrow to wider than the change.
        let mut report = vec![format!("A/A sd 0.5%: SAME {:.3}, pairs {:.2}", tight.same(), tight.mean_pairs())];
        for (ratio, sd, seed) in [(1.05, 0.01, 22), (1.05, 0.03, 23), (1.05, 0.06, 24), (1.02, 0.01, 25), (1.0 / 1.02, 0.02, 26)] {
            let out = simulate(&plan, sims, seed, &shifted(ratio, sd));
            report.push(format!("change {ratio:.4} sd {sd}: false SAME {:.4}, DIFFERENT {:.3}", out.same(), out.different()));
            assert!(out.same() <= bound(DEFAULT_ALPHA, sims), "{}", report.join("\n"));
        }
        eprintln!("{}", report.join("\n"));
    }
}

/// The choice of weighted Bonferroni across the looks, by simulation,
/// against an equal split and Lan-DeMets spending functions of the Pocock
/// and O'Brien-Fleming shapes (information fraction pairs / max_pairs, each
/// look the increment of the spending function; every scheme spends
/// `alpha` in all), with the whole budget of pairs and with a run budget
/// that buys the first look only (as most rows of a default run get).
mod spending {
    use statrs::distribution::{ContinuousCDF, Normal};

    use super::sequential::*;
    use super::*;

    fn spent(design: &Design, spend: &dyn Fn(f64) -> f64) -> Vec<f64> {
        let mut before = 0.0;
        (design.min_pairs..=design.max_pairs)
            .map(|n| {
                let now = spend(n as f64 / design.max_pairs as f64);
                let level = now - before;
                before = now;
                level
            })
            .collect()
    }

    /// The share of `sims` rows drawn by `draw` that are DIFFERENT at the
    /// plan's first look (the run's budget ends there).
    fn different_at_first_look(plan: &Plan, sims: usize, seed: u64, draw: &Draw) -> f64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n = plan.design.min_pairs;
        let hits = (0..sims)
            .filter(|_| {
                let row: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                matches!(plan.decide(&row), Decision::Different { .. })
            })
            .count();
        hits as f64 / sims as f64
    }

    #[test]
    fn half_of_alpha_at_the_first_look_sees_more_where_the_budget_ends_there_and_keeps_the_rates() {
        let d = every_pair();
        let a = d.alpha;
        let std = Normal::standard();
        let z = std.inverse_cdf(1.0 - a / 2.0);
        let pocock = spent(&d, &|t| a * (1.0 + (std::f64::consts::E - 1.0) * t).ln());
        let obf = spent(&d, &|t| 2.0 - 2.0 * std.cdf(z / t.sqrt()));
        assert!((pocock.iter().sum::<f64>() - a).abs() < 1e-12 && (obf.iter().sum::<f64>() - a).abs() < 1e-8);
        let sims = 2000;
        let mut table = Vec::new();
        let mut figures = Vec::new();
        for (name, plan) in [
            ("half at the first look", Plan::new(d).unwrap()),
            ("equal split", Plan::new(Design { first_look_share: None, ..d }).unwrap()),
            ("Pocock-type", Plan::with_levels(d, &pocock)),
            ("O'Brien-Fleming-type", Plan::with_levels(d, &obf)),
            ("half at the first look, then looks doubling (the default)", Plan::new(Design::default()).unwrap()),
        ] {
            let normal = simulate(&plan, sims, 31, &aa_normal);
            let modes = simulate(&plan, sims, 32, &aa_modes(0.2));
            let two = simulate(&plan, sims, 33, &shifted(1.02, 0.01));
            let ten = simulate(&plan, sims, 34, &shifted(1.10, 0.03));
            let first = different_at_first_look(&plan, sims, 35, &shifted(1.02, 0.005));
            table.push(format!(
                "{name}: A/A false DIFFERENT normal {:.4} two modes {:.4}; 2% at sd 1% DIFFERENT {:.3}; 10% at sd 3% decided after {:.2} pairs; 2% at sd 0.5% DIFFERENT at the first look {:.3}",
                normal.different(),
                modes.different(),
                two.different(),
                ten.mean_pairs(),
                first
            ));
            assert!(normal.different() <= bound(a, sims) && modes.different() <= bound(a, sims), "{}", table.join("\n"));
            figures.push((modes.different(), two.different(), ten.mean_pairs(), first));
        }
        eprintln!("{}", table.join("\n"));
        let [half, equal, _pocock, obf, doubling] = figures[..] else { unreachable!() };
        // Where the budget ends at the first look (most rows of a default
        // run), half of alpha there sees a 2% change far more often than
        // an equal split; with the whole budget it gives up little power,
        // and decides a 10% change sooner than the O'Brien-Fleming shape,
        // which also lets more two-mode A/A rows through at its generous
        // last looks.
        assert!(half.3 > equal.3 + 0.15, "first look: {}", table.join("\n"));
        assert!(half.1 > equal.1 - 0.05, "power at 2% with the whole budget: {}", table.join("\n"));
        assert!(half.2 < obf.2, "pairs at 10%: {}", table.join("\n"));
        assert!(half.0 < obf.0, "two modes: {}", table.join("\n"));
        // Looking at 3, 6 and 10 pairs rather than after every pair (the
        // default) keeps the first look's power, gains power where a row
        // takes its whole budget (the later looks get 1.25% each rather
        // than 0.36%), and decides a 10% change about as soon.
        assert!((doubling.3 - half.3).abs() < 1e-12, "first look: {}", table.join("\n"));
        assert!(doubling.1 > half.1 + 0.04, "power at 2% with the whole budget: {}", table.join("\n"));
        assert!(doubling.2 < half.2 + 0.5, "pairs at 10%: {}", table.join("\n"));
    }
}
