//! File sizes of the io workloads, from the machine rather than constants:
//! a multiple of the last-level cache (so that buffered reads are not served
//! from CPU caches), bounded by the memory available (so that a page-cached
//! file stays cached) and by the free space of the filesystem; and the
//! refusal of a cell whose file would not fit in that free space, checked
//! before anything is written.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{Value, json};

use crate::envelope::Envelope;
use crate::model::{Cell, Profile};
use crate::workloads::contract::PrepareContext;
use crate::workloads::hw::sizing::last_level;
use crate::workloads::scratch;

pub const MIB: u64 = 1 << 20;

/// Free space kept beyond the file, so that a run never fills a filesystem.
pub const HEADROOM: u64 = 64 * MIB;

/// The smallest file an automatic size may be: below it the machine has too
/// little memory or disk for a meaningful cell, and the row is skipped.
pub const MIN_AUTO: u64 = 16 * MIB;

/// What the sizes are derived from, read at prepare.
#[derive(Clone, Debug, PartialEq)]
pub struct SizingFacts {
    /// Total bytes of the last-level cache (one instance's size times the
    /// instances), when sysfs lists the caches.
    pub llc_bytes: Option<u64>,
    /// `MemAvailable`, when readable.
    pub mem_available: Option<u64>,
    /// Bytes an unprivileged user may still write on the filesystem.
    pub free_bytes: u64,
}

impl SizingFacts {
    /// Reads the envelope's cache and memory records and the free space of
    /// `dir`'s filesystem.
    pub fn read(dir: &Path) -> std::io::Result<SizingFacts> {
        let env = Envelope::collect(Path::new("/"), Vec::new(), 0);
        let llc_bytes = env.cpu.caches.ok().and_then(|caches| last_level(caches).map(|c| c.size_bytes * c.instances as u64));
        Ok(SizingFacts { llc_bytes, mem_available: env.memory.available_bytes.ok().copied(), free_bytes: free_bytes(dir)? })
    }

    pub fn details(&self) -> Value {
        json!({ "llc_bytes": self.llc_bytes, "mem_available_bytes": self.mem_available, "free_bytes": self.free_bytes })
    }
}

/// Bytes an unprivileged user may write on the filesystem holding `dir`
/// (`statvfs(3)`: `f_bavail * f_frsize`; root may use the reserved blocks
/// too, but the figure stays the unprivileged one).
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: statvfs is plain data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// How a workload sizes its file in one profile: `mult` times the
/// last-level cache, at least `floor`, at most `ceiling`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub mult: u64,
    pub floor: u64,
    pub ceiling: Option<u64>,
}

/// The size chosen, and how, in words for the row.
#[derive(Clone, Debug, PartialEq)]
pub struct Size {
    pub bytes: u64,
    pub rule: String,
}

fn mib(b: u64) -> String {
    format!("{} MiB", b / MIB)
}

/// The file size for a cell: `explicit_mib` when the user gave one (> 0),
/// otherwise `rule` applied to `m`, capped by a quarter of the memory
/// available and a quarter of the free space, rounded down to whole MiB.
/// `Err(reason)` when an automatic size would be under [`MIN_AUTO`].
pub fn choose(rule: Rule, explicit_mib: u64, m: &SizingFacts) -> Result<Size, String> {
    if explicit_mib > 0 {
        let bytes = explicit_mib.saturating_mul(MIB);
        return Ok(Size { bytes, rule: format!("file_mib={explicit_mib} given: {}", mib(bytes)) });
    }
    let (mut bytes, mut rule_text) = match m.llc_bytes {
        Some(llc) => {
            let want = llc.saturating_mul(rule.mult);
            let b = want.max(rule.floor).min(rule.ceiling.unwrap_or(u64::MAX));
            let bounds = match rule.ceiling {
                Some(c) => format!("bounded to {}..{}", mib(rule.floor), mib(c)),
                None => format!("at least {}", mib(rule.floor)),
            };
            (b, format!("{} x last-level cache {} = {}, {bounds}: {}", rule.mult, mib(llc), mib(want), mib(b)))
        }
        None => (rule.floor, format!("last-level cache unknown: the floor, {}", mib(rule.floor))),
    };
    let mut caps = vec![(m.free_bytes / 4, "a quarter of the free space")];
    if let Some(avail) = m.mem_available {
        caps.push((avail / 4, "a quarter of the memory available"));
    }
    for (cap, what) in caps {
        if bytes > cap {
            bytes = cap;
            rule_text.push_str(&format!("; capped at {what}, {}", mib(cap)));
        }
    }
    bytes -= bytes % MIB;
    if bytes < MIN_AUTO {
        return Err(format!(
            "too little room for a file: {rule_text} leaves {} MiB, under the {} MiB minimum ({} MiB free, {} available)",
            bytes / MIB,
            MIN_AUTO / MIB,
            m.free_bytes / MIB,
            m.mem_available.map(|a| format!("{} MiB memory", a / MIB)).unwrap_or_else(|| "unknown memory".into()),
        ));
    }
    Ok(Size { bytes, rule: rule_text })
}

/// `Err(reason)` when `need` bytes plus [`HEADROOM`] do not fit in `free`
/// bytes: the cell is refused before it writes anything.
pub fn fits(need: u64, free: u64, dir: &Path, filesystem: &str) -> Result<(), String> {
    if need.saturating_add(HEADROOM) <= free {
        return Ok(());
    }
    Err(format!(
        "not enough free space: the file needs {} MiB plus {} MiB headroom on {} ({filesystem}), which has {} MiB free \
         (statvfs f_bavail); refused before writing anything",
        need.div_ceil(MIB),
        HEADROOM / MIB,
        dir.display(),
        free / MIB,
    ))
}

