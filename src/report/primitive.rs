//! The primitives table in the rvOS shape: one line per operation with the
//! iterations timed, their total time and the row's headline as time per
//! operation with that figure's 95% CI, and MB/s for throughput rows; under it the wall and CPU
//! time the group's cells took. Only `ok` rows enter it.

use crate::evidence::Row;
use crate::model::{Status, TableShape, Unit, value_text};

use crate::text::document::{Align, Block, Line, Table};
use crate::text::format;

/// `ipc-rtt (pipe, same-cpu)`: the workload's name within its group and its
/// axis values.
fn benchmark_name(r: &Row) -> String {
    let name = r.cell.workload.strip_prefix(&format!("{}.", r.cell.group)).unwrap_or(&r.cell.workload).to_string();
    let axes: Vec<String> = r.cell.axis_values().iter().map(|(_, v)| value_text(v)).collect();
    if axes.is_empty() { name } else { format!("{name} ({})", axes.join(", ")) }
}

/// The nanoseconds per operation that a headline value `v` of row `r`
/// stands for: the headline itself for ns/op rows, its inverse for rates
/// (with the bytes or iterations per operation the row's timed samples
/// did, which its workloads keep constant), `None` for a unit that says
/// nothing of operations. Monotone in `v`, so it maps the headline's
/// interval onto this figure's own.
fn per_op_ns(r: &Row, v: f64) -> Option<f64> {
    let timed = || r.samples.iter().filter(|s| !s.warmup);
    let ops: u64 = timed().map(|s| s.ops).sum();
    let per = |x: u64| (ops > 0).then(|| x as f64 / ops as f64);
    let ns = match r.unit {
        Unit::NsPerOp => v,
        Unit::Ns => v * per(timed().map(|s| s.iters).sum())?,
        Unit::OpsPerSec => 1e9 / v,
        Unit::MopsPerSec => 1e3 / v,
        Unit::MbPerSec => per(timed().map(|s| s.bytes).sum())? * 1e3 / v,
        Unit::Cycles => return None,
    };
    ns.is_finite().then_some(ns)
}

/// The table and the group's time, or `None` when no row of `rows` has the
/// primitive shape. Per(ns) and MB/s are the row's headline (the median of
/// its trial medians), the interval that of Per(ns); Iters
/// and Total(us) sum every timed sample, as rvOS's table does.
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
        let Some(median) = r.median() else { continue };
        let per_op = per_op_ns(r, median);
        // The interval of the figure shown: Per(ns)'s own (a rate's,
        // mirrored: the time per operation of its bounds).
        let interval = match (per_op, r.interval()) {
            (Some(p), Some((lo, hi))) => match (per_op_ns(r, lo), per_op_ns(r, hi)) {
                (Some(a), Some(b)) => format::ci_relative(a.min(b), a.max(b), p),
                _ => super::facts::interval_text(r),
            },
            _ => super::facts::interval_text(r),
        };
        let mbps = if r.unit == Unit::MbPerSec { format::number(median) } else { String::new() };
        t.push(vec![
            benchmark_name(r),
            format::count(iters),
            format::number(total_ns as f64 / 1e3),
            per_op.map_or_else(|| "n/a".into(), format::number),
            interval,
            mbps,
        ]);
    }
    let wall_ms: f64 = prim.iter().map(|r| r.process.wall_ms).sum();
    let cpu_us: u64 = prim.iter().filter_map(|r| r.process.rusage).map(|u| u.user_us + u.sys_us).sum();
    let mut out = Vec::new();
    if !t.is_empty() {
        out.push(Block::Table(t));
        out.push(Block::paragraph(
            "Per(ns) is the row's median over its trials (the median of the trial medians, as in every table of this report) per \
             operation, with that figure's 95% interval over trials; for a rate (ops/s, MB/s) it is the rate's median as time per \
             operation, the interval its bounds' times. MB/s is a throughput row's median. Iters and Total(us) sum every timed sample of every trial.",
        ));
    }
    let cells = if prim.len() == 1 { "1 cell".to_string() } else { format!("{} cells", prim.len()) };
    out.push(Block::Paragraph(vec![
        Line::from(format!("Wall time: {} ({cells}, setup included)", format::seconds(wall_ms / 1e3))),
        Line::from(format!("CPU time:  {}", format::seconds(cpu_us as f64 / 1e6))),
    ]));
    Some(out)
}
