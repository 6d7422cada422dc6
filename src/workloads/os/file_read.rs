//! `os.file-read`: one operation opens a small file written at prepare, reads
//! its `bytes` bytes and closes it (the rvOS "file read 64B" benchmark). The
//! file stays in the page cache: this is the cost of the path, not the disk.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{Instance, ParamSpec, Prepared, TableShape, Timer, Unit, Verdict, Work, Workload, WorkloadSpec};
use crate::workloads::os::fs_common::{content, instance_dir, skip_or_fail};
use crate::workloads::scratch;

pub struct FileRead;

impl Workload for FileRead {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.file-read",
            group: "os",
            summary: "Open a small file, read it, close it",
            measures: "the cost of a path lookup and open, one read served from the page cache, and close: the fixed \
                       per-file overhead of small-file reads",
            unit: Unit::NsPerOp,
            timed_region: "per operation: open(O_RDONLY) of the file written at prepare, a read of its `bytes` bytes into \
                           a buffer allocated at prepare, close, and a comparison of the buffer with the bytes recorded at \
                           prepare (a mismatch counter); writing the file is outside, at prepare",
            total_window: None,
            verifier: "every read returned exactly the bytes recorded at prepare (a function of the seed): 0 mismatched reads",
            batched: true,
            params: vec![ParamSpec::int("bytes", "size of the file read", 1, 1 << 20, [64; 3])],
            faults: &["corrupt-file"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell) -> anyhow::Result<Prepared> {
        let bytes = cell.usize("bytes")?;
        let scratch = scratch::dir(cell)?;
        let expected = content(cell.seed, 0, bytes);
        let mut written = expected.clone();
        if cell.fault_is("corrupt-file") {
            // The fault writes a different first byte than the one recorded.
            written[0] ^= 0x5A;
        }
        let made = instance_dir(&scratch, "file-read").and_then(|dir| {
            let path = dir.join("data");
            std::fs::write(&path, &written)?;
            // One operation now: a kernel that refuses it skips the row here.
            File::open(&path)?.read_exact(&mut vec![0; bytes])?;
            Ok(path)
        });
        let path = match made {
            Ok(p) => p,
            Err(e) => return skip_or_fail("writing a file in the scratch directory", e),
        };
        let filesystem = scratch::filesystem_type(&path);
        Ok(Prepared::Ready(Box::new(FileReadInstance { buf: vec![0; bytes], path, expected, filesystem, last: None })))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Last {
    iters: u64,
    mismatches: u64,
}

struct FileReadInstance {
    path: PathBuf,
    /// The bytes prepare recorded as the file's contents.
    expected: Vec<u8>,
    buf: Vec<u8>,
    filesystem: String,
    last: Option<Last>,
}

impl Instance for FileReadInstance {
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        let mut mismatches = 0u64;
        timer.start();
        for _ in 0..iters {
            let mut f = File::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
            f.read_exact(&mut self.buf).with_context(|| format!("reading {}", self.path.display()))?;
            drop(f);
            mismatches += u64::from(self.buf != self.expected);
        }
        timer.stop();
        self.last = Some(Last { iters, mismatches });
        Ok(Work::ops(iters))
    }

    fn verify(&mut self) -> Verdict {
        let Some(l) = self.last else {
            return Verdict { passed: false, expected: "a sample".into(), observed: "no sample ran".into() };
        };
        let n = self.expected.len();
        let expected = format!("{} reads of the {n} B recorded at prepare, 0 mismatched", l.iters);
        if l.mismatches == 0 {
            return Verdict { passed: true, observed: format!("{} reads, 0 mismatched", l.iters), expected };
        }
        // The buffer holds the last read, the file never changes: show where it differs.
        let at = self.buf.iter().zip(&self.expected).position(|(a, b)| a != b);
        let diff = match at {
            Some(k) => format!("byte {k} read {:#04x}, recorded {:#04x}", self.buf[k], self.expected[k]),
            None => "the last read matched".into(),
        };
        Verdict { passed: false, expected, observed: format!("{} reads, {} mismatched ({diff})", l.iters, l.mismatches) }
    }

    fn details(&self) -> serde_json::Value {
        json!({ "filesystem": self.filesystem, "bytes": self.expected.len() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    #[test]
    fn reads_return_the_bytes_written_at_prepare() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.file-read", json!({"bytes": 64}), None, tmp.path());
        let mut inst = ready(FileRead.prepare(&cell));
        assert_eq!(inst.sample(10, &mut Timer::new()).unwrap(), Work::ops(10));
        let v = inst.verify();
        assert!(v.passed, "{v:?}");
        assert_eq!(std::fs::read(tmp.path().join("file-read/data")).unwrap().len(), 64);
    }

    #[test]
    fn a_corrupt_file_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.file-read", json!({"bytes": 64}), Some("corrupt-file"), tmp.path());
        let mut inst = ready(FileRead.prepare(&cell));
        inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.starts_with("3 reads, 3 mismatched (byte 0 read"), "{}", v.observed);
    }

    #[test]
    fn the_verifier_fails_without_a_sample_or_with_a_changed_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, b"abcd").unwrap();
        let mut inst =
            FileReadInstance { path: path.clone(), expected: b"abcd".to_vec(), buf: vec![0; 4], filesystem: "t".into(), last: None };
        assert!(!inst.verify().passed);
        std::fs::write(&path, b"abce").unwrap();
        inst.sample(2, &mut Timer::new()).unwrap();
        assert_eq!(inst.verify().observed, "2 reads, 2 mismatched (byte 3 read 0x65, recorded 0x64)");
    }
}
