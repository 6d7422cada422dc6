//! Variants of one run, compared paired by round: the strongest evidence
//! about a change. The rows of one cell under the base variant and under a
//! candidate match by workload and every other axis; their trials pair by
//! the round they ran in (back to back, so they shared the machine's state),
//! and the ratio's interval comes from the per-round ratios
//! (`stats::paired`). No noise floor applies: the pairing already removes
//! what moves between runs.

use std::collections::{HashMap, HashSet};

use crate::evidence::{Row, RunRecord, StoredRun, TrialRecord};
use crate::model::{Cell, Status, Variant, variant::AXIS};
use crate::stats::{LEVEL, paired};
use crate::text::format;

use super::{
    COMPARE_SCHEMA, Comparison, Completion, Key, Options, RowComparison, Side, Verdict, cell_key, control_false_discoveries_among,
    match_rows, verdict_of,
};

/// The (base, candidate) trial medians of the rounds in which both had an
/// ok trial with timed samples, in round order.
pub fn round_pairs<'a>(
    base: impl IntoIterator<Item = &'a TrialRecord>,
    cand: impl IntoIterator<Item = &'a TrialRecord>,
) -> Vec<(f64, f64)> {
    let ok = |t: &&TrialRecord| t.status == Status::Ok;
    let cand: Vec<(u32, f64)> = cand.into_iter().filter(ok).filter_map(|t| Some((t.round, t.median?))).collect();
    base.into_iter()
        .filter(ok)
        .filter_map(|t| Some((t.round, t.median?)))
        .filter_map(|(r, b)| cand.iter().find(|(rc, _)| *rc == r).map(|&(_, c)| (b, c)))
        .collect()
}

/// A row's axes without the variant (`workers=2`, or `-`).
pub fn axes_without_variant(r: &Row) -> String {
    r.cell.axes_text_without(AXIS)
}

/// The variants the rows were measured under: the base, then the others in
/// the order their rows first appear. `None` for rows without variants.
pub fn variants(rows: &[Row]) -> Option<(Variant, Vec<Variant>)> {
    let mut seen: Vec<&Variant> = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    for v in rows.iter().filter_map(|r| r.cell.variant.as_ref()) {
        if names.insert(&v.name) {
            seen.push(v);
        }
    }
    let base = seen.iter().find(|v| v.base)?;
    Some(((*base).clone(), seen.iter().filter(|v| !v.base).map(|v| (*v).clone()).collect()))
}

/// The variants of a run: from its record (every variant it planned, in
/// the order typed, a candidate without any row included), else from its
/// rows.
fn run_variants(run: Option<&RunRecord>, rows: &[Row]) -> Option<(Variant, Vec<Variant>)> {
    match run.filter(|r| !r.variants.is_empty()) {
        Some(r) => {
            let base = r.variants.iter().find(|v| v.base)?.clone();
            Some((base, r.variants.iter().filter(|v| !v.base).cloned().collect()))
        }
        None => variants(rows),
    }
}

/// Judges a candidate row against the base row of the same cell, paired by round.
pub fn judge(base: &Row, cand: &Row, noise: f64) -> RowComparison {
    let mut out = RowComparison::of(base, cand, axes_without_variant(base), noise);
    if base.status != Status::Ok || cand.status != Status::Ok {
        out.reason = format!("base {}, candidate {}", base.status.as_str(), cand.status.as_str());
        return out;
    }
    if base.unit != cand.unit {
        out.reason = format!("units differ: {} vs {}", base.unit.as_str(), cand.unit.as_str());
        return out;
    }
    let pairs = round_pairs(&base.trials, &cand.trials);
    out.pairs = Some(pairs.len());
    let Some(p) = paired(&pairs, LEVEL, noise) else {
        out.reason = if pairs.len() < 2 {
            format!("{} round(s) paired the two: an interval needs at least 2 (--trials)", pairs.len())
        } else {
            "no interval: a trial median is zero or negative".into()
        };
        return out;
    };
    out.ratio = Some(p.ratio.ratio);
    out.ratio_ci95 = Some([p.ratio.lo, p.ratio.hi]);
    out.sensitivity = p.sensitivity;
    out.pair_spread = Some(p.spread);
    out.p_value = Some(crate::stats::band_p_value(&p.ratio, LEVEL, noise));
    (out.verdict, out.reason) = verdict_of(base.direction, p.ratio.lo, p.ratio.hi, noise, "the noise band");
    if let (Verdict::Unchanged, Some(s)) = (out.verdict, out.sensitivity) {
        // What "unchanged" is worth: with few rounds, only a large change shows.
        out.reason.push_str(&format!("; from {} rounds it could see a change of {} or more", p.pairs, format::percent(s)));
    }
    if out.disturbed != [0, 0] {
        out.reason.push_str(&format!("; disturbed trials: {} in the base, {} in the candidate", out.disturbed[0], out.disturbed[1]));
    }
    out
}

