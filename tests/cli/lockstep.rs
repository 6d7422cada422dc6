//! Lockstep sets (`run --variant ... --lockstep`): every kind of variant
//! runs with its workers alive together, taking their timed samples in
//! turn on one CPU; a side that dies ends its set at once, both rows
//! failed with the reason, never a hang.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Sandbox, bin, text};

/// A command workload whose value is `n` times `$PB_K` (1 when unset), and
/// which kills its worker on its fifth run when `PB_DIE` is set, or hangs
/// from then on when `PB_HANG` is.
const TOML: &str = r#"
[[workload]]
id = "step.env"
summary = "A value from its environment; dies when asked"
unit = "ns"
direction = "lower-is-better"
shell = true
command = "c=$(cat count 2>/dev/null || echo 0); echo $((c + 1)) > count; if [ -n \"$PB_DIE\" ] && [ $c -ge 4 ]; then kill -9 $PPID; sleep 5; fi; if [ -n \"$PB_HANG\" ] && [ $c -ge 4 ]; then sleep 1000; fi; echo value=$(( ${PB_K:-1} * {n} ))"
metric = { regex = 'value=(\d+)' }

[workload.axes]
n = 1000

[workload.verify]
must_match = ['value=\d+']
"#;

fn toml(dir: &Path) -> PathBuf {
    let p = dir.join("step.toml");
    std::fs::write(&p, TOML).unwrap();
    p
}

/// `step.env` of `toml` in lockstep: two trials of `runs` sample sets.
fn base_args(toml: &Path, runs: &str) -> Vec<String> {
    let toml = toml.display().to_string();
    ["step.env", "--workloads", &toml, "--trials", "2", "--runs", runs, "--warmup", "1", "--settle", "0", "--lockstep"]
        .map(String::from)
        .to_vec()
}

fn row<'a>(rows: &'a [Value], variant: &str) -> &'a Value {
    rows.iter().find(|r| r["cell"]["variant"]["name"] == variant).unwrap_or_else(|| panic!("no row of {variant}"))
}

#[test]
fn every_kind_of_variant_runs_in_lockstep_on_one_cpu_taking_turns() {
    let sb = Sandbox::new();
    let toml = toml(sb.tmp.path());
    let copy = sb.tmp.path().join("proofbench-copy");
    std::fs::copy(bin(), &copy).unwrap();
    let exe = format!("exe=exe={}", copy.display());
    let variants = ["base=", "env=env=PB_K=3", "par=param=n=2000", "wrap=launcher=env PB_K=5", &exe];
    let mut args = base_args(&toml, "6");
    for v in &variants {
        args.extend(["--variant".to_string(), v.to_string()]);
    }
    let out = sb.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), variants.len());
    let median = |v: &str| row(&rows, v)["stats"]["headline"]["median"].as_f64().unwrap();
    assert_eq!((median("base"), median("env"), median("par"), median("wrap"), median("exe")), (1000.0, 3000.0, 2000.0, 5000.0, 1000.0));
    let sides: Vec<String> = variants.iter().map(|v| v.split('=').next().unwrap().to_string()).collect();
    for v in &sides {
        for t in row(&rows, v)["trials"].as_array().unwrap() {
            let ls = &t["lockstep"];
            // Every trial of a round is one set of all five sides.
            assert_eq!(ls["sides"].as_array().map(Vec::len), Some(variants.len()), "{t}");
            assert!(ls["sides"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().ends_with(&format!("variant={v}"))), "{t}");
            // `--runs 6`: six sets, the runner ending each side's loop.
            assert_eq!((t["timed_samples"].as_u64(), t["measurement"]["stop_reason"].as_str()), (Some(6), Some("lockstep")), "{t}");
            // One CPU for every side of a set of one-thread cells.
            let cpu = ls["cpu"].as_u64().expect("a CPU for one-thread cells");
            assert_eq!(t["facts"]["allowed_cpus"], serde_json::json!([cpu]), "{t}");
            // The other sides' turns are not other processes' work.
            assert!(t["facts"]["interference"]["partners_cpu_ms"].as_f64().is_some(), "{t}");
        }
    }
}

