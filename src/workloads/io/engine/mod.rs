//! The I/O engines of the `engine` axis, each one type behind a small trait:
//! [`ReadEngine`] does a list of 4 KiB reads and checks every block it gets,
//! [`WriteEngine`] writes a file's blocks in order and flushes them.
//!
//! - `sync`: one thread, one `pread`/`pwrite` at a time.
//! - `threadpool`: `depth` threads taking reads from a shared list, each
//!   doing `pread`: the model of glibc's POSIX AIO, which runs requests on a
//!   pool of threads.
//! - `io_uring`: one ring of `depth` entries with the file registered and
//!   one fixed buffer per slot, `depth` requests in flight.

pub mod sync;
pub mod threadpool;
pub mod uring;

use std::io;

use super::blocks::{Found, Stamps};

/// One read: where to read, and the offset stamp the block must carry (the
/// same, unless a fault moves the read on purpose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub offset: u64,
    pub expect: u64,
}

/// The first read whose block failed its check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadRead {
    /// Position in the sample's list of reads.
    pub index: usize,
    /// The offset stamp it should have carried.
    pub expect: u64,
    pub found: Found,
}

/// What the reads of one sample returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Reads completed.
    pub reads: u64,
    /// Reads whose block failed its check (short reads included).
    pub mismatches: u64,
    /// Reads that returned fewer than 4 KiB.
    pub short: u64,
    pub first_bad: Option<BadRead>,
}

impl Tally {
    /// Counts one completed read of `data` for request `index`.
    #[inline]
    pub fn check(&mut self, stamps: &Stamps, data: &[u8], index: usize, req: &Request) {
        self.reads += 1;
        if let Err(found) = stamps.check_stamps(data, req.expect, 0) {
            self.mismatches += 1;
            self.short += u64::from(found.len < super::blocks::BLOCK);
            if self.first_bad.is_none_or(|b| index < b.index) {
                self.first_bad = Some(BadRead { index, expect: req.expect, found });
            }
        }
    }

    /// Adds another tally (from another thread) to this one.
    pub fn merge(&mut self, o: &Tally) {
        self.reads += o.reads;
        self.mismatches += o.mismatches;
        self.short += o.short;
        if let Some(b) = o.first_bad
            && self.first_bad.is_none_or(|mine| b.index < mine.index)
        {
            self.first_bad = Some(b);
        }
    }
}

/// An engine doing random block reads of one file.
pub trait ReadEngine {
    /// Takes the reads of the next sample (outside the work window).
    fn load(&mut self, reqs: &[Request]);
    /// Does every loaded read and checks each block as it completes: the
    /// work window.
    fn run(&mut self) -> io::Result<Tally>;
    /// Reads in flight at most.
    fn in_flight(&self) -> usize;
    /// How the engine's kernel interface was set up, where that can differ
    /// from machine to machine (io_uring's setup flags).
    fn setup(&self) -> Option<&str> {
        None
    }
}

/// An engine writing a file's blocks in order, then flushing them.
pub trait WriteEngine {
    /// Writes `blocks` blocks of the engine's block size from offset 0, each
    /// 4 KiB page stamped with its offset and `generation` just before it is
    /// handed to the kernel; `skip` leaves one block unwritten (a fault).
    /// Returns the bytes written.
    fn write_all(&mut self, blocks: u64, generation: u64, skip: Option<u64>) -> io::Result<u64>;
    /// Flushes the file to storage (`fsync`).
    fn fsync(&mut self) -> io::Result<()>;
    /// Writes in flight at most.
    fn in_flight(&self) -> usize;
    /// The call that flushes, in words.
    fn fsync_call(&self) -> &'static str;
    /// As [`ReadEngine::setup`].
    fn setup(&self) -> Option<&str> {
        None
    }
}

/// A file of `blocks` stamped blocks (generation 0) in a temp dir, for tests.
#[cfg(test)]
pub fn stamped_file(blocks: u64, stamps: &Stamps) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    let mut buf = vec![0u8; blocks as usize * super::blocks::BLOCK];
    stamps.fill(&mut buf, 0, 0);
    std::io::Write::write_all(&mut std::fs::File::create(&path).unwrap(), &buf).unwrap();
    (tmp, path)
}
