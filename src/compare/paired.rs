//! Variants of one run, compared paired by round: the strongest evidence
//! about a change. The rows of one cell under the base variant and under a
//! candidate match by workload and every other axis; their trials pair by
//! the round they ran in (back to back, so they shared the machine's state),
//! and the ratio's interval comes from the per-round ratios
//! (`stats::paired`). No noise floor applies: the pairing already removes
//! what moves between runs.

use crate::evidence::{Row, TrialRecord};
use crate::model::{Status, Variant, value_text, variant::AXIS};
use crate::stats::{LEVEL, paired};

use super::{Comparison, Options, RowComparison, Verdict, verdict_of};

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
    let v: Vec<String> =
        r.cell.axis_values().into_iter().filter(|(a, _)| a != AXIS).map(|(a, v)| format!("{a}={}", value_text(&v))).collect();
    if v.is_empty() { "-".into() } else { v.join(", ") }
}

/// The variants the rows were measured under: the base, then the others in
/// the order their rows first appear. `None` for rows without variants.
pub fn variants(rows: &[Row]) -> Option<(Variant, Vec<Variant>)> {
    let mut seen: Vec<&Variant> = Vec::new();
    for v in rows.iter().filter_map(|r| r.cell.variant.as_ref()) {
        if !seen.iter().any(|s| s.name == v.name) {
            seen.push(v);
        }
    }
    let base = seen.iter().find(|v| v.base)?;
    Some(((*base).clone(), seen.iter().filter(|v| !v.base).map(|v| (*v).clone()).collect()))
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
    if out.disturbed != [0, 0] {
        out.reason.push_str(&format!("; disturbed trials: {} in the base, {} in the candidate", out.disturbed[0], out.disturbed[1]));
    }
    out
}

/// Every candidate variant against the base, one comparison each, over the
/// rows given (a run's, or one workload's); empty without variants.
pub fn compare(rows: &[Row], run_name: &str, opts: &Options) -> Vec<Comparison> {
    let Some((base, candidates)) = variants(rows) else { return Vec::new() };
    let of = |name: &str| -> Vec<&Row> { rows.iter().filter(|r| r.cell.variant.as_ref().is_some_and(|v| v.name == name)).collect() };
    let base_rows = of(&base.name);
    candidates
        .iter()
        .map(|cv| {
            let cand_rows = of(&cv.name);
            let key = |r: &Row| (r.cell.workload.clone(), axes_without_variant(r));
            let mut rows: Vec<RowComparison> =
                base_rows.iter().filter_map(|b| cand_rows.iter().find(|c| key(c) == key(b)).map(|c| judge(b, c, opts.threshold))).collect();
            super::control_false_discoveries(&mut rows);
            Comparison {
                schema: "proofbench.compare/2",
                base: format!("{run_name}, variant {}", base.describe()),
                candidate: format!("{run_name}, variant {}", cv.describe()),
                threshold: opts.threshold,
                machine_differences: Vec::new(),
                setting_differences: Vec::new(),
                interference: None,
                floors: None,
                paired: true,
                rows,
            }
        })
        .collect()
}

/// `b against a: 2 regressed, 0 improved, 137 unchanged, 0 not comparable`.
pub fn summary_line(c: &Comparison, candidate: &str, base: &str) -> String {
    format!(
        "{candidate} against {base}: {} regressed, {} improved, {} unchanged, {} not comparable",
        c.count(Verdict::Regressed),
        c.count(Verdict::Improved),
        c.count(Verdict::Unchanged),
        c.count(Verdict::NotComparable)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::ProcessRecord;

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
