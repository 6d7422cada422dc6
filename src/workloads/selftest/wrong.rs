//! `selftest.wrong`: computes a sum with a deliberate error, so its verifier
//! fails.

use crate::model::Cell;
use crate::workloads::contract::{
    Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Verdict, Work, Workload, WorkloadSpec,
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
        Ok(Prepared::Ready(Box::new(WrongInstance { n: cell.u64("n")?, error: cell.u64("error")?, last: None })))
    }
}

struct WrongInstance {
    n: u64,
    error: u64,
    last: Option<u64>,
}

impl Instance for WrongInstance {
    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        let (s, w) = super::sum_sample(self.n, timer);
        self.last = Some(s + self.error);
        Ok(w)
    }

    fn verify(&mut self) -> Verdict {
        let expected = self.n * (self.n + 1) / 2;
        match self.last {
            Some(v) => Verdict { passed: v == expected, expected: format!("{expected} (n(n+1)/2)"), observed: v.to_string() },
            None => Verdict { passed: false, expected: expected.to_string(), observed: "no sample ran".into() },
        }
    }
}
