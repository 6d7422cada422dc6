//! report: renders stored rows as tables. It never measures, and it reads
//! nothing but the records it is given, so `proofbench report DIR` reproduces
//! report.md byte for byte. The terminal prints the same sections.

pub mod counters;
pub mod doc;
pub mod document;
pub mod export;
pub mod html;
pub mod plot;
pub mod primitive;
pub mod scaling;
pub mod stats_tables;
pub mod strategies;
pub mod terminal;
pub mod variants;
pub mod workloads;

pub use crate::text::{format, markdown, table};

use crate::evidence::{Row, RunRecord, Status, StatusCounts, StoredRun};

use markdown as md;
use table::{Align, Cell, Table};

/// The whole report.md of a stored run.
pub fn render(stored: &StoredRun) -> String {
    let mut out = header(&stored.run, &stored.rows);
    for group in groups(&stored.run, &stored.rows) {
        out.push('\n');
        out.push_str(&group_section(&stored.rows, &group));
        out.push_str(&not_run_note(&stored.run, &stored.rows, &group));
        out.push_str(&counters_section(&stored.rows, &group));
    }
    out.push('\n');
    out.push_str(&footer(&stored.run, &stored.rows));
    out
}

/// The counters table of a group ("" when no row has counters).
pub fn counters_section(rows: &[Row], group: &str) -> String {
    let refs: Vec<&Row> = rows.iter().collect();
    counters::section(&refs, group).unwrap_or_default()
}

/// Only the counters tables of a stored run (`report --counters`).
pub fn render_counters(stored: &StoredRun) -> String {
    let text: String = groups(&stored.run, &stored.rows).iter().map(|g| counters_section(&stored.rows, g)).collect();
    if text.is_empty() { "No row of this run has counters.\n".into() } else { text.trim_start().to_string() }
}

/// Groups in plan order (then any found only in rows).
pub fn groups(run: &RunRecord, rows: &[Row]) -> Vec<String> {
    let mut gs: Vec<String> = Vec::new();
    for g in run.plan.iter().map(|c| &c.group).chain(rows.iter().map(|r| &r.cell.group)) {
        if !gs.contains(g) {
            gs.push(g.clone());
        }
    }
    gs
}

/// Why planned cells have no row: the run has no finish record (killed, or
/// still running), or a signal ended it.
fn why_not_run(run: &RunRecord) -> &'static str {
    if run.finished_utc.is_none() && !run.interrupted {
        "the run has no finish record (it was killed, or it is still running)"
    } else {
        "the run was interrupted before them"
    }
}

/// A line under a group's tables when some of its planned cells have no
/// row (a run killed or interrupted before them); "" otherwise.
pub fn not_run_note(run: &RunRecord, rows: &[Row], group: &str) -> String {
    let planned = run.plan.iter().filter(|c| c.group == group).count();
    let missing = run.cells_without_row(rows).iter().filter(|c| c.group == group).count();
    if missing == 0 {
        return String::new();
    }
    format!("\nNot run: {missing} of {planned} planned cells have no row: {}.\n", why_not_run(run))
}

/// The title and the machine/run summary.
pub fn header(run: &RunRecord, rows: &[Row]) -> String {
    let mut t = Table::new(&[("Field", Align::Left), ("Value", Align::Left)]);
    let counts = StatusCounts::of(rows.iter().map(|r| &r.status));
    t.push(vec!["System label".into(), run.label.clone()]);
    t.push(vec!["Profile".into(), run.profile.as_str().into()]);
    let sel = if run.options.selection.is_empty() { "(all)".to_string() } else { run.options.selection.join(" ") };
    t.push(vec!["Selection".into(), sel]);
    if run.kind != crate::evidence::RunKind::Run {
        t.push(vec!["Kind".into(), format!("{} (an A/A self-check: two identical variants)", run.kind.as_str())]);
    }
    if !run.variants.is_empty() {
        t.push(vec!["Variants".into(), run.variants.iter().map(crate::plan::Variant::describe).collect::<Vec<_>>().join("; ")]);
    }
    t.push(vec!["Started (UTC)".into(), run.started_utc.clone()]);
    t.push(vec!["Finished (UTC)".into(), run.finished_utc.clone().unwrap_or_else(|| "(not finished)".into())]);
    t.push(vec!["Rows".into(), counts_text(&counts, run.plan.len())]);
    for (k, v) in run.envelope.summary() {
        t.push(vec![k, v]);
    }
    let mut out = format!("# proofbench run {}\n\n", md::text(&run.id));
    out.push_str(&t.render());
    let mut warnings = Vec::new();
    if let Some(w) = run.envelope.frequency_warning() {
        warnings.push(w);
    }
    if let Some(t) = run.incomplete(rows) {
        warnings.push(format!("{t}; {}", why_not_run(run)));
    }
    if run.interrupted {
        warnings.push(format!("the run was interrupted: {} planned cells have no row", run.not_run.len()));
    }
    if let Some(w) = busy_warning(run) {
        warnings.push(w);
    }
    for w in warnings {
        out.push_str(&format!("\n> warning: {}\n", md::inline(&w)));
    }
    out
}

