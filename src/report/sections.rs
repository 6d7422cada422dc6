//! The report's sections as document blocks: the header (the run's counts
//! and warnings, the run and the machine folded), the "Read this first"
//! block (rows not ok, disturbed or with disagreeing trials, each with its
//! cause; skips apart from failures), the rows not ok, the
//! summary of every row, per group its workloads' prose, tables and
//! figures (the statistics folded), its counters, and the footer (variants,
//! reproducibility, run totals), then what each column means (the
//! glossary, which report.html links each column's title to). Text from the records enters as typed
//! nodes; escaping is the renderers' business.

use crate::evidence::{Row, RunRecord, StatusCounts, StoredRun};
use crate::model::{Cell, Status};

use super::facts::{self, busy_warning, interval_text, row_label, run_warnings, trials_text, why_not_run};
use super::plot;
use super::variants::{self, Verdicts};
use super::{counters, primitive, scaling, stats_tables, strategies};
use crate::text::document::{Align, Block, Document, Figure, Line, Table, Tone};
use crate::text::format;

/// The whole report of a stored run: the answer first (the header's
/// counts and warnings, the rows not ok, the summary of every row, each
/// naming its workload's section), then the groups, then the rest of the
/// footer.
pub fn document(stored: &StoredRun) -> Document {
    let (run, rows) = (&stored.run, &stored.rows);
    let mut blocks = header(run, rows);
    let verdicts = Verdicts::of(rows);
    let (not_ok, rest) = not_ok_first(footer(run, rows));
    blocks.extend(read_first(run, rows));
    // The failures above the summary; the skips (which "Read this first"
    // counts and names) under it, so that the summary stays on the first screen.
    let (failures, skips) = failures_and_skips(not_ok);
    blocks.extend(failures);
    blocks.extend(summary(run, rows, &verdicts));
    blocks.extend(skips);
    let missing = run.cells_without_row(rows);
    for g in super::facts::groups(run, rows) {
        let mut inner = group(rows, &g, &verdicts);
        inner.extend(not_run(run, &missing, &g));
        inner.extend(counters(rows, &g));
        blocks.push(Block::Group { name: g, blocks: inner });
    }
    blocks.extend(rest);
    blocks.extend(glossary());
    Document { title: format!("proofbench run {}", run.id), blocks }
}

