//! The run history (`history import|list|show|regressions`, `compare h:ID`)
//! and `check-claims`: two runs of `selftest.noisy` into one database, the
//! second slowed 4x; and two processes writing one database at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{all_at_once, bin, html_page, noisy_args, text, umask_022};

/// `proofbench ARGS` in `dir` under umask 022, waited for.
fn pb(dir: &Path, args: &[&str]) -> Output {
    umask_022(Command::new(bin()).args(args).current_dir(dir)).output().expect("proofbench runs")
}

/// One run of selftest.noisy (1 ms sleeps scaled by `slowdown_pct`) into
/// `<dir>/results`, recording commit `commit`; returns its run directory.
fn noisy(dir: &Path, slowdown_pct: u32, commit: &str) -> PathBuf {
    let noisy = noisy_args(slowdown_pct);
    let args: Vec<&str> = ["run"].into_iter().chain(noisy.iter().map(String::as_str)).chain(["--commit", commit]).collect();
    let out = pb(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("recorded as h:"), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    dir.join(run_dir_printed(&stdout))
}

/// The run directory a run's stdout names (`Report: DIR/report.md`).
fn run_dir_printed(stdout: &str) -> PathBuf {
    let md = stdout.lines().find_map(|l| l.strip_prefix("Report: ")).expect("the run prints where its report is");
    Path::new(md.trim()).parent().expect("report.md's directory").to_path_buf()
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}\nstdout: {}", text(&out.stderr), text(&out.stdout));
    text(&out.stdout)
}

