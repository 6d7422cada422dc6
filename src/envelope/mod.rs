//! envelope: the machine and environment record stored with every result.
//!
//! [`Envelope::collect`] reads, relative to a root directory (`/` live, a fixture tree in
//! tests), everything about the machine that can change a benchmark's numbers: CPU and
//! topology, memory, kernel and its command line, virtualization, clock source, frequency
//! scaling, kernel tunables, load, CPU limits, firmware identity and how this tool was built.
//! `docs/RECORD-FORMAT.md` (section "The envelope") lists every field, its source file and what "absent" means.
//!
//! It must never fail, panic or guess: anything that cannot be read (missing, root-only,
//! malformed) becomes [`Reading::Absent`] with a reason naming the file. It only reads; it
//! must never change a kernel setting or the process's affinity.

mod identity;
mod probe;
mod reading;
mod summary;
mod tool;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::measure::clock::utc_now;
use crate::model::Reading;
use crate::topology::{Cache, Topology};

pub use tool::{ToolInfo, tool_info};

use reading::Files;

/// Schema name and version written into every envelope.
pub const SCHEMA: &str = "proofbench.envelope/1";

/// The machine and environment a run happened on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `proc/sys/kernel/hostname`.
    pub hostname: Reading<String>,
    /// UTC start time, RFC 3339 to the second.
    pub started_utc: String,
    /// UTC finish time; `None` until [`Envelope::finish`].
    pub finished_utc: Option<String>,
    /// The command line of the run, as given by the caller.
    pub command_line: Vec<String>,
    /// The random seed of the run.
    pub seed: u64,
    /// Processor identity and the topology facts a reader wants at a glance.
    pub cpu: CpuSection,
    /// The whole topology, so later code can plan from a stored run.
    pub topology: Reading<Topology>,
    /// Memory from `proc/meminfo`.
    pub memory: Memory,
    /// Kernel identity and isolation parameters.
    pub kernel: Kernel,
    /// Hypervisor, if any.
    pub virtualization: Virtualization,
    /// The kernel's clock source.
    pub clock_source: ClockSource,
    /// Frequency scaling of cpu0; absent when there is no cpufreq directory.
    pub cpufreq: Reading<CpuFreq>,
    /// Kernel settings that change benchmark behaviour.
    pub tunables: Tunables,
    /// 1, 5 and 15 minute load averages at collection.
    pub load_avg_before: Reading<[f64; 3]>,
    /// Load averages at [`Envelope::finish`]; `None` until then.
    pub load_avg_after: Option<Reading<[f64; 3]>>,
    /// Which CPUs the run may use, and its cgroup's limits (v2, else v1).
    pub cpu_limits: CpuLimits,
    /// Firmware identity from `sys/class/dmi/id`.
    pub dmi: Dmi,
    /// How this binary was built.
    pub tool: ToolInfo,
    /// The Slurm job this process ran in; `None` outside one (and in runs
    /// recorded before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmFacts>,
}

/// The Slurm job a process runs in, from the variables Slurm sets in a
/// job's environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlurmFacts {
    /// `SLURM_JOB_ID`.
    pub job_id: Option<String>,
    /// `SLURM_JOB_NODELIST`: every node of the job, as a host list.
    pub job_nodelist: Option<String>,
    /// `SLURMD_NODENAME`: the Slurm name of the node this process runs on.
    pub node: Option<String>,
    /// `SLURM_ARRAY_JOB_ID`: the job array this job is a task of, which
    /// every node of a submission made as one array shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_job_id: Option<String>,
    /// `SLURM_JOB_NAME`: the job's name, which the jobs of one submission
    /// share when it names them apart from other submissions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
}

/// The job name `slurm submit`'s batch script gives when the submission
/// names its jobs no further: shared by every submission, so it identifies
/// none.
pub const PLAIN_JOB_NAME: &str = "proofbench";

