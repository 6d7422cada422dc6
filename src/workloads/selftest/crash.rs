//! `selftest.crash`: dies by SIGSEGV during its first timed sample.

use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};

pub struct Crash;

impl Workload for Crash {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "selftest.crash",
            group: "selftest",
            summary: "Dies by SIGSEGV after a given number of good samples",
            measures: "nothing: proves a crash gives a failed row with the signal and the run goes on",
            unit: Unit::Ns,
            timed_region: "a sum over 1..=1000, until the crash",
            total_window: None,
            verifier: "the sum equals n(n+1)/2",
            batched: false,
            params: vec![ParamSpec::int("after", "good samples before the crash", 0, 1000, [1, 1, 1])],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        Ok(Prepared::ready(CrashInstance { left: cell.u64("after")? }))
    }
}

struct CrashInstance {
    left: u64,
}

impl Instance for CrashInstance {
    /// The sum.
    type Outcome = u64;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, u64)> {
        if self.left == 0 {
            eprintln!("selftest.crash: raising SIGSEGV");
            // SAFETY: restoring the default action and raising a signal at
            // ourselves; the process dies as a segmentation fault would
            // kill it (Rust's own SIGSEGV handler would otherwise intervene).
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
            unreachable!("SIGSEGV did not kill the process");
        }
        self.left -= 1;
        let (s, w) = super::sum_sample(1000, timer);
        Ok((w, s))
    }

    fn verify(&mut self, &sum: &u64) -> Check {
        Check::equal(500_500, sum)
    }
}
