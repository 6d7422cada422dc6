//! Report tests on synthetic rows: known samples in, known tables out.

use serde_json::json;

use super::*;
use crate::evidence::{Row, RowStats, RunRecord, SampleRecord};
use crate::model::placement::CpuClass;
use crate::model::{Status, Unit};

pub(crate) use crate::evidence::fake::workers_row as fake_row;

/// Two ok rows of group `w` without counters, for the counters table tests.
pub(crate) fn rows_for_counters() -> Vec<Row> {
    vec![
        fake_row(1, CpuClass::Physical, &[100.0, 101.0], None, Status::Ok, Unit::Ns),
        fake_row(2, CpuClass::Physical, &[50.0, 51.0], None, Status::Ok, Unit::Ns),
    ]
}

/// Blocks as report.md has them.
fn md(blocks: &[document::Block]) -> String {
    document::markdown::render(blocks)
}

/// A table as report.md has it.
fn table_md(t: document::Table) -> String {
    md(&[document::Block::Table(t)])
}

/// The scaling tables and their notes, each as report.md has it.
fn render(rows: &[Row]) -> Vec<String> {
    let refs: Vec<&Row> = rows.iter().collect();
    scaling::tables(&refs).into_iter().map(|b| md(&[b])).collect()
}

fn reproducibility(rows: &[Row]) -> String {
    md(&sections::reproducibility(rows))
}

/// report.md's footer as the terminal shows it (`run --tables`).
fn footer(run: &RunRecord, rows: &[Row]) -> String {
    document::terminal::render(&sections::footer(run, rows))
}

/// A skipped row of workload `w` for `reason`, by design or of the machine.
fn skipped(index: usize, w: &str, reason: &str, kind: crate::model::SkipKind) -> Row {
    let mut r = fake_row(index, CpuClass::Physical, &[1.0], None, Status::Skipped, Unit::Ns);
    r.cell.workload = w.into();
    r.reason = Some(reason.into());
    r.skip = Some(kind);
    r
}

#[test]
fn cells_that_do_not_apply_by_design_are_one_line_apart_from_the_rows_not_ok() {
    use crate::model::SkipKind::{ByDesign, Machine};
    let rows = vec![
        fake_row(1, CpuClass::Physical, &[1.0, 1.1], None, Status::Ok, Unit::Ns),
        skipped(2, "os.yield", "one end; placement does not apply", ByDesign),
        skipped(3, "rt.fib", "a thread per task", ByDesign),
        skipped(4, "rt.fib", "a thread per task", ByDesign),
        skipped(5, "hw.smt", "no SMT siblings", Machine),
        skipped(6, "hw.smt", "no SMT siblings", Machine),
    ];
    let (stored, _) = crate::evidence::fake::fake_run("r", "2026-01-01T00:00:00Z", None, rows);
    let (run, rows) = (&stored.run, &stored.rows);
    let full = md(&sections::footer(run, rows));
    let not_ok = &full[full.find("## Not ok").unwrap()..];
    assert!(not_ok.contains("| hw.smt workers=5 | skipped | no SMT siblings"), "{full}");
    assert!(!not_ok.contains("| os.yield") && !not_ok.contains("| rt.fib"), "{full}");
    assert!(
        not_ok.contains(
            "3 cells do not apply by design: os.yield workers=2 (one end; placement does not apply); rt.fib workers=3, workers=4 (a \
             thread per task)."
        ),
        "{full}"
    );
    let text = document::terminal::render(&brief::end(run, rows, std::path::Path::new("/runs/r")));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "6 rows: 1 ok, 5 skipped (3 by design)", "{text}");
    assert_eq!(lines[1], "skipped: hw.smt workers=5, workers=6: no SMT siblings", "{text}");
    assert_eq!(lines[2], "3 cells do not apply by design: os.yield workers=2, rt.fib (2) (report.md says why)", "{text}");
    assert!(lines.contains(&"Report: /runs/r/report.md") && lines.contains(&"        /runs/r/report.html"), "{text}");
    assert!(!text.contains(" us") && text.contains("Wall time "), "{text}");
    // Only rows that do not apply: every row that applies is ok.
    let design: Vec<Row> = stored.rows.iter().filter(|r| r.skip != Some(Machine)).cloned().collect();
    assert!(md(&sections::footer(run, &design)).contains("Every row that applies is ok."));
    let (one, _) = crate::evidence::fake::fake_run("r", "2026-01-01T00:00:00Z", None, vec![skipped(2, "os.yield", "one end", ByDesign)]);
    let text = document::terminal::render(&brief::end(&one.run, &one.rows, std::path::Path::new("d")));
    assert!(text.starts_with("1 row: 0 ok, 1 skipped (1 by design)\n"), "{text}");
}