impl SlurmFacts {
    /// The facts `var` gives (the process environment: `std::env::var`);
    /// `None` when it has none of the job id, node list and node name.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<SlurmFacts> {
        let facts = SlurmFacts {
            job_id: var("SLURM_JOB_ID"),
            job_nodelist: var("SLURM_JOB_NODELIST"),
            node: var("SLURMD_NODENAME"),
            array_job_id: var("SLURM_ARRAY_JOB_ID"),
            job_name: var("SLURM_JOB_NAME"),
        };
        (facts.job_id.is_some() || facts.job_nodelist.is_some() || facts.node.is_some()).then_some(facts)
    }

    /// The submission this job belongs to, which every node's run of one
    /// submission shares: `slurm array N` (the job array), else `slurm job
    /// NAME` (a name the submission gave its jobs, not [`PLAIN_JOB_NAME`]).
    /// `None` when neither says (a job's own id names one node's job only).
    pub fn submission(&self) -> Option<String> {
        let named = |n: &&String| !n.is_empty() && n.as_str() != PLAIN_JOB_NAME;
        if let Some(a) = self.array_job_id.as_ref().filter(|a| !a.is_empty()) {
            return Some(format!("slurm array {a}"));
        }
        self.job_name.as_ref().filter(named).map(|n| format!("slurm job {n}"))
    }
}

/// Processor identity and topology summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSection {
    /// `model name` of the first processor in `proc/cpuinfo`.
    pub model_name: Reading<String>,
    /// `vendor_id`, e.g. "GenuineIntel".
    pub vendor_id: Reading<String>,
    /// The benchmark-relevant subset of the cpuinfo `flags`, in cpuinfo order.
    pub flags_of_note: Reading<Vec<String>>,
    /// Physical packages.
    pub sockets: Reading<usize>,
    /// Physical cores.
    pub physical_cores: Reading<usize>,
    /// Online logical CPUs.
    pub logical_cpus: Reading<usize>,
    /// Whether some core runs more than one hardware thread.
    pub smt: Reading<bool>,
    /// One list per physical core: its logical CPUs (`Topology::cores`).
    pub smt_siblings: Reading<Vec<Vec<usize>>>,
    /// CPU sets sharing a level-3 cache.
    pub l3_domains: Reading<Vec<Vec<usize>>>,
    /// (node id, CPUs) per NUMA node.
    pub numa_nodes: Reading<Vec<(usize, Vec<usize>)>>,
    /// Caches per level and kind.
    pub caches: Reading<Vec<Cache>>,
}

/// Memory totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// `MemTotal` in bytes.
    pub total_bytes: Reading<u64>,
    /// `MemAvailable` in bytes.
    pub available_bytes: Reading<u64>,
}

/// Kernel identity and CPU isolation parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// `proc/sys/kernel/osrelease`, e.g. "6.8.0-45-generic".
    pub release: Reading<String>,
    /// `proc/sys/kernel/version`, e.g. "#45-Ubuntu SMP PREEMPT_DYNAMIC ...".
    pub version: Reading<String>,
    /// `proc/cmdline`.
    pub cmdline: Reading<String>,
    /// `isolcpus=`; absent = "not on the kernel command line".
    pub isolcpus: Reading<CpuParam>,
    /// `nohz_full=`; absent = "not on the kernel command line".
    pub nohz_full: Reading<CpuParam>,
    /// `rcu_nocbs=`; absent = "not on the kernel command line".
    pub rcu_nocbs: Reading<CpuParam>,
}

/// A kernel parameter naming CPUs, e.g. `isolcpus=nohz,domain,2-7`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuParam {
    /// The value as written after `=` ("" for a bare `rcu_nocbs`).
    pub raw: String,
    /// Leading flags (`isolcpus` only: nohz, domain, managed_irq).
    pub flags: Vec<String>,
    /// The CPUs named.
    pub cpus: Vec<usize>,
}

/// Hypervisor detection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Virtualization {
    /// Whether `proc/cpuinfo` flags include `hypervisor`.
    pub hypervisor_flag: Reading<bool>,
    /// The hypervisor's name ("KVM", "Xen", "VMware", ...; "unknown" when only the flag says
    /// so). Absent = not virtualized as far as the files checked (named in the reason) tell.
    pub hypervisor: Reading<String>,
    /// Which file (and value) named the hypervisor.
    pub evidence: Option<String>,
}

/// The kernel's clock source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockSource {
    /// `current_clocksource`, e.g. "tsc".
    pub current: Reading<String>,
    /// `available_clocksource`, split on whitespace.
    pub available: Reading<Vec<String>>,
}

/// Frequency scaling of cpu0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuFreq {
    /// `scaling_driver`, e.g. "intel_pstate".
    pub driver: Reading<String>,
    /// `scaling_governor`, e.g. "performance".
    pub governor: Reading<String>,
    /// Turbo/boost: `cpufreq/boost` == 1, or `intel_pstate/no_turbo` == 0. `None` when neither
    /// file exists.
    pub boost: Option<bool>,
    /// `scaling_min_freq` (policy lower limit) in kHz.
    pub min_khz: Reading<u64>,
    /// `scaling_max_freq` (policy upper limit) in kHz.
    pub max_khz: Reading<u64>,
}