/// Where a cell's file goes, how large it is, and what the size came from.
pub struct Placed {
    pub scratch: PathBuf,
    pub filesystem: String,
    pub machine: SizingFacts,
    pub size: Size,
}

/// Reads the machine once for `cell` (at prepare), sizes its file by the
/// profile's rule among `rules` (or the `file_mib` parameter), rounds the
/// size down to whole `unit`s (at least one) and checks that it fits in the
/// free space. `Ok(Err(reason))`: the cell is skipped before anything is written.
pub fn place(cell: &Cell, cx: &PrepareContext, rules: [Rule; 3], unit: u64) -> anyhow::Result<Result<Placed, String>> {
    let scratch = cx.scratch_dir()?.to_path_buf();
    let filesystem = scratch::filesystem_type(&scratch);
    let machine = SizingFacts::read(&scratch).context("reading the free space of the scratch directory")?;
    let mut size = match choose(for_profile(cell.profile, rules), cell.u64("file_mib")?, &machine) {
        Ok(s) => s,
        Err(why) => return Ok(Err(why)),
    };
    size.bytes = (size.bytes / unit).max(1) * unit;
    if let Err(why) = fits(size.bytes, machine.free_bytes, &scratch, &filesystem) {
        return Ok(Err(why));
    }
    Ok(Ok(Placed { scratch, filesystem, machine, size }))
}

/// The rule of `profile` among (quick, full, seed).
pub fn for_profile(profile: Profile, [quick, full, seed]: [Rule; 3]) -> Rule {
    match profile {
        Profile::Quick => quick,
        Profile::Full => full,
        Profile::Seed => seed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule { mult: 2, floor: 64 * MIB, ceiling: Some(256 * MIB) };

    fn machine(llc: Option<u64>, mem: Option<u64>, free: u64) -> SizingFacts {
        SizingFacts { llc_bytes: llc, mem_available: mem, free_bytes: free }
    }

    #[test]
    fn sizes_follow_the_cache_within_the_bounds() {
        let big = 1 << 40;
        assert_eq!(choose(RULE, 0, &machine(Some(8 * MIB), Some(big), big)).unwrap().bytes, 64 * MIB, "floor");
        assert_eq!(choose(RULE, 0, &machine(Some(105 * MIB), Some(big), big)).unwrap().bytes, 210 * MIB);
        let s = choose(RULE, 0, &machine(Some(512 * MIB), Some(big), big)).unwrap();
        assert_eq!(s.bytes, 256 * MIB, "ceiling");
        assert!(s.rule.starts_with("2 x last-level cache 512 MiB = 1024 MiB, bounded to 64 MiB..256 MiB"), "{}", s.rule);
        let open = Rule { mult: 16, floor: 1024 * MIB, ceiling: None };
        assert_eq!(choose(open, 0, &machine(Some(105 * MIB), Some(big), big)).unwrap().bytes, 1680 * MIB);
        let unknown = choose(RULE, 0, &machine(None, Some(big), big)).unwrap();
        assert_eq!((unknown.bytes, unknown.rule.as_str()), (64 * MIB, "last-level cache unknown: the floor, 64 MiB"));
    }

    #[test]
    fn memory_and_free_space_cap_the_size_and_too_little_is_refused() {
        let s = choose(RULE, 0, &machine(Some(105 * MIB), Some(400 * MIB + 12345), 1 << 40)).unwrap();
        assert_eq!(s.bytes, 100 * MIB);
        assert!(s.rule.ends_with("capped at a quarter of the memory available, 100 MiB"), "{}", s.rule);
        let s = choose(RULE, 0, &machine(Some(105 * MIB), None, 200 * MIB)).unwrap();
        assert_eq!(s.bytes, 50 * MIB);
        assert!(s.rule.contains("a quarter of the free space"));
        let e = choose(RULE, 0, &machine(Some(105 * MIB), Some(1 << 40), 40 * MIB)).unwrap_err();
        assert!(e.contains("under the 16 MiB minimum (40 MiB free"), "{e}");
    }

    #[test]
    fn a_given_size_is_used_as_given_and_checked_against_the_free_space() {
        let s = choose(RULE, 100_000_000, &machine(Some(MIB), Some(MIB), MIB)).unwrap();
        assert_eq!(s.bytes, 100_000_000 * MIB);
        assert_eq!(s.rule, "file_mib=100000000 given: 100000000 MiB");
        let dir = Path::new("/x");
        assert!(fits(100 * MIB, 164 * MIB, dir, "ext4").is_ok());
        let e = fits(100 * MIB + 1, 164 * MIB, dir, "ext4").unwrap_err();
        assert!(e.starts_with("not enough free space: the file needs 101 MiB plus 64 MiB headroom on /x (ext4), which has 164 MiB"), "{e}");
    }

    #[test]
    fn the_machine_is_read_from_the_envelope_and_statvfs() {
        let tmp = tempfile::tempdir().unwrap();
        let m = SizingFacts::read(tmp.path()).unwrap();
        assert!(m.free_bytes > 0);
        assert!(free_bytes(Path::new("/no/such/dir")).is_err());
        assert_eq!(m.details()["free_bytes"], m.free_bytes);
    }
}
