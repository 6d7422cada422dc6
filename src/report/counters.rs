//! The counters table of a group: software counters per timed sample for
//! every row, the hardware counters where the kernel gave them (else the
//! reason, once), the interrupts on the trial's CPUs (system-wide) beside an
//! idle baseline, and the `rt` rows' runtime counters (from their details).

use crate::evidence::Row;
use crate::measure::counters::CounterRecord;
use crate::model::{Reading, Status};

use crate::text::document::{Align, Block, Line, Table};
use crate::text::format;

fn ms(ns: f64) -> String {
    format!("{} ms", format::number(ns / 1e6))
}

fn per(c: &CounterRecord, total: u64) -> String {
    format::number(c.per_sample(total))
}

/// `RES/CAL/TLB/LOC` figures as `a/b/c/d`, `n/a` for a kind not counted.
fn four(v: [Option<f64>; 4]) -> String {
    v.map(|x| x.map(format::number).unwrap_or_else(|| "n/a".into())).join("/")
}

/// Wait/run, or n/a where children reaped inside the windows did the work
/// (the listed threads are not the ones that ran it).
fn wait_run(s: &crate::measure::counters::SoftwareCounters) -> String {
    if s.wait_ratio_meaningful() { format::percent(s.run_queue_wait_ns as f64 / s.run_ns as f64) } else { "n/a".into() }
}

/// The section, or None when no row of the group has counters.
pub fn section(rows: &[&Row], group: &str) -> Option<Vec<Block>> {
    let counted: Vec<(&Row, &CounterRecord)> = rows
        .iter()
        .filter(|r| r.cell.group == group && r.status == Status::Ok)
        .filter_map(|r| r.counters.as_ref().map(|c| (*r, c)))
        .collect();
    if counted.is_empty() {
        return None;
    }
    let any_hw = counted.iter().any(|(_, c)| c.hardware.is_present());
    let any_irq = counted.iter().any(|(_, c)| c.interrupts.is_some());
    let mut cols = vec![
        ("Row", Align::Left),
        ("Window", Align::Left),
        ("Ctx sw vol/invol", Align::Right),
        ("Migrations", Align::Right),
        ("Faults min/maj", Align::Right),
        ("Run-queue wait", Align::Right),
        ("Wait/run", Align::Right),
        ("Threads", Align::Right),
    ];
    if any_hw {
        cols.extend([("IPC", Align::Right), ("Cache miss", Align::Right), ("dTLB misses", Align::Right), ("Branch misses", Align::Right)]);
    }
    if any_irq {
        cols.extend([("RES/CAL/TLB/LOC per sample", Align::Right), ("Idle baseline", Align::Right), ("CPUs", Align::Left)]);
    }
    let mut t = Table::new(&cols);
    for (r, c) in &counted {
        let s = &c.software;
        let mut line = vec![
            super::overview::name(r),
            c.window.as_str().to_string(),
            format!("{}/{}", per(c, s.voluntary_ctx_switches), per(c, s.involuntary_ctx_switches)),
            s.cpu_migrations.map(|m| per(c, m)).unwrap_or_else(|| "n/a".into()),
            format!("{}/{}", per(c, s.minor_faults), per(c, s.major_faults)),
            ms(c.per_sample(s.run_queue_wait_ns)),
            wait_run(s),
            c.threads.len().to_string(),
        ];
        if any_hw {
            match &c.hardware {
                Reading::Present(h) => {
                    let opt = |v: Option<u64>| v.map(|v| per(c, v)).unwrap_or_else(|| "n/a".into());
                    line.push(h.ipc.map(|i| format!("{i:.2}")).unwrap_or_else(|| "n/a".into()));
                    line.push(match (h.cache_misses, h.cache_references) {
                        (Some(m), Some(r)) if r > 0 => format::percent(m as f64 / r as f64),
                        _ => "n/a".into(),
                    });
                    line.push(opt(h.dtlb_load_misses));
                    line.push(opt(h.branch_misses));
                }
                Reading::Absent { .. } => line.extend(std::iter::repeat_n("n/a".to_string(), 4)),
            }
        }
        if any_irq {
            match &c.interrupts {
                Some(i) => line.extend([
                    four(i.per_sample()),
                    if i.baseline.is_some() { four(i.baseline_per_sample()) } else { "n/a".into() },
                    crate::measure::interference::cpu_list(&i.cpus),
                ]),
                None => line.extend(std::iter::repeat_n("n/a".to_string(), 3)),
            }
        }
        t.push(line);
    }
    let mut out = vec![
        Block::heading(3, Line::from("Counters (").text(group).text(")")),
        Block::paragraph(
            Line::from("Per timed sample (sums over the samples divided by their number); ")
                .code("work")
                .text(" = exactly the work window, ")
                .code("sample")
                .text(
                    " = the sample call around it; the threads are the worker's and those of its live child processes; \
                     wait/run = run-queue wait over run time of those threads.",
                ),
        ),
        Block::Table(t),
    ];
    if counted.iter().any(|(_, c)| c.software.run_ns > 0 && !c.software.wait_ratio_meaningful()) {
        out.push(Block::paragraph(Line::from(
            "Wait/run n/a: child processes born and reaped inside the windows used more CPU than the listed threads ran; \
             the work ran in them, and their wait is not known.",
        )));
    }
    if any_irq {
        out.push(Block::paragraph(
            Line::from("RES/CAL/TLB/LOC: rescheduling interrupts, function-call interrupts, TLB shootdowns and local timer interrupts ")
                .text("from ")
                .code("/proc/interrupts")
                .text(
                    ", per timed sample, on the CPUs the trial could use. They are system-wide counts: every process on those CPUs \
                     adds to them, not only the measured one. They span the timed samples and the gaps between them; the idle \
                     baseline is what the same CPUs received in the run's idle window (250 ms before the first round, no worker \
                     running), scaled to the same length.",
                ),
        ));
    }
    let mut reasons: Vec<&str> = Vec::new();
    for (_, c) in &counted {
        if let Reading::Absent { absent } = &c.hardware
            && !reasons.contains(&absent.as_str())
        {
            reasons.push(absent);
        }
    }
    for reason in reasons {
        out.push(Block::paragraph(Line::from("Hardware ").marked(reason).text(".")));
    }
    out.extend(runtime_section(&counted.iter().map(|(r, _)| *r).collect::<Vec<_>>()));
    Some(out)
}

