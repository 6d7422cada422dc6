//! `selftest.tiny`: a nanosecond-scale operation, batched, to exercise the
//! harness's calibration (iterations per sample grown until the clock's cost
//! is under 1% of a sample) and its timer and loop overhead records.

use std::hint::black_box;

use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};

pub struct Tiny;

impl Workload for Tiny {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "selftest.tiny",
            group: "selftest",
            summary: "One wrapping add per operation, batched",
            measures: "nothing: proves nanosecond operations are batched and the overheads recorded",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` wrapping adds through black_box",
            total_window: None,
            verifier: "the sum 0 + 1 + ... + (iters - 1) equals iters(iters-1)/2 (mod 2^64)",
            batched: true,
            params: vec![],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, _cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        Ok(Prepared::ready(TinyInstance))
    }
}

struct TinyInstance;

impl Instance for TinyInstance {
    /// The iterations and their sum.
    type Outcome = (u64, u64);

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, (u64, u64))> {
        let mut s = 0u64;
        timer.start();
        for i in 0..iters {
            s = black_box(s.wrapping_add(i));
        }
        timer.stop();
        Ok((Work::ops(iters), (iters, s)))
    }

    fn verify(&mut self, &(n, s): &(u64, u64)) -> Check {
        let expected = ((n as u128 * n.saturating_sub(1) as u128 / 2) % (1u128 << 64)) as u64;
        Check { passed: s == expected, expected: format!("{expected} (n(n-1)/2 for n = {n})"), observed: s.to_string() }
    }
}
