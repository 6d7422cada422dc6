//! The capOS CPU-scaling patterns end to end (`cpu.dynamic`, `cpu.barrier`,
//! `cpu.service`): at 1 and 2 workers every row is ok (or skipped with a
//! reason) with a work and a total window in every sample, the process server
//! (which only a single-threaded worker may fork) answers, and each injected
//! fault makes its workload's rows invalid and no other's.

use serde_json::Value;

use crate::common::{Sandbox, row_name as name, text};

const IDS: [&str; 3] = ["cpu.dynamic", "cpu.barrier", "cpu.service"];

/// Small sizes: `mean_work` stays at the spawn runtime's minimum so it runs too.
const SMALL: &[&str] = &[
    "-p",
    "tasks=64",
    "-p",
    "mean_work=10000",
    "-p",
    "cells=256",
    "-p",
    "cpu.barrier.work_rounds=1",
    "-p",
    "phases=40",
    "-p",
    "requests=200",
    "-p",
    "cpu.service.work_rounds=100",
];

fn run(extra: &[&str], code: i32) -> Vec<Value> {
    let sb = Sandbox::new();
    let args = [&IDS[..], &["--workers", "1,2", "--trials", "1", "--runs", "2", "--warmup", "1", "--settle", "0"], SMALL, extra].concat();
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(code), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let rows = sb.rows();
    // dynamic: 3 runtimes x 2; barrier: 2; service: 2 servers x 2.
    assert_eq!(rows.len(), 12, "{rows:?}");
    rows
}

fn id(r: &Value) -> &str {
    r["cell"]["workload"].as_str().unwrap()
}

/// The details each workload must record.
fn detail_keys(workload: &str) -> &'static [&'static str] {
    match workload {
        "cpu.dynamic" => {
            &["runtime", "tasks", "distribution", "task_rounds", "largest_task_share", "static_split_max_share", "last_sample_threads"]
        }
        "cpu.barrier" => &["cells", "phases", "cells_per_thread", "last_sample_thread_ns", "last_sample_thread_wait_ns"],
        "cpu.service" => &["server", "server_kind", "requests_per_client", "last_sample_client_ns", "last_sample_mismatches"],
        other => panic!("unexpected workload {other}"),
    }
}

#[test]
fn every_row_is_ok_with_a_work_and_a_total_window() {
    let rows = run(&[], 0);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/RECORD-FORMAT.md")).unwrap();
    let mut ok = 0;
    for r in &rows {
        match r["status"].as_str() {
            Some("ok") => ok += 1,
            Some("skipped") => {
                assert!(!r["reason"].as_str().unwrap_or("").is_empty(), "{}: a skip without a reason", name(r));
                continue;
            }
            other => panic!("{}: status {other:?}: {}", name(r), r["reason"]),
        }
        assert_eq!(r["verifier"]["passed"], true, "{}", r["verifier"]);
        assert_eq!((r["shape"].as_str(), r["unit"].as_str()), (Some("scaling"), Some("ns")));
        assert!(r["total_window"].as_str().is_some_and(|t| !t.is_empty()), "{}: no total window", name(r));
        let samples = r["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 3, "{}: 1 warmup + 2 timed", name(r));
        for s in samples {
            let (work, total) = (s["work_ns"].as_u64().unwrap(), s["total_ns"].as_u64().unwrap_or(0));
            assert!(work > 0 && total >= work, "{}: work {work}, total {total}", name(r));
        }
        assert!(r["stats"]["work"]["median"].as_f64().unwrap() > 0.0);
        assert!(r["stats"]["total"]["median"].as_f64().unwrap() > 0.0, "{}: no total statistics", name(r));
        for k in detail_keys(id(r)) {
            assert!(!r["details"][k].is_null(), "{}: details.{k} missing in {}", name(r), r["details"]);
        }
        for k in r["details"].as_object().unwrap().keys() {
            assert!(doc.contains(&format!("`{k}`")), "docs/RECORD-FORMAT.md does not name {}'s detail `{k}`", id(r));
        }
        let workers = r["cell"]["workers"].as_u64().unwrap() as usize;
        match id(r) {
            "cpu.barrier" => assert_eq!(r["details"]["last_sample_thread_wait_ns"].as_array().unwrap().len(), workers),
            "cpu.service" => {
                assert_eq!(r["details"]["last_sample_client_ns"].as_array().unwrap().len(), workers);
                let server = r["details"]["server"].as_str().unwrap();
                let kind = r["cell"]["params"]["server"].as_str().unwrap();
                assert!(if kind == "process" { server.starts_with("forked process ") } else { server == "thread" }, "{server}");
            }
            _ => {
                // 64 x 10,000 rounds, each size rounded to a whole round.
                let total = r["details"]["task_rounds"]["total"].as_u64().unwrap();
                assert!(total.abs_diff(640_000) <= 64, "{}", r["details"]);
            }
        }
    }
    // Every row runs at these sizes, spawn included.
    assert_eq!(ok, 12);
}

#[test]
fn each_fault_makes_its_workloads_rows_invalid_and_no_others() {
    for (fault, target) in [("drop-task", "cpu.dynamic"), ("stale-read", "cpu.barrier"), ("wrong-reply", "cpu.service")] {
        let rows = run(&["--inject-fault", fault], 1);
        let mut invalid = 0;
        for r in &rows {
            if id(r) == target {
                assert_eq!(r["cell"]["fault"], fault);
                assert_eq!(r["status"], "invalid", "{}: {}", name(r), r["reason"]);
                let v = &r["verifier"];
                assert_eq!(v["passed"], false);
                assert_ne!(v["expected"], v["observed"]);
                assert!(r["reason"].as_str().unwrap().starts_with("verifier failed: expected"), "{}", r["reason"]);
                // The first sample fails, and the cell stops there.
                assert_eq!(v["checked_samples"], 1, "{}", name(r));
                invalid += 1;
            } else {
                assert!(r["cell"]["fault"].is_null());
                assert_eq!(r["status"], "ok", "{}: {}", name(r), r["reason"]);
            }
        }
        assert!(invalid >= 2, "{fault}: {invalid} invalid rows");
    }
}

#[test]
fn tiny_tasks_skip_the_thread_per_task_runtime_with_the_reason() {
    let sb = Sandbox::new();
    let out = sb.run(&["cpu.dynamic", "--workers", "1", "--runs", "1", "-p", "runtime=spawn", "-p", "tasks=8", "-p", "mean_work=100"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!((rows.len(), rows[0]["status"].as_str()), (1, Some("skipped")));
    assert!(rows[0]["reason"].as_str().unwrap().contains("thread per task"), "{}", rows[0]["reason"]);
}
