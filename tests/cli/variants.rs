//! Variants (`run --variant NAME=SPEC`): every kind of setting reaches the
//! worker; the variants of a cell alternate inside every round and compare
//! paired by round; verdicts know each unit's direction; `noise` is an A/A
//! self-check recorded in the history; noise floors come from repeated runs
//! of one build, and say when there are not enough.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{FAST, Sandbox, bin, html_page, rows_of, text, umask_022};

/// A command workload that reports what its process was given: `value` is
/// `n` times `$PB_K` (1 when unset), the metric; then the LD_PRELOAD it
/// saw, the binary of its parent (the worker) and its allowed CPUs.
const PROBE_TOML: &str = r#"
[[workload]]
id = "probe.env"
summary = "Reports what its process was given"
unit = "ns"
direction = "lower-is-better"
shell = true
command = "echo value=$(( ${PB_K:-1} * {n} )); echo preload=$LD_PRELOAD; echo exe=$(readlink /proc/$PPID/exe); grep Cpus_allowed_list /proc/self/status"
metric = { regex = 'value=(\d+)' }

[workload.axes]
n = 1000

[workload.verify]
must_match = ['value=\d+']
"#;

/// A command workload `units.NAME` whose samples are `{v}` exactly (a
/// deterministic metric) in `unit`, better in `direction`.
fn unit_workload(name: &str, unit: &str, direction: &str) -> String {
    format!(
        r#"
[[workload]]
id = "units.{name}"
summary = "A {name} that is v"
unit = "{unit}"
direction = "{direction}"
command = ["echo", "value={{v}}"]
metric = {{ regex = 'value=(\d+)' }}
[workload.axes]
v = 1000
[workload.verify]
must_match = ['value=\d+']
"#
    )
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn pb(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin()).args(args).current_dir(dir).output().expect("proofbench runs")
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}\nstdout: {}", text(&out.stderr), text(&out.stdout));
    text(&out.stdout)
}

/// The rows of a run by variant name.
fn by_variant<'a>(rows: &'a [Value], workload: &str, variant: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["cell"]["workload"] == workload && r["cell"]["variant"]["name"] == variant)
        .unwrap_or_else(|| panic!("no row of {workload} under {variant}"))
}

/// `compare RUN --format json`: one comparison per candidate variant.
pub fn ab(dir: &Path) -> Vec<Value> {
    let out = Command::new(bin()).args(["compare", dir.to_str().unwrap(), "--format", "json"]).output().unwrap();
    serde_json::from_str::<Value>(&ok(&out)).unwrap().as_array().unwrap().clone()
}

/// The comparison row of `workload` in the comparison whose candidate is `variant`.
fn judged<'a>(comparisons: &'a [Value], variant: &str, workload: &str) -> &'a Value {
    let c = comparisons
        .iter()
        .find(|c| c["candidate"].as_str().unwrap().contains(&format!("variant {variant}")))
        .unwrap_or_else(|| panic!("no comparison of {variant}"));
    c["rows"].as_array().unwrap().iter().find(|r| r["workload"] == workload).unwrap()
}

