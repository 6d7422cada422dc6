//! `os.readdir`: one operation opens a directory of `entries` files, lists
//! every entry and closes it (the rvOS "readdir small (10)" and "readdir large
//! (30)" benchmarks).

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::json;

use crate::model::{Cell, Profile};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;
use crate::workloads::os::fs_common::{instance_dir, skip_or_fail};
use crate::workloads::scratch;

pub struct Readdir;

impl Workload for Readdir {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.readdir",
            group: "os",
            summary: "Open a directory, list every entry, close it",
            measures: "the cost of opening a directory and reading its entries with getdents64 (through the dentry cache \
                       and the filesystem's directory format), and how it grows with the number of entries",
            unit: Unit::NsPerOp,
            timed_region: "per operation: libc opendir(), readdir() until the end (each name's bytes hashed and counted; \
                           `.` and `..` skipped), closedir(), and a comparison of the count and the order-independent name \
                           hash with prepare's (a mismatch counter); creating the files is outside, at prepare, and so is \
                           naming the differing entries after a mismatch",
            total_window: None,
            verifier: "every listing had the number of entries prepare created and the same set of names (the wrapping sum \
                       of a 64-bit hash of each name equals the sum over the names prepare created): 0 mismatched listings",
            batched: true,
            params: vec![
                ParamSpec::int("entries", "files in the directory listed", 0, 100_000, [10; 3])
                    .with_values(Profile::Quick, vec![10.into(), 30.into()])
                    .with_values(Profile::Full, vec![10.into(), 30.into(), 1000.into()])
                    .with_values(Profile::Seed, vec![10.into(), 30.into()]),
            ],
            faults: &["extra-entry"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let entries = cell.usize("entries")?;
        let scratch = cx.scratch_dir()?;
        let names: BTreeSet<String> = (0..entries).map(|i| format!("e{i:06}")).collect();
        let made = instance_dir(scratch, "readdir").and_then(|dir| {
            for n in &names {
                std::fs::File::create_new(dir.join(n))?;
            }
            Ok(dir)
        });
        let dir = match made {
            Ok(d) => d,
            Err(e) => return skip_or_fail("creating files in the scratch directory", e),
        };
        if cx.fault_is("extra-entry") {
            // The fault adds a file after the names were recorded.
            std::fs::File::create_new(dir.join("extra-entry")).context("creating the extra entry")?;
        }
        let filesystem = scratch::filesystem_type(&dir);
        let inst = ReaddirInstance::new(dir, names, filesystem)?;
        // One operation now: a kernel that refuses it skips the row here.
        if let Err(e) = list(&inst.cdir) {
            return skip_or_fail("listing a directory in the scratch directory", e);
        }
        Ok(Prepared::ready(inst))
    }
}

/// FNV-1a over a name's bytes, mixed: summed over a directory's names it gives
/// a hash of the set, whatever order readdir returns them in.
#[inline]
fn name_hash(name: &[u8]) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for &b in name {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3);
    }
    mix64(h)
}

/// What one listing saw: entries and the sum of their name hashes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Listing {
    count: u64,
    hash: u64,
}

impl Listing {
    fn of<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> Listing {
        let mut l = Listing::default();
        for n in names {
            l.count += 1;
            l.hash = l.hash.wrapping_add(name_hash(n));
        }
        l
    }
}

/// What one sample saw.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    mismatches: u64,
    /// The last mismatching listing and, named after the window, how the
    /// directory differs from prepare's names.
    bad: Option<(Listing, String)>,
}

struct ReaddirInstance {
    dir: PathBuf,
    cdir: CString,
    names: BTreeSet<String>,
    expected: Listing,
    filesystem: String,
}

impl ReaddirInstance {
    fn new(dir: PathBuf, names: BTreeSet<String>, filesystem: String) -> anyhow::Result<Self> {
        let cdir = CString::new(dir.as_os_str().as_bytes())?;
        let expected = Listing::of(names.iter().map(|n| n.as_bytes()));
        Ok(ReaddirInstance { dir, cdir, names, expected, filesystem })
    }
}

