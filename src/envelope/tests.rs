//! Tests of envelope collection against the fixture trees (`crate::topology::fake`).

use std::path::Path;

use super::*;
use crate::topology::cpulist;

fn fixture(name: &str) -> crate::topology::fake::Root {
    crate::topology::fixture_root(name)
}

fn collect(name: &str) -> Envelope {
    Envelope::collect(&fixture(name), vec!["proofbench".into(), "run".into()], 7)
}

fn summary_value(env: &Envelope, key: &str) -> String {
    env.summary().into_iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no {key} line")).1
}

#[test]
fn kvm_2c() {
    let env = collect("kvm-2c");
    assert_eq!(env.schema, SCHEMA);
    assert_eq!(env.command_line, vec!["proofbench", "run"]);
    assert_eq!(env.seed, 7);
    assert_eq!(env.hostname.ok().map(String::as_str), Some("vm"));
    assert_eq!(env.cpu.model_name.ok().map(String::as_str), Some("Intel(R) Xeon(R) Processor"));
    assert_eq!(env.cpu.vendor_id.ok().map(String::as_str), Some("GenuineIntel"));
    let flags = env.cpu.flags_of_note.ok().unwrap();
    for f in ["avx2", "avx512f", "hypervisor", "constant_tsc", "sha_ni"] {
        assert!(flags.iter().any(|x| x == f), "{f} missing from {flags:?}");
    }
    assert!(!flags.iter().any(|x| x == "fpu"));
    assert_eq!(env.cpu.logical_cpus, Reading::Present(2));
    assert_eq!(env.cpu.physical_cores, Reading::Present(2));
    assert_eq!(env.cpu.sockets, Reading::Present(1));
    assert_eq!(env.cpu.smt, Reading::Present(false));
    assert_eq!(env.cpu.smt_siblings, Reading::Present(vec![vec![0], vec![1]]));
    assert_eq!(env.cpu.l3_domains, Reading::Present(vec![vec![0, 1]]));
    assert!(env.topology.is_present());

    assert_eq!(env.virtualization.hypervisor_flag, Reading::Present(true));
    assert_eq!(env.virtualization.hypervisor, Reading::Present("KVM".into()));
    assert!(env.virtualization.evidence.as_deref().unwrap().contains("kvm-clock"));

    assert_eq!(env.cpufreq.reason(), Some("no cpufreq directory (/sys/devices/system/cpu/cpu0/cpufreq)"));
    assert_eq!(env.frequency_warning(), None);
    assert_eq!(env.memory.total_bytes, Reading::Present(24_682_416 * 1024));
    assert!(env.memory.available_bytes.is_present());
    assert_eq!(env.kernel.release.ok().map(String::as_str), Some("6.18.44-fc-v445"));
    assert_eq!(env.kernel.isolcpus.reason(), Some("not on the kernel command line"));
    assert_eq!(env.clock_source.current, Reading::Present("tsc".into()));
    assert_eq!(env.clock_source.available, Reading::Present(vec!["tsc".into(), "kvm-clock".into()]));
    assert_eq!(env.tunables.thp_enabled, Reading::Present("madvise".into()));
    assert_eq!(env.tunables.thp_defrag, Reading::Present("madvise".into()));
    assert_eq!(env.tunables.aslr, Reading::Present(2));
    assert_eq!(env.tunables.perf_event_paranoid, Reading::Present(2));
    assert_eq!(env.tunables.io_uring_disabled, Reading::Present(0));
    assert_eq!(env.cpu_limits.allowed, Reading::Present(vec![0, 1]));
    assert_eq!(env.cpu_limits.cgroup, Reading::Present("/".into()));
    // Hybrid cgroup setup with no cpu or cpuset controller in the v2 hierarchy,
    // and a fixture that kept no v1 hierarchy: both reasons.
    assert_eq!(
        env.cpu_limits.cpuset_effective.reason(),
        Some("not found: /sys/fs/cgroup/unified/cpuset.cpus.effective; cgroup v1: no cpuset hierarchy at /sys/fs/cgroup/cpuset")
    );
    // This guest exposes no DMI at all.
    assert_eq!(env.dmi.sys_vendor.reason(), Some("not found: /sys/class/dmi/id/sys_vendor"));
    assert!(env.load_avg_before.is_present());
    assert_eq!(env.load_avg_after, None);
    assert_eq!(env.finished_utc, None);

    assert_eq!(summary_value(&env, "CPU"), "Intel(R) Xeon(R) Processor, 1 socket, 2 cores, 2 logical CPUs, no SMT");
    assert_eq!(summary_value(&env, "Virtualization"), "KVM");
    assert_eq!(summary_value(&env, "Frequency"), "cpufreq absent");
    assert_eq!(summary_value(&env, "Allowed CPUs"), "0-1");
    assert_eq!(summary_value(&env, "Caches"), "L1d 48 KiB x2, L1i 32 KiB x2, L2 2 MiB x2, L3 105 MiB x1");
    assert_eq!(summary_value(&env, "Memory").split(',').next(), Some("23.5 GiB total"));
}

