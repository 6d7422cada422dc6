//! `cpu.dynamic`: uneven dynamic tasks (capOS "one uneven dynamic-task
//! workload"). One sample runs `tasks` tasks on the cell's task runtime, one
//! `for_each_task` batch; task i computes a hash chain whose length was drawn
//! at prepare from a capped, heavy-tailed (Pareto) distribution, so a few
//! tasks are many times the mean and the runtime must balance them while
//! they run.

use std::cell::Cell as StdCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::{Rng, SeedableRng};
use serde_json::json;

use super::mix64;
use crate::measure::clock;
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::rt::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};

pub struct Dynamic;

/// The fault: one task (index `tasks / 2`) skips its hash chain and reports nothing.
pub const FAULT: &str = "drop-task";

/// Tail index of the Pareto distribution of task sizes (finite mean, infinite variance).
pub const ALPHA: f64 = 1.5;
/// Largest draw, in units of the distribution's scale (its smallest value).
pub const CAP: f64 = 100.0;
/// Below this mean task size (hash rounds, about 50 us) a task is too small
/// for a thread of its own: the `spawn` runtime is skipped.
pub const SPAWN_MIN_MEAN_WORK: u64 = 10_000;
/// Above this many tasks the `spawn` runtime (a thread per task) is skipped.
pub const SPAWN_MAX_TASKS: usize = 4096;