/// One opendir / readdir-to-the-end / closedir of `dir`.
#[inline]
fn list(dir: &CStr) -> std::io::Result<Listing> {
    // SAFETY: `dir` is a NUL-terminated path.
    let d = unsafe { libc::opendir(dir.as_ptr()) };
    if d.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    let mut l = Listing::default();
    let err = loop {
        // SAFETY: errno is this thread's; readdir reports errors only through it.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `d` is an open directory stream, used by this thread only.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            // SAFETY: as above.
            break unsafe { *libc::__errno_location() };
        }
        // SAFETY: readdir returned a valid entry whose d_name is NUL-terminated;
        // it stays valid until the next readdir on `d`.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            l.count += 1;
            l.hash = l.hash.wrapping_add(name_hash(name));
        }
    };
    // SAFETY: `d` is open and not used after this.
    unsafe { libc::closedir(d) };
    if err != 0 {
        return Err(std::io::Error::from_raw_os_error(err));
    }
    Ok(l)
}

/// How the directory's names differ from `names`.
fn difference(dir: &Path, names: &BTreeSet<String>) -> String {
    let now: BTreeSet<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(e) => return format!("cannot list it again: {e}"),
    };
    let show =
        |v: Vec<&String>| if v.is_empty() { "none".to_string() } else { v.into_iter().take(5).cloned().collect::<Vec<_>>().join(", ") };
    format!("extra: {}; missing: {}", show(now.difference(names).collect()), show(names.difference(&now).collect()))
}

impl Instance for ReaddirInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let expected = self.expected;
        let mut mismatches = 0u64;
        let mut bad = None;
        timer.start();
        for _ in 0..iters {
            let l = list(&self.cdir).with_context(|| format!("listing {}", self.dir.display()))?;
            if l != expected {
                mismatches += 1;
                bad = Some(l);
            }
        }
        timer.stop();
        let bad = bad.map(|l| (l, difference(&self.dir, &self.names)));
        Ok((Work::ops(iters), Outcome { iters, mismatches, bad }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("{} listings of the {} entries prepare created, 0 mismatched", l.iters, self.expected.count);
        match &l.bad {
            None if l.mismatches == 0 => Check { passed: true, observed: format!("{} listings, 0 mismatched", l.iters), expected },
            None => Check { passed: false, expected, observed: format!("{} mismatched listings", l.mismatches) },
            Some((bad, diff)) => Check {
                passed: false,
                expected,
                observed: format!("{} listings, {} mismatched (last: {} entries; {diff})", l.iters, l.mismatches, bad.count),
            },
        }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        json!({
            "filesystem": self.filesystem,
            "entries": self.expected.count,
            "name_hash": format!("{:#018x}", self.expected.hash),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    #[test]
    fn listings_match_the_names_prepare_created() {
        for entries in [0, 1, 10, 30] {
            let tmp = tempfile::tempdir().unwrap();
            let cell = test_cell("os.readdir", json!({"entries": entries}), None, tmp.path());
            let mut inst = ready(Readdir.prepare_here(&cell));
            assert_eq!(inst.sample(6, &mut Timer::new()).unwrap(), Work::ops(6));
            let v = inst.verify();
            assert!(v.passed, "{entries}: {v:?}");
            assert_eq!(inst.details()["entries"], entries);
        }
    }

    #[test]
    fn an_extra_entry_fails_the_verifier_and_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.readdir", json!({"entries": 10}), Some("extra-entry"), tmp.path());
        let mut inst = ready(Readdir.prepare_here(&cell));
        inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert_eq!(v.expected, "3 listings of the 10 entries prepare created, 0 mismatched");
        assert_eq!(v.observed, "3 listings, 3 mismatched (last: 11 entries; extra: extra-entry; missing: none)");
    }

    #[test]
    fn a_renamed_entry_keeps_the_count_but_fails_the_name_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.readdir", json!({"entries": 10}), None, tmp.path());
        let mut inst = ready(Readdir.prepare_here(&cell));
        std::fs::rename(tmp.path().join("readdir/e000003"), tmp.path().join("readdir/e000003x")).unwrap();
        inst.sample(2, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.ends_with("(last: 10 entries; extra: e000003x; missing: e000003)"), "{}", v.observed);
    }

    #[test]
    fn the_set_hash_ignores_order_but_not_names() {
        let a = Listing::of([b"x".as_slice(), b"y"]);
        assert_eq!(a, Listing::of([b"y".as_slice(), b"x"]));
        assert_ne!(a, Listing::of([b"x".as_slice(), b"z"]));
        assert_ne!(name_hash(b"ab"), name_hash(b"ba"));
    }
}
