//! `alloc.larson`: Larson and Krishnan's server simulation, as mimalloc-bench
//! runs it. Each of `workers` chains owns a slice of blocks that another
//! thread allocated; its thread repeatedly frees a random victim and
//! allocates a block of random size in its place, and after `rounds x
//! blocks_per_thread` operations hands the slice to a newly spawned thread and
//! ends, so blocks outlive the threads that made them. A sample lasts a fixed
//! duration.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::allocator::{self, Allocator};
use super::block::{self, Block, Fill, Tally, below};
use crate::measure::{affinity, clock};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;

pub struct Larson;

impl Workload for Larson {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "alloc.larson",
            group: "alloc",
            summary: "Larson's server simulation: threads free and allocate random blocks of slices that outlive them",
            measures: "an allocator under a server-like load: frees of blocks another (often ended) thread allocated, \
                       random sizes, short-lived threads, in malloc + free pairs per second",
            unit: Unit::OpsPerSec,
            timed_region: "from spawning the first thread of every chain to the return of every chain's slice after the \
                           stop flag, which the sampling thread raises after `duration_ms`: each thread's loop of victim \
                           check + free + malloc of a random size + pattern write (one op = one malloc + one free), the \
                           successors' spawns and the threads' exits. The slices' first blocks are allocated in prepare, \
                           by the sampling thread; the blocks stay live from one sample to the next",
            total_window: None,
            verifier: "before every free the victim's pattern (from its id: chain and sequence number) reads back intact; \
                       after the sample every slot of every slice holds a live block whose pattern reads back intact: \
                       workers x blocks_per_thread blocks, the expected count",
            batched: false,
            params: vec![
                ParamSpec::int("duration_ms", "length of one sample (Larson's sleep)", 1, 3_600_000, [100, 1_000, 10_000]),
                super::size_range_params()[0].clone(),
                super::size_range_params()[1].clone(),
                ParamSpec::int(
                    "blocks_per_thread",
                    "blocks in each chain's slice (Larson's chunks per thread)",
                    1,
                    1 << 24,
                    [5_000, 5_000, 10_000],
                ),
                ParamSpec::int(
                    "rounds",
                    "a thread does rounds x blocks_per_thread operations, then hands its slice to a new thread",
                    1,
                    1 << 24,
                    [100, 100, 10_000],
                ),
                super::fill_param(),
                ParamSpec::workers("chains: threads running at once, each on its own slice (worker i pinned like the cell says)"),
                allocator::param(),
            ],
            faults: &["corrupt-block"],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let resolved = allocator::resolve(cell)?;
        let (lo, hi) = super::size_range_of(cell)?;
        let per_slice = cell.usize("blocks_per_thread")?;
        let fill = super::fill_of(cell)?;
        let workers = cell.worker_count();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            alloc: resolved.alloc,
            fill,
            salt: cell.seed,
            lo,
            span: u64::from(hi - lo) + 1,
            ops_per_thread: cell.u64("rounds")?.saturating_mul(per_slice as u64),
            cpus: (0..workers).map(|i| cell.cpu_for(i)).collect(),
        });
        let mut chains = Vec::with_capacity(workers);
        for c in 0..workers {
            let mut chain = Chain {
                index: c,
                blocks: Vec::with_capacity(per_slice),
                rng: Xoshiro256PlusPlus::seed_from_u64(mix64(cell.seed ^ c as u64)),
                next_seq: 0,
                tally: Tally::default(),
                threads: 0,
            };
            // Larson's warmup: the slices' first blocks come from this thread.
            for _ in 0..per_slice {
                let b = chain.allocate(&shared).ok_or_else(|| anyhow::anyhow!("malloc returned null while filling the slices"))?;
                chain.blocks.push(b);
            }
            chain.tally = Tally::default();
            chains.push(chain);
        }
        Ok(Prepared::ready(LarsonInstance {
            shared,
            info: resolved.info,
            chains,
            per_slice,
            duration: Duration::from_millis(cell.u64("duration_ms")?),
            corrupt: cx.fault_is("corrupt-block"),
        }))
    }
}

