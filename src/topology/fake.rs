//! Fake sysfs/procfs trees written at test time (tests only).
//!
//! A [`FakeMachine`] describes a fictional computer (sockets, cores, threads, how Linux numbers
//! them, its caches, its processor, and the other files the envelope reads); [`FakeMachine::write`]
//! lays it out under a root directory the way Linux does, with Linux's text formats (cache
//! `size` as `32K`, cpulists as `0-7,48-55`, one `/proc/cpuinfo` block per processor ended
//! by a blank line, `/proc/meminfo` in kB). It writes only the files that
//! [`Topology::from_root`] and `Envelope::collect` open: adding a reader of another file means
//! adding that file here. The capture of a real machine, `tests/fixtures/sysfs/kvm-2c`, stays
//! committed as the evidence of those formats.
//!
//! Two machines are described, both fictional (realistic formats, not copies of a system):
//! - `4c8t`, a desktop: 1 socket, 4 cores, 8 threads with adjacent siblings (cpu 0+1, 2+3,
//!   ...), 32K L1d/L1i and 256K L2 per core, one 8M L3, 1 NUMA node, cpufreq `intel_pstate`
//!   / `powersave` with turbo on, Dell DMI, cgroup v2 with `cpu.max` "max", no
//!   `io_uring_disabled` (a kernel before 6.6).
//! - `2s48c96t`, a two-socket server: 24 cores per socket, Intel numbering (cpu N and N+48
//!   share a core), non-contiguous Xeon `core_id`s, six L3 domains of 8 cores and their
//!   siblings (`0-7,48-55`; a real Gold 6248R has one L3 per socket: split on purpose so that
//!   L3-aware placement is tested), one NUMA node per socket, `acpi-cpufreq` / `performance`
//!   with boost off, `isolcpus`/`nohz_full`/`rcu_nocbs` on the command line, cgroup v2 with a
//!   CPU quota.
//!
//! This module must only be used by tests; it never touches the live `/sys` or `/proc`.

use std::fmt::Write as _;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::Topology;

/// How Linux numbers the logical CPUs of a machine.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Numbering {
    /// The threads of a core are adjacent: cpu = core * threads + thread (many desktops).
    Adjacent,
    /// First thread of every core, then the second of every core: cpu = thread * cores +
    /// core, counting cores over all sockets (Intel servers: cpu N and N+cores are siblings).
    ThreadMajor,
}

/// One cache of every core.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CacheLevel {
    /// 1, 2, 3.
    pub level: u8,
    /// "Data", "Instruction" or "Unified".
    pub kind: &'static str,
    /// Size of one instance in KiB (written as `<n>K`, as the kernel does).
    pub size_kib: u64,
    /// Consecutive cores of one socket sharing one instance (with all their threads):
    /// 1 for a private cache; a divisor of the cores per socket.
    pub cores: usize,
}

/// The processor's identity as `/proc/cpuinfo` prints it (the per-CPU lines are derived).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuModel {
    pub vendor_id: &'static str,
    pub family: u32,
    pub model: u32,
    pub model_name: &'static str,
    pub stepping: u32,
    pub microcode: &'static str,
    pub mhz: &'static str,
    pub cache_size_kb: u64,
    pub cpuid_level: u32,
    pub flags: &'static str,
    /// The `vmx flags` line (kernels 5.8+ on VMX-capable Intel parts), when printed.
    pub vmx_flags: Option<&'static str>,
    pub bugs: &'static str,
    pub bogomips: &'static str,
    pub address_sizes: &'static str,
}

/// A fictional machine: the structure the topology files are derived from, and the other
/// files the envelope reads, verbatim.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FakeMachine {
    /// Physical packages; each is also one NUMA node.
    pub sockets: usize,
    /// The `core_id` of each core of a socket, in order; its length is the cores per socket.
    pub core_ids: &'static [usize],
    /// Hardware threads per core.
    pub threads: usize,
    pub numbering: Numbering,
    pub caches: &'static [CacheLevel],
    pub cpu: CpuModel,
    /// `MemTotal`, `MemFree` and `MemAvailable` in kB.
    pub memory_kb: [u64; 3],
    /// Every other file read, as (path under the root, text without the final newline).
    pub files: &'static [(&'static str, &'static str)],
}