/// The runtime counters of the rows whose details have them (the `rt`
/// rows): steals, the queue's longest length and its lock waits, per sample.
fn runtime_section(rows: &[&Row]) -> Vec<Block> {
    let with: Vec<(&Row, &serde_json::Value)> =
        rows.iter().filter_map(|r| r.details.get("runtime_counters").filter(|v| v.is_object()).map(|v| (*r, v))).collect();
    if with.is_empty() {
        return Vec::new();
    }
    let mut t = Table::new(&[
        ("Row", Align::Left),
        ("Steals/sample", Align::Right),
        ("Longest queue", Align::Right),
        ("Lock waits/sample", Align::Right),
        ("Of acquisitions", Align::Right),
    ]);
    let mut notes: Vec<String> = Vec::new();
    for (r, v) in &with {
        let f = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
        let show = |x: Option<f64>| x.map(format::number).unwrap_or_else(|| "n/a".into());
        let share = match (f("lock_waits_per_sample"), f("lock_acquisitions_per_sample")) {
            (Some(w), Some(a)) if a > 0.0 => format::percent(w / a),
            _ => "n/a".into(),
        };
        let longest = v.get("queue_max_len").and_then(serde_json::Value::as_u64).map(format::count).unwrap_or_else(|| "n/a".into());
        t.push(vec![super::overview::name(r), show(f("steals_per_sample")), longest, show(f("lock_waits_per_sample")), share]);
        if let Some(n) = v.get("note").and_then(serde_json::Value::as_str)
            && !notes.iter().any(|x| x == n)
        {
            notes.push(n.to_string());
        }
    }
    let mut out = vec![
        Block::paragraph(Line::from(
            "Runtime counters (the runtime's own, per sample of the row's first trial, every sample it ran included): steals = \
             tasks run by a thread other than the one that queued them; the queue's longest length; lock waits = acquisitions \
             of the queue's lock that found it held.",
        )),
        Block::Table(t),
    ];
    for n in notes {
        out.push(Block::paragraph(Line::from("n/a: ").text(&n).text(".")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::counters::{CounterWindow, HardwareCounters, SoftwareCounters};

    fn record(hw: Reading<HardwareCounters>) -> CounterRecord {
        CounterRecord {
            window: CounterWindow::Work,
            samples: 4,
            software: SoftwareCounters {
                voluntary_ctx_switches: 8,
                involuntary_ctx_switches: 2,
                minor_faults: 400,
                cpu_migrations: Some(4),
                run_ns: 4_000_000,
                run_queue_wait_ns: 2_000_000,
                ..SoftwareCounters::default()
            },
            threads: Vec::new(),
            hardware: hw,
            interrupts: None,
        }
    }

    #[test]
    fn interrupts_show_per_sample_beside_their_idle_baseline() {
        use crate::measure::counters::{InterruptCounters, InterruptCounts};
        let mut rows = crate::report::tests::rows_for_counters();
        let mut rec = record(Reading::absent("counters: unavailable (no PMU)"));
        // 4 samples over a 200 ms span; the idle pause was 100 ms.
        rec.interrupts = Some(InterruptCounters {
            cpus: vec![0, 1, 2, 3],
            samples: 4,
            span_ns: 200_000_000,
            counts: InterruptCounts { res: Some(48), cal: Some(12), tlb: Some(8), loc: Some(400) },
            baseline_ns: 100_000_000,
            baseline: Some(InterruptCounts { res: Some(2), cal: Some(1), tlb: None, loc: Some(100) }),
        });
        rows[0].counters = Some(rec);
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        // 48/4, 12/4, 8/4, 400/4; the baseline doubled (200 ms of 100) over 4 samples: 1, 0.5, n/a, 50.
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("| 12.0/3.00/2.00/100 | 1.00/0.500/n/a/50.0 | 0-3 |"), "{text}");
        assert!(text.contains("RES/CAL/TLB/LOC per sample") && text.contains("system-wide"), "{text}");
    }

    #[test]
    fn wait_over_run_is_not_shown_when_reaped_children_did_the_work() {
        let mut rows = crate::report::tests::rows_for_counters();
        let mut rec = record(Reading::absent("counters: unavailable (no PMU)"));
        rec.software.reaped_children_cpu_ns = 40_000_000; // ten times the listed threads' 4 ms
        rows[0].counters = Some(rec);
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        assert!(!text.contains("50.00%") && text.contains("Wait/run n/a: child processes"), "{text}");
    }

    #[test]
    fn runtime_counters_come_from_the_details() {
        let mut rows = crate::report::tests::rows_for_counters();
        rows[0].counters = Some(record(Reading::absent("counters: unavailable (no PMU)")));
        rows[0].details = serde_json::json!({"runtime_counters": {
            "samples": 4, "steals_per_sample": 12.5, "queue_max_len": 33,
            "lock_acquisitions_per_sample": 200.0, "lock_waits_per_sample": 50.0, "note": null}});
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("| 12.5 | 33 | 50.0 | 25.00% |"), "{text}");
        rows[0].details = serde_json::json!({"runtime_counters": {"samples": 4, "steals_per_sample": null,
            "queue_max_len": null, "note": "rayon does not expose steals"}});
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("| n/a | n/a | n/a | n/a |") && text.contains("rayon does not expose steals."), "{text}");
    }

    #[test]
    fn software_figures_are_per_sample_and_the_hardware_reason_is_said_once() {
        let mut rows = crate::report::tests::rows_for_counters();
        rows[0].cell.axes.insert(0, "mode".into());
        rows[0].cell.params.insert("mode".into(), serde_json::json!("a"));
        for r in rows.iter_mut() {
            r.counters = Some(record(Reading::absent("counters: unavailable (cycles: no PMU)")));
        }
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        assert!(text.contains("| work "), "{text}");
        // Each row under the name the overview gives it.
        assert!(text.contains("| w.x mode=a workers=1 "), "{text}");
        assert!(text.contains("2.00/0.500"), "{text}");
        assert!(text.contains("0.500 ms") && text.contains("50.00%"), "{text}");
        assert_eq!(text.matches("Hardware counters: unavailable (cycles: no PMU).").count(), 1, "{text}");
        assert!(!text.contains("IPC"));
    }

    #[test]
    fn hardware_columns_appear_when_counted() {
        let mut rows = crate::report::tests::rows_for_counters();
        rows[0].counters = Some(record(Reading::Present(HardwareCounters {
            cycles: Some(1000),
            instructions: Some(2500),
            ipc: Some(2.5),
            cache_references: Some(200),
            cache_misses: Some(50),
            dtlb_load_misses: Some(40),
            branch_misses: Some(8),
            user_space_only: true,
            min_running_fraction: 1.0,
            unavailable: Vec::new(),
        })));
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        assert!(text.contains("IPC") && text.contains("2.50") && text.contains("25.00%") && text.contains("10.0"), "{text}");
    }

    #[test]
    fn no_counters_no_section() {
        let rows = crate::report::tests::rows_for_counters();
        let refs: Vec<&Row> = rows.iter().collect();
        assert!(section(&refs, &rows[0].cell.group).is_none());
    }
}
