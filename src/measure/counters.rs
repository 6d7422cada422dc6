//! Counters around the work window: the kernel's software accounting of this
//! worker's threads (from procfs and getrusage, which cost the measured code
//! nothing) and hardware events through `perf_event_open` where the kernel
//! and the hypervisor allow it.
//!
//! A [`Probe`] is opened once per worker, before the workload's prepare, so
//! that hardware counters (opened with `inherit`) follow the threads and
//! processes the workload creates afterwards. A [`Counts`] is taken on each
//! side of a window; [`Accumulator`] adds up the differences over the timed
//! samples and turns them into the row's [`CounterRecord`].
//!
//! Where each software figure comes from:
//! - context switches and page faults: `getrusage(RUSAGE_SELF)` plus
//!   `RUSAGE_CHILDREN` (every thread, also those that exited in the window,
//!   and the children the worker reaped in it);
//! - per thread: `/proc/<pid>/task/<tid>/{stat,status,schedstat,sched}` for
//!   faults, context switches, run time, run-queue wait (time runnable but
//!   not running), time slices and CPU migrations (`se.nr_migrations`, only
//!   where the kernel has scheduler debug info), for the threads of this
//!   process and of its live descendants (a workload's worker processes, such
//!   as `cpu.primes`'s, found through `/proc/<pid>/task/<tid>/children`);
//!   only threads alive when the window closes are listed, and the sums of
//!   run time, wait and migrations are over those threads. The descendants'
//!   context switches and faults are added to the getrusage figures (which
//!   count a child only once it has been reaped). Children born and reaped
//!   inside a window are not listed: their CPU time is kept
//!   ([`SoftwareCounters::reaped_children_cpu_ns`]) so that a reader knows
//!   what the run time and wait leave out.
//!
//! `stat`, `status` and `schedstat` are parsed by `procfs-core`; `sched`
//! (one field, `se.nr_migrations`) and `children` (a list of pids) have no
//! parser there and are read here.

use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};

pub use crate::measure::interrupts::InterruptCounts;
use crate::measure::rusage::Rusage;
use crate::model::Reading;

crate::model::named_enum! {
    /// Which window the counters of a row cover.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CounterWindow {
        /// Exactly the work window: read just outside the workload's own
        /// `Timer::start`/`stop` clock reads, in every timed sample.
        Work = "work",
        /// The whole sample call: the work window plus what the workload does
        /// around it inside the sample (spawning and joining the threads or
        /// processes that time themselves).
        Sample = "sample",
    }
}

/// One thread's share of the counters, summed over the timed samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCounters {
    pub tid: u32,
    /// The process the thread belongs to (0 in records written before it
    /// was kept).
    #[serde(default)]
    pub pid: u32,
    /// The thread's name (`comm`).
    pub name: String,
    pub voluntary_ctx_switches: u64,
    pub involuntary_ctx_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Absent where the kernel has no `/proc/<pid>/task/<tid>/sched`.
    pub cpu_migrations: Option<u64>,
    /// Time on a CPU, ns (schedstat).
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU, ns (schedstat).
    pub run_queue_wait_ns: u64,
    /// Times the thread was given a CPU (schedstat).
    pub timeslices: u64,
}

/// The process-wide software counters, summed over the timed samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftwareCounters {
    pub voluntary_ctx_switches: u64,
    pub involuntary_ctx_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Sum over the listed threads; absent without scheduler debug info.
    pub cpu_migrations: Option<u64>,
    pub run_ns: u64,
    pub run_queue_wait_ns: u64,
    pub timeslices: u64,
    /// Threads seen when a window opened and gone when it closed (their
    /// run time, wait and migrations are not in the sums).
    pub threads_exited: u32,
    /// The most processes whose threads a window listed: this one and its
    /// live descendants (0 in records written before it was kept).
    #[serde(default)]
    pub processes: u32,
    /// CPU time (user + system) of children reaped inside the windows, ns:
    /// processes born and gone within a window, whose threads are not
    /// listed (their run time and wait are not in the sums).
    #[serde(default)]
    pub reaped_children_cpu_ns: u64,
}

impl SoftwareCounters {
    /// Whether run-queue wait over run time describes the work: false when
    /// children reaped inside the windows used more CPU than the listed
    /// threads ran (the work ran in processes that are not listed, and the
    /// ratio would describe the threads that waited for them).
    pub fn wait_ratio_meaningful(&self) -> bool {
        self.run_ns > 0 && self.reaped_children_cpu_ns <= self.run_ns
    }
}

