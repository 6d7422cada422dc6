//! The evidence records of a run: complete, consistent with each other, and
//! enough to redraw every table without the tool.

use std::process::Command;

use serde_json::Value;

use crate::common::{FAST, FAST_TRIALS, SMALL_CHECKSUM, SMALL_PRIMES, Sandbox, bin, row, rows_of, run_dirs, text, trial_samples};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// The headline of a row recomputed from its samples: the median of each
/// trial's median of its timed `key` values.
fn headline(r: &Value, key: &str) -> f64 {
    let trials: std::collections::BTreeSet<u64> = r["samples"].as_array().unwrap().iter().map(|s| s["trial"].as_u64().unwrap()).collect();
    let medians: Vec<f64> = trials
        .iter()
        .map(|&t| median(trial_samples(r, t).iter().filter(|s| s["warmup"] == false).map(|s| s[key].as_f64().unwrap()).collect()))
        .collect();
    median(medians)
}

#[test]
fn a_run_writes_complete_records_that_redraw_the_tables() {
    let sb = Sandbox::new();
    let out =
        sb.run(&[&["cpu.primes", "cpu.checksum", "--workers", "1,2", "--label", "testbox"], FAST, SMALL_PRIMES, SMALL_CHECKSUM].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = sb.run_json();
    assert_eq!(run["schema"], "proofbench.run/2");
    assert_eq!(run["trials"]["min"], FAST_TRIALS);
    assert_eq!(run["trials"]["max"], FAST_TRIALS, "--trials alone is exact");
    // Every round ran every cell once, each in its own shuffled order.
    let rounds = run["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), FAST_TRIALS);
    for round in rounds {
        let mut order: Vec<u64> = round["order"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect();
        order.sort_unstable();
        assert_eq!(order, [0, 1, 2, 3], "{round}");
    }
    assert_eq!(run["envelope"]["schema"], "proofbench.envelope/1");
    assert_eq!(run["label"], "testbox");
    assert_eq!(run["plan"].as_array().unwrap().len(), 4);
    assert_eq!(run["complete"], true);
    assert_eq!(run["counts"]["ok"], 4);
    assert!(run["wall_s"].as_f64().unwrap() > 0.0 && run["finished_utc"].is_string());
    assert!(run["cpu"]["workers"]["user_us"].as_u64().unwrap() > 0);
    assert!(run["envelope"]["command_line"].as_array().unwrap().iter().any(|a| a == "testbox"));
    assert!(run["envelope"]["tool"]["version"].is_string());

    let rows = sb.rows();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(r["schema"], "proofbench.row/2");
        assert_eq!(r["status"], "ok", "{}", r["reason"]);
        assert_eq!(r["verifier"]["passed"], true);
        let samples = r["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 4 * FAST_TRIALS, "each trial: 1 warmup + 3 timed");
        for t in 0..FAST_TRIALS as u64 {
            let mine = trial_samples(r, t);
            assert_eq!((mine.len(), &mine[0]["warmup"]), (4, &Value::Bool(true)), "trial {t}");
            let trial = &r["trials"][t as usize];
            assert_eq!(
                (trial["trial"].as_u64(), trial["status"].as_str(), trial["timed_samples"].as_u64()),
                (Some(t), Some("ok"), Some(3))
            );
            assert_eq!(trial["round"], t, "trial t runs in round t");
            assert!(trial["process"]["pid"].as_u64().is_some() && trial["started_utc"].is_string(), "{trial}");
        }
        assert_eq!(r["stats"]["work"]["n"], 3 * FAST_TRIALS);
        assert_eq!(r["stats"]["headline"]["trials"], FAST_TRIALS);
        assert_eq!(r["trials_planned"], FAST_TRIALS);
        assert_eq!(r["stop"], "fixed");
        assert!(r["process"]["rusage"]["user_us"].as_u64().is_some());
        assert!(r["rusage_measured"]["max_rss_kib"].as_u64().unwrap() > 0);
        assert_eq!(r["process"]["exit_code"], 0);
        // The raw file holds the same samples, warmup marked.
        let csv = std::fs::read_to_string(sb.run_dir().join(r["raw"].as_str().unwrap())).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "trial,index,phase,iters,ops,bytes,work_ns,total_ns,value,total_value");
        assert_eq!(lines.len(), 1 + 4 * FAST_TRIALS);
        assert!(lines[1].starts_with("0,0,warmup,") && lines[4].starts_with("0,3,timed,") && lines[5].starts_with("1,0,warmup,"), "{csv}");
        assert!(sb.run_dir().join(r["log"].as_str().unwrap()).exists());
    }
    let primes = row(&rows, "cpu.primes");
    assert!(primes["verifier"]["expected"].as_str().unwrap().starts_with("pi(20000) = 2262"), "{}", primes["verifier"]["expected"]);
    assert_eq!(primes["details"]["splits"].as_array().unwrap().len(), 1);

    // Redraw the speedups from rows.jsonl alone and find them in the report.
    let md = sb.report_md();
    let by_workers = |w: &str, k: u64| rows.iter().find(|r| r["cell"]["workload"] == w && r["cell"]["workers"] == k).unwrap();
    for (w, key) in [("cpu.primes", "value"), ("cpu.checksum", "value"), ("cpu.checksum", "total_value")] {
        let s = headline(by_workers(w, 1), key) / headline(by_workers(w, 2), key);
        let shown = format!("{s:.3}x");
        assert!(md.contains(&shown), "{w} {key}: speedup {shown} not in the report:\n{md}");
    }
    assert!(md.contains("| System  | 1 worker median | 2 workers median | 1-to-2 speedup |"), "{md}");
    assert!(md.contains("1-to-2 work | 1-to-2 total"), "{md}");
    // And Karp-Flatt's serial fractions at p = 2, each with the interval of
    // the speedup: the ratio interval of the two rows' trial medians.
    let measured = |r: &Value, h: &str| {
        let h = &r["stats"][h];
        let trials: Vec<f64> = h["trial_medians"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        (h["median"].as_f64().unwrap(), trials)
    };
    let e = |s: f64| match (1.0 / s - 0.5) / 0.5 {
        e if e.abs() >= 1000.0 => format!("{e:.2e}"),
        e => format!("{e:.3}").replace("-0.000", "0.000"),
    };
    for (w, h) in [("cpu.primes", "headline"), ("cpu.checksum", "headline"), ("cpu.checksum", "total_headline")] {
        let ((base, base_trials), (at, at_trials)) = (measured(by_workers(w, 1), h), measured(by_workers(w, 2), h));
        let mut shown = e(base / at);
        // Times: the speedup is base / at, the inverse of the ratio at / base,
        // and e falls as the speedup rises.
        if let Some((lo, hi)) = proofbench::testing::ratio_interval(&base_trials, &at_trials) {
            shown += &format!(" ({}..{})", e(1.0 / lo), e(1.0 / hi));
        }
        assert!(md.contains(&shown), "{w} {h}: serial fraction {shown} not in the report:\n{md}");
    }
    // (A header is padded when a value is wider than it.)
    assert!(
        ["1-to-2 serial fraction |", "1-to-2 work serial fraction |", "1-to-2 total serial fraction |"].iter().all(|h| md.contains(h)),
        "{md}"
    );
    // The terminal printed a line per row and the counts.
    let stdout = text(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("cpu ")) && stdout.lines().any(|l| l == "4 rows: 4 ok"), "{stdout}");
}

#[test]
fn report_reproduces_report_md_byte_for_byte() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "cpu.checksum", "selftest.wrong", "--workers", "1,2"], FAST, SMALL_PRIMES, SMALL_CHECKSUM].concat());
    assert_eq!(out.status.code(), Some(1));
    let again = Command::new(bin()).arg("report").arg(sb.run_dir()).args(["--format", "markdown"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), sb.report_md());
}