#[test]
fn two_runs_into_one_history_list_show_regress_and_compare_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let base = noisy(dir, 100, "aaaaaaa111");
    let slowed = noisy(dir, 400, "bbbbbbb222");
    let db = dir.join("results/history.sqlite");
    assert!(db.is_file(), "the runs record themselves beside their directories");
    let run_json: Value = serde_json::from_str(&std::fs::read_to_string(base.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["commit"], "aaaaaaa111");

    let list = ok(&pb(dir, &["history", "list"]));
    assert!(list.contains("\nh:1 ") && list.contains("\nh:2 "), "{list}");
    assert!(list.contains("aaaaaaa111") && list.contains("bbbbbbb222"), "{list}");
    assert!(list.contains("1/1") && list.contains("\n2 runs in "), "{list}");

    let plot = dir.join("trend.svg");
    // Without --plot, nothing is written: not in the current directory, not beside the database.
    let files = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    let (here, results) = (files(dir), files(&dir.join("results")));
    let shown = ok(&pb(dir, &["history", "show", "selftest.noisy", "--params", "base_us=1000"]));
    assert!(shown.contains("\nh:2 ") && !shown.contains("Plot:") && !shown.contains(".svg"), "{shown}");
    assert_eq!((files(dir), files(&dir.join("results"))), (here, results), "history show wrote a file unasked");
    let show = ok(&pb(dir, &["history", "show", "selftest.noisy", "--params", "base_us=1000", "--plot", plot.to_str().unwrap()]));
    assert!(show.contains("\nh:1 ") && show.contains("\nh:2 ") && show.contains("bbbbbbb222"), "{show}");
    assert!(show.contains(" ms ") && show.contains("% / +"), "medians scaled, with their unit and relative interval: {show}");
    let svg = std::fs::read_to_string(&plot).expect("the trend plot is written");
    assert!(svg.starts_with("<svg") && svg.contains("h:2"), "{svg}");
    let none = pb(dir, &["history", "show", "selftest.noisy", "--params", "base_us=5"]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none.stderr));
    let unknown = pb(dir, &["history", "show", "cpu.nothing"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).starts_with("proofbench: error: "), "{}", text(&unknown.stderr));

    let reg = ok(&pb(dir, &["history", "regressions", "selftest"]));
    assert!(reg.contains(" DIFFERENT (regressed") && reg.contains("\n1 step: 1 DIFFERENT (1 regressed"), "{reg}");
    // On a busy machine (other processes took the trials' CPUs) the step says so.
    let disturbed = reg.contains("DIFFERENT (regressed, disturbed)");
    assert_eq!(disturbed, reg.contains("1 regressed (1 from disturbed trials"), "{reg}");
    // The regressed step again under the table (its line wrapped within 100 columns).
    let words = reg.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("from h:1 aaaaaaa111 to h:2 bbbbbbb222"), "{reg}");
    // --html FILE: the same steps as a page.
    let page_file = dir.join("regressions.html");
    assert_eq!(ok(&pb(dir, &["history", "regressions", "selftest", "--html", page_file.to_str().unwrap()])), reg);
    let page = html_page(&page_file);
    assert!(page.contains(">proofbench history regressions</h1>") && page.contains("<td>DIFFERENT (regressed"), "{page}");
    assert!(page.contains("<li>DIFFERENT (regressed") && page.contains("from h:1 aaaaaaa111 to h:2 bbbbbbb222"), "{page}");
    // Its chart: the step, red (worse), with the band it was judged against.
    assert_eq!(page.matches("<svg").count(), 1, "{page}");
    assert!(page.contains("<g><title>h:1→h:2 selftest.noisy") && page.contains("DIFFERENT, worse (1)"), "{page}");
    let show_file = dir.join("show.html");
    ok(&pb(dir, &["history", "show", "selftest.noisy", "--plot", plot.to_str().unwrap(), "--html", show_file.to_str().unwrap()]));
    let page = html_page(&show_file);
    assert!(page.contains(">selftest.noisy: median per run</h1>") && page.contains("<td>h:2</td>"), "{page}");
    // The trend inline (not a link to the file), before the table.
    assert_eq!(page.matches("<svg").count(), 1, "{page}");
    assert!(page.find("<figure class=\"chart\"").unwrap() < page.find("<table>").unwrap(), "{page}");
    assert!(page.contains(">h:1</text>") && page.contains(">h:2</text>"), "{page}");
    let nowhere = pb(dir, &["history", "regressions", "--html", dir.join("no/such/x.html").to_str().unwrap()]);
    assert_eq!(nowhere.status.code(), Some(2), "{}", text(&nowhere.stderr));
    assert!(text(&nowhere.stderr).starts_with("proofbench: error: --html "), "{}", text(&nowhere.stderr));
    // The gate: 1, or 3 for a regression the load may explain.
    assert_eq!(pb(dir, &["history", "regressions", "--fail-on-regression"]).status.code(), Some(if disturbed { 3 } else { 1 }));
    assert_eq!(pb(dir, &["history", "regressions", "--fail-on-regression", "--accept-disturbed"]).status.code(), Some(1));

    let cmp = ok(&pb(dir, &["compare", "h:1", "#2", "--format", "json"]));
    let v: Value = serde_json::from_str(&cmp).unwrap();
    assert_eq!(v["base"], "h:1");
    assert_eq!(v["rows"][0]["verdict"], "regressed", "{cmp}");
    let missing = pb(dir, &["compare", "h:1", "h:9"]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing.stderr));
    assert!(text(&missing.stderr).contains("no run h:9"), "{}", text(&missing.stderr));

    let again = ok(&pb(dir, &["history", "import", base.to_str().unwrap(), slowed.to_str().unwrap()]));
    assert!(again.contains("h:1 already held") && again.contains("h:2 already held"), "{again}");
    assert!(ok(&pb(dir, &["history", "list"])).contains("\n2 runs in "));
}

