//! `rt.prodcons`: producers and consumers over one bounded MPMC channel
//! (crossbeam-channel) under contention, RustFiber's third benchmark. One
//! operation is one item sent by a producer task and received by a consumer
//! task; the figure is ns per item.
//!
//! `workers` tasks run at once, one per worker: half of them (rounded down)
//! produce, the others consume. With one worker there is nobody to hand items
//! to, so the single task alternates: it sends up to `capacity` items (the
//! channel never blocks it) and then receives them, and so on. That row is the
//! channel's uncontended cost, the baseline the contended rows are compared to.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::channel::{Receiver, Sender, bounded};
use serde_json::json;

use super::common::{Windows, overhead_note, timed_install};
use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct ProdCons;

const FAULT: &str = "lose-item";

impl Workload for ProdCons {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.prodcons",
            group: "rt",
            summary: "Producer and consumer tasks over one bounded MPMC channel (crossbeam), under contention",
            measures: "the throughput of a contended bounded channel between tasks of the runtime (ns per item moved), \
                       including the cost of blocking and waking tasks when it is full or empty; with 1 worker, one task \
                       alternately fills and drains it (the uncontended baseline)",
            unit: Unit::NsPerOp,
            timed_region: concat!(
                "inside the runtime's install, on the pool thread that runs it: for_each_task over the producer and \
                 consumer tasks, from the start of the batch to the last consumer's exit (every send, receive, block and \
                 wake-up, and each consumer's one final add of its count and sum); the channel is created before the \
                 window and the runtime in prepare",
                overhead_note!()
            ),
            total_window: None,
            verifier: "every item consumed exactly once: the consumers' count and wrapping sum equal the closed forms items \
                       and items(items+1)/2 for the values 1..=items the producers sent",
            batched: false,
            params: vec![
                ParamSpec::int("items", "items sent through the channel per sample", 2, 1 << 31, [250_000, 2_000_000, 2_000_000]),
                ParamSpec::int("capacity", "capacity of the bounded channel", 1, 1 << 24, [1_024, 1_024, 1_024]),
                runtime_param(&NAMES),
                ParamSpec::workers("tasks (one per worker thread): half producers, half consumers; 1 alternates"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let cfg = Config { items: cell.u64("items")?, capacity: cell.usize("capacity")?, lose_item: cx.fault_is(FAULT) };
        prepare_with(cell, false, cfg)
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    items: u64,
    capacity: usize,
    lose_item: bool,
}

impl Config {
    /// The closed form of the sum of 1..=items (mod 2^64).
    fn expected_sum(&self) -> u64 {
        (u128::from(self.items) * (u128::from(self.items) + 1) / 2) as u64
    }
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(ProdConsInstance { rt, cfg: self, windows: Windows::default() }))
    }
}

/// The producer and consumer counts for `workers` tasks (0 consumers: one
/// task alternates).
fn roles(workers: usize) -> (usize, usize) {
    if workers <= 1 { (1, 0) } else { (workers / 2, workers - workers / 2) }
}

/// Sends items `first, first + stride, ...` below `items`, as values index + 1.
fn produce(tx: Sender<u64>, first: u64, stride: u64, items: u64, lose_item: bool) {
    let mut k = first;
    while k < items {
        // The fault: item 0 (value 1) is never sent.
        if !(lose_item && k == 0) && tx.send(k + 1).is_err() {
            return; // every receiver is gone: the verifier will see the loss
        }
        k += stride;
    }
}

/// Receives until every producer has gone; returns the count and the sum.
fn consume(rx: &Receiver<u64>) -> (u64, u64) {
    let (mut n, mut s) = (0u64, 0u64);
    while let Ok(v) = rx.recv() {
        n += 1;
        s = s.wrapping_add(v);
    }
    (n, s)
}

/// One task alone: sends up to `capacity` items, then drains them.
fn alternate(tx: Sender<u64>, rx: &Receiver<u64>, items: u64, capacity: u64, lose_item: bool) -> (u64, u64) {
    let (mut n, mut s) = (0u64, 0u64);
    let mut k = 0u64;
    while k < items {
        let end = (k + capacity).min(items);
        for j in k..end {
            if !(lose_item && j == 0) {
                let _ = tx.try_send(j + 1); // never full: at most `capacity` are queued
            }
        }
        while let Ok(v) = rx.try_recv() {
            n += 1;
            s = s.wrapping_add(v);
        }
        k = end;
    }
    (n, s)
}

