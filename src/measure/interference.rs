//! What else took the machine while a trial measured: CPU time of other
//! processes on the CPUs the trial could use (`/proc/stat` against the
//! trial's own rusage), time a hypervisor stole from those CPUs, and the
//! kernel's CPU pressure stall (`/proc/pressure/cpu`, where present); and
//! where the trial's threads ran and how its memory was backed.
//!
//! `/proc/stat` counts in clock ticks (usually 10 ms), so a window shorter
//! than a few ticks per CPU cannot tell interference from rounding: such a
//! window is never called disturbed (its `resolution_ms` says how coarse it
//! was). Reading is cheap (one file each side) and happens outside the
//! timed samples.

use serde::{Deserialize, Serialize};

/// A share of the CPUs' time taken by other processes at or above which a
/// window is disturbed.
pub const DISTURBED_SHARE: f64 = 0.10;
/// Stolen time at or above which a window is disturbed.
pub const STOLEN_SHARE: f64 = 0.05;
/// The fewest ticks of others' CPU time (or steal) that can make a window
/// disturbed: below, the figure is rounding.
const MIN_TICKS: f64 = 3.0;

/// Ticks of one CPU from `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system.
    pub busy: u64,
    pub steal: u64,
}

/// One reading of the machine's CPU accounting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// `(cpu number, ticks)` of every online CPU.
    pub cpus: Vec<(usize, CpuTicks)>,
    /// `/proc/pressure/cpu` "some" total, microseconds (absent without PSI).
    pub pressure_us: Option<u64>,
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
    pub ticks_per_s: u64,
}

/// The `cpuN` lines of `/proc/stat` (the aggregate `cpu` line is left out),
/// with their CPU numbers; empty when the text is not a whole `/proc/stat`.
///
/// The figures come from `procfs_core::KernelStats`, which lists the CPUs in
/// the order of their lines but without their numbers: the numbers are taken
/// from the same lines here, since a CPU that is offline leaves a gap (the
/// trial's CPUs are chosen by number).
pub fn parse_stat(text: &str, ticks_per_s: u64) -> Vec<(usize, CpuTicks)> {
    use procfs_core::FromBufReadSI;
    let info = procfs_core::ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: ticks_per_s.max(1),
        page_size: 4096,
        is_little_endian: true,
    };
    let Ok(stats) = procfs_core::KernelStats::from_buf_read(text.as_bytes(), &info) else { return Vec::new() };
    // The lines KernelStats takes as CPUs: every `cpu...` line but `cpu `.
    let numbers = text
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .map(|l| l.split_whitespace().next().and_then(|w| w.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok()));
    numbers
        .zip(stats.cpu_time)
        .filter_map(|(n, t)| Some((n?, CpuTicks { busy: t.user + t.nice + t.system, steal: t.steal.unwrap_or(0) })))
        .collect()
}

/// The "some" total of `/proc/pressure/cpu`, microseconds (through
/// `procfs_core::parse_pressure_record`; the "full" line, absent before Linux 5.13, is
/// not needed).
pub fn parse_pressure(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    procfs_core::parse_pressure_record(line).ok().map(|r| r.total)
}

impl Snapshot {
    /// Reads `/proc/stat` and `/proc/pressure/cpu` now.
    pub fn read() -> Snapshot {
        // SAFETY: sysconf only reads a configuration value.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let ticks_per_s = if tck > 0 { tck as u64 } else { 100 };
        Snapshot {
            cpus: std::fs::read_to_string("/proc/stat").map(|t| parse_stat(&t, ticks_per_s)).unwrap_or_default(),
            pressure_us: std::fs::read_to_string("/proc/pressure/cpu").ok().and_then(|t| parse_pressure(&t)),
            ticks_per_s,
        }
    }

    fn ticks(&self, cpu: usize) -> Option<CpuTicks> {
        self.cpus.iter().find(|(c, _)| *c == cpu).map(|(_, t)| *t)
    }
}

