//! Counters on every row: software counters filled from the kernel's
//! accounting, the window they cover, hardware counters or the reason they
//! are missing, and the counters tables of `report`.

use serde_json::Value;

use crate::common::{FAST, FAST_TRIALS, SMALL_PRIMES, Sandbox, bin, row, text};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn every_timed_row_carries_software_counters_and_says_why_hardware_ones_are_missing() {
    let sb = Sandbox::new();
    let args = [
        &["os.syscall", "rt.fib", "cpu.primes", "selftest.crash", "--include-selftest", "--runtime", "rayon", "--workers", "2"],
        FAST,
        SMALL_PRIMES,
        &["-p", "rt.fib.n=20", "-p", "rt.fib.cutoff=4"],
    ]
    .concat();
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(1), "the crash row fails the run: {}", text(&out.stderr));
    let rows = sb.rows();

    // A workload that brackets its work on the sampling thread: the exact window.
    let syscall = &row(&rows, "os.syscall")["counters"];
    assert_eq!(syscall["window"], "work");
    assert_eq!(u(&syscall["samples"]), 3 * FAST_TRIALS as u64, "every timed sample of every trial");
    assert!(u(&syscall["software"]["run_ns"]) > 0, "{syscall}");

    // A pool: its threads are listed by name, each with its schedstat.
    let fib = &row(&rows, "rt.fib")["counters"];
    assert_eq!(fib["window"], "work");
    let threads = fib["threads"].as_array().unwrap();
    let pool: Vec<&Value> = threads.iter().filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("rayon-"))).collect();
    assert_eq!(pool.len(), 2 * FAST_TRIALS, "two pool threads in each trial's process: {fib}");
    // (A thread still on its CPU when read has its latest time slice unaccounted.)
    assert!(pool.iter().map(|t| u(&t["run_ns"])).sum::<u64>() > 0, "{fib}");
    let sum: u64 = threads.iter().map(|t| u(&t["run_ns"])).sum();
    assert_eq!(u(&fib["software"]["run_ns"]), sum);

    // Process workers time themselves: the counters cover the sample call,
    // and the worker processes' threads (which do the work) are listed.
    let primes = &row(&rows, "cpu.primes")["counters"];
    assert_eq!(primes["window"], "sample");
    let threads = primes["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 3 * FAST_TRIALS, "each trial's worker thread and its two worker processes: {primes}");
    assert_eq!(u(&primes["software"]["processes"]), 3, "the worker and its two children: {primes}");
    let pids: std::collections::BTreeSet<u64> = threads.iter().map(|t| u(&t["pid"])).collect();
    assert_eq!(pids.len(), 3 * FAST_TRIALS, "one process per thread: {primes}");
    assert_eq!(u(&primes["software"]["run_ns"]), threads.iter().map(|t| u(&t["run_ns"])).sum::<u64>());

    // Interrupts on the trial's CPUs, over the timed samples, with an idle baseline.
    for r in [syscall, fib, primes] {
        let Some(irq) = r.get("interrupts") else { panic!("no interrupts (is /proc/interrupts readable?): {r}") };
        assert_eq!(irq["samples"], r["samples"], "{irq}");
        assert!(!irq["cpus"].as_array().unwrap().is_empty() && u(&irq["span_ns"]) > 0, "{irq}");
        assert!(irq["counts"]["loc"].is_u64() || irq["counts"]["loc"].is_null(), "{irq}");
        assert!(u(&irq["baseline_ns"]) >= 250_000_000 && irq["baseline"].is_object(), "{irq}");
    }

    for r in [syscall, fib, primes] {
        match r["hardware"].get("absent") {
            Some(reason) => {
                let reason = reason.as_str().unwrap();
                assert!(reason.starts_with("counters: unavailable (") && reason.ends_with(')') && reason.len() > 40, "{reason}");
            }
            None => assert!(r["hardware"]["cycles"].as_u64().is_some_and(|c| c > 0), "{r}"),
        }
    }
    // A crashed cell has no timed sample and no counters.
    assert!(row(&rows, "selftest.crash")["counters"].is_null());

    let md = sb.report_md();
    assert!(md.contains("### Counters (os)") && md.contains("### Counters (rt)") && md.contains("### Counters (cpu)"), "{md}");
    assert!(md.matches("Hardware counters: unavailable").count() <= 3, "said once per group at most");

    // `report --counters` prints only those tables.
    let out = std::process::Command::new(bin()).args(["report", "--counters"]).arg(sb.run_dir()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let only = text(&out.stdout);
    assert!(only.starts_with("### Counters (cpu)"), "{only}");
    assert!(only.contains("rt.fib workers=2") && !only.contains("## Not ok"), "{only}");
    assert!(only.contains("RES/CAL/TLB/LOC per sample") && only.contains("Idle baseline") && only.contains("system-wide"), "{only}");
    assert!(only.contains("Steals/sample") && only.contains("rayon does not expose steals"), "{only}");
}