fn counts_text(c: &StatusCounts, planned: usize) -> String {
    format!("{} ok, {} invalid, {} failed, {} timeout, {} skipped (of {planned} planned)", c.ok, c.invalid, c.failed, c.timeout, c.skipped)
}

/// `2 of 3 trials disturbed (others took 38-46% of their CPUs, ...)`, for a
/// row with disturbed trials.
pub fn disturbed_text(r: &Row) -> Option<String> {
    let hit: Vec<&crate::measure::interference::Interference> =
        r.trials.iter().filter(|t| t.disturbed()).filter_map(|t| t.facts.as_ref()?.interference.as_ref()).collect();
    if hit.is_empty() {
        return None;
    }
    let range = |f: &dyn Fn(&&crate::measure::interference::Interference) -> f64| {
        let (lo, hi) = hit.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        if (hi - lo) < 0.005 { format!("{:.0}%", 100.0 * hi) } else { format!("{:.0}-{:.0}%", 100.0 * lo, 100.0 * hi) }
    };
    let mut what = vec![format!("others took {} of their CPUs", range(&|i| i.others_share))];
    if hit.iter().any(|i| i.steal_ms > 0.0) {
        what.push(format!("the hypervisor stole {}", range(&|i| i.steal_share)));
    }
    if hit.iter().any(|i| i.pressure_share.is_some()) {
        what.push(format!("CPU pressure {}", range(&|i| i.pressure_share.unwrap_or(0.0))));
    }
    Some(format!("{} of {} trials disturbed ({})", hit.len(), r.trials.len(), what.join(", ")))
}

/// A row's trials: `3`, or `2 of 3` when it has fewer than planned.
pub fn trials_text(r: &Row) -> String {
    let n = r.trials.len();
    if (n as u32) < r.trials_planned { format!("{n} of {}", r.trials_planned) } else { n.to_string() }
}

/// A row's 95% interval relative to its median (`-1.20% / +2.31%`), or why
/// it has none (`n/a: 1 trial`).
pub fn interval_text(r: &Row) -> String {
    match (r.median(), r.interval(), r.headline()) {
        (Some(m), Some((lo, hi)), _) => format::ci_relative(lo, hi, m),
        (_, _, Some(h)) => format!("n/a: {}", h.no_interval.as_deref().unwrap_or("no interval")),
        _ => "n/a".into(),
    }
}

/// The axis values of a row as text (`workers=2`), or `-`.
pub fn axes_text(r: &Row) -> String {
    r.axes_text()
}

/// The tables of one group: per workload, its scaling tables and its rows.
pub fn group_section(rows: &[Row], group: &str) -> String {
    let mut out = format!("## {}\n", md::text(group));
    let mut workloads: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.cell.group == group) {
        if !workloads.contains(&r.cell.workload.as_str()) {
            workloads.push(&r.cell.workload);
        }
    }
    if workloads.is_empty() {
        out.push_str("\nNo rows.\n");
    }
    let in_group: Vec<&Row> = rows.iter().filter(|r| r.cell.group == group).collect();
    if let Some(p) = primitive::section(&in_group) {
        out.push_str("\n### Primitives\n\n");
        out.push_str(&p);
    }
    for w in workloads {
        out.push_str(&workload_section(rows, w));
    }
    out.push_str(&stats_tables::variance_table(&in_group).unwrap_or_default());
    out
}