/// What a reader must know before reading a figure, on top of the report,
/// one line each: the rows not ok (named in the section below it), the
/// rows whose trials other processes disturbed and those whose trials
/// disagree, the cells skipped on this machine and those that do not apply
/// by design, each line followed by the rows and their one-line causes
/// (folded in HTML); or that there is none of these.
pub fn read_first(run: &RunRecord, rows: &[Row]) -> Vec<Block> {
    let mut out = vec![Block::heading(2, READ_FIRST)];
    let by_name = |r: &Row| Line::new().link(r.cell.display_name(), &crate::text::document::slug(&r.cell.workload));
    let listed = |out: &mut Vec<Block>, lead: Line, rows: Vec<(&Row, String)>| {
        let items: Vec<Line> = rows.into_iter().map(|(r, why)| by_name(r).text(": ").marked(&why)).collect();
        let fold = Block::Fold { summary: Line::from("Which rows, and why"), blocks: vec![Block::List(items)] };
        out.push(Block::Compact(vec![Block::paragraph(lead), fold]));
    };
    if let Some(t) = run.incomplete(rows) {
        out.push(Block::paragraph(Line::from(format!("{t}; {}: ", why_not_run(run))).link("Not ok", "not-ok").text(" says which.")));
    }
    let failed = rows.iter().filter(|r| !matches!(r.status, Status::Ok | Status::Skipped)).count() + run.not_run.len();
    if failed > 0 {
        out.push(Block::paragraph(
            Line::from(format!("{} not ok: ", format::counted(failed, "row is", "rows are")))
                .link("Not ok", "not-ok")
                .text(" names each with its reason."),
        ));
    }
    let disturbed: Vec<(&Row, String)> = rows.iter().filter_map(|r| Some((r, r.disturbed_text()?))).collect();
    if !disturbed.is_empty() {
        let lead = Line::from(format!("{} trials that other processes ", format::counted(disturbed.len(), "row has", "rows have")))
            .link("disturbed", &crate::text::document::slug("Disturbed"))
            .text(": their figures may not reproduce on a quiet machine.");
        listed(&mut out, lead, disturbed);
    }
    let disagree: Vec<(&Row, String)> = rows.iter().filter_map(|r| Some((r, r.disagreement.clone()?))).collect();
    if !disagree.is_empty() {
        let lead = Line::from(format!("{} ", format::counted(disagree.len(), "row has", "rows have")))
            .link("trials that disagree", &crate::text::document::slug("Trials disagree"))
            .text(" beyond their samples' noise.");
        listed(&mut out, lead, disagree);
    }
    let skipped: Vec<(&Row, String)> = rows
        .iter()
        .filter(|r| r.status == Status::Skipped && !r.skipped_by_design())
        .map(|r| (r, r.reason.clone().unwrap_or_else(|| "no reason recorded".into())))
        .collect();
    if !skipped.is_empty() {
        let lead = Line::from(format!(
            "{} on this machine (not failures).",
            format::counted(skipped.len(), "cell was skipped", "cells were skipped")
        ));
        listed(&mut out, lead, skipped);
    }
    if let Some(line) = by_design(rows) {
        let n: usize = facts::by_design(rows).iter().map(|(_, r)| r.len()).sum();
        let lead = Line::from(format!("{} not apply by design (not failures).", format::counted(n, "cell does", "cells do")));
        let fold = Block::Fold { summary: Line::from("Which cells, and why"), blocks: vec![Block::paragraph(line)] };
        out.push(Block::Compact(vec![Block::paragraph(lead), fold]));
    }
    if out.len() == 1 {
        out.push(Block::paragraph("Every row is ok; no trial was disturbed and every row's trials agree."));
    }
    out
}

/// The heading of the block on top of the report.
pub const READ_FIRST: &str = "Read this first";

/// The footer's "Not ok" section split as the report shows it: the rows
/// that failed under "Not ok" (above the summary), and the cells skipped
/// on this machine apart under "Skipped on this machine" (a skip is not a
/// failure; "Read this first" counts and names them, so they go under the
/// summary); both empty when every row is ok (the "Read this first" block
/// says so, and names the cells that do not apply by design).
fn failures_and_skips(not_ok: Vec<Block>) -> (Vec<Block>, Vec<Block>) {
    let Some(t) = not_ok.iter().find_map(|b| if let Block::Table(t) = b { Some(t.clone()) } else { None }) else {
        // Nothing listed: only a run without its finish record says more here.
        let said = |b: &Block| matches!(b, Block::Paragraph(l) if l.len() == 1 && crate::text::document::plain(&l[0]).contains(" no finish record"));
        return (if not_ok.iter().any(said) { not_ok } else { Vec::new() }, Vec::new());
    };
    let skipped = |row: &Vec<Line>| row.get(1).is_some_and(|c| crate::text::document::plain(c) == Status::Skipped.as_str());
    let (skips, failures): (Vec<Vec<Line>>, Vec<Vec<Line>>) = t.rows.iter().cloned().partition(skipped);
    let mut out = Vec::new();
    if !failures.is_empty() {
        out.extend(
            not_ok
                .iter()
                .filter(|b| {
                    !matches!(b, Block::Table(_))
                        && !matches!(b, Block::Paragraph(l) if l.len() == 1 && crate::text::document::plain(&l[0]).contains("by design"))
                })
                .cloned(),
        );
        out.push(Block::Table(Table { rows: failures, ..t.clone() }));
    }
    let apart = if skips.is_empty() { Vec::new() } else { vec![Block::heading(2, SKIPPED), Block::Table(Table { rows: skips, ..t })] };
    (out, apart)
}