/// Linux cpulist text: sorted, runs compressed ("0-7,48-55"). Written here rather than taken
/// from [`super::cpulist::format`], so that the reader is not checked against itself.
fn cpulist(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        while i + 1 < v.len() && v[i + 1] == v[i] + 1 {
            i += 1;
        }
        let sep = if out.is_empty() { "" } else { "," };
        let _ = if start == v[i] { write!(out, "{sep}{start}") } else { write!(out, "{sep}{start}-{}", v[i]) };
        i += 1;
    }
    out
}

/// Where one logical CPU sits.
struct Place {
    socket: usize,
    /// Index of the core within its socket (not its `core_id`).
    core: usize,
    thread: usize,
}

impl FakeMachine {
    fn cores_per_socket(&self) -> usize {
        self.core_ids.len()
    }

    fn logical_cpus(&self) -> usize {
        self.sockets * self.cores_per_socket() * self.threads
    }

    /// The logical CPU number of (socket, core index, thread).
    fn cpu_number(&self, socket: usize, core: usize, thread: usize) -> usize {
        let core_number = socket * self.cores_per_socket() + core;
        match self.numbering {
            Numbering::Adjacent => core_number * self.threads + thread,
            Numbering::ThreadMajor => thread * self.sockets * self.cores_per_socket() + core_number,
        }
    }

    fn place(&self, cpu: usize) -> Place {
        let cores = self.sockets * self.cores_per_socket();
        let (core_number, thread) = match self.numbering {
            Numbering::Adjacent => (cpu / self.threads, cpu % self.threads),
            Numbering::ThreadMajor => (cpu % cores, cpu / cores),
        };
        Place { socket: core_number / self.cores_per_socket(), core: core_number % self.cores_per_socket(), thread }
    }

    /// All threads of `count` consecutive cores of a socket, starting at core index `first`.
    fn cpus_of_cores(&self, socket: usize, first: usize, count: usize) -> Vec<usize> {
        let mut cpus: Vec<usize> = (first..first + count)
            .flat_map(|core| (0..self.threads).map(move |t| (core, t)))
            .map(|(core, t)| self.cpu_number(socket, core, t))
            .collect();
        cpus.sort_unstable();
        cpus
    }

    /// One `/proc/cpuinfo` block, in the kernel's key order and tab alignment.
    fn cpuinfo_block(&self, cpu: usize) -> String {
        let p = self.place(cpu);
        let m = &self.cpu;
        let core_id = self.core_ids[p.core];
        // x86 APIC ids: thread bits, then core bits, then the package, each a power of two wide.
        let per_package = ((self.core_ids.iter().max().unwrap_or(&0) + 1) * self.threads).next_power_of_two();
        let apic = p.socket * per_package + core_id * self.threads + p.thread;
        let mut fields: Vec<(&str, String)> = vec![
            ("processor", cpu.to_string()),
            ("vendor_id", m.vendor_id.into()),
            ("cpu family", m.family.to_string()),
            ("model", m.model.to_string()),
            ("model name", m.model_name.into()),
            ("stepping", m.stepping.to_string()),
            ("microcode", m.microcode.into()),
            ("cpu MHz", m.mhz.into()),
            ("cache size", format!("{} KB", m.cache_size_kb)),
            ("physical id", p.socket.to_string()),
            ("siblings", (self.cores_per_socket() * self.threads).to_string()),
            ("core id", core_id.to_string()),
            ("cpu cores", self.cores_per_socket().to_string()),
            ("apicid", apic.to_string()),
            ("initial apicid", apic.to_string()),
            ("fpu", "yes".into()),
            ("fpu_exception", "yes".into()),
            ("cpuid level", m.cpuid_level.to_string()),
            ("wp", "yes".into()),
            ("flags", m.flags.into()),
        ];
        if let Some(vmx) = m.vmx_flags {
            fields.push(("vmx flags", vmx.into()));
        }
        fields.extend([
            ("bugs", m.bugs.into()),
            ("bogomips", m.bogomips.into()),
            ("clflush size", "64".into()),
            ("cache_alignment", "64".into()),
            ("address sizes", m.address_sizes.into()),
        ]);
        let mut block = String::new();
        for (key, value) in fields {
            let pad = if key.len() >= 8 { "\t" } else { "\t\t" };
            let _ = writeln!(block, "{key}{pad}: {value}");
        }
        // The kernel prints this one with neither tab nor space, and ends the block with a
        // blank line.
        block.push_str("power management:\n\n");
        block
    }