/// Hardware events over the timed samples (scaled when multiplexed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareCounters {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    /// instructions / cycles.
    pub ipc: Option<f64>,
    pub cache_references: Option<u64>,
    pub cache_misses: Option<u64>,
    pub dtlb_load_misses: Option<u64>,
    pub branch_misses: Option<u64>,
    /// True when the kernel only allowed user-space counting
    /// (`perf_event_paranoid` above 1).
    pub user_space_only: bool,
    /// Lowest fraction of the window a counter was actually on the PMU
    /// (below 1 when the kernel multiplexed; the counts are scaled).
    pub min_running_fraction: f64,
    /// Events that could not be opened, with the reason.
    pub unavailable: Vec<String>,
}

/// Interrupts on the trial's CPUs (`/proc/interrupts`) over its timed
/// samples, and what the same CPUs received in the run's idle window.
/// System-wide: every process's activity on those CPUs counts, not only the
/// trial's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterruptCounters {
    /// The CPUs summed: those the trial could use that have a column in
    /// `/proc/interrupts`.
    pub cpus: Vec<usize>,
    /// Timed samples the counts cover.
    pub samples: u32,
    /// From the reading before the first timed sample to the one after the
    /// last, ns: the samples and what runs between them (the verifier, the
    /// counter snapshots).
    pub span_ns: u64,
    /// Interrupts in that span.
    pub counts: InterruptCounts,
    /// The run's idle window, ns ([`crate::measure::interrupts::Idle`]:
    /// before the first round, no worker running); 0 without one.
    pub baseline_ns: u64,
    /// Interrupts on the same CPUs in that window (not scaled); absent when
    /// the run took none.
    pub baseline: Option<InterruptCounts>,
}

impl InterruptCounters {
    /// The counts per timed sample: RES, CAL, TLB, LOC.
    pub fn per_sample(&self) -> [Option<f64>; 4] {
        let n = f64::from(self.samples.max(1));
        self.counts.kinds().map(|k| k.map(|v| v as f64 / n))
    }

    /// The idle window's counts at the span's length, per timed sample: what
    /// the same CPUs received in the same time with nothing of the run running.
    pub fn baseline_per_sample(&self) -> [Option<f64>; 4] {
        let Some(b) = self.baseline.filter(|_| self.baseline_ns > 0) else { return [None; 4] };
        let scale = self.span_ns as f64 / self.baseline_ns as f64 / f64::from(self.samples.max(1));
        b.kinds().map(|k| k.map(|v| v as f64 * scale))
    }

    /// Two trials' counts as one: sums of spans, counts and idle windows (the
    /// baseline's rate is then the windows' together), the CPUs of both.
    pub fn merged(&self, other: &InterruptCounters) -> InterruptCounters {
        let mut cpus = self.cpus.clone();
        cpus.extend(other.cpus.iter().copied());
        cpus.sort_unstable();
        cpus.dedup();
        InterruptCounters {
            cpus,
            samples: self.samples + other.samples,
            span_ns: self.span_ns + other.span_ns,
            counts: self.counts.plus(&other.counts),
            baseline_ns: self.baseline_ns + other.baseline_ns,
            baseline: self.baseline.zip(other.baseline).map(|(a, b)| a.plus(&b)),
        }
    }
}

/// The counters of a row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterRecord {
    pub window: CounterWindow,
    /// Timed samples the sums cover.
    pub samples: u32,
    pub software: SoftwareCounters,
    pub threads: Vec<ThreadCounters>,
    /// `{"absent": "<reason>"}` where the kernel or hypervisor refuses.
    pub hardware: Reading<HardwareCounters>,
    /// Interrupts on the trial's CPUs (system-wide); absent where
    /// `/proc/interrupts` could not be read, and in records written before
    /// they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<InterruptCounters>,
}

impl CounterRecord {
    /// A software figure divided by the samples.
    pub fn per_sample(&self, total: u64) -> f64 {
        total as f64 / f64::from(self.samples.max(1))
    }

