//! `os.file-create`: one operation creates a new file in the instance's
//! private directory, writes `bytes` bytes to it and closes it (the rvOS "file
//! create+write 64B" benchmark). The files are read back and removed after
//! the timed window.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::{content, ext4_journal, instance_dir, skip_or_fail};
use crate::workloads::scratch;

pub struct FileCreate;

impl Workload for FileCreate {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.file-create",
            group: "os",
            summary: "Create a new file, write a few bytes to it, close it",
            measures: "the cost of creating a file through the VFS and the filesystem of the scratch directory (a new \
                       inode and directory entry) and of a small buffered write; no fsync, so the page cache absorbs the \
                       data. On ext4 without a journal, inode allocation skips inodes freed in the last 5 to 300 s, so the \
                       cost grows after many deletions (this workload's own removals and earlier cells' included)",
            unit: Unit::NsPerOp,
            timed_region: "per operation: open(O_WRONLY|O_CREAT|O_EXCL) of a new name in the private directory, one write \
                           of `bytes` bytes, close; the file names and contents are built before the window, and reading \
                           the files back and removing them happen after it",
            total_window: None,
            verifier: "after the window every file the sample created is read back: each has exactly `bytes` bytes, equal \
                       to the bytes written to it (a function of the seed and the file's index)",
            batched: true,
            params: vec![ParamSpec::int("bytes", "bytes written to each new file", 1, 1 << 20, [64; 3])],
            faults: &["short-write"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let bytes = cell.usize("bytes")?;
        let scratch = cx.scratch_dir()?;
        let dir = match instance_dir(scratch, "file-create") {
            Ok(d) => d,
            Err(e) => return skip_or_fail("creating a directory in the scratch directory", e),
        };
        // One operation now: a filesystem that refuses new files skips the row here.
        let probe = dir.join("probe");
        let tried = OpenOptions::new().write(true).create_new(true).open(&probe).and_then(|mut f| f.write_all(&[0; 1]));
        if let Err(e) = tried.and_then(|_| std::fs::remove_file(&probe)) {
            return skip_or_fail("creating a file in the scratch directory", e);
        }
        let filesystem = scratch::filesystem_type(&dir);
        Ok(Prepared::ready(FileCreateInstance::new(dir, bytes, cell.seed, cx.fault_is("short-write"), filesystem)))
    }
}

/// What one sample left behind.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    /// Files (each read back after the window) with the wrong size or contents, or unreadable.
    bad: Mismatches<String>,
}

struct FileCreateInstance {
    dir: PathBuf,
    bytes: usize,
    seed: u64,
    short_write: bool,
    filesystem: String,
    /// `paths[i]` is the i-th file of every sample; `contents[i * bytes..]` its bytes.
    paths: Vec<PathBuf>,
    contents: Vec<u8>,
}

impl FileCreateInstance {
    fn new(dir: PathBuf, bytes: usize, seed: u64, short_write: bool, filesystem: String) -> Self {
        FileCreateInstance { dir, bytes, seed, short_write, filesystem, paths: Vec::new(), contents: Vec::new() }
    }

    /// Names and contents for `n` files (built once, reused by every sample).
    fn ensure(&mut self, n: usize) {
        while self.paths.len() < n {
            let i = self.paths.len();
            self.paths.push(self.dir.join(format!("f{i:07}")));
            self.contents.extend(content(self.seed, i as u64, self.bytes));
        }
    }

    fn expected(&self, i: usize) -> &[u8] {
        &self.contents[i * self.bytes..(i + 1) * self.bytes]
    }
}

impl Instance for FileCreateInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let n = iters as usize;
        self.ensure(n);
        let b = self.bytes;
        // The fault writes one byte less to the middle file.
        let short = if self.short_write { Some(n / 2) } else { None };
        timer.start();
        for i in 0..n {
            let len = if short == Some(i) { b - 1 } else { b };
            let path = &self.paths[i];
            let mut f =
                OpenOptions::new().write(true).create_new(true).open(path).with_context(|| format!("creating {}", path.display()))?;
            f.write_all(&self.contents[i * b..i * b + len]).with_context(|| format!("writing {}", path.display()))?;
            drop(f);
        }
        timer.stop();
        let mut last = Outcome { iters, bad: Mismatches::new() };
        for (i, path) in self.paths[..n].iter().enumerate() {
            let problem = match std::fs::read(path) {
                Ok(data) if data.len() != b => Some(format!("{} is {} B, expected {b} B", name(path), data.len())),
                Ok(data) if data != self.expected(i) => Some(format!("{} has other bytes than were written", name(path))),
                Ok(_) => None,
                Err(e) => Some(format!("{} cannot be read back: {e}", name(path))),
            };
            if let Some(p) = problem {
                last.bad.record(|| p);
            }
        }
        for path in &self.paths[..n] {
            std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        Ok((Work::ops(iters), last))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("{} files of {} B with the bytes written (read back after the window)", l.iters, self.bytes);
        match &l.bad.first {
            None => Check { passed: true, observed: expected.clone(), expected },
            Some(first) => {
                Check { passed: false, expected, observed: format!("{} of {} files read back wrong; first: {first}", l.bad.count, l.iters) }
            }
        }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "filesystem": self.filesystem,
            "ext4_journal": ext4_journal(&self.dir),
            "bytes": self.bytes,
            "last_sample_files": last.map(|l| l.iters),
        })
    }
}

fn name(path: &std::path::Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{entry_count, ready, test_cell};

    fn instance(dir: &std::path::Path, short_write: bool) -> FileCreateInstance {
        FileCreateInstance::new(dir.to_path_buf(), 64, 9, short_write, "test".into())
    }

    #[test]
    fn files_are_created_verified_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inst = instance(tmp.path(), false);
        for n in [1, 7, 3] {
            let (w, out) = inst.sample(n, &mut Timer::new()).unwrap();
            assert_eq!(w, Work::ops(n));
            let v = inst.verify(&out);
            assert!(v.passed, "{v:?}");
            assert_eq!(entry_count(tmp.path()).unwrap(), 0, "the sample's files are removed");
        }
    }

    #[test]
    fn a_short_write_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inst = instance(tmp.path(), true);
        let (_, out) = inst.sample(5, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert_eq!(v.observed, "1 of 5 files read back wrong; first: f0000002 is 63 B, expected 64 B");
    }

    #[test]
    fn prepare_makes_a_private_directory_and_names_its_filesystem() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.file-create", json!({"bytes": 64}), None, tmp.path());
        let mut inst = ready(FileCreate.prepare_here(&cell));
        assert!(tmp.path().join("file-create").is_dir());
        inst.sample(2, &mut Timer::new()).unwrap();
        assert!(inst.verify().passed);
        assert!(inst.details()["filesystem"].is_string());
    }
}
