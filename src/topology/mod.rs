//! topology: logical CPUs, physical cores, sockets, caches and NUMA nodes, read from sysfs.
//!
//! Everything is read relative to a root directory (`/` on the live machine, a fake tree in
//! tests), so the same code runs against fixtures. The benchmark planner uses this module to
//! decide where to place threads; the envelope stores it with every result.
//!
//! This module must never guess: a file that is missing or malformed is an error naming the
//! file (or, for optional files such as `die_id` or the NUMA directory, a documented default),
//! never a made-up value. It must never panic on what it reads, and it only reads: it never
//! changes affinity or any kernel setting.

pub mod cpulist;
#[cfg(test)]
pub(crate) mod fake;
pub mod pin;
mod sysfs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One online logical CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Logical CPU number (`cpuN`).
    pub id: usize,
    /// `topology/physical_package_id` (a kernel value of -1, "unknown", is recorded as 0).
    pub package: usize,
    /// `topology/die_id`; 0 when the file is missing (kernels before 5.2, non-x86).
    pub die: usize,
    /// `topology/core_id`: unique only within a package, and not contiguous on many Xeons.
    pub core_id: usize,
    /// Thread siblings including this CPU, from `core_cpus_list` (or the older
    /// `thread_siblings_list`); when both are missing, the online CPUs with the same
    /// (package, die, core_id).
    pub siblings: Vec<usize>,
    /// Index into [`Topology::l3_domains`]; `None` when the machine reports no L3.
    pub l3: Option<usize>,
    /// NUMA node id; `None` when there is no node directory listing this CPU.
    pub node: Option<usize>,
}

/// One kind of cache (level, type and size), aggregated over all online CPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    /// 1, 2, 3, ...
    pub level: u8,
    /// As sysfs writes it: "Data", "Instruction" or "Unified".
    pub kind: String,
    /// Size of one instance in bytes.
    pub size_bytes: u64,
    /// `coherency_line_size`, when present.
    pub line_bytes: Option<u64>,
    /// Number of distinct instances (distinct `shared_cpu_list`s).
    pub instances: usize,
    /// The CPUs sharing each instance, sorted by lowest CPU.
    pub shared_cpus: Vec<Vec<usize>>,
}

/// The CPU topology of a machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs, sorted by id.
    pub cpus: Vec<Cpu>,
    /// CPUs this process may run on: a sorted subset of the online CPUs.
    pub allowed: Vec<usize>,
    /// Distinct sets of CPUs sharing a level-3 cache, sorted by lowest CPU; empty when no L3.
    pub l3_domains: Vec<Vec<usize>>,
    /// (node id, its CPUs), sorted by node id; empty when sysfs has no NUMA directory.
    /// Memory-only nodes appear with an empty CPU list.
    pub numa_nodes: Vec<(usize, Vec<usize>)>,
    /// Caches sorted by (level, kind, size). CPUs of one level with different sizes (hybrid
    /// parts) give one entry per size.
    pub caches: Vec<Cache>,
}

/// Why a topology could not be read. Every message names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error from the operating system.
        source: std::io::Error,
    },
    /// A file was read but its text is not what Linux writes there.
    #[error("cannot parse {}: {why} (text {text:?})", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Its text (trimmed).
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// The online list is empty.
    #[error("no online CPUs listed in {}", path.display())]
    NoCpus {
        /// The `online` file.
        path: PathBuf,
    },
    /// `sched_getaffinity(2)` failed.
    #[error("sched_getaffinity failed: {0}")]
    Affinity(std::io::Error),
}

impl Topology {
    /// Reads the topology under `root` (a directory holding `sys/devices/system/...`).
    /// `allowed` is every online CPU.
    pub fn from_root(root: &Path) -> Result<Topology, TopologyError> {
        sysfs::load(root)
    }

    /// Reads the live machine (root `/`), with `allowed` = this thread's
    /// `sched_getaffinity(0)` mask intersected with the online CPUs.
    pub fn live() -> Result<Topology, TopologyError> {
        let topology = Topology::from_root(Path::new("/"))?;
        let mask = crate::measure::affinity::current_thread().map_err(TopologyError::Affinity)?;
        Ok(topology.with_allowed(mask))
    }

