//! `run --perf-pass stat|record`: one extra run of each ok row's worker
//! under real perf, outside the timed samples (the rows keep exactly the
//! samples of a run without it), its files under `profiles/<row>/` and in
//! the report; a clear skip where perf is absent; and a command workload's
//! `[workload.profile]` command (the guest-side pass). The tests that need
//! perf skip without it, saying why, and fail without it under `CI=true`.

use std::path::Path;

use serde_json::Value;

use crate::common::{FAST, FAST_TRIALS, SMALL_PRIMES, Sandbox, text};
use crate::html::{chromium_or_skip, dump_dom, in_ci};

/// Whether perf is on PATH; without it the test is skipped (said on
/// stderr), and under `CI=true` it fails (.ci/run installs linux-perf).
fn perf_or_skip() -> bool {
    let found = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("perf").is_file()));
    if !found {
        assert!(!in_ci(), "no perf on PATH under CI=true: install the Debian package `linux-perf` (.ci/run does)");
        eprintln!("skipped: no perf on PATH (install the Debian package `linux-perf`; .ci/run does)");
    }
    found
}

/// `cpu.primes` at one worker, small and fast, with `extra`.
fn primes(sb: &Sandbox, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["cpu.primes", "--workers", "1", "--no-history", "--quiet"];
    args.extend_from_slice(SMALL_PRIMES);
    args.extend_from_slice(FAST);
    args.extend_from_slice(extra);
    let out = sb.run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    sb.rows()
}

/// The timed and warmup samples of a row, by trial.
fn sample_shape(row: &Value) -> Vec<(u64, bool)> {
    row["samples"].as_array().unwrap().iter().map(|s| (s["trial"].as_u64().unwrap(), s["warmup"].as_bool().unwrap())).collect()
}

/// A file of a row's profile of `kind`, as a path in `dir`.
fn file_of(dir: &Path, profile: &Value, kind: &str) -> std::path::PathBuf {
    let f = profile["files"].as_array().unwrap().iter().find(|f| f["kind"] == kind).unwrap_or_else(|| panic!("no {kind} in {profile}"));
    let rel = f["path"].as_str().unwrap();
    assert!(rel.starts_with("profiles/000-cpu.primes"), "{rel}");
    dir.join(rel)
}

#[test]
fn perf_stat_counts_software_events_outside_the_timed_samples() {
    if !perf_or_skip() {
        return;
    }
    let (plain, with) = (Sandbox::new(), Sandbox::new());
    let base = primes(&plain, &[]);
    let rows = primes(&with, &["--perf-pass", "stat"]);
    assert_eq!(base.len(), 1);
    assert!(base[0].get("profile").is_none(), "no pass, no profile: {}", base[0]);
    let (row, p) = (&rows[0], &rows[0]["profile"]);
    assert_eq!(p["status"], "ok", "{p}");
    assert_eq!(p["mode"], "stat");
    // The rows are unaffected: the same trials and the same samples.
    assert_eq!(row["trials"].as_array().unwrap().len(), FAST_TRIALS);
    assert_eq!(sample_shape(row), sample_shape(&base[0]));
    let n = |r: &Value| (r["stats"]["work"]["n"].as_u64(), r["stats"]["headline"]["trials"].as_u64());
    assert_eq!(n(row), n(&base[0]), "{}", row["stats"]);
    assert_eq!(n(row).0, Some(FAST_TRIALS as u64 * 3), "--runs 3 in each trial, and no more");
    // Software events, counted.
    let counters = p["counters"].as_array().unwrap();
    let count = |e: &str| counters.iter().find(|c| c["event"] == e).unwrap_or_else(|| panic!("no {e} in {counters:?}"))["value"].as_f64();
    assert!(count("task-clock").is_some_and(|ms| ms > 0.0), "{counters:?}");
    for e in ["context-switches", "cpu-migrations", "page-faults"] {
        assert!(count(e).is_some(), "{e}: {counters:?}");
    }
    assert!(count("page-faults").unwrap() > 0.0, "a worker touches pages: {counters:?}");
    let stat = std::fs::read_to_string(file_of(&with.run_dir(), p, "perf-stat")).unwrap();
    assert!(stat.contains(",task-clock,"), "{stat}");
    assert!(file_of(&with.run_dir(), p, "log").is_file());
    assert_eq!(p["command"][0], "perf");
    assert!(p["perf_version"].as_str().unwrap().starts_with("perf version"), "{p}");
    let md = with.report_md();
    assert!(md.contains("## Profiling pass") && md.contains("| task-clock |"), "{md}");
    assert!(md.contains("[perf stat output](profiles/000-cpu.primes"), "{md}");
    // The report is a function of the records.
    let again = std::process::Command::new(crate::common::bin()).arg("report").arg(with.run_dir()).output().unwrap();
    assert!(text(&again.stdout).contains("## Profiling pass"));
}

