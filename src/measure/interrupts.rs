//! The kernel's per-CPU interrupt counts (`/proc/interrupts`) that say how
//! much the scheduler and the memory manager disturbed a CPU: rescheduling
//! interrupts (`RES`, one CPU asking another to reschedule), function-call
//! interrupts (`CAL`, a CPU running a function on others), TLB shootdowns
//! (`TLB`) and local timer interrupts (`LOC`, the tick).
//!
//! The counts are system-wide: every process's activity on a CPU adds to
//! its counts, not only the measured one's. Reading the file costs tens of
//! microseconds (the kernel formats every interrupt line for every CPU), so
//! it is read only outside the timed windows.
//!
//! procfs-core (0.18) has no parser for `/proc/interrupts`: the small one
//! here takes the CPU columns from the header line and the four rows by
//! their x86 labels, or by their descriptions where an architecture names
//! the rows otherwise (arm64's `IPI0:` ... "Rescheduling interrupts").

use serde::{Deserialize, Serialize};

/// Counts of the four kinds of interrupt, summed over some CPUs. A kind the
/// machine does not have (no `TLB` row on arm64, say) is absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptCounts {
    /// Rescheduling interrupts (`RES`).
    pub res: Option<u64>,
    /// Function-call interrupts (`CAL`).
    pub cal: Option<u64>,
    /// TLB shootdowns (`TLB`).
    pub tlb: Option<u64>,
    /// Local timer interrupts (`LOC`).
    pub loc: Option<u64>,
}

impl InterruptCounts {
    /// The counts of `later` since `self`, each kind where both have it.
    pub fn until(&self, later: &InterruptCounts) -> InterruptCounts {
        let d = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
        InterruptCounts {
            res: d(self.res, later.res),
            cal: d(self.cal, later.cal),
            tlb: d(self.tlb, later.tlb),
            loc: d(self.loc, later.loc),
        }
    }

    /// The sum of two counts, each kind where both have it.
    pub fn plus(&self, other: &InterruptCounts) -> InterruptCounts {
        let s = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
        InterruptCounts {
            res: s(self.res, other.res),
            cal: s(self.cal, other.cal),
            tlb: s(self.tlb, other.tlb),
            loc: s(self.loc, other.loc),
        }
    }

    /// The four kinds in the order of the tables: RES, CAL, TLB, LOC.
    pub fn kinds(&self) -> [Option<u64>; 4] {
        [self.res, self.cal, self.tlb, self.loc]
    }
}

/// The four rows of one reading of `/proc/interrupts`, per CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupts {
    /// The CPU number of each column (the header's `CPUn`: only online CPUs
    /// have a column).
    pub cpus: Vec<usize>,
    /// One count per column, where the row exists.
    pub res: Option<Vec<u64>>,
    pub cal: Option<Vec<u64>>,
    pub tlb: Option<Vec<u64>>,
    pub loc: Option<Vec<u64>>,
}

impl Interrupts {
    /// Parses the text of `/proc/interrupts`; None without a header line of
    /// CPU columns.
    pub fn parse(text: &str) -> Option<Interrupts> {
        let mut lines = text.lines();
        let cpus: Vec<usize> =
            lines.next()?.split_whitespace().map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok())).collect::<Option<Vec<usize>>>()?;
        if cpus.is_empty() {
            return None;
        }
        let mut out = Interrupts { cpus, ..Interrupts::default() };
        for line in lines {
            let Some((label, rest)) = line.split_once(':') else { continue };
            let mut words = rest.split_whitespace().peekable();
            let mut counts = Vec::with_capacity(out.cpus.len());
            while counts.len() < out.cpus.len()
                && let Some(n) = words.peek().and_then(|w| w.parse::<u64>().ok())
            {
                counts.push(n);
                words.next();
            }
            if counts.len() != out.cpus.len() {
                continue;
            }
            let description = words.collect::<Vec<_>>().join(" ");
            let slot = match (label.trim(), description.as_str()) {
                ("RES", _) | (_, "Rescheduling interrupts") => &mut out.res,
                ("CAL", _) | (_, "Function call interrupts") => &mut out.cal,
                ("TLB", _) | (_, "TLB shootdowns") => &mut out.tlb,
                ("LOC", _) | (_, "Local timer interrupts") => &mut out.loc,
                _ => continue,
            };
            slot.get_or_insert(counts);
        }
        Some(out)
    }

    /// Reads `/proc/interrupts` now; None where it cannot be read or parsed.
    pub fn read() -> Option<Interrupts> {
        Interrupts::parse(&std::fs::read_to_string("/proc/interrupts").ok()?)
    }

    /// The counts summed over `cpus` (those without a column are left out).
    pub fn sum(&self, cpus: &[usize]) -> InterruptCounts {
        let cols: Vec<usize> = self.cpus.iter().enumerate().filter(|(_, c)| cpus.contains(c)).map(|(i, _)| i).collect();
        let sum = |row: &Option<Vec<u64>>| row.as_ref().map(|r| cols.iter().filter_map(|&i| r.get(i)).sum());
        InterruptCounts { res: sum(&self.res), cal: sum(&self.cal), tlb: sum(&self.tlb), loc: sum(&self.loc) }
    }

    /// Which of `cpus` have a column.
    pub fn present(&self, cpus: &[usize]) -> Vec<usize> {
        cpus.iter().copied().filter(|c| self.cpus.contains(c)).collect()
    }
}

