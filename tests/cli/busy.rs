//! Verdicts made on a busy machine: an A/A (the same build twice) while
//! stress-ng holds one CPU during both runs gives no plain "regressed":
//! every verdict its trials' load could explain is marked `(disturbed)`,
//! the load of both runs is said, and `--fail-on-regression` exits 3 for
//! such verdicts (never 1), in `compare` and in a run's own variants.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{bin, missing, on_path, text};

/// stress-ng holding one CPU busy until dropped.
struct Stress(Child);

impl Stress {
    fn start() -> Option<Stress> {
        if on_path("stress-ng").is_none() {
            missing("stress-ng", "apt-get install stress-ng");
            return None;
        }
        let child = Command::new("stress-ng")
            .args(["--cpu", "1", "--timeout", "600s", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("stress-ng starts");
        // Let it take its CPU before the first trial.
        std::thread::sleep(std::time::Duration::from_millis(500));
        Some(Stress(child))
    }
}

impl Drop for Stress {
    fn drop(&mut self) {
        // stress-ng's workers end with their parent on SIGTERM... and SIGKILL of
        // the parent would leave them: ask, then wait.
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// A short run of a few rows into `dir`, with `extra` flags.
fn run(dir: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(["run", "os.syscall", "cpu.primes", "-p", "range=20000", "--workers", "1", "--trials", "4", "--runs", "5"])
        .args(["--warmup", "1", "--settle", "0", "--no-history", "--quiet", "--run-dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every regressed or improved row of a comparison's JSON is marked
/// disturbed; returns how many there were.
fn no_plain_verdict(c: &Value) -> usize {
    let moved: Vec<&Value> =
        c["rows"].as_array().unwrap().iter().filter(|r| r["verdict"] == "regressed" || r["verdict"] == "improved").collect();
    for r in &moved {
        assert_eq!(r["disturbed_verdict"], true, "a plain verdict from a busy machine: {r}");
    }
    moved.len()
}

#[test]
fn an_a_a_on_a_busy_machine_gives_no_plain_regressed_and_the_gate_says_why() {
    let Some(stress) = Stress::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for d in [&a, &b] {
        let o = run(d, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let run = json(&d.join("run.json"));
        assert_eq!(run["interference"]["disturbed"], true, "stress-ng's CPU is seen as taken: {}", run["interference"]);
    }
    // The run's own variants (A/A, paired by round) under the same load.
    let v = tmp.path().join("v");
    // (--allow-unknown: under this load some rows are UNKNOWN, exit 4; the gate's point here is 1 against 3.)
    let o = run(&v, &["--variant", "a=", "--variant", "b=", "--fail-on-regression", "--allow-unknown"]);
    drop(stress);
    assert!(matches!(o.status.code(), Some(0 | 3)), "a plain regression failed the gate: {}", text(&o.stderr));
    if o.status.code() == Some(3) {
        assert!(text(&o.stderr).contains("every one from disturbed trials or a busy machine"), "{}", text(&o.stderr));
    }

    let compare = |extra: &[&str]| Command::new(bin()).arg("compare").arg(&a).arg(&b).args(extra).output().unwrap();
    let o = compare(&["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let moved = no_plain_verdict(&c);
    let said = c["interference"].as_str().expect("the load of both runs is said");
    assert!(said.starts_with("both runs were made on a busy machine"), "{said}");
    // The terminal: every verdict in the table that moved says so, and so does the count line.
    let o = compare(&[]);
    let out = text(&o.stdout);
    let table_moved: Vec<&str> = out.lines().filter(|l| l.starts_with('|') && l.contains("| DIFFERENT (")).collect();
    for l in &table_moved {
        assert!(l.contains(", disturbed) |"), "{l}");
    }
    assert_eq!(table_moved.len(), moved, "{out}");
    assert!(text(&o.stderr).contains("both runs were made on a busy machine"), "{}", text(&o.stderr));
    // The gate: 3 with a regression the load may explain, 0 without one; never 1
    // (--allow-unknown: rows of a busy machine's two runs are seldom SAME).
    let o = compare(&["--fail-on-regression", "--allow-unknown"]);
    let regressed = c["rows"].as_array().unwrap().iter().any(|r| r["verdict"] == "regressed");
    assert_eq!(o.status.code(), Some(if regressed { 3 } else { 0 }), "{moved} moved: {}", text(&o.stderr));
    let vc = Command::new(bin()).args(["compare", "--format", "json"]).arg(&v).output().unwrap();
    let vs: Value = serde_json::from_slice(&vc.stdout).unwrap();
    for c in vs.as_array().unwrap() {
        no_plain_verdict(c);
        assert!(c["interference"].as_str().is_some_and(|s| s.starts_with("the run was made on a busy machine")), "{c}");
    }
}
