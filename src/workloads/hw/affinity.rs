//! `hw.affinity`: threads left to the scheduler (`free`) against threads
//! pinned one per physical core (`pinned`), each incrementing a counter of
//! its own (`private`, one cache line per thread) or one counter they all
//! share (`shared`), at 1..N threads. A fixed total of increments is split
//! evenly over the threads.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::utils::CachePadded;
use serde_json::json;

use super::HwFacts;
use super::threads::{self, Runs};
use crate::model::{Cell, named_enum};
use crate::topology::Topology;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;

pub struct Affinity;

/// The fault: thread 0 does one increment fewer than its share.
pub const FAULT: &str = "drop-increment";

/// The CPUs of `threads` pinned threads, one per physical core: the first
/// allowed CPU of each of the first `threads` allowed cores. `Err(reason)`
/// when there are fewer allowed cores than threads.
pub fn pinned_cpus(topo: &Topology, threads: usize) -> Result<Vec<usize>, String> {
    let cores = topo.allowed_cores();
    if threads > cores.len() {
        return Err(format!(
            "pinned places one thread per physical core: {threads} threads, but this process may use {} physical cores",
            cores.len()
        ));
    }
    Ok(cores.iter().take(threads).map(|c| c[0]).collect())
}

named_enum! {
    /// Where the threads may run.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Placement {
        /// Every CPU the worker may use.
        Free = "free",
        /// Thread i on the first CPU of physical core i.
        Pinned = "pinned",
    }
}

named_enum! {
    /// Which counters the threads increment.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Data {
        /// A counter per thread, each on its own cache line.
        Private = "private",
        /// One counter for all threads.
        Shared = "shared",
    }
}

impl Workload for Affinity {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "hw.affinity",
            group: "hw",
            summary: "Threads free or pinned one per physical core, incrementing private or shared atomic counters",
            measures: "what pinning threads to separate physical cores changes against letting the scheduler place and \
                       move them, and what sharing one counter's cache line between cores costs against a line per \
                       thread; the speedup from 1 to k threads of the same total work",
            unit: Unit::Ns,
            timed_region: "the compute loop: from the first thread starting its share to the last one finishing \
                           (CLOCK_MONOTONIC in each thread, after a start barrier that every thread reaches after spawning \
                           and setting its CPU affinity); each iteration runs `work_rounds` rounds of a 64-bit mixer on a \
                           thread-local value and one relaxed atomic fetch_add of 1 on the thread's own cache-line-aligned \
                           counter (private) or on the one counter all threads share (shared); resetting the counters is \
                           outside",
            total_window: Some("spawn of every thread, setting its affinity, the start barrier, the loop, and the parent's join"),
            verifier: "after every sample, each private counter equals its thread's share of `ops` (shares differ by at most \
                       1), or the shared counter equals `ops`: an increment lost or repeated changes them",
            batched: false,
            params: vec![
                ParamSpec::axis_of::<Placement>(
                    "affinity",
                    "free: every thread may run on every CPU the worker may use; pinned: thread i on the first CPU of physical core i",
                ),
                ParamSpec::axis_of::<Data>(
                    "data",
                    "private: a counter per thread, each on its own cache line; shared: one counter for all threads",
                ),
                ParamSpec::int(
                    "ops",
                    "atomic increments per sample, split evenly over the threads",
                    1,
                    1 << 40,
                    [200_000, 5_000_000, 1_000_000_000],
                ),
                ParamSpec::int("work_rounds", "mixer rounds per increment (0: a bare atomic increment loop)", 0, 1 << 10, [2, 2, 0]),
                ParamSpec::workers("threads, each incrementing its share of the counters"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let k = cell.worker_count();
        let allowed = cx.allowed.clone();
        let pinned = match cell.choice("affinity")? {
            Placement::Free => None,
            Placement::Pinned => {
                let topo = HwFacts::live(cell.seed, &cx.allowed).topology.map_err(|e| anyhow::anyhow!("reading the topology: {e}"))?;
                match pinned_cpus(&topo, k) {
                    Ok(c) => Some(c),
                    Err(why) => return Ok(Prepared::Skip(why)),
                }
            }
        };
        let cpu_sets = match &pinned {
            Some(c) => c.iter().map(|&cpu| vec![cpu]).collect(),
            None => vec![allowed.clone(); k],
        };
        let shared = cell.choice::<Data>("data")? == Data::Shared;
        let ops = cell.u64("ops")?;
        Ok(Prepared::ready(AffinityInstance {
            counters: (0..if shared { 1 } else { k }).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            shares: (0..k as u64).map(|i| ops * (i + 1) / k as u64 - ops * i / k as u64).collect(),
            ops,
            rounds: cell.u64("work_rounds")?,
            shared,
            cpu_sets,
            pinned,
            allowed,
            drop_one: cx.fault_is(FAULT),
            moved_total: 0,
        }))
    }
}

struct AffinityInstance {
    counters: Vec<CachePadded<AtomicU64>>,
    shares: Vec<u64>,
    ops: u64,
    rounds: u64,
    shared: bool,
    cpu_sets: Vec<Vec<usize>>,
    pinned: Option<Vec<usize>>,
    allowed: Vec<usize>,
    drop_one: bool,
    /// Threads found on another CPU at the end of their window than at its start, over every sample.
    moved_total: usize,
}

/// One thread's loop: `n` iterations of `rounds` mixes and an increment.
#[inline(never)]
fn count(counter: &AtomicU64, n: u64, rounds: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..n {
        for _ in 0..rounds {
            x = mix64(x);
        }
        counter.fetch_add(1, Ordering::Relaxed);
    }
    x
}

impl Instance for AffinityInstance {
    /// The threads' runs (the counts are in the counters).
    type Outcome = Runs<u64>;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Runs<u64>)> {
        self.counters.iter().for_each(|c| c.store(0, Ordering::Relaxed));
        let (counters, shares, rounds, shared, drop_one) = (&self.counters, &self.shares, self.rounds, self.shared, self.drop_one);
        let runs = threads::run(&self.cpu_sets, |i| {
            let counter = if shared { &counters[0] } else { &counters[i] };
            let n = if drop_one && i == 0 { shares[i].saturating_sub(1) } else { shares[i] };
            std::hint::black_box(count(counter, n, rounds, i as u64))
        })?;
        timer.record_work(runs.work_ns());
        timer.record_total(runs.total_ns);
        self.moved_total += runs.moved();
        Ok((Work::ops(self.ops), runs))
    }

