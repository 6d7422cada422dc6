//! The `sync` engine: one thread, one system call per block, nothing in
//! flight but the call in progress.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::{ReadEngine, Request, Tally, WriteEngine};
use crate::workloads::io::blocks::{AlignedBuf, BLOCK, Stamps};

/// `pread` of one block at a time into one aligned buffer.
pub struct SyncReader {
    file: File,
    buf: AlignedBuf,
    stamps: Stamps,
    reqs: Vec<Request>,
}

impl SyncReader {
    pub fn new(file: File, stamps: Stamps) -> SyncReader {
        SyncReader { file, buf: AlignedBuf::new(BLOCK), stamps, reqs: Vec::new() }
    }
}

impl ReadEngine for SyncReader {
    fn load(&mut self, reqs: &[Request]) {
        self.reqs.clear();
        self.reqs.extend_from_slice(reqs);
    }

    fn run(&mut self) -> io::Result<Tally> {
        let mut tally = Tally::default();
        let buf = &mut self.buf.as_mut_slice()[..BLOCK];
        for (i, r) in self.reqs.iter().enumerate() {
            let n = self.file.read_at(buf, r.offset)?;
            tally.check(&self.stamps, &buf[..n], i, r);
        }
        Ok(tally)
    }

    fn in_flight(&self) -> usize {
        1
    }
}

/// `pwrite` of one block at a time from one buffer, then `fsync(2)`.
pub struct SyncWriter {
    file: File,
    buf: AlignedBuf,
    block_bytes: usize,
    stamps: Stamps,
}

impl SyncWriter {
    /// `block_bytes` is a multiple of 4 KiB.
    pub fn new(file: File, block_bytes: usize, stamps: Stamps) -> SyncWriter {
        let mut buf = AlignedBuf::new(block_bytes);
        stamps.fill(buf.as_mut_slice(), 0, 0);
        SyncWriter { file, buf, block_bytes, stamps }
    }
}

impl WriteEngine for SyncWriter {
    fn write_all(&mut self, blocks: u64, generation: u64, skip: Option<u64>) -> io::Result<u64> {
        let mut written = 0;
        for b in 0..blocks {
            if skip == Some(b) {
                continue;
            }
            let offset = b * self.block_bytes as u64;
            let buf = &mut self.buf.as_mut_slice()[..self.block_bytes];
            for (p, page) in buf.chunks_exact_mut(BLOCK).enumerate() {
                self.stamps.stamp(page, offset + (p * BLOCK) as u64, generation);
            }
            self.file.write_all_at(buf, offset)?;
            written += self.block_bytes as u64;
        }
        Ok(written)
    }

    fn fsync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    fn in_flight(&self) -> usize {
        1
    }

    fn fsync_call(&self) -> &'static str {
        "fsync(2)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::io::engine::stamped_file;

    #[test]
    fn reads_check_every_block_and_count_the_wrong_ones() {
        let stamps = Stamps::new(1);
        let (_tmp, path) = stamped_file(8, &stamps);
        let mut e = SyncReader::new(File::open(&path).unwrap(), stamps);
        let b = BLOCK as u64;
        e.load(&[Request { offset: 3 * b, expect: 3 * b }, Request { offset: 0, expect: 0 }]);
        assert_eq!(e.run().unwrap(), Tally { reads: 2, ..Tally::default() });
        // The second read goes one block too far; a read past the end is short.
        e.load(&[Request { offset: 0, expect: 0 }, Request { offset: 5 * b, expect: 4 * b }, Request { offset: 8 * b, expect: 8 * b }]);
        let t = e.run().unwrap();
        assert_eq!((t.reads, t.mismatches, t.short), (3, 2, 1));
        let bad = t.first_bad.unwrap();
        assert_eq!((bad.index, bad.expect, bad.found.offset), (1, 4 * b, 5 * b));
    }

    #[test]
    fn writes_stamp_every_page_with_the_generation_and_skip_on_request() {
        let stamps = Stamps::new(2);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("w");
        let file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        let mut w = SyncWriter::new(file, 2 * BLOCK, stamps.clone());
        assert_eq!(w.write_all(3, 9, None).unwrap(), 6 * BLOCK as u64);
        w.fsync().unwrap();
        let data = std::fs::read(&path).unwrap();
        for (i, page) in data.chunks(BLOCK).enumerate() {
            assert_eq!(stamps.check_block(page, (i * BLOCK) as u64, 9), Ok(()));
        }
        assert_eq!(w.write_all(3, 10, Some(1)).unwrap(), 4 * BLOCK as u64);
        let data = std::fs::read(&path).unwrap();
        assert!(stamps.check_block(&data[2 * BLOCK..3 * BLOCK], 2 * BLOCK as u64, 10).is_err(), "block 1 kept generation 9");
        assert!(stamps.check_block(&data[4 * BLOCK..5 * BLOCK], 4 * BLOCK as u64, 10).is_ok());
    }
}