/// What else ran while a window was open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// The CPUs considered: those the trial's cell pins its workers to, else
    /// those its worker was allowed to use (for the run: the run's).
    pub cpus: Vec<usize>,
    /// The window, milliseconds of wall time.
    pub window_ms: f64,
    /// The worker's own CPU time in the window (its threads and the
    /// children it reaped), milliseconds.
    pub own_cpu_ms: f64,
    /// Busy time (user, nice, system) of the considered CPUs, milliseconds.
    pub busy_ms: f64,
    /// Busy time not the worker's: other processes (and the kernel's own
    /// threads), milliseconds, at least 0.
    pub others_cpu_ms: f64,
    /// `others_cpu_ms` over the CPUs' capacity in the window (`cpus x window`).
    pub others_share: f64,
    /// Time a hypervisor took from those CPUs, milliseconds.
    pub steal_ms: f64,
    pub steal_share: f64,
    /// CPU pressure stall ("some" tasks waiting for a CPU, the worker's own
    /// included), milliseconds; absent without `/proc/pressure/cpu`.
    pub pressure_ms: Option<f64>,
    pub pressure_share: Option<f64>,
    /// One clock tick of `/proc/stat`, milliseconds: the figures' grain.
    pub resolution_ms: f64,
    /// Others took at least 10% of the CPUs, or the hypervisor at least 5%
    /// (and at least three ticks, so that rounding cannot).
    pub disturbed: bool,
    /// The CPU time of the other sides of the trial's lockstep set in the
    /// window, milliseconds: taken out of `others_cpu_ms` (they are the
    /// measurement, taking turns with this worker, not other work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partners_cpu_ms: Option<f64>,
}

/// Whether `others_ms` and `steal_ms` over `capacity_ms` of CPU time make a
/// window disturbed (each at least [`MIN_TICKS`] ticks of `tick_ms`).
fn disturbed(others_ms: f64, steal_ms: f64, capacity_ms: f64, tick_ms: f64) -> bool {
    let share = |ms: f64| if capacity_ms > 0.0 { ms / capacity_ms } else { 0.0 };
    let enough = |ms: f64| ms >= MIN_TICKS * tick_ms;
    (share(others_ms) >= DISTURBED_SHARE && enough(others_ms)) || (share(steal_ms) >= STOLEN_SHARE && enough(steal_ms))
}

impl Interference {
    /// The interference between two snapshots over `cpus`, given the
    /// worker's own CPU time and the wall time between them.
    pub fn between(a: &Snapshot, b: &Snapshot, cpus: &[usize], own_cpu_ms: f64, window_ms: f64) -> Interference {
        let tick_ms = 1e3 / b.ticks_per_s.max(1) as f64;
        let (mut busy, mut steal) = (0u64, 0u64);
        let mut counted = Vec::new();
        for &c in cpus {
            if let (Some(x), Some(y)) = (a.ticks(c), b.ticks(c)) {
                busy += y.busy.saturating_sub(x.busy);
                steal += y.steal.saturating_sub(x.steal);
                counted.push(c);
            }
        }
        let busy_ms = busy as f64 * tick_ms;
        let steal_ms = steal as f64 * tick_ms;
        let others_cpu_ms = (busy_ms - own_cpu_ms).max(0.0);
        let capacity = counted.len() as f64 * window_ms;
        let share = |ms: f64| if capacity > 0.0 { ms / capacity } else { 0.0 };
        let pressure_ms = match (a.pressure_us, b.pressure_us) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / 1e3),
            _ => None,
        };
        let disturbed = disturbed(others_cpu_ms, steal_ms, capacity, tick_ms);
        Interference {
            cpus: counted,
            window_ms,
            own_cpu_ms,
            busy_ms,
            others_cpu_ms,
            others_share: share(others_cpu_ms),
            steal_ms,
            steal_share: share(steal_ms),
            pressure_ms,
            pressure_share: pressure_ms.map(|p| if window_ms > 0.0 { p / window_ms } else { 0.0 }),
            resolution_ms: tick_ms,
            disturbed,
            partners_cpu_ms: None,
        }
    }

    /// The same window with `partners_ms` of CPU time (the other sides of a
    /// lockstep set) no longer counted as others', and judged again.
    pub fn without_partners(&self, partners_ms: f64) -> Interference {
        let others_cpu_ms = (self.others_cpu_ms - partners_ms).max(0.0);
        let capacity = self.cpus.len() as f64 * self.window_ms;
        Interference {
            others_cpu_ms,
            others_share: if capacity > 0.0 { others_cpu_ms / capacity } else { 0.0 },
            disturbed: disturbed(others_cpu_ms, self.steal_ms, capacity, self.resolution_ms),
            partners_cpu_ms: Some(partners_ms),
            ..self.clone()
        }
    }

    /// One line: `others 23% of CPUs 0-1, steal 0%, CPU pressure 41%`.
    pub fn text(&self) -> String {
        let mut s = format!("others took {:.0}% of CPUs {}", 100.0 * self.others_share, cpu_list(&self.cpus));
        if self.steal_ms > 0.0 {
            s.push_str(&format!(", the hypervisor stole {:.0}%", 100.0 * self.steal_share));
        }
        if let Some(p) = self.pressure_share {
            s.push_str(&format!(", CPU pressure {:.0}%", 100.0 * p));
        }
        s
    }
}