    fn verify(&mut self, _: &Runs<u64>) -> Check {
        let got: Vec<u64> = self.counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let want: Vec<u64> = if self.shared { vec![self.ops] } else { self.shares.clone() };
        let what = if self.shared { "the shared counter" } else { "the private counters" };
        Check { passed: got == want, expected: format!("{what} {want:?}"), observed: format!("{what} {got:?}") }
    }

    fn details(&self, last: Option<&Runs<u64>>) -> serde_json::Value {
        json!({
            "threads": self.shares.len(),
            "ops_per_thread": self.shares,
            "work_rounds": self.rounds,
            "counter_layout": if self.shared {
                "one counter shared by every thread".to_string()
            } else {
                format!("one counter per thread, {} bytes apart", std::mem::size_of::<CachePadded<AtomicU64>>())
            },
            "pinned_cpus": self.pinned,
            "allowed_cpus": self.allowed,
            "last_sample_thread_ns": last.map(|r| r.threads.iter().map(|t| t.end_ns - t.start_ns).collect::<Vec<_>>()),
            "last_sample_thread_cpus": last.map(|r| r.threads.iter().map(|t| [t.cpu_start, t.cpu_end]).collect::<Vec<_>>()),
            "last_sample_involuntary_switches": last.map(|r| r.threads.iter().map(|t| t.involuntary_switches).collect::<Vec<_>>()),
            "threads_moved_total": self.moved_total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;
    use crate::workloads::os::fs_common::test_cell;

    /// Two CPUs of `cpus` share a physical core.
    fn any_siblings(topo: &Topology, cpus: &[usize]) -> bool {
        topo.cores().iter().any(|core| cpus.iter().filter(|c| core.contains(c)).count() > 1)
    }

    #[test]
    fn pinned_threads_get_separate_physical_cores() {
        let t = fixture("4c8t");
        assert_eq!(pinned_cpus(&t, 1), Ok(vec![0]));
        assert_eq!(pinned_cpus(&t, 4), Ok(vec![0, 2, 4, 6]), "adjacent siblings are skipped");
        assert!(pinned_cpus(&t, 5).unwrap_err().contains("4 physical cores"));
        let big = fixture("2s48c96t");
        let all = pinned_cpus(&big, 48).unwrap();
        assert_eq!(all, (0..48).collect::<Vec<_>>(), "cpu N and N + 48 are siblings: the first 48 are 48 cores");
        assert!(!any_siblings(&big, &all));
        assert!(pinned_cpus(&big, 49).is_err());
        // A restricted set: one CPU of each allowed core, even when it is the second sibling.
        let some = big.clone().with_allowed(vec![48, 1, 49, 2]);
        assert_eq!(pinned_cpus(&some, 3), Ok(vec![48, 1, 2]));
        assert!(!any_siblings(&some, &pinned_cpus(&some, 3).unwrap()));
        assert_eq!(pinned_cpus(&fixture("kvm-2c"), 2), Ok(vec![0, 1]));
    }

    fn cell(affinity: &str, data: &str, workers: usize, fault: Option<&str>) -> Cell {
        let dir = std::env::temp_dir();
        let mut c = test_cell("hw.affinity", json!({"affinity": affinity, "data": data, "ops": 10_001, "work_rounds": 1}), fault, &dir);
        c.workers = Some(workers);
        c
    }

    fn prepared(c: &Cell) -> Box<dyn crate::workloads::contract::Sampler> {
        match Affinity.prepare_here(c).unwrap() {
            Prepared::Ready(i) => i,
            Prepared::Skip(why) | Prepared::NotApplicable(why) => panic!("{why}"),
        }
    }

    #[test]
    fn counters_reach_their_totals_in_every_variant() {
        let k = HwFacts::live(0, &crate::measure::affinity::current_thread().unwrap()).topology.unwrap().allowed_physical_cores().min(2);
        for affinity in ["free", "pinned"] {
            for data in ["private", "shared"] {
                let mut inst = prepared(&cell(affinity, data, k, None));
                let mut t = Timer::new();
                assert_eq!(inst.sample(1, &mut t).unwrap(), Work::ops(10_001));
                assert!(t.total_ns().unwrap() >= t.work_ns().unwrap());
                let v = inst.verify();
                assert!(v.passed, "{affinity} {data}: {v:?}");
                let d = inst.details();
                assert_eq!(d["ops_per_thread"], if k == 2 { json!([5000, 5001]) } else { json!([10_001]) });
                assert_eq!(d["pinned_cpus"].is_null(), affinity == "free");
                if affinity == "pinned" {
                    // Each pinned thread ran where it was put.
                    let cpus = d["pinned_cpus"].as_array().unwrap();
                    for (i, pair) in d["last_sample_thread_cpus"].as_array().unwrap().iter().enumerate() {
                        assert_eq!(pair[0], cpus[i]);
                    }
                }
            }
        }
    }

    #[test]
    fn a_dropped_increment_fails_the_verifier() {
        for data in ["private", "shared"] {
            let mut inst = prepared(&cell("free", data, 2, Some(FAULT)));
            inst.sample(1, &mut Timer::new()).unwrap();
            let v = inst.verify();
            assert!(!v.passed, "{data}: {v:?}");
        }
        let mut inst = prepared(&cell("free", "shared", 2, Some(FAULT)));
        inst.sample(1, &mut Timer::new()).unwrap();
        assert_eq!(inst.verify().observed, "the shared counter [10000]");
    }

    #[test]
    fn more_pinned_threads_than_cores_is_a_skip() {
        let cores = HwFacts::live(0, &crate::measure::affinity::current_thread().unwrap()).topology.unwrap().allowed_physical_cores();
        match Affinity.prepare_here(&cell("pinned", "private", cores + 1, None)).unwrap() {
            Prepared::Skip(why) | Prepared::NotApplicable(why) => assert!(why.contains("one thread per physical core"), "{why}"),
            Prepared::Ready(_) => panic!("{} pinned threads on {cores} cores", cores + 1),
        }
    }
}