/// The heading of the rows skipped on this machine.
const SKIPPED: &str = "Skipped on this machine";

/// The meaning of each column of the report's tables, and of the words
/// its notes use, each under a heading of its own: report.html links every
/// column's title here and shows the meaning as its tooltip
/// (`document::html::GLOSSARY`).
pub fn glossary() -> Vec<Block> {
    let mut out = vec![Block::heading(2, crate::text::document::html::GLOSSARY)];
    for (term, meaning) in TERMS {
        out.push(Block::heading(3, term));
        out.push(Block::paragraph(meaning));
    }
    out
}

/// The glossary: each column or word, and what it means.
const TERMS: [(&str, &str); 14] = [
    ("Row", "The workload and its axis values (worker count, runtime, size, ...): one cell of the plan."),
    (
        "Median",
        "The median of the trial medians (each trial a fresh worker process), in its unit scaled to read (the records keep the exact value).",
    ),
    (
        "95% CI",
        "The 95% interval of that median over trials: a rerun's median falls inside it about 85-90% of the time when nothing changed between the runs.",
    ),
    (
        "Speedup / ratio",
        "The median against the same series at its fewest workers (speedup: above 1 is faster), or against the base variant \
         (ratio): a variant's trials paired with the base's of the same round, so its ratio can differ from the quotient of \
         the two medians, which pool trials of different rounds.",
    ),
    (
        "Sees",
        "The smallest change compare of two runs like this one would call, at the default 2% noise band: a row that sees only 20% cannot tell a 5% change.",
    ),
    (
        "Status",
        "ok, or why the row has no figure: failed, invalid (its verifier said no), timeout, or skipped (on this machine, or by design).",
    ),
    ("Trials", "Trials taken: each a fresh worker process measuring the cell."),
    ("n", "Timed samples in the statistics (warmup samples left out)."),
    ("Between", "The spread of the trial medians: the standard deviation of their logs."),
    ("Within", "The spread of the samples inside a trial: the standard deviation of their logs."),
    ("First/steady", "The first timed sample over the steady median: how much a cold start costs."),
    ("Stop", "Why a trial's sampling stopped: its interval narrow enough, its time budget spent, or its fixed number of samples taken."),
    (
        "Disturbed",
        "Other processes took CPU time on the row's CPUs during some trials (or the hypervisor stole it): the figure may not reproduce on a quiet machine.",
    ),
    (
        "Trials disagree",
        "The trial medians differ more than the samples inside each trial explain: something changed between trials (placement, frequency, a neighbour); the note names the likely cause.",
    ),
];

/// The footer's "Not ok" section (its heading and the blocks up to the next
/// level-2 heading), and the footer without it.
fn not_ok_first(footer: Vec<Block>) -> (Vec<Block>, Vec<Block>) {
    let is_h2 = |b: &Block| matches!(b, Block::Heading { level: 2, .. });
    let Some(at) = footer.iter().position(|b| matches!(b, Block::Heading { level: 2, text } if *text == Line::from("Not ok"))) else {
        return (Vec::new(), footer);
    };
    let end = footer[at + 1..].iter().position(is_h2).map_or(footer.len(), |n| at + 1 + n);
    let mut rest = footer;
    let not_ok: Vec<Block> = rest.drain(at..end).collect();
    (not_ok, rest)
}

/// The answer first: one line per row, groups in plan order.
pub fn summary(run: &RunRecord, rows: &[Row], verdicts: &Verdicts) -> Vec<Block> {
    let mut ordered: Vec<&Row> = Vec::with_capacity(rows.len());
    for g in super::facts::groups(run, rows) {
        let mut in_group: Vec<&Row> = rows.iter().filter(|r| r.cell.group == g).collect();
        in_group.sort_by_key(|r| r.cell.index);
        ordered.extend(in_group);
    }
    if ordered.is_empty() {
        return Vec::new();
    }
    vec![Block::heading(2, "Summary"), Block::Table(super::overview::table(&ordered, verdicts))]
}

