//! Statistics tables in the shape of HAKMEM's benchmark report: per row the
//! median and 95% interval over trials, then the full descriptive statistics
//! of its samples pooled (n, pooled mean and median, stddev, CV, min, max,
//! range, outliers, variance assessment); per workload with an `allocator`
//! axis each allocator against the system's; per workload with an
//! `iterations` axis the cold-start factor (the longest run's throughput over
//! the shortest's); per group the run-to-run variance of every row, sorted
//! by CV. Only `ok` rows enter. Pure: rows in, document blocks out.

use std::collections::BTreeMap;

use crate::evidence::Row;
use crate::model::{Direction, Status, value_text};
use crate::stats::{LEVEL, ratio};

use crate::text::document::{Align, Block, Table};
use crate::text::format;

/// A cold-start factor above this says the shortest run is not steady state.
pub const COLD_START_WARNING: f64 = 1.10;

fn ok<'a>(rows: &[&'a Row]) -> Vec<&'a Row> {
    rows.iter().copied().filter(|r| r.status == Status::Ok && r.stats.is_some()).collect()
}

/// Rows grouped by system label and every axis but `axis`, the groups in
/// the order first seen.
type Series<'a> = (Vec<(String, String)>, BTreeMap<(String, String), Vec<&'a Row>>);

fn series_by<'a>(rows: impl Iterator<Item = &'a Row>, axis: &str) -> Series<'a> {
    let mut series: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for r in rows {
        let key = (r.cell.label.clone(), axes_except(r, axis));
        if !series.contains_key(&key) {
            order.push(key.clone());
        }
        series.entry(key).or_default().push(r);
    }
    (order, series)
}

/// The axis values of a row except `skip`, as `a=1, b=2` (or `-`).
fn axes_except(r: &Row, skip: &str) -> String {
    let v: Vec<String> =
        r.cell.axis_values().into_iter().filter(|(a, _)| a != skip).map(|(a, v)| format!("{a}={}", value_text(&v))).collect();
    if v.is_empty() { "-".into() } else { v.join(", ") }
}

/// The extra tables of one workload's rows (all of one workload): the
/// statistics table, then allocator-vs-system and cold-start tables where the
/// rows have those axes. Empty when no row is ok.
pub fn workload_tables(rows: &[&Row]) -> Vec<Block> {
    [statistics(rows), allocator_vs_system(rows), cold_start(rows)].into_iter().flatten().flatten().collect()
}

/// Every ok row's descriptive statistics of its timed samples.
pub fn statistics(rows: &[&Row]) -> Option<Vec<Block>> {
    let rows = ok(rows);
    let first = rows.first()?;
    let mut t = Table::new(&[
        ("Row", Align::Left),
        ("Median", Align::Right),
        ("95% CI", Align::Right),
        ("Trials", Align::Right),
        ("n", Align::Right),
        ("Pooled mean", Align::Right),
        ("Pooled median", Align::Right),
        ("Stddev", Align::Right),
        ("CV", Align::Right),
        ("Min", Align::Right),
        ("Max", Align::Right),
        ("Range (% of mean)", Align::Right),
        ("Outliers 2s", Align::Right),
        ("Outliers mz", Align::Right),
        ("Variance", Align::Left),
    ]);
    let mut small = false;
    for r in &rows {
        let s = &r.stats.as_ref().expect("ok rows have stats").work;
        small |= s.outliers_2sigma.is_none();
        t.push(vec![
            super::facts::row_label(r),
            r.median().map_or_else(|| "n/a".into(), format::number),
            r.interval()
                .map_or_else(|| super::facts::interval_text(r), |(lo, hi)| format!("{} .. {}", format::number(lo), format::number(hi))),
            super::facts::trials_text(r),
            s.n.to_string(),
            format::number(s.mean),
            format::number(s.median),
            format::number(s.stddev),
            s.cv.map_or_else(|| "n/a".into(), format::percent),
            format::number(s.min),
            format::number(s.max),
            format!("{} ({:.1}%)", format::number(s.range), s.range_pct_of_mean),
            s.outliers_2sigma.as_ref().map_or_else(|| "n/a (n <= 5)".into(), |o| o.len().to_string()),
            s.outliers_modified_z.len().to_string(),
            s.variance.as_str().into(),
        ]);
    }
    let mut out = vec![
        Block::paragraph(format!(
            "Median and 95% CI are the row's: the median of its trial medians and that median's interval over trials. The other \
             columns pool the timed samples of every trial ({}; Pooled mean and Pooled median are of those samples, never paired \
             with the interval; stddev with n - 1; outliers beyond 2 stddev and by modified z > 3.5, reported, never removed):",
            first.unit.as_str()
        )),
        Block::Table(t),
    ];
    if small {
        out.push(Block::paragraph(
            "The 2-sigma rule cannot mark any of 5 values or fewer (no value of n lies more than (n - 1) / sqrt(n) standard \
             deviations from their mean, 1.79 at n = 5): n/a there; the modified z-score can.",
        ));
    }
    Some(out)
}

