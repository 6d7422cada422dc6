//! The individual readings of the envelope: each function reads a few files under the root
//! and parses them into a section.
//!
//! Every function here returns Readings: it must never panic, never return an error and never
//! fill in a value it did not read. Reasons name the file as the machine knows it ("/proc/...").

use super::reading::Files;
use super::{ClockSource, CpuFreq, CpuLimits, CpuMax, CpuParam, CpuSection, Dmi, Kernel, Memory, Tunables, Virtualization};
use crate::model::Reading;
use crate::topology::{Topology, cpulist};

/// What the envelope takes from `proc/cpuinfo` (first processor block).
pub(super) struct CpuInfo {
    pub model_name: Reading<String>,
    pub vendor_id: Reading<String>,
    /// All flags.
    pub flags: Reading<Vec<String>>,
}

const CPUINFO: &str = "proc/cpuinfo";

pub(super) fn cpuinfo(files: &Files) -> CpuInfo {
    let text = files.text(CPUINFO);
    let field = |key: &str| -> Reading<String> {
        text.as_ref().and_then(|text| {
            text.lines()
                .take_while(|line| !line.trim().is_empty())
                .filter_map(|line| line.split_once(':'))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().to_string())
                .ok_or_else(|| format!("no {key:?} line in {}", Files::show(CPUINFO)))
        })
    };
    CpuInfo {
        model_name: field("model name"),
        vendor_id: field("vendor_id"),
        flags: field("flags").map(|f| f.split_whitespace().map(str::to_string).collect()),
    }
}

/// Flags worth recording: vector and crypto extensions a benchmark may depend on, and the
/// TSC and virtualization bits that decide how far timings can be trusted.
fn is_flag_of_note(flag: &str) -> bool {
    const NOTABLE: &[&str] = &[
        "ht",
        "hypervisor",
        "constant_tsc",
        "nonstop_tsc",
        "tsc_known_freq",
        "rdtscp",
        "sse4_2",
        "popcnt",
        "avx",
        "avx2",
        "fma",
        "bmi1",
        "bmi2",
        "aes",
        "vaes",
        "pclmulqdq",
        "vpclmulqdq",
        "sha_ni",
        "gfni",
        "erms",
        "fsrm",
        "rdrand",
        "rdseed",
        "avx_vnni",
    ];
    NOTABLE.contains(&flag) || flag.starts_with("avx512") || flag.starts_with("amx")
}

pub(super) fn cpu_section(info: &CpuInfo, topology: &Reading<Topology>) -> CpuSection {
    fn from<T>(topology: &Reading<Topology>, f: impl Fn(&Topology) -> T) -> Reading<T> {
        topology.as_ref().map(f)
    }
    CpuSection {
        model_name: info.model_name.clone(),
        vendor_id: info.vendor_id.clone(),
        flags_of_note: info.flags.clone().map(|flags| flags.into_iter().filter(|f| is_flag_of_note(f)).collect()),
        sockets: from(topology, Topology::sockets),
        physical_cores: from(topology, Topology::physical_cores),
        logical_cpus: from(topology, Topology::logical_cpus),
        smt: from(topology, Topology::has_smt),
        smt_siblings: from(topology, Topology::cores),
        l3_domains: from(topology, |t| t.l3_domains.clone()),
        numa_nodes: from(topology, |t| t.numa_nodes.clone()),
        caches: from(topology, |t| t.caches.clone()),
    }
}

pub(super) fn memory(files: &Files) -> Memory {
    const MEMINFO: &str = "proc/meminfo";
    let text = files.text(MEMINFO);
    let field = |key: &str| -> Reading<u64> {
        text.as_ref().and_then(|text| {
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .ok_or_else(|| format!("no {key} line in {}", Files::show(MEMINFO)))?;
            let kib = line
                .trim()
                .strip_suffix("kB")
                .and_then(|n| n.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("cannot parse {key} in {}: {line:?}", Files::show(MEMINFO)))?;
            kib.checked_mul(1024).ok_or_else(|| format!("{key} overflows in {}", Files::show(MEMINFO)))
        })
    };
    Memory { total_bytes: field("MemTotal"), available_bytes: field("MemAvailable") }
}

