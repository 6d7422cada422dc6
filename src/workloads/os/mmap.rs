//! `os.mmap`: one operation is `mmap` of `size` bytes of anonymous private
//! memory, the first touch of every page (one 64-bit word written per page,
//! then read back) and `munmap` (the rvOS "mmap+munmap 4K" benchmark, with the
//! page faults that make the mapping real).

use std::ptr;

use anyhow::bail;
use serde_json::json;

use crate::model::{Cell, Profile};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::skip_or_fail;

/// 2 MiB: one huge page on x86-64, 512 base pages.
const TWO_MIB: i64 = 2 << 20;

pub struct Mmap;

impl Workload for Mmap {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.mmap",
            group: "os",
            summary: "Map anonymous memory, touch every page, unmap it",
            measures: "the kernel's cost to create a private anonymous mapping, fault in a zeroed page for each first \
                       write (page allocation, zeroing, page-table update) and tear the mapping down again",
            unit: Unit::NsPerOp,
            timed_region: "per operation: mmap(size, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS), one 64-bit pattern \
                           word written at the start of every page (the first touch), every page's word read back and \
                           compared (a mismatch counter), and munmap; nothing else happens between start and stop",
            total_window: None,
            verifier: "every page of every mapping read back, before munmap, the pattern word written to it (a function of \
                       the operation and page index, never 0, so an untouched zero page fails): 0 mismatches over \
                       operations x pages words",
            batched: true,
            params: vec![
                ParamSpec::int("size", "bytes mapped per operation (rounded up to whole pages by the kernel)", 1, 1 << 30, [4096; 3])
                    .with_values(Profile::Full, vec![4096.into(), TWO_MIB.into()]),
            ],
            faults: &["skip-page"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let size = cell.usize("size")?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page <= 0 {
            bail!("sysconf(_SC_PAGESIZE) returned {page}");
        }
        let mut inst = MmapInstance {
            size,
            page: page as usize,
            salt: cell.seed,
            skip_page: cx.fault_is("skip-page"),
            thp: std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok().map(|s| s.trim().to_string()),
            ops: 0,
        };
        // One operation now: a kernel that refuses anonymous mappings (a
        // seccomp filter, an address-space limit) skips the row here.
        let mut t = Timer::new();
        if let Err(e) = inst.sample(1, &mut t) {
            return match e.downcast::<std::io::Error>() {
                Ok(io) => skip_or_fail("an anonymous mmap", io),
                Err(e) => Err(e),
            };
        }
        Ok(Prepared::ready(inst))
    }
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    /// Pages whose word read back wrong (every page of every mapping is read).
    mismatches: Mismatches,
}

struct MmapInstance {
    size: usize,
    page: usize,
    salt: u64,
    skip_page: bool,
    thp: Option<String>,
    /// Operations done so far: numbers each operation's pattern.
    ops: u64,
}

impl MmapInstance {
    fn pages(&self) -> usize {
        self.size.div_ceil(self.page)
    }
}

/// The word written to page `page` in operation `op`: never 0, so a page
/// left untouched (still the zero page) reads back wrong.
#[inline]
fn pattern(salt: u64, op: u64, page: usize) -> u64 {
    mix64(salt ^ op.rotate_left(20) ^ page as u64) | 1
}

impl Instance for MmapInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (size, page, pages, salt) = (self.size, self.page, self.pages(), self.salt);
        // The fault leaves the middle page of the first mapping untouched.
        let skip = if self.skip_page { Some(pages / 2) } else { None };
        let first_op = self.ops;
        let mut mismatches = Mismatches::new();
        timer.start();
        for i in 0..iters {
            let op = first_op + i;
            // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
            let p = unsafe {
                libc::mmap(ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
            };
            if p == libc::MAP_FAILED {
                timer.stop();
                return Err(std::io::Error::last_os_error().into());
            }
            let base = p.cast::<u8>();
            for pg in 0..pages {
                if i == 0 && skip == Some(pg) {
                    continue;
                }
                // SAFETY: `pg * page` is inside the `pages * page` bytes just
                // mapped readable and writable, and page-aligned (so u64-aligned).
                unsafe { ptr::write_volatile(base.add(pg * page).cast::<u64>(), pattern(salt, op, pg)) };
            }
            for pg in 0..pages {
                // SAFETY: as above; the mapping is still in place.
                let v = unsafe { ptr::read_volatile(base.add(pg * page).cast::<u64>()) };
                mismatches.add_if(v != pattern(salt, op, pg));
            }
            // SAFETY: unmapping exactly the mapping created above, which no
            // reference outlives.
            if unsafe { libc::munmap(p, size) } != 0 {
                timer.stop();
                return Err(std::io::Error::last_os_error().into());
            }
        }
        timer.stop();
        self.ops += iters;
        Ok((Work::ops(iters), Outcome { iters, mismatches }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let want = l.iters * self.pages() as u64;
        Check {
            passed: l.mismatches.is_empty(),
            expected: format!("0 mismatched of {want} pages read back ({} mappings x {} pages)", l.iters, self.pages()),
            observed: format!("{} mismatched of {want} pages read back", l.mismatches.count),
        }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        json!({
            "size": self.size,
            "page_size": self.page,
            "pages_per_map": self.pages(),
            "thp_enabled": self.thp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(size: usize, skip_page: bool) -> MmapInstance {
        MmapInstance { size, page: 4096, salt: 3, skip_page, thp: None, ops: 0 }
    }

    #[test]
    fn every_page_reads_back_its_pattern() {
        for size in [1, 4096, 4097, 3 * 4096] {
            let mut inst = instance(size, false);
            let mut t = Timer::new();
            let (w, out) = inst.sample(5, &mut t).unwrap();
            assert_eq!(w, Work::ops(5));
            assert!(t.work_ns().is_some());
            let v = inst.verify(&out);
            assert!(v.passed, "{v:?}");
            assert_eq!(v.observed, format!("0 mismatched of {} pages read back", 5 * size.div_ceil(4096)));
        }
    }

    #[test]
    fn a_skipped_page_fails_the_verifier() {
        let mut inst = instance(3 * 4096, true);
        let (_, out) = inst.sample(4, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert_eq!(v.observed, "1 mismatched of 12 pages read back");
    }

    #[test]
    fn patterns_are_never_zero_and_differ_by_op_and_page() {
        assert_ne!(pattern(0, 0, 0), 0);
        assert_ne!(pattern(1, 0, 0), pattern(1, 1, 0));
        assert_ne!(pattern(1, 0, 0), pattern(1, 0, 1));
    }
}