    /// The counters of two trials of one row as one record: sums over both
    /// trials' timed samples, the threads of both processes listed, the
    /// window `sample` if either was. Hardware counts add where both
    /// trials have them; a refusal stays a refusal.
    pub fn merged(self, other: &CounterRecord) -> CounterRecord {
        let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(x, y)| x + y);
        let (a, b) = (&self.software, &other.software);
        let software = SoftwareCounters {
            voluntary_ctx_switches: a.voluntary_ctx_switches + b.voluntary_ctx_switches,
            involuntary_ctx_switches: a.involuntary_ctx_switches + b.involuntary_ctx_switches,
            minor_faults: a.minor_faults + b.minor_faults,
            major_faults: a.major_faults + b.major_faults,
            cpu_migrations: add(a.cpu_migrations, b.cpu_migrations),
            run_ns: a.run_ns + b.run_ns,
            run_queue_wait_ns: a.run_queue_wait_ns + b.run_queue_wait_ns,
            timeslices: a.timeslices + b.timeslices,
            threads_exited: a.threads_exited + b.threads_exited,
            processes: a.processes.max(b.processes),
            reaped_children_cpu_ns: a.reaped_children_cpu_ns + b.reaped_children_cpu_ns,
        };
        let hardware = match (self.hardware, &other.hardware) {
            (Reading::Present(x), Reading::Present(y)) => {
                let (cycles, instructions) = (add(x.cycles, y.cycles), add(x.instructions, y.instructions));
                Reading::Present(HardwareCounters {
                    cycles,
                    instructions,
                    ipc: ipc(instructions, cycles),
                    cache_references: add(x.cache_references, y.cache_references),
                    cache_misses: add(x.cache_misses, y.cache_misses),
                    dtlb_load_misses: add(x.dtlb_load_misses, y.dtlb_load_misses),
                    branch_misses: add(x.branch_misses, y.branch_misses),
                    user_space_only: x.user_space_only || y.user_space_only,
                    min_running_fraction: x.min_running_fraction.min(y.min_running_fraction),
                    unavailable: x.unavailable.into_iter().chain(y.unavailable.iter().cloned()).fold(Vec::new(), |mut v, u| {
                        if !v.contains(&u) {
                            v.push(u);
                        }
                        v
                    }),
                })
            }
            (Reading::Present(_), absent) => absent.clone(),
            (absent, _) => absent,
        };
        let window = if self.window == CounterWindow::Work && other.window == CounterWindow::Work {
            CounterWindow::Work
        } else {
            CounterWindow::Sample
        };
        let mut threads = self.threads;
        threads.extend(other.threads.iter().cloned());
        // Both trials' interrupts, or none (a sum over one trial would pass
        // for the row's).
        let interrupts = match (&self.interrupts, &other.interrupts) {
            (Some(a), Some(b)) => Some(a.merged(b)),
            _ => None,
        };
        CounterRecord { window, samples: self.samples + other.samples, software, threads, hardware, interrupts }
    }
}

/// Instructions per cycle, where both were counted and cycles ran.
fn ipc(instructions: Option<u64>, cycles: Option<u64>) -> Option<f64> {
    match (instructions, cycles) {
        (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hw {
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
    DtlbLoadMisses,
    BranchMisses,
}

const HW: [Hw; 6] = [Hw::Cycles, Hw::Instructions, Hw::CacheReferences, Hw::CacheMisses, Hw::DtlbLoadMisses, Hw::BranchMisses];

impl Hw {
    /// perf's name of the event.
    fn name(self) -> &'static str {
        match self {
            Hw::Cycles => "cycles",
            Hw::Instructions => "instructions",
            Hw::CacheReferences => "cache-references",
            Hw::CacheMisses => "cache-misses",
            Hw::DtlbLoadMisses => "dTLB-load-misses",
            Hw::BranchMisses => "branch-misses",
        }
    }
}

fn builder(hw: Hw) -> perf_event::Builder<'static> {
    use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware};
    match hw {
        Hw::Cycles => perf_event::Builder::new(Hardware::CPU_CYCLES),
        Hw::Instructions => perf_event::Builder::new(Hardware::INSTRUCTIONS),
        Hw::CacheReferences => perf_event::Builder::new(Hardware::CACHE_REFERENCES),
        Hw::CacheMisses => perf_event::Builder::new(Hardware::CACHE_MISSES),
        Hw::DtlbLoadMisses => perf_event::Builder::new(Cache { which: CacheId::DTLB, operation: CacheOp::READ, result: CacheResult::MISS }),
        Hw::BranchMisses => perf_event::Builder::new(Hardware::BRANCH_MISSES),
    }
}

fn open_event(hw: Hw, exclude_kernel: bool) -> io::Result<perf_event::Counter> {
    let mut b = builder(hw);
    b.observe_self().any_cpu().inherit(true).exclude_kernel(exclude_kernel).exclude_hv(true);
    let mut c = b.build()?;
    c.enable()?;
    Ok(c)
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// Why the kernel refused an event, in words a user can act on.
fn refusal(name: &str, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
            format!("{name}: this CPU exposes no such hardware event here (no PMU, e.g. a virtual machine without a virtual PMU): {e}")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => match paranoid() {
            Some(p) => format!("{name}: perf_event_paranoid={p} forbids it for this user: {e}"),
            None => format!("{name}: not permitted: {e}"),
        },
        Some(libc::ENOSYS) => format!("{name}: perf_event_open is not available in this kernel: {e}"),
        _ => format!("{name}: {e}"),
    }
}

