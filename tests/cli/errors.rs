//! Bad input: one line naming what to fix, exit code 2, nothing run.

use std::process::Command;

use crate::common::{Sandbox, bin, text};

/// Runs proofbench with `args` and checks exit code 2 and a one-line error
/// containing each of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let out = Command::new(bin()).args(args).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line:\n{err}");
    assert!(err.starts_with("proofbench: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in: {err}");
    }
    assert!(out.stdout.is_empty(), "{args:?} printed {}", text(&out.stdout));
}

#[test]
fn bad_flags_and_values_name_the_flag() {
    refused(&["run", "--bogus"], &["--bogus"]);
    refused(&["run", "--profile", "huge"], &["huge", "--profile"]);
    refused(&["run", "--workers", "0"], &["--workers 0"]);
    refused(&["run", "--workers", "1,x"], &["--workers 1,x", "'x'"]);
    refused(&["run", "--timeout", "soon"], &["soon"]);
    refused(&["run", "--runs", "0"], &["--runs"]);
    refused(&["run", "--trials", "0"], &["--trials", "'0'"]);
    refused(&["run", "--trials", "three"], &["--trials", "'three'"]);
    refused(&["run", "--max-trials", "0"], &["--max-trials"]);
    refused(&["run", "cpu.primes", "--trials", "200"], &["--trials 200", "900 ms time budget", "at most 90 trials", "--time-budget"]);
    refused(&["run", "cpu.primes", "--trials", "5", "--max-trials", "3"], &["--max-trials 3", "(5)"]);
    refused(&["run", "cpu.primes", "--run-budget", "later"], &["--run-budget", "later"]);
    refused(&["run", "--ci-target", "200%"], &["200%"]);
    refused(&["run", "-p", "range"], &["--param range", "NAME=VALUE"]);
    refused(&["run", "cpu.primes", "-p", "blocks=4"], &["'blocks'"]);
    refused(&["frobnicate"], &["frobnicate"]);
    refused(&["run", "os.stat", "--io-dir", "/no/such/dir"], &["--io-dir /no/such/dir", "not a directory"]);
    refused(
        &["run", "cpu.primes", "--inject-fault", "corrupt-echo"],
        &["--inject-fault corrupt-echo", "no selected workload has that fault"],
    );
}

/// `--timeout 0`, a settle of years, budgets of nothing: each duration flag of
/// `run` is refused with its accepted range before anything runs (a run
/// directory is given so that an accepted value would show as a run).
#[test]
fn absurd_durations_are_refused_with_the_accepted_range() {
    let sb = Sandbox::new();
    let dir = sb.run_dir();
    let run = |flag: &str, value: &str, range: &str| {
        let args = ["run", "selftest.tiny", "--include-selftest", "--run-dir", dir.to_str().unwrap(), flag, value];
        refused(&args, &[flag, &format!("'{value}'"), range]);
        assert!(!dir.exists(), "{flag} {value} started a run");
    };
    for v in ["0", "0s", "1ns", "999ms", "25h", "1e20"] {
        run("--timeout", v, "between 1s and 24h");
    }
    for v in ["9999999h", "61m", "1e20"] {
        run("--settle", v, "between 0s and 1h");
    }
    for v in ["0", "9ms", "25h"] {
        run("--time-budget", v, "between 10ms and 24h");
    }
    for v in ["8d", "9999999h"] {
        run("--run-budget", v, "between 0s and 7d");
    }
    let args = ["run", "selftest.tiny", "--include-selftest", "--run-dir", dir.to_str().unwrap()];
    refused(&[&args[..], &["--settle", "2s", "--timeout", "1s"]].concat(), &["--settle 2s", "shorter than the timeout", "--timeout"]);
    assert!(!dir.exists());
}

#[test]
fn unknown_workloads_list_what_exists() {
    refused(&["run", "cpu.prime"], &["unknown workload 'cpu.prime'", "cpu.primes", "cpu.checksum"]);
    refused(&["run", "cpu.primse"], &["unknown workload 'cpu.primse': did you mean cpu.primes? (known: cpu, "]);
    refused(&["run", "gpu.*"], &["unknown workload 'gpu.*'"]);
}

