//! `run --launcher 'ssh ...' --hosts` against real sshd servers, one per
//! host, each in a network namespace of its own ([`crate::daemons::sshd`]):
//! the hosts run at once, their rows are a local run's, and a connection
//! killed mid-run keeps what arrived and leaves nothing running there.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin, rows_of, run_dirs, text};
use crate::daemons::sshd::Sshd;

/// A plan of three cells that lasts a second or two.
const PLAN: &[&str] =
    &["selftest.tiny", "cpu.primes", "--include-selftest", "--workers", "1,2", "-p", "range=20000", "--runs", "3", "--warmup", "1"];

/// A plan whose first row (a crash) is decided at once and whose other
/// two take 300 trials.
const LONG: &[&str] = &["selftest.crash", "cpu.primes", "--include-selftest", "--workers", "1,2", "-p", "range=20000", "--runs", "3"];

/// (row id, status) of every row, sorted.
fn statuses(rows: &[Value]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> =
        rows.iter().map(|r| (r["cell"]["row_id"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string())).collect();
    v.sort();
    v
}

fn run_json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// The first round's start and the last round's end of a run, as written.
fn span(run: &Value) -> (String, String) {
    let rounds = run["rounds"].as_array().unwrap();
    (rounds[0]["started_utc"].as_str().unwrap().to_string(), rounds.last().unwrap()["finished_utc"].as_str().unwrap().to_string())
}

#[test]
fn three_hosts_over_ssh_run_at_once_with_the_rows_of_a_local_run() {
    let Some(fx) = Sshd::start(&["h1", "h2", "h3"]) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("local");
    let out = Command::new(bin())
        .args([&["run", "--no-history", "--trials", "4", "--out", local.to_str().unwrap()], PLAN].concat())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let local_rows = rows_of(&run_dirs(&local)[0]);

    let results = tmp.path().join("fleet");
    let out = Command::new(bin())
        .args([&["run", "--no-history", "--trials", "4", "--out", results.to_str().unwrap()], PLAN].concat())
        .args(["--launcher", &fx.launcher(), "--hosts", "h1,h2,h3", "--remote-exe", bin().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dirs: Vec<PathBuf> = run_dirs(&results);
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    let mut spans = Vec::new();
    for d in &dirs {
        let run = run_json(d);
        assert_eq!(run["complete"], true, "{}", d.display());
        assert_eq!(statuses(&rows_of(d)), statuses(&local_rows), "{}", d.display());
        assert!(run["launcher"]["prefix"][0] == "ssh", "{}", run["launcher"]);
        spans.push(span(&run));
    }
    // At once: every host's rounds began before any host's rounds ended.
    let latest_start = spans.iter().map(|s| s.0.clone()).max().unwrap();
    let earliest_end = spans.iter().map(|s| s.1.clone()).min().unwrap();
    assert!(latest_start < earliest_end, "the hosts ran one after another: {spans:?}");
    let stdout = text(&out.stdout);
    for h in ["h1", "h2", "h3"] {
        assert!(stdout.lines().any(|l| l.trim_start().starts_with(&format!("{h} ")) && l.contains("3 ok")), "{stdout}");
    }
}

#[test]
fn a_connection_killed_mid_run_keeps_the_rows_received_and_leaves_nothing_running_on_the_host() {
    let Some(fx) = Sshd::start(&["h1"]) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let mut child = Command::new(bin())
        .args([&["run", "--no-history", "--trials", "300", "--time-budget", "30s", "--out", results.to_str().unwrap()], LONG].concat())
        .args(["--launcher", &fx.launcher_for("h1"), "--remote-exe", bin().to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first row to arrive, then cut the connection from the server's side.
    let t = Instant::now();
    loop {
        // The run directory exists a moment before its rows.jsonl, and a row
        // may be read half written: count only whole lines of a file present.
        let arrived = if results.is_dir() {
            run_dirs(&results)
                .first()
                .and_then(|d| std::fs::read_to_string(d.join("rows.jsonl")).ok())
                .map(|s| s.matches('\n').count())
                .unwrap_or(0)
        } else {
            0
        };
        if arrived > 0 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no row arrived within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    fx.drop_connections("h1");
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the run did not end within 120 s of its connection being cut");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = {
        use std::io::Read;
        let mut s = String::new();
        child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
        s
    };
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("the run was cut short"), "{err}");
    let dir = &run_dirs(&results)[0];
    let run = run_json(dir);
    let rows = rows_of(dir);
    assert_eq!(run["complete"], false);
    assert!(!rows.is_empty());
    assert_eq!(rows.len() + run["not_run"].as_array().unwrap().len(), 3, "{}", run["not_run"]);
    // The launched side saw its stdin close and ended, its workers with it.
    let t = Instant::now();
    loop {
        let left: Vec<String> =
            fx.processes().into_iter().filter(|p| !p.comm.starts_with("sshd")).map(|p| format!("{} {}", p.pid, p.comm)).collect();
        if left.is_empty() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "still running on the host 30 s after the cut: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
