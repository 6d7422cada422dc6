//! The `io` group: what a storage stack charges for random 4 KiB reads and
//! sequential writes, through three I/O engines (an axis: plain `pread`, a
//! pool of threads doing `pread` as POSIX AIO does, and `io_uring` with
//! registered files and fixed buffers), buffered or with O_DIRECT.
//!
//! The files live in the cell's private scratch directory on the filesystem
//! `--io-dir` names (the runner removes it however the worker ends); their
//! sizes come from the machine (cache sizes, memory available, free disk,
//! [`sizing`]), and a cell whose file would not fit in the free space is
//! skipped before anything is written.

pub mod blocks;
pub mod engine;
pub mod randread;
pub mod seqwrite;
pub mod sizing;

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::model::{Named, named_enum};
use crate::workloads::contract::ParamSpec;

named_enum! {
    /// The I/O engines of io.randread's `engine` axis.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ReadEngineKind {
        /// One pread at a time.
        Sync = "sync",
        /// A pool of threads doing pread, as POSIX AIO does.
        Threadpool = "threadpool",
        /// io_uring with a registered file and fixed buffers.
        IoUring = "io_uring",
    }
}

named_enum! {
    /// The I/O engines of io.seqwrite's `engine` axis.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum WriteEngineKind {
        /// One pwrite per block, then fsync(2).
        Sync = "sync",
        /// WRITE_FIXED requests in flight, then IORING_OP_FSYNC.
        IoUring = "io_uring",
    }
}

/// The `engine` axis over the engines `E` names, every value in every profile.
pub fn engine_param<E: Named>(help: &'static str) -> ParamSpec {
    ParamSpec::axis_of::<E>("engine", help)
}

/// Opens `path` for reading, with `O_DIRECT` when `direct`.
pub fn open_read(path: &Path, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file: the kernel drops
/// its clean cached pages (dirty ones stay until written back).
pub fn drop_cached(file: &File) -> io::Result<()> {
    // SAFETY: a valid descriptor; the call only advises the kernel.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(rc)) }
}

/// The share (0 to 100) of the file's pages that are in the page cache now,
/// from `mincore(2)` on a read-only shared mapping of it.
pub fn resident_pct(path: &Path) -> io::Result<f64> {
    let file = File::open(path)?;
    let len = file.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0.0);
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
    // SAFETY: a fresh read-only shared mapping of an open file; checked below.
    let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: `addr` maps `len` bytes; `vec` has one byte per page of them.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = io::Error::last_os_error();
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return Err(err);
    }
    let resident = vec.iter().filter(|b| **b & 1 == 1).count();
    Ok(100.0 * resident as f64 / vec.len() as f64)
}

/// The direct-I/O alignment the kernel reports for a file (`statx` with
/// `STATX_DIOALIGN`, Linux 6.1+): memory and file-offset alignment in bytes.
/// `Some((0, 0))` means the file does not support direct I/O; `None` that the
/// kernel or filesystem does not say.
pub fn dio_alignment(path: &Path) -> Option<(u32, u32)> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statx is plain data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `stx` a valid out-pointer.
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, libc::STATX_DIOALIGN, &mut stx) };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

/// Whether an error opening or reading with `O_DIRECT` means the filesystem
/// refuses direct I/O (the row is then skipped, not failed).
pub fn direct_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn residency_follows_reads_and_dontneed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        std::fs::read(&path).unwrap();
        assert!(resident_pct(&path).unwrap() > 99.0);
        drop_cached(&f).unwrap();
        // Clean pages go at once on a disk filesystem; tmpfs keeps them (its pages are the file).
        let after = resident_pct(&path).unwrap();
        assert!((0.0..=100.0).contains(&after));
        assert!(resident_pct(Path::new("/no/such/file")).is_err());
    }

    #[test]
    fn engines_are_an_axis_in_every_profile() {
        let p = engine_param::<ReadEngineKind>("");
        for profile in [crate::model::Profile::Quick, crate::model::Profile::Full, crate::model::Profile::Seed] {
            assert_eq!(p.values(profile).len(), 3);
        }
        assert!(direct_refused(&io::Error::from_raw_os_error(libc::EINVAL)));
        assert!(!direct_refused(&io::Error::from_raw_os_error(libc::EIO)));
    }
}
