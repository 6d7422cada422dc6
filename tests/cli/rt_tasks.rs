//! The `rt` task workloads end to end at small sizes: every row of the group is
//! ok, or skipped with a reason where a fine-grained workload meets the spawn
//! runtime; each injected fault makes the rows of its workload invalid.

use serde_json::Value;

use crate::common::{Sandbox, s, text};

/// Two timed samples after one warmup, no settle pause.
const TWO_RUNS: &[&str] = &["--workers", "1,2", "--trials", "1", "--runs", "2", "--warmup", "1", "--settle", "0"];

/// Small sizes for every `rt` workload (scoped, so each selection may use them).
const SMALL: &[&str] = &[
    "-p",
    "rt.fib.n=16",
    "-p",
    "rt.fib.cutoff=4",
    "-p",
    "rt.quicksort.len=20000",
    "-p",
    "rt.quicksort.cutoff_len=1024",
    "-p",
    "rt.prodcons.items=5000",
    "-p",
    "rt.prodcons.capacity=64",
    "-p",
    "rt.parallel-for.items=5000",
    "-p",
    "rt.task-alloc.tasks=5000",
];

/// Workloads whose tasks are too many and too small for a thread per task.
const FINE_GRAINED: &[&str] = &["rt.fib", "rt.task-alloc"];

/// Runs `selection` with the small sizes and returns the rows, checking the
/// exit code.
fn run(selection: &[&str], code: i32) -> Vec<Value> {
    let sb = Sandbox::new();
    // A scoped parameter must name a selected workload: keep the ones that do.
    let mut small = Vec::new();
    for pair in SMALL.chunks(2) {
        if selection.iter().any(|s| *s == "rt" || pair[1].starts_with(&format!("{s}."))) {
            small.extend_from_slice(pair);
        }
    }
    let out = sb.run(&[selection, TWO_RUNS, &small].concat());
    assert_eq!(out.status.code(), Some(code), "{}\n{}", text(&out.stdout), text(&out.stderr));
    sb.rows()
}

/// Whether a row is expected to be skipped: a fine-grained cell on spawn.
fn skipped_on_spawn(r: &Value) -> bool {
    let p = &r["cell"]["params"];
    p["runtime"] == "spawn" && (FINE_GRAINED.contains(&s(&r["cell"]["workload"])) || p["mode"] == "per-item")
}

#[test]
fn every_rt_row_is_ok_or_a_fine_grained_spawn_skip() {
    let rows = run(&["rt"], 0);
    let ids: Vec<&str> = rows.iter().map(|r| s(&r["cell"]["workload"])).collect();
    for id in ["rt.fib", "rt.quicksort", "rt.prodcons", "rt.parallel-for", "rt.task-alloc", "rt.startup"] {
        // 3 runtimes x 2 worker counts, and 2 modes for parallel-for.
        let want = if id == "rt.parallel-for" { 12 } else { 6 };
        assert_eq!(ids.iter().filter(|&&i| i == id).count(), want, "{id}");
    }
    for r in &rows {
        let id = s(&r["cell"]["workload"]);
        let name = s(&r["cell"]["row_id"]);
        if skipped_on_spawn(r) {
            assert_eq!(r["status"], "skipped", "{name}");
            assert!(s(&r["reason"]).contains("thread per task"), "{name}: {}", r["reason"]);
            assert_eq!(r["skip"], "by-design", "{name}: on any machine");
            continue;
        }
        assert_eq!(r["status"], "ok", "{name}: {}", r["reason"]);
        assert_eq!(r["verifier"]["passed"], true, "{name}");
        assert_eq!(r["shape"], "scaling", "{name}");
        assert_eq!(r["samples"].as_array().unwrap().len(), 3, "{name}: one warmup and two timed samples");
        let d = &r["details"];
        assert_eq!(d["runtime"], r["cell"]["params"]["runtime"], "{name}");
        if id == "rt.startup" {
            assert_eq!(r["unit"], "ns");
            assert!(r["measurement"]["iters_per_sample"].as_u64().unwrap() >= 1);
            assert!(d["builds_total"].as_u64().unwrap() >= 3, "{name}");
        } else {
            assert_eq!(r["measurement"]["iters_per_sample"], 1, "{name} is not batched");
            if id == "rt.quicksort" {
                assert!(d["overhead_dominated"].is_boolean(), "{name}: {d}");
            } else {
                // Fewer than 10,000 operations per sample are marked.
                assert_eq!(d["overhead_dominated"], true, "{name}: {d}");
            }
        }
        if id == "rt.fib" {
            assert_eq!(d["tasks"], 752, "{name}: fib(16) with cutoff 4 forks 752 tasks");
            assert_eq!(r["verifier"]["observed"], "987");
        }
    }
}

#[test]
fn each_fault_makes_its_workloads_rows_invalid() {
    for (id, fault) in [
        ("rt.fib", "drop-task"),
        ("rt.quicksort", "swap-pair"),
        ("rt.prodcons", "lose-item"),
        ("rt.parallel-for", "skip-item"),
        ("rt.task-alloc", "skip-task"),
        ("rt.startup", "wrong-probe"),
    ] {
        let rows = run(&[id, "--inject-fault", fault], 1);
        let mut invalid = 0;
        for r in &rows {
            let name = s(&r["cell"]["row_id"]);
            assert_eq!(r["cell"]["fault"], fault, "{name}");
            if skipped_on_spawn(r) {
                assert_eq!(r["status"], "skipped", "{name}");
                continue;
            }
            assert_eq!(r["status"], "invalid", "{name} under {fault}: {}", r["reason"]);
            let v = &r["verifier"];
            assert_eq!(v["passed"], false, "{name}");
            assert_ne!(v["expected"], v["observed"], "{name}");
            assert!(s(&r["reason"]).starts_with("verifier failed: expected"), "{name}: {}", r["reason"]);
            invalid += 1;
        }
        assert!(invalid >= 4, "{id}: only {invalid} rows reached the fault");
    }
}