#[test]
fn every_kind_of_variant_setting_reaches_the_worker() {
    let sb = Sandbox::new();
    let toml = write(sb.tmp.path(), "probe.toml", PROBE_TOML);
    // Another build of proofbench: a copy of this one (the same version).
    let copy = sb.tmp.path().join("proofbench-copy");
    std::fs::copy(bin(), &copy).unwrap();
    let exe = format!("exe=exe={}", copy.display());
    let jemalloc = ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("libjemalloc2 is installed (.ci/run installs it)");
    let preload = format!("pre=preload={jemalloc}");
    let variants = ["base=", "env=env=PB_K=3", "par=param=n=2000", "wrap=launcher=env PB_K=5", &exe, "cpu=launcher=taskset -c 0", &preload];
    // Four rounds, not FAST's two: under load a round with one side
    // disturbed is left out of the pairs, and two must remain.
    let mut args =
        vec!["probe.env", "--workloads", toml.to_str().unwrap(), "--trials", "4", "--runs", "3", "--warmup", "1", "--settle", "0"];
    for v in &variants {
        args.extend(["--variant", v]);
    }
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), variants.len(), "one row per variant");
    let median = |v: &str| by_variant(&rows, "probe.env", v)["stats"]["headline"]["median"].as_f64().unwrap();
    let tail = |v: &str| by_variant(&rows, "probe.env", v)["details"]["output_tail"].as_str().unwrap().to_string();
    assert_eq!(median("base"), 1000.0);
    assert_eq!(median("env"), 3000.0, "env=: the worker's environment");
    assert_eq!(median("par"), 2000.0, "param=: a command workload's placeholder");
    assert_eq!(median("wrap"), 5000.0, "launcher=: the worker runs under the prefix");
    assert!(tail("exe").contains(&format!("exe={}", copy.display())), "exe=: the worker is the other binary: {}", tail("exe"));
    assert!(!tail("base").contains("proofbench-copy"), "{}", tail("base"));
    assert!(tail("cpu").contains("Cpus_allowed_list:\t0\n") || tail("cpu").ends_with("Cpus_allowed_list:\t0"), "{}", tail("cpu"));
    assert!(tail("pre").contains(&format!("preload={jemalloc}")), "preload=: {}", tail("pre"));
    assert!(tail("base").contains("preload=\n"), "no preload without the setting: {}", tail("base"));
    let cpu_row = by_variant(&rows, "probe.env", "cpu");
    assert!(cpu_row["trials"].as_array().unwrap().iter().all(|t| t["facts"]["allowed_cpus"] == serde_json::json!([0])), "{cpu_row}");

    // The run records every variant and its settings; the base is marked.
    let run = sb.run_json();
    let recorded: Vec<(&str, bool)> =
        run["variants"].as_array().unwrap().iter().map(|v| (v["name"].as_str().unwrap(), v["base"].as_bool().unwrap())).collect();
    assert_eq!(recorded[0], ("base", true));
    assert_eq!(recorded.len(), variants.len());
    assert_eq!(
        by_variant(&rows, "probe.env", "env")["cell"]["variant"]["settings"],
        serde_json::json!([{"key": "env", "value": "PB_K=3"}])
    );

    // Each candidate against the base: deterministic values compare exactly.
    let c = ab(&sb.run_dir());
    assert_eq!(c.len(), variants.len() - 1);
    let env = judged(&c, "env", "probe.env");
    let pairs = env["pairs"].as_u64().unwrap();
    // (A round left out under load leaves fewer pairs than the design's four: UNKNOWN, said.)
    let left_out = env["one_side_disturbed"].as_u64().unwrap_or(0) > 0 && env["word"] == "UNKNOWN";
    assert!(env["verdict"] == "regressed" || left_out, "{env}");
    assert_eq!(pairs + env["one_side_disturbed"].as_u64().unwrap_or(0), 4, "every round paired or said left out: {env}");
    // The setting reached the worker: three times the value (the medians;
    // the pairs' ratio too where two or more rounds were paired).
    assert_eq!((env["base_median"].as_f64(), env["candidate_median"].as_f64()), (Some(1000.0), Some(3000.0)), "{env}");
    assert!(pairs < 2 || (env["ratio"].as_f64().unwrap() - 3.0).abs() < 1e-9, "{env}");
    assert_eq!(judged(&c, "exe", "probe.env")["verdict"], "unchanged");
    let report = sb.report_md();
    assert!(report.contains("#### Variants against base") && report.contains("## Variants"), "{report}");
    // ("1 regressed (1 from disturbed trials)" where other tests took the trials' CPUs.)
    assert!(
        left_out
            || report.contains("env against base: 1 DIFFERENT (1 regressed")
                && report.contains("0 improved), 0 SAME within 2%, 0 UNKNOWN, 0 not comparable"),
        "{report}"
    );
    // (The copy of this build is SAME, or UNKNOWN where load widened its interval.)
    assert!(left_out || report.contains("| DIFFERENT (regressed"), "{report}");
    assert!(report.contains("| SAME within 2% ") || report.contains("| UNKNOWN "), "{report}");
}

#[test]
fn an_allocator_variant_fixes_the_allocator_of_every_cell() {
    let sb = Sandbox::new();
    let mut args = vec!["alloc.random-mixed", "-p", "iterations=5000"];
    args.extend_from_slice(FAST);
    args.extend(["--variant", "sys=allocator=system", "--variant", "je=allocator=jemalloc"]);
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    for (v, alloc) in [("sys", "system"), ("je", "jemalloc")] {
        let r = by_variant(&rows, "alloc.random-mixed", v);
        assert_eq!(r["cell"]["params"]["allocator"], alloc, "{}", r["cell"]);
        assert!(!r["cell"]["axes"].as_array().unwrap().contains(&Value::from("allocator")), "one allocator per variant: no axis");
        assert_eq!(r["cell"]["axes"][0], "variant");
    }
    assert_eq!(rows.len(), 2, "one cell under two variants");
    let c = ab(&sb.run_dir());
    let r = judged(&c, "je", "alloc.random-mixed");
    assert_eq!(r["direction"], "higher-is-better", "ops/s: {r}");
    // Judged, unless a busy machine left rounds out (one side disturbed, the
    // other not), which the row then says.
    let left_out = r["one_side_disturbed"].as_u64().unwrap_or(0) > 0;
    assert!(left_out || ["regressed", "improved", "unchanged"].contains(&r["verdict"].as_str().unwrap()), "{r}");
}