#[test]
fn claims_are_checked_against_a_run_directory_or_a_history_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = noisy(dir, 100, "none");
    let claims = dir.join("claims.toml");
    std::fs::write(
        &claims,
        r#"
[[claim]]
workload = "selftest.noisy"
params = { base_us = "1K" }
expect = "500K..20M"
unit = "ns"
note = "a millisecond sleep"

[[claim]]
workload = "selftest.noisy"
max = 1

[[claim]]
workload = "cpu.primes"
min = "1M"
"#,
    )
    .unwrap();
    let out = pb(dir, &["check-claims", claims.to_str().unwrap(), run.to_str().unwrap()]);
    let table = ok(&out);
    assert!(table.contains("3 claims checked: 1 within, 1 above, 0 below, 1 not measured."), "{table}");
    let words = table.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("a millisecond") && table.contains("500 µs..20.00 ms"), "{table}");
    // --html FILE: the same table as a page.
    let page_file = dir.join("claims.html");
    assert_eq!(
        ok(&pb(dir, &["check-claims", claims.to_str().unwrap(), run.to_str().unwrap(), "--html", page_file.to_str().unwrap()])),
        table
    );
    let page = html_page(&page_file);
    assert!(page.contains(">Claims vs actual</h1>") && page.contains("<td>a millisecond sleep</td>"), "{page}");
    assert!(page.contains("3 claims checked: 1 within, 1 above, 0 below, 1 not measured."), "{page}");
    // The chart: each claim's range, the measured medians coloured by standing.
    assert_eq!(page.matches("<svg").count(), 1, "{page}");
    assert!(page.contains("Claims against the run") && page.contains(">not measured</text>"), "{page}");
    let strict = pb(dir, &["check-claims", "--strict", claims.to_str().unwrap(), "h:1"]);
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict.stderr));
    assert!(text(&strict.stdout).contains("Run: h:1"));

    std::fs::write(&claims, "[[claim]]\nworkload = \"selftest.noisy\"\nexpect = \"500K..20M\"\n").unwrap();
    let within = pb(dir, &["check-claims", "--strict", claims.to_str().unwrap(), run.to_str().unwrap()]);
    assert_eq!(within.status.code(), Some(0), "{}", text(&within.stdout));

    std::fs::write(&claims, "[[claim]]\nworkload = \"selftest.noisy\"\n\nexpcet = \"1..2\"\n").unwrap();
    let bad = pb(dir, &["check-claims", claims.to_str().unwrap(), run.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let e = text(&bad.stderr);
    assert!(e.starts_with(&format!("proofbench: error: {} line 4", claims.display())) && e.contains("expcet"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// Issue 15: a number with a suffix means the same in a claim and in a
/// `history show` filter as in `-p`: `3m` is 3,000,000 in all three.
#[test]
fn a_claim_and_a_history_filter_with_range_3m_match_a_run_made_with_range_3m() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let args = ["run", "cpu.primes", "-p", "range=3m", "-p", "workers=1", "--runs", "1", "--trials", "1", "--warmup", "0", "--settle", "0"];
    let stdout = ok(&pb(dir, &args));
    let run = dir.join(run_dir_printed(&stdout));
    let claims = dir.join("claims.toml");
    std::fs::write(&claims, "[[claim]]\nworkload = \"cpu.primes\"\nparams = { range = \"3m\" }\nmin = 1\n").unwrap();
    let table = ok(&pb(dir, &["check-claims", claims.to_str().unwrap(), run.to_str().unwrap()]));
    assert!(table.contains("1 claim checked: 1 within, 0 above, 0 below, 0 not measured."), "{table}");
    let show = ok(&pb(dir, &["history", "show", "cpu.primes", "--params", "range=3m"]));
    assert!(show.contains("\nh:1 "), "{show}");
    // Run outside a git checkout without --commit: no build to take a floor from, and it says so.
    let words = show.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("no run in results/history.sqlite names its commit (1 run without one; `run --commit REV`"), "{show}");
    let other = pb(dir, &["history", "show", "cpu.primes", "--params", "range=3k"]);
    assert_eq!(other.status.code(), Some(2), "no row has range=3k: {}", text(&other.stdout));
}

#[test]
fn two_processes_importing_into_one_database_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let original = noisy(dir, 100, "none");
    // Forty distinct runs: copies of one whose run.json names differ.
    let run_json: Value = serde_json::from_str(&std::fs::read_to_string(original.join("run.json")).unwrap()).unwrap();
    let rows = std::fs::read_to_string(original.join("rows.jsonl")).unwrap();
    let mut dirs: Vec<Vec<String>> = vec![Vec::new(), Vec::new()];
    for i in 0..40 {
        let d = dir.join(format!("copies/run-{i}"));
        std::fs::create_dir_all(&d).unwrap();
        let mut v = run_json.clone();
        v["id"] = Value::from(format!("run-{i}"));
        std::fs::write(d.join("run.json"), serde_json::to_string_pretty(&v).unwrap()).unwrap();
        std::fs::write(d.join("rows.jsonl"), &rows).unwrap();
        dirs[i % 2].push(d.display().to_string());
    }
    let db = dir.join("shared.sqlite");
    // Both writers start before either ends.
    let outs = all_at_once(dirs.iter().map(|ds| {
        let mut c = Command::new(bin());
        c.args(["history", "--db", db.to_str().unwrap(), "import"]).args(ds);
        c
    }));
    for out in outs {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).matches(" imported ").count(), 20, "{}", text(&out.stdout));
    }
    let (integrity, runs) = proofbench::testing::history_check_and_run_names(&db).unwrap();
    assert_eq!(integrity, "ok");
    assert_eq!(runs.len(), 40, "every run is held once");
    for i in 0..40 {
        assert!(runs.iter().any(|r| *r == format!("run-{i}")), "run-{i} is missing");
    }
}