pub(super) fn kernel(files: &Files) -> Kernel {
    let cmdline = files.text("proc/cmdline");
    Kernel {
        release: files.text("proc/sys/kernel/osrelease"),
        version: files.text("proc/sys/kernel/version"),
        isolcpus: cpu_param(&cmdline, "isolcpus"),
        nohz_full: cpu_param(&cmdline, "nohz_full"),
        rcu_nocbs: cpu_param(&cmdline, "rcu_nocbs"),
        cmdline,
    }
}

/// The value of `key` on the kernel command line (the last occurrence wins, as in the kernel;
/// arguments after "--" belong to init and are ignored). `None` when the key is not there;
/// `Some("")` for a bare `key`.
pub(crate) fn param_value<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .take_while(|token| *token != "--")
        .filter_map(|token| match token.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if token == key => Some(""),
            _ => None,
        })
        .last()
}

fn cpu_param(cmdline: &Reading<String>, key: &str) -> Reading<CpuParam> {
    let Some(cmdline) = cmdline.ok() else {
        return Reading::absent(format!("kernel command line unreadable: {}", cmdline.reason().unwrap_or_default()));
    };
    let Some(raw) = param_value(cmdline, key) else {
        return Reading::absent("not on the kernel command line");
    };
    const ISOLCPUS_FLAGS: &[&str] = &["nohz", "domain", "managed_irq"];
    let mut flags = Vec::new();
    let mut rest = raw;
    if key == "isolcpus" {
        while let Some((head, tail)) = rest.split_once(',') {
            if !ISOLCPUS_FLAGS.contains(&head) {
                break;
            }
            flags.push(head.to_string());
            rest = tail;
        }
        if ISOLCPUS_FLAGS.contains(&rest) {
            flags.push(rest.to_string());
            rest = "";
        }
    }
    match cpulist::parse(rest) {
        Ok(cpus) => Reading::Present(CpuParam { raw: raw.to_string(), flags, cpus }),
        Err(why) => Reading::absent(format!("{key}={raw} on the kernel command line cannot be parsed: {why}")),
    }
}

const AVAILABLE_CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/available_clocksource";

pub(super) fn clock_source(files: &Files) -> ClockSource {
    ClockSource {
        current: files.text("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        available: files.text(AVAILABLE_CLOCKSOURCE).map(|t| t.split_whitespace().map(str::to_string).collect()),
    }
}

/// A hypervisor name from a DMI vendor or product string, when it names one.
fn hypervisor_in_dmi(text: &str) -> Option<&'static str> {
    const KNOWN: &[(&str, &str)] = &[
        ("KVM", "KVM"),
        ("QEMU", "QEMU"),
        ("VMware", "VMware"),
        ("VirtualBox", "VirtualBox"),
        ("innotek", "VirtualBox"),
        ("Xen", "Xen"),
        ("Virtual Machine", "Hyper-V"),
        ("Amazon EC2", "Amazon EC2"),
        ("Google Compute Engine", "Google Compute Engine"),
        ("BHYVE", "bhyve"),
        ("Parallels", "Parallels"),
        ("OpenStack", "OpenStack"),
    ];
    KNOWN.iter().find(|(needle, _)| text.contains(needle)).map(|(_, name)| *name)
}

/// A hypervisor name from a paravirtual clock source that only exists in its guests.
fn hypervisor_clock(name: &str) -> Option<&'static str> {
    match name {
        "kvm-clock" => Some("KVM"),
        "xen" => Some("Xen"),
        "hyperv_clocksource_tsc_page" | "hyperv_clocksource_msr" => Some("Hyper-V"),
        _ => None,
    }
}