#[test]
fn json_streams_one_row_per_line_on_stdout() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "--workers", "1,2", "--json"], FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut streamed: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("each stdout line is a row")).collect();
    // Streamed as each row's last trial was decided; stored the same.
    streamed.sort_by_key(|r| r["cell"]["index"].as_u64());
    assert_eq!(streamed, rows_of(&sb.run_dir()));
    assert!(text(&out.stderr).lines().any(|l| l == "2 rows: 2 ok"), "the summary goes to stderr with --json");
}

#[test]
fn a_second_run_into_a_locked_directory_is_refused() {
    let sb = Sandbox::new();
    let mut first = sb.command(&["selftest.hang", "--timeout", "30s", "--quiet"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let lock = sb.run_dir().join("run.json");
    let t = std::time::Instant::now();
    while !lock.exists() {
        assert!(t.elapsed().as_secs() < 30);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = sb.run(&["cpu.primes", "--quiet"]);
    // SAFETY: stopping our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    first.wait().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let err = text(&second.stderr);
    assert!(err.contains("is in use by another proofbench run") && err.contains("--run-dir"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Once the first run is over the directory still holds a run.
    let third = sb.run(&["cpu.primes", "--quiet"]);
    assert_eq!(third.status.code(), Some(2));
    assert!(text(&third.stderr).contains("already holds a run"));
}

#[test]
fn runs_under_out_get_their_own_directories() {
    let sb = Sandbox::new();
    let out_dir = sb.tmp.path().join("results");
    let run = |label: &str| {
        Command::new(bin())
            .args(["run", "cpu.primes", "--workers", "1", "--quiet", "--label", label])
            .args(FAST)
            .args(SMALL_PRIMES)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap()
    };
    // A label with '/' is refused; the run never starts.
    let out = run("a b/c");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    for _ in 0..2 {
        let out = run("box");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    // The run directories, beside the history database the runs recorded themselves in.
    let dirs: Vec<String> = run_dirs(&out_dir).iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(out_dir.join("history.sqlite").is_file());
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    assert!(dirs.iter().all(|d| d.ends_with("-box") || d.ends_with("-box-2")), "{dirs:?}");
}

/// Every key path of a JSON value, arrays written `[]`.
fn key_paths(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn record_format_md_names_every_field_the_records_carry() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "cpu.checksum", "--workers", "1,2"], FAST, SMALL_PRIMES, SMALL_CHECKSUM].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/RECORD-FORMAT.md")).unwrap();
    let documented = |p: &str| doc.contains(&format!("`{p}`"));
    let rusage_parents = ["process.rusage.", "rusage_measured.", "trials[].rusage_measured.", "cpu.parent.", "cpu.workers."];
    // An interference object's fields have one table (a trial's and the run's).
    let interference_parents = ["trials[].facts.interference.", "interference."];
    let mut missing = Vec::new();
    let mut check = |p: String| {
        // Parameters and workload details are open maps, documented per workload.
        if p.starts_with("cell.params.") || p.starts_with("details.") {
            return;
        }
        // Shared shapes are documented once: the total window's as the work
        // window's, a trial's process and measurement as the row's.
        let p = p.replace("stats.total.", "stats.work.").replace("stats.total_headline.", "stats.headline.");
        let p = match p.strip_prefix("trials[].") {
            Some(rest) if rest.starts_with("process.") || rest.starts_with("measurement.") => rest.to_string(),
            _ => p,
        };
        let leaf_only = rusage_parents.iter().chain(&interference_parents).find_map(|r| p.strip_prefix(r));
        let ok = match leaf_only {
            Some(leaf) => documented(leaf),
            None => documented(&p),
        };
        if !ok {
            missing.push(p);
        }
    };
    let mut row_paths = std::collections::BTreeSet::new();
    for r in sb.rows() {
        key_paths(&r, "", &mut row_paths);
    }
    row_paths.into_iter().for_each(&mut check);
    let mut run_paths = std::collections::BTreeSet::new();
    key_paths(&sb.run_json(), "", &mut run_paths);
    for p in run_paths {
        if let Some(cell) = p.strip_prefix("plan[].") {
            check(format!("cell.{cell}"));
        } else if let Some(e) = p.strip_prefix("envelope.") {
            // The envelope tables name fields two levels deep; absent readings are
            // documented once, and the embedded topology as a whole.
            if e.split('.').count() <= 2 && !e.contains("absent") && !e.contains("[]") && !e.starts_with("topology.") {
                check(e.to_string());
            }
        } else {
            check(p);
        }
    }
    assert!(missing.is_empty(), "docs/RECORD-FORMAT.md does not name: {missing:?}");
}

#[test]
fn run_cpu_time_excludes_what_an_exec_ing_parent_spent() {
    // `cargo run` execs the binary: the kernel's children counters carry the
    // compiler's CPU time into proofbench. A shell that burns CPU in a child and
    // then execs proofbench does the same.
    let sb = Sandbox::new();
    let script = format!(
        "(i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done); exec {} run selftest.wrong -p error=0 --runs 1 --quiet --run-dir {}",
        bin().display(),
        sb.run_dir().display()
    );
    let before = std::time::Instant::now();
    let out = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let total = before.elapsed().as_secs_f64();
    let run = sb.run_json();
    let workers_s = (run["cpu"]["workers"]["user_us"].as_u64().unwrap() + run["cpu"]["workers"]["sys_us"].as_u64().unwrap()) as f64 / 1e6;
    let wall = run["wall_s"].as_f64().unwrap();
    assert!(total > wall + 0.1, "the shell's loop should take a while ({total} s in all, run {wall} s)");
    assert!(workers_s <= wall * 2.0 + 0.05, "workers charged {workers_s} s of CPU in a {wall} s run on at most 2x its wall time");
}

#[test]
fn a_row_cut_off_mid_write_is_ignored_with_a_warning() {
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.wrong", "-p", "error=0", "--runs", "2", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows_path = sb.run_dir().join("rows.jsonl");
    let mut rows = std::fs::read_to_string(&rows_path).unwrap();
    rows.push_str(r#"{"schema": "proofbench.row/1", "cell": {"#);
    std::fs::write(&rows_path, rows).unwrap();
    let again = Command::new(bin()).arg("report").arg(sb.run_dir()).args(["--format", "markdown"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), sb.report_md(), "the complete rows render as before");
    assert!(text(&again.stderr).contains("line 2: truncated last row ignored"), "{}", text(&again.stderr));
}

#[test]
fn compare_strategies_runs_every_strategy_and_writes_tables_and_plots() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "--compare-strategies"], FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 7, "one row per strategy");
    let physical = rows[0]["cell"]["workers"].as_u64().unwrap();
    assert!(rows.iter().all(|r| r["cell"]["workers"].as_u64() == Some(physical) && r["status"] == "ok"));
    let md = sb.report_md();
    assert!(md.contains("| Strategy") && md.contains("tiered-spillover"), "{md}");
    assert!(sb.run_dir().join("plots/cpu.primes-strategies.svg").exists());
    let svg = std::fs::read_to_string(sb.run_dir().join("plots/cpu.primes-strategies.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("l3-isolate"));
    assert_eq!(sb.run_json()["options"]["compare"], "strategies");

    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "--compare-cores"], FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(sb.rows().iter().all(|r| r["cell"]["placement"]["pin"] == "linear"));
    // The median by workers always; speedup and efficiency from three worker counts on.
    let counts: std::collections::BTreeSet<u64> = sb.rows().iter().filter_map(|r| r["cell"]["workers"].as_u64()).collect();
    assert!(sb.run_dir().join("plots/cpu.primes-median.svg").exists());
    assert_eq!(sb.run_dir().join("plots/cpu.primes-speedup.svg").exists(), counts.len() >= 3, "{counts:?}");
    let plots = if counts.len() >= 3 { "Plots: `plots/cpu.primes-speedup.svg`" } else { "Plots: `plots/cpu.primes-median.svg`" };
    assert!(sb.report_md().contains(plots), "{}", sb.report_md());
}
