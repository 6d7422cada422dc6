//! Variants of one run, compared paired: the strongest evidence about a
//! change. The rows of one cell under the base variant and under a
//! candidate match by workload and every other axis; their trials pair by
//! the round they ran in (back to back, or as one lockstep set, so they
//! shared the machine's state). Each pair gives one summary of the change,
//! `ln(B / A)`: the median of its samples' log ratios when the two trials
//! ran in lockstep (each sample of A beside one of B), else the log ratio
//! of the two trials' medians. A pair in which one side was disturbed and
//! the other was not is left out: the load, not the change, may have made
//! it. The sequential design of `stats::decide` turns the summaries into
//! SAME, DIFFERENT or UNKNOWN, with the ratio's interval across pairs. No
//! noise floor applies: the pairing removes what moves between runs.

use std::collections::{HashMap, HashSet};

use crate::evidence::{Row, RunRecord, SampleRecord, StoredRun, TrialRecord};
use crate::model::{Cell, Direction, Status, Variant, variant::AXIS};
use crate::stats::decide::{self, Decision, Design, Plan};
use crate::stats::{LEVEL, stddev};
use crate::text::format;

use super::{
    COMPARE_SCHEMA, Comparison, Completion, Key, Options, RowComparison, Side, Verdict, Word, cell_key, control_false_discoveries_among,
    match_rows,
};

/// One side's trial as the pairing takes it: its record and its timed
/// samples' values in the order taken.
pub type TrialSamples<'a> = (&'a TrialRecord, Vec<f64>);

/// The timed samples' values of each trial of `samples`, by trial.
pub fn timed_by_trial(samples: &[SampleRecord]) -> HashMap<u32, Vec<f64>> {
    let mut by: HashMap<u32, Vec<(u32, f64)>> = HashMap::new();
    for s in samples.iter().filter(|s| !s.warmup) {
        by.entry(s.trial).or_default().push((s.index, s.value));
    }
    by.into_iter()
        .map(|(t, mut v)| {
            v.sort_by_key(|x| x.0);
            (t, v.into_iter().map(|x| x.1).collect())
        })
        .collect()
}

/// A row's trials with their timed samples.
pub fn row_trials(row: &Row) -> Vec<TrialSamples<'_>> {
    let mut by = timed_by_trial(&row.samples);
    row.trials.iter().map(|t| (t, by.remove(&t.trial).unwrap_or_default())).collect()
}

/// The trial pairs of a base and a candidate, as the decision takes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairEvidence {
    /// Each counted pair's summary, `ln(B / A)`, in round order.
    pub summaries: Vec<f64>,
    /// Of them, pairs summarised from lockstep samples.
    pub lockstep: usize,
    /// Rounds left out: one side disturbed, the other not.
    pub one_side_disturbed: usize,
    /// Each lockstep pair's own interval from its samples' log ratios
    /// (`stats::decide::within_pair`), in round order: it does not hold
    /// the variation between processes.
    pub within: Vec<decide::PairInterval>,
}

/// How one pair was summarised.
enum Summary {
    /// From its lockstep samples' log ratios, with its own interval from
    /// them where it took two samples or more.
    Lockstep(f64, Option<decide::PairInterval>),
    /// From the log ratio of its trials' medians.
    Medians(f64),
}

/// The summary of one pair: the median of the samples' log ratios when the
/// two trials ran in one lockstep set with as many timed samples each, else
/// the log ratio of their medians.
fn pair_summary(a: &TrialSamples, b: &TrialSamples) -> Option<Summary> {
    let same_set = match (&a.0.lockstep, &b.0.lockstep) {
        (Some(x), Some(y)) => x.sides == y.sides && x.side != y.side,
        _ => false,
    };
    if same_set
        && a.1.len() == b.1.len()
        && let Some(logs) = decide::log_ratios(&a.1, &b.1)
        && let Some(m) = decide::pair_summary(&logs)
    {
        return Some(Summary::Lockstep(m, decide::within_pair(&logs, LEVEL)));
    }
    let (x, y) = (a.0.median?, b.0.median?);
    (x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite()).then(|| Summary::Medians(y.ln() - x.ln()))
}