pub(super) fn virtualization(files: &Files, flags: &Reading<Vec<String>>, clocks: &Reading<Vec<String>>) -> Virtualization {
    let flag = flags.as_ref().map(|flags| flags.iter().any(|f| f == "hypervisor"));
    let found = |name: &str, evidence: String| Virtualization {
        hypervisor_flag: flag.clone(),
        hypervisor: Reading::Present(name.to_string()),
        evidence: Some(evidence),
    };
    let mut checked = Vec::new();

    const HYPERVISOR_TYPE: &str = "sys/hypervisor/type";
    match files.text(HYPERVISOR_TYPE) {
        Reading::Present(t) if !t.is_empty() => {
            let name = if t == "xen" { "Xen".to_string() } else { t.clone() };
            return found(&name, format!("{} = {t:?}", Files::show(HYPERVISOR_TYPE)));
        }
        Reading::Present(_) => checked.push(format!("{} is empty", Files::show(HYPERVISOR_TYPE))),
        Reading::Absent { absent } => checked.push(absent),
    }
    if flag.ok() == Some(&false) {
        checked.push(format!("no hypervisor flag in {}", Files::show(CPUINFO)));
        return Virtualization {
            hypervisor_flag: flag,
            hypervisor: Reading::absent(format!("not virtualized: {}", checked.join("; "))),
            evidence: None,
        };
    }
    for rel in ["sys/class/dmi/id/sys_vendor", "sys/class/dmi/id/product_name"] {
        match files.text(rel) {
            Reading::Present(t) => match hypervisor_in_dmi(&t) {
                Some(name) => return found(name, format!("{} = {t:?}", Files::show(rel))),
                None => checked.push(format!("{} = {t:?}", Files::show(rel))),
            },
            Reading::Absent { absent } => checked.push(absent),
        }
    }
    match clocks {
        Reading::Present(list) => {
            if let Some((clock, name)) = list.iter().find_map(|c| hypervisor_clock(c).map(|name| (c, name))) {
                let evidence = format!("{} lists {clock}", Files::show(AVAILABLE_CLOCKSOURCE));
                return found(name, evidence);
            }
            checked.push(format!("no paravirtual clock in {}", Files::show(AVAILABLE_CLOCKSOURCE)));
        }
        Reading::Absent { absent } => checked.push(absent.clone()),
    }
    if flag.ok() == Some(&true) {
        return found("unknown", format!("hypervisor flag in {}; vendor not named", Files::show(CPUINFO)));
    }
    if let Some(reason) = flag.reason() {
        checked.push(reason.to_string());
    }
    Virtualization {
        hypervisor_flag: flag,
        hypervisor: Reading::absent(format!("no hypervisor found: {}", checked.join("; "))),
        evidence: None,
    }
}

pub(super) fn cpufreq(files: &Files) -> Reading<CpuFreq> {
    const DIR: &str = "sys/devices/system/cpu/cpu0/cpufreq";
    if !files.exists(DIR) {
        return Reading::absent(format!("no cpufreq directory ({})", Files::show(DIR)));
    }
    let boost_flag = |rel: &str, on: &str, off: &str| match files.text(rel) {
        Reading::Present(t) if t == on => Some(true),
        Reading::Present(t) if t == off => Some(false),
        _ => None,
    };
    let boost = boost_flag("sys/devices/system/cpu/cpufreq/boost", "1", "0")
        .or_else(|| boost_flag("sys/devices/system/cpu/intel_pstate/no_turbo", "0", "1"));
    Reading::Present(CpuFreq {
        driver: files.text(&format!("{DIR}/scaling_driver")),
        governor: files.text(&format!("{DIR}/scaling_governor")),
        boost,
        min_khz: files.number(&format!("{DIR}/scaling_min_freq")),
        max_khz: files.number(&format!("{DIR}/scaling_max_freq")),
    })
}

/// The bracketed choice of a sysfs selector such as `always [madvise] never`.
fn bracketed(text: &str) -> Result<String, String> {
    let start = text.find('[').ok_or("no [bracketed] choice")?;
    let len = text[start + 1..].find(']').ok_or("unclosed [")?;
    Ok(text[start + 1..start + 1 + len].to_string())
}

pub(super) fn tunables(files: &Files) -> Tunables {
    Tunables {
        thp_enabled: files.parsed("sys/kernel/mm/transparent_hugepage/enabled", bracketed),
        thp_defrag: files.parsed("sys/kernel/mm/transparent_hugepage/defrag", bracketed),
        aslr: files.number("proc/sys/kernel/randomize_va_space"),
        perf_event_paranoid: files.number("proc/sys/kernel/perf_event_paranoid"),
        io_uring_disabled: files.number("proc/sys/kernel/io_uring_disabled"),
    }
}

