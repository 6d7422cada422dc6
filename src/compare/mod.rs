//! compare: two stored runs, row by row. Rows match by workload and the
//! values of their axes; each matched pair gets the ratio of medians
//! (candidate / base) with a bootstrap 95% CI, a Mann-Whitney U p-value, and
//! a verdict. "regressed" and "improved" need p < 0.05 *and* the whole CI
//! beyond the noise threshold in one direction (ARCHITECTURE.md); anything
//! else that matched is "unchanged", and what cannot be judged is "not
//! comparable" with the reason.

use serde::Serialize;

use crate::envelope::{Envelope, Reading};
use crate::evidence::{Row, Status, StoredRun};
use crate::plan::value_text;
use crate::report::table::{Align, Table};
use crate::report::{axes_text, format};
use crate::stats::{mann_whitney_u, ratio_of_medians_ci};
use crate::workloads::contract::{Direction, Unit};

/// Bootstrap resamples for the ratio CI.
const RESAMPLES: usize = 2000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    Unchanged,
    NotComparable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "unchanged",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// One matched (or unmatched) row.
#[derive(Clone, Debug, Serialize)]
pub struct RowComparison {
    pub workload: String,
    /// The axes' values, `name=value, ...` (`-` when none).
    pub axes: String,
    pub unit: Option<Unit>,
    pub direction: Option<Direction>,
    pub base_median: Option<f64>,
    pub candidate_median: Option<f64>,
    /// candidate median / base median.
    pub ratio: Option<f64>,
    pub ratio_ci95: Option<[f64; 2]>,
    /// Two-sided Mann-Whitney U p-value of the timed samples.
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    /// Why a row is not comparable, or what decided the verdict.
    pub reason: String,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub base: String,
    pub candidate: String,
    /// The noise threshold, as a fraction (0.02 = 2%).
    pub threshold: f64,
    /// Machine identity fields that differ (rows are then not comparable
    /// unless `across_machines`).
    pub machine_differences: Vec<String>,
    /// Other envelope differences worth knowing (kernel release...), which
    /// do not stop the comparison: they are often what is being compared.
    pub setting_differences: Vec<String>,
    pub rows: Vec<RowComparison>,
}

impl Comparison {
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }
}

/// How to compare.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Changes whose CI does not lie wholly beyond this fraction are noise.
    pub threshold: f64,
    /// Compare rows even when the machines differ.
    pub across_machines: bool,
    pub seed: u64,
}

fn reading_text<T: std::fmt::Debug>(r: &Reading<T>) -> String {
    match r {
        Reading::Present(v) => format!("{v:?}").trim_matches('"').to_string(),
        Reading::Absent { .. } => "absent".into(),
    }
}

/// (field, base, candidate) for each differing field.
fn differences(pairs: Vec<(&str, String, String)>) -> Vec<String> {
    pairs.into_iter().filter(|(_, a, b)| a != b).map(|(f, a, b)| format!("{f} ({a} vs {b})")).collect()
}

/// The machine identity: what makes two runs the same machine. Returns
/// `field (a vs b)` for each identity field that differs (empty: same machine).
pub fn machine_differences(a: &Envelope, b: &Envelope) -> Vec<String> {
    // Total memory moves by a few MiB between boots: compare whole GiB.
    let gib =
        |r: &Reading<u64>| r.ok().map(|b| format!("{} GiB", (*b as f64 / (1u64 << 30) as f64).round())).unwrap_or_else(|| "absent".into());
    differences(vec![
        ("hostname", reading_text(&a.hostname), reading_text(&b.hostname)),
        ("cpu.model_name", reading_text(&a.cpu.model_name), reading_text(&b.cpu.model_name)),
        ("cpu.sockets", reading_text(&a.cpu.sockets), reading_text(&b.cpu.sockets)),
        ("cpu.physical_cores", reading_text(&a.cpu.physical_cores), reading_text(&b.cpu.physical_cores)),
        ("cpu.logical_cpus", reading_text(&a.cpu.logical_cpus), reading_text(&b.cpu.logical_cpus)),
        ("memory.total_bytes", gib(&a.memory.total_bytes), gib(&b.memory.total_bytes)),
        ("virtualization.hypervisor", reading_text(&a.virtualization.hypervisor), reading_text(&b.virtualization.hypervisor)),
    ])
}

