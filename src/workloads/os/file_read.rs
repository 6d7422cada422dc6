//! `os.file-read`: one operation opens a small file written at prepare, reads
//! its `bytes` bytes and closes it (the rvOS "file read 64B" benchmark). The
//! file stays in the page cache: this is the cost of the path, not the disk.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::{content, instance_dir, skip_or_fail};
use crate::workloads::scratch;

pub struct FileRead;

/// The fault: every iteration of a sample but the first opens and closes
/// the file without reading it.
pub const SKIP_READ: &str = "skip-read";

/// Poisoned bytes in the buffer: one per this many, and the last two.
const POISON_STRIDE: usize = 4096;

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
            timed_region: "per operation: poisoning the buffer (allocated at prepare, one byte longer than the file: the \
                           bytes at 0, every 4 KiB, the file's last and the one after it set to differ from what the file \
                           holds there), open(O_RDONLY) of the file written at prepare, one read asking for `bytes` + 1 \
                           bytes (more only if it returns fewer than `bytes`), close, and a comparison of the count and \
                           the buffer with the bytes recorded at prepare (a mismatch counter); writing the file is \
                           outside, at prepare",
            total_window: None,
            verifier: "every read returned exactly the file's size and the bytes recorded at prepare (a function of the seed) \
                       into a buffer poisoned before it, so that a read skipped or cut short leaves a poisoned byte: 0 \
                       mismatched reads",
            batched: true,
            params: vec![ParamSpec::int("bytes", "size of the file read", 1, 1 << 20, [64; 3])],
            faults: &["corrupt-file", SKIP_READ],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let bytes = cell.usize("bytes")?;
        let scratch = cx.scratch_dir()?;
        let expected = content(cell.seed, 0, bytes);
        let mut written = expected.clone();
        if cx.fault_is("corrupt-file") {
            // The fault writes a different first byte than the one recorded.
            written[0] ^= 0x5A;
        }
        let made = instance_dir(scratch, "file-read").and_then(|dir| {
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
        Ok(Prepared::ready(FileReadInstance::new(path, expected, filesystem, cx.fault_is(SKIP_READ))))
    }
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    iters: u64,
    mismatches: Mismatches,
    /// The bytes the last read returned.
    got: usize,
}

struct FileReadInstance {
    path: PathBuf,
    /// The bytes prepare recorded as the file's contents.
    expected: Vec<u8>,
    /// `expected.len() + 1` bytes: the last catches a file grown longer.
    buf: Vec<u8>,
    /// The poisoned positions of `buf` and their poison values.
    poison: Vec<(usize, u8)>,
    filesystem: String,
    skip_read: bool,
}

impl FileReadInstance {
    fn new(path: PathBuf, expected: Vec<u8>, filesystem: String, skip_read: bool) -> FileReadInstance {
        let n = expected.len();
        // A poison byte differs from the byte the file holds there (the byte
        // after the file's end differs from 0, which nothing reads there).
        let mut at: Vec<usize> = (0..n).step_by(POISON_STRIDE).chain([n.saturating_sub(1), n]).collect();
        at.dedup();
        let poison = at.into_iter().map(|k| (k, !expected.get(k).copied().unwrap_or(0))).collect();
        FileReadInstance { path, buf: vec![0; n + 1], expected, poison, filesystem, skip_read }
    }
}

impl Instance for FileReadInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let n = self.expected.len();
        let mut mismatches = Mismatches::new();
        let mut got = 0usize;
        timer.start();
        for i in 0..iters {
            for &(k, v) in &self.poison {
                self.buf[k] = v;
            }
            let mut f = File::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
            got = 0;
            if self.skip_read && i > 0 {
                // The fault: no read, and no count to give it away (a loop
                // that trusts its buffer): only the poison can tell.
                got = n;
            } else {
                // One read asks for one byte more than the file: it returns
                // the file's size; a second read only after a short one.
                while got < n {
                    let k = f.read(&mut self.buf[got..]).with_context(|| format!("reading {}", self.path.display()))?;
                    if k == 0 {
                        break;
                    }
                    got += k;
                }
            }
            drop(f);
            mismatches.add_if(got != n || self.buf[..n] != self.expected[..]);
        }
        timer.stop();
        Ok((Work::ops(iters), Outcome { iters, mismatches, got }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let n = self.expected.len();
        let expected = format!("{} reads of the {n} B recorded at prepare, 0 mismatched", l.iters);
        if l.mismatches.is_empty() {
            return Check { passed: true, observed: format!("{} reads, 0 mismatched", l.iters), expected };
        }
        // The buffer holds the last read, the file never changes: show where it differs.
        let at = self.buf.iter().zip(&self.expected).position(|(a, b)| a != b);
        let poisoned = |k: usize| if self.poison.contains(&(k, self.buf[k])) { " (the poison: not read)" } else { "" };
        let diff = match at {
            _ if l.got != n => format!("the last read returned {} B", l.got),
            Some(k) => format!("byte {k} read {:#04x}{}, recorded {:#04x}", self.buf[k], poisoned(k), self.expected[k]),
            None => "the last read matched".into(),
        };
        Check { passed: false, expected, observed: format!("{} reads, {} mismatched ({diff})", l.iters, l.mismatches.count) }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
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
        let mut inst = ready(FileRead.prepare_here(&cell));
        assert_eq!(inst.sample(10, &mut Timer::new()).unwrap(), Work::ops(10));
        let v = inst.verify();
        assert!(v.passed, "{v:?}");
        assert_eq!(std::fs::read(tmp.path().join("file-read/data")).unwrap().len(), 64);
    }

    #[test]
    fn a_corrupt_file_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.file-read", json!({"bytes": 64}), Some("corrupt-file"), tmp.path());
        let mut inst = ready(FileRead.prepare_here(&cell));
        inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.starts_with("3 reads, 3 mismatched (byte 0 read"), "{}", v.observed);
    }

    #[test]
    fn the_verifier_fails_with_a_changed_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, b"abcd").unwrap();
        let mut inst = FileReadInstance::new(path.clone(), b"abcd".to_vec(), "t".into(), false);
        let (_, out) = inst.sample(2, &mut Timer::new()).unwrap();
        assert!(inst.verify(&out).passed);
        std::fs::write(&path, b"abce").unwrap();
        let (_, out) = inst.sample(2, &mut Timer::new()).unwrap();
        assert_eq!(inst.verify(&out).observed, "2 reads, 2 mismatched (byte 3 read 0x65, recorded 0x64)");
        for (content, observed) in [
            (&b"abcde"[..], "2 reads, 2 mismatched (the last read returned 5 B)"),
            (b"abc", "2 reads, 2 mismatched (the last read returned 3 B)"),
        ] {
            std::fs::write(&path, content).unwrap();
            let (_, out) = inst.sample(2, &mut Timer::new()).unwrap();
            assert_eq!(inst.verify(&out).observed, observed);
        }
    }

    #[test]
    fn a_skipped_read_leaves_the_poison_and_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let cell = test_cell("os.file-read", json!({"bytes": 10_000}), Some(SKIP_READ), tmp.path());
        let mut inst = ready(FileRead.prepare_here(&cell));
        inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify().passed, "the first read of a sample is done");
        inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.starts_with("3 reads, 2 mismatched (byte 0 read "), "{}", v.observed);
        assert!(v.observed.contains("(the poison: not read)"), "{}", v.observed);
    }
}
