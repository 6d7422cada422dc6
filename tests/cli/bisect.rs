//! `proofbench bisect` over throwaway git repositories of 64 commits of a
//! small C loop that times itself (scripts/sensitivity-work.c's), run as a
//! command workload that runs `$PROOFBENCH_BUILD/work`: planted changes
//! are named and confirmed, a second change in the range is said, an
//! unbuildable commit is skipped, an interrupted bisect resumes to the same
//! answer without building again, and the user's repository is untouched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, text};

/// Steps of the loop at commit 0.
const STEPS: u64 = 300_000;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// A repository of 64 commits of work.c: commit i runs the loop STEPS
/// times the product of `changes` (percent) at or before i; the commits in
/// `broken` do not compile.
fn repo(dir: &Path, changes: &[(usize, f64)], broken: &[usize]) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "t"]);
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/sensitivity-work.c")).unwrap();
    let mut shas = Vec::new();
    for i in 0..64 {
        let factor: f64 = changes.iter().filter(|(at, _)| *at <= i).map(|(_, pct)| 1.0 + pct / 100.0).product();
        let n = (STEPS as f64 * factor).round() as u64;
        let mut c = source.replace("long n = e ? atol(e) : 2000000;", &format!("long n = {n}; (void)e; /* commit {i} */"));
        if broken.contains(&i) {
            c.push_str("\nthis does not compile\n");
        }
        std::fs::write(dir.join("work.c"), c).unwrap();
        git(dir, &["add", "work.c"]);
        git(dir, &["commit", "-qm", &format!("commit {i}")]);
        shas.push(git(dir, &["rev-parse", "HEAD"]));
    }
    shas
}

const TOML: &str = r#"
[[workload]]
id = "plant.loop"
summary = "A C loop timing itself, as built at the commit under measurement"
unit = "ns"
direction = "lower-is-better"
shell = true
command = 'exec "$PROOFBENCH_BUILD/work"'
metric = { regex = 'ns=(\d+)' }

[workload.verify]
must_match = ['steps=\d+ ns=\d+']
"#;

/// `proofbench bisect` of `repo`'s first to last commit into `out`; the
/// build appends its commit to `builds.txt` beside `out`.
fn bisect(tmp: &Path, repo: &Path, out: &Path) -> Command {
    let toml = tmp.join("w.toml");
    std::fs::write(&toml, TOML).unwrap();
    let count = tmp.join("builds.txt");
    let build = format!("cc -O2 -o work work.c && git rev-parse HEAD >> '{}'", count.display());
    let mut c = Command::new(bin());
    c.args(["bisect", "--good", "HEAD~63", "--bad", "HEAD", "--build", &build, "plant.loop"])
        .arg("--repo")
        .arg(repo)
        .arg("--workloads")
        .arg(&toml)
        .arg("--out")
        .arg(out)
        .current_dir(tmp);
    c
}

fn run(c: &mut Command) -> Output {
    c.output().expect("proofbench runs")
}

fn record(out: &Path) -> (PathBuf, Value) {
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("bisect.json").is_file()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let rec = serde_json::from_slice(&std::fs::read(dirs[0].join("bisect.json")).unwrap()).unwrap();
    (dirs[0].clone(), rec)
}

fn commits_measured(rec: &Value) -> usize {
    let steps = rec["steps"].as_array().unwrap();
    steps.iter().flat_map(|s| [s["a"].as_u64().unwrap(), s["b"].as_u64().unwrap()]).collect::<std::collections::BTreeSet<_>>().len()
}

