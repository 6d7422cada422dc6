//! The counters table of a group: software counters per timed sample for
//! every row, and the hardware counters where the kernel gave them (else the
//! reason, once).

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
    let mut t = Table::new(&cols);
    for (r, c) in &counted {
        let s = &c.software;
        let mut line = vec![
            match r.axes_text() {
                a if a == "-" || a.is_empty() => r.cell.workload.clone(),
                a => format!("{} {a}", r.cell.workload),
            },
            c.window.as_str().to_string(),
            format!("{}/{}", per(c, s.voluntary_ctx_switches), per(c, s.involuntary_ctx_switches)),
            s.cpu_migrations.map(|m| per(c, m)).unwrap_or_else(|| "n/a".into()),
            format!("{}/{}", per(c, s.minor_faults), per(c, s.major_faults)),
            ms(c.per_sample(s.run_queue_wait_ns)),
            if s.run_ns > 0 { format::percent(s.run_queue_wait_ns as f64 / s.run_ns as f64) } else { "n/a".into() },
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
        t.push(line);
    }
    let mut out = vec![
        Block::heading(3, Line::from("Counters (").text(group).text(")")),
        Block::paragraph(
            Line::from("Per timed sample (sums over the samples divided by their number); ")
                .code("work")
                .text(" = exactly the work window, ")
                .code("sample")
                .text(" = the sample call around it; wait/run = run-queue wait over run time of the listed threads."),
        ),
        Block::Table(t),
    ];
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
    Some(out)
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
        }
    }

    #[test]
    fn software_figures_are_per_sample_and_the_hardware_reason_is_said_once() {
        let mut rows = crate::report::tests::rows_for_counters();
        for r in rows.iter_mut() {
            r.counters = Some(record(Reading::absent("counters: unavailable (cycles: no PMU)")));
        }
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::text::document::markdown::render(&section(&refs, &rows[0].cell.group).unwrap());
        assert!(text.contains("| work "), "{text}");
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
