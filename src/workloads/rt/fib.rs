//! `rt.fib`: a million tiny tasks (RustFiber's first benchmark). A sample
//! computes fib(n) by the doubly recursive definition: every call above the
//! cutoff hands its two sub-calls to the runtime with `join`, calls at or below
//! it run sequentially. One operation is one task, a closure given to `join`;
//! the figure is the window divided by the tasks, in ns per task.

use serde_json::json;

use super::common::{Windows, overhead_note, timed_install};
use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct Fib;

const FAULT: &str = "drop-task";

impl Workload for Fib {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.fib",
            group: "rt",
            summary: "Recursive Fibonacci forking two tasks per call above a cutoff: many tiny tasks",
            measures: "the cost of creating, scheduling and joining tiny tasks under fork-join recursion (ns per task, the \
                       leaves' small sequential work included), and how it scales with workers",
            unit: Unit::NsPerOp,
            timed_region: concat!(
                "inside the runtime's install, on the pool thread that runs the root call: fib(n) from the root call to its \
                 result (every join, steal and sequential leaf); the runtime was built in prepare, outside the window",
                overhead_note!()
            ),
            total_window: None,
            verifier: "the root's result equals fib(n) computed iteratively in prepare (exact, in u64)",
            batched: false,
            params: vec![
                ParamSpec::int("n", "compute fib(n)", 2, 90, [30, 32, 32]),
                ParamSpec::int(
                    "cutoff",
                    "calls of fib(m) with m <= cutoff run sequentially (no task); n - cutoff fixes the task count: 23 gives \
                     150,048 tasks, 25 gives 392,834, 27 gives 1,028,456 (about a million tiny tasks)",
                    1,
                    89,
                    [5, 5, 5],
                ),
                runtime_param(&NAMES),
                ParamSpec::workers("worker threads of the runtime's pool"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let n = cell.u64("n")?;
        let cutoff = cell.u64("cutoff")?;
        anyhow::ensure!(cutoff < n, "cutoff = {cutoff} is not below n = {n}: no task would be spawned");
        let joins = joins(n, cutoff);
        let cfg = Config { n, cutoff, expected: fib_iterative(n), joins, drop_task: cx.fault_is(FAULT) };
        prepare_with(cell, true, cfg)
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    n: u64,
    cutoff: u64,
    expected: u64,
    /// Calls above the cutoff: each is one `join`, of two tasks.
    joins: u64,
    drop_task: bool,
}

impl Config {
    fn tasks(&self) -> u64 {
        2 * self.joins
    }
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(FibInstance { rt, cfg: self, windows: Windows::default() }))
    }
}

/// fib(n) by iteration: the reference.
fn fib_iterative(n: u64) -> u64 {
    (0..n).fold((0u64, 1u64), |(a, b), _| (b, a.wrapping_add(b))).0
}

/// The number of calls above the cutoff in the recursion tree of fib(n):
/// J(m) = 0 for m <= cutoff, else 1 + J(m - 1) + J(m - 2).
fn joins(n: u64, cutoff: u64) -> u64 {
    let (mut j2, mut j1) = (0u64, 0u64); // J(m - 2), J(m - 1)
    for m in 0..=n {
        let j = if m <= cutoff { 0 } else { 1u64.saturating_add(j1).saturating_add(j2) };
        (j2, j1) = (j1, j);
    }
    j1
}

/// The sequential leaf: the same doubly recursive definition, without tasks.
fn fib_sequential(m: u64) -> u64 {
    if m < 2 { m } else { fib_sequential(m - 1).wrapping_add(fib_sequential(m - 2)) }
}

/// fib(m) with a task per sub-call above the cutoff. `drop_leaf` (the fault)
/// follows the first sub-call down, so exactly one leaf returns 0.
fn fib_tasks<R: Runtime>(rt: &R, m: u64, cutoff: u64, drop_leaf: bool) -> u64 {
    if m <= cutoff {
        return if drop_leaf { 0 } else { fib_sequential(m) };
    }
    let (a, b) = rt.join(|| fib_tasks(rt, m - 1, cutoff, drop_leaf), || fib_tasks(rt, m - 2, cutoff, false));
    a.wrapping_add(b)
}

struct FibInstance<R: Runtime> {
    rt: R,
    cfg: Config,
    windows: Windows,
}

