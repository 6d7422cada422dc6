//! The HAKMEM-shape tables on synthetic rows: known samples in, known figures out.

use serde_json::{Value, json};

use super::*;
use crate::evidence::{RowStats, SampleRecord};
use crate::model::{CpuClass, Unit};
use crate::report::tests::fake_row;

/// HAKMEM's ten runs of random-mixed 256 B, 100K iterations (ops/s).
const HAKMEM_RUNS: [f64; 10] = [
    15_210_985.0,
    15_456_889.0,
    15_012_939.0,
    17_126_082.0,
    17_379_136.0,
    17_857_934.0,
    16_785_979.0,
    16_599_301.0,
    15_534_451.0,
    15_701_903.0,
];

/// A row of workload `w.x` (the report tests' `fake_row`) with axes `axes`
/// (in order) and these timed values, one per trial, each after one warmup
/// sample of `first`.
fn row(axes: &[(&str, Value)], first: f64, values: &[f64], unit: Unit, status: Status) -> Row {
    let mut r = fake_row(0, CpuClass::Physical, values, None, status, unit);
    r.samples = r
        .samples
        .iter()
        .flat_map(|s| {
            [SampleRecord { warmup: true, value: first, work_ns: 1, index: 0, ..s.clone() }, SampleRecord { index: 1, ..s.clone() }]
        })
        .collect();
    r.stats = RowStats::of(&r.samples, crate::stats::DEFAULT_NOISE);
    let c = &mut r.cell;
    c.row_id = axes.iter().map(|(a, v)| format!("{a}={}", value_text(v))).collect::<Vec<_>>().join("-");
    c.params = axes.iter().map(|(a, v)| (a.to_string(), v.clone())).collect();
    c.axes = axes.iter().map(|(a, _)| a.to_string()).collect();
    c.workers = None;
    c.seed = 7;
    r
}

fn refs(rows: &[Row]) -> Vec<&Row> {
    rows.iter().collect()
}

/// The tables as report.md has them.
fn md(blocks: Vec<Block>) -> String {
    crate::text::document::markdown::render(&blocks)
}

fn statistics(rows: &[&Row]) -> Option<String> {
    super::statistics(rows).map(md)
}

fn allocator_vs_system(rows: &[&Row]) -> Option<String> {
    super::allocator_vs_system(rows).map(md)
}

fn cold_start(rows: &[&Row]) -> Option<String> {
    super::cold_start(rows).map(md)
}

fn variance_table(rows: &[&Row]) -> Option<String> {
    super::variance_table(rows).map(md)
}

fn workload_tables(rows: &[&Row]) -> String {
    md(super::workload_tables(rows))
}

#[test]
fn the_statistics_table_gives_hakmems_figures_for_its_runs() {
    let rows = [row(&[("size", json!("256"))], 16e6, &HAKMEM_RUNS, Unit::OpsPerSec, Status::Ok)];
    let t = statistics(&refs(&rows)).unwrap();
    // HAKMEM: mean 16,266,559, median 16,150,602, min 15,012,939, max 17,857,934,
    // range 2,844,995 (17.5%). Its stddev 953,193 (CV 5.86%) divides by n; ours,
    // with n - 1, is 1,004,754 (CV 6.18%; Python's statistics.stdev agrees).
    for want in ["16,266,560", "16,150,602", "1,004,754", "6.18%", "15,012,939", "17,857,934", "2,844,995 (17.5%)", "acceptable"] {
        assert!(t.contains(want), "{want} missing:\n{t}");
    }
    assert!(t.contains("|     10 |  10 |"), "ten trials of one sample each:\n{t}");
    assert!(t.contains("| size=256 | 16,150,602 | 15,336,434 .. 17,007,992 |"), "the headline and its interval first:\n{t}");
    // Over the ten runs as trials: exp(log median(x) -+ t.ppf(0.975, 9) f(10) std(log x, ddof=1) / sqrt(10)),
    // f(10) = 1.1761 (MEDIAN_FACTOR of src/stats/reference.py), scipy 1.17.1.
    assert!(t.contains("15,336,434 .. 17,007,992"), "{t}");
    assert!(t.contains("(ops/s;"), "{t}");
}

#[test]
fn rows_that_are_not_ok_stay_out_of_every_table() {
    let rows = [
        row(&[("allocator", json!("system"))], 1.0, &[100.0, 101.0], Unit::OpsPerSec, Status::Ok),
        row(&[("allocator", json!("mimalloc"))], 1.0, &[999.0, 999.0], Unit::OpsPerSec, Status::Invalid),
    ];
    let all = workload_tables(&refs(&rows)) + &variance_table(&refs(&rows)).unwrap();
    assert!(!all.contains("999") && !all.contains("mimalloc"), "{all}");
    assert_eq!(statistics(&refs(&rows[1..])), None);
}

