//! `os.process-spawn`: one operation starts a tiny child process (this binary
//! in its no-op mode, `proofbench noop TOKEN`), reads what it prints and waits
//! for it to exit (the rvOS "process spawn" benchmark).

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::skip_or_fail;

pub struct ProcessSpawn;

impl Workload for ProcessSpawn {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.process-spawn",
            group: "os",
            summary: "Start a tiny child process, read its output, wait for it",
            measures: "the cost of a process's whole life: creating it (posix_spawn, or fork + exec), loading and \
                       dynamically linking the proofbench binary, its runtime start-up and argument parsing, one line \
                       written to a pipe, exit, and the parent's wait",
            unit: Unit::NsPerOp,
            timed_region: "per operation: std::process::Command spawn of this binary as `proofbench noop TOKEN` (stdin \
                           /dev/null, stdout a pipe, stderr inherited), reading the pipe to end-of-file, waiting for the \
                           exit, and comparing the output with TOKEN (a mismatch counter); the tokens are made before the \
                           window",
            total_window: None,
            verifier: "every child exited with status 0 and printed exactly the fresh token it was given (a counter unique \
                       to each operation): 0 mismatched children",
            batched: true,
            params: vec![],
            faults: &["wrong-token"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let exe = std::env::current_exe().context("locating the proofbench binary")?;
        let mut inst = ProcessSpawnInstance::new(exe, vec!["noop".into()], cell.seed, cx.fault_is("wrong-token"));
        // One child now: a sandbox that forbids exec skips the row here.
        let mut t = Timer::new();
        if let Err(e) = inst.sample(1, &mut t) {
            return match e.downcast::<std::io::Error>() {
                Ok(io) => skip_or_fail("spawning a child process", io),
                Err(e) => Err(e.context("a trial child process")),
            };
        }
        Ok(Prepared::ready(inst))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    /// Children that exited badly or printed something else (the first described).
    mismatches: Mismatches<String>,
}

struct ProcessSpawnInstance {
    exe: PathBuf,
    /// Arguments before the token.
    prefix: Vec<OsString>,
    salt: u64,
    wrong_token: bool,
    /// Operations so far: numbers the tokens.
    next: u64,
}

impl ProcessSpawnInstance {
    fn new(exe: PathBuf, prefix: Vec<OsString>, salt: u64, wrong_token: bool) -> Self {
        ProcessSpawnInstance { exe, prefix, salt, wrong_token, next: 0 }
    }
}

impl Instance for ProcessSpawnInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let n = iters as usize;
        let expected: Vec<String> = (0..iters).map(|i| format!("t{:x}-{}", self.salt & 0xFFFF, self.next + i)).collect();
        // The fault gives the middle child another token than the one expected.
        let given: Vec<String> =
            (0..n).map(|i| if self.wrong_token && i == n / 2 { format!("{}x", expected[i]) } else { expected[i].clone() }).collect();
        let mut out = Vec::with_capacity(64);
        let mut mismatches = Mismatches::new();
        timer.start();
        for i in 0..n {
            let mut child = Command::new(&self.exe)
                .args(&self.prefix)
                .arg(&given[i])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| anyhow::Error::new(e).context(format!("spawning {}", self.exe.display())))?;
            out.clear();
            let read = child.stdout.take().map(|mut s| s.read_to_end(&mut out));
            let status = child.wait().context("waiting for the child")?;
            read.transpose().context("reading the child's output")?;
            let line = out.strip_suffix(b"\n").unwrap_or(&out);
            if !status.success() || line != expected[i].as_bytes() {
                mismatches.record(|| (i, status, out.clone()));
            }
        }
        timer.stop();
        self.next += iters;
        let mismatches = mismatches.map(|(i, status, out)| {
            format!("child {i} ({status}) printed {:?}, expected {:?}", String::from_utf8_lossy(&out), expected[i])
        });
        Ok((Work::ops(iters), Outcome { iters, mismatches }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("{} children exited 0 and printed their token, 0 mismatched", l.iters);
        let m = &l.mismatches;
        if m.is_empty() {
            return Check { passed: true, observed: format!("{} children, 0 mismatched", l.iters), expected };
        }
        let observed = format!("{} children, {} mismatched; first: {}", l.iters, m.count, m.first.as_deref().unwrap_or("?"));
        Check { passed: false, expected, observed }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        let mut argv: Vec<String> = vec![self.exe.display().to_string()];
        argv.extend(self.prefix.iter().map(|a| a.to_string_lossy().into_owned()));
        argv.push("TOKEN".into());
        json!({
            "child_argv": argv,
            "child_exe_bytes": std::fs::metadata(&self.exe).ok().map(|m| m.len()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `echo TOKEN` behaves as `proofbench noop TOKEN` (the unit-test binary
    /// has no `noop` subcommand).
    fn instance(wrong_token: bool) -> ProcessSpawnInstance {
        ProcessSpawnInstance::new(PathBuf::from("/bin/echo"), vec![], 7, wrong_token)
    }

    #[test]
    fn every_child_prints_its_token_and_exits_0() {
        let mut inst = instance(false);
        for n in [1, 3] {
            let (w, out) = inst.sample(n, &mut Timer::new()).unwrap();
            assert_eq!(w, Work::ops(n));
            let v = inst.verify(&out);
            assert!(v.passed, "{v:?}");
        }
        assert_eq!(inst.next, 4);
        assert_eq!(inst.details(None)["child_argv"], json!(["/bin/echo", "TOKEN"]));
    }

    #[test]
    fn a_wrong_token_fails_the_verifier() {
        let mut inst = instance(true);
        let (_, out) = inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert_eq!(v.observed, "3 children, 1 mismatched; first: child 1 (exit status: 0) printed \"t7-1x\\n\", expected \"t7-1\"");
    }

    #[test]
    fn a_failing_child_fails_the_verifier() {
        let mut inst = ProcessSpawnInstance::new(PathBuf::from("/bin/false"), vec![], 7, false);
        let (_, out) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.contains("exit status: 1"), "{}", v.observed);
    }
}