/// `0-3,6`: CPUs as the kernel writes lists.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { sorted[i].to_string() } else { format!("{}-{}", sorted[i], sorted[j]) });
        i = j + 1;
    }
    if parts.is_empty() { "none".into() } else { parts.join(",") }
}

/// The CPU each live thread of this process last ran on (field 39 of
/// `/proc/self/task/<tid>/stat`), sorted and without repeats.
pub fn thread_cpus() -> Vec<usize> {
    let mut cpus: Vec<usize> = std::fs::read_dir("/proc/self/task")
        .map(|d| d.flatten().filter_map(|e| std::fs::read(e.path().join("stat")).ok()).filter_map(|s| last_cpu(&s)).collect())
        .unwrap_or_default();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// CPU time of the live processes descending from this one (the worker's
/// own processes: `cpu.primes` keeps its workers alive across samples),
/// with what they reaped, milliseconds: the `utime`, `stime`, `cutime` and
/// `cstime` of each, found through `/proc/<pid>/task/<tid>/children`.
pub fn descendants_cpu_ms() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let ticks: u64 =
        descendants().iter().filter_map(|pid| std::fs::read(format!("/proc/{pid}/stat")).ok()).filter_map(|s| cpu_ticks(&s)).sum();
    ticks as f64 * 1e3 / tck
}

/// The live processes descending from this one (children, their children...),
/// through `/proc/<pid>/task/<tid>/children`: empty where the kernel has no
/// such file (`CONFIG_PROC_CHILDREN`).
pub fn descendants() -> Vec<u32> {
    let mut stack = children_of(std::process::id());
    let mut out = Vec::new();
    while let Some(pid) = stack.pop() {
        if out.len() >= 100_000 {
            break;
        }
        out.push(pid);
        stack.extend(children_of(pid));
    }
    out
}

/// The children of every thread of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|text| text.split_whitespace().filter_map(|w| w.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// utime + stime + cutime + cstime of a `stat` file, ticks.
fn cpu_ticks(stat: &[u8]) -> Option<u64> {
    let s = <procfs_core::process::Stat as procfs_core::FromRead>::from_read(stat).ok()?;
    Some(s.utime + s.stime + s.cutime.max(0) as u64 + s.cstime.max(0) as u64)
}

/// The `processor` field (39) of a `stat` file.
fn last_cpu(stat: &[u8]) -> Option<usize> {
    let s = <procfs_core::process::Stat as procfs_core::FromRead>::from_read(stat).ok()?;
    usize::try_from(s.processor?).ok()
}