/// The user's repository as it was: HEAD, a clean tree, worktrees git can
/// account for.
fn untouched(repo: &Path, head: &str) {
    assert_eq!(git(repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(repo, &["status", "--porcelain"]), "");
    git(repo, &["worktree", "prune", "--dry-run"]);
}

#[test]
fn bisect_names_the_planted_commit_after_at_most_ten_commits_and_skips_an_unbuildable_one() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("repo");
    // 3% at commit 37; commit 47, the second midpoint, does not compile.
    let shas = repo(&r, &[(37, 3.0)], &[47]);
    let out = tmp.path().join("res");
    let o = run(&mut bisect(tmp.path(), &r, &out));
    let said = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{said}\n{}", text(&o.stderr));
    let (dir, rec) = record(&out);
    assert_eq!(rec["outcome"]["answer"]["kind"], "culprit", "{said}");
    assert_eq!(rec["outcome"]["answer"]["index"], 37, "{said}");
    assert!(said.contains(&format!("Culprit: {}", &shas[37][..10])), "{said}");
    assert!(commits_measured(&rec) <= 10, "{said}");
    // The confirmation against the parent: DIFFERENT, worse (as good..bad).
    let steps = rec["steps"].as_array().unwrap();
    let confirm = steps.iter().find(|s| s["purpose"] == "culprit").expect("a confirmation step");
    assert_eq!((confirm["a"].as_u64(), confirm["b"].as_u64()), (Some(36), Some(37)));
    assert_eq!(confirm["attempts"].as_array().unwrap().last().unwrap()["call"], "worse", "{said}");
    // Measured again in a run of its own, even where a search step measured
    // the same two commits.
    let runs_of = |s: &serde_json::Value| -> Vec<String> {
        s["attempts"].as_array().unwrap().iter().map(|a| a["run_dir"].as_str().unwrap().to_string()).collect()
    };
    for s in steps.iter().filter(|s| s["purpose"] != "culprit") {
        assert!(runs_of(s).iter().all(|d| !runs_of(confirm).contains(d)), "the confirmation reused {s}");
    }
    assert_eq!(steps[0]["attempts"].as_array().unwrap().last().unwrap()["call"], "worse", "{said}");
    // The unbuildable commit was skipped, never measured.
    assert_eq!(rec["outcome"]["skipped"], serde_json::json!([47]), "{said}");
    assert!(steps.iter().all(|s| s["a"] != 47 && s["b"] != 47));
    assert_eq!(rec["outcome"]["other_changes"], serde_json::json!([]), "{said}");
    // Every step's A/B run is kept and recorded in the history.
    for s in steps {
        for a in s["attempts"].as_array().unwrap() {
            assert!(Path::new(a["run_dir"].as_str().unwrap()).join("run.json").is_file(), "{a}");
        }
    }
    let (integrity, runs) = proofbench::testing::history_check_and_run_names(&out.join("history.sqlite")).unwrap();
    assert_eq!(integrity, "ok");
    assert_eq!(runs.len(), rec["measured"].as_array().unwrap().len());
    // The page: the steps, the culprit's stat, the figures the lead quotes.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("work.c | 2 +-") && md.contains("culprit vs parent"), "{md}");
    assert!(md.contains("Wall time") && md.contains("A/B measurements taking"), "{md}");
    assert!(std::fs::read_to_string(dir.join("report.html")).unwrap().contains("commit 37"));
    println!("64-commit bisect: {}", md.lines().rev().find(|l| l.starts_with("Wall time")).unwrap());
    untouched(&r, &shas[63]);
}

#[test]
fn two_planted_changes_give_one_boundary_and_say_the_range_held_another() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("repo");
    let shas = repo(&r, &[(20, 2.0), (37, 3.0)], &[]);
    let out = tmp.path().join("res");
    let o = run(&mut bisect(tmp.path(), &r, &out));
    let said = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{said}\n{}", text(&o.stderr));
    let (dir, rec) = record(&out);
    let index = rec["outcome"]["answer"]["index"].as_u64().expect("a culprit");
    assert!(index == 20 || index == 37, "{said}");
    let others = rec["outcome"]["other_changes"].as_array().unwrap();
    let undecided = rec["outcome"]["undecided_ranges"].as_array().unwrap();
    let page = std::fs::read_to_string(dir.join("report.md")).unwrap();
    if others.is_empty() && undecided.len() == 1 {
        // The rest of the range measured UNKNOWN (the whole suite loading
        // two CPUs): the bisect must say it could not tell, not be silent.
        assert!(page.contains("Parts of the range that could not be told"), "{said}");
        eprintln!("the rest of the range stayed UNKNOWN under load, and the bisect said so:\n{said}");
    } else {
        assert_eq!(others.len(), 1, "{said}");
        assert_eq!(others[0]["call"], "worse", "{said}");
        assert!(page.contains("The range held another change"), "{said}");
    }
    untouched(&r, &shas[63]);
}

