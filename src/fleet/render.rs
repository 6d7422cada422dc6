//! The fleet as a document (terminal, markdown, HTML) and as an export (one
//! line per host and row). Formatting only.

use serde_json::{Map, Value, json};

use super::{Entry, Fleet, Standing};
use crate::model::{Direction, ExportFormat};
use crate::text::csv::{csv_field, measure, opt};
use crate::text::document::{Align, Block, Document, Line, Table, Tone};
use crate::text::format;
use crate::text::table;

/// A value scaled in the entry's unit (`n/a` without one).
fn value_text(e: &Entry, v: Option<f64>) -> String {
    match (v, e.unit) {
        (Some(v), Some(u)) => format::scaled(v, u),
        (Some(v), None) => format::number(v),
        (None, _) => "n/a".into(),
    }
}

/// `1.220..1.400`, as `compare` prints a ratio's interval.
fn interval_text(ci: Option<[f64; 2]>) -> String {
    ci.map(|[lo, hi]| format!("{lo:.3}..{hi:.3}")).unwrap_or_else(|| "n/a".into())
}

/// What "worse" means for the entry's unit.
fn better_is(e: &Entry) -> &'static str {
    e.direction.unwrap_or(Direction::LowerIsBetter).as_str()
}

/// The sentence of an outlier: `node17: os.syscall 1.310x the fleet median
/// (1.220..1.400): worse, beyond the 2.00% noise band (lower-is-better)`.
pub fn sentence(fleet: &Fleet, e: &Entry) -> String {
    let mut s = format!(
        "{}: {} {} the fleet median ({}): {}, beyond the {} noise band ({})",
        fleet.hosts[e.host].name,
        e.row,
        e.ratio.map(format::speedup).unwrap_or_else(|| "n/a".into()),
        interval_text(e.ratio_ci95),
        e.standing.as_str(),
        format::percent(fleet.band),
        better_is(e),
    );
    if let Some(d) = &e.disturbed {
        s.push_str(&format!("; but {d}: the machine was busy, not necessarily slow"));
    }
    if e.cut {
        s.push_str("; cut short of its planned trials");
    }
    s
}

/// The most outliers the first screen names one by one; the tables hold
/// every one.
pub const SENTENCES: usize = 20;

/// The standing as a table shows it, toned; a row from disturbed trials
/// or cut short says so instead of a plain verdict.
fn standing_line(e: &Entry) -> Line {
    if matches!(e.standing, Standing::Worse | Standing::Better | Standing::InBand) && (e.disturbed.is_some() || e.cut) {
        let mut why = Vec::new();
        if let Some(d) = &e.disturbed {
            why.push(d.clone());
        }
        if e.cut {
            why.push("cut short of its planned trials".to_string());
        }
        return Line::new().toned(Tone::Warn, format!("{} ({})", e.standing_text(), why.join("; ")));
    }
    match &e.standing {
        Standing::Worse => Line::new().toned(Tone::Bad, "worse"),
        Standing::Better => Line::new().toned(Tone::Good, "better"),
        Standing::InBand => Line::new().toned(Tone::Dim, "in band"),
        Standing::NoInterval(why) => Line::new().toned(Tone::Warn, format!("no interval: {why}")),
        Standing::Differs(what) => Line::new().toned(Tone::Warn, format!("different parameters: {what}")),
        Standing::NotOk(why) => Line::new().toned(Tone::Bad, why.clone()),
        Standing::Skipped(why) => Line::from(format!("skipped: {why}")),
        Standing::Missing(why) => Line::new().toned(Tone::Warn, format!("missing: {why}")),
    }
}

