//! `rt.startup`: the time to start and stop a runtime, RustFiber's startup
//! latency benchmark. One operation builds the runtime's pool with the cell's
//! worker count (and pinning), sends it one probe task through `install`
//! that returns a value computed from a token, and drops the pool. Batched:
//! a sample runs as many operations as calibration says.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::ThreadId;

use anyhow::Context;
use serde_json::json;

use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;

pub struct Startup;

const FAULT: &str = "wrong-probe";
/// The fault: the probe runs on the calling thread, not through `install`
/// (the pool is still built and dropped).
const ON_CALLER: &str = "probe-on-caller";

/// Threads that have run a probe, numbered in the order of their first one.
static PROBE_THREADS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's number among those that ran a probe (taken at its first).
    static PROBE_THREAD: u64 = PROBE_THREADS.fetch_add(1, Ordering::Relaxed) + 1;
}

impl Workload for Startup {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.startup",
            group: "rt",
            summary: "Build a runtime's pool, run one probe task through install, drop the pool",
            measures: "the fixed cost of a runtime's lifecycle at each worker count: creating (and pinning) its threads, \
                       the first task's hand-off and result, and the teardown (ns per build)",
            unit: Unit::Ns,
            timed_region: "per operation: Runtime::build(workers, cpus), install of a probe task returning mix64(token), \
                           the id of the thread that ran it and that thread's number among the threads that ran probes \
                           (a thread-local), then a few additions and comparisons of what it returned (counters), and the \
                           drop of the runtime. rayon's drop signals its threads to exit without waiting for them; \
                           global-queue's joins them; spawn has no pool (build only checks the CPUs it would pin to, \
                           install runs the probe on the caller). The expected sum of the answers is computed after the \
                           window",
            total_window: None,
            verifier: "the wrapping sum of the answers (one per build) equal to the sum of mix64(seed ^ operation index) the \
                       caller computes after the window; and every probe ran on a thread of the pool just built: not the \
                       calling thread, and one no earlier probe ran on (pool threads are new threads). On spawn, which has \
                       no pool, every probe ran on the calling thread",
            batched: true,
            params: vec![runtime_param(&NAMES), ParamSpec::workers("worker threads of each pool built")],
            faults: &[FAULT, ON_CALLER],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let cfg = Config {
            workers: cell.worker_count(),
            cpus: cell.placement.cpus.clone(),
            salt: cell.seed,
            wrong_probe: cx.fault_is(FAULT),
            on_caller: cx.fault_is(ON_CALLER),
        };
        // `prepare_with` builds one pool of the cell's runtime first (which
        // also checks the pinning); `make` drops it.
        prepare_with(cell, false, cfg)
    }
}

#[derive(Clone, Debug)]
struct Config {
    workers: usize,
    cpus: Option<Vec<usize>>,
    salt: u64,
    wrong_probe: bool,
    on_caller: bool,
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        drop(rt);
        Ok(Sampled::boxed(StartupInstance::<R> { cfg: self, next: 0, newest_thread: 0, _rt: PhantomData }))
    }
}

/// What a sample's probes returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    /// Runtimes built, each answering one probe.
    builds: u64,
    /// The wrapping sum of the answers.
    sum: u64,
    /// The sum expected (computed after the window).
    expected_sum: u64,
    /// Probes that ran on a thread other than the caller.
    off_caller: u64,
    /// Probes that ran on a thread no earlier probe ran on.
    fresh: u64,
}

struct StartupInstance<R: Runtime> {
    cfg: Config,
    /// Index of the next operation (counts across samples).
    next: u64,
    /// The number of the newest thread that ran a probe of this instance.
    newest_thread: u64,
    _rt: PhantomData<fn() -> R>,
}

/// The probe's answer for `token`.
#[inline]
fn answer(token: u64) -> u64 {
    mix64(token)
}

impl Outcome {
    /// Whether every probe ran on a thread other than the caller that no
    /// earlier probe ran on: a new thread of the pool just built.
    fn on_new_pool_threads(&self) -> bool {
        self.off_caller == self.builds && self.fresh == self.builds
    }
}

