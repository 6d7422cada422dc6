//! compare: two stored runs, row by row. Rows match by workload and the
//! values of their axes; each matched pair gets the ratio of medians
//! (candidate / base) with a 95% interval from the trials of both runs
//! (Welch's t on the logs of the trial medians: the trial, a process, is the
//! unit of replication; samples of one process are not independent
//! replicates), and a verdict. "regressed" and "improved" need the whole
//! interval beyond the noise band on one side (docs/METHODOLOGY.md, "Statistics"); anything
//! else that matched is "unchanged", and what cannot be judged is "not
//! comparable" with the reason (one trial on a side among them).
//!
//! The band is `--noise`, or the row's noise floor from the history where
//! that is larger (how far the row's median moves between runs of one build
//! on this machine, `stats::noise_floor`); each row says which applied.
//! Variants measured in one run compare paired by round (`paired`).

pub mod paired;

use serde::Serialize;

use crate::envelope::Envelope;
use crate::evidence::{Row, RunRecord, StoredRun};
use crate::measure::interference::DISTURBED_SHARE;
use crate::model::{Direction, Reading, Status, Unit, value_text};
use crate::stats::{Floor, LEVEL, ratio};
use crate::text::table::{Align, Table};
use crate::text::{format, markdown};

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
    /// The ratio's 95% interval from the trials of both rows.
    pub ratio_ci95: Option<[f64; 2]>,
    /// Whether the base's 95% interval holds the candidate's median, and the
    /// candidate's the base's (`None` where a side has no interval): of two
    /// runs of the same build, about 95% should.
    pub holds_other: [Option<bool>; 2],
    /// Trials (with timed samples) of the base and of the candidate.
    pub trials: [usize; 2],
    /// The spread between trials of the base and of the candidate (standard
    /// deviation of the logs of their trial medians).
    pub between: [Option<f64>; 2],
    /// Trials of the base and of the candidate that other processes disturbed.
    pub disturbed: [usize; 2],
    /// Rounds that paired base and candidate trials (variants of one run);
    /// absent for two runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
    /// The spread of the paired rounds' ratios (standard deviation of their
    /// logs); variants of one run only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_spread: Option<f64>,
    /// The smallest change this comparison could have called at its band
    /// (variants of one run: from the spread of the rounds' ratios).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity: Option<f64>,
    /// The p-value of "the ratio lies beyond the band" (the two one-sided
    /// t tests behind the interval, the smaller doubled: below 0.05 exactly
    /// when the 95% interval lies beyond the band).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// The same adjusted for the number of rows compared together
    /// (Benjamini-Hochberg): a verdict needs it at most [`FALSE_DISCOVERY_RATE`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q_value: Option<f64>,
    /// The band the verdict used (a fraction: 0.02 = 2%) and where it came from.
    pub band: f64,
    pub band_from: BandFrom,
    /// The row's noise floor from the history, where it has one...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
    /// ...or why it has none ("not enough history: ...", "no history ...").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_note: Option<String>,
    pub verdict: Verdict,
    /// Why a row is not comparable, or what decided the verdict.
    pub reason: String,
}

/// Where a verdict's band came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BandFrom {
    /// `--noise` (or `--threshold`): the row has no floor, or a smaller one.
    Noise,
    /// The row's noise floor from the history, larger than `--noise`.
    Floor,
}

impl RowComparison {
    /// A pair of rows before it is judged (`not comparable`, no reason yet):
    /// what the two rows say of themselves, the match key `axes`, and the
    /// band from `--noise`.
    pub fn of(base: &Row, cand: &Row, axes: String, band: f64) -> RowComparison {
        RowComparison {
            workload: base.cell.workload.clone(),
            axes,
            unit: Some(base.unit),
            direction: Some(base.direction),
            base_median: base.median(),
            candidate_median: cand.median(),
            ratio: None,
            ratio_ci95: None,
            holds_other: [None, None],
            trials: [base.trial_medians().len(), cand.trial_medians().len()],
            between: [base.headline().and_then(|h| h.between), cand.headline().and_then(|h| h.between)],
            disturbed: [base.disturbed_trials(), cand.disturbed_trials()],
            pairs: None,
            pair_spread: None,
            sensitivity: None,
            p_value: None,
            q_value: None,
            band,
            band_from: BandFrom::Noise,
            floor: None,
            floor_note: None,
            verdict: Verdict::NotComparable,
            reason: String::new(),
        }
    }