/// The count line: hosts, groups, outliers, rows not ok.
fn counts(fleet: &Fleet) -> String {
    let n = fleet.entries.len();
    let worse = fleet.entries.iter().filter(|e| e.standing == Standing::Worse).count();
    let better = fleet.entries.iter().filter(|e| e.standing == Standing::Better).count();
    let (skipped, not_ok) = (fleet.skipped().count(), fleet.not_ok().count());
    let no_interval = fleet.entries.iter().filter(|e| matches!(e.standing, Standing::NoInterval(_))).count();
    let differs = fleet.entries.iter().filter(|e| matches!(e.standing, Standing::Differs(_))).count();
    let judged = |e: &&Entry| matches!(e.standing, Standing::Worse | Standing::Better | Standing::InBand);
    let disturbed = fleet.entries.iter().filter(judged).filter(|e| e.disturbed.is_some()).count();
    let cut = fleet.entries.iter().filter(judged).filter(|e| e.cut).count();
    let mut s = format!(
        "{} in {}; {} of {} beyond the {} noise band ({worse} worse, {better} better)",
        format::counted(fleet.hosts.len(), "host", "hosts"),
        format::counted(fleet.groups.len(), "kind of machine", "kinds of machine"),
        worse + better,
        format::counted(n, "host row", "host rows"),
        format::percent(fleet.band),
    );
    if not_ok > 0 {
        s.push_str(&format!("; {not_ok} not ok or missing"));
    }
    if skipped > 0 {
        s.push_str(&format!("; {skipped} skipped (not failures)"));
    }
    if no_interval > 0 {
        s.push_str(&format!("; {no_interval} without an interval"));
    }
    if differs > 0 {
        s.push_str(&format!("; {differs} measured with other parameters"));
    }
    if disturbed > 0 {
        s.push_str(&format!("; {disturbed} from disturbed trials (busy machines: neither plainly in band nor plainly outliers)"));
    }
    if cut > 0 {
        s.push_str(&format!("; {cut} cut short of their planned trials"));
    }
    s.push('.');
    s
}

/// Which submissions the hosts' runs belong to: `3 hosts of submission
/// X.` when one, a warning naming each submission's hosts when several
/// (runs not made together: the hosts' states may differ), nothing when
/// no run belongs to one.
fn submissions(fleet: &Fleet) -> Option<Block> {
    let subs = fleet.submissions();
    match subs.as_slice() {
        [(None, _)] => None,
        [(Some(s), hosts)] => Some(Block::paragraph(format!("{} of submission {s}.", format::counted(hosts.len(), "host", "hosts")))),
        _ => {
            let parts: Vec<Line> = subs
                .iter()
                .map(|(s, hosts)| {
                    let names: Vec<&str> = hosts.iter().map(|&h| fleet.hosts[h].name.as_str()).collect();
                    let of = s.map_or_else(|| "of no submission".to_string(), |s| format!("of submission {s}"));
                    Line::from(format!("{} {of}: {}", format::counted(hosts.len(), "host", "hosts"), names.join(", ")))
                })
                .collect();
            let named = subs.iter().filter(|(s, _)| s.is_some()).count();
            let what = match (named, subs.len() > named) {
                (1, _) => "one submission with runs of none".to_string(),
                (n, false) => format!("{n} submissions"),
                (n, true) => format!("{n} submissions and runs of none"),
            };
            Some(Block::Compact(vec![
                Block::Warning(Line::from(format!("the runs mix {what}: they were not all made together"))),
                Block::List(parts),
            ]))
        }
    }
}

/// The fleet as a document: the counts and the outliers' sentences first
/// (one screen), the rows that are not ok, the rows skipped (one line per
/// row and reason, with its hosts), then one table per kind of machine.
pub fn document(fleet: &Fleet) -> Document {
    parts(fleet).0
}