    /// Every file of the tree, as (path under the root, contents).
    fn files(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut put = |path: String, text: String| out.push((path, text + "\n"));
        let n = self.logical_cpus();
        let base = "sys/devices/system/cpu";
        put(format!("{base}/online"), cpulist(&(0..n).collect::<Vec<_>>()));
        for cpu in 0..n {
            let p = self.place(cpu);
            let topology = format!("{base}/cpu{cpu}/topology");
            put(format!("{topology}/physical_package_id"), p.socket.to_string());
            put(format!("{topology}/die_id"), "0".into());
            put(format!("{topology}/core_id"), self.core_ids[p.core].to_string());
            put(format!("{topology}/core_cpus_list"), cpulist(&self.cpus_of_cores(p.socket, p.core, 1)));
            for (index, cache) in self.caches.iter().enumerate() {
                let dir = format!("{base}/cpu{cpu}/cache/index{index}");
                let first = p.core - p.core % cache.cores;
                put(format!("{dir}/level"), cache.level.to_string());
                put(format!("{dir}/type"), cache.kind.into());
                put(format!("{dir}/size"), format!("{}K", cache.size_kib));
                put(format!("{dir}/coherency_line_size"), "64".into());
                put(format!("{dir}/shared_cpu_list"), cpulist(&self.cpus_of_cores(p.socket, first, cache.cores)));
            }
        }
        for socket in 0..self.sockets {
            let cpus = self.cpus_of_cores(socket, 0, self.cores_per_socket());
            put(format!("sys/devices/system/node/node{socket}/cpulist"), cpulist(&cpus));
        }
        let cpuinfo: String = (0..n).map(|cpu| self.cpuinfo_block(cpu)).collect();
        // The blocks carry their own newlines; `put` would add one more.
        out.push(("proc/cpuinfo".into(), cpuinfo));
        let [total, free, available] = self.memory_kb;
        out.push(("proc/meminfo".into(), meminfo(total, free, available)));
        for (path, text) in self.files {
            out.push((path.to_string(), format!("{text}\n")));
        }
        out
    }

    /// Writes the tree under `root`.
    pub(crate) fn write(&self, root: &Path) -> std::io::Result<()> {
        for (rel, text) in self.files() {
            let path = root.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, text)?;
        }
        Ok(())
    }
}

/// `/proc/meminfo`'s first lines, in kB with the kernel's alignment.
fn meminfo(total: u64, free: u64, available: u64) -> String {
    format!(
        "MemTotal:       {total:>8} kB\nMemFree:        {free:>8} kB\nMemAvailable:   {available:>8} kB\n\
         Buffers:          204800 kB\nCached:          4194304 kB\nSwapCached:            0 kB\n\
         Active:          3145728 kB\nInactive:        2097152 kB\nSwapTotal:       8388604 kB\n\
         SwapFree:        8388604 kB\nDirty:               128 kB\nAnonPages:       1048576 kB\n\
         Shmem:             65536 kB\nAnonHugePages:         0 kB\nHugepagesize:       2048 kB\n"
    )
}