pub(super) fn load_avg(files: &Files) -> Reading<[f64; 3]> {
    files.parsed("proc/loadavg", |text| {
        let mut fields = text.split_whitespace().map(str::parse::<f64>);
        let mut next = || match fields.next() {
            Some(Ok(v)) if v.is_finite() => Ok(v),
            _ => Err("expected three load averages".to_string()),
        };
        Ok([next()?, next()?, next()?])
    })
}

fn parse_cpu_max(text: &str) -> Result<CpuMax, String> {
    let mut parts = text.split_whitespace();
    let quota = parts.next().ok_or("empty")?;
    let quota_us = match quota {
        "max" => None,
        q => Some(q.parse::<u64>().map_err(|_| "quota is not a number or max")?),
    };
    let period_us = match parts.next() {
        Some(p) => p.parse::<u64>().map_err(|_| "period is not a number")?,
        None => return Err("no period".to_string()),
    };
    if parts.next().is_some() {
        return Err("more than two fields".to_string());
    }
    Ok(CpuMax { quota_us, period_us })
}

pub(super) fn cpu_limits(files: &Files, topology: &Reading<Topology>) -> CpuLimits {
    const SELF_CGROUP: &str = "proc/self/cgroup";
    let cgroup: Reading<String> = files.text(SELF_CGROUP).and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("0::"))
            .map(str::to_string)
            .ok_or_else(|| format!("no cgroup v2 (\"0::\") line in {}", Files::show(SELF_CGROUP)))
    });
    // Pure v2 mounts at sys/fs/cgroup; hybrid systems put v2 at sys/fs/cgroup/unified.
    let mount = ["sys/fs/cgroup", "sys/fs/cgroup/unified"].into_iter().find(|m| files.exists(&format!("{m}/cgroup.controllers")));
    let dir: Reading<String> = match (&cgroup, mount) {
        (Reading::Absent { absent }, _) => Reading::absent(absent.clone()),
        (_, None) => Reading::absent("no cgroup v2 hierarchy (cgroup.controllers) at /sys/fs/cgroup or /sys/fs/cgroup/unified"),
        (Reading::Present(path), Some(mount)) => {
            let rel = path.trim_matches('/');
            if rel.split('/').any(|part| part == "..") {
                Reading::absent(format!("cgroup {path:?} lies outside this cgroup namespace"))
            } else if rel.is_empty() {
                Reading::Present(mount.to_string())
            } else {
                Reading::Present(format!("{mount}/{rel}"))
            }
        }
    };
    let file = |name: &str| dir.as_ref().map(|d| format!("{d}/{name}"));
    let v2_cpuset = file("cpuset.cpus.effective").and_then(|rel| read_reason(files, &rel, cpulist::parse));
    let v2_cpu_max = file("cpu.max").and_then(|rel| read_reason(files, &rel, parse_cpu_max));
    // Where the v2 hierarchy lacks a controller (the v1 and hybrid layouts),
    // the v1 controller's own files say the same.
    let v1 = |controller: &str| v1_dir(files, SELF_CGROUP, controller);
    let cpuset_effective =
        or_v1(v2_cpuset, || v1("cpuset").and_then(|d| read_reason(files, &format!("{d}/cpuset.effective_cpus"), cpulist::parse)));
    let cpu_max = or_v1(v2_cpu_max, || {
        let d = v1("cpu")?;
        let quota = read_reason(files, &format!("{d}/cpu.cfs_quota_us"), |t| t.trim().parse::<i64>().map_err(|e| e.to_string()))?;
        let period = read_reason(files, &format!("{d}/cpu.cfs_period_us"), |t| t.trim().parse::<u64>().map_err(|e| e.to_string()))?;
        Ok(CpuMax { quota_us: u64::try_from(quota).ok(), period_us: period })
    });
    CpuLimits { allowed: topology.as_ref().map(|t| t.allowed.clone()), cpuset_effective, cpu_max, cgroup }
}

/// The v2 reading, else the v1 one; absent with both reasons when neither
/// can be read.
fn or_v1<T>(v2: Reading<T>, v1: impl FnOnce() -> Result<T, String>) -> Reading<T> {
    match v2 {
        Reading::Present(v) => Reading::Present(v),
        Reading::Absent { absent } => match v1() {
            Ok(v) => Reading::Present(v),
            Err(why) => Reading::absent(format!("{absent}; cgroup v1: {why}")),
        },
    }
}

