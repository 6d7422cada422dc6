//! `os.pipe-lifecycle`: one operation is `pipe2(O_CLOEXEC)` followed by
//! `close` of both ends: the create-and-destroy cost of a kernel IPC channel
//! (rvOS `chan create+close`).

use std::io;

use serde_json::json;

use super::fs_common::skip_or_fail;
use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};

pub struct PipeLifecycle;

/// The fault: the last iteration of a sample does not close its read end.
pub const FAULT: &str = "leak-fd";
/// The fault: the timed loop never calls pipe2 (nor close).
pub const SKIP_PIPE2: &str = "skip-pipe2";

/// Pairs whose numbers the next pair did not reuse, kept per sample to be
/// probed after the window (a sample normally has none: `close` frees the
/// two lowest descriptors and the next `pipe2` takes them again).
const CHANGED_PAIRS_KEPT: usize = 64;

impl Workload for PipeLifecycle {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.pipe-lifecycle",
            group: "os",
            summary: "Create a pipe with pipe2(O_CLOEXEC) and close both ends",
            measures: "the lifecycle of a kernel IPC channel: allocating two file descriptors, the pipe inode and its \
                       buffer bookkeeping, then releasing them",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` pipe2(O_CLOEXEC) calls, each followed by close() of the write end and of the read \
                           end, with a per-iteration count of the calls that returned two distinct descriptors >= 0, and a \
                           comparison of the pair with the previous one (a pair whose numbers the next did not reuse is kept, \
                           at most 64 per sample); probing the kept pairs and the last one afterwards is outside",
            total_window: None,
            verifier: "every pipe2 succeeded: as many pairs of two distinct descriptors >= 0 as iterations; and every pair \
                       was really closed: either the next pipe2 returned the same numbers (the kernel hands out the lowest \
                       free descriptors, so they were free again), or, after the loop, fcntl(F_GETFD) rejects both with \
                       EBADF (the last pair always, and every pair the next one did not reuse). Only descriptors pipe2 \
                       returned are probed: a sample that opened none fails",
            batched: true,
            params: vec![],
            faults: &[FAULT, SKIP_PIPE2],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, _cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        if let Err(e) = create_and_close() {
            return skip_or_fail("pipe2", e);
        }
        Ok(Prepared::ready(PipeInstance::new(cx.fault_is(FAULT), cx.fault_is(SKIP_PIPE2))))
    }
}

/// One pipe created and closed outside any window: the probe of prepare.
fn create_and_close() -> io::Result<[libc::c_int; 2]> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a valid out-array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for fd in fds {
        // SAFETY: closing the descriptors pipe2 just returned to us.
        unsafe { libc::close(fd) };
    }
    Ok(fds)
}

/// What `fcntl(F_GETFD)` says about a descriptor pipe2 returned and the
/// loop closed.
fn probe(fd: libc::c_int) -> Result<(), String> {
    // SAFETY: F_GETFD only reads the descriptor's flags; an invalid one gives EBADF.
    let rc = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if rc != -1 {
        return Err(format!("fd {fd} is still open"));
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EBADF) { Ok(()) } else { Err(format!("fd {fd}: {err} (not EBADF)")) }
}

/// What one sample saw.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    /// pipe2 calls that returned two distinct descriptors >= 0.
    created: u64,
    /// The last pair pipe2 returned, if any.
    fds: Option<[libc::c_int; 2]>,
    /// Pairs whose numbers the next pair did not reuse (all of them, or the
    /// first [`CHANGED_PAIRS_KEPT`]: `changed` says how many there were).
    changed: u64,
    /// How many of them were kept and probed.
    kept: usize,
    /// What the probes after the loop (of the kept pairs and the last one)
    /// found wrong.
    probe_errors: Vec<String>,
}

struct PipeInstance {
    leak: bool,
    skip_pipe2: bool,
    /// The pairs the next one did not reuse, kept by the timed loop (its
    /// capacity is reserved at prepare: the loop never allocates).
    kept: Vec<[libc::c_int; 2]>,
}

impl PipeInstance {
    fn new(leak: bool, skip_pipe2: bool) -> PipeInstance {
        PipeInstance { leak, skip_pipe2, kept: Vec::with_capacity(CHANGED_PAIRS_KEPT) }
    }
}

impl Instance for PipeInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let mut fds: [libc::c_int; 2] = [-1; 2];
        let mut prev: Option<[libc::c_int; 2]> = None;
        let (mut created, mut changed) = (0u64, 0u64);
        let leak_at = if self.leak { iters.checked_sub(1) } else { None };
        let body = !self.skip_pipe2;
        let kept = &mut self.kept;
        kept.clear();
        timer.start();
        for i in 0..iters {
            if !body {
                continue;
            }
            // SAFETY: `fds` is a valid out-array of two ints.
            let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
            if rc != 0 || fds[0] < 0 || fds[1] < 0 || fds[0] == fds[1] {
                continue;
            }
            created += 1;
            if let Some(p) = prev
                && p != fds
            {
                changed += 1;
                if kept.len() < kept.capacity() {
                    kept.push(p);
                }
            }
            prev = Some(fds);
            // SAFETY: closing the descriptors pipe2 just returned to us.
            unsafe { libc::close(fds[1]) };
            if leak_at != Some(i) {
                // SAFETY: as above.
                unsafe { libc::close(fds[0]) };
            }
        }
        timer.stop();
        let probe_errors: Vec<String> = self.kept.iter().chain(prev.as_ref()).flatten().filter_map(|&fd| probe(fd).err()).collect();
        if let (Some(_), Some(p)) = (leak_at, prev) {
            // SAFETY: the read end the fault left open; nothing else holds it.
            unsafe { libc::close(p[0]) };
        }
        Ok((Work::ops(iters), Outcome { iters, created, fds: prev, changed, kept: self.kept.len(), probe_errors }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = "every pipe2 gave two distinct fds >= 0 (one pair per iteration); every pair closed: its numbers \
                        reused by the next pair, or rejected by fcntl with EBADF after the loop"
            .to_string();
        let last = l.fds.map_or_else(|| "no pair to probe".to_string(), |p| format!("last pair {p:?}"));
        let mut observed = format!(
            "{} of {} pipe2 calls gave a pair; {last}; {} pairs not reused by the next ({} kept and probed)",
            l.created, l.iters, l.changed, l.kept
        );
        for e in &l.probe_errors {
            observed.push_str(&format!("; {e}"));
        }
        let passed = l.created == l.iters && l.fds.is_some() && l.probe_errors.is_empty();
        Check { passed, expected, observed }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "flags": "O_CLOEXEC",
            "last_sample_fds": last.and_then(|l| l.fds),
            "last_sample_pairs_created": last.map(|l| l.created),
            "last_sample_pairs_not_reused": last.map(|l| l.changed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last(created: u64, fds: Option<[libc::c_int; 2]>, probe_errors: &[&str]) -> Outcome {
        Outcome { iters: 4, created, fds, changed: 0, kept: 0, probe_errors: probe_errors.iter().map(|e| e.to_string()).collect() }
    }

    #[test]
    fn pipes_are_created_and_really_closed() {
        let mut inst = PipeInstance::new(false, false);
        for iters in [1, 500] {
            let (_, l) = inst.sample(iters, &mut Timer::new()).unwrap();
            // Other test threads may take a closed descriptor number before the
            // probe (the worker is single-threaded; the binary tests check it there).
            assert_eq!(l.created, iters);
            assert!(l.fds.unwrap().iter().all(|&fd| fd >= 0));
        }
        assert!(create_and_close().unwrap().iter().all(|&fd| fd >= 0));
    }

    #[test]
    fn the_verifier_fails_on_a_leaked_descriptor_a_failed_call_or_no_call() {
        let mut inst = PipeInstance::new(true, false);
        let (_, out) = inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.contains("is still open"), "{}", v.observed);
        let mut skipped = PipeInstance::new(false, true);
        let (_, out) = skipped.sample(5, &mut Timer::new()).unwrap();
        let v = skipped.verify(&out);
        assert!(!v.passed);
        assert_eq!(v.observed, "0 of 5 pipe2 calls gave a pair; no pair to probe; 0 pairs not reused by the next (0 kept and probed)");
        assert!(!inst.verify(&last(3, Some([3, 4]), &[])).passed);
        assert!(!inst.verify(&last(4, Some([3, 4]), &["fd 4: Bad"])).passed);
        let v = inst.verify(&last(4, Some([3, 4]), &[]));
        assert!(v.passed, "{v:?}");
    }

    #[test]
    fn probes_tell_open_from_closed() {
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        assert!(probe(fd).unwrap_err().contains("still open"));
        assert!(probe(-1).is_ok());
    }
}
