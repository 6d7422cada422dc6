//! `alloc.random-mixed`: HAKMEM's random-mixed benchmark. One thread, a
//! slot array; each step picks a random slot (seeded), frees the block there
//! and allocates a new one of the size parameter. Its `iterations` axis shows
//! how much a short run's figure owes to start-up (the report's cold-start
//! factor).

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::allocator::{self, Allocator};
use super::block::{self, Block, Fill, Tally, below};
use crate::model::{Cell, Profile};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

/// The range of `size=mixed`.
pub const MIXED: (u32, u32) = (16, 1024);
/// Salt of the size stream (the slot stream uses the cell's seed).
const SIZE_STREAM: u64 = 0x51CE_D00D;

pub struct RandomMixed;

impl Workload for RandomMixed {
    fn spec(&self) -> WorkloadSpec {
        let its = |v: &[i64]| v.iter().map(|&i| i.into()).collect::<Vec<Value>>();
        let sizes = |v: &[&str]| v.iter().map(|&s| s.into()).collect::<Vec<Value>>();
        WorkloadSpec {
            id: "alloc.random-mixed",
            group: "alloc",
            summary: "One thread frees and allocates blocks at random slots of a small working set",
            measures: "an allocator's single-thread malloc + free fast path with a randomly recycled working set, and, \
                       over the iterations axis, how much of a short run's figure is start-up",
            unit: Unit::OpsPerSec,
            timed_region: "one sample is one run from an empty slot array: `iterations` steps, each drawing a slot \
                           (xoshiro256++ from the cell's seed, the same sequence every sample), checking and freeing the \
                           block it holds (none on a slot's first visit), allocating a block of the size parameter and \
                           writing its pattern; then every block still live is checked and freed. So the window holds \
                           exactly `iterations` mallocs and frees (one op = one malloc + one free). The slot array comes \
                           from prepare; nothing else is allocated in the window",
            total_window: None,
            verifier: "before every free the block's pattern (from its id: the sample and step that allocated it) reads \
                       back intact; mallocs = frees = iterations; the blocks live after the last step equal the distinct \
                       slots the seeded sequence visits, counted in prepare by replaying it without allocating",
            batched: false,
            params: vec![
                ParamSpec::choice(
                    "size",
                    "block size in bytes, or mixed (uniform in 16..=1024)",
                    &["16", "32", "64", "128", "256", "512", "1024", "2048", "4096", "mixed"],
                    ["256"; 3],
                )
                .with_values(Profile::Full, sizes(&["128", "256", "512", "1024", "mixed"]))
                .with_values(Profile::Seed, sizes(&["128", "256", "512", "1024"])),
                ParamSpec::int("iterations", "steps of one sample (one malloc and one free each)", 1, 1 << 34, [100_000; 3])
                    .with_values(Profile::Quick, its(&[100_000, 1_000_000]))
                    .with_values(Profile::Full, its(&[100_000, 1_000_000, 10_000_000]))
                    .with_values(Profile::Seed, its(&[100_000, 10_000_000])),
                ParamSpec::int("slots", "live blocks at most: the working set", 1, 1 << 24, [256; 3]),
                super::fill_param(),
                allocator::param(),
            ],
            faults: &["corrupt-block"],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let resolved = allocator::resolve(cell)?;
        let size_text = cell.str("size")?.to_string();
        let sizes = if size_text == "mixed" {
            MIXED
        } else {
            let s: u32 = size_text.parse().map_err(|_| anyhow::anyhow!("size '{size_text}' is not a number or mixed"))?;
            (s, s)
        };
        let iterations = cell.u64("iterations")?;
        let slots = cell.usize("slots")?;
        Ok(Prepared::ready(RandomMixedInstance {
            alloc: resolved.alloc,
            info: resolved.info,
            size_text,
            sizes,
            iterations,
            fill: super::fill_of(cell)?,
            seed: cell.seed,
            expected_live: distinct_slots(cell.seed, iterations, slots),
            slots: vec![Block::EMPTY; slots],
            corrupt: cx.fault_is("corrupt-block"),
            samples: 0,
        }))
    }
}

/// The slot sequence of a sample: the same every sample.
fn slot_stream(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// How many distinct slots `iterations` draws of the sequence visit, found
/// without allocating anything.
pub fn distinct_slots(seed: u64, iterations: u64, slots: usize) -> u64 {
    let mut seen = vec![false; slots];
    let mut rng = slot_stream(seed);
    let mut n = 0;
    for _ in 0..iterations {
        let i = below(rng.next_u64(), slots as u64) as usize;
        n += u64::from(!seen[i]);
        seen[i] = true;
    }
    n
}

/// What one sample did.
#[derive(Clone, Copy, Debug)]
struct Outcome {
    tally: Tally,
    /// Blocks live after the last step (freed at the end of the window).
    live: u64,
}

struct RandomMixedInstance {
    alloc: Allocator,
    info: Value,
    size_text: String,
    /// Block sizes drawn uniformly in `sizes.0..=sizes.1`.
    sizes: (u32, u32),
    iterations: u64,
    fill: Fill,
    seed: u64,
    expected_live: u64,
    /// Empty between samples.
    slots: Vec<Block>,
    corrupt: bool,
    samples: u64,
}

/// The state the steps of one sample share.
struct Steps<'a> {
    alloc: Allocator,
    fill: Fill,
    salt: u64,
    slots: &'a mut [Block],
    slot_rng: Xoshiro256PlusPlus,
    size_rng: Xoshiro256PlusPlus,
    lo: u32,
    span: u64,
    tally: Tally,
    /// Slot of the last block allocated.
    last_slot: usize,
}

impl Steps<'_> {
    /// Steps `first..end` (ids `id_base + step`). `MIXED` draws each size,
    /// otherwise every block has `lo` bytes; `FULL` fills whole blocks. The
    /// loop state lives in locals (registers), written back at the end.
    /// Stops at a failed malloc, returning its step.
    #[inline(never)]
    fn run<const MIXED: bool, const FULL: bool>(&mut self, first: u64, end: u64, id_base: u64) -> Result<(), u64> {
        let fill = if FULL { Fill::Full } else { Fill::Ends };
        let (alloc, salt, lo, span) = (self.alloc, self.salt, self.lo, self.span);
        let mut slot_rng = self.slot_rng.clone();
        let mut size_rng = self.size_rng.clone();
        let mut tally = self.tally;
        let mut last_slot = self.last_slot;
        let slots = &mut *self.slots;
        let n = slots.len() as u64;
        let mut outcome = Ok(());
        for step in first..end {
            let i = below(slot_rng.next_u64(), n) as usize;
            let old = slots[i];
            if !old.is_empty() {
                // SAFETY: a live block of `old.size` bytes, freed once here.
                unsafe {
                    tally.checked(&old, block::check(old.ptr, old.size as usize, block::base(salt, old.id), fill));
                    alloc.free(old.ptr);
                }
                tally.frees += 1;
            }
            let size = if MIXED { lo + below(size_rng.next_u64(), span) as u32 } else { lo };
            // SAFETY: a fresh allocation, written within its size.
            let p = unsafe { alloc.malloc(size as usize) };
            if p.is_null() {
                slots[i] = Block::EMPTY;
                outcome = Err(step);
                break;
            }
            let id = id_base + step;
            // SAFETY: `p` holds `size` bytes.
            unsafe { block::write(p, size as usize, block::base(salt, id), fill) };
            tally.mallocs += 1;
            slots[i] = Block { ptr: p, size, id };
            last_slot = i;
        }
        self.slot_rng = slot_rng;
        self.size_rng = size_rng;
        self.tally = tally;
        self.last_slot = last_slot;
        outcome
    }