#[test]
fn four_cores_eight_threads_desktop() {
    let env = collect("4c8t");
    assert_eq!(env.cpu.logical_cpus, Reading::Present(8));
    assert_eq!(env.cpu.physical_cores, Reading::Present(4));
    assert_eq!(env.cpu.smt, Reading::Present(true));
    let freq = env.cpufreq.ok().expect("cpufreq present");
    assert_eq!(freq.driver, Reading::Present("intel_pstate".into()));
    assert_eq!(freq.governor, Reading::Present("powersave".into()));
    assert_eq!(freq.boost, Some(true));
    assert_eq!(freq.min_khz, Reading::Present(800_000));
    assert_eq!(freq.max_khz, Reading::Present(4_500_000));
    let warning = env.frequency_warning().expect("powersave and turbo warn");
    assert!(warning.contains("powersave") && warning.contains("boost"), "{warning}");
    assert_eq!(summary_value(&env, "Frequency"), "intel_pstate/powersave, boost on, 800-4500 MHz");

    assert_eq!(env.virtualization.hypervisor_flag, Reading::Present(false));
    let reason = env.virtualization.hypervisor.reason().unwrap();
    assert!(reason.contains("/sys/hypervisor/type"), "{reason}");
    assert!(reason.contains("no hypervisor flag in /proc/cpuinfo"), "{reason}");
    assert_eq!(summary_value(&env, "Virtualization"), "none detected");

    assert_eq!(env.dmi.product_name, Reading::Present("OptiPlex 7050".into()));
    assert_eq!(env.dmi.bios_date, Reading::Present("07/10/2023".into()));
    assert_eq!(env.tunables.perf_event_paranoid, Reading::Present(4));
    assert_eq!(env.tunables.io_uring_disabled.reason(), Some("not found: /proc/sys/kernel/io_uring_disabled"));
    assert_eq!(env.cpu_limits.cgroup, Reading::Present("/user.slice/user-1000.slice/session-2.scope".into()));
    assert_eq!(env.cpu_limits.cpuset_effective, Reading::Present((0..8).collect()));
    assert_eq!(env.cpu_limits.cpu_max, Reading::Present(CpuMax { quota_us: None, period_us: 100_000 }));
    assert_eq!(env.load_avg_before, Reading::Present([0.52, 0.31, 0.20]));
    assert_eq!(env.memory.total_bytes, Reading::Present(32_780_128 * 1024));
    assert_eq!(env.memory.available_bytes, Reading::Present(30_408_704 * 1024));
}

