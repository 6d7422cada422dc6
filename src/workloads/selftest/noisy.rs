//! `selftest.noisy`: sleeps for seeded random durations, so its samples are
//! noisy; `slowdown` scales the sleeps to fake a regression. The jitter
//! models noise, not an input: each trial (a process) draws its own, from
//! the cell's seed and the process id.

use rand::{RngExt, SeedableRng};

use crate::measure::clock;
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct Noisy;

impl Workload for Noisy {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "selftest.noisy",
            group: "selftest",
            summary: "Sleeps base + a seeded random jitter per sample",
            measures: "nothing: exercises the stopping rule, outlier detection and the noisy variance class",
            unit: Unit::Ns,
            timed_region: "one sleep",
            total_window: None,
            verifier: "the sleep lasted at least the requested time (CLOCK_MONOTONIC)",
            batched: false,
            params: vec![
                ParamSpec::int("base_us", "fixed part of each sleep, microseconds", 0, 10_000_000, [500, 500, 500]),
                ParamSpec::int("jitter_us", "uniform random extra, microseconds", 0, 10_000_000, [1_000, 1_000, 1_000]),
                ParamSpec::int(
                    "slowdown_pct",
                    "scales every sleep (100 = as given); a treatment: compare matches across it",
                    1,
                    100_000,
                    [100, 100, 100],
                )
                .treated(),
            ],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        Ok(Prepared::ready(NoisyInstance {
            base_ns: cell.u64("base_us")? * 1000,
            jitter_ns: cell.u64("jitter_us")? * 1000,
            scale: cell.u64("slowdown_pct")? as f64 / 100.0,
            rng: rand::rngs::Xoshiro256PlusPlus::seed_from_u64(cell.seed ^ (u64::from(std::process::id()) << 32)),
        }))
    }
}

struct NoisyInstance {
    base_ns: u64,
    jitter_ns: u64,
    scale: f64,
    rng: rand::rngs::Xoshiro256PlusPlus,
}

impl Instance for NoisyInstance {
    /// The sleep asked for and the time it took, ns.
    type Outcome = (u64, u64);

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, (u64, u64))> {
        let jitter = if self.jitter_ns > 0 { self.rng.random_range(0..=self.jitter_ns) } else { 0 };
        let want = ((self.base_ns + jitter) as f64 * self.scale) as u64;
        timer.start();
        let a = clock::now_ns();
        std::thread::sleep(std::time::Duration::from_nanos(want));
        let slept = clock::now_ns() - a;
        timer.stop();
        Ok((Work::ops(1), (want, slept)))
    }

    fn verify(&mut self, &(want, slept): &(u64, u64)) -> Check {
        Check { passed: slept >= want, expected: format!(">= {want} ns"), observed: format!("{slept} ns") }
    }
}
