//! `os.pipe-lifecycle`: one operation is `pipe2(O_CLOEXEC)` followed by
//! `close` of both ends: the create-and-destroy cost of a kernel IPC channel
//! (rvOS `chan create+close`).

use std::io;

use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{Instance, Prepared, TableShape, Timer, Unit, Verdict, Work, Workload, WorkloadSpec};

pub struct PipeLifecycle;

/// The fault: the last iteration of a sample does not close its read end.
pub const FAULT: &str = "leak-fd";

impl Workload for PipeLifecycle {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.pipe-lifecycle",
            group: "os",
            summary: "Create a pipe with pipe2(O_CLOEXEC) and close both ends",
            measures: "the lifecycle of a kernel IPC channel: allocating two file descriptors, the pipe inode and its \
                       buffer bookkeeping, then releasing them (rvOS `chan create+close`)",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` pipe2(O_CLOEXEC) calls, each followed by close() of the write end and of the read \
                           end, with a per-iteration check that the call succeeded and both descriptors are >= 0 (a counter); \
                           probing the last pair's descriptors afterwards is outside",
            total_window: None,
            verifier: "every pipe2 succeeded with two valid descriptors, and after the loop fcntl(F_GETFD) rejects both \
                       descriptors of the last pair with EBADF (they were really closed)",
            batched: true,
            params: vec![],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell) -> anyhow::Result<Prepared> {
        match create_and_close() {
            Ok(_) => {}
            Err(e) if refused(&e) => return Ok(Prepared::Skip(format!("pipe2 is not permitted here: {e}"))),
            Err(e) => return Err(anyhow::Error::new(e).context("creating a pipe at prepare")),
        }
        Ok(Prepared::Ready(Box::new(PipeInstance { leak: cell.fault_is(FAULT), last: None })))
    }
}

fn refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOSYS | libc::EACCES))
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

/// What `fcntl(F_GETFD)` says about a descriptor that should be closed.
fn probe(fd: libc::c_int) -> Result<(), String> {
    // SAFETY: F_GETFD only reads the descriptor's flags; an invalid one gives EBADF.
    let rc = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if rc != -1 {
        return Err(format!("fd {fd} is still open"));
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EBADF) { Ok(()) } else { Err(format!("fd {fd}: {err} (not EBADF)")) }
}

/// What the last sample saw.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Last {
    iters: u64,
    /// pipe2 calls that failed or returned a negative descriptor.
    failures: u64,
    /// The last pair's descriptors.
    fds: [libc::c_int; 2],
    /// The probe of each of them after the loop.
    probes: [Result<(), String>; 2],
}

struct PipeInstance {
    leak: bool,
    last: Option<Last>,
}

impl Instance for PipeInstance {
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        let mut fds: [libc::c_int; 2] = [-1; 2];
        let mut failures = 0u64;
        let leak_at = if self.leak { iters.checked_sub(1) } else { None };
        timer.start();
        for i in 0..iters {
            // SAFETY: `fds` is a valid out-array of two ints.
            let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
            if rc != 0 || fds[0] < 0 || fds[1] < 0 {
                failures += 1;
                continue;
            }
            // SAFETY: closing the descriptors pipe2 just returned to us.
            unsafe { libc::close(fds[1]) };
            if leak_at != Some(i) {
                // SAFETY: as above.
                unsafe { libc::close(fds[0]) };
            }
        }
        timer.stop();
        let probes = [probe(fds[0]), probe(fds[1])];
        if leak_at.is_some() && fds[0] >= 0 {
            // SAFETY: the read end the fault left open; nothing else holds it.
            unsafe { libc::close(fds[0]) };
        }
        self.last = Some(Last { iters, failures, fds, probes });
        Ok(Work::ops(iters))
    }

    fn verify(&mut self) -> Verdict {
        let expected = "every pipe2 gave two valid fds; both fds of the last pair are closed (fcntl: EBADF)".to_string();
        let Some(l) = &self.last else { return Verdict { passed: false, expected, observed: "no sample ran".into() } };
        let bad: Vec<&str> = l.probes.iter().filter_map(|p| p.as_ref().err().map(String::as_str)).collect();
        let passed = l.failures == 0 && bad.is_empty();
        let closed = if bad.is_empty() { "both closed".to_string() } else { bad.join("; ") };
        let observed = format!("{} of {} pipe2 calls failed; last pair {:?}: {closed}", l.failures, l.iters, l.fds);
        Verdict { passed, expected, observed }
    }

    fn details(&self) -> serde_json::Value {
        json!({
            "flags": "O_CLOEXEC",
            "last_sample_fds": self.last.as_ref().map(|l| l.fds),
            "last_sample_failures": self.last.as_ref().map(|l| l.failures),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_are_created_and_really_closed() {
        let mut inst = PipeInstance { leak: false, last: None };
        assert!(!inst.verify().passed, "no sample ran");
        for iters in [1, 500] {
            inst.sample(iters, &mut Timer::new()).unwrap();
            // Other test threads may reuse a closed descriptor number before the
            // probe (the worker is single-threaded; the binary tests check it there).
            assert_eq!(inst.last.as_ref().unwrap().failures, 0);
        }
        assert!(create_and_close().unwrap().iter().all(|&fd| fd >= 0));
    }

    #[test]
    fn the_verifier_fails_on_a_leaked_descriptor_or_a_failed_call() {
        let mut inst = PipeInstance { leak: true, last: None };
        inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.contains("is still open"), "{}", v.observed);
        inst.last = Some(Last { iters: 4, failures: 1, fds: [-1, -1], probes: [Ok(()), Ok(())] });
        assert!(!inst.verify().passed);
        inst.last = Some(Last { iters: 4, failures: 0, fds: [3, 4], probes: [Ok(()), Err("fd 4: Bad".into())] });
        assert!(!inst.verify().passed);
        inst.last = Some(Last { iters: 4, failures: 0, fds: [3, 4], probes: [Ok(()), Ok(())] });
        assert!(inst.verify().passed);
    }

    #[test]
    fn probes_tell_open_from_closed() {
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        assert!(probe(fd).unwrap_err().contains("still open"));
        assert!(probe(-1).is_ok());
    }
}