/// The counters a worker keeps open for its whole life.
#[derive(Debug)]
pub struct Probe {
    hw: Vec<(Hw, perf_event::Counter)>,
    hw_unavailable: Vec<String>,
    user_space_only: bool,
}

/// One reading of every counter.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    rusage: Rusage,
    children: Rusage,
    threads: BTreeMap<u32, ThreadCounters>,
    /// Processes whose threads were read (this one and its live descendants).
    processes: u32,
    /// (event, count, enabled ns, running ns)
    hw: Vec<(Hw, u64, u64, u64)>,
}

impl Probe {
    /// Opens the hardware events this process may count; never fails (what
    /// cannot be opened is recorded with its reason).
    pub fn open() -> Probe {
        let mut p = Probe { hw: Vec::new(), hw_unavailable: Vec::new(), user_space_only: false };
        for hw in HW {
            let name = hw.name();
            let opened = match open_event(hw, p.user_space_only) {
                Err(e) if !p.user_space_only && matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
                    // perf_event_paranoid > 1: user space only.
                    let again = open_event(hw, true);
                    if again.is_ok() {
                        p.user_space_only = true;
                    }
                    again
                }
                other => other,
            };
            match opened {
                Ok(c) => p.hw.push((hw, c)),
                Err(e) => p.hw_unavailable.push(refusal(name, &e)),
            }
        }
        p
    }

    /// Reads every counter now.
    pub fn snapshot(&mut self) -> Counts {
        let mut hw = Vec::with_capacity(self.hw.len());
        for (kind, c) in self.hw.iter_mut() {
            if let Ok(d) = c.read_full() {
                let ns = |t: Option<std::time::Duration>| t.map_or(0, |t| t.as_nanos() as u64);
                hw.push((*kind, d.count(), ns(d.time_enabled()), ns(d.time_running())));
            }
        }
        let (threads, processes) = read_threads();
        Counts { rusage: Rusage::this_process(), children: Rusage::children(), threads, processes, hw }
    }

    fn hardware(&self, acc: &BTreeMap<&'static str, (f64, f64)>) -> Reading<HardwareCounters> {
        if self.hw.is_empty() {
            let reason = self.hw_unavailable.first().cloned().unwrap_or_else(|| "no hardware event could be opened".into());
            return Reading::absent(format!("counters: unavailable ({reason})"));
        }
        let get = |hw: Hw| acc.get(hw.name()).map(|(count, _)| count.round() as u64);
        let min_frac = acc.values().map(|(_, f)| *f).fold(1.0f64, f64::min);
        let (cycles, instructions) = (get(Hw::Cycles), get(Hw::Instructions));
        Reading::Present(HardwareCounters {
            cycles,
            instructions,
            ipc: ipc(instructions, cycles),
            cache_references: get(Hw::CacheReferences),
            cache_misses: get(Hw::CacheMisses),
            dtlb_load_misses: get(Hw::DtlbLoadMisses),
            branch_misses: get(Hw::BranchMisses),
            user_space_only: self.user_space_only,
            min_running_fraction: min_frac,
            unavailable: self.hw_unavailable.clone(),
        })
    }
}

/// Reads the fields of one `/proc/<pid>/task/<tid>` directory.
fn read_thread(dir: &std::path::Path, pid: u32, tid: u32) -> Option<ThreadCounters> {
    use procfs_core::FromRead;
    use procfs_core::process::{Schedstat, Stat, Status};
    let stat = Stat::from_file(dir.join("stat")).ok()?;
    let status = Status::from_file(dir.join("status")).ok()?;
    let sched = Schedstat::from_file(dir.join("schedstat")).ok()?;
    Some(ThreadCounters {
        tid,
        pid,
        name: stat.comm,
        voluntary_ctx_switches: status.voluntary_ctxt_switches?,
        involuntary_ctx_switches: status.nonvoluntary_ctxt_switches?,
        minor_faults: stat.minflt,
        major_faults: stat.majflt,
        cpu_migrations: std::fs::read_to_string(dir.join("sched")).ok().and_then(|text| nr_migrations(&text)),
        run_ns: sched.sum_exec_runtime,
        run_queue_wait_ns: sched.run_delay,
        timeslices: sched.pcount,
    })
}

