//! Trials: every cell in several worker processes, run in shuffled rounds;
//! rows whose interval stays wide get more trials while the budget allows;
//! each trial records what else took its CPUs; runs recorded before trials
//! still render.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::common::{Sandbox, bin, row, text};

/// selftest.noisy with `jitter_us` of jitter on 200 us sleeps, 5 samples a trial.
fn noisy(sb: &Sandbox, jitter_us: u32, extra: &[&str]) -> Value {
    let jitter = format!("jitter_us={jitter_us}");
    let args = [
        &["selftest.noisy", "--include-selftest", "--runs", "5", "--warmup", "0", "--settle", "0", "-p", "base_us=200", "-p", &jitter],
        extra,
    ]
    .concat();
    let out = sb.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    row(&sb.rows(), "selftest.noisy").clone()
}

fn trials(r: &Value) -> usize {
    r["trials"].as_array().unwrap().len()
}

#[test]
fn a_wide_row_gets_more_trials_up_to_the_maximum_and_says_why_it_stopped() {
    // Jitter ten times the sleep: the interval of 3 trials is far wider than 2%.
    let sb = Sandbox::new();
    let r = noisy(&sb, 2000, &["--max-trials", "5"]);
    assert_eq!((trials(&r), r["stop"].as_str(), r["trials_planned"].as_u64()), (5, Some("max-trials"), Some(3)), "{}", r["stop"]);
    let run = sb.run_json();
    assert_eq!((run["trials"]["min"].as_u64(), run["trials"]["max"].as_u64()), (Some(3), Some(5)));
    assert_eq!(run["rounds"].as_array().unwrap().len(), 5, "two rounds of extra trials");
    // Every trial ran in its own round, in its own process.
    let rounds: Vec<u64> = r["trials"].as_array().unwrap().iter().map(|t| t["round"].as_u64().unwrap()).collect();
    assert_eq!(rounds, [0, 1, 2, 3, 4]);

    // No budget left for extra trials: the planned three, and the reason.
    let sb = Sandbox::new();
    let r = noisy(&sb, 2000, &["--run-budget", "1ms"]);
    assert_eq!((trials(&r), r["stop"].as_str()), (3, Some("run-budget")));

    // A row within the target stops at the planned trials.
    let sb = Sandbox::new();
    let r = noisy(&sb, 0, &["--ci-target", "50%"]);
    assert_eq!((trials(&r), r["stop"].as_str()), (3, Some("ci-target")), "{}", r["stats"]["headline"]);

    // --trials alone is exact, however wide.
    let sb = Sandbox::new();
    let r = noisy(&sb, 2000, &["--trials", "2"]);
    assert_eq!((trials(&r), r["stop"].as_str()), (2, Some("fixed")));
    let h = &r["stats"]["headline"];
    assert!(h["ci95"]["lo"].as_f64().unwrap() < h["median"].as_f64().unwrap(), "{h}");
    assert_eq!(h["ci95"]["df"], 1.0, "two trials: one degree of freedom");
}

#[test]
fn the_report_gives_each_rows_spread_and_sensitivity_and_the_runs_summary() {
    let sb = Sandbox::new();
    noisy(&sb, 50, &["--trials", "3"]);
    let md = sb.report_md();
    for want in [" Trials |", " Between |", " Within |", " Sees |", "## Reproducibility", "Of 1 ok row with an interval,"] {
        assert!(md.contains(want), "report.md lacks {want}:\n{md}");
    }
    let r = row(&sb.rows(), "selftest.noisy").clone();
    let s = r["stats"]["headline"]["sensitivity"].as_f64().unwrap();
    assert!(s > 0.02, "a sensitivity is never finer than the 2% band: {s}");
    assert!(md.contains(&format!(">= {:.2}%", 100.0 * s)), "{md}");
}

/// A thread of this test process spinning on one CPU until dropped.
struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn on(cpu: usize) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            // SAFETY: a zeroed cpu_set_t with one bit set, applied to this thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            while !flag.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        Spinner { stop, thread: Some(thread) }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The first CPU this process may use (where `--pin linear` puts worker 0).
fn first_allowed_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t filled by the kernel for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &set)).unwrap()
    }
}

#[test]
fn a_busy_neighbour_on_the_trials_cpu_is_recorded_and_warned_about() {
    let args: &[&str] =
        &["cpu.primes", "--workers", "1", "--pin", "linear", "--trials", "2", "--runs", "8", "--warmup", "0", "-p", "range=1500000"];
    let quiet = Sandbox::new();
    let out = quiet.run(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let busy = Sandbox::new();
    let cpu = first_allowed_cpu();
    let out = {
        let _spinner = Spinner::on(cpu);
        busy.run(args)
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = row(&busy.rows(), "cpu.primes").clone();
    for t in r["trials"].as_array().unwrap() {
        let i = &t["facts"]["interference"];
        assert_eq!(i["cpus"], serde_json::json!([cpu]), "the pinned CPU is the one considered");
        assert!(i["others_share"].as_f64().unwrap() >= 0.2, "a spinner sharing the CPU took a share: {i}");
        assert_eq!(i["disturbed"], true, "{i}");
    }
    let md = busy.report_md();
    assert!(md.contains("2 of 2 trials disturbed (others took"), "{md}");
    assert!(md.contains(" trials that other processes disturbed"), "{md}");

    // compare says which run was busy, and counts the disturbed trials.
    let cmp = std::process::Command::new(bin())
        .arg("compare")
        .arg(quiet.run_dir())
        .arg(busy.run_dir())
        .args(["--format", "json"])
        .output()
        .unwrap();
    let c: Value = serde_json::from_slice(&cmp.stdout).unwrap();
    // The quiet run is quiet only if nothing else loads the machine: its count is whatever it recorded.
    let base = c["rows"][0]["disturbed"][0].as_u64().unwrap();
    assert_eq!(c["rows"][0]["disturbed"][1], 2, "{}", c["rows"][0]);
    let said = format!("disturbed trials: {base} in the base, 2 in the candidate");
    assert!(c["rows"][0]["reason"].as_str().unwrap().contains(&said), "{}", c["rows"][0]);
}

#[test]
fn a_run_recorded_before_trials_renders_and_compares_as_one_trial_per_row() {
    let old = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runs/before-trials"));
    let out = std::process::Command::new(bin()).arg("report").arg(old).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.contains("### cpu.primes") && md.contains("n/a: 1 trial"), "{md}");
    assert!(md.contains("No row has two trials or more"), "{md}");
    // Against itself: no interval on either side, so no verdict, saying why.
    let cmp = std::process::Command::new(bin()).arg("compare").arg(old).arg(old).args(["--format", "json"]).output().unwrap();
    assert_eq!(cmp.status.code(), Some(0), "{}", text(&cmp.stderr));
    let c: Value = serde_json::from_slice(&cmp.stdout).unwrap();
    for r in c["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "not_comparable");
        assert!(r["reason"].as_str().unwrap().contains("base 1 trial and candidate 1 trial"), "{r}");
    }
    // Its rows read as one trial each, with the samples they had.
    let export = std::process::Command::new(bin()).args(["report", "--export", "json"]).arg(old).output().unwrap();
    let rows: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert!(rows.as_array().unwrap().iter().all(|r| r["trials"] == 1 && r["n"].as_u64() == Some(3)), "{rows}");
}