#[test]
fn a_row_recorded_before_skips_had_a_kind_reads_as_a_skip_of_the_machine() {
    let r = skipped(2, "hw.smt", "no SMT siblings", crate::model::SkipKind::Machine);
    let mut v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["skip"], "machine");
    assert_eq!(v["trials"][0]["skip"], "machine");
    v.as_object_mut().unwrap().remove("skip");
    v["trials"][0].as_object_mut().unwrap().remove("skip");
    let old: Row = serde_json::from_value(v).unwrap();
    assert_eq!((old.skip, old.trials[0].skip), (None, None));
    assert!(!old.skipped_by_design());
}

#[test]
fn a_workload_of_one_row_is_named_by_its_workload_in_its_notes_never_dash() {
    let mut r = fake_row(1, CpuClass::Physical, &[1.0, 1.1], None, Status::Ok, Unit::Ns);
    r.cell.workload = "os.syscall".into();
    r.cell.axes.clear();
    r.disagreement = Some("trials disagree".into());
    let text = md(&sections::workload(&[r], "os.syscall", &variants::Verdicts::of(&[])));
    assert!(text.contains("- os.syscall: trials disagree."), "{text}");
    assert!(text.contains("| os.syscall |"), "{text}");
    assert!(!text.contains("- -:"), "{text}");
}

#[test]
fn scaling_tables_show_medians_speedups_and_labelled_counts() {
    let rows = vec![
        fake_row(1, CpuClass::Physical, &[100.0, 102.0, 98.0], None, Status::Ok, Unit::Ns),
        fake_row(2, CpuClass::Physical, &[50.0, 51.0, 49.0], None, Status::Ok, Unit::Ns),
        fake_row(4, CpuClass::Smt, &[40.0, 40.0, 40.0], None, Status::Ok, Unit::Ns),
        fake_row(8, CpuClass::Oversubscribed, &[80.0], None, Status::Ok, Unit::Ns),
    ];
    let t = render(&rows);
    assert_eq!(t.len(), 1, "no total window: one table");
    assert!(
        t[0].contains("| 1 worker median | 2 workers median | 4 workers (smt) median | 8 workers (oversubscribed) median |"),
        "{}",
        t[0]
    );
    assert!(t[0].contains("| 1-to-2 speedup | 1-to-4 speedup | 1-to-8 speedup |"), "{}", t[0]);
    assert!(t[0].contains("| box    |          100 ns |         50.00 ns |               40.00 ns |                          80.00 ns |         2.000x |         2.500x |         1.250x |"), "{}", t[0]);
}

/// An ok row at `workers` whose trials' medians are `trials` (and, with
/// `total`, their total windows').
fn trials_row(workers: usize, class: CpuClass, trials: &[f64], total: Option<&[f64]>) -> Row {
    fake_row(workers, class, trials, total, Status::Ok, Unit::Ns)
}

// Expected serial fractions and intervals below: S's 95% interval is Welch's
// ratio interval on the rows' log trial medians (scipy.stats.t.ppf(0.975, df)
// with Welch's df), inverted for lower-is-better, then e = (1/S - 1/p) / (1 - 1/p)
// at both ends; computed with numpy 2.5.5 and scipy 1.18.1.

