//! `cpu.barrier`: a barrier-heavy phase loop (capOS "one barrier-heavy phase
//! loop"). One sample resets a ring of `cells` words and runs `phases`
//! phases of a 1-D stencil on it with `workers` threads: in each phase thread
//! i computes its contiguous slice of the next state from the previous one
//! (each cell from itself and its two neighbours, which at the slice's edges
//! belong to the neighbouring threads), then waits on a `std::sync::Barrier`
//! before the next phase reads what the others wrote.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::mix64;
use crate::measure::{affinity, clock};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;

pub struct PhaseBarrier;

/// The fault: thread 0, in phase `phases / 2`, reads its first cell's own
/// value from the buffer being written (two phases old) instead of the one
/// the last phase wrote.
pub const FAULT: &str = "stale-read";

impl Workload for PhaseBarrier {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "cpu.barrier",
            group: "cpu",
            summary: "Threads step a 1-D stencil in phases, all meeting at a barrier after every phase",
            measures: "the cost of frequent synchronisation: a barrier wait (wakeups across CPUs) every few tens of microseconds \
                       of work, and how it eats the speedup of splitting a phase (work window); thread lifecycle on top (total window)",
            unit: Unit::Ns,
            timed_region: "the phase loop: from the first thread leaving a start barrier (which every thread reaches after \
                           spawning and pinning) to the last thread leaving the last phase's barrier (CLOCK_MONOTONIC in each \
                           thread); each barrier wait is also timed (two clock reads per phase per thread); resetting the \
                           state and the reference are outside",
            total_window: Some("spawn of every thread, the start barrier, the phase loop, and the parent's join of all of them"),
            verifier: "the final state (every cell, bitwise) equals the one a single thread computed with the same stencil \
                       during prepare",
            batched: false,
            params: vec![
                ParamSpec::int(
                    "cells",
                    "words in the ring (the shared state), split into contiguous slices",
                    1,
                    1 << 24,
                    [8192, 8192, 8192],
                ),
                ParamSpec::int("work_rounds", "mixes per cell per phase (the work between two barriers)", 1, 1 << 16, [2, 2, 2]),
                ParamSpec::int("phases", "phases per sample (one barrier wait each)", 1, 1 << 24, [500, 2000, 2000]),
                ParamSpec::workers("threads, each owning one slice and waiting at the barrier every phase"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let cells = cell.usize("cells")?;
        let rounds = cell.u64("work_rounds")?;
        let phases = cell.u64("phases")?;
        let cpus = (0..cell.worker_count()).map(|i| cell.cpu_for(i)).collect();
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(cell.seed);
        let init: Vec<u64> = (0..cells).map(|_| rng.next_u64()).collect();
        let reference = reference_state(&init, phases, rounds);
        let stale = cx.fault_is(FAULT);
        Ok(Prepared::ready(BarrierInstance::new(init, reference, rounds, phases, cpus, stale)))
    }
}

/// The stencil: a cell's next value from its left neighbour, itself and its
/// right neighbour in the previous phase.
#[inline]
fn step(left: u64, centre: u64, right: u64, phase: u64, rounds: u64) -> u64 {
    let mut h = left ^ centre.rotate_left(21) ^ right.rotate_left(42) ^ phase;
    for _ in 0..rounds {
        h = mix64(h);
    }
    h
}

/// The single-threaded reference: `phases` phases over the ring.
fn reference_state(init: &[u64], phases: u64, rounds: u64) -> Vec<u64> {
    let n = init.len();
    let (mut cur, mut next) = (init.to_vec(), vec![0u64; n]);
    for p in 0..phases {
        for j in 0..n {
            let (l, r) = (if j == 0 { n - 1 } else { j - 1 }, if j + 1 == n { 0 } else { j + 1 });
            next[j] = step(cur[l], cur[j], cur[r], p, rounds);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// What one thread measured in a sample.
#[derive(Clone, Copy, Debug, Default)]
struct ThreadTimes {
    start: u64,
    end: u64,
    wait_ns: u64,
}

/// The phase loop of one thread over cells `lo..hi`. Relaxed atomics are
/// enough: the barrier orders one phase's writes before the next phase's reads.
fn run_slice(
    bufs: &[Vec<AtomicU64>; 2],
    lo: usize,
    hi: usize,
    phases: u64,
    rounds: u64,
    barrier: &Barrier,
    stale_at: Option<u64>,
) -> ThreadTimes {
    let n = bufs[0].len();
    barrier.wait();
    let start = clock::now_ns();
    let mut wait_ns = 0;
    for p in 0..phases {
        let (src, dst) = (&bufs[(p % 2) as usize], &bufs[((p + 1) % 2) as usize]);
        for j in lo..hi {
            let (l, r) = (if j == 0 { n - 1 } else { j - 1 }, if j + 1 == n { 0 } else { j + 1 });
            let centre = if stale_at == Some(p) && j == lo { dst[j].load(Ordering::Relaxed) } else { src[j].load(Ordering::Relaxed) };
            dst[j].store(step(src[l].load(Ordering::Relaxed), centre, src[r].load(Ordering::Relaxed), p, rounds), Ordering::Relaxed);
        }
        let w = clock::now_ns();
        barrier.wait();
        wait_ns += clock::now_ns() - w;
    }
    ThreadTimes { start, end: clock::now_ns(), wait_ns }
}

/// The threads' times in one sample (the state it left is in the buffers).
struct Times {
    thread_ns: Vec<u64>,
    wait_ns: Vec<u64>,
    start_skew_ns: u64,
}

struct BarrierInstance {
    init: Vec<u64>,
    bufs: [Vec<AtomicU64>; 2],
    reference: Vec<u64>,
    rounds: u64,
    phases: u64,
    threads: usize,
    cpus: Vec<Option<usize>>,
    stale: bool,
}

impl BarrierInstance {
    /// One thread per entry of `cpus` (its CPU, when the cell pins).
    fn new(init: Vec<u64>, reference: Vec<u64>, rounds: u64, phases: u64, cpus: Vec<Option<usize>>, stale: bool) -> Self {
        let buf = || init.iter().map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        BarrierInstance { bufs: [buf(), buf()], init, reference, rounds, phases, threads: cpus.len(), cpus, stale }
    }

    fn slice(&self, i: usize) -> (usize, usize) {
        let n = self.init.len();
        (n * i / self.threads, n * (i + 1) / self.threads)
    }

    /// The state after the last sample's final phase.
    fn final_state(&self) -> impl Iterator<Item = u64> + '_ {
        self.bufs[(self.phases % 2) as usize].iter().map(|x| x.load(Ordering::Relaxed))
    }
}

impl Instance for BarrierInstance {
    type Outcome = Times;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Times)> {
        for (a, &v) in self.bufs[0].iter().zip(&self.init) {
            a.store(v, Ordering::Relaxed);
        }
        self.bufs[1].iter().for_each(|a| a.store(0, Ordering::Relaxed));
        let k = self.threads;
        let barrier = Barrier::new(k);
        let (bufs, phases, rounds) = (&self.bufs, self.phases, self.rounds);
        let t0 = clock::now_ns();
        // If spawning thread i fails, threads 0..i wait at the start barrier
        // for ever: the harness's per-cell timeout ends the worker (a failed
        // row), as for any other hang.
        let results: Vec<anyhow::Result<ThreadTimes>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..k)
                .map(|i| {
                    let (lo, hi) = self.slice(i);
                    let cpu = self.cpus[i];
                    let stale_at = (self.stale && i == 0).then_some(phases / 2);
                    let barrier = &barrier;
                    std::thread::Builder::new()
                        .name(format!("barrier-{i}"))
                        .spawn_scoped(s, move || {
                            // A pinning failure must still reach the barrier, or the others wait forever.
                            let pinned = cpu.map(affinity::pin_current_thread).transpose();
                            let times = run_slice(bufs, lo, hi, phases, rounds, barrier, stale_at);
                            pinned.with_context(|| format!("pinning thread {i} to CPU {cpu:?}"))?;
                            Ok(times)
                        })
                        .with_context(|| format!("spawning thread {i}"))
                })
                .collect::<anyhow::Result<_>>()?;
            Ok::<_, anyhow::Error>(handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("a phase thread panicked"))?).collect())
        })?;
        let t1 = clock::now_ns();
        let (mut first_start, mut last_start, mut last_end) = (u64::MAX, 0u64, 0u64);
        let mut last = Times { thread_ns: Vec::with_capacity(k), wait_ns: Vec::with_capacity(k), start_skew_ns: 0 };
        for r in results {
            let t = r?;
            first_start = first_start.min(t.start);
            last_start = last_start.max(t.start);
            last_end = last_end.max(t.end);
            last.thread_ns.push(t.end - t.start);
            last.wait_ns.push(t.wait_ns);
        }
        last.start_skew_ns = last_start - first_start;
        timer.record_work(last_end.saturating_sub(first_start));
        timer.record_total(t1 - t0);
        Ok((Work::ops(self.init.len() as u64 * self.phases), last))
    }

    fn verify(&mut self, _: &Times) -> Check {
        let expected = format!("the reference state after {} phases (single-threaded, {} cells)", self.phases, self.reference.len());
        let mut wrong = Mismatches::new();
        for (j, (got, &want)) in self.final_state().zip(&self.reference).enumerate() {
            if got != want {
                wrong.record(|| (j, want, got));
            }
        }
        let observed = match wrong.first {
            None => "the same state".to_string(),
            Some((j, want, got)) => format!("{} cells differ (first: cell {j}, expected {want:#018x}, got {got:#018x})", wrong.count),
        };
        Check { passed: wrong.is_empty(), expected, observed }
    }

    fn details(&self, last: Option<&Times>) -> serde_json::Value {
        let checksum = self.reference.iter().enumerate().fold(0u64, |s, (j, &v)| s.wrapping_add(mix64(v ^ j as u64)));
        json!({
            "cells": self.init.len(),
            "phases": self.phases,
            "work_rounds": self.rounds,
            "cells_per_thread": (0..self.threads).map(|i| { let (lo, hi) = self.slice(i); hi - lo }).collect::<Vec<_>>(),
            "reference_checksum": format!("{checksum:#018x}"),
            "last_sample_thread_ns": last.map(|l| l.thread_ns.clone()),
            "last_sample_thread_wait_ns": last.map(|l| l.wait_ns.clone()),
            "last_sample_start_skew_ns": last.map(|l| l.start_skew_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(threads: usize, cells: usize, phases: u64, stale: bool) -> BarrierInstance {
        let init: Vec<u64> = (0..cells as u64).map(|j| mix64(j + 99)).collect();
        let reference = reference_state(&init, phases, 2);
        BarrierInstance::new(init, reference, 2, phases, vec![None; threads], stale)
    }

    #[test]
    fn one_two_and_more_threads_reach_the_reference_with_both_windows() {
        for (k, cells, phases) in [(1, 64, 10), (2, 64, 11), (2, 3, 4), (3, 100, 1), (4, 5, 6)] {
            let mut inst = instance(k, cells, phases, false);
            for _ in 0..2 {
                let mut t = Timer::new();
                let (w, l) = inst.sample(1, &mut t).unwrap();
                assert_eq!(w, Work::ops(cells as u64 * phases));
                let v = inst.verify(&l);
                assert!(v.passed, "{k} threads, {cells} cells, {phases} phases: {v:?}");
                let (work, total) = (t.work_ns().unwrap(), t.total_ns().unwrap());
                assert!(work <= total, "work {work} > total {total}");
                assert_eq!((l.thread_ns.len(), l.wait_ns.len()), (k, k));
            }
            assert_eq!(
                inst.details(None)["cells_per_thread"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>(),
                cells as u64
            );
        }
    }

    #[test]
    fn a_stale_read_fails_the_verifier() {
        for (k, phases) in [(1, 1), (1, 10), (2, 10), (2, 2)] {
            let mut inst = instance(k, 64, phases, true);
            let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
            let v = inst.verify(&l);
            assert!(!v.passed && v.observed.contains("cells differ"), "{k} threads, {phases} phases: {v:?}");
        }
    }

    #[test]
    fn a_wrong_state_fails_the_verifier() {
        let mut inst = instance(2, 64, 5, false);
        let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify(&l).passed);
        inst.bufs[1][17].fetch_xor(1, Ordering::Relaxed);
        let v = inst.verify(&l);
        assert!(!v.passed && v.observed.starts_with("1 cells differ (first: cell 17"), "{v:?}");
        // One phase too few is a different state.
        inst.reference = reference_state(&inst.init, 4, 2);
        inst.bufs[1][17].fetch_xor(1, Ordering::Relaxed);
        assert!(!inst.verify(&l).passed);
    }

    #[test]
    fn the_stencil_reads_both_neighbours_and_the_phase() {
        assert_ne!(step(1, 2, 3, 0, 1), step(1, 2, 4, 0, 1));
        assert_ne!(step(1, 2, 3, 0, 1), step(0, 2, 3, 0, 1));
        assert_ne!(step(1, 2, 3, 0, 1), step(1, 2, 3, 1, 1));
        assert_ne!(step(1, 2, 3, 0, 1), step(1, 2, 3, 0, 2));
        // On a ring of one cell, the neighbours are the cell itself.
        let one = reference_state(&[5], 1, 1);
        assert_eq!(one, vec![step(5, 5, 5, 0, 1)]);
    }
}