/// Every candidate variant against the base over `rows` (a run's), one
/// comparison each of the rows both have; empty without variants. The
/// verdicts of all of them are judged together: one false discovery
/// control over every row of every candidate, so that many variants keep
/// the false-verdict rate many rows keep.
pub fn compare(rows: &[Row], run_name: &str, opts: &Options) -> Vec<Comparison> {
    judge_variants(rows, None, run_name, opts, 0)
}

/// The same for a stored run, whatever it got to: its variants from its
/// record, a row one variant lacks as `not comparable` (`not_run` where the
/// run planned it but ended without it), and how far the run got.
pub fn compare_run(stored: &StoredRun, run_name: &str, opts: &Options) -> Vec<Comparison> {
    judge_variants(&stored.rows, Some(&stored.run), run_name, opts, 0)
}

/// The same over the rows so far of a run whose plan holds `planned`
/// comparisons (cells of a candidate variant): those not measured yet
/// count as no evidence (see [`super::control_false_discoveries_among`]),
/// so a verdict given now stands when the run ends.
pub fn compare_so_far(rows: &[Row], run_name: &str, opts: &Options, planned: usize) -> Vec<Comparison> {
    judge_variants(rows, None, run_name, opts, planned)
}

/// The comparisons that planned cells make: one per cell of a candidate
/// variant.
pub fn planned_comparisons(cells: &[Cell]) -> usize {
    cells.iter().filter(|c| c.variant.as_ref().is_some_and(|v| !v.base)).count()
}

/// [`compare`], [`compare_run`] and [`compare_so_far`]: `run` gives the
/// variants, the missing rows and the completion when there is one;
/// `family` is the number of comparisons judged together, at least.
///
/// Cost: linear in the rows, times the candidates for the lookups of the
/// base's rows (plus the false discovery control's sort).
fn judge_variants(rows: &[Row], run: Option<&RunRecord>, run_name: &str, opts: &Options, family: usize) -> Vec<Comparison> {
    let Some((base, candidates)) = run_variants(run, rows) else { return Vec::new() };
    let mut by_variant: HashMap<&str, Vec<(Key, &Row)>> = HashMap::new();
    for r in rows {
        if let Some(v) = &r.cell.variant {
            by_variant.entry(&v.name).or_default().push((cell_key(&r.cell, AXIS), r));
        }
    }
    let completion = run.map_or_else(|| Completion::assumed(rows.len()), |r| Completion::of(r, rows));
    let ran: HashSet<usize> = rows.iter().map(|r| r.cell.index).collect();
    let side = |name, variant: &str| {
        let planned = run.into_iter().flat_map(|r| &r.plan).filter(|c| c.variant.as_ref().is_some_and(|v| v.name == variant));
        Side::new(name, completion.clone(), planned, &ran, AXIS)
    };
    let none = Vec::new();
    let base_rows = by_variant.get(base.name.as_str()).unwrap_or(&none);
    let mut cs: Vec<Comparison> = candidates
        .iter()
        .map(|cv| {
            let sides = [side("base variant", &base.name), side("candidate variant", &cv.name)];
            let cand_rows = by_variant.get(cv.name.as_str()).unwrap_or(&none);
            let judge = |b: &Row, c: &Row| judge(b, c, opts.threshold);
            let rows = match_rows(base_rows, cand_rows, &sides, opts.threshold, run.is_some(), judge);
            Comparison {
                schema: COMPARE_SCHEMA,
                base: format!("{run_name}, variant {}", base.describe()),
                candidate: format!("{run_name}, variant {}", cv.describe()),
                completion: [completion.clone(), completion.clone()],
                threshold: opts.threshold,
                machine_differences: Vec::new(),
                setting_differences: Vec::new(),
                interference: run.and_then(super::busy_run_note),
                floors: None,
                paired: true,
                rows,
            }
        })
        .collect();
    control_false_discoveries_among(cs.iter_mut().flat_map(|c| c.rows.iter_mut()), family);
    super::mark_disturbed(cs.iter_mut().flat_map(|c| c.rows.iter_mut()), run.is_some_and(super::busy));
    cs
}