    /// A machine of one CPU and nothing else known: what a plan is checked
    /// against where the live topology cannot be read.
    pub fn single_cpu() -> Topology {
        let cpu = Cpu { id: 0, package: 0, die: 0, core_id: 0, siblings: vec![0], l3: None, node: None };
        Topology { cpus: vec![cpu], allowed: vec![0], l3_domains: Vec::new(), numa_nodes: Vec::new(), caches: Vec::new() }
    }

    /// Replaces the allowed set (e.g. with a cgroup's cpuset). The result keeps only online
    /// CPUs, sorted and deduplicated.
    pub fn with_allowed(mut self, allowed: Vec<usize>) -> Topology {
        let online: BTreeSet<usize> = self.cpus.iter().map(|c| c.id).collect();
        let kept: BTreeSet<usize> = allowed.into_iter().filter(|c| online.contains(c)).collect();
        self.allowed = kept.into_iter().collect();
        self
    }

    /// Number of online logical CPUs.
    pub fn logical_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Number of physical cores (distinct sibling sets).
    pub fn physical_cores(&self) -> usize {
        self.cores().len()
    }

    /// Number of distinct physical packages.
    pub fn sockets(&self) -> usize {
        self.cpus.iter().map(|c| c.package).collect::<BTreeSet<_>>().len()
    }

    /// One entry per physical core: its online logical CPUs (sorted). Cores are ordered by
    /// (package, die, lowest cpu id).
    pub fn cores(&self) -> Vec<Vec<usize>> {
        // Key: the sibling list as read; value: (package, die, online members).
        let mut groups: BTreeMap<&[usize], (usize, usize, Vec<usize>)> = BTreeMap::new();
        for cpu in &self.cpus {
            groups.entry(cpu.siblings.as_slice()).or_insert_with(|| (cpu.package, cpu.die, Vec::new())).2.push(cpu.id);
        }
        let mut cores: Vec<(usize, usize, Vec<usize>)> = groups.into_values().collect();
        for core in &mut cores {
            core.2.sort_unstable();
        }
        cores.sort_by_key(|(package, die, cpus)| (*package, *die, cpus.first().copied()));
        cores.into_iter().map(|(_, _, cpus)| cpus).collect()
    }

    /// True when some core has more than one logical CPU.
    pub fn has_smt(&self) -> bool {
        self.cores().iter().any(|core| core.len() > 1)
    }

    /// Number of allowed logical CPUs.
    pub fn allowed_logical(&self) -> usize {
        self.allowed.len()
    }

    /// Number of cores with at least one allowed logical CPU.
    pub fn allowed_physical_cores(&self) -> usize {
        self.allowed_cores().len()
    }

    /// The physical cores this process may use, each with only its allowed
    /// logical CPUs (sorted), in the order of [`Topology::cores`].
    pub fn allowed_cores(&self) -> Vec<Vec<usize>> {
        let allowed: BTreeSet<usize> = self.allowed.iter().copied().collect();
        self.cores()
            .into_iter()
            .map(|core| core.into_iter().filter(|c| allowed.contains(c)).collect::<Vec<_>>())
            .filter(|core| !core.is_empty())
            .collect()
    }

    /// The online CPU with this id.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.binary_search_by_key(&id, |c| c.id).ok().map(|i| &self.cpus[i])
    }
}

/// The root of a fake sysfs tree (tests only): `kvm-2c` is the committed capture under
/// `tests/fixtures/sysfs`; `4c8t` and `2s48c96t` are written for the caller by [`fake`] and
/// removed when the returned value is dropped. Dereferences to a `&Path`.
#[cfg(test)]
pub(crate) fn fixture_root(name: &str) -> fake::Root {
    fake::root(name)
}

/// The topology of a fake sysfs tree (tests only): `kvm-2c`, `4c8t`, `2s48c96t`.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Topology {
    fake::topology(name)
}

#[cfg(test)]
mod tests;
