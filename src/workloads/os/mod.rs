//! The `os` group: what the kernel charges for each primitive (the rvOS
//! micro-benchmark suite, measured as lmbench and perf bench do). Every
//! workload is batched: one sample runs a calibrated number of operations.

pub mod file_create;
pub mod file_read;
pub mod fs_common;
pub mod futex_ctx;
pub mod ipc_bw;
pub mod ipc_rtt;
pub mod mmap;
pub mod pipe_lifecycle;
pub mod process_spawn;
pub mod readdir;
pub mod sched_yield;
pub mod stat;
pub mod syscall;
pub mod thread_spawn;
pub mod unlink;

use anyhow::Context;

use crate::model::{Cell, Profile};
use crate::topology::Topology;
use crate::workloads::contract::{ParamSpec, PrepareContext};

/// The placement axis of workloads with two ends (round trips, hand-offs,
/// context switches): both ends on one logical CPU, or on two CPUs of
/// different physical cores. The two differ by an order of magnitude on many
/// machines, so every such row records which it used.
pub fn placement_param() -> ParamSpec {
    let both = vec!["same-cpu".into(), "cross-cpu".into()];
    ParamSpec::choice(
        "placement",
        "both ends on one logical CPU, or on two CPUs (of different physical cores when there are two)",
        &["same-cpu", "cross-cpu"],
        ["same-cpu"; 3],
    )
    .with_values(Profile::Quick, both.clone())
    .with_values(Profile::Full, both.clone())
    .with_values(Profile::Seed, both)
}

/// The logical CPUs of the two ends of a paired workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPair {
    pub a: usize,
    pub b: usize,
    /// What the pair is, in words, for the row's details.
    pub note: String,
}

/// The CPUs for the cell's `placement`, chosen among the CPUs the worker was
/// allowed when it started; `Err(reason)` when the placement is impossible
/// here (the row is then skipped with that reason).
pub fn cpu_pair(cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Result<CpuPair, String>> {
    let topo = Topology::live().context("reading the CPU topology")?.with_allowed(cx.allowed.clone());
    Ok(choose_pair(&topo, cell.str("placement")?))
}

/// `cpu_pair` on a given topology.
pub fn choose_pair(topo: &Topology, placement: &str) -> Result<CpuPair, String> {
    let cores = topo.allowed_cores();
    let Some(first) = cores.first().map(|c| c[0]) else { return Err("this process may use no CPU the topology lists".into()) };
    match placement {
        "same-cpu" => Ok(CpuPair { a: first, b: first, note: format!("both ends on CPU {first}") }),
        "cross-cpu" => {
            if let Some(second) = cores.get(1).map(|c| c[0]) {
                Ok(CpuPair { a: first, b: second, note: format!("CPUs {first} and {second}, different physical cores") })
            } else if let Some(&sibling) = cores[0].get(1) {
                Ok(CpuPair {
                    a: first,
                    b: sibling,
                    note: format!("CPUs {first} and {sibling}, SMT siblings of one core (no second core allowed)"),
                })
            } else {
                Err(format!("cross-cpu needs two CPUs; this process may use only CPU {first}"))
            }
        }
        other => Err(format!("unknown placement '{other}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    #[test]
    fn pairs_use_different_physical_cores_when_they_can() {
        assert_eq!(choose_pair(&fixture("kvm-2c"), "cross-cpu").map(|p| (p.a, p.b)), Ok((0, 1)));
        assert_eq!(choose_pair(&fixture("kvm-2c"), "same-cpu").map(|p| (p.a, p.b)), Ok((0, 0)));
        // 4c8t: 0 and 1 are siblings; the second core starts at 2.
        assert_eq!(choose_pair(&fixture("4c8t"), "cross-cpu").map(|p| (p.a, p.b)), Ok((0, 2)));
        assert_eq!(choose_pair(&fixture("2s48c96t"), "cross-cpu").map(|p| (p.a, p.b)), Ok((0, 1)));
    }

    #[test]
    fn restricted_sets_fall_back_to_siblings_or_skip() {
        let siblings = choose_pair(&fixture("4c8t").with_allowed(vec![2, 3]), "cross-cpu").unwrap();
        assert_eq!((siblings.a, siblings.b), (2, 3));
        assert!(siblings.note.contains("SMT siblings"));
        let one = choose_pair(&fixture("4c8t").with_allowed(vec![5]), "cross-cpu").unwrap_err();
        assert!(one.contains("only CPU 5"), "{one}");
        assert_eq!(choose_pair(&fixture("4c8t").with_allowed(vec![5]), "same-cpu").map(|p| p.a), Ok(5));
    }
}
