//! `rt.task-alloc`: the cost of creating and running empty tasks,
//! RustFiber's allocation-throughput benchmark. One operation is one task of
//! `for_each_task(tasks, ..)` whose only work is counting itself (adding its
//! [`tally`], a count and a sum of index + 1 in one word); the figure is ns
//! per task.
//!
//! The count goes to a per-thread counter on its own cache line (a stripe
//! chosen once per thread), not to one shared atomic: with two workers a
//! shared counter would bounce between the cores on every task and measure
//! the cache line, not the runtime.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam::utils::CachePadded;
use serde_json::json;

use super::common::{TALLY_MAX_ITEMS, Tally, Windows, overhead_note, tally, timed_install};
use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct TaskAlloc;

/// The faults: the last task does not count itself; or it does not and
/// task 0 counts itself twice (the count stays right; with one task the two
/// cancel).
const FAULT: &str = "skip-task";
const LOSE_AND_DOUBLE: &str = "lose-and-double";
/// Counter stripes: threads get distinct ones while there are at most this
/// many threads in the process.
const STRIPES: usize = 64;

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's counter stripe.
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl Workload for TaskAlloc {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.task-alloc",
            group: "rt",
            summary: "Create and run empty tasks: for_each_task over a task that only counts itself",
            measures: "the runtime's fixed cost per task: creating it (allocation included), queuing, taking it and \
                       running it, with no work to hide it (ns per task)",
            unit: Unit::NsPerOp,
            timed_region: concat!(
                "inside the runtime's install, on the pool thread that runs it: for_each_task(tasks, ..) from the first \
                 task's creation to the last one's end; task i adds (i + 1) x 2^29 + 1 to its thread's counter (its own \
                 cache line): the low 29 bits count tasks, the bits above sum i + 1; the runtime is built in prepare and \
                 the counters are summed after the window",
                overhead_note!()
            ),
            total_window: None,
            verifier: "every task ran once: the per-thread counters add up to `tasks` tasks counted whose indices + 1 sum to \
                       the closed form tasks(tasks+1)/2 (mod 2^35), so that a lost task shows in the count and a lost one \
                       plus a doubled one in the sum",
            batched: false,
            params: vec![
                ParamSpec::int("tasks", "empty tasks created per sample", 1, TALLY_MAX_ITEMS as i64, [1_000_000, 1_000_000, 1_000_000]),
                runtime_param(&NAMES),
                ParamSpec::workers("worker threads of the runtime's pool"),
            ],
            faults: &[FAULT, LOSE_AND_DOUBLE],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let lose_and_double = cx.fault_is(LOSE_AND_DOUBLE);
        let cfg = Config { tasks: cell.usize("tasks")?, skip_task: cx.fault_is(FAULT) || lose_and_double, double_task: lose_and_double };
        prepare_with(cell, true, cfg)
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    tasks: usize,
    /// The last task does not count itself.
    skip_task: bool,
    /// Task 0 counts itself twice.
    double_task: bool,
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        let counters = (0..STRIPES).map(|_| CachePadded::new(AtomicU64::new(0))).collect();
        Ok(Sampled::boxed(AllocInstance { rt, cfg: self, counters, windows: Windows::default() }))
    }
}

/// The tasks that ran in one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    ran: Tally,
    /// Stripes that counted tasks: about the threads that ran them.
    stripes: usize,
}

struct AllocInstance<R: Runtime> {
    rt: R,
    cfg: Config,
    counters: Vec<CachePadded<AtomicU64>>,
    windows: Windows,
}

impl<R: Runtime> Instance for AllocInstance<R> {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        for c in &self.counters {
            c.store(0, Ordering::Relaxed);
        }
        let (rt, counters, n) = (&self.rt, &self.counters, self.cfg.tasks);
        // The faults: the last task does not count itself; task 0 counts twice.
        let skip = if self.cfg.skip_task { n - 1 } else { usize::MAX };
        let double = if self.cfg.double_task { 0 } else { usize::MAX };
        timed_install(rt, timer, || {
            rt.for_each_task(n, &|i| {
                if i != skip {
                    counters[STRIPE.with(|s| *s)].fetch_add(tally(i as u64), Ordering::Relaxed);
                }
                if i == double {
                    counters[STRIPE.with(|s| *s)].fetch_add(tally(i as u64), Ordering::Relaxed);
                }
            })
        });
        self.windows.push(timer);
        let counts = self.counters.iter().map(|c| c.load(Ordering::Relaxed));
        let total = counts.clone().fold(0u64, u64::wrapping_add);
        Ok((Work::ops(n as u64), Outcome { ran: Tally::of(total), stripes: counts.filter(|&c| c > 0).count() }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let want = Tally::expected(self.cfg.tasks as u64);
        let expected = format!("{want}: each of the {} tasks created ran once", self.cfg.tasks);
        Check { passed: l.ran == want, expected, observed: l.ran.to_string() }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "runtime_counters": self.rt.counters().details(self.windows.samples()),
            "runtime": R::NAME,
            "pool_workers": self.rt.workers(),
            "tasks": self.cfg.tasks,
            "last_sample_threads_that_ran_tasks": last.map(|l| l.stripes),
            "median_window_ns": self.windows.median_ns(),
            "overhead_dominated": self.windows.overhead_dominated(self.cfg.tasks as u64),
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
        let tasks = if R::FINE_GRAINED { 20_000 } else { 50 };
        for workers in [1, 2] {
            let cfg = Config { tasks, skip_task: false, double_task: false };
            let mut ok = cfg.make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(ok.as_mut(), 3), [true; 3], "{} with {workers}", R::NAME);
            let threads = ok.details()["last_sample_threads_that_ran_tasks"].as_u64().unwrap();
            assert!(threads >= 1, "{}", R::NAME);
            let mut bad = Config { skip_task: true, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(bad.as_mut(), 1), [false], "{} with {workers}: the skipped task is caught", R::NAME);
            let mut both = Config { skip_task: true, double_task: true, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(both.as_mut(), 1), [false], "{} with {workers}: a lost plus a doubled task is caught", R::NAME);
            let v = both.verify();
            assert!(v.observed.starts_with(&format!("{tasks} counted, sum")), "the count alone is right: {}", v.observed);
        }
    }

    #[test]
    fn every_task_runs_on_every_runtime_and_the_fault_is_caught() {
        on::<Rayon>();
        on::<GlobalQueue>();
        on::<Spawn>();
    }

    #[test]
    fn prepare_skips_spawn() {
        let cell = |rt: &str| test_cell("rt.task-alloc", json!({"tasks": 1_000, "runtime": rt}), 1, None);
        assert!(matches!(TaskAlloc.prepare_here(&cell("spawn")), Ok(Prepared::NotApplicable(_))));
        let mut inst = ready(TaskAlloc.prepare_here(&cell("rayon")));
        assert_eq!(verdicts(inst.as_mut(), 2), [true; 2]);
        assert_eq!(inst.details()["overhead_dominated"], true);
    }
}