/// `se.nr_migrations` of a `/proc/<pid>/task/<tid>/sched` file (scheduler
/// debug output, which procfs-core does not parse).
fn nr_migrations(sched: &str) -> Option<u64> {
    sched
        .lines()
        .find(|l| l.trim_start().starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// Every thread of this process and of its live descendants now (threads
/// that exit while being read are left out), and how many processes were
/// read.
fn read_threads() -> (BTreeMap<u32, ThreadCounters>, u32) {
    let mut out = BTreeMap::new();
    let pids: Vec<u32> = std::iter::once(std::process::id()).chain(crate::measure::interference::descendants()).collect();
    for &pid in &pids {
        let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for e in entries.flatten() {
            if let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok())
                && let Some(t) = read_thread(&e.path(), pid, tid)
            {
                out.insert(tid, t);
            }
        }
    }
    (out, pids.len() as u32)
}

fn thread_delta(end: &ThreadCounters, begin: Option<&ThreadCounters>) -> ThreadCounters {
    let zero = ThreadCounters::default();
    let b = begin.unwrap_or(&zero);
    ThreadCounters {
        tid: end.tid,
        pid: end.pid,
        name: end.name.clone(),
        voluntary_ctx_switches: end.voluntary_ctx_switches.saturating_sub(b.voluntary_ctx_switches),
        involuntary_ctx_switches: end.involuntary_ctx_switches.saturating_sub(b.involuntary_ctx_switches),
        minor_faults: end.minor_faults.saturating_sub(b.minor_faults),
        major_faults: end.major_faults.saturating_sub(b.major_faults),
        cpu_migrations: end.cpu_migrations.map(|e| e.saturating_sub(b.cpu_migrations.unwrap_or(0))),
        run_ns: end.run_ns.saturating_sub(b.run_ns),
        run_queue_wait_ns: end.run_queue_wait_ns.saturating_sub(b.run_queue_wait_ns),
        timeslices: end.timeslices.saturating_sub(b.timeslices),
    }
}

fn add_thread(into: &mut ThreadCounters, d: &ThreadCounters) {
    into.voluntary_ctx_switches += d.voluntary_ctx_switches;
    into.involuntary_ctx_switches += d.involuntary_ctx_switches;
    into.minor_faults += d.minor_faults;
    into.major_faults += d.major_faults;
    into.cpu_migrations = match (into.cpu_migrations, d.cpu_migrations) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    into.run_ns += d.run_ns;
    into.run_queue_wait_ns += d.run_queue_wait_ns;
    into.timeslices += d.timeslices;
}

/// Sums the windows of the timed samples.
#[derive(Debug, Default)]
pub struct Accumulator {
    samples: u32,
    all_work: bool,
    software: SoftwareCounters,
    threads: BTreeMap<u32, ThreadCounters>,
    /// event name -> (scaled count, lowest running fraction)
    hw: BTreeMap<&'static str, (f64, f64)>,
}

impl Accumulator {
    pub fn new() -> Accumulator {
        Accumulator { all_work: true, ..Accumulator::default() }
    }

    /// Adds one window; `work` says whether it was the exact work window.
    pub fn add(&mut self, begin: &Counts, end: &Counts, work: bool) {
        self.samples += 1;
        self.all_work &= work;
        let (me, kids) = (end.rusage.since(&begin.rusage), end.children.since(&begin.children));
        let s = &mut self.software;
        s.voluntary_ctx_switches += me.voluntary_ctx_switches + kids.voluntary_ctx_switches;
        s.involuntary_ctx_switches += me.involuntary_ctx_switches + kids.involuntary_ctx_switches;
        s.minor_faults += me.minor_faults + kids.minor_faults;
        s.major_faults += me.major_faults + kids.major_faults;
        s.threads_exited += begin.threads.keys().filter(|t| !end.threads.contains_key(t)).count() as u32;
        s.processes = s.processes.max(begin.processes).max(end.processes);
        s.reaped_children_cpu_ns += (kids.user_us + kids.sys_us) * 1000;
        let me_pid = std::process::id();
        for (tid, t) in &end.threads {
            let d = thread_delta(t, begin.threads.get(tid));
            if t.pid != me_pid {
                // A live descendant's thread: not in either getrusage figure.
                s.voluntary_ctx_switches += d.voluntary_ctx_switches;
                s.involuntary_ctx_switches += d.involuntary_ctx_switches;
                s.minor_faults += d.minor_faults;
                s.major_faults += d.major_faults;
            }
            let into = self.threads.entry(*tid).or_insert_with(|| ThreadCounters {
                tid: *tid,
                pid: t.pid,
                name: t.name.clone(),
                ..ThreadCounters::default()
            });
            into.name = t.name.clone();
            add_thread(into, &d);
        }
        for (kind, count, enabled, running) in &end.hw {
            let Some((_, c0, e0, r0)) = begin.hw.iter().find(|(k, ..)| k == kind) else { continue };
            let (dc, de, dr) = (count.saturating_sub(*c0), enabled.saturating_sub(*e0), running.saturating_sub(*r0));
            let frac = if de == 0 { 1.0 } else { dr as f64 / de as f64 };
            let scaled = if dr == 0 { 0.0 } else { dc as f64 * de as f64 / dr as f64 };
            let e = self.hw.entry(kind.name()).or_insert((0.0, 1.0));
            e.0 += scaled;
            e.1 = e.1.min(frac);
        }
    }

    /// The row's record, or None when no window was added.
    pub fn finish(self, probe: &Probe) -> Option<CounterRecord> {
        if self.samples == 0 {
            return None;
        }
        let mut software = self.software;
        let threads: Vec<ThreadCounters> = self.threads.into_values().collect();
        software.run_ns = threads.iter().map(|t| t.run_ns).sum();
        software.run_queue_wait_ns = threads.iter().map(|t| t.run_queue_wait_ns).sum();
        software.timeslices = threads.iter().map(|t| t.timeslices).sum();
        software.cpu_migrations = threads.iter().map(|t| t.cpu_migrations).sum();
        Some(CounterRecord {
            window: if self.all_work { CounterWindow::Work } else { CounterWindow::Sample },
            samples: self.samples,
            software,
            threads,
            hardware: probe.hardware(&self.hw),
            interrupts: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_is_read_with_its_name_and_schedstat() {
        // The kernel updates a thread's schedstat when it leaves the CPU.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (threads, processes) = read_threads();
        assert!(processes >= 1);
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let me = threads.get(&tid).expect("the calling thread is listed");
        assert!(me.run_ns > 0 && me.timeslices > 0, "{me:?}");
        assert!(me.voluntary_ctx_switches >= 1, "{me:?}");
        assert!(!me.name.is_empty());
    }

    #[test]
    fn a_thread_that_sleeps_and_faults_shows_in_the_window() {
        let mut probe = Probe::open();
        let begin = probe.snapshot();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("pb-counted".into())
            .spawn(move || {
                // Fresh pages: minor faults; sleeps: voluntary switches.
                let mut v = vec![0u8; 4 << 20];
                for i in (0..v.len()).step_by(4096) {
                    v[i] = 1;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
                ready_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                std::hint::black_box(v).len()
            })
            .unwrap();
        ready_rx.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let end = probe.snapshot();
        go_tx.send(()).unwrap();
        assert_eq!(h.join().unwrap(), 4 << 20);
        let mut acc = Accumulator::new();
        acc.add(&begin, &end, true);
        let rec = acc.finish(&probe).unwrap();
        assert_eq!(rec.window, CounterWindow::Work);
        assert_eq!(rec.samples, 1);
        let t = rec.threads.iter().find(|t| t.name == "pb-counted").expect("the new thread is listed");
        assert!(t.minor_faults >= 1000, "{t:?}");
        assert!(t.voluntary_ctx_switches >= 2 && t.run_ns > 0, "{t:?}");
        assert!(rec.software.minor_faults >= t.minor_faults, "{rec:?}");
        assert!(rec.software.voluntary_ctx_switches >= 3, "{rec:?}");
        assert!(rec.software.run_ns >= t.run_ns);
    }

    #[test]
    fn deltas_and_sums_against_hand_made_snapshots() {
        let t = |tid, vol, run, wait, mig| ThreadCounters {
            tid,
            name: format!("t{tid}"),
            voluntary_ctx_switches: vol,
            run_ns: run,
            run_queue_wait_ns: wait,
            cpu_migrations: mig,
            timeslices: 1,
            ..ThreadCounters::default()
        };
        let begin = Counts {
            threads: [(1, t(1, 10, 1000, 100, Some(3))), (2, t(2, 5, 50, 5, Some(0)))].into_iter().collect(),
            hw: vec![(Hw::Cycles, 1000, 100, 100), (Hw::Instructions, 0, 100, 50)],
            ..Counts::default()
        };
        // Thread 2 exited, thread 3 was born in the window.
        let end = Counts {
            threads: [(1, t(1, 12, 4000, 600, Some(5))), (3, t(3, 7, 900, 40, Some(1)))].into_iter().collect(),
            hw: vec![(Hw::Cycles, 3000, 200, 200), (Hw::Instructions, 1000, 300, 150)],
            ..Counts::default()
        };
        let mut acc = Accumulator::new();
        acc.add(&begin, &end, false);
        let probe = Probe { hw: Vec::new(), hw_unavailable: vec!["cycles: no PMU".into()], user_space_only: false };
        let hw = acc.hw.clone();
        let rec = acc.finish(&probe).unwrap();
        assert_eq!(rec.window, CounterWindow::Sample);
        assert_eq!(rec.software.threads_exited, 1);
        assert_eq!(rec.software.run_ns, 3000 + 900);
        assert_eq!(rec.software.run_queue_wait_ns, 500 + 40);
        assert_eq!(rec.software.cpu_migrations, Some(2 + 1));
        assert_eq!(rec.threads.iter().map(|t| t.voluntary_ctx_switches).collect::<Vec<_>>(), vec![2, 7]);
        // Cycles ran the whole time: 2000; instructions ran half of it: 1000 scaled to 2000.
        assert_eq!(hw["cycles"], (2000.0, 1.0));
        assert_eq!(hw["instructions"], (2000.0, 0.5));
        match rec.hardware {
            Reading::Absent { absent } => assert_eq!(absent, "counters: unavailable (cycles: no PMU)"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hardware_counters_are_counted_or_refused_with_a_reason() {
        let mut probe = Probe::open();
        let begin = probe.snapshot();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let end = probe.snapshot();
        let mut acc = Accumulator::new();
        acc.add(&begin, &end, true);
        match acc.finish(&probe).unwrap().hardware {
            Reading::Present(h) => assert!(h.instructions.unwrap_or(0) >= 1_000_000 || h.instructions.is_none(), "{h:?}"),
            Reading::Absent { absent } => assert!(absent.starts_with("counters: unavailable (") && absent.len() > 30, "{absent}"),
        }
    }

    #[test]
    fn the_counters_of_two_trials_add_up() {
        let rec = |samples, faults, cycles: Option<u64>, window| CounterRecord {
            window,
            samples,
            software: SoftwareCounters { minor_faults: faults, cpu_migrations: Some(1), run_ns: 10, ..SoftwareCounters::default() },
            threads: vec![ThreadCounters { tid: samples, ..ThreadCounters::default() }],
            hardware: Reading::Present(HardwareCounters {
                cycles,
                instructions: Some(100),
                min_running_fraction: 0.5 + f64::from(samples) / 10.0,
                unavailable: vec!["branch-misses: no".into()],
                ..HardwareCounters::default()
            }),
            interrupts: None,
        };
        let m = rec(3, 7, Some(400), CounterWindow::Work).merged(&rec(2, 5, Some(100), CounterWindow::Work));
        assert_eq!((m.window, m.samples, m.software.minor_faults, m.software.run_ns), (CounterWindow::Work, 5, 12, 20));
        assert_eq!(m.software.cpu_migrations, Some(2));
        assert_eq!(m.threads.iter().map(|t| t.tid).collect::<Vec<_>>(), vec![3, 2], "both processes' threads");
        let Reading::Present(hw) = &m.hardware else { panic!("{m:?}") };
        assert_eq!((hw.cycles, hw.instructions, hw.ipc), (Some(500), Some(200), Some(0.4)));
        assert_eq!((hw.min_running_fraction, hw.unavailable.len()), (0.7, 1));
        // One trial without cycles: no sum; one counting whole samples: the window is `sample`.
        let m = rec(1, 0, None, CounterWindow::Sample).merged(&rec(1, 0, Some(9), CounterWindow::Work));
        let Reading::Present(hw) = &m.hardware else { panic!() };
        assert_eq!((m.window, hw.cycles), (CounterWindow::Sample, None));
        let refused = CounterRecord { hardware: Reading::absent("counters: unavailable (no PMU)"), ..rec(1, 0, None, CounterWindow::Work) };
        assert!(matches!(rec(1, 0, Some(1), CounterWindow::Work).merged(&refused).hardware, Reading::Absent { .. }));
    }

    #[test]
    fn interrupts_per_sample_baseline_and_merge() {
        let counts = |res, loc| InterruptCounts { res: Some(res), cal: Some(0), tlb: None, loc: Some(loc) };
        let a = InterruptCounters {
            cpus: vec![0, 1],
            samples: 4,
            span_ns: 400_000_000,
            counts: counts(40, 800),
            baseline_ns: 200_000_000,
            baseline: Some(counts(2, 100)),
        };
        assert_eq!(a.per_sample(), [Some(10.0), Some(0.0), None, Some(200.0)]);
        // 2 and 100 in 200 ms: 4 and 200 in the 400 ms span, over 4 samples.
        assert_eq!(a.baseline_per_sample(), [Some(1.0), Some(0.0), None, Some(50.0)]);
        let b = InterruptCounters {
            cpus: vec![1, 2],
            samples: 1,
            span_ns: 100_000_000,
            counts: counts(10, 200),
            baseline_ns: 100_000_000,
            baseline: Some(counts(4, 50)),
        };
        let m = a.merged(&b);
        assert_eq!((m.cpus.clone(), m.samples, m.span_ns, m.baseline_ns), (vec![0, 1, 2], 5, 500_000_000, 300_000_000));
        assert_eq!(m.per_sample(), [Some(10.0), Some(0.0), None, Some(200.0)]);
        // 6 and 150 in 300 ms: 10 and 250 in 500 ms, over 5 samples.
        let close = |got: [Option<f64>; 4], want: [Option<f64>; 4]| {
            got.iter().zip(want).all(|(g, w)| match (g, w) {
                (Some(g), Some(w)) => (g - w).abs() < 1e-9,
                (g, w) => g.is_none() && w.is_none(),
            })
        };
        assert!(close(m.baseline_per_sample(), [Some(2.0), Some(0.0), None, Some(50.0)]), "{:?}", m.baseline_per_sample());
        let no_pause = InterruptCounters { baseline: None, baseline_ns: 0, ..b.clone() };
        assert_eq!(a.merged(&no_pause).baseline, None);
        assert_eq!(no_pause.baseline_per_sample(), [None; 4]);
        // A record with interrupts merged with one without: none (one trial's would pass for the row's).
        let rec = |i: Option<InterruptCounters>| CounterRecord {
            window: CounterWindow::Work,
            samples: 1,
            software: SoftwareCounters::default(),
            threads: Vec::new(),
            hardware: Reading::absent("no"),
            interrupts: i,
        };
        assert_eq!(rec(Some(a.clone())).merged(&rec(Some(b.clone()))).interrupts, Some(m));
        assert_eq!(rec(Some(a)).merged(&rec(None)).interrupts, None);
        // Old records, without the field, still load.
        let old = r#"{"window":"work","samples":2,"software":{"voluntary_ctx_switches":1,"involuntary_ctx_switches":0,"minor_faults":0,"major_faults":0,"cpu_migrations":null,"run_ns":5,"run_queue_wait_ns":1,"timeslices":1,"threads_exited":0},"threads":[{"tid":7,"name":"x","voluntary_ctx_switches":1,"involuntary_ctx_switches":0,"minor_faults":0,"major_faults":0,"cpu_migrations":null,"run_ns":5,"run_queue_wait_ns":1,"timeslices":1}],"hardware":{"absent":"no"}}"#;
        let r: CounterRecord = serde_json::from_str(old).unwrap();
        assert_eq!((r.interrupts, r.software.processes, r.software.reaped_children_cpu_ns, r.threads[0].pid), (None, 0, 0, 0));
    }

    #[test]
    fn wait_over_run_is_meaningful_only_when_the_listed_threads_did_the_work() {
        let s = |run_ns, reaped_children_cpu_ns| SoftwareCounters { run_ns, reaped_children_cpu_ns, ..SoftwareCounters::default() };
        assert!(s(10, 0).wait_ratio_meaningful());
        assert!(s(10, 10).wait_ratio_meaningful());
        assert!(!s(10, 11).wait_ratio_meaningful());
        assert!(!s(0, 0).wait_ratio_meaningful());
    }

    #[test]
    fn a_live_child_process_threads_are_listed() {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        if !std::path::Path::new(&format!("/proc/self/task/{tid}/children")).exists() {
            eprintln!("skipped: this kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)");
            return;
        }
        let mut probe = Probe::open();
        // A child that spins until killed: alive and running at both snapshots.
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let begin = probe.snapshot();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let end = probe.snapshot();
        let _ = child.kill();
        let _ = child.wait();
        let mut acc = Accumulator::new();
        acc.add(&begin, &end, false);
        let rec = acc.finish(&probe).unwrap();
        let kid = rec.threads.iter().find(|t| t.pid == child.id()).unwrap_or_else(|| panic!("the child is listed: {rec:?}"));
        assert!(kid.run_ns > 0, "{kid:?}");
        assert!(rec.software.processes >= 2, "{rec:?}");
        assert!(rec.software.run_ns >= kid.run_ns);
    }
}