/// The page of a `noise` run (`noise --html FILE`): the run and the
/// machine, the answer first (the noise profile with its chart, what to
/// read first, the rows that failed), then each workload's A/B table under
/// its group (what the columns mean said once, again only where it
/// differs), then the rest of the footer (reproducibility, the skips).
pub fn noise_document(stored: &StoredRun) -> Document {
    let (run, rows) = (&stored.run, &stored.rows);
    let mut blocks = header(run, rows);
    blocks[0] = Block::heading(1, Line::from("proofbench noise ").text(&run.id));
    let verdicts = Verdicts::of(rows);
    let (not_ok, rest) = not_ok_first(footer_after_variants(run, rows));
    blocks.extend(variants::section(run, rows).unwrap_or_default());
    blocks.extend(read_first(run, rows));
    let (failures, skips) = failures_and_skips(not_ok);
    blocks.extend(failures);
    let mut said: Option<Block> = None;
    for g in super::facts::groups(run, rows) {
        let mut inner = vec![Block::heading(2, g.as_str())];
        for w in workloads(rows, &g) {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.cell.workload == w).collect();
            if let Some(mut table) = variants::table(&mine, &verdicts) {
                inner.push(Block::heading(3, w));
                // The table's heading and what its columns mean, when not just said.
                if table.len() > 2 && said.as_ref() == Some(&table[1]) {
                    table.drain(..2);
                } else {
                    said = table.get(1).cloned();
                }
                inner.extend(table);
            }
        }
        if inner.len() > 1 {
            blocks.push(Block::Group { name: g, blocks: inner });
        }
    }
    blocks.extend(skips);
    blocks.extend(rest);
    Document { title: format!("proofbench noise {}", run.id), blocks }
}

/// The title, one line of the rows' counts, the run's warnings, and the
/// machine/run record (folded in HTML).
pub fn header(run: &RunRecord, rows: &[Row]) -> Vec<Block> {
    let mut t = Table::new(&[("Field", Align::Left), ("Value", Align::Left)]);
    let counts = StatusCounts::of(rows.iter().map(|r| &r.status));
    t.push(vec!["System label".into(), run.label.clone()]);
    t.push(vec!["Profile".into(), run.profile.as_str().into()]);
    let sel = if run.options.selection.patterns.is_empty() { "(all)".to_string() } else { run.options.selection.patterns.join(" ") };
    t.push(vec!["Selection".into(), sel]);
    if run.kind != crate::evidence::RunKind::Run {
        t.push(vec!["Kind".into(), format!("{} (an A/A self-check: two identical variants)", run.kind.as_str())]);
    }
    if !run.variants.is_empty() {
        t.push(vec!["Variants".into(), run.variants.iter().map(crate::model::Variant::describe).collect::<Vec<_>>().join("; ")]);
    }
    t.push(vec!["Started (UTC)".into(), run.started_utc.clone()]);
    t.push(vec!["Finished (UTC)".into(), run.finished_utc.clone().unwrap_or_else(|| "(not finished)".into())]);
    t.push(vec!["Rows".into(), counts_text(&counts, run.plan.len())]);
    if let Some(s) = run.submission() {
        t.push(vec!["Submission".into(), s]);
    }
    for (k, v) in run.envelope.summary() {
        t.push(vec![k, v]);
    }
    let mut out =
        vec![Block::heading(1, Line::from("proofbench run ").text(&run.id)), Block::paragraph(counts_line(&counts, run.plan.len()))];
    out.extend(run_warnings(run, rows).iter().map(|w| Block::Warning(Line::new().marked(w))));
    let label = if run.label.is_empty() { String::new() } else { format!(" ({})", run.label) };
    out.push(Block::Fold { summary: Line::from(format!("The run and the machine{label}")), blocks: vec![Block::Table(t)] });
    out
}