#[test]
fn two_socket_server() {
    let env = collect("2s48c96t");
    assert_eq!(env.cpu.sockets, Reading::Present(2));
    assert_eq!(env.cpu.physical_cores, Reading::Present(48));
    assert_eq!(env.cpu.logical_cpus, Reading::Present(96));
    let siblings = env.cpu.smt_siblings.ok().unwrap();
    assert_eq!(siblings.len(), 48);
    assert!(siblings.contains(&vec![5, 53]));
    assert_eq!(env.cpu.l3_domains.ok().unwrap().len(), 6);
    assert_eq!(env.cpu.numa_nodes.ok().unwrap().len(), 2);
    assert!(env.cpu.flags_of_note.ok().unwrap().iter().any(|f| f == "avx512_vnni"));

    assert_eq!(env.virtualization.hypervisor_flag, Reading::Present(false));
    assert!(!env.virtualization.hypervisor.is_present());
    // Supermicro DMI does not name a hypervisor, and none is claimed.
    assert_eq!(env.dmi.sys_vendor, Reading::Present("Supermicro".into()));

    let freq = env.cpufreq.ok().unwrap();
    assert_eq!(freq.governor, Reading::Present("performance".into()));
    assert_eq!(freq.boost, Some(false));
    assert_eq!(env.frequency_warning(), None);

    let iso = env.kernel.isolcpus.ok().unwrap();
    assert_eq!(iso.flags, vec!["nohz", "domain", "managed_irq"]);
    assert_eq!(cpulist::format(&iso.cpus), "2-23,50-71");
    assert_eq!(cpulist::format(&env.kernel.nohz_full.ok().unwrap().cpus), "2-23,50-71");
    assert_eq!(env.kernel.rcu_nocbs.ok().unwrap().raw, "2-23,50-71");
    assert_eq!(env.tunables.thp_enabled, Reading::Present("never".into()));
    assert_eq!(env.tunables.aslr, Reading::Present(0));
    assert_eq!(env.tunables.perf_event_paranoid, Reading::Present(-1));
    assert_eq!(env.cpu_limits.cpu_max.ok().unwrap().quota_us, Some(2_400_000));
    assert_eq!(summary_value(&env, "CPU"), "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz, 2 sockets, 48 cores, 96 logical CPUs, SMT on");
    assert_eq!(
        summary_value(&env, "CPU isolation"),
        "isolcpus=nohz,domain,managed_irq,2-23,50-71 nohz_full=2-23,50-71 rcu_nocbs=2-23,50-71"
    );
}

#[test]
fn json_round_trip() {
    for name in ["kvm-2c", "4c8t", "2s48c96t"] {
        let mut env = collect(name);
        env.finish(&fixture(name));
        assert!(env.finished_utc.is_some());
        assert!(matches!(env.load_avg_after, Some(Reading::Present(_))));
        let json = serde_json::to_string_pretty(&env).unwrap();
        let back: Envelope = serde_json::from_str(&json).unwrap();
        assert_eq!(back, env, "{name}");
    }
}