/// AnonHugePages of this whole process (`/proc/self/smaps_rollup`, through
/// `procfs_core::process::SmapsRollup`), bytes.
pub fn anon_huge_bytes() -> Option<u64> {
    let rollup = <procfs_core::process::SmapsRollup as procfs_core::FromRead>::from_file("/proc/self/smaps_rollup").ok()?;
    rollup.memory_map_rollup.0.iter().find_map(|m| m.extension.map.get("AnonHugePages").copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    // As the kernel writes it: CPU 1 is offline.
    const STAT_A: &str = "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 60 0 30 500 1 0 0 2 0 0\ncpu2 40 0 20 500 0 0 0 0 0 0\nintr 1\nctxt 9\nbtime 1700000000\nprocesses 12\n";
    const STAT_B: &str = "cpu  300 0 90 1100 0 0 0 0 0 0\ncpu0 150 5 35 510 1 0 0 12 0 0\ncpu2 90 0 60 520 0 0 0 0 0 0\nintr 1\nctxt 19\nbtime 1700000000\nprocesses 14\n";

    fn snap(text: &str, pressure: Option<u64>) -> Snapshot {
        Snapshot { cpus: parse_stat(text, 100), pressure_us: pressure, ticks_per_s: 100 }
    }

    #[test]
    fn stat_lines_keep_their_cpu_numbers_and_skip_the_total() {
        let cpus = parse_stat(STAT_A, 100);
        assert_eq!(cpus, vec![(0, CpuTicks { busy: 90, steal: 2 }), (2, CpuTicks { busy: 60, steal: 0 })]);
        // Not a whole /proc/stat (no ctxt, btime, processes): nothing.
        assert!(parse_stat("cpu  1 0 0 0\ncpu0 1 0 0 0\n", 100).is_empty());
    }

    #[test]
    fn pressure_reads_the_some_total() {
        let text = "some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_pressure(text), Some(123_456));
        assert_eq!(parse_pressure("garbage"), None);
    }

    #[test]
    fn others_are_the_busy_time_the_worker_did_not_use() {
        // CPU 0: 100 busy ticks (1,000 ms), 10 stolen; CPU 2: 90 busy ticks (900 ms).
        let i = Interference::between(&snap(STAT_A, Some(1_000)), &snap(STAT_B, Some(501_000)), &[0, 2, 7], 1_000.0, 1_000.0);
        assert_eq!(i.cpus, vec![0, 2], "CPU 7 is not online in the readings");
        assert_eq!((i.busy_ms, i.others_cpu_ms, i.steal_ms), (1_900.0, 900.0, 100.0));
        assert!((i.others_share - 0.45).abs() < 1e-12 && (i.steal_share - 0.05).abs() < 1e-12);
        assert_eq!((i.pressure_ms, i.pressure_share), (Some(500.0), Some(0.5)));
        assert!(i.disturbed);
        assert!(i.text().contains("others took 45% of CPUs 0,2"), "{}", i.text());
    }

    #[test]
    fn a_lockstep_partner_s_time_is_not_another_process_s() {
        let i = Interference {
            cpus: vec![0],
            window_ms: 1000.0,
            own_cpu_ms: 480.0,
            busy_ms: 990.0,
            others_cpu_ms: 510.0,
            others_share: 0.51,
            steal_ms: 0.0,
            steal_share: 0.0,
            pressure_ms: None,
            pressure_share: None,
            resolution_ms: 10.0,
            disturbed: true,
            partners_cpu_ms: None,
        };
        let quiet = i.without_partners(490.0);
        assert!(!quiet.disturbed && (quiet.others_cpu_ms - 20.0).abs() < 1e-9 && quiet.partners_cpu_ms == Some(490.0));
        // A third process beside the partner still disturbs.
        let busy = i.without_partners(300.0);
        assert!(busy.disturbed && (busy.others_share - 0.21).abs() < 1e-9);
    }

    #[test]
    fn a_quiet_window_or_one_too_short_to_tell_is_not_disturbed() {
        // The worker used all of CPU 2 (90 ticks).
        let i = Interference::between(&snap(STAT_A, None), &snap(STAT_B, None), &[2], 900.0, 1_000.0);
        assert!(!i.disturbed && i.others_cpu_ms == 0.0 && i.pressure_ms.is_none());
        // Two ticks of others in a 20 ms window is 50%, but rounding could make it.
        let a = snap("cpu  0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\nctxt 1\nbtime 1\nprocesses 1\n", None);
        let b = snap("cpu  2 0 0 0\ncpu0 2 0 0 0 0 0 0 0\nctxt 1\nbtime 1\nprocesses 1\n", None);
        let short = Interference::between(&a, &b, &[0], 0.0, 40.0);
        assert!(short.others_share >= 0.5 && !short.disturbed);
    }

    #[test]
    fn cpu_lists_collapse_runs() {
        assert_eq!(cpu_list(&[3, 0, 1, 2, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_list(&[]), "none");
    }

    #[test]
    fn this_process_threads_and_backing_are_read() {
        let stat = "12 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 1 0 0";
        assert_eq!(last_cpu(stat.as_bytes()), Some(1));
        // utime 11, stime 12, cutime 13, cstime 14 in that line.
        assert_eq!(cpu_ticks(stat.as_bytes()), Some(11 + 12 + 13 + 14));
        let cpus = thread_cpus();
        let allowed = crate::measure::affinity::current_thread().unwrap();
        assert!(!cpus.is_empty() && cpus.iter().all(|c| allowed.contains(c)), "{cpus:?} not within {allowed:?}");
        assert!(anon_huge_bytes().is_some(), "smaps_rollup has AnonHugePages");
        let now = Snapshot::read();
        assert!(!now.cpus.is_empty() && now.ticks_per_s > 0);
    }

    #[test]
    fn a_busy_child_process_counts_as_the_workers_own() {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        if !std::path::Path::new(&format!("/proc/self/task/{tid}/children")).exists() {
            eprintln!("skipped: this kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)");
            return;
        }
        let mut child =
            std::process::Command::new("sh").args(["-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done"]).spawn().unwrap();
        let t = std::time::Instant::now();
        let mut seen = 0.0f64;
        while child.try_wait().unwrap().is_none() && t.elapsed() < std::time::Duration::from_secs(20) {
            seen = seen.max(descendants_cpu_ms());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen >= 20.0, "a shell counting to two million showed {seen} ms of CPU");
    }
}