#[test]
fn variants_alternate_inside_every_round_and_pair_by_round() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "selftest.tiny",
        "selftest.noisy",
        "--include-selftest",
        "-p",
        "base_us=100",
        "-p",
        "jitter_us=10",
        "--trials",
        "4",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--settle",
        "0",
        "--variant",
        "a=",
        "--variant",
        "b=env=UNUSED=1",
        "--base",
        "b",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = sb.run_json();
    let plan = run["plan"].as_array().unwrap();
    let variant_of = |index: u64| plan.iter().find(|c| c["index"] == index).unwrap()["variant"]["name"].as_str().unwrap().to_string();
    let workload_of = |index: u64| plan.iter().find(|c| c["index"] == index).unwrap()["workload"].as_str().unwrap().to_string();
    assert_eq!(variant_of(0), "b", "--base b: the base is first in every group");
    let rounds = run["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 4);
    let mut first_under = Vec::new();
    for r in rounds {
        let order: Vec<u64> = r["order"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(order.len(), 4, "both cells under both variants, every round");
        for pair in order.chunks(2) {
            assert_eq!(workload_of(pair[0]), workload_of(pair[1]), "a cell's variants run back to back: {order:?}");
            assert_ne!(variant_of(pair[0]), variant_of(pair[1]));
        }
        first_under.push(variant_of(order[0]) + &workload_of(order[0]));
    }
    // Per cell, which variant went first alternates from round to round.
    for w in ["selftest.tiny", "selftest.noisy"] {
        let firsts: Vec<String> = rounds
            .iter()
            .map(|r| {
                let order: Vec<u64> = r["order"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
                variant_of(*order.iter().find(|&&i| workload_of(i) == w).unwrap())
            })
            .collect();
        assert!(firsts.windows(2).all(|p| p[0] != p[1]), "{w}: {firsts:?}");
    }
    let rows = sb.rows();
    for r in &rows {
        let rounds: Vec<u64> = r["trials"].as_array().unwrap().iter().map(|t| t["round"].as_u64().unwrap()).collect();
        assert_eq!(rounds, [0, 1, 2, 3], "{}", r["cell"]["row_id"]);
    }
    let c = ab(&sb.run_dir());
    assert_eq!(c.len(), 1);
    assert!(c[0]["base"].as_str().unwrap().contains("variant b (base)"), "{}", c[0]["base"]);
    for r in c[0]["rows"].as_array().unwrap() {
        // Under load a round with one side disturbed is left out of the
        // pairs, and said so: every round is paired or said left out.
        let pairs = r["pairs"].as_u64().unwrap();
        assert_eq!(pairs + r["one_side_disturbed"].as_u64().unwrap_or(0), 4, "every round paired or said left out: {r}");
        // What a row can see is any change its pairs show (no band): above 0
        // (none said for a row left with fewer pairs than its design's four).
        assert!(r["ratio_ci95"].is_array(), "{r}");
        assert!(pairs < 4 || r["sensitivity"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn verdicts_know_the_direction_of_each_unit_in_one_selection() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let both = unit_workload("time", "ns", "lower-is-better") + &unit_workload("rate", "ops/s", "higher-is-better");
    let toml = write(dir, "units.toml", &both);
    let t = toml.to_str().unwrap();
    // Inside one run: b's values are 10% larger, worse for a time, better for a rate.
    let mut args = vec!["run", "units", "--workloads", t, "--no-history", "--run-dir", "ab"];
    // Four rounds, not FAST's two: under load a round with one side
    // disturbed is left out of the pairs, and two must remain.
    args.extend_from_slice(&["--trials", "4", "--runs", "3", "--warmup", "1", "--settle", "0"]);
    args.extend(["--variant", "a=param=v=1000", "--variant", "b=param=v=1100", "--fail-on-regression"]);
    let out = pb(dir, &args);
    let c = ab(&dir.join("ab"));
    // Under load a round with one side disturbed is left out; with fewer
    // pairs than the design's four the row is UNKNOWN, and says why.
    let left_out = |r: &Value| r["one_side_disturbed"].as_u64().unwrap_or(0) > 0 && r["word"] == "UNKNOWN";
    let (time, rate) = (judged(&c, "b", "units.time"), judged(&c, "b", "units.rate"));
    assert!(time["verdict"] == "regressed" || left_out(time), "{time}");
    assert!(rate["verdict"] == "improved" || left_out(rate), "{rate}");
    // (3 when other processes took the trials' CPUs: the load may explain it.)
    let disturbed = text(&out.stderr).contains("every one from disturbed trials");
    let want = if left_out(time) {
        4
    } else if disturbed {
        3
    } else {
        1
    };
    assert_eq!(out.status.code(), Some(want), "--fail-on-regression: {}", text(&out.stderr));
    if want != 4 {
        assert!(
            text(&out.stderr).contains("1 row regressed") && text(&out.stderr).contains("against the base variant"),
            "{}",
            text(&out.stderr)
        );
    }

    // Between two runs, the same.
    for (name, v) in [("one", "1000"), ("two", "1100")] {
        let p = format!("v={v}");
        let mut args = vec!["run", "units", "--workloads", t, "--run-dir", name, "--db", "h.sqlite", "--commit", name, "-p", &p];
        args.extend_from_slice(FAST);
        ok(&pb(dir, &args));
    }
    let out = pb(dir, &["compare", "one", "two", "--ignore-param", "v", "--format", "json", "--db", "h.sqlite"]);
    let c: Value = serde_json::from_str(&ok(&out)).unwrap();
    let verdict = |w: &str| c["rows"].as_array().unwrap().iter().find(|r| r["workload"] == w).unwrap()["verdict"].clone();
    assert_eq!((verdict("units.time"), verdict("units.rate")), (Value::from("regressed"), Value::from("improved")));
    let row = |w: &str| c["rows"].as_array().unwrap().iter().find(|r| r["workload"] == w).unwrap().clone();
    assert!(row("units.time")["floor_note"].as_str().unwrap().starts_with("not enough history"), "{}", row("units.time"));
}

#[test]
fn noise_is_an_a_a_check_recorded_as_the_machines_noise_profile_and_written_as_a_page_with_html() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut args = vec!["noise", "selftest.tiny", "selftest.noisy", "--include-selftest", "-p", "base_us=200", "-p", "jitter_us=20"];
    args.extend_from_slice(FAST);
    args.extend_from_slice(&["--html", "noise.html"]);
    let out = umask_022(Command::new(bin()).args(&args).current_dir(dir)).output().unwrap();
    let stdout = ok(&out);
    assert!(stdout.contains("Noise profile (A/A): of 2 rows judged, ") && stdout.contains("false verdict"), "{stdout}");
    assert!(stdout.contains(" can see a 2% change, ") && stdout.contains(" SAME within 2%, ") && stdout.contains(" UNKNOWN, "), "{stdout}");
    // The page: the run, the noise profile first, then each workload's A/B
    // table (what its columns mean said once), then the rest.
    assert!(text(&out.stderr).contains("proofbench: wrote noise.html"), "{}", text(&out.stderr));
    let page = html_page(&dir.join("noise.html"));
    assert!(page.contains("<title>proofbench noise ") && page.contains(">Noise profile (A/A)</h2>"), "{page}");
    assert!(page.contains(">selftest.tiny</h3>") && page.contains(">selftest.noisy</h3>"), "{page}");
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} on the page: {page}"));
    assert!(
        at(">Noise profile (A/A)</h2>") < at(">selftest.tiny</h3>") && at(">selftest.tiny</h3>") < at(">Reproducibility</h2>"),
        "{page}"
    );
    assert_eq!(page.matches(">Variants against a</h4>").count(), 1, "{page}");
    assert_eq!(page.matches("Ratio = variant / base, with its interval").count(), 1, "{page}");
    assert!(page.contains("Of 2 rows, "), "{page}");
    // What each row can see, as a chart with the 2/5/10% lines.
    assert!(page.contains("What each row can see") && page.matches("<svg").count() == 1, "{page}");
    assert!(page.contains(">2%</text>") && page.contains(">10%</text>"), "{page}");
    let history = ok(&pb(dir, &["history", "list"]));
    assert!(history.lines().any(|l| l.starts_with("h:1 ") && l.contains(" noise ")), "{history}");
    let run = std::fs::read_dir(dir.join("results")).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    let run_json: Value = serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["kind"], "noise");
    let names: Vec<&str> = run_json["variants"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(run_json["variants"].as_array().unwrap().iter().all(|v| v["settings"].as_array().unwrap().is_empty()), "identical variants");
    assert_eq!(rows_of(&run).len(), 4);
}

/// One run of selftest.noisy (1 ms sleeps with 300 us of jitter: trial
/// medians a few percent apart) into `dir/results`, recording `commit`.
fn jittery(dir: &Path, commit: &str, slowdown_pct: u32) {
    let slow = format!("slowdown_pct={slowdown_pct}");
    let args = [
        "run",
        "selftest.noisy",
        "--include-selftest",
        "--trials",
        "3",
        "--runs",
        "5",
        "--warmup",
        "0",
        "--settle",
        "0",
        "-p",
        "base_us=1000",
        "-p",
        "jitter_us=300",
        "-p",
        &slow,
        "--commit",
        commit,
        "--quiet",
    ];
    ok(&pb(dir, &args));
}

#[test]
fn noise_floors_come_from_repeated_runs_of_one_build_and_say_when_there_are_too_few() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    jittery(dir, "c1", 100);
    jittery(dir, "c1", 100);
    let out = ok(&pb(dir, &["history", "regressions"]));
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("not enough history: 2 repeated runs of a build on this machine (1 more needed)"), "{out}");
    assert!(out.contains("2.00% noise"), "the noise band applies: {out}");
    // Without a history database, compare says so.
    let runs: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> =
            std::fs::read_dir(dir.join("results")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
        v.sort();
        v
    };
    let (a, b) = (runs[0].to_str().unwrap(), runs[1].to_str().unwrap());
    let out = ok(&pb(dir, &["compare", a, b, "--db", "none.sqlite"]));
    assert!(out.contains("no history database at none.sqlite"), "{out}");

    jittery(dir, "c1", 100);
    jittery(dir, "c1", 100);
    let out = ok(&pb(dir, &["compare", "h:1", "h:2", "--format", "json"]));
    let c: Value = serde_json::from_str(&out).unwrap();
    let r = &c["rows"][0];
    let floor = r["floor"]["value"].as_f64().expect("four runs of one build give a floor");
    assert_eq!((r["floor"]["runs"].as_u64(), r["floor"]["df"].as_u64()), (Some(4), Some(3)), "{r}");
    let band_from = if floor > 0.02 { "floor" } else { "noise" };
    assert_eq!(r["band_from"], band_from, "the larger of --noise and the floor: {r}");
    assert!((r["band"].as_f64().unwrap() - floor.max(0.02)).abs() < 1e-12, "{r}");

    // A 16x slowdown of another build regresses beyond any floor these runs
    // give, even on a loaded machine (where a 4x one's interval, 3 trials
    // against 3, was once too wide for the adjusted p-value).
    jittery(dir, "c2", 1600);
    // A terminal wide enough for every step on one line.
    let out = ok(&Command::new(bin()).args(["history", "regressions"]).env("COLUMNS", "400").current_dir(dir).output().unwrap());
    // The step to c2 is the one that matters; on a loaded machine a step
    // between the c1 runs may be judged too, so only the count of steps is fixed.
    let step = out.lines().find(|l| l.contains("  h:4 c1  h:5 c2  ")).unwrap_or_else(|| panic!("no step to c2: {out}"));
    // (DIFFERENT (regressed, disturbed) where other processes took the trials' CPUs.)
    assert!(step.contains("  DIFFERENT (regressed") && out.contains("4 steps: "), "{out}");
    assert!(out.contains("Noise floors (") && out.contains("judged rows have one"), "{out}");

    // history show draws each series' floor as a band and says what it is.
    let out = ok(&pb(dir, &["history", "show", "selftest.noisy", "--plot", "trend.svg"]));
    assert!(out.contains("Noise floor (how far the median moves between runs of one build here"), "{out}");
    assert!(out.contains("(from 4 runs of 1 build)"), "{out}");
    let svg = std::fs::read_to_string(dir.join("trend.svg")).unwrap();
    assert!(svg.contains("opacity=\"0.12\""), "the band is drawn: {}", &svg[..svg.len().min(2000)]);
}

#[test]
fn a_120_kb_env_value_in_a_variant_is_run_reported_and_shortened_in_what_a_person_reads() {
    let sb = Sandbox::new();
    let long = "v".repeat(120_000);
    let b = format!("b=env=PB_LONG={long}");
    let out = sb.run(&[&["os.syscall", "--no-history", "--variant", "a=", "--variant", &b], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = sb.report_md();
    let longest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(longest(&md) < 2_000 && longest(&text(&out.stdout)) < 2_000, "a long value is shortened in the report and on the terminal");
    assert!(md.contains("(+"), "the report says how much was left out");
    // The records keep it whole, and `report DIR` renders the same run.
    assert!(std::fs::read_to_string(sb.run_dir().join("run.json")).unwrap().contains(&long));
    let again = std::process::Command::new(crate::common::bin()).arg("report").arg(sb.run_dir()).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
}