#[test]
fn json_shape() {
    let env = collect("kvm-2c");
    let value = serde_json::to_value(&env).unwrap();
    let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    for key in [
        "schema",
        "hostname",
        "started_utc",
        "finished_utc",
        "command_line",
        "seed",
        "cpu",
        "topology",
        "memory",
        "kernel",
        "virtualization",
        "clock_source",
        "cpufreq",
        "tunables",
        "load_avg_before",
        "load_avg_after",
        "cpu_limits",
        "dmi",
        "tool",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert_eq!(value["schema"], "proofbench.envelope/1");
    assert_eq!(value["hostname"], "vm");
    assert_eq!(value["cpu"]["logical_cpus"], 2);
    assert_eq!(value["cpufreq"]["absent"], "no cpufreq directory (/sys/devices/system/cpu/cpu0/cpufreq)");
    assert_eq!(value["finished_utc"], serde_json::Value::Null);
    assert!(value["started_utc"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn empty_root_marks_everything_absent() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Envelope::collect(dir.path(), Vec::new(), 0);
    env.finish(dir.path());
    let c = &env.cpu;
    assert!(!env.hostname.is_present());
    assert!(!env.topology.is_present());
    assert!(env.topology.reason().unwrap().contains("sys/devices/system/cpu/online"));
    assert!(!c.model_name.is_present() && !c.vendor_id.is_present());
    assert!(!c.flags_of_note.is_present() && !c.sockets.is_present());
    assert!(!c.physical_cores.is_present() && !c.logical_cpus.is_present());
    assert!(!c.smt.is_present() && !c.smt_siblings.is_present());
    assert!(!c.l3_domains.is_present() && !c.numa_nodes.is_present() && !c.caches.is_present());
    assert!(!env.memory.total_bytes.is_present() && !env.memory.available_bytes.is_present());
    let k = &env.kernel;
    assert!(!k.release.is_present() && !k.version.is_present() && !k.cmdline.is_present());
    assert!(k.isolcpus.reason().unwrap().contains("/proc/cmdline"));
    assert!(!k.nohz_full.is_present() && !k.rcu_nocbs.is_present());
    assert!(!env.virtualization.hypervisor_flag.is_present());
    assert!(!env.virtualization.hypervisor.is_present());
    assert!(!env.clock_source.current.is_present() && !env.clock_source.available.is_present());
    assert!(!env.cpufreq.is_present());
    let t = &env.tunables;
    assert!(!t.thp_enabled.is_present() && !t.thp_defrag.is_present() && !t.aslr.is_present());
    assert!(!t.perf_event_paranoid.is_present() && !t.io_uring_disabled.is_present());
    assert!(!env.load_avg_before.is_present());
    assert!(matches!(env.load_avg_after, Some(Reading::Absent { .. })));
    let l = &env.cpu_limits;
    assert!(!l.allowed.is_present() && !l.cgroup.is_present());
    assert!(!l.cpuset_effective.is_present() && !l.cpu_max.is_present());
    let d = &env.dmi;
    for r in [&d.sys_vendor, &d.product_name, &d.board_vendor, &d.board_name, &d.bios_vendor, &d.bios_version, &d.bios_date] {
        assert!(!r.is_present());
    }
    assert_eq!(env.frequency_warning(), None);
    // The summary still renders, saying what is unknown.
    let summary = env.summary();
    assert!(summary.iter().any(|(k, v)| k == "Host" && v.starts_with("unknown (not found")));
    let back: Envelope = serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
    assert_eq!(back, env);
}

#[test]
fn malformed_files_are_absent_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("proc/loadavg", "high load\n");
    write("proc/meminfo", "MemTotal: lots\n");
    write("proc/sys/kernel/randomize_va_space", "two\n");
    write("sys/kernel/mm/transparent_hugepage/enabled", "always\n");
    write("proc/self/cgroup", "0::/../../elsewhere\n");
    write("sys/fs/cgroup/cgroup.controllers", "cpu\n");
    let env = Envelope::collect(root, Vec::new(), 1);
    assert!(env.load_avg_before.reason().unwrap().contains("/proc/loadavg"));
    assert!(env.memory.total_bytes.reason().unwrap().contains("/proc/meminfo"));
    assert!(env.tunables.aslr.reason().unwrap().contains("randomize_va_space"));
    assert!(env.tunables.thp_enabled.reason().unwrap().contains("transparent_hugepage/enabled"));
    assert!(env.cpu_limits.cpu_max.reason().unwrap().contains("outside"));
}

#[test]
fn live_machine_collects() {
    let env = Envelope::collect(Path::new("/"), vec!["test".into()], 1);
    assert!(env.cpu.logical_cpus.is_present());
    assert!(env.cpu_limits.allowed.ok().is_some_and(|a| !a.is_empty()));
    assert!(!env.summary().is_empty());
}

#[test]
fn the_machine_identity_is_defined_once_and_the_stored_name_keeps_its_text() {
    let env = collect("kvm-2c");
    // The history stores this text (runs.machine): it must not change.
    let cpus = env.cpu.logical_cpus.ok().copied().unwrap();
    assert_eq!(env.machine_name(), format!("vm, Intel(R) Xeon(R) Processor, {cpus} CPUs"));
    let fields: Vec<&str> = env.identity().iter().map(|(f, _)| *f).collect();
    assert_eq!(
        fields,
        [
            "hostname",
            "slurm.node",
            "cpu.model_name",
            "cpu.sockets",
            "cpu.physical_cores",
            "cpu.logical_cpus",
            "memory.total_bytes",
            "virtualization.hypervisor"
        ]
    );
    assert!(env.machine_differences(&env).is_empty());
    let mut other = env.clone();
    other.hostname = Reading::Present("node2".into());
    assert_eq!(env.machine_differences(&other), ["hostname (vm vs node2)"]);
    assert_ne!(env.machine_key(), other.machine_key());
    // Another host of the same kind; another kernel is another kind.
    assert_eq!(env.kind(), other.kind());
    other.kernel.release = Reading::Present("9.9.9".into());
    assert_ne!(env.kind(), other.kind());
    assert!(env.machine_differences(&other).len() == 1, "the kernel is no part of the identity");
    // A Slurm node named as its host is that host, in a job or not;
    // another node on the same host is another machine.
    let mut in_job = env.clone();
    in_job.slurm = SlurmFacts::from_vars(|k| (k == "SLURMD_NODENAME").then(|| "vm".into()));
    assert!(env.machine_differences(&in_job).is_empty());
    let mut n2 = env.clone();
    n2.slurm = SlurmFacts::from_vars(|k| (k == "SLURMD_NODENAME").then(|| "n2".into()));
    assert_eq!(in_job.machine_differences(&n2), ["slurm.node (- vs n2)"]);
    assert_eq!((in_job.machine_short_name(), n2.machine_short_name()), ("vm".to_string(), "vm/n2".to_string()));
}

#[test]
fn a_slurm_job_is_recorded_from_its_variables_and_shown_in_the_summary() {
    let vars = |k: &str| match k {
        "SLURM_JOB_ID" => Some("12".to_string()),
        "SLURMD_NODENAME" => Some("n2".to_string()),
        _ => None,
    };
    let facts = SlurmFacts::from_vars(vars).expect("in a job");
    assert_eq!(
        facts,
        SlurmFacts { job_id: Some("12".into()), job_nodelist: None, node: Some("n2".into()), array_job_id: None, job_name: None }
    );
    assert_eq!(facts.submission(), None, "a job's own id names one node's job, not a submission");
    let named = |name: &'static str| {
        SlurmFacts::from_vars(move |k| (k == "SLURM_JOB_ID").then(|| "12".into()).or((k == "SLURM_JOB_NAME").then(|| name.into())))
    };
    assert_eq!(named("proofbench").unwrap().submission(), None, "the plain name is every submission's");
    assert_eq!(named("proofbench-r7").unwrap().submission().as_deref(), Some("slurm job proofbench-r7"));
    assert_eq!(SlurmFacts::from_vars(|_| None), None);

    // A fixture tree is not the live machine: no Slurm job, and no field in the JSON.
    let mut env = collect("kvm-2c");
    assert_eq!(env.slurm, None);
    assert!(!serde_json::to_string(&env).unwrap().contains("\"slurm\""));
    assert!(env.summary().iter().all(|(k, _)| k != "Slurm"));
    env.slurm = Some(facts);
    assert_eq!(summary_value(&env, "Slurm"), "job 12 on node n2 (job nodes unknown)");
    let back: Envelope = serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
    assert_eq!(back, env);
}

/// A tree of `(path, text)` files under a temporary root.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = root.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    root
}

