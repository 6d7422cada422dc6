//! `os.yield`: one operation is one `sched_yield()` of the measuring thread.
//! Alone (`mode=single`) it is a system call that finds nothing else to run;
//! with a second thread yielding on the same CPU (`mode=pair`,
//! `placement=same-cpu`) every yield hands the CPU to the other thread and
//! back, so one operation includes a switch to the peer; on two CPUs
//! (`cross-cpu`) both threads yield side by side.

use std::hint::spin_loop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use anyhow::Context;
use serde_json::json;

use super::{cpu_pair, placement_param};
use crate::measure::{affinity, clock};
use crate::model::{Cell, Profile};
use crate::workloads::contract::{Instance, ParamSpec, Prepared, TableShape, Timer, Unit, Verdict, Work, Workload, WorkloadSpec};

pub struct SchedYield;

/// The fault: the peer yields but does not publish its count.
pub const FAULT: &str = "lose-progress";

/// How long a pair sample waits, outside its window, to see the woken peer
/// running.
const PEER_START_WAIT_NS: u64 = 100_000_000;

impl Workload for SchedYield {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.yield",
            group: "os",
            summary: "sched_yield(): alone, or with a second thread yielding on the same or another CPU",
            measures: "the scheduler's yield path: a bare system call when nothing else is runnable (single), a switch to \
                       the other thread and back when two threads share a CPU (pair, same-cpu) (rvOS `yield`)",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` sched_yield() calls by the measuring thread, each return value compared with 0 \
                           (a counter); in pair mode the peer thread yields in its own loop meanwhile. Waking the peer before the \
                           window and waiting to see it running (spinning on another CPU, yielding on a shared one), and parking it after the \
                           window, are outside",
            total_window: None,
            verifier: "every sched_yield() returned 0 (both threads); in pair mode the peer's yield count advanced between \
                       waking it (before the window) and the window's end. The peer's yields inside the window are recorded \
                       (on one CPU about one per yield of the measuring thread when yield hands the CPU over)",
            batched: true,
            params: vec![
                ParamSpec::choice(
                    "mode",
                    "single: one thread yields; pair: a second thread yields too (placement applies to pair only)",
                    &["single", "pair"],
                    ["single"; 3],
                )
                .with_values(Profile::Quick, vec!["single".into(), "pair".into()])
                .with_values(Profile::Full, vec!["single".into(), "pair".into()])
                .with_values(Profile::Seed, vec!["single".into(), "pair".into()]),
                placement_param(),
            ],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell) -> anyhow::Result<Prepared> {
        let pair_mode = cell.str("mode")? == "pair";
        let placement = cell.str("placement")?;
        if !pair_mode && placement != "same-cpu" {
            return Ok(Prepared::Skip("single-thread yield has one end; placement does not apply".into()));
        }
        let pair = match cpu_pair(cell)? {
            Ok(p) => p,
            Err(reason) => return Ok(Prepared::Skip(reason)),
        };
        affinity::pin_current_thread(pair.a).with_context(|| format!("pinning the measuring thread to CPU {}", pair.a))?;
        // SAFETY: sched_yield takes no arguments.
        if unsafe { libc::sched_yield() } != 0 {
            let err = std::io::Error::last_os_error();
            return Ok(Prepared::Skip(format!("sched_yield is not permitted here: {err}")));
        }
        let peer = if pair_mode { Some(Peer::spawn(Some(pair.b), cell.fault_is(FAULT))?) } else { None };
        Ok(Prepared::Ready(Box::new(YieldInstance {
            peer,
            cpus: (pair.a, pair_mode.then_some(pair.b)),
            note: pair.note,
            cross: placement == "cross-cpu",
            last: None,
        })))
    }
}

/// State shared with the peer thread.
#[derive(Default)]
struct Shared {
    /// The peer yields while this is set, and parks otherwise.
    running: AtomicBool,
    stop: AtomicBool,
    /// Yields the peer has done (not published under the fault).
    yields: AtomicU64,
    /// Peer yields that returned non-zero.
    failures: AtomicU64,
}

/// The second thread of pair mode.
struct Peer {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Peer {
    fn spawn(cpu: Option<usize>, lose_progress: bool) -> anyhow::Result<Peer> {
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("yield-peer".into())
            .spawn(move || {
                let pinned = cpu.map_or(Ok(()), affinity::pin_current_thread);
                let ok = pinned.is_ok();
                let _ = ready_tx.send(pinned);
                if !ok {
                    return;
                }
                while !s.stop.load(Ordering::Acquire) {
                    if !s.running.load(Ordering::Acquire) {
                        std::thread::park();
                        continue;
                    }
                    // SAFETY: sched_yield takes no arguments.
                    if unsafe { libc::sched_yield() } != 0 {
                        s.failures.fetch_add(1, Ordering::Relaxed);
                    }
                    if !lose_progress {
                        s.yields.fetch_add(1, Ordering::Release);
                    }
                }
            })
            .context("spawning the peer thread")?;
        let peer = Peer { shared, handle: Some(handle) };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(peer),
            Ok(Err(e)) => anyhow::bail!("the peer thread cannot pin itself to CPU {cpu:?}: {e}"),
            Err(_) => anyhow::bail!("the peer thread ended before it was ready"),
        }
    }

    fn wake(&self) {
        self.shared.running.store(true, Ordering::Release);
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
    }

    fn park(&self) {
        self.shared.running.store(false, Ordering::Release);
    }

    fn yields(&self) -> u64 {
        self.shared.yields.load(Ordering::Acquire)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The peer's yields in a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PeerProgress {
    /// From waking it (before the window) to the end of the window.
    since_wake: u64,
    /// From just before the window to just after it.
    in_window: u64,
}

/// What the last sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Last {
    yields: u64,
    failures: u64,
    /// The peer's progress (pair mode).
    peer: Option<PeerProgress>,
    peer_failures: u64,
}

struct YieldInstance {
    peer: Option<Peer>,
    /// The measuring thread's CPU and, in pair mode, the peer's.
    cpus: (usize, Option<usize>),
    note: String,
    cross: bool,
    last: Option<Last>,
}

impl Instance for YieldInstance {
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        // The peer's count when it was woken, and just before the window.
        let (mut woken, mut before) = (0, 0);
        if let Some(p) = &self.peer {
            woken = p.yields();
            p.wake();
            // Wait (bounded) to see the peer running: spinning when it has a CPU
            // of its own, yielding to it when it shares ours.
            let t0 = clock::now_ns();
            while p.yields() == woken && clock::now_ns() - t0 < PEER_START_WAIT_NS {
                if self.cross {
                    spin_loop();
                } else {
                    // SAFETY: sched_yield takes no arguments.
                    unsafe { libc::sched_yield() };
                }
            }
            before = p.yields();
        }
        let mut failures = 0u64;
        timer.start();
        for _ in 0..iters {
            // SAFETY: sched_yield takes no arguments.
            failures += u64::from(unsafe { libc::sched_yield() } != 0);
        }
        timer.stop();
        let peer = self.peer.as_ref().map(|p| {
            let after = p.yields();
            p.park();
            PeerProgress { since_wake: after - woken, in_window: after - before }
        });
        let peer_failures = self.peer.as_ref().map_or(0, |p| p.shared.failures.load(Ordering::Relaxed));
        self.last = Some(Last { yields: iters, failures, peer, peer_failures });
        Ok(Work::ops(iters))
    }

    fn verify(&mut self) -> Verdict {
        let expected = if self.peer.is_some() {
            "every sched_yield returns 0 (both threads) and the peer yields at least once between being woken and the end of \
             the window"
                .to_string()
        } else {
            "every sched_yield returns 0".to_string()
        };
        let Some(l) = self.last else { return Verdict { passed: false, expected, observed: "no sample ran".into() } };
        let progressed = l.peer.is_none_or(|p| p.since_wake > 0);
        let passed = l.failures == 0 && l.peer_failures == 0 && progressed;
        let mut observed = format!("{} of {} yields returned non-zero", l.failures, l.yields);
        if let Some(p) = l.peer {
            observed.push_str(&format!(
                "; peer: {} failed yields, {} yields since woken ({} inside the window)",
                l.peer_failures, p.since_wake, p.in_window
            ));
        }
        Verdict { passed, expected, observed }
    }

    fn details(&self) -> serde_json::Value {
        json!({
            "mode": if self.peer.is_some() { "pair" } else { "single" },
            "cpu_a": self.cpus.0,
            "cpu_b": self.cpus.1,
            "placement_note": self.note,
            "last_sample_yields": self.last.map(|l| l.yields),
            "last_sample_peer_yields_in_window": self.last.and_then(|l| l.peer.map(|p| p.in_window)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(pair: bool, lose_progress: bool, cross: bool) -> YieldInstance {
        let peer = pair.then(|| Peer::spawn(None, lose_progress).unwrap());
        YieldInstance { peer, cpus: (0, pair.then_some(0)), note: String::new(), cross, last: None }
    }

    #[test]
    fn single_and_pair_samples_pass() {
        for (pair, cross) in [(false, false), (true, false), (true, true)] {
            let mut inst = instance(pair, false, cross);
            assert!(!inst.verify().passed, "no sample ran");
            for iters in [1, 1000] {
                assert_eq!(inst.sample(iters, &mut Timer::new()).unwrap(), Work::ops(iters));
                let v = inst.verify();
                assert!(v.passed, "pair {pair}: {v:?}");
            }
        }
    }

    #[test]
    fn the_verifier_fails_when_the_peer_makes_no_progress_or_a_yield_fails() {
        let mut inst = instance(true, true, false);
        inst.sample(100, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.ends_with("0 yields since woken (0 inside the window)"), "{}", v.observed);
        let mut single = instance(false, false, false);
        single.last = Some(Last { yields: 10, failures: 1, peer: None, peer_failures: 0 });
        assert!(!single.verify().passed);
    }
}