impl Workload for Dynamic {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "cpu.dynamic",
            group: "cpu",
            summary: "Tasks of heavy-tailed sizes (capped Pareto) balanced by a task runtime while they run",
            measures: "dynamic load balancing: how close a runtime gets to the ideal split when task sizes are uneven and \
                       unknown in advance (work window), and what dispatching the batch costs (total window)",
            unit: Unit::Ns,
            timed_region: "the tasks: from the first task starting to the last one finishing (CLOCK_MONOTONIC read in each task); \
                           drawing the sizes, the reference sum and building the runtime are outside (prepare)",
            total_window: Some(
                "the runtime's install and for_each_task around the batch: queueing or spawning every task, the work, \
                                and the wait until all are done",
            ),
            verifier: "the wrapping sum of the tasks' results (each a hash chain seeded by the task index, as long as the task's \
                       size) equals the sum one thread computed over the same sizes during prepare",
            batched: false,
            params: vec![
                ParamSpec::int(
                    "tasks",
                    "tasks per sample, their sizes in seeded random order; above 4096 the spawn runtime (a thread per task) is skipped",
                    1,
                    1 << 22,
                    [256, 2048, 2048],
                ),
                ParamSpec::int(
                    "mean_work",
                    "mean task size in hash rounds (about 5 ns each); the sizes total tasks x mean_work; below 10000 the spawn runtime is skipped",
                    1,
                    1 << 30,
                    [50_000, 50_000, 50_000],
                ),
                runtime_param(&NAMES),
                ParamSpec::workers("worker threads of the runtime"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let tasks = cell.usize("tasks")?;
        let mean_work = cell.u64("mean_work")?;
        let sizes = task_sizes(cell.seed, tasks, mean_work);
        let reference = reference_sum(&sizes);
        let fine_grained = mean_work < SPAWN_MIN_MEAN_WORK || tasks > SPAWN_MAX_TASKS;
        let drop_task = cx.fault_is(FAULT).then_some(tasks / 2);
        prepare_with(cell, fine_grained, Make { sizes, mean_work, reference, drop_task })
    }
}

struct Make {
    sizes: Vec<u64>,
    mean_work: u64,
    reference: u64,
    drop_task: Option<usize>,
}

impl Maker for Make {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        let n = self.sizes.len();
        let slot = || (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        Ok(Sampled::boxed(DynamicInstance {
            rt,
            slots: Slots { result: slot(), start: slot(), end: slot(), thread: slot() },
            sizes: self.sizes,
            mean_work: self.mean_work,
            reference: self.reference,
            drop_task: self.drop_task,
        }))
    }
}

/// A uniform draw in (0, 1] from 53 random bits.
fn unit_open0(rng: &mut impl Rng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// The task sizes, in hash rounds: Pareto(scale 1, `ALPHA`) draws capped at
/// `CAP`, scaled so that they total about `tasks x mean_work`, at least 1.
pub fn task_sizes(seed: u64, tasks: usize, mean_work: u64) -> Vec<u64> {
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xD1A6_0000_0000_0001);
    let raw: Vec<f64> = (0..tasks).map(|_| unit_open0(&mut rng).powf(-1.0 / ALPHA).min(CAP)).collect();
    let scale = tasks as f64 * mean_work as f64 / raw.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    raw.iter().map(|x| ((x * scale).round() as u64).max(1)).collect()
}

/// A dependent chain of `rounds` mixes from `seed`: cannot be parallelised
/// or folded away, and costs the same on every run.
#[inline]
pub fn hash_chain(seed: u64, rounds: u64) -> u64 {
    let mut h = seed;
    for r in 0..rounds {
        h = mix64(h ^ r);
    }
    h
}

/// The result of task `i` of size `size`.
#[inline]
fn task_result(i: usize, size: u64) -> u64 {
    hash_chain(mix64(i as u64 ^ 0x7A5C_0000_0000_0000), size)
}

/// The single-threaded reference: the wrapping sum of every task's result.
fn reference_sum(sizes: &[u64]) -> u64 {
    sizes.iter().enumerate().fold(0u64, |s, (i, &size)| s.wrapping_add(task_result(i, size)))
}

/// The largest share of the total work one worker would get if the tasks,
/// in their order, were split into `k` contiguous runs of equal count (a
/// static schedule). `k x share` bounds the static schedule's slowdown.
pub fn static_split_max_share(sizes: &[u64], k: usize) -> f64 {
    let total: u64 = sizes.iter().sum();
    let k = k.max(1);
    let worst = (0..k).map(|i| sizes[sizes.len() * i / k..sizes.len() * (i + 1) / k].iter().sum::<u64>()).max().unwrap_or(0);
    worst as f64 / total.max(1) as f64
}

thread_local! {
    /// A small number naming the thread a task ran on (0: not assigned yet).
    static THREAD_KEY: StdCell<u64> = const { StdCell::new(0) };
}
static NEXT_THREAD_KEY: AtomicU64 = AtomicU64::new(1);

fn thread_key() -> u64 {
    THREAD_KEY.with(|k| {
        if k.get() == 0 {
            k.set(NEXT_THREAD_KEY.fetch_add(1, Ordering::Relaxed));
        }
        k.get()
    })
}

/// What each task wrote in the last sample (one writer per slot; the end of
/// `for_each_task` orders the writes before the reads).
struct Slots {
    result: Vec<AtomicU64>,
    start: Vec<AtomicU64>,
    end: Vec<AtomicU64>,
    thread: Vec<AtomicU64>,
}

/// What the tasks of one sample left.
struct Outcome {
    sum: u64,
    /// Tasks that left a timestamp (all of them, unless one never ran).
    tasks_run: usize,
    /// Busy time (sum of its tasks' durations) per thread, in order of first task start.
    thread_busy_ns: Vec<u64>,
}

struct DynamicInstance<R: Runtime> {
    rt: R,
    slots: Slots,
    sizes: Vec<u64>,
    mean_work: u64,
    reference: u64,
    drop_task: Option<usize>,
}

impl<R: Runtime> Instance for DynamicInstance<R> {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let n = self.sizes.len();
        for s in [&self.slots.result, &self.slots.start, &self.slots.end, &self.slots.thread] {
            s.iter().for_each(|x| x.store(0, Ordering::Relaxed));
        }
        let (sizes, slots, drop_task, rt) = (&self.sizes, &self.slots, self.drop_task, &self.rt);
        let task = |i: usize| {
            if drop_task == Some(i) {
                return; // the fault: this task neither computes nor reports
            }
            let a = clock::now_ns();
            let r = task_result(i, sizes[i]);
            let b = clock::now_ns();
            slots.result[i].store(r, Ordering::Relaxed);
            slots.start[i].store(a, Ordering::Relaxed);
            slots.end[i].store(b, Ordering::Relaxed);
            slots.thread[i].store(thread_key(), Ordering::Relaxed);
        };
        let t0 = clock::now_ns();
        rt.install(|| rt.for_each_task(n, &task));
        let t1 = clock::now_ns();