    /// `2.0% noise`, `3.9% floor`: the band and where it came from.
    pub fn band_text(&self) -> String {
        let from = match self.band_from {
            BandFrom::Noise => "noise",
            BandFrom::Floor => "floor",
        };
        format!("{} {from}", format::percent(self.band))
    }
}

/// The noise floor of a row, or why there is none.
pub type FloorLookup = Result<Floor, String>;

/// The false discovery rate of the verdicts of one comparison: among the
/// rows (or history steps) judged together, a verdict needs its
/// Benjamini-Hochberg adjusted p-value at most this. When nothing changed,
/// the chance of any false verdict among them is at most this; a comparison
/// of one row is the plain 95% interval rule.
pub const FALSE_DISCOVERY_RATE: f64 = 0.05;

/// Takes back the verdicts that the number of rows compared together
/// explains: with many rows, some 95% intervals lie beyond the band by
/// chance alone. Each row with a p-value gets its adjusted one; a regressed
/// or improved row whose adjusted p-value exceeds the rate becomes
/// unchanged, saying why.
pub fn control_false_discoveries<'a>(rows: impl IntoIterator<Item = &'a mut RowComparison>) {
    let mut rows: Vec<&mut RowComparison> = rows.into_iter().filter(|r| r.p_value.is_some()).collect();
    let q = crate::stats::benjamini_hochberg(&rows.iter().map(|r| r.p_value.unwrap_or(1.0)).collect::<Vec<_>>());
    let n = rows.len();
    for (r, q) in rows.iter_mut().zip(q) {
        r.q_value = Some(q);
        if matches!(r.verdict, Verdict::Regressed | Verdict::Improved) && q > FALSE_DISCOVERY_RATE {
            r.reason = format!(
                "the 95% interval lies beyond the band, but among the {n} rows compared together chance alone gives that \
                 (adjusted p-value {q:.3} > {FALSE_DISCOVERY_RATE}, Benjamini-Hochberg)"
            );
            r.verdict = Verdict::Unchanged;
        }
    }
}

/// The band of a verdict: the larger of the noise threshold and the floor.
fn band_of(threshold: f64, floor: &FloorLookup) -> (f64, BandFrom) {
    match floor {
        Ok(f) if f.value > threshold => (f.value, BandFrom::Floor),
        _ => (threshold, BandFrom::Noise),
    }
}

/// The verdict of a ratio interval `[lo, hi]` against a band: regressed or
/// improved only when the whole interval lies beyond it on one side (worse
/// means a larger ratio for lower-is-better units, a smaller one otherwise).
pub fn verdict_of(direction: Direction, lo: f64, hi: f64, band: f64, band_name: &str) -> (Verdict, String) {
    let (hi_bound, lo_bound) = (1.0 + band, 1.0 / (1.0 + band));
    let (worse, better) = match direction {
        Direction::LowerIsBetter => (lo > hi_bound, hi < lo_bound),
        Direction::HigherIsBetter => (hi < lo_bound, lo > hi_bound),
    };
    let band = format!("{band_name} {}..{}", format::speedup(lo_bound), format::speedup(hi_bound));
    if worse {
        (Verdict::Regressed, format!("the whole interval is beyond {band} on the worse side"))
    } else if better {
        (Verdict::Improved, format!("the whole interval is beyond {band} on the better side"))
    } else {
        (Verdict::Unchanged, format!("the interval reaches into {band}"))
    }
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
    /// How busy the machine was with other work in each run, when it
    /// differs enough to matter (one line).
    pub interference: Option<String>,
    /// Where the rows' noise floors came from (the history database), or why
    /// there were none.
    pub floors: Option<String>,
    /// Variants of one run compared paired by round (`true`), or two runs.
    #[serde(default)]
    pub paired: bool,
    pub rows: Vec<RowComparison>,
}

