//! The report's section on the profiling pass (`run --perf-pass`): how it
//! ran (outside the timed samples), each row's pass with links to its files
//! under `profiles/<row>/`, perf stat's counts, `perf report`'s top lines,
//! and the guest-side pass of command workloads. From the rows' `profile`
//! records alone: no file is read.

use crate::evidence::{ProfileFileKind, ProfileRecord, ProfileStatus, Row, RunRecord};
use crate::model::PerfPass;
use crate::text::document::{Align, Block, Line, Table, Tone};
use crate::text::format;

fn tone(s: ProfileStatus) -> Tone {
    match s {
        ProfileStatus::Ok => Tone::Good,
        ProfileStatus::Skipped => Tone::Warn,
        ProfileStatus::Failed => Tone::Bad,
    }
}

/// What a file of a pass is called in the report.
fn file_label(kind: ProfileFileKind) -> &'static str {
    match kind {
        ProfileFileKind::PerfStat => "perf stat output",
        ProfileFileKind::PerfData => "perf.data",
        ProfileFileKind::PerfReport => "perf report top 20",
        ProfileFileKind::FlameGraph => "flame graph (SVG)",
        ProfileFileKind::FoldedStacks => "folded stacks",
        ProfileFileKind::Log => "log",
    }
}

/// The files of a pass as links, separated by commas.
fn files(p: &ProfileRecord) -> Line {
    let mut l = Line::new();
    let mut first = true;
    // The flame graph first: it is what a reader opens.
    let mut ordered: Vec<_> = p.files.iter().collect();
    ordered.sort_by_key(|f| f.kind != ProfileFileKind::FlameGraph);
    for f in ordered {
        if !first {
            l = l.text(", ");
        }
        first = false;
        l = l.file_link(file_label(f.kind), &f.path);
    }
    if first { l.text("-") } else { l }
}

/// A count as perf stat printed it: its value and unit, or why it has none.
fn count(c: &crate::evidence::PerfCounter) -> String {
    match (c.value, c.unit.as_str()) {
        (Some(v), "") if v.fract() == 0.0 && v >= 0.0 => format::count(v as u64),
        (Some(v), "") => format::number(v),
        (Some(v), unit) => format!("{} {unit}", format::number(v)),
        (None, _) => c.note.clone().unwrap_or_else(|| "-".into()),
    }
}

/// The section, when the run had a profiling pass.
pub fn section(run: &RunRecord, rows: &[Row]) -> Vec<Block> {
    let mut with: Vec<(&Row, &ProfileRecord)> = rows.iter().filter_map(|r| r.profile.as_ref().map(|p| (r, p))).collect();
    let Some(mode) = run.options.measurement.perf_pass.or_else(|| with.first().map(|(_, p)| p.mode)) else { return Vec::new() };
    with.sort_by_key(|(r, _)| r.cell.index);
    let mut out = vec![Block::heading(2, "Profiling pass")];
    let how = match mode {
        PerfPass::Stat => "perf stat",
        PerfPass::Record => "perf record -g",
    };
    out.push(Block::paragraph(
        Line::from("With ")
            .code(format!("--perf-pass {}", mode.as_str()))
            .text(", each ok row's worker ran once more after its timed trials, under ")
            .code(how)
            .text(", for one timed sample without warmup: nothing of that run is in the rows' samples, statistics or counters. Its files are under ")
            .code("profiles/<row>/")
            .text("."),
    ));
    if with.is_empty() {
        out.push(Block::paragraph("No row has a profile."));
        return out;
    }
    // One reason for every row (perf missing or not permitted): said once.
    let first_reason = with[0].1.reason.clone();
    if with.iter().all(|(_, p)| p.status == ProfileStatus::Skipped && p.reason == first_reason) {
        out.push(Block::paragraph(
            Line::from("Skipped on every row: ").marked(first_reason.as_deref().unwrap_or("no reason recorded")).text("."),
        ));
    } else {
        let mut t = Table::new(&[("Row", Align::Left), ("Pass", Align::Left), ("Files", Align::Left), ("Note", Align::Left)]);
        for (r, p) in &with {
            let note = match (&p.reason, p.samples) {
                (Some(why), _) => Line::new().marked(why),
                (None, Some(n)) => Line::from(format!("{} recorded", format::counted(n as usize, "sample", "samples"))),
                (None, None) => Line::from(p.perf_version.clone().unwrap_or_default()),
            };
            t.push_row(vec![Line::from(r.cell.display_name()), Line::new().toned(tone(p.status), p.status.as_str()), files(p), note]);
        }
        out.push(Block::Table(t));
    }
    // perf stat's counts: one column per event, in the order perf printed them.
    let counted: Vec<&(&Row, &ProfileRecord)> = with.iter().filter(|(_, p)| !p.counters.is_empty()).collect();
    if !counted.is_empty() {
        let mut events: Vec<&str> = Vec::new();
        for (_, p) in &counted {
            for c in &p.counters {
                if !events.contains(&c.event.as_str()) {
                    events.push(&c.event);
                }
            }
        }
        let mut cols: Vec<(&str, Align)> = vec![("Row", Align::Left)];
        cols.extend(events.iter().map(|e| (*e, Align::Right)));
        let mut t = Table::new(&cols);
        for (r, p) in &counted {
            let mut cells = vec![r.cell.display_name()];
            cells.extend(events.iter().map(|e| p.counters.iter().find(|c| c.event == *e).map_or_else(|| "-".to_string(), count)));
            t.push(cells);
        }
        out.push(Block::paragraph("perf stat over the profiled run (its whole worker: start, setup, calibration and the one sample):"));
        out.push(Block::Table(t));
    }
    // perf report's top lines, folded.
    for (r, p) in with.iter().filter(|(_, p)| !p.top.is_empty()) {
        let samples = p.samples.map(|n| format!(", {}", format::counted(n as usize, "sample", "samples"))).unwrap_or_default();
        out.push(Block::Details {
            summary: Line::from(format!("{}: perf report, the top {} lines{samples}", r.cell.display_name(), p.top.len())),
            text: p.top.join("\n"),
        });
    }
    // The guest-side pass of command workloads.
    let guests: Vec<_> = with.iter().filter_map(|(r, p)| p.guest.as_ref().map(|g| (r, g))).collect();
    if !guests.is_empty() {
        out.push(Block::paragraph(
            Line::from("The command workloads' own profile commands (").code("[workload.profile]").text("), run once per row:"),
        ));
        let mut t = Table::new(&[("Row", Align::Left), ("Pass", Align::Left), ("Command", Align::Left), ("Output", Align::Left)]);
        for (r, g) in guests {
            let output = match &g.output {
                Some(path) => Line::new().file_link("guest output", path),
                None => Line::from("-"),
            };
            let output = match &g.reason {
                Some(why) => output.text(": ").marked(why),
                None => output,
            };
            t.push_row(vec![
                Line::from(r.cell.display_name()),
                Line::new().toned(tone(g.status), g.status.as_str()),
                Line::new().code(crate::workloads::command::shown(&g.command)),
                output,
            ]);
        }
        out.push(Block::Table(t));
    }
    out
}
