//! An anonymous private mapping aligned to the huge page size, with an
//! optional `madvise` on it, and what `/proc/self/smaps` says the kernel
//! backed it with (AnonHugePages of that mapping, not of the whole process).

use std::io::{self, ErrorKind};
use std::ptr;

use procfs_core::FromRead;
use procfs_core::process::MemoryMaps;
use serde_json::{Value, json};

/// What the region is advised to be backed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// No `madvise`: the system's THP mode decides.
    Default,
    /// `madvise(MADV_HUGEPAGE)`.
    Huge,
    /// `madvise(MADV_NOHUGEPAGE)`.
    NoHuge,
}

impl Advice {
    pub fn as_str(self) -> &'static str {
        match self {
            Advice::Default => "none (the system's THP mode)",
            Advice::Huge => "MADV_HUGEPAGE",
            Advice::NoHuge => "MADV_NOHUGEPAGE",
        }
    }
}

/// The PMD (transparent huge page) size: `hpage_pmd_size`, 2 MiB when absent.
pub fn huge_page_size() -> usize {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&s: &usize| s.is_power_of_two())
        .unwrap_or(2 << 20)
}

/// A private anonymous read-write mapping of `len` bytes starting at an
/// `align`-aligned address, unmapped on drop.
pub struct Region {
    base: *mut u8,
    len: usize,
}

// SAFETY: the region owns its mapping exclusively; moving it to another
// thread moves that ownership.
unsafe impl Send for Region {}

