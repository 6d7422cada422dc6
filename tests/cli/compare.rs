//! `proofbench compare`: a run against itself is unchanged everywhere, a
//! deliberately slowed run regresses (exit 1 with --fail-on-regression), and
//! what cannot be judged says why.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{Sandbox, bin, html_page, noisy_args, noisy_trials, rows_of, text, umask_022};

/// One run of [`noisy_args`] in `sb`, with `extra` arguments.
fn noisy(sb: &Sandbox, slowdown_pct: u32, extra: &[&str]) {
    let noisy = noisy_args(slowdown_pct);
    let args: Vec<&str> = noisy.iter().map(String::as_str).chain(extra.iter().copied()).collect();
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `compare` with the terminal view's cells whole (COLUMNS wide enough that
/// none wraps): these tests read what a cell says; the fitting to a width
/// has its own tests (text::table, tests/cli/terminal.rs).
fn compare(base: &Path, cand: &Path, flags: &[&str]) -> Output {
    Command::new(bin()).arg("compare").arg(base).arg(cand).args(flags).env("COLUMNS", "1000").output().unwrap()
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
    // SAME when its trials' interval lies inside +-2%, else UNKNOWN (the
    // gate's exit 4; a loaded machine widens the interval): never DIFFERENT.
    let word = same["rows"][0]["word"].as_str().unwrap();
    assert_eq!(out.status.code(), Some(if word == "SAME" { 0 } else { 4 }), "{}", text(&out.stderr));
    let counts = if word == "SAME" { "1 SAME within 2%, 0 UNKNOWN" } else { "0 SAME within 2%, 1 UNKNOWN" };
    let want = format!("0 DIFFERENT (0 regressed, 0 improved), {counts}, 0 not comparable.");
    assert!(["SAME", "UNKNOWN"].contains(&word) && text(&out.stdout).contains(&want), "{}", text(&out.stdout));

    // Eight times the sleep: regressed, and the gate fails.
    // (3 when other processes took the trials' CPUs: the load may explain it.)
    let out = compare(&base.run_dir(), &slowed.run_dir(), &["--fail-on-regression", "--format", "markdown"]);
    let disturbed = text(&out.stdout).contains("| DIFFERENT (regressed, disturbed) |");
    assert_eq!(out.status.code(), Some(if disturbed { 3 } else { 1 }), "{}", text(&out.stdout));
    assert!(disturbed || text(&out.stdout).contains("| DIFFERENT (regressed) |"), "{}", text(&out.stdout));
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

/// A copy of the run directory `from` at `to` as a run killed part way
/// leaves it: run.json without its finish record, and only the first
/// `keep` rows of rows.jsonl, the next one cut inside its line (the writer
/// died there).
fn killed_copy(from: &Path, to: &Path, keep: usize) {
    std::fs::create_dir_all(to).unwrap();
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(from.join("run.json")).unwrap()).unwrap();
    for (field, value) in [("finished_utc", Value::Null), ("wall_s", Value::Null), ("cpu", Value::Null), ("counts", Value::Null)] {
        run[field] = value;
    }
    run["complete"] = Value::from(false);
    run["rounds"] = Value::Array(Vec::new());
    std::fs::write(to.join("run.json"), serde_json::to_string_pretty(&run).unwrap()).unwrap();
    let rows = std::fs::read_to_string(from.join("rows.jsonl")).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    let mut cut: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
    if let Some(next) = lines.get(keep) {
        cut.push_str(&next[..next.len() / 2]);
    }
    std::fs::write(to.join("rows.jsonl"), cut).unwrap();
}

#[test]
fn a_killed_run_is_said_first_and_its_missing_rows_fail_the_gate_unless_allowed() {
    // Two cells, one row each; the killed copy ran one of them.
    let base = Sandbox::new();
    let out = base.run(
        &[&["selftest.noisy", "selftest.tiny", "--include-selftest", "-p", "selftest.noisy.base_us=300"], crate::common::FAST].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let killed = base.tmp.path().join("killed");
    killed_copy(&base.run_dir(), &killed, 1);
    let state = "incomplete: 1 of 2 cells ran";

    // The terminal says it before anything else, and the gate fails.
    let out = compare(&base.run_dir(), &killed, &["--fail-on-regression"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "stdout: {stdout}\nstderr: {}", text(&out.stderr));
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("warning: the candidate run is {state}")) && first.ends_with("1 row could not be compared"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("not run in the candidate ({state})")), "{stdout}");
    assert!(stdout.contains("1 not comparable (1 of them not run: a run is incomplete)."), "{stdout}");
    assert!(text(&out.stderr).contains("1 row could not be compared because a run is incomplete"), "{}", text(&out.stderr));
    // --allow-missing passes the gate (nothing regressed) but for the row
    // compared: a row compared with its own copy is UNKNOWN from two trials
    // a side (exit 4, or 0 with --allow-unknown), or SAME when its trials
    // happened to agree within 2% (exit 0, and the gate says nothing of
    // UNKNOWN); without the gate the exit is 0.
    let out = compare(&base.run_dir(), &killed, &["--fail-on-regression", "--allow-missing"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    match out.status.code() {
        Some(4) => assert!(stderr.contains("1 row UNKNOWN"), "{stderr}"),
        Some(0) => assert!(stdout.contains("1 SAME within 2%") && !stderr.contains("UNKNOWN"), "stdout: {stdout}\nstderr: {stderr}"),
        other => panic!("exit {other:?}: stdout: {stdout}\nstderr: {stderr}"),
    }
    let allowed = ["--fail-on-regression", "--allow-missing", "--allow-unknown"];
    assert_eq!(compare(&base.run_dir(), &killed, &allowed).status.code(), Some(0));
    assert_eq!(compare(&base.run_dir(), &killed, &[]).status.code(), Some(0));
    // So it is when the killed run is the base.
    let out = compare(&killed, &base.run_dir(), &["--fail-on-regression", "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).starts_with(&format!("> warning: the base run is {state}")), "{}", text(&out.stdout));

    // JSON: each side's completion, and the row's side that did not run it.
    let c = json(&base.run_dir(), &killed, &[]);
    assert_eq!(c["schema"], "proofbench.compare/3");
    assert_eq!(c["completion"][0]["state"], Value::Null, "{}", c["completion"]);
    let cand = &c["completion"][1];
    assert_eq!((cand["cells_planned"].as_u64(), cand["cells_ran"].as_u64(), &cand["finished"]), (Some(2), Some(1), &Value::from(false)));
    assert_eq!(cand["state"], state);
    let rows = c["rows"].as_array().unwrap();
    let unrun: Vec<&Value> = rows.iter().filter(|r| r["not_run"] == serde_json::json!([false, true])).collect();
    assert_eq!(unrun.len(), 1, "{rows:?}");
    assert_eq!(unrun[0]["verdict"], "not_comparable");

    // Killed before any row: 0 of 2, both rows fail the gate.
    let none = base.tmp.path().join("none");
    killed_copy(&base.run_dir(), &none, 0);
    let out = compare(&base.run_dir(), &none, &["--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).starts_with("warning: the candidate run is incomplete: 0 of 2 cells ran"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("2 rows could not be compared"), "{}", text(&out.stderr));
}

#[test]
fn a_killed_run_of_variants_is_said_first_and_its_missing_pairs_fail_the_gate() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["selftest.tiny", "--include-selftest", "--variant", "a=", "--variant", "b="], crate::common::FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let killed = sb.tmp.path().join("killed");
    // Rows are written in the order they are decided: keep the one that is not b's.
    killed_copy(&sb.run_dir(), &killed, 0);
    let a_row = std::fs::read_to_string(sb.run_dir().join("rows.jsonl"))
        .unwrap()
        .lines()
        .find(|l| serde_json::from_str::<Value>(l).unwrap()["cell"]["variant"]["name"] == "a")
        .map(|l| format!("{l}\n"))
        .unwrap();
    std::fs::write(killed.join("rows.jsonl"), a_row).unwrap();

    let out = Command::new(bin()).arg("compare").arg(&killed).arg("--fail-on-regression").env("COLUMNS", "1000").output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("warning: the run is incomplete: 1 of 2 cells ran"), "{stdout}");
    assert!(stdout.contains("not run in the candidate variant (incomplete: 1 of 2 cells ran)"), "{stdout}");
    let out = Command::new(bin())
        .arg("compare")
        .arg(&killed)
        .args(["--fail-on-regression", "--allow-missing"])
        .env("COLUMNS", "1000")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn a_bigger_run_against_a_smaller_one_counts_the_rows_the_smaller_lacks_in_one_line_and_writes_a_page_with_html() {
    let (big, small) = (Sandbox::new(), Sandbox::new());
    let fast = crate::common::FAST;
    let out = big.run(&[&["selftest.noisy", "selftest.tiny", "cpu.primes", "--include-selftest", "--workers", "1"], fast].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = small.run(&[&["selftest.tiny", "--include-selftest"], fast].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = rows_of(&big.run_dir()).len();
    assert!(rows >= 3, "{rows} rows");
    let lacking = format!("{} rows of the base are not in the candidate (not compared): cpu, selftest groups.", rows - 1);

    // One line says them; no row of them is listed; the gate is as it was
    // (the widest band: the row both have comes from two runs of a loaded
    // machine, where a tiny row moved by more than 50% in CI;
    // --allow-unknown: two trials a side cannot show it SAME within 2%).
    let out = compare(&big.run_dir(), &small.run_dir(), &["--fail-on-regression", "--noise", "1000%", "--allow-unknown"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(stdout.matches(&lacking).count(), 1, "{stdout}");
    assert!(!stdout.contains("missing in the candidate"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("selftest.tiny ")).count(), 1, "the row both have is in the table: {stdout}");
    assert!(!stdout.contains('|'), "the terminal's table has no pipes: {stdout}");
    let md = text(&compare(&big.run_dir(), &small.run_dir(), &["--format", "markdown"]).stdout);
    assert_eq!(md.matches(&lacking).count(), 1, "{md}");
    assert!(!md.contains("missing in the candidate"), "{md}");
    let back = text(&compare(&small.run_dir(), &big.run_dir(), &[]).stdout);
    assert!(back.contains(&format!("{} rows of the candidate are not in the base (not compared)", rows - 1)), "{back}");
    // The record keeps them all.
    let c = json(&big.run_dir(), &small.run_dir(), &[]);
    let missing = c["rows"].as_array().unwrap().iter().filter(|r| r["reason"] == "missing in the candidate").count();
    assert_eq!(missing, rows - 1, "{c}");

    // --html FILE: the same comparison as a page, beside the text.
    let file = big.tmp.path().join("compare.html");
    let out = umask_022(
        Command::new(bin())
            .env("COLUMNS", "1000")
            .arg("compare")
            .arg(big.run_dir())
            .arg(small.run_dir())
            .args(["--fail-on-regression", "--noise", "1000%", "--allow-unknown"])
            .arg("--html")
            .arg(&file),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), stdout, "the terminal output is the same");
    assert!(text(&out.stderr).contains(&format!("proofbench: wrote {}", file.display())), "{}", text(&out.stderr));
    let page = html_page(&file);
    assert!(page.contains("<title>proofbench compare</title>") && page.contains(">proofbench compare</h1>"), "{page}");
    assert!(page.contains("<tr><td>selftest.tiny</td>") && page.contains(&lacking), "{page}");
    // The forest plot of the ratios, inline, above the table; none on the terminal.
    assert_eq!(page.matches("<svg").count(), 1, "{page}");
    let chart = &page[page.find("<figure class=\"chart\"").expect("the chart")..page.find("<table>").unwrap()];
    assert!(chart.contains("Ratio of each row, candidate / base") && chart.contains("<g><title>selftest.tiny"), "{chart}");
    assert!(!stdout.contains("<svg"));
    // Into a directory that does not exist: a usage error naming the flag, nothing printed.
    let bad = compare(&big.run_dir(), &small.run_dir(), &["--html", big.tmp.path().join("no/such/x.html").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).starts_with("proofbench: error: --html "), "{}", text(&bad.stderr));
    assert_eq!(text(&bad.stderr).lines().count(), 1, "{}", text(&bad.stderr));
    assert!(bad.stdout.is_empty());
}