#[test]
fn scaling_tables_give_the_serial_fraction_with_its_interval_and_say_when_it_grows() {
    let squeezed = |t: &str| t.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    let labelled = |label: &str, mut r: Row| {
        r.cell.label = label.into();
        r
    };
    let rows = vec![
        trials_row(1, CpuClass::Physical, &[98.0, 100.0, 103.0], None),
        trials_row(2, CpuClass::Physical, &[51.0, 52.0, 54.0], None),
        trials_row(4, CpuClass::Physical, &[27.5, 28.0, 29.0], None),
        trials_row(8, CpuClass::Smt, &[19.5, 20.0, 21.0], None),
        labelled("other", trials_row(1, CpuClass::Physical, &[99.5, 100.0, 100.5], None)),
        labelled("other", trials_row(2, CpuClass::Physical, &[54.8, 55.0, 55.2], None)),
        labelled("other", trials_row(4, CpuClass::Physical, &[39.8, 40.0, 40.2], None)),
        labelled("other", trials_row(8, CpuClass::Smt, &[19.9, 20.0, 20.1], None)),
    ];
    let t = render(&rows);
    assert_eq!(t.len(), 2, "one table and one note: {t:#?}");
    assert!(t[0].contains("| 1-to-8 speedup | 1-to-2 serial fraction | 1-to-4 serial fraction | 1-to-8 serial fraction |"), "{}", t[0]);
    // The speedups' intervals are compare's (Welch centred on the log of the
    // ratio of medians, each side's variance that of a median), by scipy:
    // box: S = 100/52 = 1.9231 (1.7896..2.0666), e = (0.52 - 0.5) / 0.5 = 0.040
    // (-0.0322..0.1176); S = 100/28 (3.3345..3.8252), e = (0.28 - 0.25) / 0.75
    // = 0.040 (0.0152..0.0665); 8 workers (smt): e = (0.2 - 0.125) / 0.875 =
    // 0.0857 (0.0662..0.1071).
    assert!(squeezed(&t[0]).contains("| 0.040 (-0.032..0.118) | 0.040 (0.015..0.067) | 0.086 (0.066..0.107) |"), "{}", t[0]);
    // other: 0.100 (0.0869..0.1132) at 2, 0.200 (0.1930..0.2071) at 4: the
    // second interval lies above the first. Its SMT count (0.086) falls, but
    // SMT siblings are not judged.
    assert!(squeezed(&t[0]).contains("| 0.100 (0.087..0.113) | 0.200 (0.193..0.207) | 0.086 (0.083..0.089) |"), "{}", t[0]);
    assert_eq!(
        t[1],
        "other: the serial fraction grows with the worker count, from 0.100 (0.087..0.113) at 2 workers to 0.200 \
         (0.193..0.207) at 4, beyond their intervals: the loss is overhead (synchronisation, contention), not serial work.\n"
    );
    // box's constant 0.040 gets no note.
    assert!(!t[1].contains("box"));
    // Without the 4-worker row, other has one judged count: nothing to say.
    let fewer: Vec<Row> = rows.iter().filter(|r| r.cell.workers != Some(4)).cloned().collect();
    assert_eq!(render(&fewer).len(), 1);
}