/// What every thread of a sample shares.
struct Shared {
    stop: AtomicBool,
    alloc: Allocator,
    fill: Fill,
    salt: u64,
    lo: u32,
    span: u64,
    ops_per_thread: u64,
    cpus: Vec<Option<usize>>,
}

/// One chain: a slice of blocks and the thread-independent state that moves
/// from each thread to its successor.
struct Chain {
    index: usize,
    blocks: Vec<Block>,
    rng: Xoshiro256PlusPlus,
    /// Sequence number of the chain's next block (its id's low 40 bits).
    next_seq: u64,
    /// This sample's mallocs, frees and checks.
    tally: Tally,
    /// Threads that ran this chain in this sample.
    threads: u64,
}

impl Chain {
    /// Allocates a block of random size and writes its pattern.
    #[inline]
    fn allocate(&mut self, sh: &Shared) -> Option<Block> {
        let size = sh.lo + below(self.rng.next_u64(), sh.span) as u32;
        // SAFETY: a fresh allocation, written within its size.
        let p = unsafe { sh.alloc.malloc(size as usize) };
        if p.is_null() {
            return None;
        }
        let id = ((self.index as u64) << 40) | self.next_seq;
        self.next_seq += 1;
        // SAFETY: `p` holds `size` bytes.
        unsafe { block::write(p, size as usize, block::base(sh.salt, id), sh.fill) };
        self.tally.mallocs += 1;
        Some(Block { ptr: p, size, id })
    }

    /// One thread's share: up to `ops_per_thread` victim replacements, or
    /// until the stop flag. The loop state lives in locals (registers),
    /// written back at the end. Returns false on a failed malloc.
    #[inline(never)]
    fn exercise<const FULL: bool>(&mut self, sh: &Shared) -> bool {
        let fill = if FULL { Fill::Full } else { Fill::Ends };
        let (alloc, salt, lo, span) = (sh.alloc, sh.salt, sh.lo, sh.span);
        let id_high = (self.index as u64) << 40;
        let mut rng = self.rng.clone();
        let mut tally = self.tally;
        let mut seq = self.next_seq;
        let blocks = &mut self.blocks;
        let n = blocks.len() as u64;
        let mut ok = true;
        for _ in 0..sh.ops_per_thread {
            if sh.stop.load(Ordering::Relaxed) {
                break;
            }
            let v = below(rng.next_u64(), n) as usize;
            let old = blocks[v];
            // SAFETY: every slot of a slice holds a live block; freed once here.
            unsafe {
                tally.checked(&old, block::check(old.ptr, old.size as usize, block::base(salt, old.id), fill));
                alloc.free(old.ptr);
            }
            tally.frees += 1;
            let size = lo + below(rng.next_u64(), span) as u32;
            // SAFETY: a fresh allocation, written within its size.
            let p = unsafe { alloc.malloc(size as usize) };
            if p.is_null() {
                blocks.swap_remove(v);
                ok = false;
                break;
            }
            let id = id_high | seq;
            seq += 1;
            // SAFETY: `p` holds `size` bytes.
            unsafe { block::write(p, size as usize, block::base(salt, id), fill) };
            tally.mallocs += 1;
            blocks[v] = Block { ptr: p, size, id };
        }
        self.rng = rng;
        self.tally = tally;
        self.next_seq = seq;
        ok
    }
}

type Report = mpsc::Sender<anyhow::Result<Chain>>;

/// The body of every thread of a chain: work, then hand the slice on to a new
/// thread, or back to the sampling thread once the stop flag is up.
fn run_chain(mut chain: Chain, sh: Arc<Shared>, back: Report) {
    chain.threads += 1;
    if let Some(cpu) = sh.cpus[chain.index]
        && let Err(e) = affinity::pin_current_thread(cpu)
    {
        let _ = back.send(Err(anyhow::anyhow!("pinning chain {} to CPU {cpu}: {e}", chain.index)));
        return;
    }
    let done = if sh.fill == Fill::Full { chain.exercise::<true>(&sh) } else { chain.exercise::<false>(&sh) };
    if !done {
        let _ = back.send(Err(anyhow::anyhow!("malloc returned null in chain {}", chain.index)));
        return;
    }
    if sh.stop.load(Ordering::Relaxed) {
        let _ = back.send(Ok(chain));
        return;
    }
    let index = chain.index;
    let (sh2, back2) = (Arc::clone(&sh), back.clone());
    if let Err(e) = std::thread::Builder::new().name(format!("larson-{index}")).spawn(move || run_chain(chain, sh2, back2)) {
        let _ = back.send(Err(anyhow::anyhow!("spawning the next thread of chain {index}: {e}")));
    }
}