impl Comparison {
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// Of the intervals that could be checked, how many held the other
    /// run's median: `(held, checked)` over both directions.
    pub fn held(&self) -> (usize, usize) {
        let all: Vec<bool> = self.rows.iter().flat_map(|r| r.holds_other).flatten().collect();
        (all.iter().filter(|h| **h).count(), all.len())
    }
}

/// How to compare.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Changes whose interval does not lie wholly beyond this fraction are noise.
    pub threshold: f64,
    /// Compare rows even when the machines differ.
    pub across_machines: bool,
    /// Parameters whose values may differ between matched rows (a size
    /// changed on purpose); every other differing parameter makes a pair
    /// not comparable.
    pub ignore_params: Vec<String>,
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

/// The machine identity: what makes two runs the same machine (hostname,
/// CPU model, sockets, cores, logical CPUs, memory to the GiB, hypervisor),
/// as (field, value).
pub fn machine_identity(e: &Envelope) -> Vec<(&'static str, String)> {
    // Total memory moves by a few MiB between boots: compare whole GiB.
    let gib =
        |r: &Reading<u64>| r.ok().map(|b| format!("{} GiB", (*b as f64 / (1u64 << 30) as f64).round())).unwrap_or_else(|| "absent".into());
    vec![
        ("hostname", reading_text(&e.hostname)),
        ("cpu.model_name", reading_text(&e.cpu.model_name)),
        ("cpu.sockets", reading_text(&e.cpu.sockets)),
        ("cpu.physical_cores", reading_text(&e.cpu.physical_cores)),
        ("cpu.logical_cpus", reading_text(&e.cpu.logical_cpus)),
        ("memory.total_bytes", gib(&e.memory.total_bytes)),
        ("virtualization.hypervisor", reading_text(&e.virtualization.hypervisor)),
    ]
}

/// The machine identity as one key (equal for two runs exactly when
/// [`machine_differences`] finds none).
pub fn machine_key(e: &Envelope) -> String {
    machine_identity(e).into_iter().map(|(_, v)| v).collect::<Vec<_>>().join("|")
}

/// Returns `field (a vs b)` for each machine identity field that differs
/// (empty: same machine).
pub fn machine_differences(a: &Envelope, b: &Envelope) -> Vec<String> {
    differences(machine_identity(a).into_iter().zip(machine_identity(b)).map(|((f, x), (_, y))| (f, x, y)).collect())
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
    (r.cell.workload.clone(), r.axes_text())
}

/// Parameters (not axes, not treatments, not ignored) whose values differ.
fn parameter_differences(a: &Row, b: &Row, ignored: &[String]) -> Vec<String> {
    let treatments: Vec<&str> = crate::workloads::registry::find(&a.cell.workload)
        .map(|w| w.spec().params.iter().filter(|p| p.treatment).map(|p| p.name).collect())
        .unwrap_or_default();
    let names: std::collections::BTreeSet<&String> = a.cell.params.keys().chain(b.cell.params.keys()).collect();
    names
        .into_iter()
        .filter(|n| !a.cell.axes.contains(n) && !treatments.contains(&n.as_str()) && !ignored.contains(n))
        .filter_map(|n| {
            let (x, y) = (a.cell.params.get(n).map(value_text), b.cell.params.get(n).map(value_text));
            (x != y).then(|| format!("{n} {} vs {}", x.unwrap_or_else(|| "unset".into()), y.unwrap_or_else(|| "unset".into())))
        })
        .collect()
}

/// Whether `a`'s interval holds `b`'s median.
fn holds(a: &Row, b: &Row) -> Option<bool> {
    let ((lo, hi), m) = (a.interval()?, b.median()?);
    Some(lo <= m && m <= hi)
}

