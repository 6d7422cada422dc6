//! The one clock of proofbench: `CLOCK_MONOTONIC` in nanoseconds.
//!
//! It is the clock `std::time::Instant` uses on Linux, but as a plain `u64` it
//! can be compared across threads and across processes (the process-scale
//! workloads take timestamps in forked children and compare them in the
//! parent). The wall-clock moments the records hold (`started_utc`...) are
//! read here too ([`utc_now`]), so that no stage below reads a clock.

use std::hint::black_box;
use std::time::SystemTime;

/// UTC now as RFC 3339 with seconds: how a moment is written in the
/// records.
pub fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// The current UTC time to the millisecond, `2026-01-01T00:00:00.123Z`: for
/// spans shorter than a few seconds (a run's rounds).
pub fn utc_now_millis() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The resolution the kernel reports for `CLOCK_MONOTONIC`, in nanoseconds.
pub fn resolution_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The cost of reading the clock: median of `reps` back-to-back differences.
pub fn timer_overhead_ns(reps: usize) -> f64 {
    let mut deltas: Vec<u64> = (0..reps.max(1))
        .map(|_| {
            let a = now_ns();
            let b = now_ns();
            b - a
        })
        .collect();
    deltas.sort_unstable();
    deltas[deltas.len() / 2] as f64
}

/// The cost of one iteration of an empty counted loop, in nanoseconds: the
/// median over `reps` runs of `iters` iterations.
pub fn loop_overhead_ns(iters: u64, reps: usize) -> f64 {
    let iters = iters.max(1);
    let mut per: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let a = now_ns();
            for i in 0..iters {
                black_box(i);
            }
            (now_ns() - a) as f64 / iters as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_advances_with_sleep() {
        let a = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = now_ns();
        assert!(b >= a + 4_000_000, "slept 5 ms but the clock moved {} ns", b - a);
    }

    #[test]
    fn overheads_are_positive_and_small() {
        let t = timer_overhead_ns(1000);
        assert!(t < 100_000.0, "timer overhead {t} ns");
        let l = loop_overhead_ns(10_000, 5);
        assert!(l > 0.0 && l < 1_000.0, "loop overhead {l} ns");
        assert!(resolution_ns() >= 1);
    }
}
