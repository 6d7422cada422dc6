//! The `hw` group: what CPU and memory-system features do to a program (the
//! OS/CPU feature study): thread placement and sharing (`hw.affinity`), the
//! hardware prefetcher (`hw.prefetch`), SMT siblings (`hw.smt`) and
//! transparent huge pages (`hw.thp`).
//!
//! Sizes and CPUs come from the machine, read in the worker through the
//! envelope and the topology, never from constants tuned for one CPU; every
//! row records what it resolved. What the machine cannot do (no SMT, no THP,
//! too little memory) is a skipped row with its reason.

pub mod affinity;
pub mod chase;
pub mod prefetch;
pub mod region;
pub mod sizing;
pub mod smt;
pub mod thp;
pub mod threads;

use std::path::Path;

use crate::envelope::Envelope;
use crate::topology::Topology;

/// What the `hw` workloads need to know about the machine, read once in the
/// worker during prepare.
#[derive(Clone, Debug)]
pub struct HwFacts {
    /// The topology with the CPUs this worker was allowed when it started
    /// (before any pinning); `Err` says why it could not be read.
    pub topology: Result<Topology, String>,
    /// `MemAvailable` in bytes.
    pub mem_available: Option<u64>,
    /// The bracketed mode of `/sys/kernel/mm/transparent_hugepage/enabled`.
    pub thp_enabled: Option<String>,
    /// The bracketed mode of `/sys/kernel/mm/transparent_hugepage/defrag`.
    pub thp_defrag: Option<String>,
}

impl HwFacts {
    /// Reads the live machine through the envelope's readers, for a worker
    /// that started with the CPUs `allowed`.
    pub fn live(seed: u64, allowed: &[usize]) -> HwFacts {
        let env = Envelope::collect(Path::new("/"), Vec::new(), seed);
        HwFacts {
            topology: match env.topology {
                crate::model::Reading::Present(t) => Ok(t.with_allowed(allowed.to_vec())),
                crate::model::Reading::Absent { absent } => Err(absent),
            },
            mem_available: env.memory.available_bytes.ok().copied(),
            thp_enabled: env.tunables.thp_enabled.ok().cloned(),
            thp_defrag: env.tunables.thp_defrag.ok().cloned(),
        }
    }
}

/// The base page size (`sysconf(_SC_PAGESIZE)`), 4096 when it cannot be read.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// Formats a byte count as `105 MiB` / `48 KiB` / `123 B` for notes.
pub fn bytes_text(b: u64) -> String {
    const KI: u64 = 1024;
    if b >= KI * KI * KI {
        format!("{:.2} GiB", b as f64 / (KI * KI * KI) as f64)
    } else if b >= KI * KI {
        format!("{:.1} MiB", b as f64 / (KI * KI) as f64)
    } else if b >= KI {
        format!("{:.1} KiB", b as f64 / KI as f64)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_as_binary_units() {
        assert_eq!(bytes_text(512), "512 B");
        assert_eq!(bytes_text(48 * 1024), "48.0 KiB");
        assert_eq!(bytes_text(210 << 20), "210.0 MiB");
        assert_eq!(bytes_text(2 << 30), "2.00 GiB");
    }

    #[test]
    fn the_live_machine_has_a_topology_and_a_page_size() {
        let m = HwFacts::live(1, &crate::measure::affinity::current_thread().unwrap());
        let t = m.topology.expect("the live topology");
        assert!(!t.allowed.is_empty());
        assert!(page_size() >= 4096);
    }
}