fn setting_differences(a: &Envelope, b: &Envelope) -> Vec<String> {
    differences(vec![
        ("kernel.release", reading_text(&a.kernel.release), reading_text(&b.kernel.release)),
        ("kernel.cmdline", reading_text(&a.kernel.cmdline), reading_text(&b.kernel.cmdline)),
        ("cpufreq", format!("{:?}", a.cpufreq.ok()), format!("{:?}", b.cpufreq.ok())),
        ("clock_source", format!("{:?}", a.clock_source), format!("{:?}", b.clock_source)),
        ("tool.version", a.tool.version.clone(), b.tool.version.clone()),
        ("tool.git_commit", a.tool.git_commit.clone(), b.tool.git_commit.clone()),
    ])
}

/// The match key of a row: workload and the values of its axes.
fn key(r: &Row) -> (String, String) {
    (r.cell.workload.clone(), axes_text(r))
}

/// Parameters (not axes, not treatments) whose values differ.
fn parameter_differences(a: &Row, b: &Row) -> Vec<String> {
    let treatments: Vec<&str> = crate::workloads::registry::find(&a.cell.workload)
        .map(|w| w.spec().params.iter().filter(|p| p.treatment).map(|p| p.name).collect())
        .unwrap_or_default();
    let names: std::collections::BTreeSet<&String> = a.cell.params.keys().chain(b.cell.params.keys()).collect();
    names
        .into_iter()
        .filter(|n| !a.cell.axes.contains(n) && !treatments.contains(&n.as_str()))
        .filter_map(|n| {
            let (x, y) = (a.cell.params.get(n).map(value_text), b.cell.params.get(n).map(value_text));
            (x != y).then(|| format!("{n} {} vs {}", x.unwrap_or_else(|| "unset".into()), y.unwrap_or_else(|| "unset".into())))
        })
        .collect()
}

fn timed_values(r: &Row) -> Vec<f64> {
    r.samples.iter().filter(|s| !s.warmup).map(|s| s.value).collect()
}

/// Judges one matched pair of rows: the one code path for "did this row
/// regress between two runs" (`compare` and `history regressions` both call
/// it). `machines_differ` names the machine differences that make the pair
/// not comparable (`None` to judge it).
pub fn judge(base: &Row, cand: &Row, opts: &Options, machines_differ: Option<&str>) -> RowComparison {
    let mut out = RowComparison {
        workload: base.cell.workload.clone(),
        axes: axes_text(base),
        unit: Some(base.unit),
        direction: Some(base.direction),
        base_median: base.median(),
        candidate_median: cand.median(),
        ratio: None,
        ratio_ci95: None,
        p_value: None,
        verdict: Verdict::NotComparable,
        reason: String::new(),
    };
    let not = |mut o: RowComparison, why: String| {
        o.reason = why;
        o
    };
    if let Some(m) = machines_differ {
        return not(out, format!("different machine: {m}"));
    }
    if base.status != Status::Ok || cand.status != Status::Ok {
        return not(out, format!("base {}, candidate {}", base.status.as_str(), cand.status.as_str()));
    }
    if base.unit != cand.unit {
        return not(out, format!("units differ: {} vs {}", base.unit.as_str(), cand.unit.as_str()));
    }
    let params = parameter_differences(base, cand);
    if !params.is_empty() {
        return not(out, format!("different parameters: {}", params.join("; ")));
    }
    let (b, c) = (timed_values(base), timed_values(cand));
    if b.is_empty() || c.is_empty() {
        return not(out, "no timed samples".into());
    }
    let (ratio, ci) = ratio_of_medians_ci(&b, &c, 0.95, RESAMPLES, opts.seed);
    let p = mann_whitney_u(&b, &c).p_two_sided;
    out.ratio = Some(ratio);
    out.ratio_ci95 = Some([ci.lo, ci.hi]);
    out.p_value = Some(p);
    // Worse means a larger ratio for lower-is-better units, a smaller one otherwise.
    let (hi_bound, lo_bound) = (1.0 + opts.threshold, 1.0 / (1.0 + opts.threshold));
    let (worse, better) = match base.direction {
        Direction::LowerIsBetter => (ci.lo > hi_bound, ci.hi < lo_bound),
        Direction::HigherIsBetter => (ci.hi < lo_bound, ci.lo > hi_bound),
    };
    let significant = p < 0.05;
    let band = format!("{}..{}", format::speedup(lo_bound), format::speedup(hi_bound));
    (out.verdict, out.reason) = if significant && worse {
        (Verdict::Regressed, format!("p < 0.05 and the whole CI is beyond the noise band {band} on the worse side"))
    } else if significant && better {
        (Verdict::Improved, format!("p < 0.05 and the whole CI is beyond the noise band {band} on the better side"))
    } else if !significant {
        (Verdict::Unchanged, format!("p = {p:.3} (not below 0.05)"))
    } else {
        (Verdict::Unchanged, format!("the CI reaches into the noise band {band}"))
    };
    out
}