/// `b against a: 2 regressed, 0 improved, 137 unchanged, 0 not comparable`,
/// then what the comparison could see (see [`sees_text`]).
pub fn summary_line(c: &Comparison, candidate: &str, base: &str) -> String {
    format!(
        "{candidate} against {base}: {}, {}, {} unchanged, {} not comparable{}",
        c.count_text(Verdict::Regressed),
        c.count_text(Verdict::Improved),
        c.count(Verdict::Unchanged),
        c.count(Verdict::NotComparable),
        sees_text(c)
    )
}

/// `; from 2 rounds it could see a change of 57.31% or more`, or `; its
/// rows could see changes of 3.10% to 57.31% or more` when they differ (the
/// rows' sensitivity); "" when no row has one.
pub fn sees_text(c: &Comparison) -> String {
    let sees: Vec<(f64, usize)> = c.rows.iter().filter_map(|r| Some((r.sensitivity?, r.pairs?))).collect();
    let (Some(lo), Some(hi)) = (sees.iter().map(|s| s.0).min_by(f64::total_cmp), sees.iter().map(|s| s.0).max_by(f64::total_cmp)) else {
        return String::new();
    };
    let rounds: HashSet<usize> = sees.iter().map(|s| s.1).collect();
    match (format::percent(lo), format::percent(hi)) {
        (lo, hi) if lo == hi && rounds.len() == 1 => format!("; from {} rounds it could see a change of {lo} or more", sees[0].1),
        (lo, hi) if lo == hi => format!("; it could see a change of {lo} or more"),
        (lo, hi) => format!("; its rows could see changes of {lo} to {hi} or more"),
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;
    use serde_json::json;

    use super::*;
    use crate::evidence::{ProcessRecord, fake};
    use crate::model::Unit;
    use crate::stats::testdata::normal;

    /// What `sims` simulated runs of `variants` variants (the first the
    /// base) over `rows` cells and `rounds` rounds gave: the share of runs
    /// with any false verdict, the mean share of false verdicts among a
    /// run's verdicts (0 without any), and the share of changed candidates
    /// called regressed. The first `changed` candidates are 30% slower, the
    /// others identical to the base. Each round moves the machine by 10%,
    /// each trial adds `noise` of its own (sd on the log scale).
    fn false_verdicts(variants: usize, changed: usize, rows: usize, rounds: usize, noise: f64, sims: usize, seed: u64) -> [f64; 3] {
        let vs: Vec<Variant> = (0..variants).map(|i| fake::variant(&format!("v{i}"), i == 0)).collect();
        let opts = Options { threshold: crate::stats::DEFAULT_NOISE, ..Options::default() };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut any, mut share, mut found) = (0, 0.0, 0);
        for _ in 0..sims {
            let mut all = Vec::new();
            for r in 0..rows {
                let levels: Vec<f64> = (0..rounds).map(|_| 0.1 * normal(&mut rng)).collect();
                for (i, v) in vs.iter().enumerate() {
                    let truth = if (1..=changed).contains(&i) { 1.3_f64.ln() } else { 0.0 };
                    let medians: Vec<f64> = levels.iter().map(|l| 100.0 * (truth + l + noise * normal(&mut rng)).exp()).collect();
                    all.push(fake::row(all.len(), "w.x", &[("n", json!(r))], Some(v), &medians, Unit::Ns));
                }
            }
            let cs = compare(&all, "", &opts);
            assert_eq!(cs.len(), variants - 1);
            let verdicts = |c: &Comparison| c.count(Verdict::Regressed) + c.count(Verdict::Improved);
            let wrong: usize = cs[changed..].iter().map(verdicts).sum();
            let all: usize = cs.iter().map(verdicts).sum();
            any += usize::from(wrong > 0);
            share += if all > 0 { wrong as f64 / all as f64 } else { 0.0 };
            found += cs[..changed].iter().map(|c| c.count(Verdict::Regressed)).sum::<usize>();
        }
        let n = sims as f64;
        [any as f64 / n, share / n, found as f64 / (n * (changed * rows).max(1) as f64)]
    }

    /// The false-verdict target plus two standard errors of a share
    /// estimated from `sims` simulations.
    fn within_target(sims: usize) -> f64 {
        let q = crate::compare::FALSE_DISCOVERY_RATE;
        q + 2.0 * (q * (1.0 - q) / sims as f64).sqrt()
    }

    #[test]
    fn fifty_identical_variants_give_a_false_verdict_in_at_most_5_percent_of_runs_at_2_and_5_trials() {
        // 50 identical variants over 2 cells: 98 comparisons judged together,
        // with trials' own noise small and large against the 2% band.
        let sims = 1000;
        for (rounds, noise, seed) in [(2, 0.03, 11), (2, 0.2, 12), (5, 0.03, 13), (5, 0.2, 14)] {
            let [any, ..] = false_verdicts(50, 0, 2, rounds, noise, sims, seed);
            eprintln!("{rounds} rounds, noise {noise}: runs of 50 identical variants with a false verdict: {any:.3}");
            assert!(any <= within_target(sims), "{rounds} rounds, noise {noise}: {any:.3} of the runs had a false verdict");
        }
    }

    #[test]
    fn among_many_variants_some_changed_the_share_of_false_verdicts_stays_at_most_5_percent() {
        // 20 variants, 5 of them 30% slower, at 5 rounds: the changed ones
        // are found, and the identical ones are seldom called.
        let sims = 1000;
        let [_, fdr, found] = false_verdicts(20, 5, 1, 5, 0.03, sims, 15);
        eprintln!("share of false verdicts among the verdicts: {fdr:.3}; changed variants found: {found:.3}");
        assert!(fdr <= within_target(sims), "{fdr:.3}");
        assert!(found > 0.9, "the adjustment still finds a 30% change at 5 rounds: {found:.3}");
    }

    #[test]
    fn a_two_round_comparison_says_how_large_a_change_it_could_see() {
        let (a, b) = (fake::variant("a", true), fake::variant("b", false));
        let rows = vec![
            fake::row(0, "w.x", &[], Some(&a), &[100.0, 110.0], Unit::Ns),
            fake::row(1, "w.x", &[], Some(&b), &[104.0, 108.0], Unit::Ns),
        ];
        let opts = Options { threshold: crate::stats::DEFAULT_NOISE, ..Options::default() };
        let c = &compare(&rows, "", &opts)[0];
        let r = &c.rows[0];
        assert_eq!((r.verdict, r.pairs), (Verdict::Unchanged, Some(2)));
        let sees = format::percent(r.sensitivity.unwrap());
        // Rounds 4% and 1.8% slower: one degree of freedom makes that an interval 0.75x..1.39x.
        assert!(r.sensitivity.unwrap() > 0.4, "one degree of freedom: a wide interval ({sees})");
        assert!(r.reason.ends_with(&format!("; from 2 rounds it could see a change of {sees} or more")), "{}", r.reason);
        assert_eq!(
            summary_line(c, "b", "a"),
            format!(
                "b against a: 0 regressed, 0 improved, 1 unchanged, 0 not comparable; from 2 rounds it could see a change of {sees} or more"
            )
        );
    }

    fn trial(round: u32, median: Option<f64>, status: Status) -> TrialRecord {
        let report = crate::evidence::WorkerReport::new(status, None);
        TrialRecord { median, ..TrialRecord::from_report(round, round, status, None, ProcessRecord::default(), &report) }
    }

    #[test]
    fn trials_pair_by_the_round_they_ran_in() {
        let base = [trial(0, Some(10.0), Status::Ok), trial(1, Some(11.0), Status::Ok), trial(3, Some(13.0), Status::Ok)];
        let cand = [
            trial(1, Some(21.0), Status::Ok),
            trial(0, Some(20.0), Status::Ok),
            trial(2, Some(22.0), Status::Ok),
            trial(3, None, Status::Ok),
        ];
        assert_eq!(round_pairs(&base, &cand), [(10.0, 20.0), (11.0, 21.0)], "rounds 0 and 1 only: round 2 has no base, round 3 no value");
        let failed = [trial(0, Some(20.0), Status::Failed), trial(1, Some(21.0), Status::Ok)];
        assert_eq!(round_pairs(&base, &failed), [(11.0, 21.0)], "a trial that is not ok pairs with nothing");
    }
}
