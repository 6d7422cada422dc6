//! Runs one body per thread, each thread restricted to its own CPU set, all
//! released together by a barrier, and reports each thread's window (from
//! CLOCK_MONOTONIC in the thread), the CPU it was on at the start and the end
//! of its window, and the involuntary context switches it took meanwhile.

use std::sync::Barrier;

use anyhow::Context;

use crate::measure::rusage::Rusage;
use crate::measure::{affinity, clock};

/// One thread's account of its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadRun<R> {
    pub start_ns: u64,
    pub end_ns: u64,
    /// `sched_getcpu()` just before and just after the window.
    pub cpu_start: i32,
    pub cpu_end: i32,
    /// `ru_nivcsw` of `RUSAGE_THREAD` across the window: times the
    /// scheduler took the CPU away from this thread.
    pub involuntary_switches: i64,
    pub result: R,
}

/// The threads' runs (in thread order) and the total window: spawn of every
/// thread, their work and the join.
pub struct Runs<R> {
    pub threads: Vec<ThreadRun<R>>,
    pub total_ns: u64,
}

impl<R> Runs<R> {
    /// From the first thread's start to the last thread's end.
    pub fn work_ns(&self) -> u64 {
        let first = self.threads.iter().map(|t| t.start_ns).min().unwrap_or(0);
        let last = self.threads.iter().map(|t| t.end_ns).max().unwrap_or(0);
        last.saturating_sub(first)
    }

    /// Threads whose CPU at the end of the window differs from the start.
    pub fn moved(&self) -> usize {
        self.threads.iter().filter(|t| t.cpu_start != t.cpu_end).count()
    }
}

fn involuntary_switches() -> i64 {
    Rusage::this_thread().involuntary_ctx_switches as i64
}

fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu has no preconditions.
    unsafe { libc::sched_getcpu() }
}

/// Spawns one thread per entry of `cpu_sets` (thread i may run only on
/// `cpu_sets[i]`), releases them together and runs `body(i)` in each.
pub fn run<R: Send>(cpu_sets: &[Vec<usize>], body: impl Fn(usize) -> R + Sync) -> anyhow::Result<Runs<R>> {
    let k = cpu_sets.len();
    let barrier = Barrier::new(k);
    let t0 = clock::now_ns();
    // If spawning thread i fails, threads 0..i wait at the barrier for ever:
    // the harness's per-cell timeout ends the worker (a failed row).
    let results: Vec<anyhow::Result<ThreadRun<R>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..k)
            .map(|i| {
                let (barrier, body, cpus) = (&barrier, &body, &cpu_sets[i]);
                std::thread::Builder::new()
                    .name(format!("hw-{i}"))
                    .spawn_scoped(s, move || {
                        // A placement failure must still reach the barrier, or the others wait for ever.
                        let placed = affinity::set_current_thread(cpus);
                        barrier.wait();
                        let (cpu_start, sw0) = (current_cpu(), involuntary_switches());
                        let start_ns = clock::now_ns();
                        let result = body(i);
                        let end_ns = clock::now_ns();
                        let (cpu_end, sw1) = (current_cpu(), involuntary_switches());
                        placed.with_context(|| format!("restricting thread {i} to CPUs {cpus:?}"))?;
                        Ok(ThreadRun { start_ns, end_ns, cpu_start, cpu_end, involuntary_switches: sw1 - sw0, result })
                    })
                    .with_context(|| format!("spawning thread {i}"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok::<_, anyhow::Error>(handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("a thread panicked"))?).collect())
    })?;
    let total_ns = clock::now_ns() - t0;
    Ok(Runs { threads: results.into_iter().collect::<anyhow::Result<_>>()?, total_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_run_where_they_are_told_and_report_their_windows() {
        let allowed = affinity::current_thread().unwrap();
        let last = *allowed.last().unwrap();
        let runs = run(&[vec![last], allowed.clone()], |i| i * 10).unwrap();
        assert_eq!(runs.threads.len(), 2);
        assert_eq!(runs.threads[0].cpu_start, last as i32, "pinned thread on its CPU");
        assert_eq!(runs.threads[0].cpu_end, last as i32);
        assert_eq!(runs.threads.iter().map(|t| t.result).collect::<Vec<_>>(), vec![0, 10]);
        assert!(runs.total_ns >= runs.work_ns());
        assert!(runs.threads.iter().all(|t| t.end_ns >= t.start_ns && t.involuntary_switches >= 0));
    }

    #[test]
    fn an_impossible_cpu_set_is_an_error_not_a_hang() {
        let first = affinity::current_thread().unwrap()[0];
        let err = run(&[vec![4000], vec![first]], |_| ()).err().expect("CPU 4000 does not exist");
        assert!(format!("{err:#}").contains("CPUs [4000]"), "{err:#}");
    }
}
