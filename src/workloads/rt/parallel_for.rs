//! `rt.parallel-for`: a million tiny items summed in parallel, RustFiber's
//! batching benchmark. One operation is one item (adding its index to a
//! total); the figure is ns per item. The `mode` axis compares one task per
//! item, each adding to a shared atomic, with `4 x workers` chunks, each
//! summing its range locally and adding once.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use super::common::{Windows, overhead_note, timed_install};
use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::{Cell, Profile};
use crate::workloads::contract::{Instance, ParamSpec, Prepared, TableShape, Timer, Unit, Verdict, Work, Workload, WorkloadSpec};

pub struct ParallelFor;

const FAULT: &str = "skip-item";
const MODES: [&str; 2] = ["per-item", "chunked"];
/// Chunks per worker in `chunked` mode (RustFiber's choice).
const CHUNKS_PER_WORKER: usize = 4;

impl Workload for ParallelFor {
    fn spec(&self) -> WorkloadSpec {
        let both: Vec<serde_json::Value> = MODES.iter().map(|&m| m.into()).collect();
        WorkloadSpec {
            id: "rt.parallel-for",
            group: "rt",
            summary: "Sum tiny items in parallel (a million in full and seed): one task per item, or 4 x workers chunks",
            measures: "what batching buys: per-item, the runtime's cost per task plus a contended atomic add per item; \
                       chunked, a local loop per chunk and one atomic add per chunk (ns per item in both)",
            unit: Unit::NsPerOp,
            timed_region: concat!(
                "inside the runtime's install, on the pool thread that runs it: for_each_task over the items (per-item) or \
                 the chunks (chunked), from the first task's creation to the last one's end; each item adds its index, \
                 read through black_box so that the chunk loop stays a loop of items; the runtime is built in prepare",
                overhead_note!()
            ),
            total_window: None,
            verifier: "the total equals the closed form 0 + 1 + ... + (items - 1) = items(items-1)/2",
            batched: false,
            params: vec![
                ParamSpec::int("items", "items summed per sample", 2, 1 << 28, [1_000_000, 1_000_000, 1_000_000]),
                ParamSpec::choice("mode", "per-item: one task per item; chunked: 4 x workers tasks", &MODES, [MODES[0]; 3])
                    .with_values(Profile::Quick, both.clone())
                    .with_values(Profile::Full, both.clone())
                    .with_values(Profile::Seed, both),
                runtime_param(&NAMES),
                ParamSpec::workers("worker threads of the runtime's pool"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell) -> anyhow::Result<Prepared> {
        let chunked = match cell.str("mode")? {
            "chunked" => true,
            "per-item" => false,
            other => anyhow::bail!("unknown mode '{other}'"),
        };
        let cfg = Config { items: cell.usize("items")?, chunked, skip_item: cell.fault_is(FAULT) };
        prepare_with(cell, !chunked, cfg)
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    items: usize,
    chunked: bool,
    skip_item: bool,
}

impl Config {
    fn expected(&self) -> u64 {
        let n = self.items as u128;
        (n * n.saturating_sub(1) / 2) as u64
    }

    /// Tasks per sample on `workers` workers.
    fn tasks(&self, workers: usize) -> usize {
        if self.chunked { CHUNKS_PER_WORKER * workers.max(1) } else { self.items }
    }
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Instance>> {
        Ok(Box::new(ForInstance { rt, cfg: self, last: None, windows: Windows::default() }))
    }
}

/// One task per item; `SKIP`: the last item adds nothing (the fault).
fn per_item<R: Runtime, const SKIP: bool>(rt: &R, items: usize, total: &AtomicU64) {
    rt.for_each_task(items, &|i| {
        if !(SKIP && i == items - 1) {
            total.fetch_add(black_box(i as u64), Ordering::Relaxed);
        }
    });
}

/// `chunks` tasks over contiguous ranges, each adding its local sum once.
fn chunked<R: Runtime, const SKIP: bool>(rt: &R, items: usize, chunks: usize, total: &AtomicU64) {
    rt.for_each_task(chunks, &|c| {
        let (lo, hi) = (items * c / chunks, items * (c + 1) / chunks);
        let mut acc = 0u64;
        for i in lo..hi {
            if !(SKIP && i == items - 1) {
                acc = acc.wrapping_add(black_box(i as u64));
            }
        }
        total.fetch_add(acc, Ordering::Relaxed);
    });
}

struct ForInstance<R: Runtime> {
    rt: R,
    cfg: Config,
    last: Option<u64>,
    windows: Windows,
}

impl<R: Runtime> Instance for ForInstance<R> {
    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        let c = self.cfg;
        let rt = &self.rt;
        let chunks = c.tasks(rt.workers());
        let total = AtomicU64::new(0);
        timed_install(rt, timer, || match (c.chunked, c.skip_item) {
            (false, false) => per_item::<R, false>(rt, c.items, &total),
            (false, true) => per_item::<R, true>(rt, c.items, &total),
            (true, false) => chunked::<R, false>(rt, c.items, chunks, &total),
            (true, true) => chunked::<R, true>(rt, c.items, chunks, &total),
        });
        self.windows.push(timer);
        self.last = Some(total.into_inner());
        Ok(Work::ops(c.items as u64))
    }

    fn verify(&mut self) -> Verdict {
        let expected = format!("{} (items(items-1)/2 for items = {})", self.cfg.expected(), self.cfg.items);
        match self.last {
            None => Verdict { passed: false, expected, observed: "no sample ran".into() },
            Some(v) => Verdict { passed: v == self.cfg.expected(), expected, observed: v.to_string() },
        }
    }

    fn details(&self) -> serde_json::Value {
        let c = &self.cfg;
        let tasks = c.tasks(self.rt.workers());
        json!({
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
                    let cfg = Config { items, chunked, skip_item: false };
                    let mut ok = cfg.make(R::build(workers, None).unwrap()).unwrap();
                    assert_eq!(verdicts(ok.as_mut(), 2), [true; 2], "{} with {workers}, chunked {chunked}, {items}", R::NAME);
                    let mut bad = Config { skip_item: true, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
                    assert_eq!(verdicts(bad.as_mut(), 1), [false], "{} with {workers}: the skipped item is caught", R::NAME);
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
        assert!(matches!(ParallelFor.prepare(&cell("per-item")), Ok(Prepared::Skip(_))));
        let mut inst = ready(ParallelFor.prepare(&cell("chunked")));
        assert_eq!(verdicts(inst.as_mut(), 2), [true; 2]);
        let d = inst.details();
        assert_eq!((d["tasks"].as_u64(), d["atomic_adds"].as_u64(), d["items_per_task"].as_u64()), (Some(8), Some(8), Some(625)));
        assert_eq!(d["overhead_dominated"], true);
    }
}
