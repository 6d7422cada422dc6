//! `selftest.hang`: never returns from its first sample.

use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};

pub struct Hang;

impl Workload for Hang {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "selftest.hang",
            group: "selftest",
            summary: "Never returns from its first sample",
            measures: "nothing: proves a hang gives a timeout row within the timeout and the run goes on",
            unit: Unit::Ns,
            timed_region: "a sleep that never ends",
            total_window: None,
            verifier: "none is reached",
            batched: false,
            params: vec![],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, _cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        Ok(Prepared::ready(HangInstance))
    }
}

struct HangInstance;

impl Instance for HangInstance {
    type Outcome = ();

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, ())> {
        eprintln!("selftest.hang: sleeping forever");
        timer.start();
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }

    fn verify(&mut self, _: &()) -> Check {
        Check { passed: false, expected: "a hang".into(), observed: "a return".into() }
    }
}
