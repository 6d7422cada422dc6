//! `rt.parallel-for`: a million tiny items summed in parallel, RustFiber's
//! batching benchmark. One operation is one item (adding its [`tally`] to a
//! total: a count and a sum of index + 1 in one word); the figure is ns per
//! item. The `mode` axis compares one task per item, each adding to a shared
//! atomic, with `4 x workers` chunks, each summing its range locally and
//! adding once.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use super::common::{TALLY_COUNT_BITS, TALLY_MAX_ITEMS, Tally, Windows, overhead_note, tally, timed_install};
use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct ParallelFor;

/// The faults: the last item, or item 0, adds nothing.
const FAULT: &str = "skip-item";
const LOSE_FIRST: &str = "lose-item-0";
/// Which item the timed loop loses (a const parameter: the normal loop has
/// no check).
const LOSE_NONE: u8 = 0;
const LOSE_LAST: u8 = 1;
const LOSE_ITEM_0: u8 = 2;
named_enum! {
    /// How the items are cut into tasks.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Mode {
        /// One task per item.
        PerItem = "per-item",
        /// 4 x workers tasks over contiguous ranges.
        Chunked = "chunked",
    }
}
/// Chunks per worker in `chunked` mode (RustFiber's choice).
const CHUNKS_PER_WORKER: usize = 4;

impl Workload for ParallelFor {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.parallel-for",
            group: "rt",
            summary: "Sum tiny items in parallel (a million in full and seed): one task per item, or 4 x workers chunks",
            measures: "what batching buys: per-item, the runtime's cost per task plus a contended atomic add per item; \
                       chunked, a local loop per chunk and one atomic add per chunk (ns per item in both)",
            unit: Unit::NsPerOp,
            timed_region: concat!(
                "inside the runtime's install, on the pool thread that runs it: for_each_task over the items (per-item) or \
                 the chunks (chunked), from the first task's creation to the last one's end; item i adds (i + 1) x 2^29 + 1 \
                 (read through black_box, so that the chunk loop stays a loop of items; a chunk steps from one item's value \
                 to the next by adding 2^29): the low 29 bits of the total count the items, the bits above sum i + 1; the \
                 runtime is built in prepare",
                overhead_note!()
            ),
            total_window: None,
            verifier: "the total's low 29 bits count `items` items and its high 35 bits sum to the closed form 1 + 2 + ... + \
                       items = items(items+1)/2 (mod 2^35): a lost item shows in both (item 0 included), a lost item plus a \
                       doubled one in the sum",
            batched: false,
            params: vec![
                ParamSpec::int("items", "items summed per sample", 2, TALLY_MAX_ITEMS as i64, [1_000_000, 1_000_000, 1_000_000]),
                ParamSpec::axis_of::<Mode>("mode", "per-item: one task per item; chunked: 4 x workers tasks"),
                runtime_param(&NAMES),
                ParamSpec::workers("worker threads of the runtime's pool"),
            ],
            faults: &[FAULT, LOSE_FIRST],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let chunked = cell.choice::<Mode>("mode")? == Mode::Chunked;
        let lose = if cx.fault_is(FAULT) {
            LOSE_LAST
        } else if cx.fault_is(LOSE_FIRST) {
            LOSE_ITEM_0
        } else {
            LOSE_NONE
        };
        let cfg = Config { items: cell.usize("items")?, chunked, lose };
        prepare_with(cell, !chunked, cfg)
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    items: usize,
    chunked: bool,
    /// The item the faults lose (`LOSE_*`).
    lose: u8,
}

impl Config {
    fn expected(&self) -> Tally {
        Tally::expected(self.items as u64)
    }

    /// Tasks per sample on `workers` workers.
    fn tasks(&self, workers: usize) -> usize {
        if self.chunked { CHUNKS_PER_WORKER * workers.max(1) } else { self.items }
    }
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(ForInstance { rt, cfg: self, windows: Windows::default() }))
    }
}

/// The item the fault `LOSE` loses, or `usize::MAX`.
#[inline]
fn lost<const LOSE: u8>(items: usize) -> usize {
    match LOSE {
        LOSE_LAST => items - 1,
        LOSE_ITEM_0 => 0,
        _ => usize::MAX,
    }
}

/// One task per item.
fn per_item<R: Runtime, const LOSE: u8>(rt: &R, items: usize, total: &AtomicU64) {
    let lost = lost::<LOSE>(items);
    rt.for_each_task(items, &|i| {
        if !(LOSE != LOSE_NONE && i == lost) {
            total.fetch_add(tally(black_box(i as u64)), Ordering::Relaxed);
        }
    });
}

