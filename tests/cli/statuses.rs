//! Statuses on crash, hang, wrong answer and interrupt: the run goes on,
//! every finished row is kept, and bad rows stay out of the tables.

use std::time::{Duration, Instant};

use crate::common::{FAST, SMALL_CHECKSUM, SMALL_PRIMES, Sandbox, row, text, trial_samples};

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
    assert!(text(&out.stdout).contains("failed: selftest.crash: killed by SIGSEGV"), "{}", text(&out.stdout));
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
    // The group's section: after the rows not ok and the summary, before the footer.
    let section = md.split("\n## selftest\n").nth(1).and_then(|g| g.split("\n## ").next()).expect("the group's section");
    assert!(section.contains("No ok rows"), "{section}");
    assert!(!section.contains("| Median"), "an invalid row reached a performance table:\n{section}");
    // The summary names it with its status and no figure.
    let summary = md.split("\n## Summary\n").nth(1).and_then(|s| s.split("\n## ").next()).expect("the summary");
    let line =
        summary.lines().find(|l| l.starts_with("| [selftest.wrong]") || l.starts_with("| selftest.wrong ")).expect("the summary's line");
    assert_eq!(line.split('|').map(str::trim).skip(2).collect::<Vec<_>>(), ["", "", "", "", "invalid", ""], "{line}");
    assert!(md.contains("| selftest.wrong | invalid | verifier failed"), "{md}");
    // With the error removed the same workload is ok.
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.wrong", "--runs", "3", "-p", "error=0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(row(&sb.rows(), "selftest.wrong")["status"], "ok");
}

#[test]
fn sigint_mid_run_keeps_finished_trials_and_marks_rows_short_of_their_trials() {
    // A seed whose first round runs the two cpu cells (plan positions 0 and 1)
    // before the hang (2): the interrupt then comes after their first trial.
    let seed = (0..).find(|&s| proofbench::testing::round_order(&[0, 1, 2], s, 0)[2] == 2).unwrap();
    let sb = Sandbox::new();
    let mut child = sb
        .command(
            &[
                &["selftest.hang", "cpu.primes", "cpu.checksum", "--workers", "1", "--timeout", "60s", "--seed", &seed.to_string()],
                FAST,
                SMALL_PRIMES,
                SMALL_CHECKSUM,
            ]
            .concat(),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let hang_log = sb.run_dir().join("logs/002-selftest.hang.log");
    let t = Instant::now();
    while !std::fs::read_to_string(&hang_log).is_ok_and(|l| l.contains("proofbench worker pid")) {
        assert!(t.elapsed() < Duration::from_secs(60), "the hang did not start within a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "the run took {:?} to stop", t.elapsed());
    assert_eq!(status.code(), Some(130));
    // The two cpu rows keep their one finished trial and say they are short.
    let rows = sb.rows();
    assert_eq!(rows.len(), 2, "only rows with a finished trial are kept");
    for r in &rows {
        assert_eq!((r["status"].as_str(), r["stop"].as_str()), (Some("ok"), Some("interrupted")), "{}", r["cell"]["row_id"]);
        assert_eq!((r["trials"].as_array().unwrap().len(), r["trials_planned"].as_u64()), (1, Some(2)));
        assert_eq!(r["stats"]["headline"]["no_interval"], "1 trial", "one trial: no interval");
    }
    let run = sb.run_json();
    assert_eq!(run["interrupted"], true);
    assert_eq!(run["complete"], false);
    assert_eq!(run["not_run"], serde_json::json!(["002-selftest.hang"]));
    assert_eq!(run["rounds"][0]["order"], serde_json::json!([0, 1, 2]));
    let md = sb.report_md();
    assert!(md.contains("the run was interrupted") && md.contains("| not run"), "{md}");
    assert!(md.contains("| ok (1 of 2) |") && md.contains("n/a: 1 trial"), "{md}");
    // The interrupted worker's process group is gone.
    let log = std::fs::read_to_string(&hang_log).unwrap();
    let line = log.lines().find(|l| l.starts_with("proofbench worker pid")).unwrap();
    let pid: i32 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    // SAFETY: probing with signal 0 sends nothing.
    assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "worker {pid} still alive");
}

#[test]
fn noisy_samples_are_measured_and_classified() {
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.noisy", "--trials", "3", "--runs", "12", "-p", "base_us=100", "-p", "jitter_us=2000"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    let r = row(&rows, "selftest.noisy");
    let s = &r["stats"]["work"];
    assert_eq!(s["n"], 36, "12 timed samples in each of 3 trials");
    assert_eq!(s["variance"], "noisy", "CV {}", s["cv"]);
    let h = &r["stats"]["headline"];
    assert_eq!(h["trials"], 3);
    assert_eq!(h["trial_medians"].as_array().unwrap().len(), 3);
    assert!(h["ci95"]["lo"].as_f64() <= h["median"].as_f64() && h["median"].as_f64() <= h["ci95"]["hi"].as_f64(), "{h}");
    assert_eq!((r["stop"].as_str(), r["trials_planned"].as_u64()), (Some("fixed"), Some(3)));
    for t in r["trials"].as_array().unwrap() {
        assert_eq!(t["measurement"]["stop_reason"], "fixed");
        assert_eq!(t["timed_samples"], 12);
        assert!(t["process"]["pid"].as_u64().is_some() && t["facts"]["allowed_cpus"].is_array(), "{t}");
    }
    let pids: std::collections::BTreeSet<u64> =
        r["trials"].as_array().unwrap().iter().map(|t| t["process"]["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 3, "each trial is its own process");
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
    // `measurement` is the first trial's: each trial calibrates its own batch.
    for s in trial_samples(r, 0) {
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
