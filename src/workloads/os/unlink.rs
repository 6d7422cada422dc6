//! `os.unlink`: one operation deletes one small file (the rvOS "file delete"
//! benchmark). Each sample creates its `iters` files before the timed window
//! and deletes them inside it.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{Check, Instance, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec};
use crate::workloads::os::fs_common::{content, entry_count, ext4_journal, instance_dir, skip_or_fail};
use crate::workloads::scratch;

/// Size of each file deleted (the size the rvOS create benchmark writes).
const FILE_BYTES: usize = 64;

pub struct Unlink;

impl Workload for Unlink {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.unlink",
            group: "os",
            summary: "Delete one small file",
            measures: "the cost of removing a directory entry and releasing an inode and its data through the VFS and the \
                       filesystem of the scratch directory",
            unit: Unit::NsPerOp,
            timed_region: "per operation: unlink() of one 64 B file by path; creating the sample's files (and counting the \
                           directory's entries) happens before timer start, checking that they are gone after timer stop",
            total_window: None,
            verifier: "after the window none of the sample's files exists any more and the directory's entry count (listed \
                       before and after the window) dropped by exactly the number of operations",
            batched: true,
            params: vec![],
            faults: &["skip-unlink"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let scratch = cx.scratch_dir()?;
        let dir = match instance_dir(scratch, "unlink") {
            Ok(d) => d,
            Err(e) => return skip_or_fail("creating a directory in the scratch directory", e),
        };
        // A kernel or filesystem that refuses deletion skips the row here.
        let probe = dir.join("probe");
        if let Err(e) = std::fs::write(&probe, b"probe").and_then(|_| std::fs::remove_file(&probe)) {
            return skip_or_fail("creating and deleting a file in the scratch directory", e);
        }
        let filesystem = scratch::filesystem_type(&dir);
        Ok(Prepared::ready(UnlinkInstance::new(dir, content(cell.seed, 0, FILE_BYTES), cx.fault_is("skip-unlink"), filesystem)))
    }
}

/// What one sample saw.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    /// Directory entries before and after the window.
    before: usize,
    after: usize,
    /// Files of the sample still present after the window.
    remaining: u64,
    first_remaining: Option<String>,
}

struct UnlinkInstance {
    dir: PathBuf,
    content: Vec<u8>,
    skip_unlink: bool,
    filesystem: String,
    /// `paths[i]` is the i-th file of every sample.
    paths: Vec<PathBuf>,
}

impl UnlinkInstance {
    fn new(dir: PathBuf, content: Vec<u8>, skip_unlink: bool, filesystem: String) -> Self {
        UnlinkInstance { dir, content, skip_unlink, filesystem, paths: Vec::new() }
    }
}

impl Instance for UnlinkInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let n = iters as usize;
        while self.paths.len() < n {
            let i = self.paths.len();
            self.paths.push(self.dir.join(format!("u{i:07}")));
        }
        for path in &self.paths[..n] {
            std::fs::write(path, &self.content).with_context(|| format!("creating {}", path.display()))?;
        }
        let before = entry_count(&self.dir).context("listing the directory before the window")?;
        // The fault leaves the middle file in place.
        let skip = if self.skip_unlink { Some(n / 2) } else { None };
        timer.start();
        for (i, path) in self.paths[..n].iter().enumerate() {
            if skip == Some(i) {
                continue;
            }
            std::fs::remove_file(path).with_context(|| format!("deleting {}", path.display()))?;
        }
        timer.stop();
        let after = entry_count(&self.dir).context("listing the directory after the window")?;
        let mut last = Outcome { iters, before, after, remaining: 0, first_remaining: None };
        for path in &self.paths[..n] {
            if std::fs::symlink_metadata(path).is_ok() {
                last.remaining += 1;
                last.first_remaining.get_or_insert_with(|| path.file_name().unwrap_or_default().to_string_lossy().into_owned());
                std::fs::remove_file(path).with_context(|| format!("removing the leftover {}", path.display()))?;
            }
        }
        Ok((Work::ops(iters), last))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let dropped = l.before as i64 - l.after as i64;
        let expected = format!("0 of {} files left, entries {} -> {}", l.iters, l.before, l.before as i64 - l.iters as i64);
        let left = match &l.first_remaining {
            Some(f) => format!("{} of {} files left (first: {f})", l.remaining, l.iters),
            None => format!("0 of {} files left", l.iters),
        };
        Check {
            passed: l.remaining == 0 && dropped == l.iters as i64,
            expected,
            observed: format!("{left}, entries {} -> {}", l.before, l.after),
        }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "filesystem": self.filesystem,
            "ext4_journal": ext4_journal(&self.dir),
            "file_bytes": self.content.len(),
            "last_sample_files": last.map(|l| l.iters),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    #[test]
    fn every_file_is_deleted_and_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.unlink", json!({}), None, tmp.path());
        let mut inst = ready(Unlink.prepare_here(&cell));
        for n in [1, 9, 4] {
            assert_eq!(inst.sample(n, &mut Timer::new()).unwrap(), Work::ops(n));
            let v = inst.verify();
            assert!(v.passed, "{v:?}");
            assert_eq!(v.observed, format!("0 of {n} files left, entries {n} -> 0"));
        }
        assert_eq!(entry_count(&tmp.path().join("unlink")).unwrap(), 0);
    }

    #[test]
    fn a_skipped_unlink_fails_the_verifier_and_is_cleaned_up() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.unlink", json!({}), Some("skip-unlink"), tmp.path());
        let mut inst = ready(Unlink.prepare_here(&cell));
        inst.sample(5, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert_eq!(v.expected, "0 of 5 files left, entries 5 -> 0");
        assert_eq!(v.observed, "1 of 5 files left (first: u0000002), entries 5 -> 1");
        assert_eq!(entry_count(&tmp.path().join("unlink")).unwrap(), 0, "the leftover is removed outside the window");
    }

    #[test]
    fn the_verifier_fails_when_the_count_is_off() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inst = UnlinkInstance::new(tmp.path().to_path_buf(), vec![1], false, "t".into());
        // A file of someone else's deleted too: the count dropped by one more.
        assert!(!inst.verify(&Outcome { iters: 3, before: 4, after: 0, remaining: 0, first_remaining: None }).passed);
    }
}