/// `chunks` tasks over contiguous ranges, each adding its local sum once.
fn chunked<R: Runtime, const LOSE: u8>(rt: &R, items: usize, chunks: usize, total: &AtomicU64) {
    let lost = lost::<LOSE>(items);
    rt.for_each_task(chunks, &|c| {
        let (lo, hi) = (items * c / chunks, items * (c + 1) / chunks);
        // Item i adds tally(i), read through black_box so that the loop
        // stays a loop of items. The loop steps through the tallies (each is
        // the last plus 2^29) instead of the indices: one induction variable
        // and one add per item, where computing each tally from its index
        // doubled the per-item cost.
        let (mut item, end) = (tally(lo as u64), tally(hi as u64));
        let lost = if LOSE == LOSE_NONE { 0 } else { tally(lost as u64) };
        let mut acc = 0u64;
        while item != end {
            if !(LOSE != LOSE_NONE && item == lost) {
                acc = acc.wrapping_add(black_box(item));
            }
            item = item.wrapping_add(1 << TALLY_COUNT_BITS);
        }
        total.fetch_add(acc, Ordering::Relaxed);
    });
}

struct ForInstance<R: Runtime> {
    rt: R,
    cfg: Config,
    windows: Windows,
}

impl<R: Runtime> Instance for ForInstance<R> {
    /// The items' tally.
    type Outcome = Tally;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Tally)> {
        let c = self.cfg;
        let rt = &self.rt;
        let chunks = c.tasks(rt.workers());
        let total = AtomicU64::new(0);
        timed_install(rt, timer, || match (c.chunked, c.lose) {
            (false, LOSE_LAST) => per_item::<R, LOSE_LAST>(rt, c.items, &total),
            (false, LOSE_ITEM_0) => per_item::<R, LOSE_ITEM_0>(rt, c.items, &total),
            (false, _) => per_item::<R, LOSE_NONE>(rt, c.items, &total),
            (true, LOSE_LAST) => chunked::<R, LOSE_LAST>(rt, c.items, chunks, &total),
            (true, LOSE_ITEM_0) => chunked::<R, LOSE_ITEM_0>(rt, c.items, chunks, &total),
            (true, _) => chunked::<R, LOSE_NONE>(rt, c.items, chunks, &total),
        });
        self.windows.push(timer);
        Ok((Work::ops(c.items as u64), Tally::of(total.into_inner())))
    }

    fn verify(&mut self, t: &Tally) -> Check {
        let expected = format!("{} (items and items(items+1)/2 for items = {})", self.cfg.expected(), self.cfg.items);
        Check { passed: *t == self.cfg.expected(), expected, observed: t.to_string() }
    }

    fn details(&self, _: Option<&Tally>) -> serde_json::Value {
        let c = &self.cfg;
        let tasks = c.tasks(self.rt.workers());
        json!({
            "runtime_counters": self.rt.counters().details(self.windows.samples()),
            "runtime": R::NAME,
            "pool_workers": self.rt.workers(),
            "items": c.items,
            "mode": if c.chunked { "chunked" } else { "per-item" },
            "tasks": tasks,
            "items_per_task": c.items.div_ceil(tasks),
            "atomic_adds": tasks,
            "median_window_ns": self.windows.median_ns(),
            "overhead_dominated": self.windows.overhead_dominated(c.items as u64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::ready;
    use crate::workloads::rt::common::{test_cell, verdicts};
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn};

    fn on<R: Runtime>() {
        for workers in [1, 2] {
            for chunked in [false, true] {
                if !chunked && !R::FINE_GRAINED {
                    continue;
                }
                for items in [2, 7, 20_000] {
                    let cfg = Config { items, chunked, lose: LOSE_NONE };
                    let mut ok = cfg.make(R::build(workers, None).unwrap()).unwrap();
                    assert_eq!(verdicts(ok.as_mut(), 2), [true; 2], "{} with {workers}, chunked {chunked}, {items}", R::NAME);
                    for lose in [LOSE_LAST, LOSE_ITEM_0] {
                        let mut bad = Config { lose, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
                        assert_eq!(verdicts(bad.as_mut(), 1), [false], "{} with {workers}: the lost item {lose} is caught", R::NAME);
                        let v = bad.verify();
                        assert!(v.observed.starts_with(&format!("{} counted", items - 1)), "{}", v.observed);
                    }
                }
            }
        }
    }

    #[test]
    fn sums_on_every_runtime_and_the_fault_is_caught() {
        on::<Rayon>();
        on::<GlobalQueue>();
        on::<Spawn>();
    }

    #[test]
    fn per_item_on_spawn_is_skipped_and_chunked_runs() {
        let cell = |mode: &str| test_cell("rt.parallel-for", json!({"items": 5_000, "mode": mode, "runtime": "spawn"}), 2, None);
        assert!(matches!(ParallelFor.prepare_here(&cell("per-item")), Ok(Prepared::NotApplicable(_))));
        let mut inst = ready(ParallelFor.prepare_here(&cell("chunked")));
        assert_eq!(verdicts(inst.as_mut(), 2), [true; 2]);
        let d = inst.details();
        assert_eq!((d["tasks"].as_u64(), d["atomic_adds"].as_u64(), d["items_per_task"].as_u64()), (Some(8), Some(8), Some(625)));
        assert_eq!(d["overhead_dominated"], true);
    }
}