fn limits(root: &tempfile::TempDir) -> CpuLimits {
    super::probe::cpu_limits(&super::reading::Files::new(root.path()), &Reading::absent("not read"))
}

#[test]
fn cpu_limits_are_read_on_cgroup_v2_v1_and_hybrid_layouts() {
    // Pure v2: the leaf's own files.
    let v2 = tree(&[
        ("proc/self/cgroup", "0::/bench/job\n"),
        ("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids"),
        ("sys/fs/cgroup/bench/job/cpuset.cpus.effective", "2-3\n"),
        ("sys/fs/cgroup/bench/job/cpu.max", "150000 100000\n"),
    ]);
    let l = limits(&v2);
    assert_eq!(l.cgroup, Reading::Present("/bench/job".into()));
    assert_eq!(l.cpuset_effective, Reading::Present(vec![2, 3]));
    assert_eq!(l.cpu_max, Reading::Present(CpuMax { quota_us: Some(150_000), period_us: 100_000 }));

    // Pure v1 (RHEL 8, many HPC nodes): no 0:: line; the controllers' own
    // hierarchies, cpu mounted as `cpu,cpuacct`.
    let v1 = tree(&[
        ("proc/self/cgroup", "7:cpuset:/slurm/uid_0/job_12\n4:cpu,cpuacct:/slurm/uid_0/job_12\n1:name=systemd:/\n"),
        ("sys/fs/cgroup/cpuset/slurm/uid_0/job_12/cpuset.effective_cpus", "0,4\n"),
        ("sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_12/cpu.cfs_quota_us", "200000\n"),
        ("sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_12/cpu.cfs_period_us", "100000\n"),
    ]);
    let l = limits(&v1);
    assert!(l.cgroup.reason().unwrap().contains("no cgroup v2"), "{:?}", l.cgroup);
    assert_eq!(l.cpuset_effective, Reading::Present(vec![0, 4]));
    assert_eq!(l.cpu_max, Reading::Present(CpuMax { quota_us: Some(200_000), period_us: 100_000 }));

    // Hybrid (this kind of machine): v2 at unified without cpu or cpuset; the
    // v1 controllers at the root, no quota (-1).
    let hybrid = tree(&[
        ("proc/self/cgroup", "3:cpuset:/\n1:cpu:/\n0::/\n"),
        ("sys/fs/cgroup/unified/cgroup.controllers", ""),
        ("sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-1\n"),
        ("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"),
        ("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"),
    ]);
    let l = limits(&hybrid);
    assert_eq!(l.cgroup, Reading::Present("/".into()));
    assert_eq!(l.cpuset_effective, Reading::Present(vec![0, 1]));
    assert_eq!(l.cpu_max, Reading::Present(CpuMax { quota_us: None, period_us: 100_000 }));

    // A v1 path that climbs out of the namespace is refused, with both reasons.
    let outside = tree(&[("proc/self/cgroup", "3:cpuset:/../other\n"), ("sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0\n")]);
    let why = limits(&outside).cpuset_effective.reason().unwrap().to_string();
    assert!(why.contains("cgroup v1: cgroup \"/../other\" lies outside this cgroup namespace"), "{why}");
}

#[test]
fn the_cgroup_line_names_the_quota_whichever_hierarchy_gave_it() {
    let mut env = collect("kvm-2c");
    env.cpu_limits.cgroup = Reading::Present("/job".into());
    env.cpu_limits.cpuset_effective = Reading::Present(vec![0, 1]);
    env.cpu_limits.cpu_max = Reading::Present(CpuMax { quota_us: Some(50_000), period_us: 100_000 });
    assert_eq!(summary_value(&env, "cgroup"), "/job: cpuset 0-1, CPU quota 50000 us per 100000 us (0.50 CPUs)");
    env.cpu_limits.cpu_max = Reading::Present(CpuMax { quota_us: None, period_us: 100_000 });
    assert_eq!(summary_value(&env, "cgroup"), "/job: cpuset 0-1, CPU quota none (period 100000 us)");
}