const KABY_LAKE_FLAGS: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx \
fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology \
nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 \
sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault \
invpcid_single pti ssbd ibrs ibpb stibp tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep \
bmi2 erms invpcid rtm mpx rdseed adx smap clflushopt intel_pt xsaveopt xsavec xgetbv1 xsaves dtherm ida arat pln pts hwp \
hwp_notify hwp_act_window hwp_epp md_clear flush_l1d arch_capabilities";

const CASCADE_LAKE_FLAGS: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi \
mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl \
xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm \
pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch \
cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow flexpriority \
ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm mpx rdt_a avx512f avx512dq rdseed adx smap \
clflushopt clwb intel_pt avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total \
cqm_mbm_local dtherm ida arat pln pts hwp_epp pku ospke avx512_vnni md_clear flush_l1d arch_capabilities";

/// The 4-core, 8-thread desktop.
pub(crate) const DESKTOP_4C8T: FakeMachine = FakeMachine {
    sockets: 1,
    core_ids: &[0, 1, 2, 3],
    threads: 2,
    numbering: Numbering::Adjacent,
    caches: &[
        CacheLevel { level: 1, kind: "Data", size_kib: 32, cores: 1 },
        CacheLevel { level: 1, kind: "Instruction", size_kib: 32, cores: 1 },
        CacheLevel { level: 2, kind: "Unified", size_kib: 256, cores: 1 },
        CacheLevel { level: 3, kind: "Unified", size_kib: 8192, cores: 4 },
    ],
    cpu: CpuModel {
        vendor_id: "GenuineIntel",
        family: 6,
        model: 158,
        model_name: "Intel(R) Core(TM) i7-7700K CPU @ 4.20GHz",
        stepping: 9,
        microcode: "0xf8",
        mhz: "800.012",
        cache_size_kb: 8192,
        cpuid_level: 22,
        flags: KABY_LAKE_FLAGS,
        vmx_flags: Some("vnmi preemption_timer invvpid ept_x_only"),
        bugs: "cpu_meltdown spectre_v1 spectre_v2 spec_store_bypass l1tf mds swapgs",
        bogomips: "8400.00",
        address_sizes: "39 bits physical, 48 bits virtual",
    },
    memory_kb: [32_780_128, 28_311_552, 30_408_704],
    files: &[
        (
            "proc/cmdline",
            "BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=3f1c9a2e-8d4b-4e6a-9b7c-2a5d1e0f4c3b ro quiet splash vt.handoff=7",
        ),
        ("proc/loadavg", "0.52 0.31 0.20 2/611 48213"),
        ("proc/sys/kernel/hostname", "desk-4c8t"),
        ("proc/sys/kernel/osrelease", "6.8.0-45-generic"),
        ("proc/sys/kernel/version", "#45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024"),
        ("proc/sys/kernel/randomize_va_space", "2"),
        ("proc/sys/kernel/perf_event_paranoid", "4"),
        ("proc/self/cgroup", "0::/user.slice/user-1000.slice/session-2.scope"),
        ("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc"),
        ("sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope/cpuset.cpus.effective", "0-7"),
        ("sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope/cpu.max", "max 100000"),
        ("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never"),
        ("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never"),
        ("sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc"),
        ("sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm "),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "intel_pstate"),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave"),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq", "800000"),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "4500000"),
        ("sys/devices/system/cpu/intel_pstate/no_turbo", "0"),
        ("sys/class/dmi/id/sys_vendor", "Dell Inc."),
        ("sys/class/dmi/id/product_name", "OptiPlex 7050"),
        ("sys/class/dmi/id/board_vendor", "Dell Inc."),
        ("sys/class/dmi/id/board_name", "0NW6H5"),
        ("sys/class/dmi/id/bios_vendor", "Dell Inc."),
        ("sys/class/dmi/id/bios_version", "1.26.0"),
        ("sys/class/dmi/id/bios_date", "07/10/2023"),
    ],
};