#[test]
fn serial_fractions_of_both_windows_rates_and_a_base_above_one() {
    let squeezed = |t: &str| t.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    let rows = vec![
        trials_row(1, CpuClass::Physical, &[99.0, 100.0, 101.0], Some(&[119.0, 120.0, 121.0])),
        trials_row(2, CpuClass::Physical, &[49.5, 50.0, 50.5], Some(&[69.5, 70.0, 70.5])),
        trials_row(4, CpuClass::Physical, &[24.8, 25.0, 25.2], Some(&[51.8, 52.0, 52.2])),
    ];
    let t = render(&rows);
    assert_eq!(t.len(), 3, "medians, speedups, one note: {t:#?}");
    assert!(
        t[1].contains("| 1-to-2 work serial fraction | 1-to-2 total serial fraction | 1-to-4 work serial fraction | 1-to-4 total serial fraction | Notes |"),
        "{}",
        t[1]
    );
    // Work: ideal speedups, e = 0 (-0.0260..0.0267 at 2; -0.0080..0.0082 at 4).
    // Total: e = (70/120 - 0.5) / 0.5 = 0.167 (0.1429..0.1910), then
    // (52/120 - 0.25) / 0.75 = 0.244 (0.2328..0.2563), by scipy.
    assert!(
        squeezed(&t[1]).contains("| 0.000 (-0.026..0.027) | 0.167 (0.143..0.191) | 0.000 (-0.008..0.008) | 0.244 (0.233..0.256) |"),
        "{}",
        t[1]
    );
    assert!(t[2].starts_with("box, total window: the serial fraction grows with the worker count, from 0.167 (0.143..0.191) at 2 workers to 0.244 (0.233..0.256) at 4,"), "{}", t[2]);

    // Higher is better: S = 1800/1000 (1.5976..2.0281), e = 0.111 (-0.0138..0.2519).
    let mut rates = vec![
        trials_row(1, CpuClass::Physical, &[950.0, 1000.0, 1050.0], None),
        trials_row(2, CpuClass::Physical, &[1750.0, 1800.0, 1850.0], None),
    ];
    for r in &mut rates {
        (r.unit, r.direction) = (Unit::OpsPerSec, Unit::OpsPerSec.direction());
    }
    assert!(squeezed(&render(&rates)[0]).contains("| 1.800x | 0.111 (-0.014..0.252) |"), "{}", render(&rates)[0]);

    // From 2 workers up, p is relative to 2: 2-to-4 is p = 2, 2-to-8 p = 4.
    // One trial each: no interval, the fraction alone.
    let from_two = vec![
        fake_row(2, CpuClass::Physical, &[100.0], None, Status::Ok, Unit::Ns),
        fake_row(4, CpuClass::Physical, &[60.0], None, Status::Ok, Unit::Ns),
        fake_row(8, CpuClass::Physical, &[40.0], None, Status::Ok, Unit::Ns),
    ];
    let t = render(&from_two);
    assert_eq!(t.len(), 1, "no interval, no judgement: {t:#?}");
    // (0.6 - 0.5) / 0.5 = 0.2 and (0.4 - 0.25) / 0.75 = 0.2.
    assert!(
        t[0].contains("| 2-to-4 serial fraction | 2-to-8 serial fraction |")
            && squeezed(&t[0]).contains("| 1.667x | 2.500x | 0.200 | 0.200 |"),
        "{}",
        t[0]
    );
}

#[test]
fn rows_that_are_not_ok_never_enter_the_tables() {
    let rows = vec![
        fake_row(1, CpuClass::Physical, &[100.0], None, Status::Ok, Unit::Ns),
        fake_row(2, CpuClass::Physical, &[10.0], None, Status::Invalid, Unit::Ns),
        fake_row(4, CpuClass::Physical, &[25.0], None, Status::Ok, Unit::Ns),
    ];
    let t = render(&rows).join("");
    assert!(!t.contains("10.0 ns") && !t.contains("2 workers"), "{t}");
    assert!(t.contains("4.000x"));
    // With only one ok worker count there is nothing to scale.
    assert!(render(&rows[..2]).is_empty());
    let section = document::markdown::render(&group_section(&rows, "w", &variants::Verdicts::of(&rows)));
    assert!(!section.contains("10.0 ns"), "{section}");
}

#[test]
fn total_windows_give_the_thread_scale_shape_and_rates_invert() {
    let rows = vec![
        fake_row(1, CpuClass::Physical, &[100.0], Some(&[120.0]), Status::Ok, Unit::Ns),
        fake_row(2, CpuClass::Physical, &[50.0], Some(&[80.0]), Status::Ok, Unit::Ns),
    ];
    let t = render(&rows);
    assert_eq!(t.len(), 2);
    assert!(t[0].contains("| box    | total  |          120 ns |         80.00 ns |"), "{}", t[0]);
    assert!(t[1].contains("| 1-to-2 work | 1-to-2 total |") && t[1].contains("|      2.000x |       1.500x |"), "{}", t[1]);
    // Higher-is-better units: the speedup is k over 1.
    let rates = vec![
        fake_row(1, CpuClass::Physical, &[1000.0], None, Status::Ok, Unit::OpsPerSec),
        fake_row(2, CpuClass::Physical, &[1800.0], None, Status::Ok, Unit::OpsPerSec),
    ];
    assert!(render(&rates)[0].contains("1.800x"), "{}", render(&rates)[0]);
}

