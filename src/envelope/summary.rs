//! The human-readable side of an envelope: the key/value header of a report and the
//! frequency-scaling warning.
//!
//! Formatting only: this module must never read the machine (it works from a stored
//! envelope) and must never hide an absent value; absent items print as "unknown (reason)".

use std::fmt::Display;

use super::{CpuParam, Envelope};
use crate::model::Reading;
use crate::topology::{Cache, cpulist};

/// "value" when present, "unknown (reason)" when absent.
fn show<T>(r: &Reading<T>, f: impl FnOnce(&T) -> String) -> String {
    match r {
        Reading::Present(v) => f(v),
        Reading::Absent { absent } => format!("unknown ({absent})"),
    }
}

fn plain<T: Display>(r: &Reading<T>) -> String {
    show(r, |v| v.to_string())
}

/// Present parts joined by spaces; "unknown (first reason)" when none is present; the present
/// parts plus "(partly unknown)" otherwise.
fn joined(parts: &[&Reading<String>]) -> String {
    let present: Vec<&str> = parts.iter().filter_map(|r| r.ok()).map(String::as_str).collect();
    match (present.len(), parts.iter().find_map(|r| r.reason())) {
        (_, None) => present.join(" "),
        (0, Some(reason)) => format!("unknown ({reason})"),
        (_, Some(_)) => format!("{} (partly unknown)", present.join(" ")),
    }
}

fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Bytes in the largest binary unit that divides them exactly ("48 KiB", "105 MiB").
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map(|(unit, name)| format!("{} {name}", bytes / unit))
        .unwrap_or_else(|| format!("{bytes} B"))
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn cache_name(c: &Cache) -> String {
    let suffix = match (c.level, c.kind.as_str()) {
        (1, "Data") => "d",
        (1, "Instruction") => "i",
        _ => "",
    };
    format!("L{}{suffix}", c.level)
}

