//! `cpu.checksum`: sibling threads of one process checksum fixed-size blocks
//! (the capOS thread-scale workload): a work window around the checksum
//! computation and a total window around spawn + work + join.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail};
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::mix64;
use crate::measure::{affinity, clock};
use crate::model::{Cell, Profile, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct Checksum;

impl Workload for Checksum {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "cpu.checksum",
            group: "cpu",
            summary: "Sibling threads in one process checksum fixed-size blocks",
            measures: "thread-level CPU scaling inside one process: placement and dispatch of sibling threads (work window) \
                       and the cost of their lifecycle (total window)",
            unit: Unit::Ns,
            timed_region: "the checksum computation: from the first thread starting its blocks to the last one finishing \
                           (CLOCK_MONOTONIC in each thread); input generation and the reference checksum are outside",
            total_window: Some("spawn of every thread, the work, and the parent's join of all of them"),
            verifier: "the root checksum (wrapping sum over blocks of mix(block index, block hash)) equals the one a single \
                       thread computed over the same blocks during prepare",
            batched: false,
            params: vec![
                // The seed profile sweeps capOS's default shape and its
                // larger-workload Amdahl row (1,048,576 blocks): two series
                // of the scaling table, whose serial fractions tell serial
                // work from overhead.
                ParamSpec::int("blocks", "number of blocks (blocks x block_bytes of input)", 1, 1 << 26, [65_536, 1_048_576, 262_144])
                    .with_values(Profile::Seed, vec![262_144.into(), 1_048_576.into()]),
                ParamSpec::int("block_bytes", "bytes per block (a multiple of 8)", 8, 1 << 20, [64, 64, 64]),
                ParamSpec::int("work_rounds", "passes of the hash over each block", 1, 1 << 16, [64, 64, 64]),
                ParamSpec::choice_of(
                    "parent_wait",
                    "how the parent waits: blocking join, or spinning on a counter then joining",
                    [ParentWait::Join; 3],
                ),
                ParamSpec::workers("sibling threads, each checksumming a contiguous share of the blocks"),
            ],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let blocks = cell.usize("blocks")?;
        let block_bytes = cell.usize("block_bytes")?;
        if block_bytes % 8 != 0 {
            bail!("block_bytes = {block_bytes} is not a multiple of 8");
        }
        let words_per_block = block_bytes / 8;
        let rounds = cell.u64("work_rounds")?;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(cell.seed);
        let data: Vec<u64> = (0..blocks * words_per_block).map(|_| rng.next_u64()).collect();
        let reference = range_checksum(&data, words_per_block, 0, blocks, rounds);
        Ok(Prepared::ready(ChecksumInstance {
            data,
            words_per_block,
            blocks,
            rounds,
            threads: cell.worker_count(),
            cpus: (0..cell.worker_count()).map(|i| cell.cpu_for(i)).collect(),
            spin: cell.choice::<ParentWait>("parent_wait")? == ParentWait::Spin,
            reference,
        }))
    }
}

named_enum! {
    /// How the parent waits for its threads.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum ParentWait {
        Join = "join",
        Spin = "spin",
    }
}

/// The hash of one block: `rounds` passes of a multiply-rotate chain over its
/// words. Each step depends on the previous one, so the passes cannot be
/// folded away.
#[inline]
fn block_hash(words: &[u64], rounds: u64, block: u64) -> u64 {
    let mut h = block ^ 0xCBF2_9CE4_8422_2325;
    for r in 0..rounds {
        for &w in words {
            h = (h ^ w ^ r).wrapping_mul(0x0000_0100_0000_01B3).rotate_left(29);
        }
    }
    h
}

/// Wrapping sum of mix(block, hash) over blocks `first..last`: independent of
/// how the blocks are split, and changed by a block missed or counted twice.
fn range_checksum(data: &[u64], words_per_block: usize, first: usize, last: usize, rounds: u64) -> u64 {
    let mut sum = 0u64;
    for b in first..last {
        let words = &data[b * words_per_block..(b + 1) * words_per_block];
        sum = sum.wrapping_add(mix64(block_hash(words, rounds, b as u64) ^ (b as u64).rotate_left(32)));
    }
    sum
}

/// What one sample computed.
struct Outcome {
    root: u64,
    thread_ns: Vec<u64>,
    start_skew_ns: u64,
}

struct ChecksumInstance {
    data: Vec<u64>,
    words_per_block: usize,
    blocks: usize,
    rounds: u64,
    threads: usize,
    cpus: Vec<Option<usize>>,
    spin: bool,
    reference: u64,
}

