//! The runner's side of a child process's pipes, never blocking and
//! bounded. Each end is non-blocking and the loop that owns it polls it
//! together with a wake-up pipe ([`Wake`]), so that a child that never reads
//! its stdin, one that never stops printing, or a process that keeps a pipe
//! open after the child ended cannot hold the runner past its timeout or a
//! stop signal; and what is kept of a child's output has a bound fixed in
//! advance. Nothing here starts a thread or reads a clock of its own.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

/// Bytes read from a pipe at a time.
const CHUNK: usize = 64 * 1024;

/// Makes this end of a pipe non-blocking. The child's end is another open
/// file description and stays as it was.
fn non_blocking(fd: &impl AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller owns; no memory involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What is still to be written to a child's stdin.
pub struct Outbox {
    pipe: Option<File>,
    data: Vec<u8>,
    sent: usize,
}

impl Outbox {
    /// `data`, to be written to `pipe` (the writing end of the child's stdin).
    pub fn new(pipe: impl Into<OwnedFd>, data: Vec<u8>) -> io::Result<Outbox> {
        let pipe = File::from(pipe.into());
        non_blocking(&pipe)?;
        Ok(Outbox { pipe: Some(pipe), data, sent: 0 })
    }

    /// The descriptor to poll for `POLLOUT`, while something is left to write.
    pub fn fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Writes what the pipe takes now. The pipe is closed once everything
    /// is written (the child reads the end of its input) or when the child
    /// closed its end (its status then says how it ended).
    pub fn pump(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else { return };
        while self.sent < self.data.len() {
            match pipe.write(&self.data[self.sent..]) {
                Ok(0) => break,
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.pipe = None;
    }
}

/// What a child writes on one pipe, kept up to a bound.
pub struct Inbox {
    pipe: Option<File>,
    kept: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl Inbox {
    /// Reads `pipe` (the reading end of a child's stdout or stderr),
    /// keeping at most `limit` bytes.
    pub fn new(pipe: impl Into<OwnedFd>, limit: usize) -> io::Result<Inbox> {
        let pipe = File::from(pipe.into());
        non_blocking(&pipe)?;
        Ok(Inbox { pipe: Some(pipe), kept: Vec::new(), limit, overflowed: false })
    }

    /// The descriptor to poll for `POLLIN`, until the end of the stream.
    pub fn fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Reads what is there now; the end of the stream closes the pipe. A
    /// byte beyond the bound closes it too, unread: the child has printed
    /// more than its bound ([`Inbox::overflowed`]), and nothing more of it
    /// is kept (a child still writing then gets `EPIPE`).
    pub fn pump(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else { return };
        let mut buf = [0u8; CHUNK];
        loop {
            let room = self.limit - self.kept.len();
            // One byte more than the room tells a full bound from an overflow.
            let want = (room + 1).min(CHUNK);
            match pipe.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => {
                    let keep = n.min(room);
                    // Grown by doubling, but never past the bound.
                    let len = self.kept.len();
                    if self.kept.capacity() - len < keep {
                        let target = (2 * self.kept.capacity()).clamp(len + keep, self.limit);
                        self.kept.reserve_exact(target - len);
                    }
                    self.kept.extend_from_slice(&buf[..keep]);
                    if n > room {
                        self.overflowed = true;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.pipe = None;
    }

    /// Whether the child printed more than the bound.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// What was kept (at most the bound), as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.kept).into_owned()
    }

    /// The bytes kept and the room reserved for them.
    #[cfg(test)]
    fn kept(&self) -> (usize, usize) {
        (self.kept.len(), self.kept.capacity())
    }
}

/// A pipe that wakes a polling loop: a thread or a signal handler that has
/// news for the loop calls [`Ring::ring`], and the loop's poll returns.
pub struct Wake {
    read: File,
    write: Arc<File>,
}

/// The writing side of a [`Wake`], for another thread.
#[derive(Clone)]
pub struct Ring(Arc<File>);

impl Ring {
    /// Makes the loop's next (or current) poll return. Never blocks: when
    /// the pipe is full, the loop has a wake-up pending already.
    pub fn ring(&self) {
        let _ = (&*self.0).write(&[1]);
    }
}

impl Wake {
    /// A new wake-up pipe, both ends non-blocking and closed on exec (no
    /// child inherits them).
    pub fn new() -> io::Result<Wake> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two descriptors just returned to this process, owned by nothing else.
        let (read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        Ok(Wake { read, write: Arc::new(write) })
    }

    /// A handle to wake the loop with, for another thread.
    pub fn ring(&self) -> Ring {
        Ring(Arc::clone(&self.write))
    }

    /// The descriptor the loop polls for `POLLIN`.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Empties the pipe after a wake-up.
    pub fn clear(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.read).read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// Waits until one of `fds` is ready (`libc::POLLIN` or `libc::POLLOUT`
/// as asked, or closed at the other end) or `timeout` has passed (`None`:
/// no limit). A signal arriving meanwhile ends the wait too. Returns
/// whether some descriptor is ready.
pub fn wait(fds: &[(RawFd, i16)], timeout: Option<Duration>) -> io::Result<bool> {
    let mut polled: Vec<libc::pollfd> = fds.iter().map(|&(fd, events)| libc::pollfd { fd, events, revents: 0 }).collect();
    // Rounded up, so that a wait does not end just before its deadline.
    let ms = timeout.map_or(-1, |t| t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32);
    // SAFETY: `polled` is a valid array of `polled.len()` pollfd structures.
    let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    if ready < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(ready > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe: (reading end, writing end), both blocking.
    fn pipe() -> (File, File) {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: two descriptors just returned to this process.
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    #[test]
    fn an_inbox_keeps_at_most_its_bound_of_64_mib_written_to_it() {
        let (r, w) = pipe();
        let limit = 4 << 20;
        let writer = std::thread::spawn(move || {
            let mut w = w;
            let block = vec![b'x'; 1 << 20];
            // Stops at EPIPE, when the inbox closed its end.
            (0..64).take_while(|_| w.write_all(&block).is_ok()).count()
        });
        let mut inbox = Inbox::new(r, limit).unwrap();
        while let Some(fd) = inbox.fd() {
            let _ = wait(&[(fd, libc::POLLIN)], None).unwrap();
            inbox.pump();
        }
        let written = writer.join().unwrap();
        assert!(inbox.overflowed(), "more than the bound was written");
        assert!(written < 64, "the writer was cut off, not read to its end ({written} MiB written)");
        let (len, capacity) = inbox.kept();
        assert_eq!(len, limit, "the bound is kept whole");
        assert!(capacity <= limit, "{capacity} bytes reserved for a bound of {limit}");
    }

    #[test]
    fn an_inbox_filled_exactly_to_its_bound_has_not_overflowed() {
        let (r, mut w) = pipe();
        w.write_all(b"0123456789").unwrap();
        drop(w);
        let mut inbox = Inbox::new(r, 10).unwrap();
        inbox.pump();
        assert_eq!((inbox.fd(), inbox.overflowed(), inbox.text().as_str()), (None, false, "0123456789"));
    }

    #[test]
    fn an_outbox_writes_what_the_pipe_takes_and_closes_when_done_or_refused() {
        let (mut r, w) = pipe();
        let data = vec![b'y'; 1 << 20];
        let mut outbox = Outbox::new(w, data.clone()).unwrap();
        outbox.pump();
        assert!(outbox.fd().is_some(), "a full pipe leaves the rest for later, without blocking");
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            got
        });
        while let Some(fd) = outbox.fd() {
            let _ = wait(&[(fd, libc::POLLOUT)], None).unwrap();
            outbox.pump();
        }
        assert_eq!(reader.join().unwrap(), data, "everything arrives, then the end of input");

        let (r, w) = pipe();
        drop(r);
        let mut outbox = Outbox::new(w, vec![b'z'; 10]).unwrap();
        outbox.pump();
        assert_eq!(outbox.fd(), None, "a reader that is gone ends the writing");
    }

    #[test]
    fn a_ring_from_another_thread_ends_a_wait_without_limit() {
        let wake = Wake::new().unwrap();
        let ring = wake.ring();
        let t = std::thread::spawn(move || ring.ring());
        assert!(wait(&[(wake.fd(), libc::POLLIN)], None).unwrap());
        t.join().unwrap();
        wake.clear();
        assert!(!wait(&[(wake.fd(), libc::POLLIN)], Some(Duration::ZERO)).unwrap(), "cleared: nothing pending");
    }
}