fn unmatched(r: &Row, side: &str) -> RowComparison {
    RowComparison {
        workload: r.cell.workload.clone(),
        axes: axes_text(r),
        unit: Some(r.unit),
        direction: Some(r.direction),
        base_median: None,
        candidate_median: None,
        ratio: None,
        ratio_ci95: None,
        p_value: None,
        verdict: Verdict::NotComparable,
        reason: format!("missing in the {side}"),
    }
}

/// Compares every row of `base` with its match in `candidate`.
pub fn compare(base: &StoredRun, candidate: &StoredRun, base_name: &str, candidate_name: &str, opts: &Options) -> Comparison {
    let machine = machine_differences(&base.run.envelope, &candidate.run.envelope);
    let machine_text = machine.join(", ");
    let stop = (!machine.is_empty() && !opts.across_machines).then_some(machine_text.as_str());
    let mut rows = Vec::new();
    for b in &base.rows {
        match candidate.rows.iter().find(|c| key(c) == key(b)) {
            Some(c) => rows.push(judge(b, c, opts, stop)),
            None => {
                let mut r = unmatched(b, "candidate");
                r.base_median = b.median();
                rows.push(r);
            }
        }
    }
    for c in candidate.rows.iter().filter(|c| !base.rows.iter().any(|b| key(b) == key(c))) {
        let mut r = unmatched(c, "base");
        r.candidate_median = c.median();
        rows.push(r);
    }
    Comparison {
        schema: "proofbench.compare/1",
        base: base_name.to_string(),
        candidate: candidate_name.to_string(),
        threshold: opts.threshold,
        machine_differences: machine,
        setting_differences: setting_differences(&base.run.envelope, &candidate.run.envelope),
        rows,
    }
}

/// The one-line warnings about the envelopes ("" when they agree).
pub fn warnings(c: &Comparison, across_machines: bool) -> String {
    let mut out = String::new();
    if !c.machine_differences.is_empty() {
        let then = if across_machines {
            "compared anyway (--across-machines)"
        } else {
            "rows are not comparable (--across-machines to compare anyway)"
        };
        out.push_str(&format!("warning: different machines: {}; {then}\n", c.machine_differences.join(", ")));
    }
    if !c.setting_differences.is_empty() {
        out.push_str(&format!("note: the envelopes differ in: {}\n", c.setting_differences.join(", ")));
    }
    out
}

/// The comparison as a table (terminal and markdown share it).
pub fn render(c: &Comparison) -> String {
    let mut t = Table::new(&[
        ("Workload", Align::Left),
        ("Axes", Align::Left),
        ("Base median", Align::Right),
        ("Candidate median", Align::Right),
        ("Ratio", Align::Right),
        ("95% CI", Align::Right),
        ("p", Align::Right),
        ("Verdict", Align::Left),
        ("Why", Align::Left),
    ]);
    let value = |r: &RowComparison, v: Option<f64>| match (v, r.unit) {
        (Some(v), Some(u)) => format::value(v, u),
        (Some(v), None) => format::number(v),
        (None, _) => "n/a".into(),
    };
    for r in &c.rows {
        t.push(vec![
            r.workload.clone(),
            r.axes.clone(),
            value(r, r.base_median),
            value(r, r.candidate_median),
            r.ratio.map(|x| format!("{x:.3}")).unwrap_or_else(|| "n/a".into()),
            r.ratio_ci95.map(|[lo, hi]| format!("{lo:.3}..{hi:.3}")).unwrap_or_else(|| "n/a".into()),
            r.p_value.map(|p| format!("{p:.3}")).unwrap_or_else(|| "n/a".into()),
            r.verdict.as_str().to_string(),
            r.reason.clone(),
        ]);
    }
    let mut out = format!(
        "# proofbench compare\n\nBase: {}\nCandidate: {}\nNoise threshold: {} (ratio = candidate / base; regressed or improved only when p < 0.05 and the whole 95% CI lies beyond the threshold)\n\n",
        c.base,
        c.candidate,
        format::percent(c.threshold)
    );
    out.push_str(&t.render());
    out.push_str(&format!(
        "\n{} improved, {} regressed, {} unchanged, {} not comparable.\n",
        c.count(Verdict::Improved),
        c.count(Verdict::Regressed),
        c.count(Verdict::Unchanged),
        c.count(Verdict::NotComparable)
    ));
    out
}
