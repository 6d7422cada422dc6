//! `list`, `env` and the generated workload docs.

use std::process::Command;

use serde_json::Value;

use crate::common::{bin, text};

fn stdout_of(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn list_shows_units_regions_verifiers_and_parameters_but_not_selftests() {
    let s = stdout_of(&["list"]);
    for needle in
        ["cpu.primes  [ns, lower-is-better]", "timed region:", "verifier:", "param range: quick 1000000 | full 10000000 | seed 3000000"]
    {
        assert!(s.contains(needle), "'{needle}' not in:\n{s}");
    }
    assert!(!s.contains("selftest"));
    assert!(stdout_of(&["list", "--include-selftest"]).contains("selftest.crash"));
    let json: Value = serde_json::from_str(&stdout_of(&["list", "--json"])).unwrap();
    let ids: Vec<&str> = json.as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(&ids[..2], ["cpu.primes", "cpu.checksum"]);
    assert!(ids.iter().all(|id| !id.starts_with("selftest.")), "{ids:?}");
}

#[test]
fn list_takes_a_selection_as_run_does_and_a_near_miss_is_told_what_was_meant() {
    let json: Value = serde_json::from_str(&stdout_of(&["list", "cpu", "os.sys*", "--json"])).unwrap();
    let ids: Vec<&str> = json.as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert!(ids.len() >= 3 && ids.iter().all(|id| id.starts_with("cpu.") || *id == "os.syscall"), "{ids:?}");
    assert!(ids.contains(&"cpu.primes") && ids.contains(&"os.syscall"), "{ids:?}");
    let one = stdout_of(&["list", "os.syscall"]);
    assert!(one.contains("os.syscall  [") && !one.contains("cpu.primes"), "{one}");
    let out = Command::new(bin()).args(["list", "cpu.primse"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("proofbench: error: unknown workload 'cpu.primse': did you mean cpu.primes?") && err.lines().count() == 1,
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn docs_workloads_md_is_the_registry() {
    let generated = stdout_of(&["list", "--markdown"]);
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/WORKLOADS.md")).unwrap();
    assert!(generated == committed, "docs/WORKLOADS.md is out of date: run `cargo run -- list --markdown > docs/WORKLOADS.md`");
}

#[test]
fn env_prints_the_machine_record() {
    let s = stdout_of(&["env"]);
    assert!(s.lines().any(|l| l.starts_with("CPU ")) && s.contains("logical CPUs"), "{s}");
    // Long values (the CPU flags) wrap within 120 columns, at 80 within 80.
    assert!(s.lines().all(|l| l.chars().count() <= 100), "within the default 100 columns:\n{s}");
    let out = std::process::Command::new(crate::common::bin()).arg("env").env("COLUMNS", "80").output().unwrap();
    assert!(text(&out.stdout).lines().all(|l| l.chars().count() <= 80), "{}", text(&out.stdout));
    let out = std::process::Command::new(crate::common::bin()).arg("env").env("COLUMNS", "300").output().unwrap();
    assert!(text(&out.stdout).lines().all(|l| l.chars().count() <= 120), "{}", text(&out.stdout));
    let json: Value = serde_json::from_str(&stdout_of(&["env", "--json"])).unwrap();
    assert_eq!(json["schema"], "proofbench.envelope/1");
    let logical = json["cpu"]["logical_cpus"].as_u64().unwrap();
    assert_eq!(logical as usize, std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0).max(logical as usize));
    assert!(json["kernel"]["release"].is_string());
}

#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    use std::io::Read;
    let mut child = Command::new(bin())
        .args(["list", "--markdown"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}
