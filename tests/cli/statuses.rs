//! Statuses on crash, hang, wrong answer and interrupt: the run goes on,
//! every finished row is kept, and bad rows stay out of the tables.

use std::time::{Duration, Instant};

use crate::common::{FAST, SMALL_CHECKSUM, SMALL_PRIMES, Sandbox, row, text};

#[test]
fn a_crash_is_a_failed_row_with_the_signal_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["selftest.crash", "cpu.primes", "--workers", "1"], FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 2);
    let crash = row(&rows, "selftest.crash");
    assert_eq!(crash["status"], "failed");
    assert_eq!(crash["process"]["signal_name"], "SIGSEGV");
    assert!(crash["reason"].as_str().unwrap().contains("SIGSEGV"), "{}", crash["reason"]);
    // The good sample before the crash is lost with the worker; its log is kept.
    let log = std::fs::read_to_string(sb.run_dir().join(crash["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("raising SIGSEGV"), "{log}");
    assert_eq!(row(&rows, "cpu.primes")["status"], "ok");
    assert!(text(&out.stdout).contains("| selftest.crash | failed | killed by SIGSEGV"), "{}", text(&out.stdout));
}

#[test]
fn a_hang_is_a_timeout_within_the_timeout_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let t = Instant::now();
    let out = sb.run(&[&["selftest.hang", "cpu.primes", "--workers", "1", "--timeout", "2s"], FAST, SMALL_PRIMES].concat());
    let took = t.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = sb.rows();
    let hang = row(&rows, "selftest.hang");
    assert_eq!(hang["status"], "timeout");
    let wall = hang["process"]["wall_ms"].as_f64().unwrap();
    assert!((2000.0..3500.0).contains(&wall), "the hang was killed after {wall} ms");
    assert_eq!(hang["process"]["signal_name"], "SIGTERM");
    assert_eq!(row(&rows, "cpu.primes")["status"], "ok");
    assert!(took < Duration::from_secs(30), "the whole run took {took:?}");
}

#[test]
fn a_wrong_answer_is_invalid_and_stays_out_of_every_table() {
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.wrong", "--runs", "3"]);
    assert_eq!(out.status.code(), Some(1));
    let rows = sb.rows();
    let wrong = row(&rows, "selftest.wrong");
    assert_eq!(wrong["status"], "invalid");
    assert_eq!(wrong["verifier"]["passed"], false);
    assert_eq!(wrong["verifier"]["expected"], "5000050000 (n(n+1)/2)");
    assert_eq!(wrong["verifier"]["observed"], "5000050001");
    // The sample that gave the wrong answer is kept as evidence.
    assert_eq!(wrong["samples"].as_array().unwrap().len(), 1);
    let md = sb.report_md();
    let section = md.split("## Not ok").next().unwrap();
    assert!(section.contains("No ok rows"), "{section}");
    assert!(!section.contains("| Median"), "an invalid row reached a performance table:\n{section}");
    assert!(md.contains("| selftest.wrong | invalid | verifier failed"), "{md}");
    // With the error removed the same workload is ok.
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.wrong", "--runs", "3", "-p", "error=0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(row(&sb.rows(), "selftest.wrong")["status"], "ok");
}

#[test]
fn sigint_mid_run_keeps_finished_rows_and_writes_the_report() {
    let sb = Sandbox::new();
    // Cells run in registry order: the two cpu rows, then the hang.
    let mut child = sb
        .command(
            &[&["selftest.hang", "cpu.primes", "cpu.checksum", "--workers", "1", "--timeout", "60s"], FAST, SMALL_PRIMES, SMALL_CHECKSUM]
                .concat(),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rows_file = sb.run_dir().join("rows.jsonl");
    let t = Instant::now();
    while std::fs::read_to_string(&rows_file).map(|s| s.lines().count()).unwrap_or(0) < 2 {
        assert!(t.elapsed() < Duration::from_secs(60), "no row after a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300)); // the hang has started
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "the run took {:?} to stop", t.elapsed());
    assert_eq!(status.code(), Some(130));
    let rows = sb.rows();
    assert_eq!(rows.len(), 2, "only the finished rows are kept");
    assert!(rows.iter().all(|r| r["status"] == "ok"));
    let run = sb.run_json();
    assert_eq!(run["interrupted"], true);
    assert_eq!(run["complete"], false);
    assert_eq!(run["not_run"], serde_json::json!(["002-selftest.hang"]));
    let md = sb.report_md();
    assert!(md.contains("the run was interrupted") && md.contains("| not run"), "{md}");
    // The interrupted worker's process group is gone.
    let hang_log = std::fs::read_to_string(sb.run_dir().join("logs/002-selftest.hang.log")).unwrap();
    let pid: i32 = hang_log.split_whitespace().nth(3).unwrap().parse().unwrap();
    // SAFETY: probing with signal 0 sends nothing.
    assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "worker {pid} still alive");
}

#[test]
fn noisy_samples_are_measured_and_classified() {
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.noisy", "--runs", "12", "-p", "base_us=100", "-p", "jitter_us=2000"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    let r = row(&rows, "selftest.noisy");
    let s = &r["stats"]["work"];
    assert_eq!(s["n"], 12);
    assert_eq!(s["variance"], "noisy", "CV {}", s["cv"]);
    assert!(s["ci95"]["lo"].as_f64() <= s["median"].as_f64() && s["median"].as_f64() <= s["ci95"]["hi"].as_f64());
    assert_eq!(r["measurement"]["stop_reason"], "fixed");
}

#[test]
fn nanosecond_operations_are_batched_until_the_clock_costs_under_one_percent() {
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.tiny", "--runs", "5", "--settle", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    let r = row(&rows, "selftest.tiny");
    let m = &r["measurement"];
    let iters = m["iters_per_sample"].as_u64().unwrap();
    let timer = m["timer_overhead_ns"].as_f64().unwrap();
    assert!(iters > 1000, "{iters} iterations per sample");
    assert!(m["calibration_samples"].as_u64().unwrap() >= 2);
    assert!(m["loop_overhead_ns_per_iter"].as_f64().unwrap() > 0.0);
    assert_eq!(m["overhead_subtracted"], false);
    let grown = m["iters_grown_after_warmup"].as_bool().unwrap();
    for s in r["samples"].as_array().unwrap() {
        let (work, ops) = (s["work_ns"].as_f64().unwrap(), s["ops"].as_f64().unwrap());
        let n = s["iters"].as_u64().unwrap();
        if s["warmup"] == true {
            // Warmup runs at the calibrated count; it grows afterwards only when
            // warmup showed the clock still costing over one percent.
            assert!(n <= iters && (grown || n == iters), "warmup at {n} iterations, timed at {iters}");
            continue;
        }
        assert_eq!(n, iters);
        assert!(work >= 100.0 * timer, "a {work} ns sample against a {timer} ns clock");
        assert!((s["value"].as_f64().unwrap() - work / ops).abs() < 1e-9 * work, "value is ns per operation");
    }
    assert_eq!(r["unit"], "ns/op");
}
