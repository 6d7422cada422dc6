//! Scaling tables in the capOS shape: per system label (and per value of the
//! other axes), the median at each worker count and the speedups 1-to-k;
//! for workloads with a total window, work and total speedups side by side;
//! after the speedups, Karp-Flatt's serial fraction at each count with its
//! interval, and under the tables a note for each series whose serial
//! fraction grows with the worker count. Only `ok` rows enter these tables.

use std::collections::BTreeMap;

use crate::evidence::Row;
use crate::model::{CpuClass, Direction, Status, value_text};
use crate::stats::LEVEL;
use crate::stats::karp_flatt::{self, Bounded};
use crate::topology::cpulist;

use crate::text::document::{Align, Block, Line, Table};
use crate::text::format;

/// One line of a scaling table: a system label and the other axes' values.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SeriesKey {
    label: String,
    mode: String,
}

struct Series<'a> {
    by_workers: BTreeMap<usize, &'a Row>,
}

/// Series in first-seen order, and every worker count with its class.
type Grouped<'a> = (Vec<(SeriesKey, Series<'a>)>, Vec<(usize, CpuClass)>);

/// A window of a row: its name and how to read its median with its trials'
/// medians.
type Window = (&'static str, fn(&Row) -> Option<Measured<'_>>);

/// A window's headline median and the medians of the trials it comes from.
#[derive(Clone, Copy)]
struct Measured<'a> {
    median: f64,
    trials: &'a [f64],
}

fn work(r: &Row) -> Option<Measured<'_>> {
    Some(Measured { median: r.median()?, trials: r.trial_medians() })
}

fn total(r: &Row) -> Option<Measured<'_>> {
    Some(Measured { median: r.total_median()?, trials: r.total_trial_medians() })
}

const WORK: Window = ("work", work);
const TOTAL: Window = ("total", total);

/// The ok rows of one workload that have a `workers` axis, grouped into series.
fn series<'a>(rows: &[&'a Row]) -> Grouped<'a> {
    let mut map: BTreeMap<SeriesKey, Series> = BTreeMap::new();
    let mut order: Vec<SeriesKey> = Vec::new();
    let mut counts: BTreeMap<usize, CpuClass> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == Status::Ok) {
        let Some(k) = r.cell.workers else { continue };
        let mode: Vec<String> =
            r.cell.axis_values().into_iter().filter(|(a, _)| a != "workers").map(|(a, v)| format!("{a}={}", value_text(&v))).collect();
        let key = SeriesKey { label: r.cell.label.clone(), mode: mode.join(", ") };
        if !map.contains_key(&key) {
            order.push(key.clone());
        }
        map.entry(key).or_insert_with(|| Series { by_workers: BTreeMap::new() }).by_workers.insert(k, *r);
        counts.entry(k).or_insert(r.cell.placement.class);
    }
    let series = order.into_iter().map(|k| {
        let s = map.remove(&k).expect("key from order");
        (k, s)
    });
    (series.collect(), counts.into_iter().collect())
}

fn count_header(k: usize, class: CpuClass) -> String {
    let base = if k == 1 { "1 worker".to_string() } else { format!("{k} workers") };
    match class {
        CpuClass::Physical => base,
        CpuClass::Smt => format!("{base} (smt)"),
        CpuClass::Oversubscribed => format!("{base} (oversubscribed)"),
    }
}

/// The speedup from `base` to `at_k` in direction `dir` (`1.934x`), or `n/a`.
pub(super) fn speedup(base: Option<f64>, at_k: Option<f64>, dir: Direction) -> String {
    match (base, at_k) {
        (Some(b), Some(k)) if b > 0.0 && k > 0.0 => format::speedup(match dir {
            Direction::LowerIsBetter => b / k,
            Direction::HigherIsBetter => k / b,
        }),
        _ => "n/a".into(),
    }
}

/// The speedup from `base` to `at_k` in direction `dir`, with the 95%
/// interval of the ratio of the two rows ([`crate::stats::ratio`]: Welch's
/// interval on the difference of their trials' mean log medians, as
/// `compare` judges two rows), inverted for a lower-is-better unit. No
/// interval when a row has fewer than two trials.
fn bounded_speedup(base: Option<Measured>, at_k: Option<Measured>, dir: Direction) -> Option<Bounded> {
    let (b, k) = (base?, at_k?);
    if !(b.median > 0.0 && k.median > 0.0) {
        return None;
    }
    let r = crate::stats::ratio(b.trials, k.trials, LEVEL);
    Some(match dir {
        Direction::LowerIsBetter => Bounded::new(b.median / k.median, r.map(|r| (1.0 / r.hi, 1.0 / r.lo))),
        Direction::HigherIsBetter => Bounded::new(k.median / b.median, r.map(|r| (r.lo, r.hi))),
    })
}