#[test]
fn a_side_that_dies_ends_its_set_at_once_and_fails_both_rows_with_the_reason() {
    let sb = Sandbox::new();
    let toml = toml(sb.tmp.path());
    let start = Instant::now();
    let mut args = base_args(&toml, "10");
    args.extend(["--timeout", "60s", "--variant", "a=", "--variant", "b=env=PB_DIE=1"].map(String::from));
    let out = sb.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "failed rows exit 1: {}", text(&out.stderr));
    assert!(took < Duration::from_secs(30), "took {took:?}: the death is seen at once, not at the 60 s timeout");
    let rows = sb.rows();
    let (a, b) = (row(&rows, "a"), row(&rows, "b"));
    assert_eq!((a["status"].as_str(), b["status"].as_str()), (Some("failed"), Some("failed")), "{a}\n{b}");
    let reason = a["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("side") && reason.contains("lockstep set ended"), "{reason}");
}

#[test]
fn a_side_that_hangs_is_killed_at_the_timeout_and_its_set_ends_with_the_reason() {
    let sb = Sandbox::new();
    let toml = toml(sb.tmp.path());
    let mut args = base_args(&toml, "10");
    args.extend(["--timeout", "3s", "--variant", "a=", "--variant", "b=env=PB_HANG=1"].map(String::from));
    let start = Instant::now();
    let out = sb.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "failed rows exit 1: {}", text(&out.stderr));
    assert!(took < Duration::from_secs(20), "took {took:?}: the hung side is stopped at the 3 s timeout");
    let rows = sb.rows();
    let (a, b) = (row(&rows, "a"), row(&rows, "b"));
    // The runner stopped the hung side at the timeout; the other failed with the set.
    assert_eq!((a["status"].as_str(), b["status"].as_str()), (Some("failed"), Some("failed")), "{a}\n{b}");
    let reason = a["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("side B of the lockstep set did not answer for 3.0 s"), "{reason}");
    assert!(b["reason"].as_str().unwrap_or_default().contains("did not answer"), "{b}");
    // Nothing of the hung side is left running (a killed process may take a
    // moment to be reaped on a loaded machine: two seconds at most).
    let deadline = Instant::now() + Duration::from_secs(2);
    let ps = loop {
        let ps = std::process::Command::new("pgrep").args(["-f", "sleep 1000"]).output().unwrap();
        if ps.stdout.is_empty() || Instant::now() > deadline {
            break ps;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(ps.stdout.is_empty(), "left running: {}", text(&ps.stdout));
}

#[test]
fn noise_runs_its_two_variants_in_lockstep_and_run_without_variants_refuses_it() {
    let sb = Sandbox::new();
    let toml = toml(sb.tmp.path());
    let mut args = vec!["noise".to_string()];
    args.extend(base_args(&toml, "4"));
    let out = std::process::Command::new(bin()).args(&args).current_dir(sb.tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = std::fs::read_dir(sb.tmp.path().join("results"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().join("rows.jsonl").exists())
        .unwrap()
        .path();
    let rows: Vec<Value> =
        std::fs::read_to_string(run.join("rows.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter().all(|r| r["trials"].as_array().unwrap().iter().all(|t| t["lockstep"]["sides"].as_array().map(Vec::len) == Some(2))),
        "{rows:?}"
    );

    let out = sb.run(&base_args(&toml, "4").iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("proofbench: error: --lockstep needs two or more --variant"), "{err}");
}

#[test]
fn a_skipped_side_skips_its_set_and_a_cell_that_needs_two_cpus_runs_unpinned() {
    let sb = Sandbox::new();
    // Not meaningful by design: both sides skipped, the twin saying why.
    let spawn = ["rt.parallel-for", "-p", "mode=per-item", "-p", "runtime=spawn", "-p", "workers=1"];
    let mut args = spawn.to_vec();
    args.extend(["--trials", "2", "--settle", "0", "--lockstep", "--variant", "a=", "--variant", "b="]);
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(0), "skipped rows exit 0: {}", text(&out.stderr));
    let rows = sb.rows();
    for v in ["a", "b"] {
        let r = row(&rows, v);
        assert_eq!(r["status"].as_str(), Some("skipped"), "{r}");
        let reason = r["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("not meaningful for this many tiny tasks"), "{reason}");
    }
    // Two threads on two CPUs, though its workers look single: the set
    // pinned to one CPU is skipped by the machine, then runs on the run's CPUs.
    let sb = Sandbox::new();
    let out = sb.run(&[
        "os.ipc-rtt",
        "-p",
        "transport=pipe",
        "-p",
        "placement=cross-cpu",
        "--trials",
        "2",
        "--settle",
        "0",
        "--lockstep",
        "--variant",
        "a=",
        "--variant",
        "b=",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for v in ["a", "b"] {
        let r = row(&rows, v);
        let want = if cpus >= 2 { "ok" } else { "skipped" };
        assert_eq!(r["status"].as_str(), Some(want), "{cpus} CPUs: {r}");
        if cpus >= 2 {
            assert!(r["trials"].as_array().unwrap().iter().all(|t| t["lockstep"]["cpu"].is_null()), "not pinned: {r}");
        }
    }
}

#[test]
fn a_planted_change_is_different_and_one_pair_is_unknown_which_the_gate_says_with_exit_4() {
    // 10% more calls: DIFFERENT and regressed, the gate exiting 1.
    let sb = Sandbox::new();
    let common = ["os.syscall", "--settle", "0", "--lockstep", "--variant", "a=param=pad_pct=0"];
    let mut args = common.to_vec();
    // (--accept-disturbed: the tests share a busy machine, which alone would exit 3.)
    args.extend(["--variant", "b=param=pad_pct=10", "--fail-on-regression", "--accept-disturbed"]);
    let out = sb.run(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("proofbench: 1 row regressed"), "{err}");
    let cmp = sb.compare_json();
    let r = &cmp[0]["rows"][0];
    assert_eq!((r["word"].as_str(), r["verdict"].as_str()), (Some("DIFFERENT"), Some("regressed")), "{r}");
    assert!(r["lockstep_pairs"].as_u64().unwrap() >= 3 && r["lockstep_pairs"] == r["pairs"], "every pair in lockstep: {r}");
    // One trial, one pair: fewer than the first look (two), so UNKNOWN, exit
    // 4; --allow-unknown passes it, saying so.
    for (allow, code) in [(false, 4), (true, 0)] {
        let sb = Sandbox::new();
        let mut args = common.to_vec();
        args.extend(["--variant", "b=param=pad_pct=0", "--trials", "1", "--fail-on-regression"]);
        if allow {
            args.push("--allow-unknown");
        }
        let out = sb.run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains("1 row UNKNOWN"), "UNKNOWN is said, never silent: {err}");
        let cmp = sb.compare_json();
        assert_eq!(cmp[0]["rows"][0]["word"].as_str(), Some("UNKNOWN"), "{cmp}");
        let reason = cmp[0]["rows"][0]["reason"].as_str().unwrap_or_default();
        if cmp[0]["rows"][0]["one_side_disturbed"] == 1 {
            // Under load the one round may be left out (one side disturbed): said so.
            assert!(reason.contains("left out: one side disturbed"), "{reason}");
        } else {
            assert!(reason.contains("within its one lockstep pair") && reason.contains("does not hold the variation"), "{reason}");
        }
    }
}

#[test]
fn a_worker_that_does_not_take_turns_runs_its_sets_one_after_another_and_the_row_says_why() {
    // An older build (before lockstep) ignores the token and measures on
    // its own: this one is proofbench with the lockstep pipes hidden.
    let sb = Sandbox::new();
    let toml = toml(sb.tmp.path());
    let old = sb.tmp.path().join("old-build");
    std::fs::write(&old, format!("#!/bin/sh\nunset PROOFBENCH_LOCKSTEP\nexec '{}' \"$@\"\n", bin().display())).unwrap();
    std::fs::set_permissions(&old, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut args = base_args(&toml, "6");
    let at = args.iter().position(|a| a == "--trials").unwrap();
    args[at + 1] = "3".into();
    args.extend(["--variant", "new=", "--variant"].map(String::from));
    args.push(format!("old=exe={}", old.display()));
    let out = sb.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    for v in ["new", "old"] {
        let r = row(&rows, v);
        assert_eq!(r["status"], "ok", "{r}");
        let trials = r["trials"].as_array().unwrap();
        assert_eq!(trials.len(), 3, "{r}");
        for t in trials {
            assert!(t["lockstep"].is_null(), "{t}");
            let why = t["not_in_lockstep"].as_str().unwrap_or_default();
            assert!(why.contains("without taking turns") && why.contains("old-build"), "{t}");
        }
    }
    let c = crate::variants::ab(&sb.run_dir());
    let judged = &c[0]["rows"][0];
    // Every round paired, or said left out (one side disturbed under load).
    assert_eq!(judged["pairs"].as_u64().unwrap() + judged["one_side_disturbed"].as_u64().unwrap_or(0), 3, "{judged}");
    // Why it is UNKNOWN: not in lockstep, or (under load) rounds left out.
    let reason = judged["reason"].as_str().unwrap();
    let left_out = judged["one_side_disturbed"].as_u64().unwrap_or(0) > 0 && reason.contains("left out");
    assert!(reason.contains("not in lockstep") || left_out, "{judged}");
}
