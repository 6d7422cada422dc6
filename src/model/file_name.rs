//! Names of files made from what a user typed: a row's id (from a command
//! workload's axis values, a variant's name), a workload's id in a plot's
//! file name. A name has a bound of its own (255 bytes on Linux
//! filesystems, `NAME_MAX`): one past it fails the write in the middle of
//! a run, so every such name is kept to safe characters and a length well
//! under the bound, a hash of the whole keeping shortened names apart.

/// FNV-1a, 64 bits: a stable hash with no dependency.
pub fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The longest name part [`bounded`] gives by default: room for a prefix
/// and a suffix (`proofbench-<pid>-`, `-speedup.svg`, `.log`) within 255 bytes.
pub const MAX_NAME_PART: usize = 160;

/// `s` with every character but ASCII letters, digits and `._=-+` as `_`.
pub fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "._=-+".contains(c) { c } else { '_' }).collect()
}

/// `s` made [`safe`] and, when longer than `max` bytes, cut and followed
/// by `~` and 16 hex digits of a hash of the whole: two long names that
/// differ only after the cut stay apart.
pub fn bounded(s: &str, max: usize) -> String {
    let safe = safe(s);
    if safe.len() <= max {
        return safe;
    }
    let hash = format!("~{:016x}", fnv64(s.as_bytes()));
    // Safe text is ASCII: any byte index is a character boundary.
    format!("{}{hash}", &safe[..max.saturating_sub(hash.len())])
}

/// Whether `name` is one [`bounded`] could have made: not empty, at most
/// [`MAX_NAME_PART`] bytes, safe characters only (and the `~` before a
/// hash), and not `.` or `..`. A
/// name read from elsewhere (a launched side's stream) must be one before
/// it names a file.
pub fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_PART
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._=-+~".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_the_planner_could_make_are_plain() {
        assert!(is_plain("007-cpu.primes-workers=2"));
        assert!(is_plain(&bounded(&"x".repeat(400), MAX_NAME_PART)));
        for bad in ["", ".", "..", "../etc/passwd", "a/b", "a\0b", &"y".repeat(161)] {
            assert!(!is_plain(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_long_name_is_cut_to_its_bound_and_long_names_stay_apart() {
        assert_eq!(bounded("007-cpu.primes-workers=2", MAX_NAME_PART), "007-cpu.primes-workers=2");
        assert_eq!(bounded("a b/c", 10), "a_b_c");
        let a = bounded(&format!("001-x-arg={}a", "v".repeat(300)), MAX_NAME_PART);
        let b = bounded(&format!("001-x-arg={}b", "v".repeat(300)), MAX_NAME_PART);
        assert_eq!(a.len(), MAX_NAME_PART);
        assert_ne!(a, b);
        assert!(a.starts_with("001-x-arg=vvv") && a.contains('~'), "{a}");
        // Multi-byte characters become one safe byte each before the cut.
        assert_eq!(bounded(&"é".repeat(400), 50).len(), 50);
    }
}