impl Instance for ChecksumInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (data, wpb, rounds, k, blocks) = (&self.data, self.words_per_block, self.rounds, self.threads, self.blocks);
        let done = AtomicUsize::new(0);
        let t0 = clock::now_ns();
        let results: Vec<anyhow::Result<(u64, u64, u64)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..k)
                .map(|i| {
                    let (first, last) = (blocks * i / k, blocks * (i + 1) / k);
                    let cpu = self.cpus[i];
                    let done = &done;
                    std::thread::Builder::new()
                        .name(format!("checksum-{i}"))
                        .spawn_scoped(s, move || {
                            if let Some(c) = cpu {
                                affinity::pin_current_thread(c).with_context(|| format!("pinning thread {i} to CPU {c}"))?;
                            }
                            let a = clock::now_ns();
                            let sum = range_checksum(data, wpb, first, last, rounds);
                            let b = clock::now_ns();
                            done.fetch_add(1, Ordering::Release);
                            Ok((sum, a, b))
                        })
                        .with_context(|| format!("spawning thread {i}"))
                })
                .collect::<anyhow::Result<_>>()?;
            if self.spin {
                while done.load(Ordering::Acquire) < k {
                    spin_loop();
                }
            }
            Ok::<_, anyhow::Error>(
                handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("a checksum thread panicked"))?).collect(),
            )
        })?;
        let t1 = clock::now_ns();
        let mut root = 0u64;
        let (mut first_start, mut last_end, mut last_start) = (u64::MAX, 0u64, 0u64);
        let mut thread_ns = Vec::with_capacity(k);
        for r in results {
            let (sum, a, b) = r?;
            root = root.wrapping_add(sum);
            first_start = first_start.min(a);
            last_start = last_start.max(a);
            last_end = last_end.max(b);
            thread_ns.push(b - a);
        }
        timer.record_work(last_end.saturating_sub(first_start));
        timer.record_total(t1 - t0);
        let outcome = Outcome { root, thread_ns, start_skew_ns: last_start - first_start };
        Ok((Work { ops: blocks as u64, bytes: (self.data.len() * 8) as u64 }, outcome))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("{:#018x} (single-threaded reference)", self.reference);
        Check { passed: l.root == self.reference, expected, observed: format!("{:#018x}", l.root) }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "input_bytes": self.data.len() * 8,
            "blocks_per_thread": (0..self.threads).map(|i| self.blocks * (i + 1) / self.threads - self.blocks * i / self.threads).collect::<Vec<_>>(),
            "reference_checksum": format!("{:#018x}", self.reference),
            "last_sample_thread_ns": last.map(|l| l.thread_ns.clone()),
            "last_sample_start_skew_ns": last.map(|l| l.start_skew_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(threads: usize, spin: bool) -> ChecksumInstance {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
        let data: Vec<u64> = (0..1000 * 2).map(|_| rng.next_u64()).collect();
        let reference = range_checksum(&data, 2, 0, 1000, 3);
        ChecksumInstance { data, words_per_block: 2, blocks: 1000, rounds: 3, threads, cpus: vec![None; threads], spin, reference }
    }

    #[test]
    fn every_split_gives_the_reference_and_both_windows() {
        for (k, spin) in [(1, false), (2, false), (3, true), (7, false)] {
            let mut inst = instance(k, spin);
            let mut t = Timer::new();
            let (w, out) = inst.sample(1, &mut t).unwrap();
            assert_eq!(w.ops, 1000);
            assert!(inst.verify(&out).passed, "{k} threads");
            let (work, total) = (t.work_ns().unwrap(), t.total_ns().unwrap());
            assert!(work <= total, "work {work} > total {total}");
            assert_eq!(out.thread_ns.len(), k);
        }
    }

    #[test]
    fn the_verifier_fails_when_a_block_is_missed_or_changed() {
        let mut inst = instance(2, false);
        let missing_one = range_checksum(&inst.data, 2, 0, 999, 3);
        assert!(!inst.verify(&Outcome { root: missing_one, thread_ns: vec![], start_skew_ns: 0 }).passed);
        let mut data = inst.data.clone();
        data[17] ^= 1;
        assert!(!inst.verify(&Outcome { root: range_checksum(&data, 2, 0, 1000, 3), thread_ns: vec![], start_skew_ns: 0 }).passed);
    }

    #[test]
    fn the_hash_depends_on_rounds_block_index_and_contents() {
        let w = [1u64, 2, 3];
        assert_ne!(block_hash(&w, 1, 0), block_hash(&w, 2, 0));
        assert_ne!(block_hash(&w, 1, 0), block_hash(&w, 1, 1));
        assert_ne!(block_hash(&w, 1, 0), block_hash(&[1, 2, 4], 1, 0));
    }
}
