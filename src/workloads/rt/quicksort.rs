//! `rt.quicksort`: recursive task decomposition (RustFiber's second
//! benchmark). One operation is one sort of `len` seeded random u64s: a
//! sequential partition around a median-of-three pivot, then `join` on the two
//! parts, down to parts of at most `cutoff_len` elements, which are sorted
//! sequentially.

use anyhow::ensure;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::common::{Windows, overhead_note, timed_install};
use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;

pub struct Quicksort;

const FAULT: &str = "swap-pair";

impl Workload for Quicksort {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.quicksort",
            group: "rt",
            summary: "Parallel quicksort of seeded random u64s: join on the two partitions above a cutoff",
            measures: "how well the runtime spreads an unbalanced, data-dependent recursion over its workers (the time of \
                       one sort); the sequential top-level partitions bound the speedup. The spawn runtime starts a thread per \
                       join whatever the worker count, so its rows use every CPU the process may use",
            unit: Unit::Ns,
            timed_region: concat!(
                "inside the runtime's install, on the pool thread that runs the root: the whole sort (partitions, joins, \
                 sequential sorts of the small parts); the input is generated in prepare and the array is refilled from \
                 the saved copy before each sample, both outside the window",
                overhead_note!()
            ),
            total_window: None,
            verifier: "the output is in non-decreasing order, and its multiset checksum (wrapping sum and xor of mix64 over \
                       the elements) equals the input's, computed in prepare",
            batched: false,
            params: vec![
                ParamSpec::int("len", "elements sorted", 2, 1 << 30, [1_000_000, 10_000_000, 10_000_000]),
                ParamSpec::int(
                    "cutoff_len",
                    "parts of at most this many elements are sorted sequentially (coarse, so that the spawn runtime's thread \
                     per join stays cheap)",
                    16,
                    1 << 30,
                    [16_384, 16_384, 16_384],
                ),
                runtime_param(&NAMES),
                ParamSpec::workers("worker threads of the runtime's pool"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let len = cell.usize("len")?;
        let cutoff = cell.usize("cutoff_len")?;
        ensure!(len >= 2, "len = {len}: at least two elements");
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(cell.seed);
        let input: Vec<u64> = (0..len).map(|_| rng.next_u64()).collect();
        let cfg = Config { checksum: Checksum::of(&input), data: input.clone(), input, cutoff, swap_pair: cx.fault_is(FAULT) };
        prepare_with(cell, false, cfg)
    }
}

/// An order-independent checksum: a lost, repeated or changed element moves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checksum {
    sum: u64,
    xor: u64,
}

impl Checksum {
    fn of(v: &[u64]) -> Checksum {
        v.iter().fold(Checksum { sum: 0, xor: 0 }, |c, &x| Checksum { sum: c.sum.wrapping_add(mix64(x)), xor: c.xor ^ mix64(x) })
    }
}

impl std::fmt::Display for Checksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sum {:#018x} xor {:#018x}", self.sum, self.xor)
    }
}

struct Config {
    input: Vec<u64>,
    data: Vec<u64>,
    checksum: Checksum,
    cutoff: usize,
    swap_pair: bool,
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(SortInstance { rt, cfg: self, windows: Windows::default() }))
    }
}

/// What one sort did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stats {
    joins: u64,
    /// Parts sorted sequentially.
    leaves: u64,
    /// Parts sorted sequentially because the recursion went too deep.
    depth_fallbacks: u64,
}

impl Stats {
    fn add(self, o: Stats) -> Stats {
        Stats { joins: self.joins + o.joins, leaves: self.leaves + o.leaves, depth_fallbacks: self.depth_fallbacks + o.depth_fallbacks }
    }
}