/// The items the consumers received in one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    count: u64,
    sum: u64,
}

struct ProdConsInstance<R: Runtime> {
    rt: R,
    cfg: Config,
    windows: Windows,
}

impl<R: Runtime> Instance for ProdConsInstance<R> {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let c = self.cfg;
        let workers = self.rt.workers();
        let (producers, consumers) = roles(workers);
        // Outside the window: the channel, and one sender per producer (each
        // producer drops its own when done, which ends the consumers' loops).
        let (tx, rx) = bounded::<u64>(c.capacity);
        let senders: Vec<Mutex<Option<Sender<u64>>>> = (0..producers).map(|_| Mutex::new(Some(tx.clone()))).collect();
        drop(tx);
        let (count, sum) = (AtomicU64::new(0), AtomicU64::new(0));
        let take = |t: usize| senders[t].lock().unwrap_or_else(|e| e.into_inner()).take();
        let rt = &self.rt;
        timed_install(rt, timer, || {
            rt.for_each_task(producers + consumers, &|t| {
                let (n, s) = if consumers == 0 {
                    take(0).map_or((0, 0), |tx| alternate(tx, &rx, c.items, c.capacity as u64, c.lose_item))
                } else if t < producers {
                    if let Some(tx) = take(t) {
                        produce(tx, t as u64, producers as u64, c.items, c.lose_item);
                    }
                    (0, 0)
                } else {
                    consume(&rx)
                };
                count.fetch_add(n, Ordering::Relaxed);
                sum.fetch_add(s, Ordering::Relaxed);
            })
        });
        self.windows.push(timer);
        Ok((Work::ops(c.items), Outcome { count: count.into_inner(), sum: sum.into_inner() }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let c = &self.cfg;
        Check {
            passed: l.count == c.items && l.sum == c.expected_sum(),
            expected: format!("{} items, sum {} (closed forms n and n(n+1)/2)", c.items, c.expected_sum()),
            observed: format!("{} items, sum {}", l.count, l.sum),
        }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        let (producers, consumers) = roles(self.rt.workers());
        json!({
            "runtime_counters": self.rt.counters().details(self.windows.samples()),
            "runtime": R::NAME,
            "pool_workers": self.rt.workers(),
            "items": self.cfg.items,
            "capacity": self.cfg.capacity,
            "producers": producers,
            "consumers": consumers,
            "mode": if consumers == 0 { "alternating (one task fills then drains the channel)" } else { "producers and consumers" },
            "last_sample_consumed": last.map(|l| l.count),
            "median_window_ns": self.windows.median_ns(),
            "overhead_dominated": self.windows.overhead_dominated(self.cfg.items),
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
        for workers in [1, 2, 3] {
            for capacity in [1, 16] {
                let cfg = Config { items: 3_001, capacity, lose_item: false };
                let mut ok = cfg.make(R::build(workers, None).unwrap()).unwrap();
                assert_eq!(verdicts(ok.as_mut(), 3), [true; 3], "{} with {workers}, capacity {capacity}", R::NAME);
                let mut bad = Config { lose_item: true, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
                assert_eq!(verdicts(bad.as_mut(), 1), [false], "{} with {workers}: the lost item is caught", R::NAME);
            }
        }
    }

    #[test]
    fn every_item_arrives_once_on_every_runtime_and_the_fault_is_caught() {
        on::<Rayon>();
        on::<GlobalQueue>();
        on::<Spawn>();
    }

    #[test]
    fn roles_and_closed_forms() {
        assert_eq!(roles(1), (1, 0));
        assert_eq!(roles(2), (1, 1));
        assert_eq!(roles(5), (2, 3));
        let c = Config { items: 4, capacity: 1, lose_item: false };
        assert_eq!(c.expected_sum(), 10);
        assert_eq!(Config { items: 1 << 31, ..c }.expected_sum(), (1u64 << 61) + (1 << 30));
    }

    #[test]
    fn prepare_runs_on_every_runtime() {
        for rt in NAMES {
            let cell = test_cell("rt.prodcons", json!({"items": 2_000, "capacity": 8, "runtime": rt}), 2, None);
            let mut inst = ready(ProdCons.prepare_here(&cell));
            assert_eq!(verdicts(inst.as_mut(), 2), [true; 2], "{rt}");
            let d = inst.details();
            assert_eq!((d["producers"].as_u64(), d["consumers"].as_u64()), (Some(1), Some(1)));
            assert_eq!(d["overhead_dominated"], true, "2,000 items are marked");
        }
    }
}
