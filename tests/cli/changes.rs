//! `history changes`: one real run of selftest.noisy, copied into a series
//! of runs whose medians carry a planted step (or belong to several
//! machines), imported into a history; the change points found, the
//! machines kept apart, and bad input refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{bin, noisy_args, text, umask_022};

fn pb(dir: &Path, args: &[&str]) -> Output {
    umask_022(Command::new(bin()).args(args).current_dir(dir)).output().expect("proofbench runs")
}

/// One run of selftest.noisy into `dir/seed`, kept out of any history.
fn seed(dir: &Path) -> PathBuf {
    let noisy = noisy_args(100);
    let out_dir = dir.join("seed");
    let args: Vec<&str> =
        ["run"].into_iter().chain(noisy.iter().map(String::as_str)).chain(["--no-history", "--out", out_dir.to_str().unwrap()]).collect();
    let out = pb(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = crate::common::run_dirs(&out_dir);
    assert_eq!(run.len(), 1, "{run:?}");
    run[0].clone()
}

/// A copy of the run `seed` as run number `i` (a day apart, commit `c<i>`)
/// into `dir/runs`, its ok rows' medians scaled by `level` and the host
/// (and Slurm node) set by `machine`.
fn copy(seed: &Path, dir: &Path, i: usize, level: f64, machine: impl Fn(&mut Value)) {
    let to = dir.join("runs").join(format!("run-{i:03}"));
    std::fs::create_dir_all(&to).unwrap();
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(seed.join("run.json")).unwrap()).unwrap();
    run["id"] = format!("{}-copy{i:03}", run["id"].as_str().unwrap()).into();
    run["started_utc"] = format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60).into();
    run["commit"] = format!("c{i:03}0000000").into();
    machine(&mut run["envelope"]);
    std::fs::write(to.join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
    let rows: Vec<String> = std::fs::read_to_string(seed.join("rows.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            // A little noise of its own (+-0.4%), so that no two runs are equal.
            let scale = level * (1.0 + 0.004 * (((i * 7) % 5) as f64 - 2.0) / 2.0);
            let h = &mut r["stats"]["headline"];
            if let Some(m) = h["median"].as_f64() {
                h["median"] = (m * scale).into();
                for k in ["lo", "hi"] {
                    if let Some(v) = h["ci95"][k].as_f64() {
                        h["ci95"][k] = (v * scale).into();
                    }
                }
            }
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    std::fs::write(to.join("rows.jsonl"), rows.join("\n") + "\n").unwrap();
}

fn changes_json(dir: &Path, args: &[&str]) -> Value {
    let out = pb(dir, &[&["history", "changes", "--format", "json"][..], args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}

fn import(dir: &Path) {
    let out = pb(dir, &["history", "import", "runs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_planted_step_is_found_between_the_runs_around_it_and_bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let seed = seed(dir);
    // 16 runs; from the 10th on (commit c009) 30% slower.
    for i in 0..16 {
        copy(&seed, dir, i, if i < 9 { 1.0 } else { 1.3 }, |_| {});
    }
    import(dir);
    let c = changes_json(dir, &["selftest.noisy"]);
    assert_eq!(c["schema"], "proofbench.changes/1");
    let series = c["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{c:#}");
    let s = &series[0];
    assert_eq!(s["runs"].as_array().unwrap().len(), 16);
    let found = s["changes"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{s:#}");
    let p = &found[0];
    assert_eq!((p["last_before"]["commit"].as_str(), p["first_after"]["commit"].as_str()), (Some("c0080000000"), Some("c0090000000")));
    assert_eq!(p["verdict"], "regressed", "a time that grew");
    let (ratio, lo, hi) = (p["ratio"].as_f64().unwrap(), p["ratio_ci95"][0].as_f64().unwrap(), p["ratio_ci95"][1].as_f64().unwrap());
    assert!((ratio - 1.3).abs() < 0.01 && lo <= ratio && ratio <= hi, "{p:#}");
    assert_eq!((p["runs_before"].as_array().unwrap().len(), p["runs_after"].as_array().unwrap().len()), (9, 7));

    // The table says the same; -p filters; the page is written.
    let out = pb(dir, &["history", "changes", "-p", "base_us=1000", "--html", "changes.html"]);
    let table = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Each run and its commit, in their columns (wrapped within 100 columns).
    let row = table.lines().skip_while(|l| !l.starts_with("selftest.noisy")).take(2).collect::<Vec<_>>().join("\n");
    for (run, commit) in [("h:9", "c008000000"), ("h:10", "c009000000")] {
        assert!(row.contains(&format!(" {run} ")) && row.contains(commit), "{table}");
    }
    assert!(row.contains("regressed"), "{table}");
    assert!(table.contains("1 series examined, 1 change point found"), "{table}");
    assert!(std::fs::read_to_string(dir.join("changes.html")).unwrap().contains("history changes"));
    let md = text(&pb(dir, &["history", "changes", "--format", "markdown"]).stdout);
    assert!(md.starts_with("# proofbench history changes"), "{md}");

    // Bad input: exit 2, one line naming what was wrong.
    for (args, says) in [
        (&["history", "changes", "nosuch.workload"][..], "nosuch.workload"),
        (&["history", "changes", "-p", "base_us=7"][..], "-p base_us=7"),
        (&["history", "changes", "-p", "novalue"][..], "novalue"),
        (&["history", "changes", "--noise", "lots"][..], "--noise"),
        (&["history", "changes", "--format", "xml"][..], "--format"),
        (&["history", "changes", "--db", "missing.sqlite"][..], "missing.sqlite"),
    ] {
        let out = pb(dir, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("proofbench: error: ") && err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn the_runs_of_two_machines_and_of_two_slurm_nodes_of_one_host_are_separate_series() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let seed = seed(dir);
    // Interleaved in time: host a (level 1), host b (level 1.3), and a
    // Slurm node n2 on host a (level 1.6). One series of them all would
    // shift at nearly every run; each machine's is steady.
    let levels = [1.0, 1.3, 1.6];
    for i in 0..18 {
        copy(&seed, dir, i, levels[i % 3], |env| match i % 3 {
            0 => env["hostname"] = "a".into(),
            1 => env["hostname"] = "b".into(),
            _ => {
                env["hostname"] = "a".into();
                env["slurm"] = serde_json::json!({"job_id": "7", "job_nodelist": "n[1-2]", "node": "n2"});
            }
        });
    }
    import(dir);
    let c = changes_json(dir, &[]);
    let series = c["series"].as_array().unwrap();
    let mut machines: Vec<&str> = series.iter().map(|s| s["machine"].as_str().unwrap()).collect();
    machines.sort_unstable();
    assert_eq!(machines, ["a", "a/n2", "b"], "{c:#}");
    for s in series {
        assert_eq!(s["runs"].as_array().unwrap().len(), 6, "{s:#}");
        assert_eq!(s["changes"].as_array().unwrap().len(), 0, "a machine's own runs are steady: {s:#}");
    }
}