/// Hoare partition around the median of the first, middle and last elements.
/// Returns `p` with every element of `v[..p]` <= every element of `v[p..]`;
/// both parts non-empty when `v.len() >= 2`, except in degenerate cases where
/// `p` is 0 or `v.len()` (the caller then sorts sequentially).
fn partition(v: &mut [u64]) -> usize {
    let n = v.len();
    let (a, b, c) = (v[0], v[n / 2], v[n - 1]);
    let pivot = a.min(b).max(a.max(b).min(c)); // the median of the three
    let (mut i, mut j) = (0usize, n - 1);
    loop {
        // Both scans stop in bounds: the pivot value is in the slice, and after
        // a swap v[i] <= pivot <= v[j] act as sentinels.
        while v[i] < pivot {
            i += 1;
        }
        while v[j] > pivot {
            j -= 1;
        }
        if i >= j {
            return j + 1;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
}

/// Sorts `v`, forking the two parts with `join` while they are above `cutoff`.
/// Past `depth` levels (a bad run of pivots) it sorts sequentially.
fn sort<R: Runtime>(rt: &R, v: &mut [u64], cutoff: usize, depth: u32) -> Stats {
    if v.len() <= cutoff.max(2) || depth == 0 {
        v.sort_unstable();
        return Stats { joins: 0, leaves: 1, depth_fallbacks: u64::from(depth == 0) };
    }
    let p = partition(v);
    if p == 0 || p == v.len() {
        v.sort_unstable();
        return Stats { joins: 0, leaves: 1, depth_fallbacks: 1 };
    }
    let (lo, hi) = v.split_at_mut(p);
    let (a, b) = rt.join(|| sort(rt, lo, cutoff, depth - 1), || sort(rt, hi, cutoff, depth - 1));
    Stats { joins: 1, ..Stats::default() }.add(a).add(b)
}

/// The recursion depth allowed before falling back to a sequential sort.
fn max_depth(len: usize) -> u32 {
    2 * (usize::BITS - len.leading_zeros()) + 8
}

struct SortInstance<R: Runtime> {
    rt: R,
    cfg: Config,
    windows: Windows,
}

impl<R: Runtime> Instance for SortInstance<R> {
    /// What the sort did (the sorted data is the instance's).
    type Outcome = Stats;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Stats)> {
        // Outside the window: the unsorted input again.
        self.cfg.data.copy_from_slice(&self.cfg.input);
        let (rt, cutoff, swap_pair) = (&self.rt, self.cfg.cutoff, self.cfg.swap_pair);
        let data = &mut self.cfg.data;
        let depth = max_depth(data.len());
        let stats = timed_install(rt, timer, || {
            let s = sort(rt, data, cutoff, depth);
            if swap_pair {
                // The fault: the smallest and the largest element trade places.
                let n = data.len();
                data.swap(0, n - 1);
            }
            s
        });
        self.windows.push(timer);
        Ok((Work::ops(data.len() as u64), stats))
    }

    fn verify(&mut self, _: &Stats) -> Check {
        let expected = format!("sorted, checksum {} (of the input, in prepare)", self.cfg.checksum);
        let d = &self.cfg.data;
        let unsorted = d.windows(2).position(|w| w[0] > w[1]);
        let checksum = Checksum::of(d);
        let order = match unsorted {
            None => "sorted".to_string(),
            Some(i) => format!("out of order at index {i} ({} > {})", d[i], d[i + 1]),
        };
        Check { passed: unsorted.is_none() && checksum == self.cfg.checksum, expected, observed: format!("{order}, checksum {checksum}") }
    }

    fn details(&self, last: Option<&Stats>) -> serde_json::Value {
        let len = self.cfg.data.len() as u64;
        json!({
            "runtime_counters": self.rt.counters().details(self.windows.samples()),
            "runtime": R::NAME,
            "pool_workers": self.rt.workers(),
            "len": len,
            "cutoff_len": self.cfg.cutoff,
            "input_checksum": self.cfg.checksum.to_string(),
            "last_sample_joins": last.map(|s| s.joins),
            "last_sample_leaves": last.map(|s| s.leaves),
            "last_sample_depth_fallbacks": last.map(|s| s.depth_fallbacks),
            "median_window_ns": self.windows.median_ns(),
            "median_ns_per_element": self.windows.median_ns().map(|ns| ns as f64 / len as f64),
            "overhead_dominated": self.windows.overhead_dominated(len),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::ready;
    use crate::workloads::rt::common::{test_cell, verdicts};
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn};

    fn config(input: Vec<u64>, cutoff: usize, swap_pair: bool) -> Config {
        Config { checksum: Checksum::of(&input), data: input.clone(), input, cutoff, swap_pair }
    }

    fn random(len: usize, modulo: u64, seed: u64) -> Vec<u64> {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..len).map(|_| rng.next_u64() % modulo).collect()
    }

    fn on<R: Runtime>() {
        for workers in [1, 2] {
            let mut ok = config(random(5_000, u64::MAX, 1), 64, false).make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(ok.as_mut(), 3), [true; 3], "{} with {workers}", R::NAME);
            assert!(ok.details()["last_sample_joins"].as_u64().unwrap() > 10);
            let mut bad = config(random(5_000, u64::MAX, 2), 64, true).make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(bad.as_mut(), 1), [false], "{} with {workers}: the swapped pair is caught", R::NAME);
        }
    }

    #[test]
    fn sorts_on_every_runtime_and_the_fault_is_caught() {
        on::<Rayon>();
        on::<GlobalQueue>();
        on::<Spawn>();
    }

    #[test]
    fn partitions_split_inputs_with_duplicates_and_runs() {
        let rt = Rayon::build(2, None).unwrap();
        let cases = [
            random(3_000, 3, 3),
            random(3_000, u64::MAX, 4),
            vec![7; 1_000],
            (0..2_000).collect(),
            (0..2_000).rev().collect(),
            vec![1, 0],
            vec![0, 1, 0],
        ];
        for input in cases {
            let mut v = input.clone();
            let p = partition(&mut v);
            assert!(p <= v.len());
            if p > 0 && p < v.len() {
                let left_max = v[..p].iter().max().unwrap();
                assert!(v[p..].iter().all(|x| x >= left_max));
            }
            let mut w = input.clone();
            let depth = max_depth(w.len());
            rt.install(|| sort(&rt, &mut w, 16, depth));
            let mut expect = input;
            expect.sort_unstable();
            assert_eq!(w, expect);
        }
    }

    #[test]
    fn the_checksum_sees_a_changed_element_and_the_verifier_an_unsorted_pair() {
        let v = random(100, u64::MAX, 5);
        let mut w = v.clone();
        w[3] = w[3].wrapping_add(1);
        assert_ne!(Checksum::of(&v), Checksum::of(&w));
        let mut inst = SortInstance { rt: Rayon::build(1, None).unwrap(), cfg: config(v, 16, false), windows: Windows::default() };
        inst.cfg.data.sort_unstable();
        assert!(inst.verify(&Stats::default()).passed);
        inst.cfg.data.swap(10, 11);
        assert!(!inst.verify(&Stats::default()).passed);
    }

    #[test]
    fn prepare_runs_on_spawn_too() {
        let cell = test_cell("rt.quicksort", json!({"len": 50_000, "cutoff_len": 4_096, "runtime": "spawn"}), 2, None);
        let mut inst = ready(Quicksort.prepare_here(&cell));
        assert_eq!(verdicts(inst.as_mut(), 2), [true; 2]);
        let d = inst.details();
        assert_eq!(d["runtime"], "spawn");
        assert!(d["last_sample_leaves"].as_u64().unwrap() >= 50_000 / 4_096);
        assert_eq!(d["last_sample_depth_fallbacks"], 0);
    }
}
