//! `selftest.wrong`: computes a sum with a deliberate error, so its verifier
//! fails.

use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct Wrong;

impl Workload for Wrong {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "selftest.wrong",
            group: "selftest",
            summary: "Sums 1..=n and adds a deliberate error",
            measures: "nothing: proves a wrong answer gives an invalid row that stays out of every table",
            unit: Unit::Ns,
            timed_region: "the sum",
            total_window: None,
            verifier: "the sum equals the closed form n(n+1)/2",
            batched: false,
            params: vec![
                ParamSpec::int("n", "sum 1..=n", 1, 1 << 30, [100_000, 100_000, 100_000]),
                ParamSpec::int("error", "added to the sum (0 makes the row valid)", 0, 1 << 30, [1, 1, 1]),
            ],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        Ok(Prepared::ready(WrongInstance { n: cell.u64("n")?, error: cell.u64("error")? }))
    }
}

struct WrongInstance {
    n: u64,
    error: u64,
}

impl Instance for WrongInstance {
    /// The sum, error added.
    type Outcome = u64;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, u64)> {
        let (s, w) = super::sum_sample(self.n, timer);
        Ok((w, s + self.error))
    }

    fn verify(&mut self, &v: &u64) -> Check {
        let expected = self.n * (self.n + 1) / 2;
        Check { passed: v == expected, expected: format!("{expected} (n(n+1)/2)"), observed: v.to_string() }
    }
}
