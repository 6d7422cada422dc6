//! `alloc.xthread`: producer threads allocate blocks and send them, in
//! batches, through a bounded channel to consumer threads that free them: every
//! free is a cross-thread free, the path that thread-caching allocators must
//! route back to the block's owner.

use anyhow::Context;
use crossbeam::channel;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::allocator::{self, Allocator};
use super::block::{self, Block, Fill, Tally, below};
use crate::measure::{affinity, clock};
use crate::model::{Cell, Profile};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;

/// Blocks per message.
pub const BATCH: usize = 64;
/// Messages the channel holds (a bounded array channel: sending allocates nothing).
pub const QUEUE: usize = 16;

pub struct XThread;

impl Workload for XThread {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "alloc.xthread",
            group: "alloc",
            summary: "Producer threads allocate blocks, consumer threads free them (cross-thread frees through a channel)",
            measures: "an allocator's cost when every block is freed by a thread other than the one that allocated it \
                       (remote frees), with the hand-off through a bounded channel included",
            unit: Unit::OpsPerSec,
            timed_region: "from the first producer or consumer thread starting to the last one finishing (timestamps in \
                           the threads): producers allocate `blocks` blocks each of random size (min_size..=max_size), \
                           write their pattern and send them 64 to a message through a bounded channel of 16 messages \
                           (preallocated: sending allocates nothing); consumers receive, check and free every block. One \
                           op = one malloc + its free on another thread. Threads are not pinned (they may use every CPU \
                           the worker started with)",
            total_window: Some("spawning every producer and consumer, the work, and joining them"),
            verifier: "before every free the block's pattern (from its id: sample, producer and sequence number) reads back \
                       intact; blocks freed = producers x blocks; the wrapping sum of mix64(id) over the freed blocks \
                       equals the sum over the ids produced, computed from the ids alone; so no block is live at the end",
            batched: false,
            params: vec![
                ParamSpec::int("blocks", "blocks each producer allocates in one sample", 1, 1 << 31, [100_000, 1_000_000, 1_000_000]),
                ParamSpec::int("producers", "producer threads (allocate)", 1, 255, [1; 3]),
                ParamSpec::int("consumers", "consumer threads (free)", 1, 1 << 10, [1; 3])
                    .with_values(Profile::Full, vec![1.into(), 2.into()]),
                super::size_range_params()[0].clone(),
                super::size_range_params()[1].clone(),
                super::fill_param(),
                allocator::param(),
            ],
            faults: &["corrupt-block"],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let resolved = allocator::resolve(cell)?;
        let (lo, hi) = super::size_range_of(cell)?;
        Ok(Prepared::ready(XThreadInstance {
            cfg: Config {
                alloc: resolved.alloc,
                fill: super::fill_of(cell)?,
                salt: cell.seed,
                lo,
                span: u64::from(hi - lo) + 1,
                blocks: cell.u64("blocks")?,
                corrupt: cx.fault_is("corrupt-block"),
            },
            info: resolved.info,
            producers: cell.usize("producers")?,
            consumers: cell.usize("consumers")?,
            cpus: cx.allowed.clone(),
            samples: 0,
        }))
    }
}

/// What every thread of a sample reads.
#[derive(Clone, Copy)]
struct Config {
    alloc: Allocator,
    fill: Fill,
    salt: u64,
    lo: u32,
    span: u64,
    blocks: u64,
    corrupt: bool,
}

/// One message: up to [`BATCH`] blocks.
struct Batch {
    len: usize,
    blocks: [Block; BATCH],
}

/// A thread's account: its window and what it did.
struct ThreadOut {
    start: u64,
    end: u64,
    tally: Tally,
    /// Wrapping sum of mix64(id) over the blocks freed (consumers).
    id_sum: u64,
}

/// Id of producer `p`'s block `seq` in sample `sample`.
fn block_id(sample: u64, p: usize, seq: u64) -> u64 {
    (sample << 40) | ((p as u64) << 32) | seq
}

