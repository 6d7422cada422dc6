//! `os.stat`: one operation is a `stat(2)` of an existing file by path (the
//! rvOS "file stat" benchmark): path lookup and the inode's attributes,
//! nothing read from the file.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::{content, instance_dir, skip_or_fail};
use crate::workloads::scratch;

/// Size of the file stat'ed.
const FILE_BYTES: usize = 64;

pub struct Stat;

/// The fault: every iteration of a sample but the first skips its stat.
pub const SKIP_STAT: &str = "skip-stat";

impl Workload for Stat {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.stat",
            group: "os",
            summary: "stat(2) an existing file by its path",
            measures: "the cost of a path lookup through the dentry cache and of copying an inode's attributes to user space",
            unit: Unit::NsPerOp,
            timed_region: "per operation: poisoning the size and inode number of a buffer allocated before the window (two \
                           stores of values that differ from the expected ones), libc stat() of the file's path (glibc \
                           issues newfstatat or statx) into it, and a comparison of its size and inode number with those \
                           recorded at prepare (a mismatch counter); creating the file is outside, at prepare",
            total_window: None,
            verifier: "every stat returned the size prepare wrote (64 B) and the inode number prepare read with fstat on \
                       the open file, into a buffer poisoned before it (so that a stat that did not fill it leaves the \
                       poison): 0 mismatched stats",
            batched: true,
            params: vec![],
            faults: &["grow-file", SKIP_STAT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let scratch = cx.scratch_dir()?;
        let grow = cx.fault_is("grow-file");
        let made = instance_dir(scratch, "stat").and_then(|dir| {
            let path = dir.join("file");
            let mut f = std::fs::File::create_new(&path)?;
            f.write_all(&content(cell.seed, 0, FILE_BYTES))?;
            let inode = f.metadata()?.ino();
            if grow {
                // The fault appends a byte after the size was recorded.
                f.write_all(b"+")?;
            }
            Ok((path, inode))
        });
        let (path, inode) = match made {
            Ok(x) => x,
            Err(e) => return skip_or_fail("creating a file in the scratch directory", e),
        };
        let cpath = CString::new(path.as_os_str().as_bytes())?;
        // One operation now: a kernel that refuses stat skips the row here.
        // SAFETY: libc::stat is plain data; all-zero is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `cpath` is NUL-terminated and `st` a valid out-pointer.
        if unsafe { libc::stat(cpath.as_ptr(), &mut st) } != 0 {
            return skip_or_fail("stat of a file in the scratch directory", std::io::Error::last_os_error());
        }
        let filesystem = scratch::filesystem_type(&path);
        let skip_stat = cx.fault_is(SKIP_STAT);
        Ok(Prepared::ready(StatInstance { path, cpath, size: FILE_BYTES as u64, inode, filesystem, skip_stat }))
    }
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    mismatches: Mismatches,
    /// Size and inode of the last stat (or the poison, if it filled nothing).
    size: i64,
    inode: u64,
}

struct StatInstance {
    path: PathBuf,
    cpath: CString,
    /// Size and inode recorded at prepare.
    size: u64,
    inode: u64,
    filesystem: String,
    skip_stat: bool,
}

impl Instance for StatInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (size, inode) = (self.size, self.inode);
        // SAFETY: libc::stat is plain data; all-zero is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let mut mismatches = Mismatches::new();
        // Poison: a size and an inode number no correct stat returns.
        let (bad_size, bad_inode) = (-1, !inode);
        let skip_stat = self.skip_stat;
        timer.start();
        for i in 0..iters {
            st.st_size = bad_size;
            st.st_ino = bad_inode;
            // The fault: no stat after the first (only the poison can tell).
            let skip = skip_stat && i > 0;
            // SAFETY: `cpath` is NUL-terminated and `st` a valid out-pointer.
            if !skip && unsafe { libc::stat(self.cpath.as_ptr(), &mut st) } != 0 {
                let e = std::io::Error::last_os_error();
                anyhow::bail!("stat {}: {e}", self.path.display());
            }
            mismatches.add_if(st.st_size != size as i64 || st.st_ino != inode);
        }
        timer.stop();
        Ok((Work::ops(iters), Outcome { iters, mismatches, size: st.st_size, inode: st.st_ino }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        Check {
            passed: l.mismatches.is_empty(),
            expected: format!("{} stats of size {} B, inode {} (recorded at prepare), 0 mismatched", l.iters, self.size, self.inode),
            observed: format!(
                "{} stats, {} mismatched (last: size {} B, inode {}{})",
                l.iters,
                l.mismatches.count,
                l.size,
                l.inode,
                if l.inode == !self.inode { ": the poison, not filled by a stat" } else { "" }
            ),
        }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        json!({ "filesystem": self.filesystem, "file_bytes": self.size, "inode": self.inode })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    #[test]
    fn stats_see_the_size_and_inode_recorded_at_prepare() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.stat", json!({}), None, tmp.path());
        let mut inst = ready(Stat.prepare_here(&cell));
        assert_eq!(inst.sample(20, &mut Timer::new()).unwrap(), Work::ops(20));
        let v = inst.verify();
        assert!(v.passed, "{v:?}");
        assert_eq!(inst.details()["file_bytes"], 64);
    }

    #[test]
    fn a_grown_file_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.stat", json!({}), Some("grow-file"), tmp.path());
        let mut inst = ready(Stat.prepare_here(&cell));
        inst.sample(4, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.starts_with("4 stats, 4 mismatched (last: size 65 B"), "{}", v.observed);
    }

    #[test]
    fn a_skipped_stat_leaves_the_poison_and_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.stat", json!({}), Some(SKIP_STAT), tmp.path());
        let mut inst = ready(Stat.prepare_here(&cell));
        inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify().passed, "the first stat of a sample is done");
        inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.starts_with("3 stats, 2 mismatched (last: size -1 B"), "{}", v.observed);
        assert!(v.observed.ends_with(": the poison, not filled by a stat)"), "{}", v.observed);
    }

    #[test]
    fn the_verifier_fails_on_another_inode() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.stat", json!({}), None, tmp.path());
        let mut inst = ready(Stat.prepare_here(&cell));
        // The same name and size, another inode: the new file exists while the
        // old one does, so they cannot share an inode number.
        let path = tmp.path().join("stat/file");
        let other = tmp.path().join("stat/other");
        std::fs::write(&other, [0u8; 64]).unwrap();
        std::fs::rename(&other, &path).unwrap();
        inst.sample(2, &mut Timer::new()).unwrap();
        assert!(!inst.verify().passed, "{:?}", inst.verify());
    }
}