/// Karp-Flatt's serial fraction of the speedup from `base` to `at_k` at `p`
/// workers relative to the base count, with its interval.
fn serial_fraction(base: Option<Measured>, at_k: Option<Measured>, dir: Direction, p: f64) -> Option<Bounded> {
    bounded_speedup(base, at_k, dir).and_then(|s| karp_flatt::serial_fraction_of(s, p))
}

/// A serial fraction as a table shows it: `0.031 (0.012..0.052)`, or `n/a`.
fn serial_text(e: Option<Bounded>) -> String {
    e.map_or_else(|| "n/a".into(), |e| format::fraction_in(e.value, e.bounds))
}

fn system(key: &SeriesKey) -> String {
    if key.mode.is_empty() { key.label.clone() } else { format!("{} ({})", key.label, key.mode) }
}

/// The scaling tables of one workload's rows and the note under them, or
/// nothing when fewer than two worker counts are ok.
pub fn tables(rows: &[&Row]) -> Vec<Block> {
    let (series, counts) = series(rows);
    if counts.len() < 2 || series.is_empty() {
        return Vec::new();
    }
    let first = series[0].1.by_workers.values().next().expect("non-empty series");
    let (unit, dir) = (first.unit, first.direction);
    let has_total = rows.iter().any(|r| r.total_median().is_some());
    let base_k = counts[0].0;
    let speedup_counts: Vec<usize> = counts.iter().map(|c| c.0).filter(|&k| k != base_k).collect();
    let speedup_header = |k: usize| format!("{base_k}-to-{k}");
    // Karp-Flatt's p: the worker count relative to the base count (2 for
    // 1-to-2 and for 2-to-4), the base's time standing for one worker's.
    let relative = |k: usize| k as f64 / base_k as f64;
    let windows: &[Window] = if has_total { &[WORK, TOTAL] } else { &[WORK] };

    let mut out = Vec::new();
    // Medians (and, without a total window, the speedups in the same table).
    let mut headers = vec![("System".to_string(), Align::Left)];
    if has_total {
        headers.push(("Window".into(), Align::Left));
    }
    headers.extend(counts.iter().map(|&(k, c)| (format!("{} median", count_header(k, c)), Align::Right)));
    if !has_total {
        headers.extend(speedup_counts.iter().map(|&k| (format!("{} speedup", speedup_header(k)), Align::Right)));
        headers.extend(speedup_counts.iter().map(|&k| (format!("{} serial fraction", speedup_header(k)), Align::Right)));
    }
    let mut medians = Table::with_headers(headers);
    for (key, s) in &series {
        for (name, get) in windows {
            let mut line = vec![system(key)];
            if has_total {
                line.push(name.to_string());
            }
            for &(k, _) in &counts {
                line.push(
                    s.by_workers.get(&k).and_then(|r| get(r)).map(|v| format::scaled(v.median, unit)).unwrap_or_else(|| "n/a".into()),
                );
            }
            if !has_total {
                let base = s.by_workers.get(&base_k).and_then(|r| get(r));
                let at = |k: usize| s.by_workers.get(&k).and_then(|r| get(r));
                for &k in &speedup_counts {
                    line.push(speedup(base.map(|b| b.median), at(k).map(|v| v.median), dir));
                }
                for &k in &speedup_counts {
                    line.push(serial_text(serial_fraction(base, at(k), dir, relative(k))));
                }
            }
            medians.push(line);
        }
    }
    out.push(medians);

    if has_total {
        // The capOS thread-scale shape: work and total speedups side by side.
        let mut headers =
            vec![("System / mode".to_string(), Align::Left), ("Placement".into(), Align::Left), ("Trials".into(), Align::Right)];
        for &k in &speedup_counts {
            headers.push((format!("{} work", speedup_header(k)), Align::Right));
            headers.push((format!("{} total", speedup_header(k)), Align::Right));
        }
        for &k in &speedup_counts {
            headers.push((format!("{} work serial fraction", speedup_header(k)), Align::Right));
            headers.push((format!("{} total serial fraction", speedup_header(k)), Align::Right));
        }
        headers.push(("Notes".into(), Align::Left));
        let mut t = Table::with_headers(headers);
        for (key, s) in &series {
            let runs = s.by_workers.values().filter_map(|r| r.headline().map(|h| h.trials)).min().unwrap_or(0);
            let mut line = vec![system(key), placement(s), runs.to_string()];
            let base = s.by_workers.get(&base_k).copied();
            for &k in &speedup_counts {
                let at = s.by_workers.get(&k).copied();
                line.push(speedup(base.and_then(Row::median), at.and_then(Row::median), dir));
                line.push(speedup(base.and_then(Row::total_median), at.and_then(Row::total_median), dir));
            }
            for &k in &speedup_counts {
                let at = s.by_workers.get(&k).copied();
                for (_, get) in windows {
                    line.push(serial_text(serial_fraction(base.and_then(get), at.and_then(get), dir, relative(k))));
                }
            }
            line.push(notes(s));
            t.push(line);
        }
        out.push(t);
    }
    let mut out: Vec<Block> = out.into_iter().map(Block::Table).collect();

    // Serial fractions that grow with the worker count, over the counts
    // that fit on physical cores (an SMT sibling or a shared CPU is not one
    // more processor in Karp-Flatt's sense).
    let mut grown: Vec<Line> = Vec::new();
    for (key, s) in &series {
        for (name, get) in windows {
            let base = s.by_workers.get(&base_k).and_then(|r| get(r));
            let points: Vec<(usize, Bounded)> = counts
                .iter()
                .filter(|&&(k, class)| k != base_k && class == CpuClass::Physical)
                .filter_map(|&(k, _)| Some((k, serial_fraction(base, s.by_workers.get(&k).and_then(|r| get(r)), dir, relative(k))?)))
                .collect();
            let relative_points: Vec<(f64, Bounded)> = points.iter().map(|&(k, e)| (relative(k), e)).collect();
            if !karp_flatt::grows(&relative_points) {
                continue;
            }
            let ((k0, e0), (k1, e1)) = (points[0], points[points.len() - 1]);
            let window = if has_total { format!(", {name} window") } else { String::new() };
            grown.push(Line::from(format!(
                "{}{window}: the serial fraction grows with the worker count, from {} at {k0} workers to {} at {k1}, \
                 beyond their intervals: the loss is overhead (synchronisation, contention), not serial work.",
                system(key),
                format::fraction_in(e0.value, e0.bounds),
                format::fraction_in(e1.value, e1.bounds),
            )));
        }
    }
    out.extend(grown.into_iter().map(Block::paragraph));
    out
}