/// The directory of this process's cgroup in the v1 hierarchy of
/// `controller`: its line of `proc/self/cgroup` (`3:cpuset:/path`,
/// `1:cpu,cpuacct:/path`) joined to the hierarchy's mount, named after the
/// line's controller list (`sys/fs/cgroup/cpu,cpuacct`) or the controller
/// alone (`sys/fs/cgroup/cpu`).
fn v1_dir(files: &Files, self_cgroup: &str, controller: &str) -> Result<String, String> {
    let text = match files.text(self_cgroup) {
        Reading::Present(t) => t,
        Reading::Absent { absent } => return Err(absent),
    };
    let (list, path) = text
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
            list.split(',').any(|c| c == controller).then(|| (list.to_string(), path.to_string()))
        })
        .ok_or_else(|| format!("no {controller} controller in {}", Files::show(self_cgroup)))?;
    let rel = path.trim_matches('/');
    if rel.split('/').any(|part| part == "..") {
        return Err(format!("cgroup {path:?} lies outside this cgroup namespace"));
    }
    let mount = [format!("sys/fs/cgroup/{list}"), format!("sys/fs/cgroup/{controller}")]
        .into_iter()
        .find(|m| files.exists(m))
        .ok_or_else(|| format!("no {controller} hierarchy at {}", Files::show(&format!("sys/fs/cgroup/{controller}"))))?;
    Ok(if rel.is_empty() { mount } else { format!("{mount}/{rel}") })
}

/// Reads and parses `rel`, flattening the Reading into a Result for `and_then`.
fn read_reason<T>(files: &Files, rel: &str, parse: impl FnOnce(&str) -> Result<T, String>) -> Result<T, String> {
    match files.parsed(rel, parse) {
        Reading::Present(v) => Ok(v),
        Reading::Absent { absent } => Err(absent),
    }
}

pub(super) fn dmi(files: &Files) -> Dmi {
    let read = |name: &str| files.text(&format!("sys/class/dmi/id/{name}"));
    Dmi {
        sys_vendor: read("sys_vendor"),
        product_name: read("product_name"),
        board_vendor: read("board_vendor"),
        board_name: read("board_name"),
        bios_vendor: read("bios_vendor"),
        bios_version: read("bios_version"),
        bios_date: read("bios_date"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_parameters() {
        let line = "ro isolcpus=1 quiet isolcpus=nohz,domain,2-3,6 rcu_nocbs -- nohz_full=1";
        assert_eq!(param_value(line, "isolcpus"), Some("nohz,domain,2-3,6"));
        assert_eq!(param_value(line, "rcu_nocbs"), Some(""));
        assert_eq!(param_value(line, "nohz_full"), None);
        let cmdline = Reading::Present(line.to_string());
        let iso = cpu_param(&cmdline, "isolcpus");
        let iso = iso.ok().unwrap();
        assert_eq!(iso.flags, vec!["nohz", "domain"]);
        assert_eq!(iso.cpus, vec![2, 3, 6]);
        assert_eq!(cpu_param(&cmdline, "rcu_nocbs").ok().unwrap().cpus, Vec::<usize>::new());
        assert_eq!(cpu_param(&cmdline, "nohz_full").reason(), Some("not on the kernel command line"));
        let bad = Reading::Present("isolcpus=x-y".to_string());
        assert!(cpu_param(&bad, "isolcpus").reason().unwrap().contains("isolcpus=x-y"));
    }

    #[test]
    fn small_parsers() {
        assert_eq!(bracketed("always [madvise] never").unwrap(), "madvise");
        assert!(bracketed("always madvise").is_err());
        assert_eq!(parse_cpu_max("max 100000").unwrap().quota_us, None);
        assert_eq!(parse_cpu_max("50000 100000").unwrap().quota_us, Some(50000));
        assert!(parse_cpu_max("50000").is_err());
        assert_eq!(hypervisor_in_dmi("QEMU"), Some("QEMU"));
        assert_eq!(hypervisor_in_dmi("Dell Inc."), None);
        assert!(is_flag_of_note("avx512_vnni") && !is_flag_of_note("fpu"));
    }
}
