//! `os.futex-ctx`: one operation is one hand-off between two threads of one
//! process through a futex ping-pong: a thread increments a shared 32-bit
//! counter, wakes the other with FUTEX_WAKE and waits with FUTEX_WAIT until
//! the other hands the turn back. On one CPU every hand-off is a context
//! switch (the lmbench `lat_ctx` / `perf bench sched pipe -T` figure without
//! the pipe); across CPUs it is a cross-CPU wakeup.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;

use serde_json::json;

use super::{pin_pair, placement_param, spawn_pinned_peer};
use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};
use crate::workloads::mismatch::Mismatches;

pub struct FutexCtx;

/// The fault: the peer advances the counter by 2 once.
pub const FAULT: &str = "skip-step";

impl Workload for FutexCtx {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.futex-ctx",
            group: "os",
            summary: "Futex ping-pong between two threads: one hand-off of the turn per operation",
            measures: "the cost of handing the CPU to another thread that waits in the kernel: FUTEX_WAKE, the wakeup and, \
                       on one CPU, a context switch (the switch that os.yield pair and os.ipc-rtt on one CPU include)",
            unit: Unit::NsPerOp,
            timed_region: "`iters` hand-offs: on the measuring thread's turns it stores counter + 1 and calls FUTEX_WAKE; on \
                           the peer's turns it waits (FUTEX_WAIT) until the peer stores the next value, and compares it with \
                           the previous value + 1 (a mismatch counter). When `iters` is odd the wait for the peer's answer to the \
                           last hand-off is after the window. Spawning and pinning the peer are outside (prepare)",
            total_window: None,
            verifier: "each thread woke to exactly the value it stored + 1 every time (0 mismatches on both sides), and the \
                       counter advanced by exactly the number of hand-offs done",
            batched: true,
            params: vec![placement_param()],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let pair = match pin_pair(cell, cx, "measuring thread")? {
            Ok(p) => p,
            Err(reason) => return Ok(Prepared::Skip(reason)),
        };
        let probe = AtomicU32::new(0);
        if futex_wake(&probe) < 0 {
            let err = std::io::Error::last_os_error();
            if matches!(err.raw_os_error(), Some(libc::EPERM | libc::ENOSYS | libc::EACCES)) {
                return Ok(Prepared::Skip(format!("futex is not permitted here: {err}")));
            }
            return Err(anyhow::Error::new(err).context("probing FUTEX_WAKE"));
        }
        let inst = FutexInstance::start(Some(pair.b), cx.fault_is(FAULT), (pair.a, pair.b), pair.note)?;
        Ok(Prepared::ready(inst))
    }
}

/// How long one FUTEX_WAIT of the measuring thread lasts before it checks the
/// peer is still alive.
const WAIT_CHECK: libc::timespec = libc::timespec { tv_sec: 1, tv_nsec: 0 };

/// FUTEX_WAIT while `word` holds `val` (returns at once if it does not).
fn futex_wait(word: &AtomicU32, val: u32, timeout: Option<&libc::timespec>) -> libc::c_long {
    let t = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 for the whole call; `t` is null or
    // points to a valid timespec; the kernel reads nothing else.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, val, t, 0usize, 0u32) }
}

/// FUTEX_WAKE of one waiter on `word`.
fn futex_wake(word: &AtomicU32) -> libc::c_long {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE only uses its address.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1, 0usize, 0usize, 0u32) }
}

/// State shared with the peer thread.
#[derive(Default)]
struct Shared {
    /// The hand-off counter: the measuring thread's turn when it differs from
    /// the value it stored last, the peer's likewise.
    word: AtomicU32,
    stop: AtomicBool,
    /// Times the peer woke to something other than its last value + 1.
    peer_mismatches: AtomicU64,
}

/// The peer: waits for the counter to move past the value it stored last,
/// checks it moved by exactly 1, stores the next value and wakes the
/// measuring thread; until `stop`.
fn peer(s: &Shared, skip_step: bool) {
    let mut mine = 0u32;
    let mut skip = skip_step;
    loop {
        let w = loop {
            if s.stop.load(Ordering::Acquire) {
                return;
            }
            let w = s.word.load(Ordering::Acquire);
            if w != mine {
                break w;
            }
            futex_wait(&s.word, mine, None);
        };
        if w != mine.wrapping_add(1) {
            s.peer_mismatches.fetch_add(1, Ordering::Relaxed);
        }
        let next = w.wrapping_add(if skip { 2 } else { 1 });
        skip = false;
        s.word.store(next, Ordering::Release);
        futex_wake(&s.word);
        mine = next;
    }
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    handoffs: u64,
    /// Hand-offs the counter should have moved by (one more when `handoffs` is odd: the peer's answer).
    expected_advance: u64,
    advance: u64,
    /// The measuring thread's wakes to another value than expected: (expected, woke to).
    mismatches: Mismatches<(u32, u32)>,
    peer_mismatches: u64,
}

struct FutexInstance {
    shared: Arc<Shared>,
    peer: Option<JoinHandle<()>>,
    /// The value the measuring thread saw last: it is its turn while the counter holds it.
    mine: u32,
    cpus: (usize, usize),
    note: String,
    handoffs: u64,
}

