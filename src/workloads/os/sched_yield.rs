//! `os.yield`: one operation is one `sched_yield()` of the measuring thread.
//! Alone (`mode=single`) it is a system call that finds nothing else to run;
//! with a second thread yielding on the same CPU (`mode=pair`,
//! `placement=same-cpu`) every yield hands the CPU to the other thread and
//! back, so one operation includes a switch to the peer; on two CPUs
//! (`cross-cpu`) both threads yield side by side.
//!
//! On one CPU the hand-overs are what the verifier checks: after each yield
//! the measuring thread publishes its count and looks at the peer's, and the
//! peer does the same, so each side counts the yields after which it found
//! the other had run; the kernel's count of the measuring thread's context
//! switches bounds the first. Alone, or on two CPUs, a yield leaves no trace
//! an unprivileged process can read (the kernel counts yields only with
//! schedstats on), so there the return values and the peer's progress are
//! what is checked.

use std::hint::spin_loop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use serde_json::json;

use super::{PairPlacement, pin_pair, placement_param, spawn_pinned_peer};
use crate::measure::clock;
use crate::measure::rusage::Rusage;
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct SchedYield;

/// The fault: the peer yields but does not publish its count.
pub const FAULT: &str = "lose-progress";
/// The fault: the measuring thread's loop counts its iterations as yields
/// without calling sched_yield.
pub const SKIP_YIELD: &str = "skip-yield";

named_enum! {
    /// One thread yielding, or two.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Mode {
        Single = "single",
        Pair = "pair",
    }
}

/// How long a pair sample waits, outside its window, to see the woken peer
/// running, and then to see it parked.
const PEER_WAIT_NS: u64 = 100_000_000;