/// The rows' counts in one line, the counts that are not ok toned.
fn counts_line(c: &StatusCounts, planned: usize) -> Line {
    let mut l = Line::from("Rows: ").toned(if c.ok > 0 { Tone::Good } else { Tone::Dim }, format!("{} ok", c.ok));
    for (n, what) in [(c.invalid, "invalid"), (c.failed, "failed"), (c.timeout, "timeout"), (c.skipped, "skipped")] {
        let tone = match (n, what) {
            (0, _) => Tone::Dim,
            (_, "skipped") => Tone::Warn,
            _ => Tone::Bad,
        };
        l = l.text(", ").toned(tone, format!("{n} {what}"));
    }
    l.text(format!(" (of {planned} planned)."))
}

fn counts_text(c: &StatusCounts, planned: usize) -> String {
    format!("{} ok, {} invalid, {} failed, {} timeout, {} skipped (of {planned} planned)", c.ok, c.invalid, c.failed, c.timeout, c.skipped)
}

/// The workloads of a group's rows, in the order first seen.
fn workloads<'a>(rows: &'a [Row], group: &str) -> Vec<&'a str> {
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    rows.iter().filter(|r| r.cell.group == group).map(|r| r.cell.workload.as_str()).filter(|w| seen.insert(w)).collect()
}

/// The tables of one group: per workload, its scaling tables and its rows
/// (its variants with the run's `verdicts`).
pub fn group(rows: &[Row], group: &str, verdicts: &Verdicts) -> Vec<Block> {
    let mut out = vec![Block::heading(2, group)];
    let names = workloads(rows, group);
    if names.is_empty() {
        out.push(Block::paragraph("No rows."));
    }
    let in_group: Vec<&Row> = rows.iter().filter(|r| r.cell.group == group).collect();
    if let Some(p) = primitive::section(&in_group) {
        out.push(Block::heading(3, "Primitives"));
        out.extend(p);
    }
    for w in names {
        out.extend(workload(rows, w, verdicts));
    }
    out.extend(Block::fold(
        format!("Run-to-run variance of the rows of {group}"),
        stats_tables::variance_table(&in_group).unwrap_or_default(),
    ));
    out
}

