//! Array sizes from the machine: a multiple of the last-level cache read from
//! the topology (sysfs cache directories), bounded by the memory available,
//! or the exact size the user gave. Pure: the caller reads the machine.

use serde_json::{Value, json};

use super::bytes_text;
use crate::topology::Cache;
use crate::workloads::contract::ParamSpec;

/// The largest size a user may ask for (64 GiB).
pub const MAX_BYTES: i64 = 1 << 36;

/// The `bytes` parameter: 0 means "from the envelope" (`l3_multiple` x the
/// last-level cache).
pub fn bytes_param(help: &'static str, seed: i64) -> ParamSpec {
    ParamSpec::int("bytes", help, 0, MAX_BYTES, [0, 0, seed])
}

/// The `l3_multiple` parameter: how many last-level caches the array spans
/// when `bytes` is 0.
pub fn l3_multiple_param() -> ParamSpec {
    ParamSpec::int("l3_multiple", "with bytes=0: the array is this many times the last-level cache (one instance)", 1, 64, [2, 2, 2])
}

/// The default of the two parameters in every profile, for tests.
#[cfg(test)]
pub fn defaults(profile: crate::model::Profile) -> (i64, i64) {
    let b = bytes_param("", 0).values(profile)[0].as_i64().unwrap();
    (b, l3_multiple_param().values(profile)[0].as_i64().unwrap())
}

/// The last-level cache: the highest level holding data (Data or Unified),
/// its largest instance.
pub fn last_level(caches: &[Cache]) -> Option<&Cache> {
    let data = |c: &&Cache| c.kind == "Data" || c.kind == "Unified";
    let level = caches.iter().filter(data).map(|c| c.level).max()?;
    caches.iter().filter(data).filter(|c| c.level == level).max_by_key(|c| c.size_bytes)
}

/// A resolved array size and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySize {
    /// Bytes, a whole number of `granule`s.
    pub bytes: u64,
    /// In words: `2 x L3 (105.0 MiB, one instance)` or `bytes=... (--param)`.
    pub source: String,
    /// The last-level cache's level and size, when the topology has one.
    pub llc_level: Option<u8>,
    pub llc_bytes: Option<u64>,
    /// `MemAvailable` when it was read.
    pub mem_available: Option<u64>,
}

impl ArraySize {
    /// The facts for a row's details.
    pub fn details(&self) -> Value {
        json!({
            "bytes": self.bytes,
            "size_source": self.source,
            "llc_level": self.llc_level,
            "llc_bytes": self.llc_bytes,
            "mem_available_bytes": self.mem_available,
        })
    }
}

/// Resolves the size of an array: `bytes` when it is not 0, else
/// `multiple` x the last-level cache; rounded up to a whole `granule` (e.g. a
/// huge page). `Err(reason)` (a skipped row) when the size cannot be derived
/// or would take more than half the available memory.
pub fn resolve(bytes: u64, multiple: u64, granule: u64, caches: Option<&[Cache]>, mem_available: Option<u64>) -> Result<ArraySize, String> {
    let llc = caches.and_then(last_level);
    let (raw, source) = if bytes > 0 {
        (bytes, format!("bytes={bytes} (--param)"))
    } else {
        let Some(c) = llc else {
            return Err("the topology lists no cache sizes to size the array from: give --param bytes=N".into());
        };
        let raw = c.size_bytes.checked_mul(multiple).ok_or("the array size overflows")?;
        (raw, format!("{multiple} x L{} ({}, one instance, from sysfs)", c.level, bytes_text(c.size_bytes)))
    };
    let granule = granule.max(1);
    let bytes = raw.div_ceil(granule).checked_mul(granule).ok_or("the array size overflows")?;
    if let Some(avail) = mem_available
        && bytes > avail / 2
    {
        return Err(format!(
            "the array needs {} ({source}) but only {} of memory is available (MemAvailable); it may take at most half",
            bytes_text(bytes),
            bytes_text(avail)
        ));
    }
    Ok(ArraySize { bytes, source, llc_level: llc.map(|c| c.level), llc_bytes: llc.map(|c| c.size_bytes), mem_available })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use crate::topology::fixture;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_default_is_twice_the_last_level_cache_of_each_fixture() {
        assert_eq!(defaults(Profile::Quick), (0, 2));
        assert_eq!(defaults(Profile::Full), (0, 2));
        for (name, l3) in [("kvm-2c", 105 * MIB), ("4c8t", 8 * MIB), ("2s48c96t", 12 * MIB)] {
            let t = fixture(name);
            assert_eq!(last_level(&t.caches).map(|c| (c.level, c.size_bytes)), Some((3, l3)), "{name}");
            let s = resolve(0, 2, 2 * MIB, Some(&t.caches), Some(1 << 40)).unwrap();
            assert_eq!(s.bytes, 2 * l3, "{name}");
            assert_eq!(s.llc_bytes, Some(l3));
            assert!(s.source.starts_with("2 x L3"), "{}", s.source);
        }
    }

    #[test]
    fn sizes_round_up_to_the_granule_and_a_given_size_wins() {
        let t = fixture("4c8t");
        let s = resolve(3 * MIB + 1, 2, 2 * MIB, Some(&t.caches), None).unwrap();
        assert_eq!(s.bytes, 4 * MIB);
        assert!(s.source.contains("--param"));
        assert_eq!(resolve(0, 3, 2 * MIB, Some(&t.caches), None).unwrap().bytes, 24 * MIB);
    }

    #[test]
    fn no_caches_or_too_little_memory_are_reasons_to_skip() {
        let none = resolve(0, 2, 4096, Some(&[]), None).unwrap_err();
        assert!(none.contains("--param bytes"), "{none}");
        assert!(resolve(0, 2, 4096, None, None).is_err());
        let t = fixture("kvm-2c");
        let short = resolve(0, 2, 4096, Some(&t.caches), Some(300 * MIB)).unwrap_err();
        assert!(short.contains("MemAvailable"), "{short}");
        assert!(resolve(0, 2, 4096, Some(&t.caches), Some(500 * MIB)).is_ok());
    }

    #[test]
    fn the_last_level_ignores_instruction_caches() {
        let mut caches = fixture("4c8t").caches;
        caches.retain(|c| c.level < 3);
        caches.push(Cache { level: 4, kind: "Instruction".into(), size_bytes: 1, line_bytes: None, instances: 1, shared_cpus: vec![] });
        assert_eq!(last_level(&caches).map(|c| c.level), Some(2));
    }
}
