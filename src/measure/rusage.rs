//! Kernel resource accounting (`getrusage` / `wait4`) as a plain record.

use serde::{Deserialize, Serialize};

/// What the kernel charged a process (or thread) for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rusage {
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Peak resident set size, KiB (a maximum: not differenced by `since`).
    pub max_rss_kib: u64,
    pub voluntary_ctx_switches: u64,
    pub involuntary_ctx_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl Rusage {
    pub fn from_libc(ru: &libc::rusage) -> Rusage {
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        Rusage {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            max_rss_kib: ru.ru_maxrss.max(0) as u64,
            voluntary_ctx_switches: ru.ru_nvcsw.max(0) as u64,
            involuntary_ctx_switches: ru.ru_nivcsw.max(0) as u64,
            minor_faults: ru.ru_minflt.max(0) as u64,
            major_faults: ru.ru_majflt.max(0) as u64,
        }
    }

    fn get(who: libc::c_int) -> Rusage {
        // SAFETY: rusage is plain data; all-zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage; `who` is a RUSAGE_* constant.
        unsafe { libc::getrusage(who, &mut ru) };
        Rusage::from_libc(&ru)
    }

    /// This process, all threads.
    pub fn this_process() -> Rusage {
        Rusage::get(libc::RUSAGE_SELF)
    }

    /// The calling thread alone.
    pub fn this_thread() -> Rusage {
        Rusage::get(libc::RUSAGE_THREAD)
    }

    /// Every child this process has waited for.
    pub fn children() -> Rusage {
        Rusage::get(libc::RUSAGE_CHILDREN)
    }

    /// Context switches, voluntary and involuntary.
    pub fn context_switches(&self) -> u64 {
        self.voluntary_ctx_switches + self.involuntary_ctx_switches
    }

    /// The counters accumulated between `earlier` and `self` (max RSS is the
    /// later maximum, since the kernel only keeps a peak).
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
            max_rss_kib: self.max_rss_kib,
            voluntary_ctx_switches: self.voluntary_ctx_switches.saturating_sub(earlier.voluntary_ctx_switches),
            involuntary_ctx_switches: self.involuntary_ctx_switches.saturating_sub(earlier.involuntary_ctx_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
        }
    }

    /// Sum of two accounts (max RSS is the larger peak).
    pub fn plus(&self, other: &Rusage) -> Rusage {
        Rusage {
            user_us: self.user_us + other.user_us,
            sys_us: self.sys_us + other.sys_us,
            max_rss_kib: self.max_rss_kib.max(other.max_rss_kib),
            voluntary_ctx_switches: self.voluntary_ctx_switches + other.voluntary_ctx_switches,
            involuntary_ctx_switches: self.involuntary_ctx_switches + other.involuntary_ctx_switches,
            minor_faults: self.minor_faults + other.minor_faults,
            major_faults: self.major_faults + other.major_faults,
        }
    }

    /// User + system CPU time in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        (self.user_us + self.sys_us) as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_is_charged_as_user_time() {
        // Spin until this thread has had 30 ms of CPU by the kernel's thread
        // clock (however loaded the machine), then ask getrusage.
        fn thread_cpu_us() -> u64 {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime writes one timespec into `ts`, which outlives the call.
            let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            assert_eq!(rc, 0);
            ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
        }
        let before = Rusage::this_process();
        let start = thread_cpu_us();
        let mut x = 0u64;
        while thread_cpu_us() - start < 30_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let d = Rusage::this_process().since(&before);
        assert!(d.user_us + d.sys_us >= 20_000, "30 ms of spinning on the CPU charged {d:?}");
        assert!(d.max_rss_kib > 0);
    }

    #[test]
    fn since_and_plus_are_inverse_on_counters() {
        let a = Rusage {
            user_us: 10,
            sys_us: 5,
            max_rss_kib: 100,
            voluntary_ctx_switches: 3,
            involuntary_ctx_switches: 1,
            minor_faults: 7,
            major_faults: 0,
        };
        let b = Rusage {
            user_us: 4,
            sys_us: 1,
            max_rss_kib: 200,
            voluntary_ctx_switches: 1,
            involuntary_ctx_switches: 1,
            minor_faults: 2,
            major_faults: 1,
        };
        let s = a.plus(&b);
        assert_eq!(s.since(&b).user_us, a.user_us);
        assert_eq!(s.max_rss_kib, 200);
        assert_eq!(s.cpu_seconds(), 20e-6);
    }
}