/// The pairs of `base` and `cand` (each trial with its timed samples): the
/// ok trials of one round pair; a pair whose one side was disturbed and the
/// other not is counted apart, not as evidence.
///
/// Cost: O(trials x samples per trial).
pub fn pair_evidence(base: &[TrialSamples], cand: &[TrialSamples]) -> PairEvidence {
    let ok = |t: &&TrialSamples| t.0.status == Status::Ok && t.0.median.is_some();
    let cand: HashMap<u32, &TrialSamples> = cand.iter().filter(ok).map(|t| (t.0.round, t)).collect();
    let mut out = PairEvidence::default();
    let mut base: Vec<&TrialSamples> = base.iter().filter(ok).collect();
    base.sort_by_key(|t| t.0.round);
    for a in base {
        let Some(b) = cand.get(&a.0.round) else { continue };
        if a.0.disturbed() != b.0.disturbed() {
            out.one_side_disturbed += 1;
            continue;
        }
        match pair_summary(a, b) {
            Some(Summary::Lockstep(m, within)) => {
                out.summaries.push(m);
                out.lockstep += 1;
                out.within.extend(within);
            }
            Some(Summary::Medians(m)) => out.summaries.push(m),
            None => {}
        }
    }
    out
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

/// The design a row's comparison is decided with: the base row's own (the
/// run's trial plan and `--equivalence`, recorded with it), else the
/// default; `equivalence` (`compare --equivalence`) replaces its band.
pub fn design_of(base: &Row, equivalence: Option<f64>) -> Design {
    let design = base.design.unwrap_or_default();
    Design { equivalence: equivalence.unwrap_or(design.equivalence), ..design }
}

/// Judges a candidate row against the base row of the same cell, paired by
/// round, decided by `plan`.
pub fn judge(base: &Row, cand: &Row, plan: &Plan) -> RowComparison {
    let d = plan.design();
    let mut out = RowComparison { equivalence: d.equivalence, ..RowComparison::of(base, cand, axes_without_variant(base), d.min_effect) };
    if base.status != Status::Ok || cand.status != Status::Ok {
        out.reason = format!("base {}, candidate {}", base.status.as_str(), cand.status.as_str());
        return out;
    }
    if base.unit != cand.unit {
        out.reason = format!("units differ: {} vs {}", base.unit.as_str(), cand.unit.as_str());
        return out;
    }
    let ev = pair_evidence(&row_trials(base), &row_trials(cand));
    let n = ev.summaries.len();
    out.pairs = Some(n);
    out.lockstep_pairs = (ev.lockstep > 0).then_some(ev.lockstep);
    out.one_side_disturbed = ev.one_side_disturbed;
    let left_out = match ev.one_side_disturbed {
        0 => String::new(),
        k => format!(" ({} left out: one side disturbed, the other not)", format::counted(k, "round", "rounds")),
    };
    // Both measured: undecided, whatever else is missing.
    out.word = Some(Word::Unknown);
    let Some(ci) = decide::across_pairs(&ev.summaries, LEVEL) else {
        out.reason = if n < 2 {
            let within = match ev.within.first() {
                Some(w) if n == 1 => format!(
                    " (within its one lockstep pair {} ({}..{} at 95%, from {} samples), which does not hold the variation \
                     between processes)",
                    format::speedup(w.ratio),
                    format::speedup(w.lo),
                    format::speedup(w.hi),
                    w.values
                ),
                _ => String::new(),
            };
            format!(
                "UNKNOWN: {} paired the two{left_out}{within}: an interval across pairs needs at least 2 (--trials)",
                format::counted(n, "round", "rounds")
            )
        } else {
            "no interval: a trial median or sample is zero or negative".into()
        };
        return out;
    };
    out.ratio = Some(ci.ratio);
    out.ratio_ci95 = Some([ci.lo, ci.hi]);
    out.pair_spread = Some(stddev(&ev.summaries));
    out.sensitivity = plan.sees(&ev.summaries);
    out.p_value = plan.p_different(&ev.summaries);
    let decision = plan.decide(&ev.summaries);
    let pairs = match ev.lockstep {
        0 => format::counted(n, "pair of rounds", "pairs of rounds"),
        k if k == n => format::counted(n, "lockstep pair", "lockstep pairs"),
        k => format!("{} ({k} in lockstep)", format::counted(n, "pair", "pairs")),
    };
    let iv = |lo: f64, hi: f64, level: &str| format!("{}..{} at {level}", format::speedup(lo), format::speedup(hi));
    let level = |a: f64| format::percent(1.0 - a);
    let alpha = plan.look_alpha(n.min(d.max_pairs)).unwrap_or(d.alpha);
    (out.verdict, out.reason) = match &decision {
        Decision::Different { direction, lo, hi, .. } => {
            let worse = match base.direction {
                Direction::LowerIsBetter => *direction == decide::Direction::Higher,
                Direction::HigherIsBetter => *direction == decide::Direction::Lower,
            };
            let v = if worse { Verdict::Regressed } else { Verdict::Improved };
            (v, format!("the interval {} excludes 1, from {pairs}", iv(*lo, *hi, &level(alpha))))
        }
        Decision::Same { band, lo, hi, .. } => (
            Verdict::Unchanged,
            format!("the interval {} lies inside +-{}, from {pairs}", iv(*lo, *hi, &level(2.0 * alpha)), format::band(*band)),
        ),
        Decision::Unknown { why } => {
            let why = match why {
                decide::Why::FewPairs => format!("fewer than {} pairs", d.min_pairs),
                decide::Why::BudgetSpent => "neither SAME nor DIFFERENT at the last look".into(),
                // The run's budget, an interruption, or rounds left out (one side disturbed).
                decide::Why::NotYet if n < d.max_pairs => {
                    format!("the row stopped at {n} of {} pairs (stop: {})", d.max_pairs, base.stop.map_or("none", |s| s.as_str()))
                }
                decide::Why::NotYet => "neither SAME nor DIFFERENT".into(),
                decide::Why::BadInput | decide::Why::BadDesign => "the design or the pairs cannot be decided".into(),
            };
            (Verdict::Unchanged, format!("{why}, from {pairs}"))
        }
    };
    out.reason = format!("{}: {}", decision.word(), out.reason);
    out.word = Some(match decision {
        Decision::Different { .. } => Word::Different,
        Decision::Same { .. } => Word::Same,
        Decision::Unknown { .. } => Word::Unknown,
    });
    out.decision = Some(decision);
    out.reason.push_str(&left_out);
    // A --lockstep run whose worker could not take turns says why its pairs are not in lockstep.
    if let Some(why) = base.trials.iter().chain(&cand.trials).find_map(|t| t.not_in_lockstep.as_deref()) {
        out.reason.push_str(&format!(" ({why})"));
    }
    if let (Some(Word::Same | Word::Unknown), Some(s)) = (out.word, out.sensitivity) {
        out.reason.push_str(&format!("; it could see a change of {} or more", format::percent(s)));
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
            let judge = |b: &Row, c: &Row| match Plan::new(design_of(b, opts.equivalence)).map(|p| p.at_end()) {
                Ok(plan) => judge(b, c, &plan),
                Err(e) => {
                    let mut out = RowComparison::of(b, c, axes_without_variant(b), 0.0);
                    out.reason = format!("the decision's design is invalid: {e}");
                    out
                }
            };
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

/// `b against a: 2 DIFFERENT (2 regressed, 0 improved), 130 SAME within 2%,
/// 7 UNKNOWN, 0 not comparable`, then what the comparison could see (see
/// [`sees_text`]).
pub fn summary_line(c: &Comparison, candidate: &str, base: &str) -> String {
    format!(
        "{candidate} against {base}: {}, {} not comparable{}",
        super::words_text(&c.rows),
        c.rows.iter().filter(|r| r.word.is_none()).count(),
        sees_text(c)
    )
}

/// `; from 2 pairs it could see a change of 57.31% or more`, or `; its
/// rows could see changes of 3.10% to 57.31% or more` when they differ (the
/// rows' sensitivity); "" when no row has one.
pub fn sees_text(c: &Comparison) -> String {
    let sees: Vec<(f64, usize)> = c.rows.iter().filter_map(|r| Some((r.sensitivity?, r.pairs?))).collect();
    let (Some(lo), Some(hi)) = (sees.iter().map(|s| s.0).min_by(f64::total_cmp), sees.iter().map(|s| s.0).max_by(f64::total_cmp)) else {
        return String::new();
    };
    let pairs: HashSet<usize> = sees.iter().map(|s| s.1).collect();
    match (format::percent(lo), format::percent(hi)) {
        (lo, hi) if lo == hi && pairs.len() == 1 => format!("; from {} pairs it could see a change of {lo} or more", sees[0].1),
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
                    // As a run of `--trials ROUNDS` records: one look.
                    let design = Some(Design::for_trials(rounds as u32, rounds as u32, crate::stats::decide::DEFAULT_EQUIVALENCE));
                    all.push(Row { design, ..fake::row(all.len(), "w.x", &[("n", json!(r))], Some(v), &medians, Unit::Ns) });
                }
            }
            let cs = compare(&all, "", &opts);
            assert_eq!(cs.len(), variants - 1);
            let verdicts = |c: &Comparison| c.count_word(Word::Different);
            let wrong: usize = cs[changed..].iter().map(verdicts).sum();
            let all: usize = cs.iter().map(verdicts).sum();
            any += usize::from(wrong > 0);
            share += if all > 0 { wrong as f64 / all as f64 } else { 0.0 };
            found += cs[..changed].iter().flat_map(|c| &c.rows).filter(|r| r.verdict == Verdict::Regressed).count();
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
        let two = Some(Design::for_trials(2, 2, 0.02));
        let rows = vec![
            Row { design: two, ..fake::row(0, "w.x", &[], Some(&a), &[100.0, 110.0], Unit::Ns) },
            Row { design: two, ..fake::row(1, "w.x", &[], Some(&b), &[104.0, 108.0], Unit::Ns) },
        ];
        let opts = Options { threshold: crate::stats::DEFAULT_NOISE, ..Options::default() };
        let c = &compare(&rows, "", &opts)[0];
        let r = &c.rows[0];
        assert_eq!((r.verdict, r.word, r.pairs), (Verdict::Unchanged, Some(Word::Unknown), Some(2)));
        let sees = format::percent(r.sensitivity.unwrap());
        // Rounds 4% and 1.8% slower: one degree of freedom makes that a wide interval.
        assert!(r.sensitivity.unwrap() > 0.4, "one degree of freedom: a wide interval ({sees})");
        assert!(r.reason.ends_with(&format!("; it could see a change of {sees} or more")), "{}", r.reason);
        assert_eq!(
            summary_line(c, "b", "a"),
            format!(
                "b against a: 0 DIFFERENT (0 regressed, 0 improved), 0 SAME within 2%, 1 UNKNOWN, 0 not comparable; from 2 pairs it \
                 could see a change of {sees} or more"
            )
        );
    }

    fn trial(round: u32, median: Option<f64>, status: Status) -> TrialRecord {
        let report = crate::evidence::WorkerReport::new(status, None);
        TrialRecord { median, ..TrialRecord::from_report(round, round, status, None, ProcessRecord::default(), &report) }
    }

    fn no_samples(trials: &[TrialRecord]) -> Vec<TrialSamples<'_>> {
        trials.iter().map(|t| (t, Vec::new())).collect()
    }

    #[test]
    fn trials_pair_by_the_round_they_ran_in() {
        let base = [trial(0, Some(10.0), Status::Ok), trial(1, Some(11.0), Status::Ok), trial(3, Some(13.0), Status::Ok)];
        let cand = [
            trial(1, Some(22.0), Status::Ok),
            trial(0, Some(20.0), Status::Ok),
            trial(2, Some(22.0), Status::Ok),
            trial(3, None, Status::Ok),
        ];
        let ev = pair_evidence(&no_samples(&base), &no_samples(&cand));
        let want = [2f64.ln(), 2f64.ln()];
        assert_eq!(ev.summaries.len(), 2, "rounds 0 and 1 only: round 2 has no base, round 3 no value");
        assert!(ev.summaries.iter().zip(want).all(|(x, y)| (x - y).abs() < 1e-12), "{ev:?}");
        assert_eq!((ev.lockstep, ev.one_side_disturbed), (0, 0));
        let failed = [trial(0, Some(20.0), Status::Failed), trial(1, Some(33.0), Status::Ok)];
        let ev = pair_evidence(&no_samples(&base), &no_samples(&failed));
        assert!(ev.summaries.len() == 1 && (ev.summaries[0] - 3f64.ln()).abs() < 1e-12, "a trial that is not ok pairs with nothing");
    }

    #[test]
    fn lockstep_pairs_take_the_median_of_their_samples_log_ratios_and_a_one_side_disturbed_pair_is_left_out() {
        let set = |side: u32| crate::evidence::LockstepRecord { side, sides: vec!["a".into(), "b".into()], cpu: Some(0) };
        let mut base = [trial(0, Some(100.0), Status::Ok), trial(1, Some(100.0), Status::Ok), trial(2, Some(100.0), Status::Ok)];
        let mut cand = [trial(0, Some(150.0), Status::Ok), trial(1, Some(150.0), Status::Ok), trial(2, Some(150.0), Status::Ok)];
        for (a, b) in base.iter_mut().zip(cand.iter_mut()) {
            (a.lockstep, b.lockstep) = (Some(set(0)), Some(set(1)));
        }
        // Round 2's candidate was disturbed, its base not.
        cand[2].facts = Some(crate::evidence::TrialFacts {
            allowed_cpus: vec![0],
            thread_cpus: vec![0],
            anon_huge_bytes: None,
            interference: Some(fake::busy(0.4)),
        });
        // Samples 1% apart, one by one, though the trials' medians say 1.5x.
        let a: Vec<TrialSamples> = base.iter().map(|t| (t, vec![100.0, 200.0, 50.0])).collect();
        let b: Vec<TrialSamples> = cand.iter().map(|t| (t, vec![101.0, 202.0, 50.5])).collect();
        let ev = pair_evidence(&a, &b);
        assert_eq!((ev.summaries.len(), ev.lockstep, ev.one_side_disturbed), (2, 2, 1), "{ev:?}");
        assert!(ev.summaries.iter().all(|x| (x - 1.01f64.ln()).abs() < 1e-12), "{ev:?}");
        // Unequal sample counts, or trials of different sets: their medians.
        let short: Vec<TrialSamples> = cand.iter().map(|t| (t, vec![101.0])).collect();
        let ev = pair_evidence(&a[..1], &short[..1]);
        assert!(ev.lockstep == 0 && (ev.summaries[0] - 1.5f64.ln()).abs() < 1e-12, "{ev:?}");
        // One lockstep pair: its own interval from its samples, said in the row's reason.
        let ev = pair_evidence(&a[..1], &b[..1]);
        assert_eq!((ev.within.len(), ev.within[0].values), (1, 3), "{ev:?}");
        assert_eq!(ev.within[0].scope, decide::Scope::WithinPair);
    }

    #[test]
    fn a_row_is_decided_by_its_pairs_and_says_which() {
        let (a, b) = (fake::variant("a", true), fake::variant("b", false));
        let design = Design::for_trials(3, 10, 0.02);
        // As compare judges a finished run's rows: ended where they ended.
        let plan = Plan::new(design).unwrap().at_end();
        let base = fake::row(0, "w.x", &[], Some(&a), &[100.0, 120.0, 90.0, 105.0], Unit::Ns);
        // 3% slower in every round, the machine moving 30% between rounds.
        let slower = fake::row(1, "w.x", &[], Some(&b), &[103.0, 123.6, 92.7, 108.15], Unit::Ns);
        let r = judge(&base, &slower, &plan);
        assert_eq!((r.word, r.verdict, r.pairs, r.lockstep_pairs), (Some(Word::Different), Verdict::Regressed, Some(4), None));
        assert!(r.reason.starts_with("DIFFERENT: the interval 1.030x..1.030x"), "{}", r.reason);
        // The same with a throughput: higher is better, so 3% more is improved.
        let (base_t, faster) = (fake::row(0, "w.x", &[], Some(&a), &[100.0, 120.0, 90.0, 105.0], Unit::OpsPerSec), {
            fake::row(1, "w.x", &[], Some(&b), &[103.0, 123.6, 92.7, 108.15], Unit::OpsPerSec)
        });
        assert_eq!(judge(&base_t, &faster, &plan).verdict, Verdict::Improved);
        // Within 0.2% either way: SAME within 2%, saying what it could see.
        let same = fake::row(1, "w.x", &[], Some(&b), &[100.2, 119.8, 90.1, 104.9], Unit::Ns);
        let r = judge(&base, &same, &plan);
        assert_eq!((r.word, r.verdict), (Some(Word::Same), Verdict::Unchanged), "{}", r.reason);
        assert!(r.reason.contains("it could see a change of"), "{}", r.reason);
        // Wandering 1% to 4% over 4 pairs, the run's budget spent: UNKNOWN, naming the stop.
        let wander = fake::row(1, "w.x", &[], Some(&b), &[100.0, 124.8, 89.1, 108.15], Unit::Ns);
        let stopped = Row { stop: Some(crate::evidence::RowStop::RunBudget), ..base.clone() };
        let r = judge(&stopped, &wander, &plan);
        assert_eq!(r.word, Some(Word::Unknown), "{}", r.reason);
        assert!(r.reason.starts_with("UNKNOWN: the row stopped at 4 of 10 pairs (stop: run-budget)"), "{}", r.reason);
        // Two rounds: fewer than the first look.
        let two = judge(
            &fake::row(0, "w.x", &[], Some(&a), &[100.0, 101.0], Unit::Ns),
            &fake::row(1, "w.x", &[], Some(&b), &[100.0, 102.0], Unit::Ns),
            &plan,
        );
        assert_eq!(two.word, Some(Word::Unknown));
        assert!(two.reason.starts_with("UNKNOWN: fewer than 3 pairs"), "{}", two.reason);
        // A row recorded with its design is decided by it, --equivalence replacing its band.
        let recorded = Row { design: Some(Design::for_trials(2, 2, 0.05)), ..base.clone() };
        assert_eq!(design_of(&recorded, None).max_pairs, 2);
        assert_eq!(design_of(&recorded, Some(0.01)).equivalence, 0.01);
        assert_eq!(design_of(&base, None), Design::default(), "older rows: the default design");
    }
}