#[test]
fn allocators_are_compared_with_system_within_each_series() {
    let rows = [
        row(&[("size", json!("256")), ("allocator", json!("system"))], 1.0, &[100.0, 101.0, 99.0], Unit::OpsPerSec, Status::Ok),
        row(&[("size", json!("256")), ("allocator", json!("mimalloc"))], 1.0, &[150.0, 153.0, 147.0], Unit::OpsPerSec, Status::Ok),
        row(&[("size", json!("512")), ("allocator", json!("system"))], 1.0, &[80.0, 80.0, 80.0], Unit::OpsPerSec, Status::Ok),
        row(&[("size", json!("512")), ("allocator", json!("jemalloc"))], 1.0, &[40.0, 40.0, 40.0], Unit::OpsPerSec, Status::Ok),
    ];
    let t = allocator_vs_system(&refs(&rows)).unwrap();
    // Welch's interval centred on the log of the ratio of medians, each side's
    // variance that of a median (f(3)^2 s^2 / 3), scipy 1.17.1: 1.4294 .. 1.5741.
    assert!(t.contains("| box    | size=256   | mimalloc  |   150 ops/s |    1.500x |    1.429x .. 1.574x |"), "{t}");
    assert!(
        t.contains("| box    | size=512   | jemalloc  | 40.00 ops/s |    0.500x |    0.500x .. 0.500x |"),
        "trials without spread: the exact ratio\n{t}"
    );
    assert!(t.contains("| box    | size=256   | system    |   100 ops/s |    1.000x |                   - |"), "{t}");
    // A lower-is-better unit: half the time is twice as fast (interval 1.898 .. 2.108 by scipy).
    let ns = [
        row(&[("allocator", json!("system"))], 1.0, &[10.0, 10.2, 9.8], Unit::NsPerOp, Status::Ok),
        row(&[("allocator", json!("jemalloc"))], 1.0, &[5.0, 5.1, 4.9], Unit::NsPerOp, Status::Ok),
    ];
    let t = allocator_vs_system(&refs(&ns)).unwrap();
    assert!(t.contains("2.000x |    1.898x .. 2.108x |"), "{t}");
    // Without a system row, or without the axis, there is nothing to compare.
    assert_eq!(allocator_vs_system(&refs(&rows[1..2])), None);
    let plain = [row(&[("size", json!("1"))], 1.0, &[1.0], Unit::OpsPerSec, Status::Ok)];
    assert_eq!(allocator_vs_system(&refs(&plain)), None);
}

#[test]
fn the_cold_start_factor_is_the_longest_runs_throughput_over_the_shortests() {
    // HAKMEM: 16.3M ops/s at 100K iterations, 61.0M at 10M: 3.74x.
    let rows = [
        row(&[("iterations", json!(100_000)), ("allocator", json!("hakmem"))], 9e6, &[16.3e6; 3], Unit::OpsPerSec, Status::Ok),
        row(&[("iterations", json!(1_000_000)), ("allocator", json!("hakmem"))], 1.0, &[40e6; 3], Unit::OpsPerSec, Status::Ok),
        row(&[("iterations", json!(10_000_000)), ("allocator", json!("hakmem"))], 1.0, &[61.0e6; 3], Unit::OpsPerSec, Status::Ok),
        row(&[("iterations", json!(100_000)), ("allocator", json!("system"))], 1.0, &[80e6; 3], Unit::OpsPerSec, Status::Ok),
        row(&[("iterations", json!(10_000_000)), ("allocator", json!("system"))], 1.0, &[84e6; 3], Unit::OpsPerSec, Status::Ok),
    ];
    let t = cold_start(&refs(&rows)).unwrap();
    assert!(t.contains("| allocator=hakmem | 100,000 iterations | 16.30 M ops/s | 9.00 M ops/s | 10,000,000 iterations | 61.00 M ops/s |            3.742x |"), "{t}");
    assert!(t.contains("| allocator=system |"), "{t}");
    assert!(t.contains("1.050x"), "{t}");
    assert!(t.contains("do not measure the steady state"), "{t}");
    assert!(!t.contains("the longest runs were slower"), "{t}");
    let slower = [
        row(&[("iterations", json!(100)), ("allocator", json!("system"))], 1.0, &[80e6; 3], Unit::OpsPerSec, Status::Ok),
        row(&[("iterations", json!(1000)), ("allocator", json!("system"))], 1.0, &[40e6; 3], Unit::OpsPerSec, Status::Ok),
    ];
    let t = cold_start(&refs(&slower)).unwrap();
    assert!(t.contains("0.500x") && t.contains("the longest runs were slower") && !t.contains("do not measure"), "{t}");
    // One iteration count: no factor.
    assert_eq!(cold_start(&refs(&rows[..1])), None);
}

#[test]
fn the_variance_table_sorts_rows_by_cv() {
    let rows = [
        row(&[("k", json!(1))], 1.0, &[100.0, 120.0, 80.0], Unit::Ns, Status::Ok),
        row(&[("k", json!(2))], 1.0, &[100.0, 100.5, 99.5], Unit::Ns, Status::Ok),
        row(&[("k", json!(3))], 1.0, &[100.0, 104.0, 96.0], Unit::Ns, Status::Ok),
    ];
    let t = variance_table(&refs(&rows)).unwrap();
    let order: Vec<usize> = ["w.x k=2", "w.x k=3", "w.x k=1"].iter().map(|k| t.find(k).unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{t}");
    assert!(t.contains("| outstanding |") && t.contains("| good        |"), "{t}");
    assert!(t.contains("20.00%") && t.contains("noisy"), "{t}");
}