#[test]
fn the_footer_lists_every_row_that_is_not_ok_and_the_not_run_cells() {
    let rows = vec![
        fake_row(1, CpuClass::Physical, &[1.0], None, Status::Ok, Unit::Ns),
        fake_row(2, CpuClass::Physical, &[1.0], None, Status::Timeout, Unit::Ns),
    ];
    let run: RunRecord = serde_json::from_value(json!({
        "schema": "proofbench.run/1", "id": "r", "label": "box", "profile": "quick", "seed": 1,
        "options": {"selection": [], "profile": "quick", "workers": null, "oversubscribe": false, "pin": ["none"], "runtime": null, "compare": null, "runs": null,
                    "time_budget_ms": null, "timeout_ms": 1000, "warmup": null, "settle_ms": null, "ci_target_pct": null,
                    "params": [], "include_selftest": false},
        "envelope": serde_json::to_value(crate::envelope::Envelope::collect(&crate::topology::fixture_root("kvm-2c"), vec![], 1)).unwrap(),
        "plan": [], "started_utc": "x", "finished_utc": null, "wall_s": null, "cpu": null,
        "interrupted": true, "complete": false, "counts": null, "not_run": ["009-w.x"]
    }))
    .unwrap();
    let f = footer(&run, &rows);
    assert!(f.contains("| w.x workers=2 | timeout | broken"), "{f}");
    assert!(f.contains("| 009-w.x       | not run | the run was interrupted"), "{f}");
    assert!(f.contains("The run did not finish"), "{f}");
}

#[test]
fn primitives_table_has_the_rvos_columns_and_group_times() {
    let mk = |workers: usize, shape, unit, status| {
        let mut r = fake_row(workers, CpuClass::Physical, &[2000.0, 4000.0, 3000.0], None, status, unit);
        r.shape = shape;
        r.cell.workload = "w.ipc".into();
        for s in &mut r.samples {
            s.ops = 1000;
            s.bytes = if unit == Unit::MbPerSec { 1_000_000 } else { 0 };
        }
        r.process.wall_ms = 10.0;
        r.process.rusage = Some(crate::measure::rusage::Rusage { user_us: 300, sys_us: 200, ..Default::default() });
        r
    };
    use crate::model::TableShape;
    let rows = [
        mk(1, TableShape::Primitive, Unit::NsPerOp, Status::Ok),
        mk(2, TableShape::Primitive, Unit::MbPerSec, Status::Ok),
        mk(4, TableShape::Primitive, Unit::NsPerOp, Status::Invalid),
        mk(8, TableShape::Scaling, Unit::Ns, Status::Ok),
    ];
    let refs: Vec<&Row> = rows.iter().collect();
    let s = md(&primitive::section(&refs).unwrap());
    assert!(s.contains("| Benchmark | Iters | Total(us) | Per(ns) |             95% CI |  MB/s |"), "{s}");
    // Three trials of 2, 4 and 3 us: exp(log 3 -+ t.ppf(0.975, 2) f(3) std(log, ddof=1) / sqrt(3)), centred on the median 3.
    assert!(s.contains("| -63.35% / +172.82% |"), "{s}");
    // 3 timed samples of 1000 ops: 3000 iterations in 9 us. Per(ns) is the
    // headline (3,000 ns/op), not the pooled samples' 3 ns; the MB/s row's
    // 3,000 MB/s of 1,000 bytes per operation is 333 ns per operation, its
    // interval mirrored (the times of the rate's bounds): centred on the log of
    // the median, the mirror of the rate's interval is the same in percent.
    assert!(s.contains("| ipc (1)   | 3,000 |      9.00 |   3,000 | -63.35% / +172.82% |       |"), "{s}");
    assert!(s.contains("| ipc (2)   | 3,000 |      9.00 |     333 | -63.35% / +172.82% | 3,000 |"), "{s}");
    assert!(!s.contains("ipc (4)") && !s.contains("ipc (8)"), "invalid and non-primitive rows stay out:\n{s}");
    assert!(s.contains("Wall time: 30 ms (3 cells, setup included)") && s.contains("CPU time:  2 ms"), "{s}");
    let only_scaling: Vec<&Row> = rows[3..].iter().collect();
    assert!(primitive::section(&only_scaling).is_none());
}