#[test]
fn two_runs_at_once_record_into_one_database_and_no_history_records_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = dir.join("db/h.sqlite");
    let args = |out: &str| -> Vec<String> {
        ["run", "selftest.noisy", "--include-selftest", "--runs", "3", "--warmup", "0", "--settle", "0", "-p", "base_us=200", "--quiet"]
            .iter()
            .map(|s| s.to_string())
            .chain(["--out".into(), out.into(), "--db".into(), db.display().to_string()])
            .collect()
    };
    let outs = all_at_once(["a", "b"].iter().map(|out| {
        let mut c = Command::new(bin());
        // Scratch directories of their own, shared by the two runs: another
        // program's in /tmp are worth a warning, the other run's never.
        c.args(args(out)).current_dir(dir).env("TMPDIR", dir);
        c
    }));
    for out in outs {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(!text(&out.stderr).contains("warning"), "{}", text(&out.stderr));
    }
    let (integrity, runs) = proofbench::testing::history_check_and_run_names(&db).unwrap();
    assert_eq!(integrity, "ok");
    assert_eq!(runs.len(), 2);
    assert!(!dir.join("a/history.sqlite").exists(), "--db replaces the default");

    let out = pb(dir, &["run", "selftest.noisy", "--include-selftest", "--runs", "3", "--out", "c", "--no-history", "-p", "base_us=200"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!dir.join("c/history.sqlite").exists());

    // A database that cannot be written is a warning; the run is kept.
    std::fs::write(dir.join("not-a-dir"), "").unwrap();
    let out = pb(
        dir,
        &["run", "selftest.noisy", "--include-selftest", "--runs", "3", "--out", "d", "--db", "not-a-dir/h.sqlite", "-p", "base_us=200"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("proofbench: warning: the run is kept in"), "{}", text(&out.stderr));
    let kept: Vec<_> = std::fs::read_dir(dir.join("d")).unwrap().collect();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].as_ref().unwrap().path().join("report.md").is_file());
}

/// Issue 32, item 7: the nodes of one Slurm submission (three nodes of one
/// host, as on the test cluster) are three machines, each its own series,
/// not successive runs of one; every run carries the submission.
#[test]
fn a_fleets_nodes_are_not_chained_as_successive_runs_of_one_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let noisy = noisy_args(100);
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        let args: Vec<&str> = ["run"].into_iter().chain(noisy.iter().map(String::as_str)).chain(["--commit", "abc"]).collect();
        let out = umask_022(
            Command::new(bin())
                .args(&args)
                .current_dir(dir)
                .env("SLURM_JOB_ID", format!("{}", 40 + i))
                .env("SLURMD_NODENAME", node)
                .env("SLURM_ARRAY_JOB_ID", "40")
                .env("SLURM_JOB_NAME", "proofbench"),
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let run: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(run_dir_printed(&text(&out.stdout))).join("run.json")).unwrap())
                .unwrap();
        assert_eq!(run["envelope"]["slurm"]["array_job_id"], "40", "{}", run["envelope"]["slurm"]);
        assert_eq!(run["envelope"]["slurm"]["node"], *node);
    }
    let reg = ok(&pb(dir, &["history", "regressions", "selftest"]));
    assert!(reg.contains("No series has two ok runs yet."), "n1, n2 and n3 are three machines, one run each: {reg}");
    let across = ok(&pb(dir, &["history", "regressions", "selftest", "--across-machines"]));
    assert!(across.contains("\n2 steps: "), "--across-machines spans them: {across}");
}
