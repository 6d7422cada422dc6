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

/// Bits of a [`tally`] that count; the bits above them sum `i + 1`.
pub const TALLY_COUNT_BITS: u32 = 29;
/// The most items a tally can count (the `items` and `tasks` parameters'
/// maximum): a lost and a doubled item still fit in the count bits.
pub const TALLY_MAX_ITEMS: u64 = 1 << 28;

/// What item (or task) `i` adds to a tally: 1 in the low 29 bits and `i + 1`
/// above them. Summed with wrapping adds, the low bits count the items and
/// the high bits sum `i + 1` (mod 2^35), in one add per item: a lost item
/// shows in both (item 0 too, which would add nothing to a plain sum of the
/// indices), and a lost item plus a doubled one in the sum (their indices
/// differ by less than 2^35).
#[inline]
pub fn tally(i: u64) -> u64 {
    ((i + 1) << TALLY_COUNT_BITS) | 1
}

/// A tally split into its count and its sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    /// The sum of `i + 1` over the items counted, mod 2^35.
    pub sum: u64,
}

impl Tally {
    /// Splits a wrapping sum of [`tally`] values.
    pub fn of(total: u64) -> Tally {
        Tally { count: total & ((1 << TALLY_COUNT_BITS) - 1), sum: total >> TALLY_COUNT_BITS }
    }

    /// The tally of items `0..n` each counted once, in closed form:
    /// n items summing to n(n+1)/2 (mod 2^35).
    pub fn expected(n: u64) -> Tally {
        let n = u128::from(n);
        Tally { count: n as u64, sum: ((n * (n + 1) / 2) % (1 << (64 - TALLY_COUNT_BITS))) as u64 }
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} counted, sum of (index + 1) mod 2^35 = {}", self.count, self.sum)
    }
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

    /// The samples that recorded a window.
    pub fn samples(&self) -> usize {
        self.0.len()
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
pub fn verdicts(inst: &mut dyn crate::workloads::contract::Sampler, samples: usize) -> Vec<bool> {
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
    fn tallies_count_and_sum_and_see_a_lost_plus_a_doubled_item() {
        let n = 5_000u64;
        let all = (0..n).fold(0u64, |t, i| t.wrapping_add(tally(i)));
        assert_eq!(Tally::of(all), Tally::expected(n));
        assert_eq!(Tally::expected(n), Tally { count: n, sum: n * (n + 1) / 2 });
        let lost_first = all.wrapping_sub(tally(0));
        assert_eq!(Tally::of(lost_first).count, n - 1, "item 0 is counted");
        let swapped = all.wrapping_sub(tally(n - 1)).wrapping_add(tally(0));
        assert_eq!(Tally::of(swapped).count, n);
        assert_ne!(Tally::of(swapped), Tally::expected(n), "one lost plus one doubled");
        // The largest size: the count stays in its bits, the sum wraps mod 2^35.
        let m = TALLY_MAX_ITEMS;
        let big = (m * (m + 1) / 2).wrapping_shl(TALLY_COUNT_BITS).wrapping_add(m);
        assert_eq!(Tally::of(big), Tally::expected(m));
        assert_eq!(Tally::of(big.wrapping_add(tally(7))).count, m + 1, "a doubled item at the maximum still counts");
    }

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