#[test]
fn the_strategies_table_compares_each_strategy_with_none() {
    use crate::model::PinStrategy;
    let mk = |pin: PinStrategy, v: f64| {
        let mut r = fake_row(2, CpuClass::Physical, &[v, v, v], None, Status::Ok, Unit::Ns);
        r.cell.axes = vec!["pin".into(), "workers".into()];
        r.cell.params.insert("pin".into(), json!(pin.as_str()));
        r.cell.placement.pin = pin;
        r.cell.placement.cpus = (pin != PinStrategy::None).then(|| vec![0, 1]);
        r
    };
    let rows = [mk(PinStrategy::None, 100.0), mk(PinStrategy::Linear, 80.0), mk(PinStrategy::Compact, 200.0)];
    let refs: Vec<&Row> = rows.iter().collect();
    let t = table_md(strategies::table(&refs).unwrap());
    // Three trials with one value: no spread, so no interval (never a zero-width one).
    assert!(t.contains("| box (workers=2) | linear   | 80.00 ns | n/a: every trial gave the same median | 1.250x (none) | 0-1  |"), "{t}");
    assert!(t.contains("| compact  |   200 ns |") && t.contains("0.500x (none)"), "{t}");
    assert!(strategies::table(&refs[..1]).is_none(), "one strategy: no table");
    let plots = plot::plots("w.x", &refs);
    assert!(plots.iter().any(|p| p.file == "w.x-strategies.svg" && p.svg.contains("compact")), "a strategies plot");
}

#[test]
fn a_workload_that_pins_its_own_threads_is_named_as_the_placement() {
    let mut rows = vec![
        fake_row(1, CpuClass::Physical, &[100.0, 101.0], Some(&[110.0, 111.0]), Status::Ok, Unit::Ns),
        fake_row(2, CpuClass::Physical, &[50.0, 51.0], Some(&[60.0, 61.0]), Status::Ok, Unit::Ns),
    ];
    let t = render(&rows).join("");
    assert!(t.contains("none (scheduler decides)"), "{t}");
    for (r, cpus) in rows.iter_mut().zip([json!([0]), json!([1, 0])]) {
        r.details = json!({ "pinned_cpus": cpus });
    }
    let t = render(&rows).join("");
    assert!(t.contains("by the workload: CPUs 0-1") && !t.contains("scheduler decides"), "{t}");
}

#[test]
fn the_reproducibility_summary_counts_what_each_row_can_see() {
    // Spreads of 0.5%, 2.5% and 20% between three trials each.
    let spread = |s: f64| [100.0 * (1.0 - s), 100.0, 100.0 * (1.0 + s)];
    let rows: Vec<Row> =
        [0.005, 0.025, 0.2].iter().map(|&s| fake_row(1, CpuClass::Physical, &spread(s), None, Status::Ok, Unit::Ns)).collect();
    let sens: Vec<f64> = rows.iter().map(|r| r.headline().unwrap().sensitivity.unwrap()).collect();
    // 2.5% apart: t(0.975, 4) f(3) 0.025 sqrt(2/3) = 6.6%, so 1.02 exp(0.066) - 1 = 8.9% (scipy: 0.08935).
    assert!(sens[0] < 0.05 && (0.089..0.090).contains(&sens[1]) && sens[2] > 0.20, "{sens:?}");
    let text = reproducibility(&rows);
    assert!(
        text.contains(
            "Of 3 ok rows with an interval, 1 can see a 5% change on this machine, 2 a 10% change and 2 a 20% change; 1 only a larger one."
        ),
        "{text}"
    );
    let one = vec![fake_row(1, CpuClass::Physical, &[5.0], None, Status::Ok, Unit::Ns)];
    assert!(reproducibility(&one).contains("No row has two trials or more"));
}