impl<R: Runtime> Instance for FibInstance<R> {
    /// The root's result.
    type Outcome = u64;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, u64)> {
        let (rt, c) = (&self.rt, self.cfg);
        let v = timed_install(rt, timer, || fib_tasks(rt, c.n, c.cutoff, c.drop_task));
        self.windows.push(timer);
        Ok((Work::ops(c.tasks()), v))
    }

    fn verify(&mut self, &v: &u64) -> Check {
        let expected = format!("{} (fib({}) by iteration)", self.cfg.expected, self.cfg.n);
        Check { passed: v == self.cfg.expected, expected, observed: v.to_string() }
    }

    fn details(&self, _: Option<&u64>) -> serde_json::Value {
        let c = &self.cfg;
        json!({
            "runtime_counters": self.rt.counters().details(self.windows.samples()),
            "runtime": R::NAME,
            "pool_workers": self.rt.workers(),
            "n": c.n,
            "cutoff": c.cutoff,
            "expected": c.expected,
            "joins": c.joins,
            "tasks": c.tasks(),
            "sequential_leaves": c.joins + 1,
            "tasks_counted": "analytically: 2 tasks per call above the cutoff",
            "median_window_ns": self.windows.median_ns(),
            "overhead_dominated": self.windows.overhead_dominated(c.tasks()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::workloads::os::fs_common::ready;
    use crate::workloads::rt::common::{test_cell, verdicts};
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn};

    fn config(n: u64, cutoff: u64, drop_task: bool) -> Config {
        Config { n, cutoff, expected: fib_iterative(n), joins: joins(n, cutoff), drop_task }
    }

    /// fib(m) counting its joins, to check the analytic count.
    fn counted<R: Runtime>(rt: &R, m: u64, cutoff: u64, count: &AtomicU64) -> u64 {
        if m <= cutoff {
            return fib_sequential(m);
        }
        count.fetch_add(1, Ordering::Relaxed);
        let (a, b) = rt.join(|| counted(rt, m - 1, cutoff, count), || counted(rt, m - 2, cutoff, count));
        a + b
    }

    fn on<R: Runtime>() {
        for workers in [1, 2] {
            let (n, cutoff) = if R::FINE_GRAINED { (20, 3) } else { (9, 5) };
            let mut ok = config(n, cutoff, false).make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(ok.as_mut(), 3), [true; 3], "{} with {workers}", R::NAME);
            assert_eq!(ok.details()["overhead_dominated"], true, "a tiny size is marked");
            let mut bad = config(n, cutoff, true).make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(verdicts(bad.as_mut(), 1), [false], "{} with {workers}: the dropped leaf is caught", R::NAME);

            let rt = R::build(workers, None).unwrap();
            let count = AtomicU64::new(0);
            assert_eq!(rt.install(|| counted(&rt, n, cutoff, &count)), fib_iterative(n));
            assert_eq!(count.into_inner(), joins(n, cutoff));
        }
    }

    #[test]
    fn fib_is_exact_on_every_runtime_and_the_fault_is_caught() {
        on::<Rayon>();
        on::<GlobalQueue>();
        on::<Spawn>();
    }

    #[test]
    fn references_and_counts() {
        assert_eq!(fib_iterative(30), 832_040);
        assert_eq!(fib_iterative(90), 2_880_067_194_370_816_120);
        assert_eq!(fib_sequential(20), fib_iterative(20));
        assert_eq!(2 * joins(30, 3), 1_028_456);
        assert_eq!(2 * joins(30, 5), 392_834);
        assert_eq!(2 * joins(30, 7), 150_048);
        assert_eq!(2 * joins(32, 9), 150_048);
        assert_eq!(2 * joins(32, 5), 1_028_456);
        assert_eq!(joins(5, 5), 0);
        assert_eq!(joins(6, 5), 1);
    }

    #[test]
    fn prepare_skips_spawn_and_refuses_a_cutoff_without_tasks() {
        let cell = |rt: &str, n: u64, cutoff: u64| test_cell("rt.fib", json!({"n": n, "cutoff": cutoff, "runtime": rt}), 2, None);
        assert!(matches!(Fib.prepare_here(&cell("spawn", 20, 3)), Ok(Prepared::NotApplicable(s)) if s.contains("thread per task")));
        assert!(Fib.prepare_here(&cell("rayon", 5, 5)).is_err());
        let mut inst = ready(Fib.prepare_here(&cell("global-queue", 16, 4)));
        assert_eq!(verdicts(inst.as_mut(), 2), [true; 2]);
        assert_eq!(inst.details()["pool_workers"], 2);
    }
}