        let (mut sum, mut tasks_run) = (0u64, 0usize);
        let (mut first_start, mut last_end) = (u64::MAX, 0u64);
        // thread key -> (first start, busy ns)
        let mut threads: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for i in 0..n {
            sum = sum.wrapping_add(slots.result[i].load(Ordering::Relaxed));
            let (a, b) = (slots.start[i].load(Ordering::Relaxed), slots.end[i].load(Ordering::Relaxed));
            if a == 0 {
                continue;
            }
            tasks_run += 1;
            first_start = first_start.min(a);
            last_end = last_end.max(b);
            let e = threads.entry(slots.thread[i].load(Ordering::Relaxed)).or_insert((a, 0));
            e.0 = e.0.min(a);
            e.1 += b.saturating_sub(a);
        }
        if tasks_run == 0 {
            anyhow::bail!("no task ran");
        }
        let mut busy: Vec<(u64, u64)> = threads.into_values().collect();
        busy.sort_unstable();
        timer.record_work(last_end.saturating_sub(first_start));
        timer.record_total(t1 - t0);
        Ok((Work::ops(n as u64), Outcome { sum, tasks_run, thread_busy_ns: busy.into_iter().map(|(_, ns)| ns).collect() }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("{:#018x} over {} tasks (single-threaded reference)", self.reference, self.sizes.len());
        Check { passed: l.sum == self.reference, expected, observed: format!("{:#018x} over {} tasks", l.sum, l.tasks_run) }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        let mut sorted = self.sizes.clone();
        sorted.sort_unstable();
        let total: u64 = sorted.iter().sum();
        let n = sorted.len();
        let median = if n % 2 == 1 { sorted[n / 2] as f64 } else { (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0 };
        let max = sorted.last().copied().unwrap_or(0);
        let threads = last.map(|l| l.thread_busy_ns.len());
        let runtime_threads = if R::FINE_GRAINED {
            format!("a pool of {} threads runs every task", self.rt.workers())
        } else {
            "a thread per task, all started at once: only pinning (--pin) holds them to the workers' CPUs".to_string()
        };
        json!({
            "runtime": R::NAME,
            "runtime_threads": runtime_threads,
            "tasks": n,
            "distribution": {
                "kind": "pareto",
                "alpha": ALPHA,
                "cap_over_scale": CAP,
                "mean_work_rounds": self.mean_work,
            },
            "task_rounds": {
                "min": sorted.first().copied().unwrap_or(0),
                "median": median,
                "max": max,
                "total": total,
            },
            "largest_task_share": max as f64 / total.max(1) as f64,
            "static_split_max_share": static_split_max_share(&self.sizes, self.rt.workers()),
            "reference_sum": format!("{:#018x}", self.reference),
            "last_sample_threads": threads,
            "last_sample_thread_busy_ns": last.filter(|l| l.thread_busy_ns.len() <= 64).map(|l| l.thread_busy_ns.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn};

    fn instance<R: Runtime>(workers: usize, tasks: usize, drop: bool) -> Box<dyn Sampler> {
        let sizes = task_sizes(5, tasks, 200);
        let reference = reference_sum(&sizes);
        let make = Make { sizes, mean_work: 200, reference, drop_task: drop.then_some(tasks / 2) };
        make.make(R::build(workers, None).unwrap()).unwrap()
    }

    fn passes<R: Runtime>() {
        for workers in [1, 2] {
            let mut inst = instance::<R>(workers, 40, false);
            for _ in 0..2 {
                let mut t = Timer::new();
                assert_eq!(inst.sample(1, &mut t).unwrap(), Work::ops(40));
                let v = inst.verify();
                assert!(v.passed, "{} {workers}: {v:?}", R::NAME);
                let (work, total) = (t.work_ns().unwrap(), t.total_ns().unwrap());
                assert!(work > 0 && work <= total, "work {work}, total {total}");
            }
            let d = inst.details();
            assert_eq!(d["runtime"], R::NAME);
            assert!(d["last_sample_threads"].as_u64().unwrap() >= 1);
            let busy = d["last_sample_thread_busy_ns"].as_array().unwrap();
            assert!(busy.len() <= workers.max(if R::FINE_GRAINED { 0 } else { 40 }), "{busy:?}");
        }
    }

    #[test]
    fn every_runtime_gives_the_reference_with_one_and_two_workers() {
        passes::<Rayon>();
        passes::<GlobalQueue>();
        passes::<Spawn>();
    }

    #[test]
    fn a_dropped_task_fails_the_verifier() {
        let mut inst = instance::<Rayon>(2, 40, true);
        inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed && v.observed.ends_with("over 39 tasks"), "{v:?}");
        let mut inst = instance::<GlobalQueue>(1, 40, true);
        inst.sample(1, &mut Timer::new()).unwrap();
        assert!(!inst.verify().passed);
    }

    #[test]
    fn a_wrong_or_repeated_result_fails_the_verifier() {
        let sizes = task_sizes(5, 40, 200);
        let reference = reference_sum(&sizes);
        let mut inst = DynamicInstance {
            rt: Rayon::build(1, None).unwrap(),
            slots: Slots { result: vec![], start: vec![], end: vec![], thread: vec![] },
            sizes: sizes.clone(),
            mean_work: 200,
            reference,
            drop_task: None,
        };
        assert!(inst.verify(&Outcome { sum: reference, tasks_run: 40, thread_busy_ns: vec![1] }).passed);
        // Task 3 run twice.
        assert!(
            !inst.verify(&Outcome { sum: reference.wrapping_add(task_result(3, sizes[3])), tasks_run: 41, thread_busy_ns: vec![1] }).passed
        );
        // Task 3 a round short.
        let short = reference.wrapping_sub(task_result(3, sizes[3])).wrapping_add(task_result(3, sizes[3] - 1));
        assert!(!inst.verify(&Outcome { sum: short, tasks_run: 40, thread_busy_ns: vec![1] }).passed);
    }

    #[test]
    fn sizes_are_seeded_heavy_tailed_and_total_the_mean() {
        let s = task_sizes(1, 10_000, 1000);
        assert_eq!(s, task_sizes(1, 10_000, 1000));
        assert_ne!(s, task_sizes(2, 10_000, 1000));
        let total: u64 = s.iter().sum();
        assert!((total as f64 / 1e7 - 1.0).abs() < 0.001, "{total}");
        let (min, max) = (*s.iter().min().unwrap(), *s.iter().max().unwrap());
        // Scale = mean / E[min(X, CAP)] = 1000 / (3 - 2 / sqrt(100)) ~ 357.
        assert!((340..=375).contains(&min), "{min}");
        assert!(max <= (min as f64 * CAP * 1.05) as u64 && max >= min * 50, "{min} {max}");
        let mut sorted = s.clone();
        sorted.sort_unstable();
        // Heavy tail: the median is well below the mean (Pareto 1.5: 2^(2/3) x scale ~ 567).
        assert!(sorted[5000] < 700, "{}", sorted[5000]);
        assert!(task_sizes(1, 10, 1).iter().all(|&x| x >= 1), "every task does some work");
    }

    #[test]
    fn the_static_split_share_sees_the_imbalance() {
        assert_eq!(static_split_max_share(&[1, 1, 1, 1], 2), 0.5);
        assert_eq!(static_split_max_share(&[7, 1, 1, 1], 2), 0.8);
        assert_eq!(static_split_max_share(&[7, 1, 1, 1], 1), 1.0);
    }

    #[test]
    fn the_chain_depends_on_seed_and_length() {
        assert_ne!(hash_chain(1, 10), hash_chain(2, 10));
        assert_ne!(hash_chain(1, 10), hash_chain(1, 11));
        assert_eq!(hash_chain(9, 0), 9);
        assert_ne!(task_result(0, 5), task_result(1, 5));
    }
}
