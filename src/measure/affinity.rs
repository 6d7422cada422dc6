//! CPU affinity of the calling thread (`sched_getaffinity(2)` /
//! `sched_setaffinity(2)`), with masks sized for any CPU count, not only the
//! 1024 CPUs of glibc's `cpu_set_t`.

use std::io;

/// The largest mask tried, in 64-bit words (4 Mi CPUs): far beyond any kernel's `NR_CPUS`.
const MAX_WORDS: usize = 1 << 16;

/// The CPUs the calling thread may run on, sorted.
pub fn current_thread() -> io::Result<Vec<usize>> {
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
        let rc = unsafe { libc::sched_getaffinity(0, bytes, mask.as_mut_ptr().cast::<libc::cpu_set_t>()) };
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

/// Restricts the calling thread to a set of logical CPUs.
pub fn set_current_thread(cpus: &[usize]) -> io::Result<()> {
    let max = cpus.iter().copied().max().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty CPU set"))?;
    if max >= MAX_WORDS * 64 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {max} is beyond any kernel's CPU count")));
    }
    let min_words = std::mem::size_of::<libc::cpu_set_t>() / std::mem::size_of::<u64>();
    let mut mask = vec![0u64; (max / 64 + 1).max(min_words)];
    for &c in cpus {
        mask[c / 64] |= 1u64 << (c % 64);
    }
    // SAFETY: `mask` is a live buffer of exactly the size passed; the kernel only reads it;
    // pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mask.len() * 8, mask.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Restricts the calling thread to one logical CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    set_current_thread(&[cpu])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_a_thread_restricts_it_to_that_cpu() {
        let allowed = current_thread().unwrap();
        assert!(!allowed.is_empty());
        assert!(allowed.windows(2).all(|w| w[0] < w[1]));
        let target = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(target).unwrap();
            assert_eq!(current_thread().unwrap(), vec![target]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn impossible_sets_are_errors() {
        assert!(set_current_thread(&[]).is_err());
        assert!(set_current_thread(&[MAX_WORDS * 64]).is_err());
        // A CPU this machine does not have (but a mask can hold): the kernel refuses.
        assert!(set_current_thread(&[4000]).is_err());
    }
}