#[test]
fn an_interrupted_bisect_resumes_to_the_same_answer_without_building_again() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("repo");
    let shas = repo(&r, &[(37, 3.0)], &[]);
    let out = tmp.path().join("res");
    let mut child = bisect(tmp.path(), &r, &out).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // SIGINT once three steps are recorded.
    let t = Instant::now();
    loop {
        assert!(t.elapsed() < Duration::from_secs(300), "no three steps");
        let steps = std::fs::read_dir(&out)
            .ok()
            .and_then(|d| d.filter_map(Result::ok).find(|e| e.file_name().to_string_lossy().starts_with("bisect-")))
            .and_then(|e| std::fs::read(e.path().join("bisect.json")).ok())
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map_or(0, |v| v["steps"].as_array().map_or(0, Vec::len));
        if steps >= 3 {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the bisect ended before its third step");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let first = child.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(130), "{}\n{}", text(&first.stdout), text(&first.stderr));
    let (dir, rec) = record(&out);
    assert_eq!(rec["state"], "interrupted");
    assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("Interrupted"));
    // The same command again: resumed from its directory.
    let o = run(&mut bisect(tmp.path(), &r, &out));
    let said = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{said}\n{}", text(&o.stderr));
    assert!(said.contains("resuming the bisect in"), "{said}");
    let (_, rec) = record(&out);
    assert_eq!(rec["outcome"]["answer"]["index"], 37, "{said}");
    assert_eq!(rec["sessions"], 2);
    // Each commit built once over both sessions.
    let mut built: BTreeMap<String, usize> = BTreeMap::new();
    for l in std::fs::read_to_string(tmp.path().join("builds.txt")).unwrap().lines() {
        *built.entry(l.to_string()).or_default() += 1;
    }
    assert!(built.values().all(|&n| n == 1), "{built:?}");
    assert_eq!(built.len(), rec["builds"].as_object().unwrap().len());
    // --resume DIR of the finished bisect answers from its record alone.
    let o = run(Command::new(bin()).arg("bisect").arg("--resume").arg(&dir).current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (_, again) = record(&out);
    assert_eq!((again["built_now"].as_u64(), again["measured_now"].as_u64()), (Some(0), Some(0)));
    assert_eq!(again["outcome"], rec["outcome"]);
    untouched(&r, &shas[63]);
}

#[test]
fn bad_input_is_refused_naming_the_flag_before_anything_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q"]);
    git(&r, &["-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one"]);
    git(&r, &["-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "two"]);
    let toml = tmp.path().join("w.toml");
    std::fs::write(&toml, TOML).unwrap();
    let out = tmp.path().join("res");
    let base = |extra: &[&str]| {
        let mut c = Command::new(bin());
        c.arg("bisect").arg("--repo").arg(&r).arg("--out").arg(&out).args(extra).current_dir(tmp.path());
        c
    };
    let t = toml.to_str().unwrap();
    for (args, flag) in [
        (vec!["--good", "HEAD~1", "--bad", "HEAD", "plant.loop", "--workloads", t], "--build"),
        (vec!["--good", "nope", "--bad", "HEAD", "--build", "true", "plant.loop", "--workloads", t], "--good"),
        (vec!["--good", "HEAD", "--bad", "HEAD~1", "--build", "true", "plant.loop", "--workloads", t], "--good"),
        (vec!["--good", "HEAD~1", "--bad", "HEAD", "--build", "true", "cpu.primes", "--workers", "1"], "--workloads"),
        (
            vec!["--good", "HEAD~1", "--bad", "HEAD", "--build", "true", "cpu.primes", "--workers", "1,2"],
            "SELECTION: a bisect follows one row",
        ),
        (vec!["--good", "HEAD~1", "--bad", "HEAD", "--build", "true", "plant.loop", "--workloads", t, "--variant", "x="], "--variant"),
    ] {
        let o = run(&mut base(&args));
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("proofbench: error: ") && err.contains(flag), "{args:?}: {err}");
    }
    assert!(!out.exists(), "nothing written");
    assert_eq!(git(&r, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn proofbench_itself_is_measured_as_exe_variants_and_no_change_stops_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("pb");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q"]);
    std::fs::write(r.join("Cargo.toml"), "[package]\nname = \"proofbench\"\nversion = \"0.0.0\"\nedition = \"2021\"\n").unwrap();
    // Every commit is a crate named proofbench whose binary becomes this
    // proofbench (exec): good and bad are the same program, built by the
    // default build (no --build) into the target directory they share.
    std::fs::create_dir_all(r.join("src")).unwrap();
    for i in 0..3 {
        let main = format!(
            "// commit {i}\nuse std::os::unix::process::CommandExt;\nfn main() {{\n    let e = std::process::Command::new({:?}).args(std::env::args_os().skip(1)).exec();\n    panic!(\"exec: {{e}}\");\n}}\n",
            bin().display().to_string()
        );
        std::fs::write(r.join("src/main.rs"), main).unwrap();
        git(&r, &["add", "Cargo.toml", "src/main.rs"]);
        git(&r, &["-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "-m", &format!("c{i}")]);
    }
    let out = tmp.path().join("res");
    let o = run(Command::new(bin())
        .args(["bisect", "--good", "HEAD~2", "--bad", "HEAD", "cpu.primes", "--workers", "1", "-p", "range=20000"])
        .arg("--repo")
        .arg(&r)
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path()));
    let said = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{said}\n{}", text(&o.stderr));
    let (_, rec) = record(&out);
    assert_eq!(rec["mode"], "exe");
    assert!(rec["build"].as_str().unwrap().contains("CARGO_TARGET_DIR=../../cargo-target cargo build --release"), "{}", rec["build"]);
    // Both ends built, into one shared cargo target directory, each binary
    // kept in its own worktree.
    let builds = rec["builds"].as_object().unwrap();
    assert_eq!(builds.len(), 2, "{builds:?}");
    assert!(builds.values().all(|b| b["ok"] == true), "{builds:?}");
    let (dir, _) = record(&out);
    assert!(dir.join("cargo-target/release/proofbench").is_file());
    for sha in builds.keys() {
        assert!(dir.join("builds").join(sha).join("target/release/proofbench").is_file(), "{sha}");
    }
    assert_eq!(rec["outcome"]["answer"]["kind"], "no_change", "{said}");
    assert_ne!(rec["outcome"]["answer"]["call"], "worse", "{said}");
    assert_eq!(rec["steps"].as_array().unwrap().len(), 1);
    assert!(said.contains("No culprit: good against bad is"), "{said}");
    // The A/B ran each side's build as its worker.
    let step = rec["measured"][0]["measured"]["run_dir"].as_str().unwrap();
    let run: Value = serde_json::from_slice(&std::fs::read(Path::new(step).join("run.json")).unwrap()).unwrap();
    let variants = run["options"]["variants"].as_array().unwrap();
    assert!(
        variants.iter().all(|v| v.as_str().unwrap().contains("=exe=") && v.as_str().unwrap().ends_with("target/release/proofbench")),
        "{variants:?}"
    );
}