fn produce(cfg: Config, sample: u64, p: usize, tx: channel::Sender<Batch>) -> anyhow::Result<ThreadOut> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(cfg.salt ^ sample ^ ((p as u64) << 48)));
    let mut tally = Tally::default();
    let start = clock::now_ns();
    let mut seq = 0u64;
    while seq < cfg.blocks {
        let mut batch = Batch { len: 0, blocks: [Block::EMPTY; BATCH] };
        while batch.len < BATCH && seq < cfg.blocks {
            let size = cfg.lo + below(rng.next_u64(), cfg.span) as u32;
            // SAFETY: a fresh allocation, written within its size.
            let ptr = unsafe { cfg.alloc.malloc(size as usize) };
            if ptr.is_null() {
                anyhow::bail!("malloc returned null in producer {p} at block {seq}");
            }
            let id = block_id(sample, p, seq);
            // SAFETY: `ptr` holds `size` bytes.
            unsafe { block::write(ptr, size as usize, block::base(cfg.salt, id), cfg.fill) };
            batch.blocks[batch.len] = Block { ptr, size, id };
            batch.len += 1;
            seq += 1;
            tally.mallocs += 1;
        }
        if cfg.corrupt && p == 0 && seq <= BATCH as u64 {
            // The fault: damage the first block of the first message.
            // SAFETY: the block is live and owned by this message.
            unsafe { block::corrupt(&batch.blocks[0]) };
        }
        tx.send(batch).map_err(|_| anyhow::anyhow!("every consumer is gone"))?;
    }
    Ok(ThreadOut { start, end: clock::now_ns(), tally, id_sum: 0 })
}

fn consume(cfg: Config, rx: channel::Receiver<Batch>) -> ThreadOut {
    let mut tally = Tally::default();
    let mut id_sum = 0u64;
    let start = clock::now_ns();
    for batch in rx.iter() {
        for b in &batch.blocks[..batch.len] {
            // SAFETY: a live block handed over by a producer; freed once here.
            unsafe {
                tally.checked(b, block::check(b.ptr, b.size as usize, block::base(cfg.salt, b.id), cfg.fill));
                cfg.alloc.free(b.ptr);
            }
            tally.frees += 1;
            id_sum = id_sum.wrapping_add(mix64(b.id));
        }
    }
    ThreadOut { start, end: clock::now_ns(), tally, id_sum }
}

/// What one sample did.
struct Outcome {
    sample: u64,
    tally: Tally,
    id_sum: u64,
}

struct XThreadInstance {
    cfg: Config,
    info: Value,
    producers: usize,
    consumers: usize,
    /// The CPUs the worker started with: every thread may use them all.
    cpus: Vec<usize>,
    samples: u64,
}

impl XThreadInstance {
    fn unpin(cpus: &[usize]) -> anyhow::Result<()> {
        if !cpus.is_empty() {
            affinity::set_current_thread(cpus).context("setting a thread's CPUs to the worker's initial set")?;
        }
        Ok(())
    }
}

