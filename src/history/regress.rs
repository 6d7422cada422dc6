//! history regressions: walk each row series in time order and judge every
//! consecutive pair of runs with `compare::judge` (the same test as
//! `proofbench compare`: ratio of medians, an interval from the trials of
//! both runs, and a band that is the larger of `--noise` and the row's noise
//! floor from the history), each step SAME, DIFFERENT or UNKNOWN, and
//! flagging each step that regressed. Pure: the caller reads the database.

use std::collections::BTreeMap;

use crate::compare::{
    FloorLookup, Options, RowComparison, TWO_RUNS_DIFFERENT, Verdict, Word, bands_summary, judge, words_meaning, words_text,
};
use crate::evidence::Row;
use crate::model::Status;
use crate::text::document::{Align, Block, Document, Line, Table};
use crate::text::format;

use super::RunEntry;

/// The ok rows of one cell across runs: one workload, one set of axis
/// values, one system label, one machine (unless steps are judged across
/// machines), oldest run first.
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    /// The machine its runs ran on, as the caller names it (empty when the
    /// series spans machines).
    pub machine: String,
    pub points: Vec<(RunEntry, Row)>,
}

/// How [`series`] tells machines apart: a run's (history id) machine
/// identity ([`Envelope::machine_key`](crate::envelope::Envelope::machine_key))
/// and the name to show for it.
pub type MachineOf<'a> = dyn Fn(i64) -> (String, String) + 'a;

/// One step of a series: the row of one run against the row of the next.
#[derive(Clone, Debug)]
pub struct Step {
    pub label: String,
    /// The series' machine (empty when it spans machines).
    pub machine: String,
    pub from: RunEntry,
    pub to: RunEntry,
    /// `compare`'s judgement (base = `from`, candidate = `to`).
    pub judged: RowComparison,
}

/// Groups `rows` (history id of the run, row) into series, in the order of
/// `runs` (oldest first): one per workload, axis values, system label and
/// machine (`machine` gives a run's; a key of `""` for every run makes
/// series that span machines). The runs of several machines, a fleet's
/// nodes among them, are so never taken for successive runs of one. Rows
/// that are not ok are left out: a failed run neither starts nor ends a step.
pub fn series(runs: &[RunEntry], rows: Vec<(i64, Row)>, machine: &MachineOf<'_>) -> Vec<Series> {
    let order: BTreeMap<i64, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    // (workload, axes, label, machine) -> (position of the run, row).
    type Key = (String, String, String, String);
    let mut map: BTreeMap<Key, Vec<(usize, Row)>> = BTreeMap::new();
    for (run, row) in rows {
        let Some(&pos) = order.get(&run) else { continue };
        if row.status != Status::Ok {
            continue;
        }
        let (key, name) = machine(run);
        names.entry(key.clone()).or_insert(name);
        map.entry((row.cell.workload.clone(), row.axes_text(), row.cell.label.clone(), key)).or_default().push((pos, row));
    }
    map.into_iter()
        .map(|((_, _, label, key), mut points)| {
            points.sort_by_key(|(pos, _)| *pos);
            let machine = names.get(&key).cloned().unwrap_or_default();
            Series { label, machine, points: points.into_iter().map(|(pos, row)| (runs[pos].clone(), row)).collect() }
        })
        .collect()
}

/// Judges every consecutive pair of every series. `machines` gives the
/// machine differences between two runs (by history id); a pair on
/// different machines is not comparable unless `opts.across_machines`.
/// `floor` gives the noise floor of a row of a run (by history id).
pub fn steps(
    series: &[Series],
    opts: &Options,
    machines: &dyn Fn(i64, i64) -> Vec<String>,
    floor: &dyn Fn(i64, &Row) -> FloorLookup,
) -> Vec<Step> {
    let mut out = Vec::new();
    for s in series {
        for pair in s.points.windows(2) {
            let ((a, base), (b, cand)) = (&pair[0], &pair[1]);
            let diff = machines(a.id, b.id).join(", ");
            let stop = (!diff.is_empty() && !opts.across_machines).then_some(diff.as_str());
            let judged = judge(base, cand, opts, stop, floor(a.id, base));
            out.push(Step { label: s.label.clone(), machine: s.machine.clone(), from: a.clone(), to: b.clone(), judged });
        }
    }
    // Every step is one more chance of a false verdict.
    crate::compare::control_false_discoveries(out.iter_mut().map(|s| &mut s.judged));
    // A verdict from disturbed trials (either run's) says so.
    crate::compare::mark_disturbed(out.iter_mut().map(|s| &mut s.judged), false);
    out
}

fn run_text(r: &RunEntry) -> String {
    format!("h:{} {}", r.id, r.short_commit())
}

