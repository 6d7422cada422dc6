//! The comparison as text: the warnings said before it (an incomplete
//! run, different machines), and its table with the summary lines that
//! terminal and markdown output share.

use std::collections::HashMap;

use super::{BandFrom, Comparison, Completion, RowComparison, Verdict};
use crate::text::table::{Align, Table};
use crate::text::{format, markdown};

/// One line per compared run that is incomplete, saying so and how many
/// rows that left uncompared ("" when every run is complete): what
/// `compare` says before anything else. `cs` are one comparison of two
/// runs, or the comparisons of the variants of one run (said once).
pub fn completion_warnings(cs: &[Comparison]) -> String {
    let Some(first) = cs.first() else { return String::new() };
    let sides: &[(&str, usize)] = if first.paired { &[("run", 0)] } else { &[("base run", 0), ("candidate run", 1)] };
    let mut out = String::new();
    for &(name, i) in sides {
        let c = &first.completion[i];
        let Some(state) = &c.state else { continue };
        let on_side = |r: &&RowComparison| if first.paired { r.not_run.contains(&true) } else { r.not_run[i] };
        let left: usize = cs.iter().map(|c| c.rows.iter().filter(on_side).count()).sum();
        out.push_str(&format!("warning: the {name} is {state} ({}); {left} row{} could not be compared\n", c.why(), plural(left)));
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
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
        "# proofbench compare\n\nBase: {}{}\nCandidate: {}{}\nNoise threshold: {} (ratio = candidate / base, {interval}; regressed or \
         improved only when the whole interval lies beyond the band: the noise threshold, or the row's noise floor from the history \
         where that is larger; Between: the spread of each side's trial medians)\n\n",
        markdown::text(&c.base),
        state(&c.completion[0]),
        markdown::text(&c.candidate),
        state(&c.completion[1]),
        format::percent(c.threshold)
    );
    out.push_str(&t.render());
    let not_run = match c.not_run() {
        0 => String::new(),
        n => format!(" ({n} of them not run: a run is incomplete)"),
    };
    out.push_str(&format!(
        "\n{} improved, {} regressed, {} unchanged, {} not comparable{not_run}.\n",
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

/// ` (incomplete: 0 of 2 cells ran)` after a run's name, "" for a complete run.
fn state(c: &Completion) -> String {
    c.state.as_ref().map_or_else(String::new, |s| format!(" ({s})"))
}

/// One line: how many rows judged against their noise floor, how many
/// against the threshold, and why those had no floor.
pub fn bands_summary(rows: &[RowComparison], source: &str) -> String {
    let judged: Vec<&RowComparison> = rows.iter().filter(|r| r.ratio_ci95.is_some()).collect();
    let by_floor = judged.iter().filter(|r| r.band_from == BandFrom::Floor).count();
    let with_floor = judged.iter().filter(|r| r.floor.is_some()).count();
    // Each reason with its count, in the order first seen.
    let (mut notes, mut at): (Vec<(&str, usize)>, HashMap<&str, usize>) = (Vec::new(), HashMap::new());
    for n in judged.iter().filter_map(|r| r.floor_note.as_deref()) {
        let i = *at.entry(n).or_insert_with(|| {
            notes.push((n, 0));
            notes.len() - 1
        });
        notes[i].1 += 1;
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