impl Instance for XThreadInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        self.samples += 1;
        let (cfg, sample, cpus) = (self.cfg, self.samples, &self.cpus);
        let (tx, rx) = channel::bounded::<Batch>(QUEUE);
        let t0 = clock::now_ns();
        let outs: Vec<anyhow::Result<ThreadOut>> = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for c in 0..self.consumers {
                let rx = rx.clone();
                let h = std::thread::Builder::new().name(format!("xthread-c{c}")).spawn_scoped(s, move || {
                    Self::unpin(cpus)?;
                    Ok(consume(cfg, rx))
                });
                handles.push(h.with_context(|| format!("spawning consumer {c}"))?);
            }
            drop(rx);
            for p in 0..self.producers {
                let tx = tx.clone();
                let h = std::thread::Builder::new().name(format!("xthread-p{p}")).spawn_scoped(s, move || {
                    Self::unpin(cpus)?;
                    produce(cfg, sample, p, tx)
                });
                handles.push(h.with_context(|| format!("spawning producer {p}"))?);
            }
            drop(tx);
            Ok::<_, anyhow::Error>(
                handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a thread panicked")))).collect(),
            )
        })?;
        let t1 = clock::now_ns();
        let (mut first, mut last_end) = (u64::MAX, 0u64);
        let mut tally = Tally::default();
        let mut id_sum = 0u64;
        for o in outs {
            let o = o?;
            first = first.min(o.start);
            last_end = last_end.max(o.end);
            tally.add(&o.tally);
            id_sum = id_sum.wrapping_add(o.id_sum);
        }
        timer.record_work(last_end.saturating_sub(first));
        timer.record_total(t1 - t0);
        Ok((Work::ops(self.producers as u64 * self.cfg.blocks), Outcome { sample, tally, id_sum }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let n = self.producers as u64 * self.cfg.blocks;
        let mut want_sum = 0u64;
        for p in 0..self.producers {
            for seq in 0..self.cfg.blocks {
                want_sum = want_sum.wrapping_add(mix64(block_id(l.sample, p, seq)));
            }
        }
        let t = &l.tally;
        Check {
            passed: t.damaged == 0 && t.mallocs == n && t.frees == n && l.id_sum == want_sum,
            expected: format!("0 damaged; {n} allocated and {n} freed (0 live); id sum {want_sum:#018x} (from the ids produced)"),
            observed: format!(
                "{}; {} allocated and {} freed ({} live); id sum {:#018x}",
                t.damaged_text(),
                t.mallocs,
                t.frees,
                t.mallocs.saturating_sub(t.frees),
                l.id_sum
            ),
        }
    }

    fn details(&self, _: Option<&Outcome>) -> Value {
        let c = &self.cfg;
        let d = json!({
            "producers": self.producers,
            "consumers": self.consumers,
            "blocks_per_producer": c.blocks,
            "batch_blocks": BATCH,
            "queue_messages": QUEUE,
            "size_range": [c.lo, c.lo as u64 + c.span - 1],
            "thread_cpus": self.cpus,
        });
        super::details(d, c.fill, &self.info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(alloc: Allocator, producers: usize, consumers: usize, blocks: u64, corrupt: bool) -> XThreadInstance {
        XThreadInstance {
            cfg: Config { alloc, fill: Fill::Full, salt: 3, lo: 8, span: 993, blocks, corrupt },
            info: Value::Null,
            producers,
            consumers,
            cpus: vec![],
            samples: 0,
        }
    }

    #[test]
    fn every_block_crosses_threads_and_is_freed_once() {
        for alloc in [Allocator::libc(), Allocator::mimalloc(), Allocator::jemalloc()] {
            for (p, c) in [(1, 1), (2, 3)] {
                let mut inst = instance(alloc, p, c, 1_000, false);
                let mut t = Timer::new();
                let (w, out) = inst.sample(1, &mut t).unwrap();
                assert_eq!(w, Work::ops(p as u64 * 1_000));
                assert!(t.work_ns().unwrap() <= t.total_ns().unwrap());
                let v = inst.verify(&out);
                assert!(v.passed, "{alloc:?} {p}/{c}: {v:?}");
            }
        }
    }

    #[test]
    fn a_corrupted_block_fails_the_verifier() {
        let mut inst = instance(Allocator::libc(), 1, 1, 500, true);
        let (_, out) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.starts_with("1 damaged (first: block 0x10000000000,"), "{}", v.observed);
    }

    #[test]
    fn a_lost_or_repeated_block_changes_the_id_sum() {
        let mut inst = instance(Allocator::libc(), 1, 1, 100, false);
        let (_, mut l) = inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify(&l).passed);
        l.id_sum = l.id_sum.wrapping_add(mix64(block_id(1, 0, 5)));
        assert!(!inst.verify(&l).passed, "block 5 counted twice");
    }

    #[test]
    fn ids_are_unique_per_sample_producer_and_sequence() {
        assert_ne!(block_id(1, 0, 1), block_id(1, 1, 1));
        assert_ne!(block_id(1, 0, 1), block_id(2, 0, 1));
    }
}