/// The two-socket, 48-core, 96-thread server.
pub(crate) const SERVER_2S48C96T: FakeMachine = FakeMachine {
    sockets: 2,
    // Skylake-SP / Cascade Lake core ids are not contiguous; kept to test that it does not matter.
    core_ids: &[0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 16, 17, 18, 19, 20, 21, 24, 25, 26, 27, 28, 29],
    threads: 2,
    numbering: Numbering::ThreadMajor,
    caches: &[
        CacheLevel { level: 1, kind: "Data", size_kib: 32, cores: 1 },
        CacheLevel { level: 1, kind: "Instruction", size_kib: 32, cores: 1 },
        CacheLevel { level: 2, kind: "Unified", size_kib: 1024, cores: 1 },
        CacheLevel { level: 3, kind: "Unified", size_kib: 12288, cores: 8 },
    ],
    cpu: CpuModel {
        vendor_id: "GenuineIntel",
        family: 6,
        model: 85,
        model_name: "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz",
        stepping: 7,
        microcode: "0x5003604",
        mhz: "3000.000",
        cache_size_kb: 36608,
        cpuid_level: 22,
        flags: CASCADE_LAKE_FLAGS,
        vmx_flags: None,
        bugs: "spectre_v1 spectre_v2 spec_store_bypass swapgs taa itlb_multihit mmio_stale_data retbleed",
        bogomips: "6000.00",
        address_sizes: "46 bits physical, 48 bits virtual",
    },
    memory_kb: [395_903_412, 380_241_920, 388_063_232],
    files: &[
        (
            "proc/cmdline",
            "BOOT_IMAGE=/vmlinuz-6.12.9 root=/dev/md0 ro intel_iommu=on isolcpus=nohz,domain,managed_irq,2-23,50-71 \
             nohz_full=2-23,50-71 rcu_nocbs=2-23,50-71 transparent_hugepage=never",
        ),
        ("proc/loadavg", "12.04 11.87 11.52 25/1873 302211"),
        ("proc/sys/kernel/hostname", "bench-2s"),
        ("proc/sys/kernel/osrelease", "6.12.9"),
        ("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Thu Jan  9 16:27:02 UTC 2025"),
        ("proc/sys/kernel/randomize_va_space", "0"),
        ("proc/sys/kernel/perf_event_paranoid", "-1"),
        ("proc/sys/kernel/io_uring_disabled", "0"),
        ("proc/self/cgroup", "0::/system.slice/bench.service"),
        ("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc"),
        ("sys/fs/cgroup/system.slice/bench.service/cpuset.cpus.effective", "0-23,48-71"),
        ("sys/fs/cgroup/system.slice/bench.service/cpu.max", "2400000 100000"),
        ("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]"),
        ("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise madvise [never]"),
        ("sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc"),
        ("sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm "),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "acpi-cpufreq"),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance"),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq", "1200000"),
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "3000000"),
        ("sys/devices/system/cpu/cpufreq/boost", "0"),
        ("sys/class/dmi/id/sys_vendor", "Supermicro"),
        ("sys/class/dmi/id/product_name", "SYS-2029U-TR4"),
        ("sys/class/dmi/id/board_vendor", "Supermicro"),
        ("sys/class/dmi/id/board_name", "X11DPU"),
        ("sys/class/dmi/id/bios_vendor", "American Megatrends Inc."),
        ("sys/class/dmi/id/bios_version", "3.4"),
        ("sys/class/dmi/id/bios_date", "10/22/2020"),
    ],
};

/// The committed capture of a real machine, read from the repository.
const CAPTURED: &str = "kvm-2c";

/// The fixtures by name: `None` is the committed capture.
const FIXTURES: [(&str, Option<&FakeMachine>); 3] = [(CAPTURED, None), ("4c8t", Some(&DESKTOP_4C8T)), ("2s48c96t", Some(&SERVER_2S48C96T))];

