//! What passes between the runner and a worker: a worker (or a launcher in
//! front of it) that never reads its cell cannot hang the run past its
//! timeout or past a stop signal; what a worker prints on its report
//! channel is bounded; a worker that ends without a report is described by
//! its own last line of stderr; a library preloaded into the worker, by
//! `preload=` or by `env=LD_PRELOAD=`, is checked before the run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Sandbox, bin, s, text};

/// Writes an executable shell script `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A stand-in for another build of proofbench (an `exe=` variant): it
/// answers `--version` as this one does, and runs `body` as the worker.
fn fake_worker(dir: &Path, name: &str, body: &str) -> PathBuf {
    let version = format!("proofbench {}", env!("CARGO_PKG_VERSION"));
    script(dir, name, &format!("if [ \"$1\" = --version ]; then echo '{version}'; exit 0; fi\n{body}"))
}

/// A command workload `big.cell` whose cell is more than a mebibyte of JSON
/// (an `env` value of 1.5 MiB), far more than a pipe holds.
fn big_cell_toml(dir: &Path) -> PathBuf {
    let p = dir.join("big.toml");
    let body = format!(
        "[[workload]]\nid = \"big.cell\"\nsummary = \"A cell larger than a pipe\"\nunit = \"ns\"\ndirection = \"lower-is-better\"\n\
         command = [\"true\"]\nenv = {{ BIG = \"{}\" }}\n",
        "x".repeat(3 << 19)
    );
    std::fs::write(&p, body).unwrap();
    p
}

/// A launcher that runs the envelope probe and, for the launched run,
/// sleeps without reading its stdin (the run's configuration, larger than
/// a pipe with the big cell's workload).
fn deaf_launcher(dir: &Path) -> PathBuf {
    script(
        dir,
        "deaf-launcher.sh",
        "case \"$*\" in *' remote-run') echo \"deaf launcher waiting $$\" >&2; exec sleep 30;; esac\nexec \"$@\"",
    )
}

/// Waits for `child` at most `limit`; kills it (and fails) when it runs longer.
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether some log of the run directory holds `needle`.
fn some_log_holds(run_dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(run_dir.join("logs")) else { return false };
    entries.flatten().any(|e| std::fs::read_to_string(e.path()).is_ok_and(|l| l.contains(needle)))
}

/// The arguments of a run of `big.cell` with one trial per cell.
fn big_cell_args(toml: &Path) -> Vec<String> {
    ["big.cell", "--workloads", toml.to_str().unwrap(), "--trials", "1", "--no-history"].map(str::to_string).to_vec()
}

