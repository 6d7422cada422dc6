//! The `selftest` group: workloads that misbehave on purpose, so that the
//! harness's handling of crashes, hangs, wrong answers and noise can be
//! tested end to end. Hidden from `list` and from the default selection.

pub mod crash;
pub mod hang;
pub mod noisy;
pub mod tiny;
pub mod wrong;

use crate::workloads::contract::{Timer, Work};

/// A trivial timed sample: sums 1..=n (used by the selftests that need to run
/// a few normal samples before misbehaving).
pub(crate) fn sum_sample(n: u64, timer: &mut Timer) -> (u64, Work) {
    timer.start();
    let mut s = 0u64;
    for i in 1..=n {
        s = std::hint::black_box(s + i);
    }
    timer.stop();
    (s, Work::ops(n))
}