fn lookup(name: &str) -> (usize, Option<&'static FakeMachine>) {
    let i = FIXTURES.iter().position(|(n, _)| *n == name).unwrap_or_else(|| panic!("no sysfs fixture {name:?}"));
    (i, FIXTURES[i].1)
}

/// The root of a fixture tree: the committed capture, or a tree written for the caller and
/// removed when this is dropped. Dereferences to the root path.
#[derive(Debug)]
pub(crate) enum Root {
    /// `tests/fixtures/sysfs/<name>` in the repository.
    Committed(PathBuf),
    /// A tree written into a temporary directory.
    Written(tempfile::TempDir),
}

impl Deref for Root {
    type Target = Path;

    fn deref(&self) -> &Path {
        match self {
            Root::Committed(path) => path,
            Root::Written(dir) => dir.path(),
        }
    }
}

/// The root of the fixture `name`: `kvm-2c`, `4c8t` or `2s48c96t`.
pub(crate) fn root(name: &str) -> Root {
    match lookup(name).1 {
        None => Root::Committed(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs").join(name)),
        Some(machine) => {
            let dir = tempfile::Builder::new().prefix("proofbench-sysfs-").tempdir().expect("temporary directory");
            machine.write(dir.path()).unwrap_or_else(|e| panic!("writing the {name} tree: {e}"));
            Root::Written(dir)
        }
    }
}

/// The topology of the fixture `name`, read by [`Topology::from_root`] once per test process.
pub(crate) fn topology(name: &str) -> Topology {
    static READ: [OnceLock<Topology>; FIXTURES.len()] = [const { OnceLock::new() }; FIXTURES.len()];
    let (i, _) = lookup(name);
    READ[i].get_or_init(|| Topology::from_root(&root(name)).unwrap_or_else(|e| panic!("{name}: {e}"))).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_compress_runs() {
        assert_eq!(cpulist(&[0, 1, 2, 3, 8, 48, 49, 55]), "0-3,8,48-49,55");
        assert_eq!(cpulist(&[5]), "5");
        assert_eq!(cpulist(&[]), "");
    }

    #[test]
    fn numbering_round_trips() {
        for m in [DESKTOP_4C8T, SERVER_2S48C96T] {
            for cpu in 0..m.logical_cpus() {
                let p = m.place(cpu);
                assert_eq!(m.cpu_number(p.socket, p.core, p.thread), cpu);
            }
        }
        assert_eq!(SERVER_2S48C96T.cpu_number(1, 0, 1), 72);
        assert_eq!(DESKTOP_4C8T.cpu_number(0, 2, 1), 5);
    }

    #[test]
    fn written_trees_use_the_kernel_formats() {
        let root = root("2s48c96t");
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
        assert_eq!(read("sys/devices/system/cpu/online"), "0-95\n");
        assert_eq!(read("sys/devices/system/cpu/cpu77/cache/index3/shared_cpu_list"), "24-31,72-79\n");
        assert_eq!(read("sys/devices/system/cpu/cpu77/cache/index2/size"), "1024K\n");
        assert_eq!(read("sys/devices/system/cpu/cpu53/topology/core_cpus_list"), "5,53\n");
        assert_eq!(read("sys/devices/system/cpu/cpu6/topology/core_id"), "8\n");
        assert_eq!(read("sys/devices/system/node/node1/cpulist"), "24-47,72-95\n");
        let cpuinfo = read("proc/cpuinfo");
        assert_eq!(cpuinfo.matches("processor\t: ").count(), 96);
        assert!(cpuinfo.starts_with("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"));
        assert!(cpuinfo.ends_with("power management:\n\n"));
        assert!(read("proc/meminfo").starts_with("MemTotal:       395903412 kB\n"));
        let path = root.to_path_buf();
        drop(root);
        assert!(!path.exists(), "the written tree is removed with its Root");
    }
}
