//! Pieces shared by the `rt` workloads: the work window opened and closed
//! inside the runtime's `install`, and the `overhead_dominated` mark of small
//! sizes (RustFiber leaves sizes under 10,000 tasks out of its ns/task graphs:
//! there, constant costs such as submitting the root task dominate).

use super::runtime::Runtime;
use crate::workloads::contract::Timer;

/// Fewer operations than this per sample: constant costs dominate ns/op.
pub const FEW_OPS: u64 = 10_000;
/// A median work window shorter than this: constant costs dominate.
pub const SHORT_SAMPLE_NS: u64 = 1_000_000;

/// The sentence the `rt` timed regions end with (a macro, for `concat!`).
macro_rules! overhead_note {
    () => {
        "; rows with fewer than 10,000 operations per sample or a median window under 1 ms are marked \
         overhead_dominated: there the runtime's constant costs (starting the root task on a pool thread, waking the \
         workers) weigh on the figure"
    };
}
pub(crate) use overhead_note;

/// Runs `work` on `rt` with the work window opened and closed inside
/// `install`, on the pool thread that runs it: the hand-off to the pool and
/// the wake-up of the caller afterwards are outside the window.
pub fn timed_install<R: Runtime, T: Send>(rt: &R, timer: &mut Timer, work: impl FnOnce() -> T + Send) -> T {
    rt.install(|| {
        timer.start();
        let r = work();
        timer.stop();
        r
    })
}

/// The work windows of every sample so far (calibration and warmup included),
/// to judge the `overhead_dominated` mark on their median.
#[derive(Debug, Default)]
pub struct Windows(Vec<u64>);

impl Windows {
    pub fn push(&mut self, timer: &Timer) {
        if let Some(ns) = timer.work_ns() {
            self.0.push(ns);
        }
    }

    /// The median window (the lower middle for an even count).
    pub fn median_ns(&self) -> Option<u64> {
        let mut v = self.0.clone();
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) / 2).copied()
    }

    /// Whether `ops` operations per sample, in windows this long, are too few
    /// for a per-operation figure to say much about the runtime.
    pub fn overhead_dominated(&self, ops: u64) -> bool {
        ops < FEW_OPS || self.median_ns().is_some_and(|m| m < SHORT_SAMPLE_NS)
    }
}

/// A cell of an `rt` workload with `params` (the `runtime` among them),
/// `workers` workers and an optional fault, for unit tests that call `prepare`.
#[cfg(test)]
pub fn test_cell(workload: &str, params: serde_json::Value, workers: usize, fault: Option<&str>) -> crate::model::Cell {
    let mut c = crate::workloads::os::fs_common::test_cell(workload, params, fault, std::path::Path::new("/nonexistent"));
    c.group = "rt".into();
    c.workers = Some(workers);
    c.scratch_dir = None;
    c
}

/// Runs `samples` samples of a prepared instance and returns whether each
/// passed its verifier.
#[cfg(test)]
pub fn verdicts(inst: &mut dyn crate::workloads::contract::Instance, samples: usize) -> Vec<bool> {
    (0..samples)
        .map(|_| {
            let mut t = Timer::new();
            let w = inst.sample(1, &mut t).expect("a sample runs");
            assert!(t.work_ns().is_some(), "a work window");
            assert!(w.ops > 0);
            inst.verify().passed
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_needs_few_ops_or_short_windows() {
        let mut w = Windows::default();
        assert_eq!(w.median_ns(), None);
        assert!(!w.overhead_dominated(FEW_OPS));
        assert!(w.overhead_dominated(FEW_OPS - 1));
        for ns in [5_000_000, 500_000, 600_000] {
            let mut t = Timer::new();
            t.record_work(ns);
            w.push(&t);
        }
        assert_eq!(w.median_ns(), Some(600_000));
        assert!(w.overhead_dominated(1_000_000));
    }
}