/// The section of one workload: heading, prose, scaling and strategy tables,
/// its figures, the statistics tables of its ok rows, and its variants
/// against the base with the run's `verdicts`.
pub fn workload(rows: &[Row], w: &str, verdicts: &Verdicts) -> Vec<Block> {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.cell.workload == w).collect();
    let Some(first) = mine.first().copied() else { return Vec::new() };
    let mut what = Line::from("Unit: ")
        .text(first.unit.as_str())
        .text(" (")
        .text(first.direction.as_str())
        .text("). Timed region: ")
        .marked(&first.timed_region)
        .text(".");
    if let Some(tw) = &first.total_window {
        what = what.text(" Total window: ").marked(tw).text(".");
    }
    if let Some(v) = mine.iter().find_map(|r| r.verifier.as_ref()) {
        what = what.text(" Verifier: ").marked(&v.description).text(".");
    }
    let mut para = vec![Line::new().marked(first.summary.trim_start()).text("."), what];
    para.extend(facts::code_paths_line(&mine).map(Line::from));
    let mut out = vec![Block::heading(3, w), Block::Paragraph(para)];
    if let Some(w) = first.cell.command.as_ref().and_then(|d| d.exit_code_only_warning()) {
        out.push(Block::Warning(Line::new().code(w.id).marked(&w.what).text(w.at)));
    }
    out.extend(scaling::tables(&mine));
    out.extend(strategies::table(&mine).map(Block::Table));
    let figures: Vec<Figure> =
        plot::plots(w, &mine).into_iter().map(|p| Figure { path: format!("plots/{}", p.file), caption: p.title, svg: p.svg }).collect();
    if !figures.is_empty() {
        out.push(Block::Figures(figures));
    }
    let ok: Vec<&&Row> = mine.iter().filter(|r| r.status == Status::Ok).collect();
    if ok.is_empty() {
        out.push(Block::paragraph("No ok rows (see Not ok)."));
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
    let mut notes: Vec<Line> = Vec::new();
    for r in ok {
        let (Some(st), Some(h)) = (&r.stats, r.headline()) else { continue };
        // RustFiber marks the sizes where constant overhead dominates.
        let overhead = r.details.get("overhead_dominated").and_then(|v| v.as_bool()) == Some(true);
        marked |= overhead;
        let spread = |v: Option<f64>| v.map_or_else(|| "n/a".into(), format::percent);
        t.push(vec![
            if overhead { format!("{} (*)", row_label(r)) } else { row_label(r) },
            format::scaled(h.median, r.unit),
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
            notes.push(Line::from(row_label(r)).text(": ").marked(d).text("."));
        }
        if let Some(d) = r.disturbed_text() {
            notes.push(Line::from(row_label(r)).text(": ").marked(&d).text("."));
        }
        // A fact of the machine the workload noted about the row.
        if let Some(n) = r.details.get("note").and_then(|v| v.as_str()) {
            notes.push(Line::from(row_label(r)).text(": ").text(n).text("."));
        }
    }
    let mut table = vec![Block::Table(t)];
    if marked {
        table.push(Block::paragraph(
            "(*) overhead-dominated: too few operations or too short a window for the figure to reflect the work \
             (constant costs of starting and ending the parallel section dominate).",
        ));
    }
    out.extend(Block::fold("Trials, spread and sensitivity of each row", table));
    if !notes.is_empty() {
        out.push(Block::List(notes));
    }
    out.extend(variants::table(&mine, verdicts).unwrap_or_default());
    out.extend(Block::fold("Statistics of the samples", stats_tables::workload_tables(&mine)));
    out
}

/// A line under a group's tables when some of its planned cells have no
/// row (a run killed or interrupted before them); nothing otherwise.
/// `missing` are the run's planned cells without a row.
pub fn not_run(run: &RunRecord, missing: &[&Cell], group: &str) -> Option<Block> {
    let planned = run.plan.iter().filter(|c| c.group == group).count();
    let missing = missing.iter().filter(|c| c.group == group).count();
    (missing > 0).then(|| {
        let have = if missing == 1 { "has" } else { "have" };
        Block::paragraph(format!(
            "Not run: {missing} of {} {have} no row: {}.",
            format::counted(planned, "planned cell", "planned cells"),
            why_not_run(run)
        ))
    })
}

/// The counters table of a group (nothing when no row has counters).
pub fn counters(rows: &[Row], group: &str) -> Vec<Block> {
    let refs: Vec<&Row> = rows.iter().collect();
    counters::section(&refs, group).unwrap_or_default()
}

/// How long from the first round's start to the last one's end: `over 350 ms`, or
/// `within a second` for whole-second records of a shorter span.
fn rounds_span(run: &RunRecord) -> Option<String> {
    let at = |t: &str| humantime::parse_rfc3339(t).ok();
    let (first, last) = (run.rounds.first()?, run.rounds.last()?);
    let end = last.finished_utc.as_deref()?;
    let span = at(end)?.duration_since(at(&first.started_utc)?).ok()?.as_secs_f64();
    // Records made before round times had milliseconds hold whole seconds.
    let whole_seconds = !first.started_utc.contains('.') || !end.contains('.');
    Some(if whole_seconds && span < 1.0 { "within a second".to_string() } else { format!("over {}", format::seconds(span)) })
}

/// What the rows can tell: how small a change each can see on this machine
/// (their sensitivity), and which rows' trials disagree or were disturbed.
pub fn reproducibility(rows: &[Row]) -> Vec<Block> {
    let sens: Vec<f64> = rows.iter().filter_map(|r| r.headline()?.sensitivity).collect();
    let ok = rows.iter().filter(|r| r.status == Status::Ok).count();
    let mut out = vec![
        Block::heading(2, "Reproducibility"),
        Block::paragraph(
            Line::from(
                "In the rows' tables, Median is the median of the trial medians and 95% CI its interval over trials (for the median \
                 of many such trials on the machine as it was; a rerun's median falls inside it about 85-90% of the time when nothing \
                 changed between the runs); Between and Within are the spread of the trial medians and of the samples inside a \
                 trial (standard deviations of their logs); Sees is the smallest change ",
            )
            .code("compare")
            .text(" of two such runs calls at the default 2% noise band."),
        ),
    ];
    if sens.is_empty() {
        out.push(Block::paragraph(format!(
            "No row has two trials or more, so none has an interval or a sensitivity (of {}); run with --trials 3 or more.",
            format::counted(ok, "ok row", "ok rows")
        )));
        return out;
    }
    let within = |limit: f64| sens.iter().filter(|&&s| s <= limit).count();
    out.push(Block::paragraph(
        Line::from(format!(
            "Of {} with an interval, {} can see a 5% change on this machine, {} a 10% change and {} a 20% change; {} only a \
             larger one. (A row sees a change when ",
            format::counted(sens.len(), "ok row", "ok rows"),
            within(0.05),
            within(0.10),
            within(0.20),
            sens.len() - within(0.20)
        ))
        .code("compare")
        .text(" of two runs like this one would call it at the default 2% noise band.)"),
    ));
    let disagree = rows.iter().filter(|r| r.disagreement.is_some()).count();
    let disturbed = rows.iter().filter(|r| r.disturbed_trials() > 0).count();
    if disagree > 0 || disturbed > 0 {
        out.push(Block::paragraph(format!(
            "{} trials that disagree beyond their samples' noise, and {} trials that other processes disturbed (each \
             workload's notes name them and the likely cause).",
            format::counted(disagree, "row has", "rows have"),
            format::counted(disturbed, "row has", "rows have"),
        )));
    }
    out
}

/// The variants (or the noise profile), every row that is not ok, with its
/// reason; then the run's wall and CPU time.
pub fn footer(run: &RunRecord, rows: &[Row]) -> Vec<Block> {
    let mut out = variants::section(run, rows).unwrap_or_default();
    out.extend(footer_after_variants(run, rows));
    out
}

/// [`footer`] without its variants' section: reproducibility, the rows
/// not ok, the run's wall and CPU time.
fn footer_after_variants(run: &RunRecord, rows: &[Row]) -> Vec<Block> {
    let mut out = reproducibility(rows);
    if let Some(span) = rounds_span(run) {
        out.push(Block::paragraph(format!(
            "The trials of this run were taken {span} in {}: a change of the machine slower than that (a \
             neighbour's load over minutes, a host's turbo budget) is not in these intervals.",
            format::counted(run.rounds.len(), "round", "rounds")
        )));
    }
    if let Some(w) = busy_warning(run) {
        out.push(Block::paragraph(Line::from("warning: ").marked(&w).text(".")));
    }
    out.extend(super::profiles::section(run, rows));
    out.push(Block::heading(2, "Not ok"));
    // Cells that do not apply by design are not rows that went wrong: one line apart, below.
    let bad: Vec<&Row> = rows.iter().filter(|r| r.status != Status::Ok && !r.skipped_by_design()).collect();
    // Rows a signal left with fewer trials than planned.
    let short = rows.iter().any(|r| r.cut_short());
    // A run without its finish record lists no cell as not run: the plan does.
    let incomplete = run.incomplete(rows);
    let unfinished: Vec<String> =
        if incomplete.is_some() { run.cells_without_row(rows).iter().map(|c| c.row_id.clone()).collect() } else { Vec::new() };
    if let Some(t) = &incomplete {
        out.push(Block::paragraph(format!("{t}; {}.", why_not_run(run))));
    }
    let every = if rows.iter().any(Row::skipped_by_design) { "Every row that applies is ok" } else { "Every row is ok" };
    if bad.is_empty() && run.not_run.is_empty() && !short && incomplete.is_none() {
        out.push(Block::paragraph(format!("{every}.")));
    } else if bad.is_empty() && run.not_run.is_empty() && !short && unfinished.is_empty() {
        out.push(Block::paragraph(format!("{every} so far.")));
    } else {
        let mut t = Table::new(&[("Row", Align::Left), ("Status", Align::Left), ("Reason", Align::Left)]);
        for r in bad {
            let reason = Line::new().marked(r.reason.as_deref().unwrap_or_default());
            t.push_row(vec![r.cell.display_name().into(), r.status.as_str().into(), reason]);
        }
        for id in &run.not_run {
            t.push(vec![id.clone(), "not run".into(), "the run was interrupted before this cell".into()]);
        }
        for id in &unfinished {
            t.push(vec![id.clone(), "not run".into(), "no row: the run has no finish record".into()]);
        }
        for r in rows.iter().filter(|r| r.cut_short()) {
            t.push(vec![
                r.cell.display_name(),
                format!("{} ({})", r.status.as_str(), trials_text(r)),
                "the run was interrupted before its planned trials; it is kept with the trials that finished".into(),
            ]);
        }
        out.push(Block::Table(t));
    }
    out.extend(by_design(rows).map(Block::paragraph));
    out.push(Block::heading(2, "Run totals"));
    out.push(match (run.wall_s, &run.cpu) {
        (Some(w), Some(c)) => {
            let all = c.workers.plus(&c.parent);
            Block::Paragraph(vec![
                Line::from(format!("Wall time: {} ({} us)", format::seconds(w), format::number((w * 1e6).round()))),
                Line::from(format!(
                    "CPU time: {} ({} us): workers {} user + {} system, harness {}",
                    format::seconds(all.cpu_seconds()),
                    format::number((all.user_us + all.sys_us) as f64),
                    format::seconds(c.workers.user_us as f64 / 1e6),
                    format::seconds(c.workers.sys_us as f64 / 1e6),
                    format::seconds(c.parent.cpu_seconds()),
                )),
            ])
        }
        _ => Block::paragraph("The run did not finish; no totals."),
    });
    out
}

/// One line for the cells that do not apply by design (skipped on any
/// machine, by the workload's own rule), grouped by reason: `3 cells do not
/// apply by design: os.yield mode=single placement=cross-cpu (single-thread
/// yield has one end; ...); rt.fib runtime=spawn workers=1, ... (...).`
pub fn by_design(rows: &[Row]) -> Option<Line> {
    let groups = facts::by_design(rows);
    if groups.is_empty() {
        return None;
    }
    let n: usize = groups.iter().map(|(_, r)| r.len()).sum();
    let mut l = Line::from(format!("{} not apply by design: ", format::counted(n, "cell does", "cells do")));
    for (i, (why, list)) in groups.iter().enumerate() {
        if i > 0 {
            l = l.text("; ");
        }
        l = l.text(facts::names(list)).text(" (").marked(why).text(")");
    }
    Some(l.text("."))
}

/// The last lines of the worker's stderr of every row that is not ok
/// (report.html shows them folded, naming each row's log file).
pub fn worker_stderr(rows: &[Row]) -> Vec<Block> {
    let bad: Vec<&Row> = rows.iter().filter(|r| r.status != Status::Ok && !r.stderr_tail.trim().is_empty()).collect();
    if bad.is_empty() {
        return Vec::new();
    }
    let mut out = vec![Block::heading(2, "Worker stderr of the rows not ok")];
    out.extend(bad.into_iter().map(|r| Block::Details {
        summary: Line::from(r.cell.display_name()).text(" (").text(r.status.as_str()).text("): last lines of ").file_link(&r.log, &r.log),
        text: r.stderr_tail.clone(),
    }));
    out
}