/// The section of one workload: heading, prose, scaling and strategy tables,
/// and the statistics table of its ok rows.
pub fn workload_section(rows: &[Row], w: &str) -> String {
    let mut out = String::new();
    let mine: Vec<&Row> = rows.iter().filter(|r| r.cell.workload == w).collect();
    let Some(first) = mine.first().copied() else { return out };
    out.push_str(&format!("\n### {}\n\n{}.\n", md::text(w), md::paragraph(&first.summary)));
    out.push_str(&format!(
        "Unit: {} ({}). Timed region: {}.",
        md::text(first.unit.as_str()),
        first.direction.as_str(),
        md::inline(&first.timed_region)
    ));
    if let Some(tw) = &first.total_window {
        out.push_str(&format!(" Total window: {}.", md::inline(tw)));
    }
    if let Some(v) = mine.iter().find_map(|r| r.verifier.as_ref()) {
        out.push_str(&format!(" Verifier: {}.", md::inline(&v.description)));
    }
    out.push('\n');
    for t in scaling::tables(&mine) {
        out.push('\n');
        out.push_str(&t.render());
    }
    if let Some(t) = strategies::table(&mine) {
        out.push('\n');
        out.push_str(&t.render());
    }
    let plots: Vec<String> = plot::plots(w, &mine).into_iter().map(|p| md::code(&format!("plots/{}", p.file))).collect();
    if !plots.is_empty() {
        out.push_str(&format!("\nPlots: {}.\n", plots.join(", ")));
    }
    let ok: Vec<&&Row> = mine.iter().filter(|r| r.status == Status::Ok).collect();
    if ok.is_empty() {
        out.push_str("\nNo ok rows (see Not ok).\n");
        return out;
    }
    let mut t = Table::new(&[
        ("Row", Align::Left),
        ("Median", Align::Right),
        ("95% CI", Align::Right),
        ("Trials", Align::Right),
        ("n", Align::Right),
        ("Between", Align::Right),
        ("Within", Align::Right),
        ("Sees", Align::Right),
        ("First/steady", Align::Right),
        ("Stop", Align::Left),
    ]);
    let mut marked = false;
    let mut notes: Vec<String> = Vec::new();
    for r in ok {
        let (Some(st), Some(h)) = (&r.stats, r.headline()) else { continue };
        // RustFiber marks the sizes where constant overhead dominates.
        let overhead = r.details.get("overhead_dominated").and_then(|v| v.as_bool()) == Some(true);
        marked |= overhead;
        let spread = |v: Option<f64>| v.map_or_else(|| "n/a".into(), format::percent);
        t.push(vec![
            if overhead { format!("{} (*)", axes_text(r)) } else { axes_text(r) },
            format::value(h.median, r.unit),
            interval_text(r),
            trials_text(r),
            st.work.n.to_string(),
            spread(h.between),
            spread(h.within),
            h.sensitivity.map_or_else(|| "n/a".into(), |s| format!(">= {}", format::percent(s))),
            st.cold.as_ref().map(|c| format!("{:.2}", c.ratio)).unwrap_or_else(|| "n/a".into()),
            r.stop.map_or("n/a", |s| s.as_str()).into(),
        ]);
        if let Some(d) = &r.disagreement {
            notes.push(format!("- {}: {}.", md::text(&axes_text(r)), md::inline(d)));
        }
        if let Some(d) = disturbed_text(r) {
            notes.push(format!("- {}: {}.", md::text(&axes_text(r)), md::inline(&d)));
        }
    }
    out.push('\n');
    out.push_str(&t.render());
    if marked {
        out.push_str(
            "\n(*) overhead-dominated: too few operations or too short a window for the figure to reflect the work \
                      (constant costs of starting and ending the parallel section dominate).\n",
        );
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    out.push_str(&variants::table(&mine).unwrap_or_default());
    out.push_str(&stats_tables::workload_tables(&mine));
    out
}

/// The plots of a group's workloads (the runner writes them under `plots/`).
pub fn group_plots(rows: &[Row], group: &str) -> Vec<plot::Plot> {
    let mut workloads: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.cell.group == group) {
        if !workloads.contains(&r.cell.workload.as_str()) {
            workloads.push(&r.cell.workload);
        }
    }
    workloads
        .into_iter()
        .flat_map(|w| {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.cell.workload == w).collect();
            plot::plots(w, &mine)
        })
        .collect()
}

/// Seconds from the first round's start to the last one's end.
fn rounds_span(run: &RunRecord) -> Option<f64> {
    let at = |t: &str| humantime::parse_rfc3339(t).ok();
    let (first, last) = (run.rounds.first()?, run.rounds.last()?);
    let (a, b) = (at(&first.started_utc)?, at(last.finished_utc.as_deref()?)?);
    Some(b.duration_since(a).ok()?.as_secs_f64())
}

/// The warning of a run during which other work took the machine.
pub fn busy_warning(run: &RunRecord) -> Option<String> {
    let i = run.interference.as_ref().filter(|i| i.disturbed)?;
    Some(format!("the machine was busy with other work during the run: {}; its figures may not reproduce on a quiet machine", i.text()))
}