impl FutexInstance {
    /// Spawns the peer (pinned to `cpu` when given) and waits until it is placed.
    fn start(cpu: Option<usize>, skip_step: bool, cpus: (usize, usize), note: String) -> anyhow::Result<FutexInstance> {
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let handle = spawn_pinned_peer("futex-peer", cpu, move || peer(&s, skip_step))?;
        Ok(FutexInstance { shared, peer: Some(handle), mine: 0, cpus, note, handoffs: 0 })
    }

    /// Waits until the counter moves past `mine` and returns it; fails if the
    /// peer has ended.
    fn wait_change(&self, mine: u32) -> anyhow::Result<u32> {
        let word = &self.shared.word;
        loop {
            let w = word.load(Ordering::Acquire);
            if w != mine {
                return Ok(w);
            }
            if futex_wait(word, mine, Some(&WAIT_CHECK)) != 0
                && word.load(Ordering::Acquire) == mine
                && self.peer.as_ref().is_none_or(|h| h.is_finished())
            {
                anyhow::bail!("the peer thread has ended");
            }
        }
    }
}

impl Instance for FutexInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let word = &self.shared.word;
        let start = self.mine;
        let peer_before = self.shared.peer_mismatches.load(Ordering::Relaxed);
        let mut mine = start;
        let mut mismatches = Mismatches::new();
        let mut check = |mine: u32, w: u32| mismatches.expect(mine.wrapping_add(1), w);
        timer.start();
        for j in 0..iters {
            if j % 2 == 0 {
                // Our hand-off to the peer.
                mine = mine.wrapping_add(1);
                word.store(mine, Ordering::Release);
                futex_wake(word);
            } else {
                // The peer's hand-off back to us.
                let w = self.wait_change(mine)?;
                check(mine, w);
                mine = w;
            }
        }
        timer.stop();
        if iters % 2 == 1 {
            let w = self.wait_change(mine)?;
            check(mine, w);
            mine = w;
        }
        self.mine = mine;
        self.handoffs += iters;
        let peer_mismatches = self.shared.peer_mismatches.load(Ordering::Relaxed) - peer_before;
        Ok((
            Work::ops(iters),
            Outcome {
                handoffs: iters,
                expected_advance: iters + iters % 2,
                advance: u64::from(mine.wrapping_sub(start)),
                mismatches,
                peer_mismatches,
            },
        ))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("0 mismatches on both sides; the counter advances by {}", l.expected_advance);
        let mut observed = format!(
            "{} mismatches (measuring thread), {} (peer); the counter advanced by {} in {} hand-offs",
            l.mismatches.count, l.peer_mismatches, l.advance, l.handoffs
        );
        if let Some((want, got)) = l.mismatches.first {
            observed.push_str(&format!("; first: expected {want}, woke to {got}"));
        }
        let passed = l.mismatches.is_empty() && l.peer_mismatches == 0 && l.advance == l.expected_advance;
        Check { passed, expected, observed }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        json!({
            "cpu_a": self.cpus.0,
            "cpu_b": self.cpus.1,
            "placement_note": self.note,
            "handoffs_total": self.handoffs,
            "counter": self.mine,
        })
    }
}

impl Drop for FutexInstance {
    fn drop(&mut self) {
        let s = &self.shared;
        s.stop.store(true, Ordering::Release);
        // Move the counter so that a peer about to wait returns at once.
        s.word.store(self.mine ^ 0x8000_0000, Ordering::Release);
        futex_wake(&s.word);
        if let Some(h) = self.peer.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ping_pong_alternates_for_odd_and_even_counts() {
        let mut inst = FutexInstance::start(None, false, (0, 0), String::new()).unwrap();
        for iters in [1, 2, 7, 1000] {
            let (w, out) = inst.sample(iters, &mut Timer::new()).unwrap();
            assert_eq!(w, Work::ops(iters));
            let v = inst.verify(&out);
            assert!(v.passed, "{iters}: {v:?}");
        }
        assert_eq!(inst.handoffs, 1010);
        assert_eq!(inst.mine, 1012);
    }

    #[test]
    fn the_verifier_fails_when_a_step_is_skipped() {
        let mut inst = FutexInstance::start(None, true, (0, 0), String::new()).unwrap();
        let (_, out) = inst.sample(4, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.contains("first: expected 2, woke to 3"), "{}", v.observed);
        let (_, out) = inst.sample(4, &mut Timer::new()).unwrap();
        assert!(inst.verify(&out).passed, "the peer skips once");
        let out = Outcome { handoffs: 2, expected_advance: 2, advance: 2, mismatches: Mismatches::new(), peer_mismatches: 1 };
        assert!(!inst.verify(&out).passed);
        let out = Outcome { handoffs: 2, expected_advance: 2, advance: 3, mismatches: Mismatches::new(), peer_mismatches: 0 };
        assert!(!inst.verify(&out).passed);
    }

    #[test]
    fn a_peer_that_ended_fails_the_sample_instead_of_hanging() {
        let mut inst = FutexInstance::start(None, false, (0, 0), String::new()).unwrap();
        inst.shared.stop.store(true, Ordering::Release);
        inst.shared.word.store(u32::MAX, Ordering::Release);
        futex_wake(&inst.shared.word);
        while !inst.peer.as_ref().unwrap().is_finished() {
            std::thread::yield_now();
        }
        inst.shared.word.store(0, Ordering::Release);
        let err = inst.sample(2, &mut Timer::new()).unwrap_err();
        assert!(err.to_string().contains("has ended"), "{err}");
    }
}
