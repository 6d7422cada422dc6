//! `rt.startup`: the time to start and stop a runtime, RustFiber's startup
//! latency benchmark. One operation builds the runtime's pool with the cell's
//! worker count (and pinning), sends it one probe task through `install`
//! that returns a value computed from a token, and drops the pool. Batched:
//! a sample runs as many operations as calibration says.

use std::marker::PhantomData;
use std::thread::ThreadId;

use anyhow::Context;
use serde_json::json;

use super::runtime::{Maker, NAMES, Runtime, prepare_with, runtime_param};
use crate::model::Cell;
use crate::workloads::contract::{Instance, ParamSpec, Prepared, TableShape, Timer, Unit, Verdict, Work, Workload, WorkloadSpec};
use crate::workloads::cpu::mix64;

pub struct Startup;

const FAULT: &str = "wrong-probe";

impl Workload for Startup {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "rt.startup",
            group: "rt",
            summary: "Build a runtime's pool, run one probe task through install, drop the pool",
            measures: "the fixed cost of a runtime's lifecycle at each worker count: creating (and pinning) its threads, \
                       the first task's hand-off and result, and the teardown (ns per build)",
            unit: Unit::Ns,
            timed_region: "per operation: Runtime::build(workers, cpus), install of a probe task returning mix64(token), the \
                           comparison of its answer with the caller's own mix64(token) (a mismatch counter), and the drop of \
                           the runtime. rayon's drop signals its threads to exit without waiting for them; global-queue's \
                           joins them; spawn has no pool (build only checks the CPUs it would pin to, install runs the \
                           probe on the caller)",
            total_window: None,
            verifier: "every probe answered: as many answers as builds, each equal to mix64(seed ^ operation index) computed \
                       by the caller",
            batched: true,
            params: vec![runtime_param(&NAMES), ParamSpec::workers("worker threads of each pool built")],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell) -> anyhow::Result<Prepared> {
        let cfg =
            Config { workers: cell.worker_count(), cpus: cell.placement.cpus.clone(), salt: cell.seed, wrong_probe: cell.fault_is(FAULT) };
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
}

impl Maker for Config {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Instance>> {
        drop(rt);
        Ok(Box::new(StartupInstance::<R> { cfg: self, next: 0, last: None, _rt: PhantomData }))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Last {
    builds: u64,
    answers: u64,
    mismatches: u64,
    /// Whether the last probe ran on a thread other than the caller.
    probe_on_other_thread: bool,
}

struct StartupInstance<R: Runtime> {
    cfg: Config,
    /// Index of the next operation (counts across samples).
    next: u64,
    last: Option<Last>,
    _rt: PhantomData<fn() -> R>,
}

/// The probe's answer for `token`.
#[inline]
fn answer(token: u64) -> u64 {
    mix64(token)
}

impl<R: Runtime> Instance for StartupInstance<R> {
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        let (workers, cpus, salt, first) = (self.cfg.workers, self.cfg.cpus.as_deref(), self.cfg.salt, self.next);
        // The fault: the first probe of each sample answers wrongly.
        let wrong = self.cfg.wrong_probe.then_some(first);
        let caller: ThreadId = std::thread::current().id();
        let mut last = Last { builds: 0, answers: 0, mismatches: 0, probe_on_other_thread: false };
        timer.start();
        for index in first..first + iters {
            let rt = R::build(workers, cpus).with_context(|| format!("building the {} runtime ({workers} workers)", R::NAME))?;
            last.builds += 1;
            let token = salt ^ index;
            let off = u64::from(wrong == Some(index));
            let (got, thread) = rt.install(move || (answer(token).wrapping_add(off), std::thread::current().id()));
            last.answers += 1;
            last.mismatches += u64::from(got != answer(token));
            last.probe_on_other_thread = thread != caller;
            drop(rt);
        }
        timer.stop();
        self.next += iters;
        self.last = Some(last);
        Ok(Work::ops(iters))
    }

    fn verify(&mut self) -> Verdict {
        let Some(l) = self.last else {
            return Verdict { passed: false, expected: "a sample".into(), observed: "no sample ran".into() };
        };
        Verdict {
            passed: l.mismatches == 0 && l.answers == l.builds && l.builds > 0,
            expected: format!("{} probes answered, 0 wrong (mix64 of each token, by the caller)", l.builds),
            observed: format!("{} probes answered, {} wrong", l.answers, l.mismatches),
        }
    }

    fn details(&self) -> serde_json::Value {
        json!({
            "runtime": R::NAME,
            "pool_workers": self.cfg.workers,
            "cpus": self.cfg.cpus,
            "builds_total": self.next,
            "probe_ran_on_pool_thread": self.last.map(|l| l.probe_on_other_thread),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::ready;
    use crate::workloads::rt::common::test_cell;
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn};

    fn run(inst: &mut dyn Instance, iters: u64) -> bool {
        let mut t = Timer::new();
        assert_eq!(inst.sample(iters, &mut t).unwrap().ops, iters);
        assert!(t.work_ns().unwrap() > 0);
        inst.verify().passed
    }

    fn on<R: Runtime>() {
        for workers in [1, 2] {
            let cfg = Config { workers, cpus: None, salt: 9, wrong_probe: false };
            let mut ok = cfg.clone().make(R::build(workers, None).unwrap()).unwrap();
            assert!(run(ok.as_mut(), 3) && run(ok.as_mut(), 2), "{} with {workers}", R::NAME);
            let d = ok.details();
            assert_eq!(d["builds_total"], 5);
            assert_eq!(d["probe_ran_on_pool_thread"], R::NAME != Spawn::NAME, "{}", R::NAME);
            let mut bad = Config { wrong_probe: true, ..cfg }.make(R::build(workers, None).unwrap()).unwrap();
            assert!(!run(bad.as_mut(), 2), "{} with {workers}: the wrong probe is caught", R::NAME);
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
            let mut inst = ready(Startup.prepare(&cell));
            assert!(run(inst.as_mut(), 2), "{rt}");
            assert_eq!(inst.details()["cpus"], json!([cpu]));
        }
    }
}