fn load(r: &Reading<[f64; 3]>) -> String {
    show(r, |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"))
}

impl Envelope {
    /// Short key/value lines for a report header, in a fixed order. Absent readings appear
    /// as "unknown (reason)".
    pub fn summary(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |k: &str, v: String| out.push((k.to_string(), v));
        let cpu = &self.cpu;

        push("Host", plain(&self.hostname));
        let shape = match (cpu.sockets.ok(), cpu.physical_cores.ok(), cpu.logical_cpus.ok(), cpu.smt.ok()) {
            (Some(s), Some(c), Some(l), Some(smt)) => format!(
                "{}, {}, {}, {}",
                counted(*s, "socket", "sockets"),
                counted(*c, "core", "cores"),
                counted(*l, "logical CPU", "logical CPUs"),
                if *smt { "SMT on" } else { "no SMT" }
            ),
            _ => show(&cpu.logical_cpus, |_| String::new()),
        };
        let model = cpu.model_name.ok().cloned().unwrap_or_else(|| plain(&cpu.model_name));
        push("CPU", format!("{model}, {shape}"));
        push(
            "Caches",
            show(&cpu.caches, |caches| {
                caches.iter().map(|c| format!("{} {} x{}", cache_name(c), size(c.size_bytes), c.instances)).collect::<Vec<_>>().join(", ")
            }),
        );
        push(
            "NUMA",
            show(&cpu.numa_nodes, |nodes| match nodes.len() {
                0 => "no NUMA information".to_string(),
                n => {
                    let lists: Vec<String> = nodes.iter().map(|(id, cpus)| format!("node{id} {}", cpulist::format(cpus))).collect();
                    format!("{}: {}", counted(n, "node", "nodes"), lists.join("; "))
                }
            }),
        );
        push("Flags", show(&cpu.flags_of_note, |flags| flags.join(" ")));
        let kernel = &self.kernel;
        push(
            "Kernel",
            match (&kernel.release, &kernel.version) {
                (Reading::Present(r), Reading::Present(v)) => format!("{r} {v}"),
                (r, _) => plain(r),
            },
        );
        let params: Vec<String> = [("isolcpus", &kernel.isolcpus), ("nohz_full", &kernel.nohz_full), ("rcu_nocbs", &kernel.rcu_nocbs)]
            .iter()
            .filter_map(|(key, r): &(&str, &Reading<CpuParam>)| match r {
                Reading::Present(p) => Some(format!("{key}={}", p.raw)),
                Reading::Absent { absent } if absent == "not on the kernel command line" => None,
                Reading::Absent { absent } => Some(format!("{key} unknown ({absent})")),
            })
            .collect();
        push("CPU isolation", if params.is_empty() { "none on the kernel command line".to_string() } else { params.join(" ") });
        let virt = &self.virtualization;
        push(
            "Virtualization",
            match &virt.hypervisor {
                Reading::Present(name) => name.clone(),
                Reading::Absent { .. } => "none detected".to_string(),
            },
        );
        push(
            "Frequency",
            match &self.cpufreq {
                Reading::Absent { .. } => "cpufreq absent".to_string(),
                Reading::Present(f) => {
                    let boost = match f.boost {
                        Some(true) => "boost on",
                        Some(false) => "boost off",
                        None => "boost unknown",
                    };
                    let range = match (f.min_khz.ok(), f.max_khz.ok()) {
                        (Some(lo), Some(hi)) => format!(", {}-{} MHz", lo / 1000, hi / 1000),
                        _ => String::new(),
                    };
                    format!("{}/{}, {boost}{range}", show(&f.driver, String::clone), show(&f.governor, String::clone))
                }
            },
        );
        let mem = &self.memory;
        push("Memory", format!("{} total, {} available", show(&mem.total_bytes, |b| gib(*b)), show(&mem.available_bytes, |b| gib(*b))));
        let clock = &self.clock_source;
        push("Clock source", format!("{} (available: {})", plain(&clock.current), show(&clock.available, |a| a.join(" "))));
        let tun = &self.tunables;
        push("THP", format!("enabled {}, defrag {}", plain(&tun.thp_enabled), plain(&tun.thp_defrag)));
        push(
            "ASLR",
            show(&tun.aslr, |v| {
                let what = match v {
                    0 => "off",
                    1 => "partial",
                    2 => "full",
                    _ => "unrecognized",
                };
                format!("{v} ({what})")
            }),
        );
        push("perf_event_paranoid", plain(&tun.perf_event_paranoid));
        push("io_uring_disabled", plain(&tun.io_uring_disabled));
        if let Some(slurm) = &self.slurm {
            let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
            push(
                "Slurm",
                // The submission is the run's (`RunRecord::submission`): a
                // report's `Submission` line says it.
                format!(
                    "job {} on node {} (job nodes {})",
                    or_unknown(&slurm.job_id),
                    or_unknown(&slurm.node),
                    or_unknown(&slurm.job_nodelist)
                ),
            );
        }
        let limits = &self.cpu_limits;
        push("Allowed CPUs", show(&limits.allowed, |cpus| cpulist::format(cpus)));
        push(
            "cgroup",
            format!(
                "{}: cpuset {}, CPU quota {}",
                plain(&limits.cgroup),
                show(&limits.cpuset_effective, |c| cpulist::format(c)),
                // cgroup v2's cpu.max, or v1's cpu.cfs_quota_us and cpu.cfs_period_us.
                show(&limits.cpu_max, |m| match m.quota_us {
                    None => format!("none (period {} us)", m.period_us),
                    Some(q) => format!("{q} us per {} us ({:.2} CPUs)", m.period_us, q as f64 / m.period_us.max(1) as f64),
                })
            ),
        );
        let dmi = &self.dmi;
        push("System", joined(&[&dmi.sys_vendor, &dmi.product_name]));
        push("BIOS", joined(&[&dmi.bios_vendor, &dmi.bios_version, &dmi.bios_date]));
        push(
            "Load average",
            match &self.load_avg_after {
                None => format!("{} before", load(&self.load_avg_before)),
                Some(after) => format!("{} before, {} after", load(&self.load_avg_before), load(after)),
            },
        );
        push("Tool", self.tool.describe());
        push("Compiler", format!("{}, {}", self.tool.rustc_version, self.tool.target));
        if let Some(paths) = self.tool.describe_code_paths() {
            push("Code paths", paths);
        }
        push("Seed", self.seed.to_string());
        push("Started", self.started_utc.clone());
        if let Some(finished) = &self.finished_utc {
            push("Finished", finished.clone());
        }
        out
    }

    /// `Some(warning)` when cpufreq shows a governor other than "performance", or boost
    /// enabled: clock speed may then change during the run. `None` when cpufreq is absent or
    /// shows neither.
    pub fn frequency_warning(&self) -> Option<String> {
        let f = self.cpufreq.ok()?;
        let mut problems = Vec::new();
        if let Some(governor) = f.governor.ok().filter(|g| *g != "performance") {
            problems.push(format!("the cpufreq governor is {governor:?}, not \"performance\""));
        }
        if f.boost == Some(true) {
            problems.push("turbo/boost is enabled".to_string());
        }
        if problems.is_empty() {
            return None;
        }
        Some(format!(
            "CPU frequency may change during the run: {}. Timings can vary with load and \
             temperature; compare results only with runs on the same settings.",
            problems.join(" and ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_exact_binary_units() {
        assert_eq!(size(48 << 10), "48 KiB");
        assert_eq!(size(107_520 << 10), "105 MiB");
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(1280 << 10), "1280 KiB");
        assert_eq!(size(100), "100 B");
        assert_eq!(gib(24_682_416 * 1024), "23.5 GiB");
    }
}