/// What the CPUs received while nothing of a run ran: two readings of
/// `/proc/interrupts` around a sleep of the runner, before the first round.
/// A row's interrupts are shown beside these counts scaled to the row's span
/// (the idle baseline); one window serves every row of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idle {
    /// How long the window lasted, ns.
    pub window_ns: u64,
    begin: Interrupts,
    end: Interrupts,
}

impl Idle {
    /// Reads `/proc/interrupts`, sleeps `window`, reads it again; None where
    /// it cannot be read.
    pub fn take(window: std::time::Duration) -> Option<Idle> {
        let begin = Interrupts::read()?;
        let t0 = std::time::Instant::now();
        std::thread::sleep(window);
        let end = Interrupts::read()?;
        Some(Idle { window_ns: u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX), begin, end })
    }

    /// The window's counts summed over `cpus`.
    pub fn counts(&self, cpus: &[usize]) -> InterruptCounts {
        self.begin.sum(cpus).until(&self.end.sum(cpus))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // x86: CPU 1 offline (no column), an ordinary device line, rows with
    // fewer columns (ERR) and the four rows.
    const X86_A: &str = "           CPU0       CPU2       CPU3       \n  0:         36          0          0   IO-APIC   2-edge      timer\n 24:          1          7          0  PCI-MSI 1-edge  virtio0\nLOC:       1000       2000       3000   Local timer interrupts\nRES:         10         20         30   Rescheduling interrupts\nCAL:          5          6          7   Function call interrupts\nTLB:          1          2          3   TLB shootdowns\nERR:          0\n";
    const X86_B: &str = "           CPU0       CPU2       CPU3       \n  0:         36          0          0   IO-APIC   2-edge      timer\nLOC:       1250       2100       3999   Local timer interrupts\nRES:         14         29         30   Rescheduling interrupts\nCAL:          5         16         70   Function call interrupts\nTLB:          1          5          3   TLB shootdowns\nERR:          0\n";

    #[test]
    fn the_four_rows_are_summed_over_the_cpus_asked_for() {
        let (a, b) = (Interrupts::parse(X86_A).unwrap(), Interrupts::parse(X86_B).unwrap());
        assert_eq!(a.cpus, vec![0, 2, 3]);
        assert_eq!(a.res, Some(vec![10, 20, 30]));
        // CPUs 0 and 2 (and 1, which has no column): 1000 + 2000 timer ticks.
        assert_eq!(a.sum(&[0, 1, 2]), InterruptCounts { res: Some(30), cal: Some(11), tlb: Some(3), loc: Some(3000) });
        assert_eq!(a.present(&[0, 1, 2]), vec![0, 2]);
        // Between the readings, CPUs 0 and 2: RES 4 + 9, CAL 0 + 10, TLB 0 + 3, LOC 250 + 100.
        let d = a.sum(&[0, 2]).until(&b.sum(&[0, 2]));
        assert_eq!(d, InterruptCounts { res: Some(13), cal: Some(10), tlb: Some(3), loc: Some(350) });
        assert_eq!(d.plus(&d).kinds(), [Some(26), Some(20), Some(6), Some(700)]);
    }

    #[test]
    fn an_idle_window_counts_between_its_readings() {
        let idle = Idle { window_ns: 250_000_000, begin: Interrupts::parse(X86_A).unwrap(), end: Interrupts::parse(X86_B).unwrap() };
        assert_eq!(idle.counts(&[3]), InterruptCounts { res: Some(0), cal: Some(63), tlb: Some(0), loc: Some(999) });
        let live = Idle::take(std::time::Duration::from_millis(20));
        if let Some(live) = live {
            assert!(live.window_ns >= 20_000_000, "{}", live.window_ns);
        }
    }

    #[test]
    fn rows_are_found_by_description_and_missing_ones_are_absent() {
        // arm64 names its IPIs by number; it has no TLB row, and its timer is
        // not a LOC row.
        let arm = "           CPU0       CPU1       \n 11:       4000       4100     GICv3  27 Level     arch_timer\nIPI0:        12         13       Rescheduling interrupts\nIPI1:         3          4       Function call interrupts\n";
        let i = Interrupts::parse(arm).unwrap();
        assert_eq!(i.sum(&[0, 1]), InterruptCounts { res: Some(25), cal: Some(7), tlb: None, loc: None });
        let with_none = InterruptCounts { tlb: Some(1), ..InterruptCounts::default() };
        assert_eq!(with_none.until(&i.sum(&[0])), InterruptCounts::default());
        assert_eq!(Interrupts::parse("no header\n"), None);
        assert_eq!(Interrupts::parse(""), None);
    }

    #[test]
    fn this_machine_has_a_readable_file() {
        let Some(i) = Interrupts::read() else {
            eprintln!("skipped: /proc/interrupts is not readable here");
            return;
        };
        assert!(!i.cpus.is_empty());
        let allowed = crate::measure::affinity::current_thread().unwrap();
        assert!(!i.present(&allowed).is_empty(), "{:?} has no column of {allowed:?}", i.cpus);
    }
}