/// [`document`], and where a page puts its chart: after the counts, before
/// the outliers' sentences, the warnings and the lists of rows not measured.
fn parts(fleet: &Fleet) -> (Document, usize) {
    let mut blocks = vec![
        Block::heading(1, format!("Fleet of {}", format::counted(fleet.hosts.len(), "host", "hosts"))),
        Block::paragraph(counts(fleet)),
    ];
    let chart_at = blocks.len();
    let mut sentences: Vec<Line> = fleet.outliers().take(SENTENCES).map(|e| Line::from(sentence(fleet, e))).collect();
    let more = fleet.outliers().count().saturating_sub(SENTENCES);
    if more > 0 {
        sentences.push(Line::from(format!("... and {} (see the tables)", format::counted(more, "more outlier", "more outliers"))));
    }
    if sentences.is_empty() {
        blocks.push(Block::paragraph(format!("No host lies beyond the {} noise band in any row.", format::percent(fleet.band))));
    } else {
        blocks.push(Block::Compact(vec![Block::paragraph("Outliers, farthest first:"), Block::List(sentences)]));
    }
    blocks.extend(submissions(fleet));
    for n in &fleet.naming {
        blocks.push(Block::paragraph(format!("{n}.")));
    }
    if fleet.groups.len() > 1 {
        blocks.push(Block::Warning(Line::from(format!(
            "the hosts are of {} kinds of machine (CPU, memory, kernel): each host is set against the median of its own kind",
            fleet.groups.len()
        ))));
    }
    let states: Vec<Line> = fleet.hosts.iter().filter_map(|h| h.state.as_ref().map(|s| Line::from(format!("{}: {s}", h.name)))).collect();
    if !states.is_empty() {
        blocks.push(Block::Warning(Line::from(format!(
            "{} of {} did not run whole on a quiet machine: their rows are marked, and a fleet median made of busy hosts is a busy fleet's",
            states.len(),
            format::counted(fleet.hosts.len(), "host", "hosts")
        ))));
        blocks.push(Block::List(states));
    }
    // A skip (the host cannot run the row) is no failure: it is listed apart,
    // never under "Not ok".
    let not_ok: Vec<Line> = fleet
        .not_ok()
        .map(|e| {
            let why = match &e.standing {
                Standing::NotOk(why) => why.clone(),
                Standing::Missing(why) => format!("missing: {why}"),
                _ => String::new(),
            };
            Line::from(format!("{}: {}: {why}", fleet.hosts[e.host].name, e.row))
        })
        .collect();
    // One line per row and reason skipped, naming its hosts.
    let mut skips: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for e in fleet.skipped() {
        let (Standing::Skipped(why), host) = (&e.standing, fleet.hosts[e.host].name.as_str()) else { continue };
        match skips.iter_mut().find(|(row, w, _)| *row == e.row && w == why) {
            Some((_, _, hosts)) => hosts.push(host),
            None => skips.push((&e.row, why, vec![host])),
        }
    }
    if !not_ok.is_empty() {
        blocks.push(Block::Compact(vec![Block::paragraph("Not ok:"), Block::List(not_ok)]));
    }
    if !skips.is_empty() {
        let every = fleet.hosts.len();
        let lines = skips
            .into_iter()
            .map(|(row, why, hosts)| {
                let on = if hosts.len() == every && every > 1 { "every host".to_string() } else { hosts.join(", ") };
                Line::from(format!("{row}: {why} ({on})"))
            })
            .collect();
        blocks.push(Block::Compact(vec![Block::paragraph("Skipped (not failures):"), Block::List(lines)]));
    }
    for (g, group) in fleet.groups.iter().enumerate() {
        let mut heading = if fleet.groups.len() > 1 { format!("Machine {}: {}", g + 1, group.title) } else { group.title.clone() };
        if !group.differs.is_empty() {
            heading.push_str(&format!(" (unlike machine 1: {})", group.differs.join(", ")));
        }
        blocks.push(Block::heading(2, heading));
        let mut t = Table::new(&[
            ("Row", Align::Left),
            ("Host", Align::Left),
            ("Median", Align::Right),
            ("Fleet median", Align::Right),
            ("× fleet", Align::Right),
            ("95% interval", Align::Right),
            ("Trials", Align::Right),
            ("Standing", Align::Left),
        ])
        // A narrow terminal keeps the standing longest.
        .dropping(&[6, 3, 5, 2, 4]);
        for e in fleet.entries.iter().filter(|e| fleet.hosts[e.host].group == g) {
            t.push_row(vec![
                Line::from(e.row.clone()),
                Line::from(fleet.hosts[e.host].name.clone()),
                Line::from(value_text(e, e.median)),
                Line::from(value_text(e, e.fleet_median)),
                Line::from(e.ratio.map(format::speedup).unwrap_or_else(|| "n/a".into())),
                Line::from(interval_text(e.ratio_ci95)),
                Line::from(e.trials.to_string()),
                standing_line(e),
            ]);
        }
        blocks.push(Block::Table(t));
        let hosts: Vec<String> = group.hosts.iter().map(|&h| format!("{} ({})", fleet.hosts[h].name, fleet.hosts[h].run)).collect();
        blocks.push(Block::paragraph(format!("Hosts: {}.", hosts.join(", "))));
    }
    (Document { title: "proofbench fleet".into(), blocks }, chart_at)
}