    fn run_any(&mut self, first: u64, end: u64, id_base: u64) -> Result<(), u64> {
        match (self.span > 1, self.fill == Fill::Full) {
            (true, true) => self.run::<true, true>(first, end, id_base),
            (true, false) => self.run::<true, false>(first, end, id_base),
            (false, true) => self.run::<false, true>(first, end, id_base),
            (false, false) => self.run::<false, false>(first, end, id_base),
        }
    }

    /// Checks and frees every live block; returns how many there were.
    fn drain(&mut self) -> u64 {
        let mut live = 0;
        for b in self.slots.iter_mut().filter(|b| !b.is_empty()) {
            // SAFETY: a live block, freed once here.
            unsafe {
                self.tally.checked(b, block::check(b.ptr, b.size as usize, block::base(self.salt, b.id), self.fill));
                self.alloc.free(b.ptr);
            }
            self.tally.frees += 1;
            live += 1;
            *b = Block::EMPTY;
        }
        live
    }
}

impl Instance for RandomMixedInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        self.samples += 1;
        let id_base = self.samples << 40;
        let n = self.iterations;
        let mut st = Steps {
            alloc: self.alloc,
            fill: self.fill,
            salt: self.seed,
            slots: &mut self.slots,
            slot_rng: slot_stream(self.seed),
            size_rng: Xoshiro256PlusPlus::seed_from_u64(self.seed ^ SIZE_STREAM),
            lo: self.sizes.0,
            span: u64::from(self.sizes.1 - self.sizes.0) + 1,
            tally: Tally::default(),
            last_slot: 0,
        };
        timer.start();
        let mut outcome = st.run_any(0, n / 2, id_base);
        if outcome.is_ok() && self.corrupt && n / 2 > 0 {
            // The fault: damage the block the middle step allocated.
            // SAFETY: the block in `last_slot` is live.
            unsafe { block::corrupt(&st.slots[st.last_slot]) };
        }
        if outcome.is_ok() {
            outcome = st.run_any(n / 2, n, id_base);
        }
        let live = st.drain();
        timer.stop();
        let tally = st.tally;
        if let Err(step) = outcome {
            anyhow::bail!("malloc returned null at step {step} of {n}");
        }
        Ok((Work::ops(n), Outcome { tally, live }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let n = self.iterations;
        let expected = format!(
            "0 damaged; {n} mallocs and {n} frees; {} blocks live after the last step (distinct slots of the seeded sequence)",
            self.expected_live
        );
        let t = &l.tally;
        Check {
            passed: t.damaged == 0 && t.mallocs == n && t.frees == n && l.live == self.expected_live,
            expected,
            observed: format!(
                "{}; {} mallocs and {} frees; {} blocks live after the last step",
                t.damaged_text(),
                t.mallocs,
                t.frees,
                l.live
            ),
        }
    }

    fn details(&self, _: Option<&Outcome>) -> Value {
        let d = json!({
            "iterations": self.iterations,
            "size": self.size_text,
            "size_range": [self.sizes.0, self.sizes.1],
            "slots": self.slots.len(),
            "expected_live_blocks": self.expected_live,
        });
        super::details(d, self.fill, &self.info)
    }
}