#[test]
fn the_rounds_span_is_said_in_milliseconds_and_one_round_is_one_round() {
    let (mut stored, _) = crate::evidence::fake::fake_run("r", "2026-01-01T00:00:00Z", None, rows_for_counters());
    let round = |start: &str, end: &str| crate::evidence::RoundRecord {
        index: 0,
        order: vec![1, 2],
        started_utc: start.into(),
        finished_utc: Some(end.into()),
    };
    let said = |stored: &crate::evidence::StoredRun| footer(&stored.run, &stored.rows);
    stored.run.rounds = vec![round("2026-01-01T00:00:00.100Z", "2026-01-01T00:00:00.450Z")];
    assert!(said(&stored).contains("taken over 350 ms in 1 round:"), "{}", said(&stored));
    // An older record's whole seconds cannot tell 0 ms from 999 ms.
    stored.run.rounds = vec![round("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"), round("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")];
    assert!(said(&stored).contains("taken within a second in 2 rounds:"), "{}", said(&stored));
}

/// A row whose trials took `trials` samples each (ns/op, one operation per
/// sample), its statistics computed from them: the median of its trial
/// medians and the median of its samples pooled can then differ.
fn row_of_trials(workers: usize, shape: crate::model::TableShape, trials: &[&[f64]]) -> Row {
    let mut r = fake_row(workers, CpuClass::Physical, &vec![1.0; trials.len()], None, Status::Ok, Unit::NsPerOp);
    r.shape = shape;
    r.cell.group = "os".into();
    r.cell.workload = "os.syscall".into();
    r.samples = trials
        .iter()
        .enumerate()
        .flat_map(|(t, values)| {
            values.iter().enumerate().map(move |(i, &v)| SampleRecord {
                trial: t as u32,
                index: i as u32,
                warmup: false,
                iters: 1,
                ops: 1,
                bytes: 0,
                work_ns: v as u64,
                total_ns: None,
                value: v,
                total_value: None,
            })
        })
        .collect();
    r.stats = RowStats::of(&r.samples, crate::stats::DEFAULT_NOISE);
    r.trials =
        trials.iter().enumerate().map(|(t, v)| crate::evidence::fake::trial(t as u32, crate::stats::median(v), Status::Ok)).collect();
    r
}

/// A figure as a table prints it (`170`, `1,234`, `170 ns/op`, `2.38 µs`,
/// `57.97 ms/op`) in nanoseconds; `None` for anything else.
fn nanoseconds(cell: &str) -> Option<f64> {
    let mut words = cell.split_whitespace();
    let v: f64 = words.next()?.replace(',', "").parse().ok()?;
    let scale = match words.next().map(|u| u.trim_end_matches("/op")) {
        None | Some("ns") => 1.0,
        Some("µs") => 1e3,
        Some("ms") => 1e6,
        Some("s") => 1e9,
        Some(_) => return None,
    };
    Some(v * scale)
}