/// What the rows can tell: how small a change each can see on this machine
/// (their sensitivity), and which rows' trials disagree or were disturbed.
pub fn reproducibility(rows: &[Row]) -> String {
    let sens: Vec<f64> = rows.iter().filter_map(|r| r.headline()?.sensitivity).collect();
    let ok = rows.iter().filter(|r| r.status == Status::Ok).count();
    let mut out = String::from(
        "## Reproducibility\n\nIn the rows' tables, Median is the median of the trial medians and 95% CI its interval over \
         trials (where a rerun's median should fall); Between and Within are the spread of the trial medians and of the samples \
         inside a trial (standard deviations of their logs); Sees is the smallest change `compare` of two such runs calls at the \
         default 2% noise band.\n\n",
    );
    if sens.is_empty() {
        out.push_str(&format!(
            "No row has two trials or more, so none has an interval or a sensitivity (of {ok} ok rows); run with --trials 3 or more.\n"
        ));
        return out;
    }
    let within = |limit: f64| sens.iter().filter(|&&s| s <= limit).count();
    out.push_str(&format!(
        "Of {} ok rows with an interval, {} can see a 5% change on this machine, {} a 10% change and {} a 20% change; {} only a \
         larger one. (A row sees a change when `compare` of two runs like this one would call it at the default 2% noise band.)\n",
        sens.len(),
        within(0.05),
        within(0.10),
        within(0.20),
        sens.len() - within(0.20)
    ));
    let disagree = rows.iter().filter(|r| r.disagreement.is_some()).count();
    let disturbed = rows.iter().filter(|r| r.disturbed_trials() > 0).count();
    if disagree > 0 || disturbed > 0 {
        out.push_str(&format!(
            "\n{disagree} rows have trials that disagree beyond their samples' noise, and {disturbed} rows have trials that other \
             processes disturbed (each workload's notes name them and the likely cause).\n"
        ));
    }
    out
}

/// The variants (or the noise profile), every row that is not ok, with its
/// reason; then the run's wall and CPU time.
pub fn footer(run: &RunRecord, rows: &[Row]) -> String {
    let mut out = variants::section(run, rows).map(|s| format!("{s}\n")).unwrap_or_default();
    out.push_str(&reproducibility(rows));
    if let Some(span) = rounds_span(run) {
        out.push_str(&format!(
            "\nThe trials of this run were taken over {} in {} rounds: a change of the machine slower than that (a neighbour's \
             load over minutes, a host's turbo budget) is not in these intervals.\n",
            format::seconds(span),
            run.rounds.len()
        ));
    }
    if let Some(w) = busy_warning(run) {
        out.push_str(&format!("\nwarning: {}.\n", md::inline(&w)));
    }
    out.push_str("\n## Not ok\n\n");
    let bad: Vec<&Row> = rows.iter().filter(|r| r.status != Status::Ok).collect();
    // Rows a signal left with fewer trials than planned.
    let cut_short = |r: &&Row| r.stop == Some(crate::evidence::RowStop::Interrupted) && (r.trials.len() as u32) < r.trials_planned;
    let short = rows.iter().any(|r| cut_short(&r));
    // A run without its finish record lists no cell as not run: the plan does.
    let incomplete = run.incomplete(rows);
    let unfinished: Vec<String> =
        if incomplete.is_some() { run.cells_without_row(rows).iter().map(|c| c.row_id.clone()).collect() } else { Vec::new() };
    if let Some(t) = &incomplete {
        out.push_str(&format!("{t}; {}.\n\n", why_not_run(run)));
    }
    if bad.is_empty() && run.not_run.is_empty() && !short && incomplete.is_none() {
        out.push_str("Every row is ok.\n");
    } else if bad.is_empty() && run.not_run.is_empty() && !short && unfinished.is_empty() {
        out.push_str("Every row is ok so far.\n");
    } else {
        let mut t = Table::new(&[("Row", Align::Left), ("Status", Align::Left), ("Reason", Align::Left)]);
        for r in bad {
            let reason = md::inline(r.reason.as_deref().unwrap_or_default());
            t.push_cells(vec![r.cell.display_name().into(), r.status.as_str().into(), Cell::md(reason)]);
        }
        for id in &run.not_run {
            t.push(vec![id.clone(), "not run".into(), "the run was interrupted before this cell".into()]);
        }
        for id in &unfinished {
            t.push(vec![id.clone(), "not run".into(), "no row: the run has no finish record".into()]);
        }
        for r in rows.iter().filter(cut_short) {
            t.push(vec![
                r.cell.display_name(),
                format!("{} ({})", r.status.as_str(), trials_text(r)),
                "the run was interrupted before its planned trials; it is kept with the trials that finished".into(),
            ]);
        }
        out.push_str(&t.render());
    }
    out.push_str("\n## Run totals\n\n");
    match (run.wall_s, &run.cpu) {
        (Some(w), Some(c)) => {
            let all = c.workers.plus(&c.parent);
            out.push_str(&format!("Wall time: {} ({} us)\n", format::seconds(w), format::number((w * 1e6).round())));
            out.push_str(&format!(
                "CPU time: {} ({} us): workers {} user + {} system, harness {}\n",
                format::seconds(all.cpu_seconds()),
                format::number((all.user_us + all.sys_us) as f64),
                format::seconds(c.workers.user_us as f64 / 1e6),
                format::seconds(c.workers.sys_us as f64 / 1e6),
                format::seconds(c.parent.cpu_seconds()),
            ));
        }
        _ => out.push_str("The run did not finish; no totals.\n"),
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
