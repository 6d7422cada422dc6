//! `os.thread-spawn`: one operation spawns one thread with
//! `std::thread::spawn` semantics (clone of a new thread with its own stack)
//! and joins it; the thread returns a value computed from its index.

use anyhow::Context;
use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};
use crate::workloads::cpu::mix64;
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::skip_or_fail;

pub struct ThreadSpawn;

impl Workload for ThreadSpawn {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.thread-spawn",
            group: "os",
            summary: "Spawn one thread and join it",
            measures: "the cost of a thread's whole life in one process: stack mapping, clone, the first schedule of the \
                       new thread, its exit, and the parent's wakeup in join",
            unit: Unit::NsPerOp,
            timed_region: "per operation: std::thread::Builder::spawn (as std::thread::spawn, default stack size) of a \
                           thread that returns mix64(seed ^ index), join, and a comparison of the returned value with the \
                           parent's own mix64(seed ^ index) (a mismatch counter); nothing else is inside the window",
            total_window: None,
            verifier: "every thread's return value, received through join, equals mix64(seed ^ its index) computed by the \
                       parent: 0 mismatched threads, and as many joins as spawns",
            batched: true,
            params: vec![],
            faults: &["wrong-return"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        // One thread now: a process that may not create threads skips the row here.
        if let Err(e) = std::thread::Builder::new().spawn(|| ()).map(|h| h.join()) {
            return skip_or_fail("spawning a thread", e);
        }
        Ok(Prepared::ready(ThreadSpawnInstance { salt: cell.seed, wrong_return: cx.fault_is("wrong-return"), next: 0 }))
    }
}

/// What thread `index` returns.
#[inline]
fn value(salt: u64, index: u64) -> u64 {
    mix64(salt ^ index)
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    /// Threads spawned and joined (a failure ends the sample with an error).
    iters: u64,
    mismatches: Mismatches,
}

struct ThreadSpawnInstance {
    salt: u64,
    wrong_return: bool,
    /// Index of the next thread (counts across samples).
    next: u64,
}

impl Instance for ThreadSpawnInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (salt, first) = (self.salt, self.next);
        // The fault makes the middle thread of the sample return a wrong value.
        let wrong = if self.wrong_return { Some(first + iters / 2) } else { None };
        let mut mismatches = Mismatches::new();
        timer.start();
        for index in first..first + iters {
            let off = u64::from(wrong == Some(index));
            let h = std::thread::Builder::new()
                .spawn(move || value(salt, index).wrapping_add(off))
                .with_context(|| format!("spawning thread {index}"))?;
            let got = h.join().map_err(|_| anyhow::anyhow!("thread {index} panicked"))?;
            mismatches.add_if(got != value(salt, index));
        }
        timer.stop();
        self.next += iters;
        Ok((Work::ops(iters), Outcome { iters, mismatches }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        Check {
            passed: l.mismatches.is_empty(),
            expected: format!("{} threads joined, 0 returned a wrong value", l.iters),
            observed: format!("{} threads joined, {} returned a wrong value", l.iters, l.mismatches.count),
        }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        json!({ "rust_min_stack": std::env::var("RUST_MIN_STACK").ok() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(wrong_return: bool) -> ThreadSpawnInstance {
        ThreadSpawnInstance { salt: 5, wrong_return, next: 0 }
    }

    #[test]
    fn every_thread_returns_its_value() {
        let mut inst = instance(false);
        for n in [1, 10] {
            let (w, out) = inst.sample(n, &mut Timer::new()).unwrap();
            assert_eq!(w, Work::ops(n));
            let v = inst.verify(&out);
            assert!(v.passed, "{v:?}");
        }
        assert_eq!(inst.next, 11);
    }

    #[test]
    fn a_wrong_return_fails_the_verifier() {
        let mut inst = instance(true);
        let (_, out) = inst.sample(4, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert_eq!(v.observed, "4 threads joined, 1 returned a wrong value");
    }

    #[test]
    fn values_differ_by_index_and_salt() {
        assert_ne!(value(1, 0), value(1, 1));
        assert_ne!(value(1, 0), value(2, 0));
    }
}
