//! The `threadpool` engine: `threads` threads, started at prepare, take the
//! sample's reads from a shared list (an atomic cursor) and do each with
//! `pread` into their own aligned buffer. This is how glibc implements POSIX
//! AIO (`aio_read` hands the request to a pool of threads doing `pread`), so
//! its cost is the pool's: waking the threads, and one blocking call per
//! read on each.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, RwLock};
use std::thread::JoinHandle;

use super::{ReadEngine, Request, Tally};
use crate::workloads::io::blocks::{AlignedBuf, BLOCK, Stamps};

struct Shared {
    file: File,
    stamps: Stamps,
    reqs: RwLock<Vec<Request>>,
    cursor: AtomicUsize,
    /// Every thread and the caller meet here to start a sample (or to stop).
    start: Barrier,
    /// ...and here when the sample's reads are done.
    end: Barrier,
    stop: AtomicBool,
    /// The threads' tallies and the first error, merged as each finishes.
    result: Mutex<(Tally, Option<io::Error>)>,
}

/// A pool of threads doing `pread`.
pub struct PoolReader {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl PoolReader {
    /// Starts `threads` threads (at least 1) that wait for samples.
    pub fn new(file: File, stamps: Stamps, threads: usize) -> io::Result<PoolReader> {
        let n = threads.max(1);
        let shared = Arc::new(Shared {
            file,
            stamps,
            reqs: RwLock::new(Vec::new()),
            cursor: AtomicUsize::new(0),
            start: Barrier::new(n + 1),
            end: Barrier::new(n + 1),
            stop: AtomicBool::new(false),
            result: Mutex::new((Tally::default(), None)),
        });
        let mut pool = PoolReader { shared, threads: Vec::with_capacity(n) };
        for i in 0..n {
            let s = Arc::clone(&pool.shared);
            match std::thread::Builder::new().name(format!("io-pool-{i}")).spawn(move || worker(&s)) {
                Ok(h) => pool.threads.push(h),
                Err(e) => {
                    // The threads already started wait at the start barrier for
                    // n + 1 parties: release them without the missing ones.
                    pool.abandon();
                    return Err(e);
                }
            }
        }
        Ok(pool)
    }

    /// Ends a pool whose barrier can never fill: the started threads are
    /// left blocked (the process is about to report the error and exit).
    fn abandon(&mut self) {
        self.threads.clear();
    }
}

fn worker(s: &Shared) {
    let mut buf = AlignedBuf::new(BLOCK);
    loop {
        s.start.wait();
        if s.stop.load(Ordering::Acquire) {
            return;
        }
        let mut tally = Tally::default();
        let mut error = None;
        {
            let reqs = s.reqs.read().unwrap_or_else(|p| p.into_inner());
            let b = &mut buf.as_mut_slice()[..BLOCK];
            loop {
                let i = s.cursor.fetch_add(1, Ordering::Relaxed);
                let Some(r) = reqs.get(i) else { break };
                match s.file.read_at(b, r.offset) {
                    Ok(n) => tally.check(&s.stamps, &b[..n], i, r),
                    Err(e) => {
                        error = Some(e);
                        // Let the other threads finish the list quickly.
                        s.cursor.store(usize::MAX / 2, Ordering::Relaxed);
                        break;
                    }
                }
            }
        }
        {
            let mut res = s.result.lock().unwrap_or_else(|p| p.into_inner());
            res.0.merge(&tally);
            if res.1.is_none() {
                res.1 = error;
            }
        }
        s.end.wait();
    }
}

impl ReadEngine for PoolReader {
    fn load(&mut self, reqs: &[Request]) {
        let mut v = self.shared.reqs.write().unwrap_or_else(|p| p.into_inner());
        v.clear();
        v.extend_from_slice(reqs);
        self.shared.cursor.store(0, Ordering::Relaxed);
        *self.shared.result.lock().unwrap_or_else(|p| p.into_inner()) = (Tally::default(), None);
    }

    fn run(&mut self) -> io::Result<Tally> {
        self.shared.start.wait();
        self.shared.end.wait();
        let (tally, err) = std::mem::take(&mut *self.shared.result.lock().unwrap_or_else(|p| p.into_inner()));
        match err {
            Some(e) => Err(e),
            None => Ok(tally),
        }
    }

    fn in_flight(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for PoolReader {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.shared.stop.store(true, Ordering::Release);
        self.shared.start.wait();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::io::engine::stamped_file;

    #[test]
    fn every_read_is_done_once_by_the_pool_and_checked() {
        let stamps = Stamps::new(3);
        let (_tmp, path) = stamped_file(64, &stamps);
        let mut e = PoolReader::new(File::open(&path).unwrap(), stamps, 4).unwrap();
        assert_eq!(e.in_flight(), 4);
        let b = BLOCK as u64;
        let reqs: Vec<Request> = (0..200u64).map(|i| Request { offset: (i * 7 % 64) * b, expect: (i * 7 % 64) * b }).collect();
        for _ in 0..3 {
            e.load(&reqs);
            assert_eq!(e.run().unwrap(), Tally { reads: 200, ..Tally::default() });
        }
        let mut wrong = reqs.clone();
        wrong[150].offset += b;
        wrong[20].offset = 64 * b;
        e.load(&wrong);
        let t = e.run().unwrap();
        assert_eq!((t.reads, t.mismatches, t.short), (200, 2, 1));
        assert_eq!(t.first_bad.unwrap().index, 20, "the earliest bad read is reported, whichever thread saw it");
    }
}
