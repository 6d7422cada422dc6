//! The pinning-strategy table (RustFiber's strategy comparison): per system
//! label, other axes and worker count, the median under each strategy, its CI,
//! and its ratio to the `none` strategy (to the first one when `none` did not
//! run). Only `ok` rows enter it.

use std::collections::BTreeMap;

use crate::evidence::Row;
use crate::model::{Direction, Status, value_text};
use crate::topology::cpulist;

use crate::text::document::{Align, Table};
use crate::text::format;

/// The table, or `None` when the rows do not have more than one strategy.
pub fn table(rows: &[&Row]) -> Option<Table> {
    let ok: Vec<&Row> = rows.iter().copied().filter(|r| r.status == Status::Ok && r.cell.axes.iter().any(|a| a == "pin")).collect();
    let mut groups: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in &ok {
        let mode: Vec<String> =
            r.cell.axis_values().into_iter().filter(|(a, _)| a != "pin").map(|(a, v)| format!("{a}={}", value_text(&v))).collect();
        groups.entry(format!("{} ({})", r.cell.label, mode.join(", "))).or_default().push(r);
    }
    if groups.values().all(|g| g.len() < 2) {
        return None;
    }
    let mut t = Table::new(&[
        ("System / mode", Align::Left),
        ("Strategy", Align::Left),
        ("Median", Align::Right),
        ("95% CI", Align::Right),
        ("vs baseline", Align::Right),
        ("CPUs", Align::Left),
        ("Note", Align::Left),
    ]);
    for (name, g) in groups {
        let base = g.iter().find(|r| r.cell.placement.pin.as_str() == "none").or(g.first()).copied();
        for r in &g {
            let Some(median) = r.median() else { continue };
            let vs = match base.and_then(Row::median) {
                Some(b) if b > 0.0 && median > 0.0 => {
                    let ratio = match r.direction {
                        Direction::LowerIsBetter => b / median,
                        Direction::HigherIsBetter => median / b,
                    };
                    format!("{} ({})", format::speedup(ratio), base.map(|b| b.cell.placement.pin.as_str()).unwrap_or(""))
                }
                _ => "n/a".into(),
            };
            let cpus = r.cell.placement.cpus.as_ref().map(|c| cpulist::format(c)).unwrap_or_else(|| "-".into());
            t.push(vec![
                name.clone(),
                r.cell.placement.pin.as_str().into(),
                format::scaled(median, r.unit),
                super::facts::interval_text(r),
                vs,
                cpus,
                r.cell.placement.note.clone().unwrap_or_default(),
            ]);
        }
    }
    Some(t)
}
