//! The primitives table in the rvOS shape: one line per operation with the
//! iterations timed, their total time and the time per operation, plus the
//! median's 95% CI and MB/s for throughput rows; under it the wall and CPU
//! time the group's cells took. Only `ok` rows enter it.

use crate::evidence::Row;
use crate::model::{Status, TableShape, Unit, value_text};
use crate::stats;

use crate::text::document::{Align, Block, Line, Table};
use crate::text::format;

/// `ipc-rtt (pipe, same-cpu)`: the workload's name within its group and its
/// axis values.
fn benchmark_name(r: &Row) -> String {
    let name = r.cell.workload.strip_prefix(&format!("{}.", r.cell.group)).unwrap_or(&r.cell.workload).to_string();
    let axes: Vec<String> = r.cell.axis_values().iter().map(|(_, v)| value_text(v)).collect();
    if axes.is_empty() { name } else { format!("{name} ({})", axes.join(", ")) }
}

/// The table and the group's time, or `None` when no row of `rows` has the
/// primitive shape.
pub fn section(rows: &[&Row]) -> Option<Vec<Block>> {
    let prim: Vec<&Row> = rows.iter().copied().filter(|r| r.shape == TableShape::Primitive).collect();
    if prim.is_empty() {
        return None;
    }
    let mut t = Table::new(&[
        ("Benchmark", Align::Left),
        ("Iters", Align::Right),
        ("Total(us)", Align::Right),
        ("Per(ns)", Align::Right),
        ("95% CI", Align::Right),
        ("MB/s", Align::Right),
    ]);
    for r in prim.iter().filter(|r| r.status == Status::Ok) {
        let timed: Vec<_> = r.samples.iter().filter(|s| !s.warmup).collect();
        let iters: u64 = timed.iter().map(|s| s.ops).sum();
        let total_ns: u64 = timed.iter().map(|s| s.work_ns).sum();
        let per_op: Vec<f64> = timed.iter().filter(|s| s.ops > 0).map(|s| s.work_ns as f64 / s.ops as f64).collect();
        let Some(median) = r.median() else { continue };
        let mbps = if r.unit == Unit::MbPerSec { format::number(median) } else { String::new() };
        t.push(vec![
            benchmark_name(r),
            format::count(iters),
            format::number(total_ns as f64 / 1e3),
            format::number(stats::median(&per_op)),
            super::facts::interval_text(r),
            mbps,
        ]);
    }
    let wall_ms: f64 = prim.iter().map(|r| r.process.wall_ms).sum();
    let cpu_us: u64 = prim.iter().filter_map(|r| r.process.rusage).map(|u| u.user_us + u.sys_us).sum();
    let mut out = Vec::new();
    if !t.is_empty() {
        out.push(Block::Table(t));
        out.push(Block::paragraph(
            "Per(ns) is the median over timed samples of the work window divided by the operations; Iters and Total(us) sum the timed \
             samples; the 95% CI is that of the row's median over its trials.",
        ));
    }
    out.push(Block::Paragraph(vec![
        Line::from(format!("Wall time: {} us ({} cells, setup included)", format::number(wall_ms * 1e3), prim.len())),
        Line::from(format!("CPU time:  {} us", format::number(cpu_us as f64))),
    ]));
    Some(out)
}
