//! `os.syscall`: one operation is one raw system call, `syscall(SYS_getppid)`
//! (or `SYS_getpid`), issued through `libc::syscall` so that no libc cache
//! answers it, as `perf bench syscall basic` does. It is the floor of every
//! other primitive of the group: kernel entry, dispatch and return.

use serde_json::json;

use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;

pub struct Syscall;

/// Extra calls per hundred iterations that a build with the `planted-work`
/// feature adds to every cell (0 otherwise): the planted change of
/// `scripts/sensitivity.sh`'s `exe=` case, a build doing 2% more work.
const PLANTED_PAD_PCT: u64 = if cfg!(feature = "planted-work") { 2 } else { 0 };

/// The fault: the timed loop compares every result against a wrong id.
pub const FAULT: &str = "wrong-pid";

impl Workload for Syscall {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.syscall",
            group: "os",
            summary: "One raw system call (getppid or getpid through syscall(2), bypassing libc)",
            measures: "the cost of entering and leaving the kernel for a call that does almost nothing: \
                       the floor under every other kernel primitive",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` calls of syscall(SYS_getppid) (or SYS_getpid) and, per call, a comparison of the \
                           returned id with the one read at prepare (a mismatch counter); reading the expected id is outside. With \
                           pad_pct above 0, that percentage of the iterations make one more call (a planted slowdown)",
            total_window: None,
            verifier: "every call returned the id read once at prepare (getppid() or getpid() through libc): 0 mismatches",
            batched: true,
            params: vec![
                ParamSpec::choice_of(
                    "call",
                    "the system call: getppid or getpid (both return a number the kernel keeps, with no other work)",
                    [Call::Getppid, Call::Getppid, Call::Getpid],
                ),
                ParamSpec::int(
                    "pad_pct",
                    "extra calls inside the window, in percent of the counted ones (10: every tenth iteration calls twice, about \
                     10% slower): a planted slowdown that shows whether a comparison sees it; a treatment: compare matches across it",
                    0,
                    100,
                    [0, 0, 0],
                )
                .treated(),
            ],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let call = cell.choice::<Call>("call")?;
        let mut inst = SyscallInstance::new(call, cx.fault_is(FAULT));
        inst.pad_pct = cell.u64("pad_pct")?;
        Ok(Prepared::ready(inst))
    }
}

named_enum! {
    /// Which id the call returns.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Call {
        Getppid = "getppid",
        Getpid = "getpid",
    }
}

impl Call {
    fn number(self) -> libc::c_long {
        match self {
            Call::Getppid => libc::SYS_getppid,
            Call::Getpid => libc::SYS_getpid,
        }
    }

    /// The id through libc's wrapper, independent of the timed raw calls.
    fn expected(self) -> libc::c_long {
        // SAFETY: getppid and getpid take no arguments and cannot fail.
        let id = unsafe {
            match self {
                Call::Getppid => libc::getppid(),
                Call::Getpid => libc::getpid(),
            }
        };
        id as libc::c_long
    }
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    calls: u64,
    mismatches: Mismatches,
    /// The last value a call returned.
    returned: libc::c_long,
}

struct SyscallInstance {
    call: Call,
    expected: libc::c_long,
    /// The id the timed loop compares with (`expected`, or a wrong one under the fault).
    compared: libc::c_long,
    /// Extra calls per hundred iterations (the planted slowdown).
    pad_pct: u64,
}

impl SyscallInstance {
    fn new(call: Call, fault: bool) -> SyscallInstance {
        let expected = call.expected();
        SyscallInstance { call, expected, compared: if fault { expected + 1 } else { expected }, pad_pct: 0 }
    }
}

impl Instance for SyscallInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (nr, want, pad) = (self.call.number(), self.compared, self.pad_pct + PLANTED_PAD_PCT);
        let mut mismatches = Mismatches::new();
        let mut returned = 0;
        let mut calls = iters;
        timer.start();
        if pad == 0 {
            for _ in 0..iters {
                // SAFETY: getppid/getpid take no arguments and touch no memory.
                returned = unsafe { libc::syscall(nr) };
                mismatches.add_if(returned != want);
            }
        } else {
            let mut owed = 0u64;
            for _ in 0..iters {
                // SAFETY: as above.
                returned = unsafe { libc::syscall(nr) };
                mismatches.add_if(returned != want);
                owed += pad;
                if owed >= 100 {
                    owed -= 100;
                    calls += 1;
                    // SAFETY: as above.
                    returned = unsafe { libc::syscall(nr) };
                    mismatches.add_if(returned != want);
                }
            }
        }
        timer.stop();
        Ok((Work::ops(iters), Outcome { calls, mismatches, returned }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        Check {
            passed: l.mismatches.is_empty(),
            expected: format!("0 mismatches: every {} returns {} (read through libc at prepare)", self.call.as_str(), self.expected),
            observed: format!("{} (last call returned {})", l.mismatches.counted(l.calls, "calls"), l.returned),
        }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "call": self.call.as_str(),
            "syscall_number": self.call.number(),
            "expected_id": self.expected,
            "pad_pct": self.pad_pct,
            "last_sample_calls": last.map(|l| l.calls),
            "last_sample_mismatches": last.map(|l| l.mismatches.count),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_calls_return_the_libc_ids() {
        for call in [Call::Getppid, Call::Getpid] {
            let mut inst = SyscallInstance::new(call, false);
            let mut t = Timer::new();
            let (w, out) = inst.sample(1000, &mut t).unwrap();
            assert_eq!(w, Work::ops(1000));
            assert!(t.work_ns().unwrap() > 0);
            let v = inst.verify(&out);
            assert!(v.passed, "{v:?}");
        }
        assert_eq!(Call::Getpid.expected(), std::process::id() as libc::c_long);
    }

    #[test]
    fn the_verifier_fails_on_a_wrong_id() {
        let mut inst = SyscallInstance::new(Call::Getppid, true);
        let (_, out) = inst.sample(10, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert!(v.observed.starts_with("10 mismatches in 10 calls"), "{}", v.observed);
        assert!(!inst.verify(&Outcome { calls: 5, mismatches: Mismatches { count: 1, first: None }, returned: 1 }).passed);
    }

    #[test]
    fn padding_adds_its_share_of_calls_and_each_is_verified() {
        let mut inst = SyscallInstance::new(Call::Getpid, false);
        inst.pad_pct = 10;
        let (w, out) = inst.sample(1000, &mut Timer::new()).unwrap();
        assert_eq!(w, Work::ops(1000), "the counted operations stay the iterations");
        assert_eq!(out.calls, 1100);
        assert!(inst.verify(&out).passed);
        let mut bad = SyscallInstance::new(Call::Getpid, true);
        bad.pad_pct = 50;
        let (_, out) = bad.sample(10, &mut Timer::new()).unwrap();
        assert_eq!(out.mismatches.count, 15, "padding calls are checked too");
    }

    #[test]
    fn calls_parse_by_name() {
        assert_eq!(Call::from_name("getpid"), Some(Call::Getpid));
        assert_eq!(Call::from_name("gettid"), None);
    }
}