/// Each allocator's median against the `system` allocator's, per value of the
/// other axes: the ratio ("x of system", above 1 = faster than system) with a
/// 95% interval from the trials of both rows.
pub fn allocator_vs_system(rows: &[&Row]) -> Option<Vec<Block>> {
    let rows = ok(rows);
    if !rows.iter().any(|r| r.cell.axes.iter().any(|a| a == "allocator")) {
        return None;
    }
    let (order, series) = series_by(rows.iter().copied(), "allocator");
    let mut t = Table::new(&[
        ("System", Align::Left),
        ("Other axes", Align::Left),
        ("Allocator", Align::Left),
        ("Median", Align::Right),
        ("vs system", Align::Right),
        ("95% CI of the ratio", Align::Right),
    ]);
    for key in order {
        let members = &series[&key];
        let Some(base) = members.iter().find(|r| r.cell.params.get("allocator").and_then(|v| v.as_str()) == Some("system")) else {
            continue;
        };
        if members.len() < 2 {
            continue;
        }
        let Some(base_median) = base.median() else { continue };
        for r in members {
            let name = r.cell.params.get("allocator").map(value_text).unwrap_or_default();
            let Some(median) = r.median() else { continue };
            let interval = ratio(base.trial_medians(), r.trial_medians(), LEVEL).map(|x| (x.lo, x.hi));
            // Faster than system reads above 1 whatever the unit's direction.
            let (faster, bounds) = match r.direction {
                Direction::HigherIsBetter => (median / base_median, interval),
                Direction::LowerIsBetter => (base_median / median, interval.map(|(lo, hi)| (1.0 / hi, 1.0 / lo))),
            };
            t.push(vec![
                key.0.clone(),
                key.1.clone(),
                name,
                format::scaled(median, r.unit),
                format::speedup(faster),
                match bounds {
                    _ if std::ptr::eq(*r, *base) => "-".into(),
                    Some((lo, hi)) => format!("{} .. {}", format::speedup(lo), format::speedup(hi)),
                    None => "n/a (no interval)".into(),
                },
            ]);
        }
    }
    if t.is_empty() {
        return None;
    }
    Some(vec![Block::paragraph("Allocator vs system (ratio of medians; above 1 = faster than the system allocator):"), Block::Table(t)])
}

