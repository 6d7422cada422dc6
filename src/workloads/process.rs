//! Child processes for process-scale workloads: fork a child that runs a
//! closure and exits, with fixed-size messages over pipes.

use std::io::{self, Read, Write};
use std::os::fd::RawFd;

/// The number of threads of this process (from /proc/self/task).
pub fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// Forks a child that runs `body` and `_exit`s with its return value (101 if
/// it panics); returns the child's pid in the parent. Never returns in the
/// child. `close_in_child` lists descriptors the child must not keep open
/// (other children's pipe ends), so that closing them in the parent is seen
/// as end-of-file by their readers.
///
/// Refuses to fork when this process has more than one thread: only the
/// calling thread survives a fork, and a lock held by another thread (in the
/// allocator, say) would stay locked forever in the child.
pub fn fork_child(close_in_child: &[RawFd], body: impl FnOnce() -> i32) -> io::Result<libc::pid_t> {
    let threads = thread_count()?;
    if threads != 1 {
        return Err(io::Error::other(format!("cannot fork worker processes from a process with {threads} threads")));
    }
    // SAFETY: the process is single-threaded (checked above), so the child
    // inherits a consistent address space, allocator included.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(pid);
    }
    for &fd in close_in_child.iter().chain(crate::worker::report_fd().as_slice()) {
        // SAFETY: closing descriptors this child inherited and must not hold.
        unsafe { libc::close(fd) };
    }
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
    // SAFETY: _exit ends the child without running the parent's exit
    // handlers or flushing buffers the parent owns.
    unsafe { libc::_exit(code) }
}

/// Waits for a child and returns its raw wait status.
pub fn wait_child(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(status);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Writes `N` little-endian u64 words.
pub fn write_words<const N: usize>(w: &mut impl Write, words: [u64; N]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(N * 8);
    for x in words {
        buf.extend_from_slice(&x.to_le_bytes());
    }
    w.write_all(&buf)
}

/// Reads `N` little-endian u64 words.
pub fn read_words<const N: usize>(r: &mut impl Read) -> io::Result<[u64; N]> {
    let mut out = [0u64; N];
    let mut b = [0u8; 8];
    for x in out.iter_mut() {
        r.read_exact(&mut b)?;
        *x = u64::from_le_bytes(b);
    }
    Ok(out)
}