impl<R: Runtime> Instance for StartupInstance<R> {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (workers, cpus, salt, first) = (self.cfg.workers, self.cfg.cpus.as_deref(), self.cfg.salt, self.next);
        // The fault: the first probe of each sample answers wrongly.
        let wrong = self.cfg.wrong_probe.then_some(first);
        let on_caller = self.cfg.on_caller;
        let caller: ThreadId = std::thread::current().id();
        let mut newest = self.newest_thread;
        let mut last = Outcome { builds: 0, sum: 0, expected_sum: 0, off_caller: 0, fresh: 0 };
        timer.start();
        for index in first..first + iters {
            let rt = R::build(workers, cpus).with_context(|| format!("building the {} runtime ({workers} workers)", R::NAME))?;
            last.builds += 1;
            let token = salt ^ index;
            let off = u64::from(wrong == Some(index));
            let probe = move || (answer(token).wrapping_add(off), std::thread::current().id(), PROBE_THREAD.with(|n| *n));
            let (got, thread, number) = if on_caller { probe() } else { rt.install(probe) };
            last.sum = last.sum.wrapping_add(got);
            last.off_caller += u64::from(thread != caller);
            last.fresh += u64::from(number > newest);
            newest = newest.max(number);
            drop(rt);
        }
        timer.stop();
        last.expected_sum = (first..first + iters).fold(0u64, |s, i| s.wrapping_add(answer(salt ^ i)));
        self.newest_thread = newest;
        self.next += iters;
        Ok((Work::ops(iters), last))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let from = if R::POOL {
            "each from a new thread of the pool just built (not the caller)"
        } else {
            "each from the calling thread (spawn has no pool)"
        };
        let expected = format!(
            "{} answers summing to {} (mix64 of each token, summed by the caller after the window), {from}",
            l.builds, l.expected_sum
        );
        let threads_ok = if R::POOL { l.on_new_pool_threads() } else { l.off_caller == 0 };
        let passed = l.builds > 0 && l.sum == l.expected_sum && threads_ok;
        let observed = format!(
            "{} answers summing to {}; {} of {} probes ran on a thread other than the caller, {} on a thread no earlier probe ran on",
            l.builds, l.sum, l.off_caller, l.builds, l.fresh
        );
        Check { passed, expected, observed }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "runtime": R::NAME,
            "pool_workers": self.cfg.workers,
            "cpus": self.cfg.cpus,
            "builds_total": self.next,
            "probe_ran_on_pool_thread": last.map(Outcome::on_new_pool_threads),
            "last_sample_probes_off_caller": last.map(|l| l.off_caller),
            "last_sample_probes_on_new_threads": last.map(|l| l.fresh),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::ready;
    use crate::workloads::rt::common::test_cell;
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn};

    fn run(inst: &mut dyn crate::workloads::contract::Sampler, iters: u64) -> bool {
        let mut t = Timer::new();
        assert_eq!(inst.sample(iters, &mut t).unwrap().ops, iters);
        assert!(t.work_ns().unwrap() > 0);
        inst.verify().passed
    }

    fn on<R: Runtime>() {
        for workers in [1, 2] {
            let cfg = Config { workers, cpus: None, salt: 9, wrong_probe: false, on_caller: false };
            let mut ok = cfg.clone().make(R::build(workers, None).unwrap()).unwrap();
            assert!(run(ok.as_mut(), 3) && run(ok.as_mut(), 2), "{} with {workers}", R::NAME);
            let d = ok.details();
            assert_eq!(d["builds_total"], 5);
            assert_eq!(d["probe_ran_on_pool_thread"], R::POOL, "{}", R::NAME);
            let mut bad = Config { wrong_probe: true, ..cfg.clone() }.make(R::build(workers, None).unwrap()).unwrap();
            assert!(!run(bad.as_mut(), 2), "{} with {workers}: the wrong probe is caught", R::NAME);
            let mut caller = Config { on_caller: true, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
            assert_eq!(run(caller.as_mut(), 2), !R::POOL, "{} with {workers}: a probe on the caller", R::NAME);
            if R::POOL {
                let v = caller.verify();
                assert!(v.observed.contains("0 of 2 probes ran on a thread other than the caller"), "{}", v.observed);
            }
        }
    }

    #[test]
    fn every_pool_answers_and_the_fault_is_caught() {
        on::<Rayon>();
        on::<GlobalQueue>();
        on::<Spawn>();
    }

    #[test]
    fn prepare_runs_on_every_runtime_and_pins() {
        let cpu = *crate::measure::affinity::current_thread().unwrap().last().unwrap();
        for rt in NAMES {
            let mut cell = test_cell("rt.startup", json!({"runtime": rt}), 2, None);
            cell.placement.cpus = Some(vec![cpu]);
            let mut inst = ready(Startup.prepare_here(&cell));
            assert!(run(inst.as_mut(), 2), "{rt}");
            assert_eq!(inst.details()["cpus"], json!([cpu]));
        }
    }
}