/// The pin strategy and the CPUs of the largest worker count.
fn placement(s: &Series) -> String {
    let Some(r) = s.by_workers.values().last() else { return String::new() };
    let p = &r.cell.placement;
    // A workload that places its own threads (hw.affinity's `pinned`) says
    // where in its details; the harness's --pin did not decide then.
    let own: Option<Vec<usize>> = r.details.get("pinned_cpus").and_then(|v| serde_json::from_value(v.clone()).ok());
    if let (None, Some(mut set)) = (&p.cpus, own) {
        set.sort_unstable();
        set.dedup();
        return format!("by the workload: CPUs {}", cpulist::format(&set));
    }
    match &p.cpus {
        None => format!("{} (scheduler decides)", p.pin.as_str()),
        Some(c) => {
            let mut set = c.clone();
            set.sort_unstable();
            set.dedup();
            format!("{}: CPUs {}", p.pin.as_str(), cpulist::format(&set))
        }
    }
}

/// SMT and oversubscribed counts, and what pinning degenerated to.
fn notes(s: &Series) -> String {
    let mut notes: Vec<String> = Vec::new();
    for (k, r) in &s.by_workers {
        let p = &r.cell.placement;
        if p.class != CpuClass::Physical {
            notes.push(format!("{k} workers: {}", p.class.as_str()));
        }
        for n in p.note.iter().flat_map(|n| n.split("; ")) {
            if !notes.iter().any(|x| x == n) {
                notes.push(n.to_string());
            }
        }
    }
    notes.join("; ")
}
