//! The `io_uring` engine: one ring of `depth` entries (no SQPOLL, no IOPOLL:
//! what an unprivileged program gets everywhere), the file registered
//! (`IORING_REGISTER_FILES`) and one fixed buffer per slot
//! (`IORING_REGISTER_BUFFERS`), so that a request names both by index and
//! the kernel maps neither per request. The ring is set up with fio's flags
//! (see [`setup`]). Up to `depth` requests are in flight. The reader submits
//! each read in an `io_uring_enter` of its own as soon as a slot is free (as
//! fio does by default), then waits for at least one completion, checks each
//! completed block, and refills the queue; the writer submits the writes that
//! fit in one call.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

use io_uring::{IoUring, opcode, types};

use super::{ReadEngine, Request, Tally, WriteEngine};
use crate::workloads::io::blocks::{AlignedBuf, BLOCK, Stamps};

/// Why a ring could not be set up: the stage and the kernel's error.
#[derive(Debug)]
pub struct SetupError {
    pub stage: &'static str,
    pub error: io::Error,
}

impl SetupError {
    /// The reason of a skipped row when the kernel refused io_uring (or the
    /// memory it pins) to this process; `None` for other errors, which fail
    /// the row. `disabled` is `kernel.io_uring_disabled`, when readable.
    pub fn skip_reason(&self, disabled: Option<&str>) -> Option<String> {
        let e = &self.error;
        let sysctl = disabled.map(|d| format!(" (kernel.io_uring_disabled = {})", d.trim())).unwrap_or_default();
        match (self.stage, e.raw_os_error()) {
            ("io_uring_setup", Some(libc::ENOSYS)) => Some(format!("io_uring is not available: this kernel has no io_uring_setup ({e})")),
            ("io_uring_setup", Some(libc::EPERM | libc::EACCES)) => Some(format!("io_uring is disabled for this process{sysctl}: {e}")),
            ("registering the fixed buffers", Some(libc::ENOMEM | libc::EPERM)) => Some(format!(
                "io_uring could not pin its fixed buffers: {e}; the locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) is too low"
            )),
            _ => None,
        }
    }
}

/// The value of `kernel.io_uring_disabled`, for skip reasons.
pub fn disabled_sysctl() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok()
}

/// A ring with `file` registered as fixed file 0 and `slots` fixed buffers
/// of `slot_bytes` each.
struct Ring {
    ring: IoUring,
    bufs: AlignedBuf,
    slot_bytes: usize,
    slots: usize,
    /// The setup flags the kernel accepted, in words.
    setup: String,
    _file: File,
}

/// The setup flags tried, in turn, until the kernel accepts a set: an older
/// kernel refuses a flag it does not know with EINVAL, and fio's io_uring
/// engine drops flags in this order.
const SETUPS: [&[&str]; 4] = [&["CQSIZE", "COOP_TASKRUN", "SINGLE_ISSUER", "DEFER_TASKRUN"], &["CQSIZE", "COOP_TASKRUN"], &["CQSIZE"], &[]];

