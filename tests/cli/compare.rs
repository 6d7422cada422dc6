//! `proofbench compare`: a run against itself is unchanged everywhere, a
//! deliberately slowed run regresses (exit 1 with --fail-on-regression), and
//! what cannot be judged says why.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{Sandbox, bin, noisy_args, noisy_trials, text};

/// One run of [`noisy_args`] in `sb`, with `extra` arguments.
fn noisy(sb: &Sandbox, slowdown_pct: u32, extra: &[&str]) {
    let noisy = noisy_args(slowdown_pct);
    let args: Vec<&str> = noisy.iter().map(String::as_str).chain(extra.iter().copied()).collect();
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn compare(base: &Path, cand: &Path, flags: &[&str]) -> Output {
    Command::new(bin()).arg("compare").arg(base).arg(cand).args(flags).output().unwrap()
}

fn json(base: &Path, cand: &Path, flags: &[&str]) -> Value {
    let out = compare(base, cand, &[&["--format", "json"], flags].concat());
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("compare --format json prints JSON")
}

fn verdicts(v: &Value) -> Vec<String> {
    v["rows"].as_array().unwrap().iter().map(|r| r["verdict"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_run_against_itself_is_unchanged_and_a_slowed_run_regresses() {
    let (base, slowed) = (Sandbox::new(), Sandbox::new());
    // Five trials a side: with three, one trial of the base woken late on a
    // loaded machine once left the interval too wide for a verdict.
    let five = |sb: &Sandbox, slowdown_pct| {
        let out = sb.run(&noisy_trials(slowdown_pct, 5).iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    };
    five(&base, 100);
    // Eight times the sleep: even a loaded machine's late wake-ups in the base
    // run (several times 1 ms) leave the whole CI beyond a 20% band.
    five(&slowed, 800);

    let same = json(&base.run_dir(), &base.run_dir(), &[]);
    assert_eq!(verdicts(&same), vec!["unchanged"]);
    assert_eq!(same["rows"][0]["ratio"], 1.0);
    let out = compare(&base.run_dir(), &base.run_dir(), &["--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("0 improved, 0 regressed, 1 unchanged, 0 not comparable."));

    // Eight times the sleep: regressed, and the gate fails.
    let out = compare(&base.run_dir(), &slowed.run_dir(), &["--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("| regressed |"), "{}", text(&out.stdout));
    // Without the gate the exit is 0; the other way round it improved.
    assert_eq!(compare(&base.run_dir(), &slowed.run_dir(), &[]).status.code(), Some(0));
    let back = json(&slowed.run_dir(), &base.run_dir(), &[]);
    assert_eq!(verdicts(&back), vec!["improved"]);
    let r = &back["rows"][0];
    let (lo, hi) = (r["ratio_ci95"][0].as_f64().unwrap(), r["ratio_ci95"][1].as_f64().unwrap());
    assert!(lo <= r["ratio"].as_f64().unwrap() && r["ratio"].as_f64().unwrap() <= hi && hi < 0.98);
    // The interval comes from the trials of both runs, not from samples.
    assert_eq!(r["trials"], serde_json::json!([5, 5]));
    // Its p-value is the test behind that interval; one row is not adjusted.
    assert!(r["p_value"].as_f64().unwrap() < 0.05 && r["q_value"] == r["p_value"], "{r}");
    assert_eq!(r["holds_other"], serde_json::json!([false, false]), "an 8x slowdown is outside both intervals: {r}");
    assert_eq!(same["rows"][0]["holds_other"], serde_json::json!([true, true]));

    // The rvOS rule: a 20% band still sees the slowdown; a 1000% band does not (ratio band 0.09x..11x).
    assert_eq!(verdicts(&json(&base.run_dir(), &slowed.run_dir(), &["--threshold", "20%"])), vec!["regressed"]);
    assert_eq!(verdicts(&json(&base.run_dir(), &slowed.run_dir(), &["--threshold", "1000%"])), vec!["unchanged"]);
}

#[test]
fn rows_that_cannot_be_judged_say_why() {
    let (base, other) = (Sandbox::new(), Sandbox::new());
    noisy(&base, 100, &[]);
    // Different size parameter, and a row the base does not have.
    let args =
        ["selftest.noisy", "selftest.tiny", "--include-selftest", "--runs", "5", "--settle", "0", "-p", "selftest.noisy.base_us=3000"];
    let out = other.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let c = json(&base.run_dir(), &other.run_dir(), &[]);
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["verdict"], "not_comparable");
    assert!(rows[0]["reason"].as_str().unwrap().contains("different parameters: base_us 1000 vs 3000"), "{}", rows[0]);
    // Told to ignore the parameters that differ, the rows are judged: three times the sleep regressed.
    let ignored = json(&base.run_dir(), &other.run_dir(), &["--ignore-param", "base_us", "--ignore-param", "jitter_us"]);
    assert_eq!(ignored["rows"][0]["verdict"], "regressed", "{}", ignored["rows"][0]);
    assert_eq!(rows[1]["workload"], "selftest.tiny");
    assert_eq!(rows[1]["reason"], "missing in the base");

    // Another machine: one warning line naming the fields; rows not comparable.
    let run_json = other.run_dir().join("run.json");
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    run["envelope"]["hostname"] = Value::from("elsewhere");
    run["envelope"]["cpu"]["logical_cpus"] = Value::from(96);
    std::fs::write(&run_json, serde_json::to_string(&run).unwrap()).unwrap();
    let out = compare(&base.run_dir(), &other.run_dir(), &[]);
    let err = text(&out.stderr);
    let warning: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: different machines")).collect();
    assert_eq!(warning.len(), 1, "{err}");
    assert!(warning[0].contains("hostname (") && warning[0].contains("cpu.logical_cpus (") && warning[0].contains("96"), "{err}");
    assert!(text(&out.stdout).contains("different machine: hostname"), "{}", text(&out.stdout));
    let anyway = json(&base.run_dir(), &other.run_dir(), &["--across-machines"]);
    assert!(!anyway["rows"][0]["reason"].as_str().unwrap().contains("different machine"));

    // One trial on a side: no interval, so no verdict, and the reason says how to get one.
    let single = Sandbox::new();
    let one = noisy_trials(100, 1);
    let out = single.run(&one.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let c = json(&single.run_dir(), &base.run_dir(), &[]);
    assert_eq!(verdicts(&c), vec!["not_comparable"]);
    let why = c["rows"][0]["reason"].as_str().unwrap();
    assert!(why.contains("base 1 trial and candidate 3 trials") && why.contains("--trials"), "{why}");

    // Unreadable input: exit 2 naming it.
    let out = compare(&base.run_dir(), Path::new("/nonexistent/run"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/run"), "{}", text(&out.stderr));
}
