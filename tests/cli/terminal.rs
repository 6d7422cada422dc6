//! What `run` prints on stdout: per group its name and one line per row,
//! then a short summary naming report.md and report.html; plain into a pipe
//! or a file, coloured when asked; the groups in plan order whatever order
//! their rows end in; every table with `--tables`.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{FAST, SMALL_PRIMES, Sandbox, s, text};

/// The run's stdout, the run having exited with `code`.
fn stdout_of(sb: &Sandbox, args: &[&str], code: i32) -> String {
    let out = sb.run(args);
    assert_eq!(out.status.code(), Some(code), "stderr: {}\nstdout: {}", text(&out.stderr), text(&out.stdout));
    text(&out.stdout)
}

/// The paths the summary names: `Report: MD` and, under it, `HTML`.
fn report_paths(stdout: &str) -> (PathBuf, PathBuf) {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("Report: "));
    let md = lines.next().and_then(|l| l.strip_prefix("Report: ")).unwrap_or_else(|| panic!("no Report: line:\n{stdout}"));
    let html = lines.next().unwrap_or_else(|| panic!("no report.html line:\n{stdout}")).trim();
    (PathBuf::from(md.trim()), PathBuf::from(html))
}

#[test]
fn a_run_prints_one_line_per_row_and_a_short_summary_naming_its_reports() {
    let sb = Sandbox::new();
    let stdout = stdout_of(&sb, &[&["cpu.primes", "--workers", "1,2"], FAST, SMALL_PRIMES].concat(), 0);
    assert!(!stdout.contains('\u{1b}'), "no colour into a pipe:\n{stdout}");
    assert!(!stdout.contains('|'), "no markdown table:\n{stdout}");
    assert!(!stdout.contains("##"), "no markdown heading:\n{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    // The group's name heads its columns; then the workload's name over
    // one line per row, each named by what differs (its workers).
    let heading = lines.iter().position(|l| l.starts_with("cpu ")).unwrap_or_else(|| panic!("no group line:\n{stdout}"));
    assert!(lines[heading].contains("Median") && lines[heading].contains("95% CI") && lines[heading].contains("Status"), "{stdout}");
    assert_eq!(lines[heading + 1], "  cpu.primes", "the workload's heading:\n{stdout}");
    for name in ["workers=1 ", "workers=2 "] {
        let mine: Vec<&&str> = lines.iter().filter(|l| l.starts_with(&format!("    {name}"))).collect();
        assert_eq!(mine.len(), 1, "one line for {name}:\n{stdout}");
        // ok, perhaps with a word on its trials (`ok (trials disagree)` on a busy machine).
        assert!(mine[0].trim_end().ends_with("ok") || mine[0].contains("  ok ("), "{stdout}");
        assert!(mine[0].contains(" ms") || mine[0].contains(" µs") || mine[0].contains(" s "), "a scaled median:\n{stdout}");
    }
    assert!(lines[heading + 3].contains("x vs 1"), "the speedup over 1 worker:\n{stdout}");
    assert!(lines.contains(&"2 rows: 2 ok"), "the counts:\n{stdout}");
    let times = lines.iter().find(|l| l.starts_with("Wall time ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(times.contains("CPU time") && !times.contains(" us)") && !times.contains(" us,"), "scaled times: {times}");
    let (md, html) = report_paths(&stdout);
    assert_eq!(md, sb.run_dir().join("report.md"));
    assert_eq!(html, sb.run_dir().join("report.html"));
    assert!(md.is_file() && html.is_file(), "{stdout}");
    assert!(lines.len() <= 11, "a short output: {} lines:\n{stdout}", lines.len());
    // report.md keeps every figure.
    let report = sb.report_md();
    assert!(report.contains("### cpu.primes") && report.contains("## Run totals") && report.contains(" us)"), "{report}");
}

#[test]
fn colour_comes_when_asked_and_never_under_no_color_or_into_a_pipe() {
    let sb = Sandbox::new();
    let args = [&["cpu.primes", "--workers", "1"], FAST, SMALL_PRIMES].concat();
    let colored = stdout_of(&sb, &[&args[..], &["--color", "always"]].concat(), 0);
    assert!(colored.contains("\u{1b}[32mok\u{1b}[0m"), "ok in green:\n{colored:?}");
    assert!(colored.contains("\u{1b}[1mcpu\u{1b}[0m"), "the group's name in bold:\n{colored:?}");
    for (extra, no_color) in [(&["--color", "never"][..], None), (&["--color", "auto"][..], Some("1")), (&[][..], None)] {
        let sb = Sandbox::new();
        let mut c = sb.command(&[&args[..], extra].concat());
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(!out.stdout.contains(&0x1b), "{extra:?} NO_COLOR={no_color:?}: {}", text(&out.stdout));
    }
}

#[test]
fn tables_prints_every_statistics_table_and_the_whole_footer() {
    let sb = Sandbox::new();
    let stdout = stdout_of(&sb, &[&["cpu.primes", "--workers", "1,2", "--tables"], FAST, SMALL_PRIMES].concat(), 0);
    for want in ["## cpu", "### cpu.primes", "\nRow ", "## Reproducibility", "## Not ok", "Every row is ok.", "## Run totals"] {
        assert!(stdout.contains(want), "{want}:\n{stdout}");
    }
    let (md, html) = report_paths(&stdout);
    assert!(md.is_file() && html.is_file(), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
}

/// The headings of the groups in the order printed (the lines at the
/// margin before the blank line that starts the summary, but for a line
/// saying which columns were left out).
fn groups_printed(stdout: &str) -> Vec<&str> {
    // (A table too wide for the terminal says under it, in parentheses, which columns it left out.)
    stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with(' ') && !l.starts_with('('))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect()
}

#[test]
fn groups_print_in_plan_order_whatever_order_their_rows_end_in() {
    // selftest.crash fails in the first round and its group ends there; the
    // cpu rows end after the last round. Plan order puts cpu first.
    let mut orders = Vec::new();
    for seed in ["1", "2"] {
        let sb = Sandbox::new();
        let args = [&["selftest.crash", "cpu.primes", "--workers", "1,2", "-p", "range=20000,30000", "--seed", seed], FAST].concat();
        let stdout = stdout_of(&sb, &args, 1);
        assert_eq!(groups_printed(&stdout), ["cpu", "selftest"], "seed {seed}:\n{stdout}");
        let lines: Vec<&str> = stdout.lines().collect();
        let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}:\n{stdout}"));
        assert!(at("  cpu.primes") < at("selftest ") && at("selftest ") < at("  selftest.crash "), "{stdout}");
        assert!(stdout.contains("failed: selftest.crash: killed by SIGSEGV"), "{stdout}");
        assert!(stdout.lines().any(|l| l == "5 rows: 4 ok, 1 failed"), "{stdout}");
        // rows.jsonl holds the rows in the order they were decided: the crash first.
        let decided: Vec<Value> =
            std::fs::read_to_string(sb.run_dir().join("rows.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(s(&decided[0]["cell"]["workload"]), "selftest.crash");
        orders.push(sb.run_json()["rounds"][0]["order"].clone());
    }
    assert_ne!(orders[0], orders[1], "the two seeds ran their first rounds in different orders");
}

#[test]
fn a_cell_that_does_not_apply_by_design_is_said_apart_from_a_skip_of_the_machine() {
    // Single-thread yield across CPUs does not apply on any machine; under the
    // skip-yield fault the same-cpu cell is skipped for a reason of its own.
    let sb = Sandbox::new();
    let stdout = stdout_of(&sb, &[&["os.yield", "-p", "mode=single", "--inject-fault", "skip-yield"], FAST].concat(), 0);
    let rows = sb.rows();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r["status"], "skipped");
        let cross = r["cell"]["params"]["placement"] == "cross-cpu";
        assert_eq!(r["skip"], if cross { "by-design" } else { "machine" }, "{}", r["reason"]);
        assert_eq!(r["trials"][0]["skip"], r["skip"]);
    }
    assert!(stdout.lines().any(|l| l == "2 rows: 0 ok, 2 skipped (1 by design)"), "{stdout}");
    let design = stdout.lines().find(|l| l.starts_with("1 cell does not apply by design: os.yield")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(design.contains("cross-cpu"), "{design}");
    let machine = stdout.lines().find(|l| l.starts_with("skipped: os.yield")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(machine.contains("skip-yield") && !machine.contains("cross-cpu"), "{machine}");
    assert!(!stdout.lines().any(|l| l.starts_with("  os.yield") && l.contains("cross-cpu")), "no line of its own:\n{stdout}");
    // report.md: the same split, the reason of the cell that does not apply said once, and
    // a skip is not a failure: no "Not ok" heading over skips alone.
    let md = sb.report_md();
    assert!(!md.contains("\n## Not ok\n"), "{md}");
    let section =
        |h: &str| md.split(&format!("\n## {h}\n")).nth(1).and_then(|s| s.split("\n## ").next()).unwrap_or_else(|| panic!("no {h}: {md}"));
    let skipped = section("Skipped on this machine");
    assert!(skipped.contains("| os.yield") && skipped.contains("skip-yield"), "{skipped}");
    assert!(!skipped.lines().any(|l| l.starts_with('|') && l.contains("cross-cpu")), "{skipped}");
    let first = section("Read this first");
    assert!(first.contains("1 cell was skipped on this machine (not failures)."), "{first}");
    assert!(
        first.contains("1 cell does not apply by design: os.yield")
            && first.contains("(single-thread yield has one end; placement does not apply)."),
        "{first}"
    );
}

/// `ARGS` run with stdout and stderr into one file, as `> out.txt 2>&1`
/// makes them: what the file holds.
fn piped_into_one_file(sb: &Sandbox, args: &[&str], code: i32) -> String {
    let file = sb.tmp.path().join("out.txt");
    let out = std::fs::File::create(&file).unwrap();
    let status = sb.command(args).stdout(out.try_clone().unwrap()).stderr(out).status().unwrap();
    let log = std::fs::read_to_string(&file).unwrap();
    assert_eq!(status.code(), Some(code), "{log}");
    log
}

#[test]
fn piped_progress_is_one_line_per_round_then_the_tables_and_quiet_keeps_the_summary() {
    // Two to four trials: planned rounds, then extra ones for wide rows.
    let sb = Sandbox::new();
    let args = [
        &["cpu.primes", "selftest.crash", "--workers", "1,2", "--trials", "2", "--max-trials", "4", "--ci-target", "0.01"][..],
        &["--runs", "3", "--warmup", "1", "--settle", "0", "--no-history"],
        SMALL_PRIMES,
    ]
    .concat();
    let log = piped_into_one_file(&sb, &args, 1);
    let lines: Vec<&str> = log.lines().collect();
    let rounds: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].starts_with("proofbench: round ")).collect();
    let ran = sb.run_json()["rounds"].as_array().unwrap().len();
    assert_eq!(rounds.len(), ran, "one line per round:\n{log}");
    assert!(ran >= 2, "{log}");
    for (k, &i) in rounds.iter().enumerate() {
        assert!(lines[i].starts_with(&format!("proofbench: round {} of ", k + 1)), "rounds in order:\n{log}");
        assert!(lines[i].contains(" of 3 cells done"), "cells done:\n{log}");
    }
    // The crash is named in its round's line; the last line says the run is done.
    assert!(lines[rounds[0]].contains("failed: selftest.crash (failed)"), "{log}");
    assert!(lines[*rounds.last().unwrap()].ends_with("3 of 3 cells done; done"), "{log}");
    assert!(lines[rounds[0]].contains(" left"), "time left:\n{log}");
    // No line per trial, and the tables follow the last round's line.
    assert!(!log.contains("trial 1:") && !log.contains("[round"), "{log}");
    let last = *rounds.last().unwrap();
    let table = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}:\n{log}"));
    assert!(
        last < table("cpu ")
            && table("cpu ") < table("  cpu.primes")
            && table("  cpu.primes") < table("    workers=1 ")
            && table("selftest ") < table("3 rows: 2 ok"),
        "{log}"
    );
    assert!(lines.len() <= 4 + ran + 6 + 8, "{} lines:\n{log}", lines.len());

    // --quiet: the summary only (counts, not ok, where the run is), no rounds, no tables.
    let sb = Sandbox::new();
    let quiet = piped_into_one_file(&sb, &[&args[..], &["--quiet"]].concat(), 1);
    assert!(!quiet.contains("proofbench: round") && !quiet.contains("  cpu.primes workers=1 "), "{quiet}");
    assert!(quiet.lines().any(|l| l == "3 rows: 2 ok, 1 failed") && quiet.contains("failed: selftest.crash"), "{quiet}");
    assert!(quiet.lines().any(|l| l.starts_with("Report: ")), "{quiet}");
}
