//! `spawn`: a new OS thread per task (scoped threads), the baseline with no
//! pool at all, but never more than `workers` threads running tasks at once:
//! `for_each_task` starts the next task's thread as soon as one ends, and `join` starts
//! a thread for its first closure only while fewer than `workers` task threads
//! run (otherwise it runs both closures in the calling thread). Only for
//! coarse tasks: a million tiny tasks would be a million threads, so such
//! cells are skipped.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Runtime, RuntimeCounters, pin_worker};

pub struct Spawn {
    workers: usize,
    cpus: Option<Vec<usize>>,
    /// Threads running tasks now, the calling thread included.
    running: AtomicUsize,
}

impl Runtime for Spawn {
    const NAME: &'static str = "spawn";
    const FINE_GRAINED: bool = false;
    const POOL: bool = false;

    fn build(workers: usize, cpus: Option<&[usize]>) -> anyhow::Result<Self> {
        // Threads come and go with the tasks: check now, on a throwaway thread,
        // that each CPU can be used, so the tasks' own pinning cannot fail.
        if let Some(c) = cpus {
            for i in 0..c.len() {
                std::thread::scope(|s| s.spawn(|| pin_worker(i, Some(c))).join().unwrap_or_else(|p| std::panic::resume_unwind(p)))?;
            }
        }
        Ok(Spawn { workers: workers.max(1), cpus: cpus.map(<[usize]>::to_vec), running: AtomicUsize::new(1) })
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        // The calling thread runs tasks too: worker 0's CPU.
        let _ = pin_worker(0, self.cpus.as_deref());
        f()
    }

    fn join<RA: Send, RB: Send>(&self, a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB) {
        let slot = self.running.fetch_add(1, Ordering::SeqCst);
        if slot >= self.workers {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return (a(), b());
        }
        std::thread::scope(|s| {
            let cpus = self.cpus.as_deref();
            let h = s.spawn(move || {
                // Frees the slot however `a` ends.
                struct Release<'a>(&'a AtomicUsize);
                impl Drop for Release<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, Ordering::SeqCst);
                    }
                }
                let _release = Release(&self.running);
                // `build` checked every CPU of the list.
                let _ = pin_worker(slot, cpus);
                a()
            });
            let rb = b();
            (h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), rb)
        })
    }

    fn for_each_task(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        // At most `workers` task threads at once; a new one starts as soon as
        // any finishes (no waves that wait for their slowest task) and takes
        // over the finished thread's slot, which decides its CPU when pinned.
        let (done_tx, done_rx) = crossbeam::channel::unbounded::<usize>();
        std::thread::scope(|s| {
            for i in 0..n {
                let slot = if i < self.workers { i } else { done_rx.recv().expect("a task thread reports its slot") };
                let (cpus, done) = (self.cpus.as_deref(), done_tx.clone());
                s.spawn(move || {
                    struct Free(crossbeam::channel::Sender<usize>, usize);
                    impl Drop for Free {
                        fn drop(&mut self) {
                            let _ = self.0.send(self.1);
                        }
                    }
                    let _free = Free(done, slot);
                    let _ = pin_worker(slot, cpus);
                    f(i)
                });
            }
        });
    }

    fn counters(&self) -> RuntimeCounters {
        RuntimeCounters { note: Some("spawn starts a thread per task: no queue, no steals"), ..RuntimeCounters::default() }
    }
}