#[test]
fn unreadable_run_directories_are_refused() {
    let sb = Sandbox::new();
    let missing = sb.tmp.path().join("nope");
    refused(&["report", missing.to_str().unwrap()], &["not a proofbench run directory"]);
    // A directory written by a newer proofbench.
    let d = sb.tmp.path().join("newer");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("run.json"), r#"{"schema": "proofbench.run/7"}"#).unwrap();
    refused(&["report", d.to_str().unwrap()], &["proofbench.run/7", "newer"]);
    // A corrupt record names its line.
    let out = sb.run(&["selftest.wrong", "--runs", "1", "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    let rows = sb.run_dir().join("rows.jsonl");
    let good = std::fs::read_to_string(&rows).unwrap();
    std::fs::write(&rows, format!("{{\"schema\": \"proofbench.row/1\"}}\n{good}")).unwrap();
    refused(&["report", sb.run_dir().to_str().unwrap()], &["rows.jsonl line 1", "malformed"]);
}

#[test]
fn the_worker_refuses_input_that_is_not_a_cell() {
    let out = Command::new(bin()).arg("worker").stdin(std::process::Stdio::null()).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("not JSON"), "{}", text(&out.stderr));
}

#[test]
fn bad_variants_name_the_flag() {
    refused(
        &["run", "cpu.primes", "--variant", "a=frobnicate=1", "--variant", "b="],
        &["--variant a=frobnicate=1", "unknown variant key 'frobnicate'"],
    );
    refused(&["run", "cpu.primes", "--variant", "a="], &["--variant a=", "two or more variants"]);
    refused(&["run", "cpu.primes", "--variant", "a=", "--variant", "a=env=X=1"], &["--variant a=env=X=1", "the name 'a' is given twice"]);
    refused(&["run", "cpu.primes", "--variant", "a=", "--variant", "b=", "--base", "c"], &["--base c", "no variant has that name"]);
    refused(&["run", "cpu.primes", "--base", "c"], &["--base c", "two or more --variant"]);
    refused(&["run", "cpu.primes", "--fail-on-regression"], &["--fail-on-regression", "--variant"]);
    refused(
        &["run", "cpu.primes", "--variant", "a=param=blocks=1", "--variant", "b="],
        &["--variant a=param=blocks=1", "no selected workload has a parameter 'blocks'"],
    );
    refused(
        &["run", "alloc.random-mixed", "--variant", "a=allocator=system", "--variant", "b="],
        &["--variant b", "do not line up", "set by every variant"],
    );
    refused(&["run", "cpu.primes", "--variant", "a=", "--variant", "b=exe=/no/such/pb"], &["--variant b=exe=/no/such/pb", "is not a file"]);
    refused(
        &["run", "cpu.primes", "--variant", "a=", "--variant", "b=exe=/bin/echo"],
        &["--variant b=exe=/bin/echo", "not a proofbench of this version", "proofbench 0.1.0"],
    );
    refused(
        &["run", "cpu.primes", "--variant", "a=", "--variant", "b=launcher=/no/such/wrapper"],
        &["--variant b=launcher=/no/such/wrapper", "cannot start"],
    );
    refused(&["noise", "cpu.primes", "--variant", "a="], &["--variant a=", "noise runs two identical variants"]);
    // --html FILE: noise's page, refused for run and, before it measures, into a directory that does not exist.
    refused(&["run", "cpu.primes", "--html", "x.html"], &["--html x.html: for noise", "report DIR --html FILE"]);
    refused(&["noise", "cpu.primes", "--html", "/no/such/dir/x.html"], &["--html /no/such/dir/x.html"]);
}

#[test]
fn an_exe_variant_of_another_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("pb-old");
    std::fs::write(&fake, "#!/bin/sh\necho proofbench 0.0.1\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let spec = format!("old=exe={}", fake.display());
    refused(
        &["run", "cpu.primes", "--variant", "new=", "--variant", &spec],
        &[&format!("--variant {spec}"), "it printed 'proofbench 0.0.1'"],
    );
}

#[test]
fn compare_of_one_run_needs_variants() {
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.tiny", "--include-selftest", "--trials", "2", "--runs", "2", "--no-history"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    refused(&["compare", sb.run_dir().to_str().unwrap()], &["has no variants", "compare BASE CANDIDATE"]);
}
