//! Linux cpulist text ("0-3,8,10-11"): parsing and formatting.
//!
//! This is the format of sysfs files such as `cpu/online`, `cache/index*/shared_cpu_list` and
//! `node*/cpulist`, and of kernel parameters such as `isolcpus=`. Parsing also accepts the
//! kernel's stride form `a-b:used/group` (e.g. `0-15:2/4` = 0,1,4,5,8,9,12,13).
//!
//! It must never allocate without bound on hostile input: ids above [`MAX_CPU_ID`] are rejected
//! instead of expanded.

use std::fmt::Write as _;

/// The largest CPU id accepted. Linux's `NR_CPUS` tops out at 8192; this leaves ample room
/// while keeping a malformed "0-4000000000" from allocating gigabytes.
pub const MAX_CPU_ID: usize = 1 << 20;

/// Formats CPU ids as a cpulist, compressing runs: `[0, 1, 2, 3, 8]` gives `"0-3,8"`. Input
/// order and duplicates do not matter. The inverse of [`parse`].
pub fn format(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = if start == end { write!(out, "{start}") } else { write!(out, "{start}-{end}") };
        i += 1;
    }
    out
}

/// Parses a Linux cpulist. The empty string (and whitespace, e.g. a lone newline) is the
/// empty list. The result is sorted and deduplicated. The error is the reason alone, so
/// callers can name the file it came from.
pub fn parse(s: &str) -> Result<Vec<usize>, String> {
    let text = s.trim();
    let mut cpus = Vec::new();
    if text.is_empty() {
        return Ok(cpus);
    }
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err("empty item between commas".to_string());
        }
        let (range, stride) = match item.split_once(':') {
            Some((r, st)) => (r, Some(st)),
            None => (item, None),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (cpu_id(a)?, cpu_id(b)?),
            None => {
                let v = cpu_id(range)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(format!("range {lo}-{hi} runs backwards"));
        }
        match stride {
            None => cpus.extend(lo..=hi),
            Some(st) => {
                let (used, group) = st.split_once('/').ok_or_else(|| format!("stride {st:?} is not used/group"))?;
                let used = cpu_id(used)?;
                let group = cpu_id(group)?;
                if used == 0 || group == 0 || used > group {
                    return Err(format!("stride {st:?} needs 0 < used <= group"));
                }
                let mut start = lo;
                while start <= hi {
                    cpus.extend(start..(start + used).min(hi + 1));
                    start += group;
                }
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn cpu_id(s: &str) -> Result<usize, String> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{s:?} is not a CPU number"));
    }
    match s.parse::<usize>() {
        Ok(v) if v <= MAX_CPU_ID => Ok(v),
        _ => Err(format!("CPU number {s} is above the limit {MAX_CPU_ID}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_sysfs_forms() {
        assert_eq!(parse("0-3,8,10-11").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("0-1\n").unwrap(), vec![0, 1]);
        assert_eq!(parse("5,53").unwrap(), vec![5, 53]);
        assert_eq!(parse("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse("\n").unwrap(), Vec::<usize>::new());
        assert_eq!(parse("7").unwrap(), vec![7]);
        // Unsorted and overlapping input comes out sorted and deduplicated.
        assert_eq!(parse("8,0-2,1").unwrap(), vec![0, 1, 2, 8]);
    }

    #[test]
    fn parses_the_stride_form() {
        assert_eq!(parse("0-15:2/4").unwrap(), vec![0, 1, 4, 5, 8, 9, 12, 13]);
        assert_eq!(parse("0-4:2/3").unwrap(), vec![0, 1, 3, 4]);
    }

    #[test]
    fn rejects_malformed_lists() {
        // The reason alone, naming what is wrong: the caller names the file
        // and quotes the text.
        for (bad, reason) in [
            ("a", "\"a\" is not a CPU number"),
            ("1-", "\"\" is not a CPU number"),
            ("-1", "\"\" is not a CPU number"),
            ("3-1", "range 3-1 runs backwards"),
            ("1,,2", "empty item between commas"),
            ("1 2", "\"1 2\" is not a CPU number"),
            ("0-7:0/2", "needs 0 < used <= group"),
            ("0-7:3/2", "needs 0 < used <= group"),
            ("0-7:2", "stride \"2\" is not used/group"),
            ("99999999999", "above the limit"),
        ] {
            let why = parse(bad).unwrap_err();
            assert!(why.contains(reason), "{bad:?}: {why}");
        }
    }

    #[test]
    fn formats_with_runs() {
        assert_eq!(format(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(format(&[]), "");
        assert_eq!(format(&[0, 1]), "0-1");
        assert_eq!(format(&[3, 1, 2, 2, 10]), "1-3,10");
        assert_eq!(format(&[5, 53]), "5,53");
    }

    #[test]
    fn round_trips_known_lists() {
        for text in ["0-7,48-55", "0", "0-1", "1,3,5,7", "2-23,50-71", ""] {
            assert_eq!(format(&parse(text).unwrap()), text);
        }
    }

    proptest! {
        #[test]
        fn parse_inverts_format(mut cpus in proptest::collection::vec(0usize..4096, 0..200)) {
            let text = format(&cpus);
            cpus.sort_unstable();
            cpus.dedup();
            prop_assert_eq!(parse(&text).unwrap(), cpus);
        }

        #[test]
        fn format_is_canonical(cpus in proptest::collection::vec(0usize..300, 0..60)) {
            let text = format(&cpus);
            let again = format(&parse(&text).unwrap());
            prop_assert_eq!(again, text);
        }
    }
}