/// The page of the fleet (`--html FILE`): the document with the heat map
/// of every host's rows against the fleet after the outliers and counts
/// (before the warnings, the lists and the tables), each host's
/// name a link to its report (`reports[h]`: the href of host h's
/// report.html from where the page is, where it has one).
pub fn page(fleet: &Fleet, reports: &[Option<String>]) -> Document {
    let (mut doc, at) = parts(fleet);
    doc.blocks.insert(at, heat_map(fleet, reports));
    doc
}

/// Every host's rows against the fleet median, as a heat map.
fn heat_map(fleet: &Fleet, reports: &[Option<String>]) -> Block {
    use crate::text::plot::heatmap::{self, Cell, Host};
    let hosts: Vec<Host> =
        fleet.hosts.iter().enumerate().map(|(i, h)| Host { name: h.name.clone(), href: reports.get(i).cloned().flatten() }).collect();
    let rows: Vec<String> = fleet.entries.iter().map(|e| e.row.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let index: std::collections::HashMap<&str, usize> = rows.iter().enumerate().map(|(i, r)| (r.as_str(), i)).collect();
    let mut cells = vec![vec![Cell::default(); hosts.len()]; rows.len()];
    for e in &fleet.entries {
        let Some(&i) = index.get(e.row.as_str()) else { continue };
        let mut note = format!("{} on {}: {}", e.row, fleet.hosts[e.host].name, e.standing_text());
        if let Some(r) = e.ratio {
            note.push_str(&format!(", {} the fleet median ({})", format::speedup(r), interval_text(e.ratio_ci95)));
        }
        cells[i][e.host] = Cell {
            ratio: e.ratio,
            higher_is_worse: e.direction != Some(Direction::HigherIsBetter),
            outlier: e.standing.is_outlier(),
            note,
        };
    }
    Block::Chart(crate::text::document::Chart {
        caption: "Each host's median over the fleet median, per row: red the worse way, blue the better, framed where beyond the \
                  noise band; a host's name opens its run's report."
            .into(),
        svg: heatmap::chart("Each host against the fleet median", &hosts, &rows, &cells, fleet.band),
    })
}

/// The fleet as `--export FORMAT`: one line (or entry) per host and row.
pub fn export(fleet: &Fleet, fmt: ExportFormat) -> anyhow::Result<String> {
    let host = |e: &Entry| &fleet.hosts[e.host];
    let lo_hi = |e: &Entry| match (e.ratio_ci95, e.fleet_median) {
        (Some([lo, hi]), Some(f)) => (Some(lo * f), Some(hi * f)),
        _ => (None, None),
    };
    Ok(match fmt {
        ExportFormat::Csv => {
            let mut out = String::from(
                "host,hostname,run,machine,workload,axes,status,unit,direction,median,fleet_median,ratio,ratio_ci95_lo,ratio_ci95_hi,trials,standing,disturbed,cut,run_state,submission\n",
            );
            for e in &fleet.entries {
                let h = host(e);
                let fields = [
                    csv_field(&h.name),
                    csv_field(&h.hostname),
                    csv_field(&h.run),
                    (h.group + 1).to_string(),
                    csv_field(&e.workload),
                    csv_field(&e.axes),
                    e.status.clone(),
                    e.unit.map(|u| u.as_str().to_string()).unwrap_or_default(),
                    e.direction.map(|d| d.as_str().to_string()).unwrap_or_default(),
                    opt(e.median),
                    opt(e.fleet_median),
                    opt(e.ratio),
                    opt(e.ratio_ci95.map(|c| c[0])),
                    opt(e.ratio_ci95.map(|c| c[1])),
                    e.trials.to_string(),
                    e.standing.as_str().into(),
                    csv_field(e.disturbed.as_deref().unwrap_or_default()),
                    e.cut.to_string(),
                    csv_field(h.state.as_deref().unwrap_or_default()),
                    csv_field(h.submission.as_deref().unwrap_or_default()),
                ];
                out.push_str(&fields.join(","));
                out.push('\n');
            }
            out
        }
        ExportFormat::Json => {
            let rows: Vec<Value> = fleet
                .entries
                .iter()
                .map(|e| {
                    let h = host(e);
                    json!({
                        "host": h.name,
                        "hostname": h.hostname,
                        "run": h.run,
                        "machine": h.group + 1,
                        "machine_title": fleet.groups[h.group].title,
                        "workload": e.workload,
                        "axes": e.axes,
                        "status": e.status,
                        "unit": e.unit,
                        "direction": e.direction,
                        "median": e.median,
                        "fleet_median": e.fleet_median,
                        "ratio": e.ratio,
                        "ratio_ci95": e.ratio_ci95,
                        "trials": e.trials,
                        "standing": e.standing.as_str(),
                        "standing_text": e.standing_text(),
                        "why": match &e.standing {
                            Standing::NoInterval(w) | Standing::Differs(w) | Standing::NotOk(w) | Standing::Skipped(w) | Standing::Missing(w) => Some(w.clone()),
                            _ => None,
                        },
                        "disturbed": e.disturbed,
                        "cut": e.cut,
                        "run_state": h.state,
                        "submission": h.submission,
                    })
                })
                .collect();
            format!("{}\n", serde_json::to_string_pretty(&rows)?)
        }
        ExportFormat::Markdown => {
            let mut t = table::Grid::new(&[
                ("Host", table::Align::Left),
                ("Machine", table::Align::Right),
                ("Row", table::Align::Left),
                ("Status", table::Align::Left),
                ("Median", table::Align::Right),
                ("× fleet", table::Align::Right),
                ("95% interval", table::Align::Right),
                ("Standing", table::Align::Left),
            ]);
            for e in &fleet.entries {
                t.push(vec![
                    host(e).name.clone(),
                    (host(e).group + 1).to_string(),
                    e.row.clone(),
                    e.status.clone(),
                    value_text(e, e.median),
                    e.ratio.map(format::speedup).unwrap_or_else(|| "n/a".into()),
                    interval_text(e.ratio_ci95),
                    e.standing_text(),
                ]);
            }
            t.render()
        }
        ExportFormat::Bmf => {
            let mut out = Map::new();
            for e in fleet.entries.iter().filter(|e| e.median.is_some()) {
                let Some(unit) = e.unit else { continue };
                let mut m = Map::new();
                m.insert("value".into(), json!(e.median));
                if let (Some(lo), Some(hi)) = lo_hi(e)
                    && lo.is_finite()
                    && hi.is_finite()
                {
                    m.insert("lower_value".into(), json!(lo));
                    m.insert("upper_value".into(), json!(hi));
                }
                let mut measures = Map::new();
                measures.insert(measure(unit).into(), Value::Object(m));
                let row = if e.axes == "-" { e.workload.clone() } else { format!("{} ({})", e.workload, e.axes) };
                out.insert(format!("{row} @ {}", host(e).name), Value::Object(measures));
            }
            format!("{}\n", serde_json::to_string_pretty(&Value::Object(out))?)
        }
    })
}