/// Judges one matched pair of rows: the one code path for "did this row
/// regress between two runs" (`compare` and `history regressions` both call
/// it). `machines_differ` names the machine differences that make the pair
/// not comparable (`None` to judge it).
pub fn judge(base: &Row, cand: &Row, opts: &Options, machines_differ: Option<&str>, floor: FloorLookup) -> RowComparison {
    let (band, band_from) = band_of(opts.threshold, &floor);
    let mut out = RowComparison {
        holds_other: [holds(base, cand), holds(cand, base)],
        band_from,
        floor: floor.as_ref().ok().cloned(),
        floor_note: floor.err(),
        ..RowComparison::of(base, cand, base.axes_text(), band)
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
    let params = parameter_differences(base, cand, &opts.ignore_params);
    if !params.is_empty() {
        return not(out, format!("different parameters: {}", params.join("; ")));
    }
    let (b, c) = (base.trial_medians(), cand.trial_medians());
    if b.is_empty() || c.is_empty() {
        return not(out, "no timed samples".into());
    }
    out.ratio = Some(crate::stats::median(c) / crate::stats::median(b));
    if b.len() < 2 || c.len() < 2 {
        let few = |side: &str, n: usize| format!("{side} {n} trial{}", if n == 1 { "" } else { "s" });
        return not(
            out,
            format!(
                "{} and {}: an interval needs at least 2 trials on each side (--trials)",
                few("base", b.len()),
                few("candidate", c.len())
            ),
        );
    }
    let Some(r) = ratio(b, c, LEVEL) else {
        return not(out, "no interval: a trial median is zero or negative".into());
    };
    out.ratio_ci95 = Some([r.lo, r.hi]);
    out.p_value = Some(crate::stats::band_p_value(&r, LEVEL, out.band));
    let name = match out.band_from {
        BandFrom::Noise => "the noise band",
        BandFrom::Floor => "the row's noise floor",
    };
    (out.verdict, out.reason) = verdict_of(base.direction, r.lo, r.hi, out.band, name);
    if out.disturbed != [0, 0] {
        out.reason.push_str(&format!("; disturbed trials: {} in the base, {} in the candidate", out.disturbed[0], out.disturbed[1]));
    }
    out
}

fn unmatched(r: &Row, side: &str, threshold: f64) -> RowComparison {
    RowComparison {
        base_median: None,
        candidate_median: None,
        trials: [0, 0],
        between: [None, None],
        disturbed: [0, 0],
        reason: format!("missing in the {side}"),
        ..RowComparison::of(r, r, r.axes_text(), threshold)
    }
}

/// Compares every row of `base` with its match in `candidate`; `floor`
/// gives a base row's noise floor (or why it has none).
pub fn compare(
    base: &StoredRun,
    candidate: &StoredRun,
    base_name: &str,
    candidate_name: &str,
    opts: &Options,
    floor: &dyn Fn(&Row) -> FloorLookup,
) -> Comparison {
    let machine = machine_differences(&base.run.envelope, &candidate.run.envelope);
    let machine_text = machine.join(", ");
    let stop = (!machine.is_empty() && !opts.across_machines).then_some(machine_text.as_str());
    let mut rows = Vec::new();
    for b in &base.rows {
        match candidate.rows.iter().find(|c| key(c) == key(b)) {
            Some(c) => rows.push(judge(b, c, opts, stop, floor(b))),
            None => {
                let mut r = unmatched(b, "candidate", opts.threshold);
                r.base_median = b.median();
                rows.push(r);
            }
        }
    }
    for c in candidate.rows.iter().filter(|c| !base.rows.iter().any(|b| key(b) == key(c))) {
        let mut r = unmatched(c, "base", opts.threshold);
        r.candidate_median = c.median();
        rows.push(r);
    }
    control_false_discoveries(&mut rows);
    Comparison {
        schema: "proofbench.compare/2",
        base: base_name.to_string(),
        candidate: candidate_name.to_string(),
        threshold: opts.threshold,
        machine_differences: machine,
        setting_differences: setting_differences(&base.run.envelope, &candidate.run.envelope),
        interference: interference_difference(&base.run, &candidate.run),
        floors: None,
        paired: false,
        rows,
    }
}

/// One line when the two runs' machines were busy with other work to a
/// different degree (one of them disturbed, or shares 10 points apart).
fn interference_difference(base: &RunRecord, cand: &RunRecord) -> Option<String> {
    let (b, c) = (base.interference.as_ref()?, cand.interference.as_ref()?);
    let apart = (b.others_share - c.others_share).abs() >= DISTURBED_SHARE || (b.steal_share - c.steal_share).abs() >= DISTURBED_SHARE;
    (b.disturbed != c.disturbed || apart)
        .then(|| format!("the machine was not equally quiet: base run {}; candidate run {}", b.text(), c.text()))
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
    if let Some(i) = &c.interference {
        out.push_str(&format!("warning: {i}\n"));
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
        ("Trials", Align::Right),
        ("Between", Align::Right),
        ("Band", Align::Right),
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
            match r.pairs {
                Some(p) => format!("{p} paired"),
                None => format!("{} vs {}", r.trials[0], r.trials[1]),
            },
            match r.between {
                [Some(a), Some(b)] => format!("{} / {}", format::percent(a), format::percent(b)),
                _ => "n/a".into(),
            },
            r.band_text(),
            r.verdict.as_str().to_string(),
            r.reason.clone(),
        ]);
    }
    let interval = if c.paired {
        "with a 95% interval from the rounds that paired their trials"
    } else {
        "with a 95% interval from the trials of both runs"
    };
    let mut out = format!(
        "# proofbench compare\n\nBase: {}\nCandidate: {}\nNoise threshold: {} (ratio = candidate / base, {interval}; regressed or \
         improved only when the whole interval lies beyond the band: the noise threshold, or the row's noise floor from the history \
         where that is larger; Between: the spread of each side's trial medians)\n\n",
        markdown::text(&c.base),
        markdown::text(&c.candidate),
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
    if let Some(f) = &c.floors {
        out.push_str(&format!("{}\n", bands_summary(&c.rows, f)));
    }
    let (held, checked) = c.held();
    if checked > 0 && !c.paired {
        out.push_str(&format!(
            "Each run's 95% interval held the other's median {held} times of {checked} ({:.0}%); for two runs of the same build about \
             95% is expected.\n",
            100.0 * held as f64 / checked as f64
        ));
    }
    out
}