#[test]
fn perf_record_gives_a_report_top_and_a_flame_graph_that_chromium_draws() {
    if !perf_or_skip() {
        return;
    }
    let sb = Sandbox::new();
    let base = Sandbox::new();
    let rows = primes(&sb, &["--perf-pass", "record"]);
    let plain = primes(&base, &[]);
    let (row, p) = (&rows[0], &rows[0]["profile"]);
    assert_eq!(p["status"], "ok", "{p}");
    assert_eq!(sample_shape(row), sample_shape(&plain[0]), "the rows are unaffected");
    assert!(p["samples"].as_u64().unwrap() > 0, "{p}");
    let top = p["top"].as_array().unwrap();
    assert!(!top.is_empty() && top.len() <= 20, "{top:?}");
    assert!(top.iter().all(|l| l.as_str().unwrap().contains('%')), "header-stripped lines: {top:?}");
    let top_file = std::fs::read_to_string(file_of(&sb.run_dir(), p, "perf-report")).unwrap();
    assert!(top_file.contains(top[0].as_str().unwrap()), "{top_file}");
    assert!(file_of(&sb.run_dir(), p, "perf-data").is_file());
    let svg_path = file_of(&sb.run_dir(), p, "flame-graph");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", &svg[..200.min(svg.len())]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.matches("<g><title>").count() >= 2, "frames drawn");
    assert!(svg.contains("<title>proofbench ("), "the worker's command at the root");
    let folded = std::fs::read_to_string(file_of(&sb.run_dir(), p, "folded-stacks")).unwrap();
    let total: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert_eq!(Some(total), p["samples"].as_u64());
    let md = sb.report_md();
    assert!(md.contains("[flame graph (SVG)](profiles/000-cpu.primes-workers%3D1/flame.svg)"), "{md}");
    assert!(md.contains("perf report, the top"), "{md}");
    // Chromium loads the SVG as an image and draws it at its width.
    let Some(browser) = chromium_or_skip() else { return };
    let page = sb.tmp.path().join("flame.html");
    std::fs::write(
        &page,
        format!(
            "<!doctype html><title>x</title><img id=f src=\"file://{}\" onload=\"document.title='loaded '+this.naturalWidth+'x'+this.naturalHeight\" \
             onerror=\"document.title='error'\">",
            svg_path.display()
        ),
    )
    .unwrap();
    let profile = sb.tmp.path().join("chromium-profile");
    let (dom, log) = dump_dom(&browser, &page, &profile);
    assert!(dom.contains("<title>loaded 1200x"), "Chromium did not draw the flame graph: {dom}\n{log}");
}