#[test]
fn a_worker_or_launcher_that_never_reads_a_cell_larger_than_a_pipe_times_out_within_the_timeout() {
    let sb = Sandbox::new();
    let dir = sb.tmp.path();
    let toml = big_cell_toml(dir);
    let deaf = fake_worker(dir, "deaf-worker", "echo 'deaf worker waiting' >&2\nexec sleep 30");
    let variants = ["--variant", &format!("a=exe={}", deaf.display()), "--variant", &format!("b=exe={},env=PB_B=1", deaf.display())];
    for (what, extra) in [("an exe= worker that never reads", &variants[..])] {
        let _ = std::fs::remove_dir_all(sb.run_dir());
        let mut args = big_cell_args(&toml);
        args.extend(["--timeout", "1s"].map(str::to_string));
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = sb.command(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        // Two trials (or one) of 1 s, each with at most a second of grace, and the run around them.
        let status = wait_at_most(&mut child, Duration::from_secs(20), what);
        assert_eq!(status.code(), Some(1), "{what}");
        for r in sb.rows() {
            assert_eq!(s(&r["status"]), "timeout", "{what}: {r}");
            assert!(r["process"]["wall_ms"].as_f64().unwrap() < 4000.0, "{what}: {}", r["process"]);
        }
        assert!(!sb.rows().is_empty(), "{what}");
    }
}

#[test]
fn a_run_whose_launcher_never_reads_the_run_ends_on_sigterm_and_leaves_nothing_running() {
    let sb = Sandbox::new();
    let dir = sb.tmp.path();
    let toml = big_cell_toml(dir);
    let launcher = deaf_launcher(dir);
    let mut args = big_cell_args(&toml);
    args.extend(["--timeout", "1s", "--launcher", launcher.to_str().unwrap()].map(str::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log = dir.join("stderr");
    let mut child = sb.command(&args).stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let t = Instant::now();
    let sleeper = loop {
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(pid) = said.lines().find_map(|l| l.split("deaf launcher waiting ").nth(1)) {
            break pid.trim().parse::<i32>().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the launcher did not start: {said}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_at_most(&mut child, Duration::from_secs(10), "a deaf launcher");
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "a stop before the run started is an interrupted run: {said}");
    assert!(said.contains("stopped before the run started; nothing was run"), "{said}");
    assert!(!Path::new(&format!("/proc/{sleeper}")).exists(), "the launcher's process {sleeper} was left running");
}

#[test]
fn sigterm_and_sigint_end_a_run_whose_worker_never_reads_its_cell() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let sb = Sandbox::new();
        let dir = sb.tmp.path();
        let toml = big_cell_toml(dir);
        let deaf = fake_worker(dir, "deaf-worker", "echo 'deaf worker waiting' >&2\nexec sleep 30");
        let mut args = big_cell_args(&toml);
        args.extend(["--timeout", "60s", "--variant"].map(str::to_string));
        args.push(format!("a=exe={}", deaf.display()));
        args.push("--variant".into());
        args.push(format!("b=exe={},env=PB_B=1", deaf.display()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = sb.command(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let t = Instant::now();
        while !some_log_holds(&sb.run_dir(), "deaf worker waiting") {
            if t.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the worker did not start within 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_at_most(&mut child, Duration::from_secs(10), &format!("signal {sig}"));
        assert_eq!(status.code(), Some(130), "signal {sig}");
        assert_eq!(sb.run_json()["interrupted"], true, "signal {sig}");
    }
}

#[test]
fn a_worker_that_prints_64_mib_on_its_report_channel_fails_naming_the_bound() {
    let sb = Sandbox::new();
    let dir = sb.tmp.path();
    let loud = fake_worker(dir, "loud-worker", "cat >/dev/null\nhead -c 67108864 /dev/zero | tr '\\0' x");
    let out = sb.run(&[
        "selftest.tiny",
        "--include-selftest",
        "--trials",
        "1",
        "--no-history",
        "--variant",
        "a=",
        "--variant",
        &format!("loud=exe={}", loud.display()),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = sb.rows();
    let loud_row = rows.iter().find(|r| r["cell"]["variant"]["name"] == "loud").expect("the loud variant's row");
    assert_eq!(s(&loud_row["status"]), "failed", "{loud_row}");
    let why = s(&loud_row["reason"]);
    assert!(why.contains("printed more than 4.0 MiB on its report channel"), "{why}");
    let ok_row = rows.iter().find(|r| r["cell"]["variant"]["name"] == "a").unwrap();
    assert_eq!(s(&ok_row["status"]), "ok", "the other variant is untouched: {ok_row}");
}

/// The row of `variant` in a run of selftest.tiny in two trials under
/// `base=` and `variant=exe=WORKER`, which must fail.
fn failed_row_of_exe(worker: &Path, variant: &str) -> Value {
    let sb = Sandbox::new();
    let exe = format!("{variant}=exe={}", worker.display());
    let out = sb.run(&["selftest.tiny", "--include-selftest", "--trials", "2", "--no-history", "--variant", "base=", "--variant", &exe]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("=== proofbench"), "{}", text(&out.stdout));
    let r = sb.rows().into_iter().find(|r| r["cell"]["variant"]["name"] == variant).expect("a row per variant");
    assert_eq!(s(&r["status"]), "failed", "{r}");
    r
}

#[test]
fn a_worker_that_exits_0_without_a_report_is_described_by_its_own_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The first trial is the real worker's (its log lines come first), the
    // second exits silently: the log's last lines are the first trial's and
    // proofbench's own banner, neither of them this worker's.
    let first = dir.join("first-trial-done");
    let silent = fake_worker(
        dir,
        "silent-worker",
        &format!(
            "if [ ! -e '{f}' ]; then touch '{f}'; exec '{pb}' worker; fi\ncat >/dev/null\nexit 0",
            f = first.display(),
            pb = bin().display()
        ),
    );
    let r = failed_row_of_exe(&silent, "silent");
    assert_eq!(s(&r["reason"]), "trial 2 of 2: exited with code 0 without a report; the worker wrote nothing on stderr");
    assert_eq!(s(&r["stderr_tail"]), "", "the deciding trial's worker wrote nothing: {r}");

    let talker = fake_worker(dir, "talking-worker", "cat >/dev/null\necho 'first words' >&2\necho 'last words' >&2\nexit 0");
    let r = failed_row_of_exe(&talker, "talker");
    assert_eq!(s(&r["reason"]), "exited with code 0 without a report; last stderr line: last words");
    assert_eq!(s(&r["stderr_tail"]), "first words\nlast words");
}

/// `proofbench run ARGS` refused with exit 2 and one line holding every needle.
fn refused(dir: &Path, args: &[&str], needles: &[&str]) {
    let out = Command::new(bin()).arg("run").args(args).arg("--no-history").current_dir(dir).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in: {err}");
    }
}

#[test]
fn env_ld_preload_is_checked_to_load_as_preload_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let base = ["selftest.tiny", "--include-selftest", "--trials", "1", "--variant", "a="];
    // A library that does not exist, under either key: refused naming the setting.
    refused(
        dir,
        &[&base[..], &["--variant", "b=env=LD_PRELOAD=/nonexistent/libnothing.so"]].concat(),
        &["--variant b=env=LD_PRELOAD=/nonexistent/libnothing.so: ", "/nonexistent/libnothing.so does not exist"],
    );
    refused(
        dir,
        &[&base[..], &["--variant", "b=preload=/nonexistent/libnothing.so"]].concat(),
        &["--variant b=preload=/nonexistent/libnothing.so: ", "/nonexistent/libnothing.so does not exist"],
    );
    // One the loader cannot find, also in a list of several.
    refused(
        dir,
        &[&base[..], &["--variant", "b=env=LD_PRELOAD=libm.so.6 libnot-a-library-anywhere.so.1"]].concat(),
        &["--variant b=env=LD_PRELOAD=libm.so.6 libnot-a-library-anywhere.so.1: ", "does not load"],
    );
    // Both keys at once would both set LD_PRELOAD.
    refused(
        dir,
        &[&base[..], &["--variant", "b=preload=libm.so.6,env=LD_PRELOAD=libm.so.6"]].concat(),
        &["--variant b=", "both would set LD_PRELOAD"],
    );
    // preload= is for an allocator: a library without malloc is refused
    // there, while env=LD_PRELOAD= only needs it to load.
    refused(dir, &[&base[..], &["--variant", "b=preload=libm.so.6"]].concat(), &["--variant b=preload=libm.so.6: ", "malloc"]);
    let sb = Sandbox::new();
    let out = sb.run(&[&base[..], &["--no-history", "--variant", "b=env=LD_PRELOAD=libm.so.6"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn the_help_says_preload_is_for_an_allocator_checked_to_define_malloc() {
    let out = Command::new(bin()).args(["run", "--help"]).output().unwrap();
    let help = text(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("`preload=LIB` (an allocator library preloaded into the worker, checked to define malloc"), "{help}");
    assert!(help.contains("env=LD_PRELOAD="), "{help}");
}