/// What one sample did.
struct Outcome {
    tally: Tally,
    /// Live blocks found after the sample, and how many of them were damaged.
    live: u64,
    live_damaged: u64,
    threads: Vec<u64>,
}

struct LarsonInstance {
    shared: Arc<Shared>,
    info: Value,
    /// Between samples, every chain's slice (all blocks live).
    chains: Vec<Chain>,
    per_slice: usize,
    duration: Duration,
    corrupt: bool,
}

impl Instance for LarsonInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let sh = &self.shared;
        sh.stop.store(false, Ordering::Relaxed);
        if self.corrupt
            && let Some(b) = self.chains.first().and_then(|c| c.blocks.first())
        {
            // The fault: damage one live block before the sample.
            // SAFETY: every block of a slice is live.
            unsafe { block::corrupt(b) };
        }
        let k = self.chains.len();
        let (tx, rx) = mpsc::channel::<anyhow::Result<Chain>>();
        let t0 = clock::now_ns();
        let mut spawn_error = None;
        for mut chain in self.chains.drain(..) {
            chain.tally = Tally::default();
            chain.threads = 0;
            let (sh2, back) = (Arc::clone(sh), tx.clone());
            let index = chain.index;
            if let Err(e) = std::thread::Builder::new().name(format!("larson-{index}")).spawn(move || run_chain(chain, sh2, back)) {
                spawn_error = Some(anyhow::anyhow!("spawning the first thread of chain {index}: {e}"));
                sh.stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        drop(tx);
        if spawn_error.is_none() {
            std::thread::sleep(self.duration);
        }
        sh.stop.store(true, Ordering::Relaxed);
        let mut back: Vec<Chain> = Vec::with_capacity(k);
        let mut errors = Vec::new();
        // Every thread either passes its chain on or sends it (or an error) back.
        for r in rx.iter() {
            match r {
                Ok(c) => back.push(c),
                Err(e) => errors.push(e),
            }
        }
        let t1 = clock::now_ns();
        back.sort_by_key(|c| c.index);
        self.chains = back;
        if let Some(e) = spawn_error.or_else(|| errors.into_iter().next()) {
            return Err(e).context("a Larson thread failed (its slice's blocks are lost)");
        }
        if self.chains.len() != k {
            anyhow::bail!("{} of {k} chains came back: a Larson thread ended without passing on its slice", self.chains.len());
        }
        timer.record_work(t1 - t0);
        let mut tally = Tally::default();
        let (mut live, mut live_damaged) = (0u64, 0u64);
        let mut check = Tally::default();
        for c in &self.chains {
            tally.add(&c.tally);
            for b in &c.blocks {
                // SAFETY: every block of a returned slice is live.
                let ok = !b.is_empty() && unsafe { block::check(b.ptr, b.size as usize, block::base(sh.salt, b.id), sh.fill) };
                check.checked(b, ok);
                live += 1;
            }
        }
        live_damaged += check.damaged;
        tally.first_damaged = tally.first_damaged.or(check.first_damaged);
        let ops = tally.frees;
        Ok((Work::ops(ops), Outcome { tally, live, live_damaged, threads: self.chains.iter().map(|c| c.threads).collect() }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let want = (self.shared.cpus.len() * self.per_slice) as u64;
        let expected = format!("0 damaged before their free or after the sample; {want} live blocks (workers x blocks_per_thread)");
        let damaged = Tally { damaged: l.tally.damaged + l.live_damaged, ..l.tally };
        Check {
            passed: damaged.damaged == 0 && l.live == want && l.tally.mallocs == l.tally.frees && l.tally.frees > 0,
            expected,
            observed: format!(
                "{}; {} live blocks; {} mallocs and {} frees in the sample",
                damaged.damaged_text(),
                l.live,
                l.tally.mallocs,
                l.tally.frees
            ),
        }
    }

    fn details(&self, last: Option<&Outcome>) -> Value {
        let sh = &self.shared;
        let d = json!({
            "chains": sh.cpus.len(),
            "blocks_per_thread": self.per_slice,
            "size_range": [sh.lo, sh.lo as u64 + sh.span - 1],
            "ops_per_thread": sh.ops_per_thread,
            "duration_ms": self.duration.as_millis() as u64,
            "last_sample_threads": last.map(|l| l.threads.clone()),
        });
        super::details(d, sh.fill, &self.info)
    }
}

impl Drop for LarsonInstance {
    fn drop(&mut self) {
        for b in self.chains.iter().flat_map(|c| c.blocks.iter()) {
            // SAFETY: the slices' live blocks, freed once at the end.
            unsafe { self.shared.alloc.free(b.ptr) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(alloc: Allocator, workers: usize, per_slice: usize, ops_per_thread: u64, corrupt: bool) -> LarsonInstance {
        filled(alloc, Fill::Ends, workers, per_slice, ops_per_thread, corrupt)
    }

    fn filled(alloc: Allocator, fill: Fill, workers: usize, per_slice: usize, ops_per_thread: u64, corrupt: bool) -> LarsonInstance {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            alloc,
            fill,
            salt: 5,
            lo: 8,
            span: 993,
            ops_per_thread,
            cpus: vec![None; workers],
        });
        let chains = (0..workers)
            .map(|c| {
                let mut ch = Chain {
                    index: c,
                    blocks: Vec::new(),
                    rng: Xoshiro256PlusPlus::seed_from_u64(c as u64),
                    next_seq: 0,
                    tally: Tally::default(),
                    threads: 0,
                };
                for _ in 0..per_slice {
                    let b = ch.allocate(&shared).unwrap();
                    ch.blocks.push(b);
                }
                ch
            })
            .collect();
        LarsonInstance { shared, info: Value::Null, chains, per_slice, duration: Duration::from_millis(30), corrupt }
    }

    #[test]
    fn chains_hand_their_slices_to_new_threads_and_every_block_survives() {
        for (alloc, fill) in [(Allocator::libc(), Fill::Ends), (Allocator::mimalloc(), Fill::Full), (Allocator::jemalloc(), Fill::Ends)] {
            let mut inst = filled(alloc, fill, 2, 200, 1_000, false);
            // Long enough that a loaded machine still runs each chain's first
            // thread through its 1,000 steps before the stop (30 ms was not).
            inst.duration = Duration::from_millis(400);
            for _ in 0..2 {
                let mut t = Timer::new();
                let (w, l) = inst.sample(1, &mut t).unwrap();
                assert!(w.ops > 0 && t.work_ns().unwrap() >= 400_000_000);
                let v = inst.verify(&l);
                assert!(v.passed, "{alloc:?}: {v:?}");
                assert!(l.threads.iter().all(|&t| t >= 2), "each chain passed through several threads: {:?}", l.threads);
            }
        }
    }

    #[test]
    fn a_corrupted_block_fails_the_verifier() {
        let mut inst = instance(Allocator::libc(), 1, 50, 1_000_000, true);
        let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&l);
        assert!(!v.passed);
        assert!(v.observed.starts_with("1 damaged (first: block 0x0,"), "{}", v.observed);
    }

    #[test]
    fn a_lost_block_fails_the_verifier() {
        let mut inst = instance(Allocator::libc(), 1, 50, 1_000, false);
        let (_, mut l) = inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify(&l).passed);
        l.live -= 1;
        let v = inst.verify(&l);
        assert!(!v.passed && v.observed.contains("49 live blocks"), "{v:?}");
    }
}