impl Drop for RandomMixedInstance {
    fn drop(&mut self) {
        for b in self.slots.iter().filter(|b| !b.is_empty()) {
            // SAFETY: live blocks left by a sample that failed; freed once.
            unsafe { self.alloc.free(b.ptr) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(alloc: Allocator, sizes: (u32, u32), iterations: u64, slots: usize, corrupt: bool) -> RandomMixedInstance {
        RandomMixedInstance {
            alloc,
            info: Value::Null,
            size_text: String::new(),
            sizes,
            iterations,
            fill: Fill::Ends,
            seed: 11,
            expected_live: distinct_slots(11, iterations, slots),
            slots: vec![Block::EMPTY; slots],
            corrupt,
            samples: 0,
        }
    }

    #[test]
    fn every_allocator_passes_with_fixed_and_mixed_sizes_and_either_fill() {
        for alloc in [Allocator::libc(), Allocator::mimalloc(), Allocator::jemalloc()] {
            for (sizes, fill) in
                [((256, 256), Fill::Ends), (MIXED, Fill::Ends), ((1, 1), Fill::Ends), ((256, 256), Fill::Full), (MIXED, Fill::Full)]
            {
                let mut inst = instance(alloc, sizes, 5_000, 64, false);
                inst.fill = fill;
                for _ in 0..2 {
                    let mut t = Timer::new();
                    let (w, out) = inst.sample(1, &mut t).unwrap();
                    assert_eq!(w, Work::ops(5_000));
                    assert!(t.work_ns().is_some());
                    let v = inst.verify(&out);
                    assert!(v.passed, "{alloc:?} {sizes:?} {fill:?}: {v:?}");
                }
                assert!(inst.slots.iter().all(Block::is_empty), "the window frees every block");
            }
        }
    }

    #[test]
    fn a_corrupted_block_fails_the_verifier() {
        let mut inst = instance(Allocator::libc(), (128, 128), 2_000, 16, true);
        let (_, out) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.starts_with("1 damaged (first: block 0x100000003e7"), "{}", v.observed);
    }

    #[test]
    fn wrong_counts_fail_the_verifier() {
        let mut inst = instance(Allocator::libc(), (64, 64), 1_000, 8, false);
        let (_, good) = inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify(&good).passed);
        assert!(!inst.verify(&Outcome { live: good.live - 1, ..good }).passed, "a block lost");
        assert!(!inst.verify(&Outcome { tally: Tally { frees: good.tally.frees - 1, ..good.tally }, ..good }).passed, "a free missing");
    }

    #[test]
    fn the_distinct_slot_count_is_that_of_the_sequence() {
        assert_eq!(distinct_slots(1, 0, 10), 0);
        assert_eq!(distinct_slots(1, 1, 10), 1);
        assert_eq!(distinct_slots(1, 100_000, 256), 256, "100,000 draws visit all 256 slots");
        let few = distinct_slots(1, 20, 1 << 20);
        assert!((19..=20).contains(&few), "{few}");
    }
}