/// One line: how many rows judged against their noise floor, how many
/// against the threshold, and why those had no floor.
pub fn bands_summary(rows: &[RowComparison], source: &str) -> String {
    let judged: Vec<&RowComparison> = rows.iter().filter(|r| r.ratio_ci95.is_some()).collect();
    let by_floor = judged.iter().filter(|r| r.band_from == BandFrom::Floor).count();
    let with_floor = judged.iter().filter(|r| r.floor.is_some()).count();
    let mut notes: Vec<(String, usize)> = Vec::new();
    for n in judged.iter().filter_map(|r| r.floor_note.as_deref()) {
        match notes.iter_mut().find(|(h, _)| h == n) {
            Some((_, k)) => *k += 1,
            None => notes.push((n.to_string(), 1)),
        }
    }
    notes.sort_by_key(|n| std::cmp::Reverse(n.1));
    let source = markdown::text(source);
    let mut text = format!(
        "Noise floors ({source}): {with_floor} of {} judged rows have one; {by_floor} were judged against their floor, {} against the \
         noise threshold",
        judged.len(),
        judged.len() - by_floor
    );
    if !notes.is_empty() {
        // The commonest reasons, each with how many rows it held for.
        let mut list: Vec<String> = notes.iter().take(3).map(|(h, k)| format!("{k} rows {}", markdown::inline(h))).collect();
        if notes.len() > 3 {
            list.push(format!("{} rows for other reasons", notes[3..].iter().map(|n| n.1).sum::<usize>()));
        }
        text.push_str(&format!(". No floor: {}", list.join("; ")));
    }
    text.push('.');
    text
}