impl Workload for SchedYield {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.yield",
            group: "os",
            summary: "sched_yield(): alone, or with a second thread yielding on the same or another CPU",
            measures: "the scheduler's yield path: a bare system call when nothing else is runnable (single), a switch to \
                       the other thread and back when two threads share a CPU (pair, same-cpu)",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` sched_yield() calls by the measuring thread, each return value compared with 0 \
                           (a counter); in pair mode the peer thread yields in its own loop meanwhile, and on one CPU \
                           (same-cpu) each thread, after each of its yields, stores its count and compares the other's with \
                           the one it saw last (a counter; the two share the CPU's cache, so this costs a few \
                           nanoseconds). Waking the peer before the window and waiting to see it running (spinning on \
                           another CPU, yielding on a shared one), reading the measuring thread's context switches \
                           (getrusage RUSAGE_THREAD) just before and after it, and parking the peer and waiting to see it \
                           parked after it, are outside",
            total_window: None,
            verifier: "every sched_yield() returned 0 (both threads), as many as the iterations; in pair mode the peer \
                       yielded between being woken and being parked. Same-cpu pair: yields hand the CPU over, so the \
                       measuring thread found the peer had yielded after at least half of its yields but the first, no more often than \
                       the kernel switched it out (ru_nvcsw + ru_nivcsw over the window), and the peer found the measuring \
                       thread had yielded after as many of its own (at least half the iterations). Single and cross-cpu: \
                       a yield leaves no count an unprivileged process can read, so only the return values and the peer's \
                       progress are checked; the peer's yields inside the window are recorded",
            batched: true,
            params: vec![
                ParamSpec::axis_of::<Mode>(
                    "mode",
                    "single: one thread yields; pair: a second thread yields too (placement applies to pair only)",
                ),
                placement_param(),
            ],
            faults: &[FAULT, SKIP_YIELD],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let pair_mode = cell.choice::<Mode>("mode")? == Mode::Pair;
        let placement = cell.choice::<PairPlacement>("placement")?;
        if !pair_mode && placement != PairPlacement::SameCpu {
            return Ok(Prepared::NotApplicable("single-thread yield has one end; placement does not apply".into()));
        }
        // A fault only the checks of another cell can see would leave this
        // row ok: such cells are skipped, saying so.
        if cx.fault_is(SKIP_YIELD) && !(pair_mode && placement == PairPlacement::SameCpu) {
            return Ok(Prepared::Skip(format!("the {SKIP_YIELD} fault shows only in a same-cpu pair (yields are counted there)")));
        }
        if cx.fault_is(FAULT) && !pair_mode {
            return Ok(Prepared::Skip(format!("the {FAULT} fault is the peer's: single mode has none")));
        }
        let pair = match pin_pair(cell, cx, "measuring thread")? {
            Ok(p) => p,
            Err(reason) => return Ok(Prepared::Skip(reason)),
        };
        // SAFETY: sched_yield takes no arguments.
        if unsafe { libc::sched_yield() } != 0 {
            let err = std::io::Error::last_os_error();
            return Ok(Prepared::Skip(format!("sched_yield is not permitted here: {err}")));
        }
        let peer = if pair_mode { Some(Peer::spawn(Some(pair.b), cx.fault_is(FAULT))?) } else { None };
        Ok(Prepared::ready(YieldInstance {
            peer,
            cpus: (pair.a, pair_mode.then_some(pair.b)),
            note: pair.note,
            cross: placement == PairPlacement::CrossCpu,
            skip_yield: cx.fault_is(SKIP_YIELD),
        }))
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
    /// Times the peer parked after running: it publishes its counts first.
    parked: AtomicU64,
    /// The measuring thread's yields, published after each one (same-cpu).
    measurer_yields: AtomicU64,
    /// Peer yields after which it found `measurer_yields` changed.
    peer_saw: AtomicU64,
}

/// The second thread of pair mode.
struct Peer {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

/// The peer's loop: yields while it is running, parks otherwise, until `stop`.
fn peer_loop(s: &Shared, lose_progress: bool) {
    let (mut yields, mut saw) = (0u64, 0u64);
    let mut seen = s.measurer_yields.load(Ordering::Relaxed);
    let mut ran = false;
    while !s.stop.load(Ordering::Acquire) {
        if !s.running.load(Ordering::Acquire) {
            if ran {
                ran = false;
                s.parked.fetch_add(1, Ordering::Release);
            }
            std::thread::park();
            continue;
        }
        ran = true;
        // SAFETY: sched_yield takes no arguments.
        if unsafe { libc::sched_yield() } != 0 {
            s.failures.fetch_add(1, Ordering::Relaxed);
        }
        yields += 1;
        if !lose_progress {
            s.yields.store(yields, Ordering::Release);
        }
        let now = s.measurer_yields.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            saw += 1;
            s.peer_saw.store(saw, Ordering::Relaxed);
        }
    }
}

impl Peer {
    fn spawn(cpu: Option<usize>, lose_progress: bool) -> anyhow::Result<Peer> {
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let handle = spawn_pinned_peer("yield-peer", cpu, move || peer_loop(&s, lose_progress))?;
        Ok(Peer { shared, handle: Some(handle) })
    }

    fn wake(&self) {
        self.shared.running.store(true, Ordering::Release);
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
    }

    /// Parks the peer and waits (bounded) to see it parked, so that its
    /// counts are final: spinning when it has a CPU of its own, yielding to
    /// it when it shares ours.
    fn park(&self, cross: bool) {
        let before = self.shared.parked.load(Ordering::Acquire);
        self.shared.running.store(false, Ordering::Release);
        let t0 = clock::now_ns();
        while self.shared.parked.load(Ordering::Acquire) == before && clock::now_ns() - t0 < PEER_WAIT_NS {
            relax(cross);
        }
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

/// One step of a wait for the peer: a spin on a CPU of our own, a yield to
/// it on a shared one.
fn relax(cross: bool) {
    if cross {
        spin_loop();
    } else {
        // SAFETY: sched_yield takes no arguments.
        unsafe { libc::sched_yield() };
    }
}

/// The hand-overs of a same-cpu sample, seen from both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handovers {
    /// Yields of the measuring thread after which the peer's count had moved.
    measurer_saw: u64,
    /// Yields of the peer after which the measuring thread's count had moved.
    peer_saw: u64,
    /// The kernel's context switches of the measuring thread over the window.
    switches: u64,
}

/// The peer's yields in a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PeerProgress {
    /// From waking it (before the window) to parking it (after).
    since_wake: u64,
    /// From just before the window to just after it.
    in_window: u64,
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    /// The sample's iterations.
    iters: u64,
    /// Yields that returned 0.
    yields: u64,
    /// The peer's progress (pair mode).
    peer: Option<PeerProgress>,
    peer_failures: u64,
    /// Same-cpu pair mode.
    handovers: Option<Handovers>,
}

impl Outcome {
    /// Why the sample is wrong, if it is.
    fn problems(&self) -> Vec<String> {
        let mut bad = Vec::new();
        if self.yields != self.iters {
            bad.push(format!("{} of {} yields returned non-zero", self.iters - self.yields.min(self.iters), self.iters));
        }
        if self.peer_failures > 0 {
            bad.push(format!("{} peer yields returned non-zero", self.peer_failures));
        }
        if let Some(p) = self.peer
            && p.since_wake == 0
        {
            bad.push("the peer made no progress".into());
        }
        if let Some(h) = self.handovers {
            // The first yield may come before the peer is runnable again (a
            // one-yield sample once saw no hand-over): one miss is allowed.
            let half = self.iters.saturating_sub(1).div_ceil(2);
            if h.measurer_saw < half {
                bad.push(format!("the peer ran after only {} of {} yields (at least {half} expected)", h.measurer_saw, self.iters));
            }
            if h.measurer_saw > h.switches {
                bad.push(format!("{} hand-overs seen but the kernel switched the thread out {} times", h.measurer_saw, h.switches));
            }
            if h.peer_saw < half {
                bad.push(format!("the measuring thread ran after only {} of the peer's yields (at least {half} expected)", h.peer_saw));
            }
        }
        bad
    }
}

struct YieldInstance {
    peer: Option<Peer>,
    /// The measuring thread's CPU and, in pair mode, the peer's.
    cpus: (usize, Option<usize>),
    note: String,
    cross: bool,
    /// The fault: the loop does not call sched_yield.
    skip_yield: bool,
}

impl YieldInstance {
    /// The timed loop without observation: single mode, and cross-cpu,
    /// where reading the peer's count would pull its cache line across CPUs
    /// on every yield and change what is measured.
    fn plain_loop(&self, iters: u64, timer: &mut Timer) -> u64 {
        let skip = self.skip_yield;
        let mut ok = 0u64;
        timer.start();
        for _ in 0..iters {
            // SAFETY: sched_yield takes no arguments.
            ok += u64::from(skip || unsafe { libc::sched_yield() } == 0);
        }
        timer.stop();
        ok
    }

    /// The same-cpu timed loop: after each yield, publish the count and see
    /// whether the peer's moved. Returns (yields that returned 0, yields after
    /// which the peer had run).
    fn observed_loop(&self, shared: &Shared, iters: u64, timer: &mut Timer) -> (u64, u64) {
        let skip = self.skip_yield;
        // Only this thread writes its count: it goes on from the last sample's.
        let (mut ok, mut saw, mut published) = (0u64, 0u64, shared.measurer_yields.load(Ordering::Relaxed));
        let mut seen = shared.yields.load(Ordering::Relaxed);
        timer.start();
        for _ in 0..iters {
            // SAFETY: sched_yield takes no arguments.
            ok += u64::from(skip || unsafe { libc::sched_yield() } == 0);
            published += 1;
            shared.measurer_yields.store(published, Ordering::Relaxed);
            let now = shared.yields.load(Ordering::Relaxed);
            saw += u64::from(now != seen);
            seen = now;
        }
        timer.stop();
        (ok, saw)
    }
}

impl Instance for YieldInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let Some(peer) = &self.peer else {
            let yields = self.plain_loop(iters, timer);
            return Ok((Work::ops(iters), Outcome { iters, yields, peer: None, peer_failures: 0, handovers: None }));
        };
        let shared = &*peer.shared;
        let peer_yields = || shared.yields.load(Ordering::Acquire);
        // The peer's count (and failures) when it was woken, and just before
        // the window.
        let (woken, failures_before) = (peer_yields(), shared.failures.load(Ordering::Relaxed));
        peer.wake();
        // Wait (bounded) to see the peer running.
        let t0 = clock::now_ns();
        while peer_yields() == woken && clock::now_ns() - t0 < PEER_WAIT_NS {
            relax(self.cross);
        }
        let before = peer_yields();
        let (yields, seen) = if self.cross {
            (self.plain_loop(iters, timer), None)
        } else {
            let (switches, peer_saw) = (Rusage::this_thread(), shared.peer_saw.load(Ordering::Relaxed));
            let (yields, measurer_saw) = self.observed_loop(shared, iters, timer);
            (yields, Some((measurer_saw, Rusage::this_thread().since(&switches).context_switches(), peer_saw)))
        };
        let after = peer_yields();
        peer.park(self.cross);
        // The peer's last look comes after the window: its count is read
        // once it has parked.
        let handovers = seen.map(|(measurer_saw, switches, peer_saw)| Handovers {
            measurer_saw,
            peer_saw: shared.peer_saw.load(Ordering::Relaxed) - peer_saw,
            switches,
        });
        let peer = Some(PeerProgress { since_wake: peer_yields() - woken, in_window: after - before });
        let peer_failures = shared.failures.load(Ordering::Relaxed) - failures_before;
        Ok((Work::ops(iters), Outcome { iters, yields, peer, peer_failures, handovers }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = match (&self.peer, self.cross) {
            (None, _) => "every sched_yield returns 0".to_string(),
            (Some(_), true) => "every sched_yield returns 0 (both threads) and the peer yields between being woken and parked".into(),
            (Some(_), false) => "every sched_yield returns 0 (both threads); each thread finds the other ran after at least \
                                 half of the measuring thread's yields, and no more hand-overs than the kernel's context \
                                 switches"
                .into(),
        };
        let problems = l.problems();
        let mut observed = format!("{} of {} yields returned 0", l.yields, l.iters);
        if let Some(h) = l.handovers {
            observed.push_str(&format!(
                "; the peer ran after {} of them, the measuring thread after {} of the peer's, {} context switches",
                h.measurer_saw, h.peer_saw, h.switches
            ));
        }
        if let Some(p) = l.peer {
            observed.push_str(&format!(
                "; peer: {} failed yields, {} yields since woken ({} inside the window)",
                l.peer_failures, p.since_wake, p.in_window
            ));
        }
        if !problems.is_empty() {
            observed = format!("{}: {observed}", problems.join("; "));
        }
        Check { passed: problems.is_empty(), expected, observed }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        let h = last.and_then(|l| l.handovers);
        json!({
            "mode": if self.peer.is_some() { Mode::Pair } else { Mode::Single },
            "cpu_a": self.cpus.0,
            "cpu_b": self.cpus.1,
            "placement_note": self.note,
            "last_sample_yields": last.map(|l| l.yields),
            "last_sample_peer_yields_in_window": last.and_then(|l| l.peer.map(|p| p.in_window)),
            "last_sample_handovers_seen": h.map(|h| h.measurer_saw),
            "last_sample_peer_saw": h.map(|h| h.peer_saw),
            "last_sample_context_switches": h.map(|h| h.switches),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::affinity;

    fn instance(pair: bool, lose_progress: bool, cross: bool) -> YieldInstance {
        let peer = pair.then(|| Peer::spawn(None, lose_progress).unwrap());
        YieldInstance { peer, cpus: (0, pair.then_some(0)), note: String::new(), cross, skip_yield: false }
    }

    /// Pins the test thread and makes a same-cpu pair on its CPU.
    fn same_cpu_pair(skip_yield: bool) -> YieldInstance {
        let cpu = *affinity::current_thread().unwrap().first().unwrap();
        affinity::pin_current_thread(cpu).unwrap();
        let peer = Some(Peer::spawn(Some(cpu), false).unwrap());
        YieldInstance { peer, cpus: (cpu, Some(cpu)), note: String::new(), cross: false, skip_yield }
    }

    #[test]
    fn single_and_pair_samples_pass() {
        for (pair, cross) in [(false, false), (true, true)] {
            let mut inst = instance(pair, false, cross);
            for iters in [1, 1000] {
                let (w, out) = inst.sample(iters, &mut Timer::new()).unwrap();
                assert_eq!(w, Work::ops(iters));
                let v = inst.verify(&out);
                assert!(v.passed, "pair {pair}: {v:?}");
            }
        }
    }

    #[test]
    fn same_cpu_yields_hand_over_and_a_skipped_yield_is_caught() {
        // Run on a thread of its own: the pinning must not outlive the test.
        std::thread::spawn(|| {
            let mut inst = same_cpu_pair(false);
            for iters in [1, 7, 2000] {
                let (_, out) = inst.sample(iters, &mut Timer::new()).unwrap();
                let v = inst.verify(&out);
                assert!(v.passed, "{iters}: {v:?}");
                let h = out.handovers.unwrap();
                assert!(h.switches >= h.measurer_saw && h.measurer_saw >= (iters - 1).div_ceil(2), "{h:?}");
            }
            let mut bad = same_cpu_pair(true);
            let (_, out) = bad.sample(2000, &mut Timer::new()).unwrap();
            let v = bad.verify(&out);
            assert!(!v.passed);
            assert!(v.observed.starts_with("the peer ran after only"), "{}", v.observed);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_verifier_fails_when_the_peer_makes_no_progress_or_a_yield_fails() {
        let mut inst = instance(true, true, true);
        let (_, out) = inst.sample(100, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.starts_with("the peer made no progress"), "{}", v.observed);
        assert!(v.observed.ends_with("0 yields since woken (0 inside the window)"), "{}", v.observed);
        let mut single = instance(false, false, false);
        let out = Outcome { iters: 10, yields: 9, peer: None, peer_failures: 0, handovers: None };
        assert!(single.verify(&out).observed.starts_with("1 of 10 yields returned non-zero"));
        let fine = Handovers { measurer_saw: 10, peer_saw: 10, switches: 10 };
        let pair = |h| Outcome {
            iters: 10,
            yields: 10,
            peer: Some(PeerProgress { since_wake: 11, in_window: 10 }),
            peer_failures: 0,
            handovers: Some(h),
        };
        assert!(pair(fine).problems().is_empty());
        assert_eq!(
            pair(Handovers { switches: 9, ..fine }).problems(),
            ["10 hand-overs seen but the kernel switched the thread out 9 times"]
        );
        assert_eq!(
            pair(Handovers { peer_saw: 0, ..fine }).problems(),
            ["the measuring thread ran after only 0 of the peer's yields (at least 5 expected)"]
        );
        assert_eq!(pair(Handovers { measurer_saw: 4, ..fine }).problems().len(), 1);
    }
}