/// A ring of `entries` set up as fio's io_uring engine sets up its own: the
/// completion queue as long as the submission queue (`IORING_SETUP_CQSIZE`),
/// completion work run when this thread enters the kernel to wait, instead of
/// interrupting it (`COOP_TASKRUN`, `DEFER_TASKRUN`), and one thread
/// submitting (`SINGLE_ISSUER`, which `DEFER_TASKRUN` needs). Returns the ring
/// and the flags it got, in words.
fn setup(entries: u32) -> io::Result<(IoUring, String)> {
    for (i, flags) in SETUPS.iter().enumerate() {
        let mut b = IoUring::builder();
        for flag in *flags {
            match *flag {
                "CQSIZE" => b.setup_cqsize(entries),
                "COOP_TASKRUN" => b.setup_coop_taskrun(),
                "SINGLE_ISSUER" => b.setup_single_issuer(),
                _ => b.setup_defer_taskrun(),
            };
        }
        match b.build(entries) {
            Ok(ring) => {
                let words: Vec<String> = flags.iter().map(|f| format!("IORING_SETUP_{f}")).collect();
                return Ok((ring, if words.is_empty() { "none".into() } else { words.join(" | ") }));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && i + 1 < SETUPS.len() => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the last set has no flag and returns")
}

impl Ring {
    fn new(file: File, slots: usize, slot_bytes: usize) -> Result<Ring, SetupError> {
        let entries = u32::try_from(slots.max(1)).unwrap_or(u32::MAX);
        let (ring, setup) = setup(entries).map_err(|error| SetupError { stage: "io_uring_setup", error })?;
        ring.submitter().register_files(&[file.as_raw_fd()]).map_err(|error| SetupError { stage: "registering the file", error })?;
        let mut bufs = AlignedBuf::new(slots * slot_bytes);
        let base = bufs.as_mut_ptr();
        let iovecs: Vec<libc::iovec> =
            // SAFETY: every slot lies inside the `slots * slot_bytes` allocation.
            (0..slots).map(|i| libc::iovec { iov_base: unsafe { base.add(i * slot_bytes) }.cast(), iov_len: slot_bytes }).collect();
        // SAFETY: the buffers live in `bufs`, owned by the Ring and dropped
        // after the ring itself (field order), so the kernel never writes to
        // freed memory.
        unsafe { ring.submitter().register_buffers(&iovecs) }
            .map_err(|error| SetupError { stage: "registering the fixed buffers", error })?;
        Ok(Ring { ring, bufs, slot_bytes, slots, setup, _file: file })
    }

    fn slot_ptr(&mut self, slot: usize) -> *mut u8 {
        // SAFETY: `slot < slots`, so the slot lies inside the allocation.
        unsafe { self.bufs.as_mut_ptr().add(slot * self.slot_bytes) }
    }

    /// `submit_and_wait`, retried when a signal interrupts it.
    fn submit_and_wait(&self, want: usize) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) || e.raw_os_error() == Some(libc::EAGAIN) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Random block reads through a ring with registered file and buffers.
pub struct UringReader {
    ring: Ring,
    stamps: Stamps,
    reqs: Vec<Request>,
    free: Vec<u16>,
}

impl UringReader {
    /// A ring of `depth` (1..=32768) entries reading `file`.
    pub fn new(file: File, stamps: Stamps, depth: usize) -> Result<UringReader, SetupError> {
        let depth = depth.clamp(1, 32768);
        Ok(UringReader { ring: Ring::new(file, depth, BLOCK)?, stamps, reqs: Vec::new(), free: Vec::with_capacity(depth) })
    }
}

impl ReadEngine for UringReader {
    fn load(&mut self, reqs: &[Request]) {
        self.reqs.clear();
        self.reqs.extend_from_slice(reqs);
    }

    fn run(&mut self) -> io::Result<Tally> {
        let mut tally = Tally::default();
        let n = self.reqs.len();
        self.free.clear();
        self.free.extend((0..self.ring.slots as u16).rev());
        let (mut next, mut done) = (0usize, 0usize);
        while done < n {
            while next < n
                && let Some(slot) = self.free.pop()
            {
                let ptr = self.ring.slot_ptr(slot as usize);
                let sqe = opcode::ReadFixed::new(types::Fixed(0), ptr, BLOCK as u32, slot)
                    .offset(self.reqs[next].offset)
                    .build()
                    .user_data(((next as u64) << 16) | u64::from(slot));
                // SAFETY: the buffer slot stays untouched until its completion
                // is reaped below; the queue has room for every free slot.
                unsafe { self.ring.ring.submission().push(&sqe) }.map_err(|_| io::Error::other("submission queue full"))?;
                // Each read goes to the kernel on its own, as fio's io_uring
                // engine does by default (iodepth_batch_submit=1): the device
                // gets it at once instead of in a burst with the others
                // freed by the same wait (19% more reads per second on a
                // virtio disk, docs/METHODOLOGY.md).
                self.ring.submit_and_wait(0)?;
                next += 1;
            }
            self.ring.submit_and_wait(1)?;
            let Ring { ring, bufs, slot_bytes, .. } = &mut self.ring;
            for c in ring.completion() {
                let (ud, res) = (c.user_data(), c.result());
                let (slot, index) = ((ud & 0xFFFF) as usize, (ud >> 16) as usize);
                if res < 0 {
                    return Err(io::Error::from_raw_os_error(-res));
                }
                let data = &bufs.as_slice()[slot * *slot_bytes..slot * *slot_bytes + res as usize];
                tally.check(&self.stamps, data, index, &self.reqs[index]);
                self.free.push(slot as u16);
                done += 1;
            }
        }
        Ok(tally)
    }

    fn in_flight(&self) -> usize {
        self.ring.slots
    }

    fn setup(&self) -> Option<&str> {
        Some(&self.ring.setup)
    }
}

/// Sequential block writes through a ring with registered file and buffers,
/// then `IORING_OP_FSYNC` through the same ring.
pub struct UringWriter {
    ring: Ring,
    stamps: Stamps,
    free: Vec<u16>,
}

impl UringWriter {
    /// A ring of `depth` entries writing `file` in blocks of `block_bytes`
    /// (a multiple of 4 KiB).
    pub fn new(file: File, block_bytes: usize, stamps: Stamps, depth: usize) -> Result<UringWriter, SetupError> {
        let depth = depth.clamp(1, 32768);
        let mut ring = Ring::new(file, depth, block_bytes)?;
        stamps.fill(ring.bufs.as_mut_slice(), 0, 0);
        Ok(UringWriter { ring, stamps, free: Vec::with_capacity(depth) })
    }
}

impl WriteEngine for UringWriter {
    fn write_all(&mut self, blocks: u64, generation: u64, skip: Option<u64>) -> io::Result<u64> {
        let bs = self.ring.slot_bytes;
        self.free.clear();
        self.free.extend((0..self.ring.slots as u16).rev());
        let (mut next, mut in_flight, mut written) = (0u64, 0usize, 0u64);
        while next < blocks || in_flight > 0 {
            while next < blocks
                && let Some(&slot) = self.free.last()
            {
                if skip == Some(next) {
                    next += 1;
                    continue;
                }
                self.free.pop();
                let offset = next * bs as u64;
                let ptr = self.ring.slot_ptr(slot as usize);
                // SAFETY: the slot is free (no request in flight uses it).
                let buf = unsafe { std::slice::from_raw_parts_mut(ptr, bs) };
                for (p, page) in buf.chunks_exact_mut(BLOCK).enumerate() {
                    self.stamps.stamp(page, offset + (p * BLOCK) as u64, generation);
                }
                let sqe = opcode::WriteFixed::new(types::Fixed(0), ptr, bs as u32, slot).offset(offset).build().user_data(u64::from(slot));
                // SAFETY: the slot stays untouched until its completion is reaped.
                unsafe { self.ring.ring.submission().push(&sqe) }.map_err(|_| io::Error::other("submission queue full"))?;
                next += 1;
                in_flight += 1;
            }
            if in_flight == 0 {
                break;
            }
            self.ring.submit_and_wait(1)?;
            for c in self.ring.ring.completion() {
                let (ud, res) = (c.user_data(), c.result());
                if res < 0 {
                    return Err(io::Error::from_raw_os_error(-res));
                }
                if res as usize != bs {
                    return Err(io::Error::other(format!("short write: {res} of {bs} bytes")));
                }
                written += bs as u64;
                in_flight -= 1;
                self.free.push(ud as u16);
            }
        }
        Ok(written)
    }

    fn fsync(&mut self) -> io::Result<()> {
        let sqe = opcode::Fsync::new(types::Fixed(0)).build().user_data(u64::MAX);
        // SAFETY: no buffer is involved; the queue is empty between samples.
        unsafe { self.ring.ring.submission().push(&sqe) }.map_err(|_| io::Error::other("submission queue full"))?;
        self.ring.submit_and_wait(1)?;
        let res = self.ring.ring.completion().next().map(|c| c.result()).ok_or_else(|| io::Error::other("no fsync completion"))?;
        if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(()) }
    }

    fn in_flight(&self) -> usize {
        self.ring.slots
    }

    fn fsync_call(&self) -> &'static str {
        "IORING_OP_FSYNC"
    }

    fn setup(&self) -> Option<&str> {
        Some(&self.ring.setup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::io::engine::stamped_file;

    /// The engine, or `None` where this kernel refuses io_uring.
    fn reader(file: File, stamps: Stamps, depth: usize) -> Option<UringReader> {
        match UringReader::new(file, stamps, depth) {
            Ok(r) => Some(r),
            Err(e) if e.skip_reason(None).is_some() => None,
            Err(e) => panic!("{}: {}", e.stage, e.error),
        }
    }

    #[test]
    fn reads_at_depth_check_every_block() {
        let stamps = Stamps::new(4);
        let (_tmp, path) = stamped_file(64, &stamps);
        let Some(mut e) = reader(File::open(&path).unwrap(), stamps, 8) else { return };
        let b = BLOCK as u64;
        let reqs: Vec<Request> = (0..100u64).map(|i| Request { offset: (i * 13 % 64) * b, expect: (i * 13 % 64) * b }).collect();
        e.load(&reqs);
        assert_eq!(e.run().unwrap(), Tally { reads: 100, ..Tally::default() });
        let mut wrong = reqs.clone();
        wrong[42].offset = (wrong[42].offset + b) % (64 * b);
        e.load(&wrong);
        let t = e.run().unwrap();
        assert_eq!((t.reads, t.mismatches), (100, 1));
        assert_eq!(t.first_bad.unwrap().index, 42);
    }

    #[test]
    fn writes_at_depth_then_fsync_leave_every_page_stamped() {
        let stamps = Stamps::new(5);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("w");
        let file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        let mut w = match UringWriter::new(file, 2 * BLOCK, stamps.clone(), 4) {
            Ok(w) => w,
            Err(e) if e.skip_reason(None).is_some() => return,
            Err(e) => panic!("{}: {}", e.stage, e.error),
        };
        assert_eq!(w.write_all(10, 3, None).unwrap(), 20 * BLOCK as u64);
        w.fsync().unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 20 * BLOCK);
        for (i, page) in data.chunks(BLOCK).enumerate() {
            assert_eq!(stamps.check_block(page, (i * BLOCK) as u64, 3), Ok(()), "page {i}");
        }
        assert_eq!(w.write_all(10, 4, Some(9)).unwrap(), 18 * BLOCK as u64);
        w.fsync().unwrap();
        let data = std::fs::read(&path).unwrap();
        assert!(stamps.check_block(&data[18 * BLOCK..19 * BLOCK], 18 * BLOCK as u64, 4).is_err());
    }

    #[test]
    fn refusals_of_the_kernel_become_skip_reasons() {
        let e = |stage, errno| SetupError { stage, error: io::Error::from_raw_os_error(errno) };
        let r = e("io_uring_setup", libc::EPERM).skip_reason(Some("2\n")).unwrap();
        assert!(r.starts_with("io_uring is disabled for this process (kernel.io_uring_disabled = 2)"), "{r}");
        assert!(e("io_uring_setup", libc::ENOSYS).skip_reason(None).unwrap().contains("no io_uring_setup"));
        assert!(e("registering the fixed buffers", libc::ENOMEM).skip_reason(None).unwrap().contains("RLIMIT_MEMLOCK"));
        assert!(e("io_uring_setup", libc::EINVAL).skip_reason(None).is_none());
        assert!(e("registering the file", libc::EBADF).skip_reason(None).is_none());
    }
}