impl Region {
    /// Maps `len` bytes (a multiple of the page size) at an `align`-aligned
    /// address and applies `advice`. The error of a refused `madvise` is
    /// returned with the mapping already gone.
    pub fn new(len: usize, align: usize, advice: Advice) -> io::Result<Region> {
        if len == 0 || !align.is_power_of_two() {
            return Err(io::Error::new(ErrorKind::InvalidInput, format!("bad region: {len} bytes aligned to {align}")));
        }
        let span = len.checked_add(align).ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "region too large"))?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(ptr::null_mut(), span, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let start = p as usize;
        let aligned = start.next_multiple_of(align);
        let (head, tail) = (aligned - start, start + span - (aligned + len));
        // SAFETY: both ranges lie inside the mapping just created and are
        // page-aligned (mmap returns page-aligned addresses; `align` and `len`
        // are page multiples), and nothing refers to them.
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
        }
        let region = Region { base: aligned as *mut u8, len };
        let flag = match advice {
            Advice::Default => None,
            Advice::Huge => Some(libc::MADV_HUGEPAGE),
            Advice::NoHuge => Some(libc::MADV_NOHUGEPAGE),
        };
        if let Some(flag) = flag {
            // SAFETY: advising exactly the mapping owned by `region`.
            if unsafe { libc::madvise(region.base.cast(), len, flag) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(region)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn start(&self) -> usize {
        self.base as usize
    }

    /// The region as 64-bit words.
    pub fn words(&self) -> &[u64] {
        // SAFETY: the mapping is readable, `len` bytes long, page-aligned (so
        // u64-aligned), and lives as long as `self`; zero-filled memory is a
        // valid u64.
        unsafe { std::slice::from_raw_parts(self.base.cast::<u64>(), self.len / 8) }
    }

    /// The region as mutable 64-bit words.
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `words`, and `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.base.cast::<u64>(), self.len / 8) }
    }

    /// How the kernel backs the region now, from `/proc/self/smaps`.
    pub fn backing(&self) -> Result<Backing, String> {
        let text = std::fs::read("/proc/self/smaps").map_err(|e| format!("cannot read /proc/self/smaps: {e}"))?;
        backing_in(&text, self.start() as u64, (self.start() + self.len) as u64)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping this value owns; the slices it
        // lent out borrow `self`, so none outlives it.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// What smaps says about the mappings covering a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backing {
    /// `AnonHugePages` summed over the mappings overlapping the region.
    pub anon_huge_bytes: u64,
    /// `Rss` summed over them.
    pub rss_bytes: u64,
    /// Their total size: more than the region when the kernel merged a
    /// neighbouring mapping into it (the counts then include the neighbour).
    pub vma_bytes: u64,
    /// How many mappings overlap the region.
    pub vmas: usize,
}

impl Backing {
    pub fn details(&self, region_bytes: u64) -> Value {
        json!({
            "anon_huge_bytes": self.anon_huge_bytes,
            "huge_fraction": if region_bytes > 0 { self.anon_huge_bytes as f64 / region_bytes as f64 } else { 0.0 },
            "rss_bytes": self.rss_bytes,
            "smaps_vma_bytes": self.vma_bytes,
        })
    }
}

/// The backing of `[start, end)` in the text of an smaps file.
pub fn backing_in(smaps: &[u8], start: u64, end: u64) -> Result<Backing, String> {
    let maps = MemoryMaps::from_read(smaps).map_err(|e| format!("cannot parse /proc/self/smaps: {e}"))?;
    let mut b = Backing::default();
    for m in maps.iter().filter(|m| m.address.0 < end && m.address.1 > start) {
        let field = |k: &str| m.extension.map.get(k).copied();
        b.anon_huge_bytes += field("AnonHugePages").ok_or("smaps has no AnonHugePages field (a kernel without THP)")?;
        b.rss_bytes += field("Rss").unwrap_or(0);
        b.vma_bytes += m.address.1 - m.address.0;
        b.vmas += 1;
    }
    if b.vmas == 0 {
        return Err(format!("no mapping of /proc/self/smaps covers {start:#x}-{end:#x}"));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0 
Size:               4096 kB
Rss:                4096 kB
AnonHugePages:      2048 kB
VmFlags: rd wr mr mw me ac hg
7f0000400000-7f0000401000 r--p 00000000 08:01 1234                       /usr/lib/x.so
Size:                  4 kB
Rss:                   4 kB
AnonHugePages:         0 kB
VmFlags: rd mr mw me
";

    #[test]
    fn smaps_of_the_region_only_are_counted() {
        let b = backing_in(SMAPS.as_bytes(), 0x7f00_0000_0000, 0x7f00_0040_0000).unwrap();
        assert_eq!(b, Backing { anon_huge_bytes: 2 << 20, rss_bytes: 4 << 20, vma_bytes: 4 << 20, vmas: 1 });
        let both = backing_in(SMAPS.as_bytes(), 0x7f00_0000_0000, 0x7f00_0040_1000).unwrap();
        assert_eq!(both.vmas, 2);
        assert!(backing_in(SMAPS.as_bytes(), 0x1000, 0x2000).unwrap_err().contains("no mapping"));
    }

    #[test]
    fn a_region_is_aligned_writable_and_seen_in_smaps() {
        let align = 2 << 20;
        // madvise(MADV_NOHUGEPAGE) is EINVAL on a kernel without THP.
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists();
        let mut r = Region::new(4 << 20, align, if thp { Advice::NoHuge } else { Advice::Default }).unwrap();
        assert_eq!(r.start() % align, 0);
        r.words_mut()[0] = 7;
        let last = r.words().len() - 1;
        r.words_mut()[last] = 9;
        assert_eq!((r.words()[0], r.words()[last]), (7, 9));
        let b = r.backing().unwrap();
        if thp {
            assert_eq!(b.anon_huge_bytes, 0, "MADV_NOHUGEPAGE gets base pages");
        }
        assert!(b.rss_bytes >= 8192 && b.vma_bytes >= 4 << 20, "{b:?}");
    }

    #[test]
    fn bad_regions_are_errors() {
        assert!(Region::new(0, 4096, Advice::Default).is_err());
        assert!(Region::new(4096, 3, Advice::Default).is_err());
    }
}