/// Every table in `blocks`, at any depth.
fn tables(blocks: &[Block]) -> Vec<&crate::text::document::Table> {
    blocks
        .iter()
        .flat_map(|b| match b {
            Block::Table(t) => vec![t],
            Block::Group { blocks, .. } | Block::Compact(blocks) | Block::Fold { blocks, .. } => tables(blocks),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn every_table_prints_a_row_s_own_headline_never_the_pooled_samples_median() {
    use crate::model::TableShape;
    use crate::text::document::terminal::line;
    // The os.syscall case: one fast trial of few samples, a middle one, and
    // a slow one of many. The headline (median of the trial medians) is
    // 170 ns; the samples pooled have their median at 230.
    let trials: [&[f64]; 3] = [&[160.0, 161.0, 162.0, 163.0, 164.0], &[170.0], &[230.0, 231.0, 232.0, 233.0, 234.0, 235.0, 236.0]];
    let mut prim = row_of_trials(1, TableShape::Primitive, &trials);
    prim.cell.axes.clear();
    prim.cell.params.clear();
    prim.cell.workers = None;
    // A scaling pair with the same split at 2 workers.
    let mut one = row_of_trials(1, TableShape::Scaling, &[&[400.0], &[410.0], &[420.0]]);
    one.cell.workload = "os.scale".into();
    one.cell.index = 10;
    let mut two = row_of_trials(2, TableShape::Scaling, &trials);
    two.cell.workload = "os.scale".into();
    two.cell.index = 11;
    let rows = vec![prim, one, two];
    for r in &rows {
        let pooled = r.stats.as_ref().unwrap().work.median;
        let h = r.median().unwrap();
        if r.cell.workers == Some(1) {
            continue;
        }
        assert_eq!((h, pooled), (170.0, 230.0), "the fixture separates the two figures");
    }
    let stored = crate::evidence::fake::run(Vec::new(), rows.clone());
    let doc = sections::document(&stored);
    let mut checked = 0;
    for t in tables(&doc.blocks) {
        // The columns that present a row's median: never a pooled one, which
        // must say so in its title.
        let figure_columns: Vec<usize> = t
            .columns
            .iter()
            .enumerate()
            .filter(|(_, (title, _))| {
                let title = title.to_lowercase();
                !title.contains("pooled") && (title == "median" || title.ends_with(" median") || title == "per(ns)")
            })
            .map(|(i, _)| i)
            .collect();
        for cells in &t.rows {
            let first = line(&cells[0]);
            let Some(r) = rows.iter().find(|r| {
                first == overview::name(r)
                    || (first == "syscall" && r.shape == TableShape::Primitive)
                    || (first == r.axes_text() && r.cell.workload == "os.scale")
                    || (first == format!("box (workers={})", r.cell.workers.unwrap_or(0)))
            }) else {
                continue;
            };
            for &c in &figure_columns {
                let shown = line(&cells[c]);
                let Some(v) = nanoseconds(&shown) else { continue };
                let h = r.median().unwrap();
                // Scaled figures keep 3 significant digits.
                assert!((v - h).abs() <= h * 0.005, "{} column {:?} of a table shows {shown}, its headline is {h}", first, t.columns[c].0);
                checked += 1;
            }
        }
    }
    // Primitives, rows, statistics and summary tables for the primitive row;
    // rows, statistics, summary and the scaling table for the pair.
    assert!(checked >= 10, "only {checked} figures were checked");
    // The pooled figure is shown, labelled, and never as a bare `Median`.
    let md = crate::text::document::markdown::render(&doc.blocks);
    assert!(md.contains("Pooled median"), "{md}");
    assert!(md.contains(" 230 |"), "the pooled median still appears, in its own column:\n{md}");
}

#[test]
fn the_code_path_is_beside_each_median_and_different_paths_are_noted() {
    let with_path = |workers: usize, path: &str| {
        let mut r = fake_row(workers, CpuClass::Physical, &[10.0, 11.0, 12.0], None, Status::Ok, Unit::MopsPerSec);
        r.details = json!({ "class": "S", "code_path": path });
        r
    };
    let same = [with_path(1, "avx512f"), with_path(2, "avx512f")];
    let refs: Vec<&Row> = same.iter().collect();
    let overview = document::terminal::render(&[Block::Table(overview::table(&refs, &variants::Verdicts::of(&same)))]);
    assert!(overview.lines().filter(|l| l.contains("M ops/s [avx512f]")).count() == 2, "{overview}");
    assert_eq!(facts::code_paths_line(&refs).as_deref(), Some("Code path: avx512f on 2 rows."));
    assert_eq!(facts::code_paths_note(&same), None, "one path: nothing to note");
    let workload = md(&sections::workload(&same, "w.x", &variants::Verdicts::of(&same)));
    assert!(workload.contains("Code path: avx512f on 2 rows."), "{workload}");

    let mixed = [with_path(1, "baseline"), with_path(2, "avx512f"), with_path(4, "avx512f")];
    let note = facts::code_paths_note(&mixed).expect("two paths are noted");
    assert!(note.starts_with("the kernels took different code paths (avx512f on 2 rows, baseline on 1 row)"), "{note}");
    // A row without a multiversioned kernel, or not ok, has no path.
    let plain = fake_row(1, CpuClass::Physical, &[1.0], None, Status::Ok, Unit::Ns);
    let mut failed = with_path(8, "avx2");
    failed.status = Status::Failed;
    assert_eq!(plain.code_path(), None);
    assert_eq!(facts::code_paths_note(&[plain, failed, with_path(1, "avx512f")]), None);
}
