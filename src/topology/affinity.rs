//! The calling thread's CPU affinity mask, via `sched_getaffinity(2)`.
//!
//! Read-only: this module must never set affinity (placing threads belongs to the runner).

use std::io;

/// The largest mask tried, in 64-bit words (4 Mi CPUs): far beyond any kernel's `NR_CPUS`.
const MAX_WORDS: usize = 1 << 16;

/// The CPUs the calling thread may run on, sorted.
pub(super) fn current() -> io::Result<Vec<usize>> {
    // Start with glibc's cpu_set_t size (1024 CPUs) and grow while the kernel says the mask
    // is too small for its nr_cpu_ids (EINVAL).
    let mut words = std::mem::size_of::<libc::cpu_set_t>() / std::mem::size_of::<u64>();
    loop {
        let mut mask = vec![0u64; words];
        let bytes = words * std::mem::size_of::<u64>();
        // SAFETY: `mask` is a live, writable, 8-byte-aligned buffer of exactly `bytes` bytes,
        // and `bytes` is the size passed, so the kernel writes only inside it. cpu_set_t is a
        // plain array of unsigned longs, so viewing the u64 buffer through it is sound; pid 0
        // means the calling thread.
        let rc = unsafe {
            libc::sched_getaffinity(0, bytes, mask.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            let mut cpus = Vec::new();
            for (w, word) in mask.iter().enumerate() {
                for bit in 0..64 {
                    if word & (1u64 << bit) != 0 {
                        cpus.push(w * 64 + bit);
                    }
                }
            }
            return Ok(cpus);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINVAL) && words < MAX_WORDS {
            words *= 2;
            continue;
        }
        return Err(err);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_calling_thread_may_run_somewhere() {
        let cpus = super::current().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }
}