/// The steps as a document: a table with each step's word (`DIFFERENT
/// (regressed)`, `SAME within 2%`, `UNKNOWN`), the words counted, and the
/// regressed steps listed again at the end; `floors` says where the noise
/// floors came from.
pub fn document(steps: &[Step], threshold: f64, floors: &str) -> Document {
    let mut t = Table::new(&[
        ("Workload", Align::Left),
        ("Axes", Align::Left),
        ("System", Align::Left),
        ("Machine", Align::Left),
        ("From", Align::Left),
        ("To", Align::Left),
        ("From median", Align::Right),
        ("To median", Align::Right),
        ("Ratio", Align::Right),
        ("95% CI", Align::Right),
        ("Trials", Align::Right),
        ("Band", Align::Right),
        ("Verdict", Align::Left),
    ])
    // A narrow terminal keeps the row and its verdict longest.
    .dropping(&[2, 3, 10, 11, 6, 7, 4, 5, 9, 8, 1]);
    for s in steps {
        let j = &s.judged;
        t.push(vec![
            j.workload.clone(),
            j.axes.clone(),
            s.label.clone(),
            if s.machine.is_empty() { "any".to_string() } else { s.machine.clone() },
            run_text(&s.from),
            run_text(&s.to),
            j.median_text(j.base_median),
            j.median_text(j.candidate_median),
            j.ratio.map(|x| format!("{x:.3}")).unwrap_or_else(|| "n/a".into()),
            j.ratio_ci95.map(|[lo, hi]| format!("{lo:.3}..{hi:.3}")).unwrap_or_else(|| "n/a".into()),
            format!("{} vs {}", j.trials[0], j.trials[1]),
            j.band_text(),
            if j.word.is_none() { format!("{} ({})", j.word_text(), j.reason) } else { j.word_text() },
        ]);
    }
    let title = "proofbench history regressions";
    let judged: Vec<RowComparison> = steps.iter().map(|s| s.judged.clone()).collect();
    let mut blocks = vec![
        Block::heading(1, title),
        Block::paragraph(format!(
            "Each step compares a row with the same row of the next run of its series, on one machine unless --across-machines \
             (ratio = to / from, with a 95% interval from the trials of both runs; the band is the noise threshold of {}, or the \
             row's noise floor, how far its median moves between runs of one build here, where that is larger). {}.",
            format::percent(threshold),
            words_meaning(crate::compare::equivalence(&judged), TWO_RUNS_DIFFERENT, "trials")
        )),
    ];
    if steps.is_empty() {
        blocks.push(Block::paragraph("No series has two ok runs yet."));
        return Document { title: title.into(), blocks };
    }
    let lines: Vec<_> = steps
        .iter()
        .filter_map(|s| {
            let j = &s.judged;
            let row = if j.axes == "-" { j.workload.clone() } else { format!("{} {}", j.workload, j.axes) };
            crate::compare::forest::of_row(j, format!("h:{}→h:{} {row}", s.from.id, s.to.id), Some(j.band))
        })
        .collect();
    blocks.push(Block::Chart(crate::text::document::Chart {
        caption: "Each step's ratio (dot) on its 95% interval (line), largest first, coloured by its verdict; grey behind each, the \
                  band it was judged against (the noise threshold, or its noise floor where larger)."
            .into(),
        svg: crate::text::plot::forest::chart("Each step: ratio to / from", "ratio (to / from)", &lines, None),
    }));
    blocks.push(Block::Table(t));
    let regressed: Vec<&Step> = steps.iter().filter(|s| s.judged.verdict == Verdict::Regressed).collect();
    let disturbed = match steps.iter().filter(|s| s.judged.word == Some(Word::Different) && s.judged.disturbed_verdict).count() {
        0 => String::new(),
        _ => "; other processes took the disturbed trials' CPUs, which may explain their verdicts".to_string(),
    };
    let summary = Block::Paragraph(vec![
        Line::from(format!(
            "{}: {}, {} not comparable{disturbed}.",
            format::counted(steps.len(), "step", "steps"),
            words_text(&judged),
            judged.iter().filter(|j| j.word.is_none()).count()
        )),
        bands_summary(&judged, floors),
    ]);
    let listed: Vec<Line> = regressed
        .iter()
        .map(|s| {
            Line::from(format!("{}: ", s.judged.word_text()))
                .text(s.judged.workload.as_str())
                .text(" [")
                .text(s.judged.axes.as_str())
                .text("] ")
                .text(s.label.as_str())
                .text(if s.machine.is_empty() { String::new() } else { format!(" on {}", s.machine) })
                .text(" from ")
                .text(run_text(&s.from))
                .text(" to ")
                .text(run_text(&s.to))
                .text(": ratio ")
                .text(s.judged.ratio.map(|x| format!("{x:.3}")).unwrap_or_default())
        })
        .collect();
    if listed.is_empty() {
        blocks.push(summary);
    } else {
        blocks.push(Block::Compact(vec![summary, Block::List(listed)]));
    }
    Document { title: title.into(), blocks }
}