/// Per series (the other axes), the throughput at the longest `iterations`
/// over that at the shortest: HAKMEM's "cold-start factor". A factor well
/// above 1 says the short runs measure start-up, not the steady state.
pub fn cold_start(rows: &[&Row]) -> Option<Vec<Block>> {
    let rows = ok(rows);
    let iters = |r: &Row| r.cell.params.get("iterations").and_then(|v| v.as_u64());
    if !rows.iter().any(|r| r.cell.axes.iter().any(|a| a == "iterations")) {
        return None;
    }
    let (order, series) = series_by(rows.iter().copied().filter(|r| iters(r).is_some()), "iterations");
    let mut t = Table::new(&[
        ("System", Align::Left),
        ("Other axes", Align::Left),
        ("Shortest run", Align::Right),
        ("Median", Align::Right),
        ("First sample", Align::Right),
        ("Longest run", Align::Right),
        ("Median", Align::Right),
        ("Cold-start factor", Align::Right),
    ]);
    let (mut warn, mut slower) = (false, false);
    for key in order {
        let members = &series[&key];
        let (Some(short), Some(long)) = (members.iter().min_by_key(|r| iters(r)), members.iter().max_by_key(|r| iters(r))) else {
            continue;
        };
        if iters(short) == iters(long) {
            continue;
        }
        let (Some(ms), Some(ml)) = (short.median(), long.median()) else { continue };
        let factor = match short.direction {
            Direction::HigherIsBetter => ml / ms,
            Direction::LowerIsBetter => ms / ml,
        };
        warn |= factor > COLD_START_WARNING;
        slower |= factor < 1.0 / COLD_START_WARNING;
        let first = short.stats.as_ref().and_then(|s| s.cold.as_ref()).map(|c| format::scaled(c.first_value, short.unit));
        t.push(vec![
            key.0.clone(),
            key.1.clone(),
            format!("{} iterations", format::count(iters(short).unwrap_or(0))),
            format::scaled(ms, short.unit),
            first.unwrap_or_else(|| "n/a".into()),
            format!("{} iterations", format::count(iters(long).unwrap_or(0))),
            format::scaled(ml, long.unit),
            format::speedup(factor),
        ]);
    }
    if t.is_empty() {
        return None;
    }
    let mut out = vec![
        Block::paragraph(
            "Cold start vs steady state (the longest run's median throughput over the shortest's; the first sample is the \
             process's first run of the shortest):",
        ),
        Block::Table(t),
    ];
    if warn {
        out.push(Block::paragraph(format!(
            "A factor above {COLD_START_WARNING:.2}x: the shortest runs include start-up costs (first touches of memory, \
             allocator and cache warm-up) and do not measure the steady state."
        )));
    }
    if slower {
        out.push(Block::paragraph(format!(
            "A factor below {:.2}x: the longest runs were slower. Longer windows are more often preempted when the \
             machine is shared or loaded (see the load average in the header), and a working set that grows with the run \
             slows it too.",
            1.0 / COLD_START_WARNING
        )));
    }
    Some(out)
}

/// Every ok row of a group, sorted by CV (most stable first), with its
/// variance assessment: HAKMEM's "run-to-run variance" table.
pub fn variance_table(rows: &[&Row]) -> Option<Vec<Block>> {
    let mut rows = ok(rows);
    if rows.is_empty() {
        return None;
    }
    let cv = |r: &Row| r.stats.as_ref().and_then(|s| s.work.cv).map_or(f64::NAN, f64::abs);
    rows.sort_by(|a, b| cv(a).total_cmp(&cv(b)));
    let mut t = Table::new(&[("Row", Align::Left), ("n", Align::Right), ("CV", Align::Right), ("Assessment", Align::Left)]);
    for r in rows {
        let s = &r.stats.as_ref().expect("ok rows have stats").work;
        t.push(vec![
            r.cell.display_name(),
            s.n.to_string(),
            s.cv.map_or_else(|| "n/a".into(), format::percent),
            s.variance.as_str().into(),
        ]);
    }
    Some(vec![
        Block::heading(3, "Run-to-run variance"),
        Block::paragraph(
            "Every ok row by the coefficient of variation of its samples, every trial together (outstanding < 1%, good < 5%, \
             acceptable < 10%, noisy otherwise; undefined when the mean is 0):",
        ),
        Block::Table(t),
    ])
}

#[cfg(test)]
mod tests;