#[test]
fn without_perf_the_pass_is_skipped_with_the_reason_and_the_rows_are_unaffected() {
    let (plain, missing, empty_path) = (Sandbox::new(), Sandbox::new(), Sandbox::new());
    let base = primes(&plain, &[]);
    // perf named where there is none.
    let mut c = missing.command(&["cpu.primes", "--workers", "1", "--no-history", "--perf-pass", "stat"]);
    c.args(SMALL_PRIMES).args(FAST).env("PROOFBENCH_PERF", "/nonexistent/perf");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("--perf-pass stat: skipped on every row: perf is not installed: PROOFBENCH_PERF=/nonexistent/perf"), "{err}");
    let rows = missing.rows();
    let p = &rows[0]["profile"];
    assert_eq!(p["status"], "skipped", "{p}");
    assert!(p["reason"].as_str().unwrap().contains("/nonexistent/perf is not an executable file"), "{p}");
    assert!(p["files"].as_array().unwrap().is_empty());
    assert!(!missing.run_dir().join("profiles").exists(), "a pass that does not run makes no directory");
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(sample_shape(&rows[0]), sample_shape(&base[0]));
    assert!(missing.report_md().contains("Skipped on every row: perf is not installed"), "{}", missing.report_md());
    // No perf on PATH at all.
    let bare = empty_path.tmp.path().join("bin");
    std::fs::create_dir(&bare).unwrap();
    let mut c = empty_path.command(&["cpu.primes", "--workers", "1", "--no-history", "--quiet", "--perf-pass", "record"]);
    c.args(SMALL_PRIMES).args(FAST).env("PATH", &bare).env_remove("PROOFBENCH_PERF");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = empty_path.rows();
    assert_eq!(rows[0]["profile"]["status"], "skipped");
    assert_eq!(rows[0]["profile"]["mode"], "record");
    assert!(rows[0]["profile"]["reason"].as_str().unwrap().starts_with("perf is not installed: no `perf` on PATH"), "{}", rows[0]);
    assert_eq!(sample_shape(&rows[0]), sample_shape(&base[0]));
}

#[test]
fn a_command_workload_s_profile_command_runs_once_per_row_with_its_output_kept() {
    let sb = Sandbox::new();
    let toml = sb.tmp.path().join("guest.toml");
    std::fs::write(
        &toml,
        r#"
[[workload]]
id = "guest.echo"
summary = "Prints its axis"
unit = "ns"
direction = "lower-is-better"
command = ["sh", "-c", "echo run={n}"]
[workload.axes]
n = [7, 8]
[workload.verify]
must_match = ["run=\\d+"]
[workload.profile]
command = ["sh", "-c", "echo guest-counter={n}; echo on-stderr >&2; test {n} = 7"]
"#,
    )
    .unwrap();
    let mut c = sb.command(&["guest.echo", "--workloads", "guest.toml", "--no-history", "--quiet", "--perf-pass", "stat"]);
    // The guest-side pass needs no perf.
    c.args(FAST).env("PROOFBENCH_PERF", "/nonexistent/perf");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 2);
    let (seven, eight) = (&rows[0]["profile"], &rows[1]["profile"]);
    assert_eq!(seven["status"], "skipped", "the host side has no perf: {seven}");
    let g = &seven["guest"];
    assert_eq!(g["status"], "ok", "{g}");
    assert_eq!(g["command"][2], "echo guest-counter=7; echo on-stderr >&2; test 7 = 7");
    let log = std::fs::read_to_string(sb.run_dir().join(g["output"].as_str().unwrap())).unwrap();
    assert!(log.contains("guest-counter=7") && log.contains("on-stderr"), "{log}");
    assert_eq!(log.matches("guest-counter=").count(), 1, "run once: {log}");
    // A profile command that fails fails its pass, not its row.
    let g8 = &eight["guest"];
    assert_eq!(g8["status"], "failed", "{g8}");
    assert!(g8["reason"].as_str().unwrap().contains("exit code 1"), "{g8}");
    assert_eq!(rows[1]["status"], "ok");
    // The timed samples ran the workload's command, never the profile's.
    for r in &rows {
        assert_eq!(r["trials"].as_array().unwrap().len(), FAST_TRIALS);
        let logged = std::fs::read_to_string(sb.run_dir().join(r["log"].as_str().unwrap())).unwrap();
        assert!(!logged.contains("guest-counter"), "{logged}");
    }
    let md = sb.report_md();
    assert!(md.contains("[guest output](profiles/000-guest.echo-n%3D7/guest.log)"), "{md}");
}

#[test]
fn through_a_launcher_the_pass_is_skipped_and_says_why() {
    let sb = Sandbox::new();
    let mut c = sb.command(&["cpu.primes", "--workers", "1", "--no-history", "--quiet", "--launcher", "env", "--perf-pass", "stat"]);
    c.args(SMALL_PRIMES).args(FAST);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = sb.rows();
    let p = &rows[0]["profile"];
    assert_eq!((p["status"].as_str(), rows[0]["status"].as_str()), (Some("skipped"), Some("ok")), "{p}");
    assert!(p["reason"].as_str().unwrap().starts_with("not available through --launcher"), "{p}");
    assert!(!sb.run_dir().join("profiles").exists());
}