/// Kernel tunables that change benchmark behaviour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tunables {
    /// Transparent huge pages mode: the bracketed choice, e.g. "madvise".
    pub thp_enabled: Reading<String>,
    /// THP defrag mode: the bracketed choice.
    pub thp_defrag: Reading<String>,
    /// `randomize_va_space`: 0 off, 1 partial, 2 full.
    pub aslr: Reading<u8>,
    /// `perf_event_paranoid` (-1 .. 4): above 1 limits unprivileged perf counters.
    pub perf_event_paranoid: Reading<i32>,
    /// `io_uring_disabled`: 0 allowed, 1 limited to a group, 2 disabled; absent before 6.6.
    pub io_uring_disabled: Reading<u8>,
}

/// CPUs available to the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuLimits {
    /// The topology's allowed CPUs (live: `sched_getaffinity` ∩ online).
    pub allowed: Reading<Vec<usize>>,
    /// The cgroup v2 path from `proc/self/cgroup` (the `0::` line).
    pub cgroup: Reading<String>,
    /// `cpuset.cpus.effective` of that cgroup, else the v1 cpuset
    /// controller's `cpuset.effective_cpus`.
    pub cpuset_effective: Reading<Vec<usize>>,
    /// `cpu.max` of that cgroup, else the v1 cpu controller's
    /// `cpu.cfs_quota_us` and `cpu.cfs_period_us` (the leaf only; ancestors
    /// may limit further).
    pub cpu_max: Reading<CpuMax>,
}

/// A cgroup v2 `cpu.max` value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuMax {
    /// Microseconds of CPU time per period; `None` for "max" (no limit).
    pub quota_us: Option<u64>,
    /// Period in microseconds.
    pub period_us: u64,
}

/// Firmware identity (`sys/class/dmi/id`). Some of these files are root-only on some systems.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dmi {
    /// `sys_vendor`.
    pub sys_vendor: Reading<String>,
    /// `product_name`.
    pub product_name: Reading<String>,
    /// `board_vendor`.
    pub board_vendor: Reading<String>,
    /// `board_name`.
    pub board_name: Reading<String>,
    /// `bios_vendor`.
    pub bios_vendor: Reading<String>,
    /// `bios_version`.
    pub bios_version: Reading<String>,
    /// `bios_date`.
    pub bios_date: Reading<String>,
}

impl Envelope {
    /// Reads the machine under `root` ("/" live). Never fails: unreadable items become
    /// [`Reading::Absent`]. With root "/", the allowed CPUs are this thread's affinity mask
    /// and the Slurm job is the one the process environment names.
    pub fn collect(root: &Path, command_line: Vec<String>, seed: u64) -> Envelope {
        let started_utc = utc_now();
        let files = Files::new(root);
        let topology: Reading<Topology> = if root == Path::new("/") { Topology::live() } else { Topology::from_root(root) }
            .map_err(|e| format!("topology unreadable: {e}"))
            .into();
        let cpuinfo = probe::cpuinfo(&files);
        let clock_source = probe::clock_source(&files);
        let virtualization = probe::virtualization(&files, &cpuinfo.flags, &clock_source.available);
        Envelope {
            schema: SCHEMA.to_string(),
            hostname: files.text("proc/sys/kernel/hostname"),
            started_utc,
            finished_utc: None,
            command_line,
            seed,
            cpu: probe::cpu_section(&cpuinfo, &topology),
            memory: probe::memory(&files),
            kernel: probe::kernel(&files),
            virtualization,
            clock_source,
            cpufreq: probe::cpufreq(&files),
            tunables: probe::tunables(&files),
            load_avg_before: probe::load_avg(&files),
            load_avg_after: None,
            cpu_limits: probe::cpu_limits(&files, &topology),
            dmi: probe::dmi(&files),
            tool: tool_info(),
            topology,
            slurm: if root == Path::new("/") { SlurmFacts::from_vars(|k| std::env::var(k).ok()) } else { None },
        }
    }

    /// Sets `finished_utc` and `load_avg_after` (read again under `root`).
    pub fn finish(&mut self, root: &Path) {
        self.finished_utc = Some(utc_now());
        self.load_avg_after = Some(probe::load_avg(&Files::new(root)));
    }
}

#[cfg(test)]
mod tests;
