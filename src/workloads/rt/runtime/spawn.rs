//! `spawn`: a new OS thread per task (scoped threads), the baseline with no
//! pool at all. Only for coarse tasks: a million tiny tasks would be a
//! million threads, so such cells are skipped.

use super::{Runtime, pin_worker};

pub struct Spawn {
    workers: usize,
    cpus: Option<Vec<usize>>,
}

impl Runtime for Spawn {
    const NAME: &'static str = "spawn";
    const FINE_GRAINED: bool = false;

    fn build(workers: usize, cpus: Option<&[usize]>) -> anyhow::Result<Self> {
        // Threads come and go with the tasks: check now, on a throwaway thread,
        // that each CPU can be used, so the tasks' own pinning cannot fail.
        if let Some(c) = cpus {
            for i in 0..c.len() {
                std::thread::scope(|s| s.spawn(|| pin_worker(i, Some(c))).join().unwrap_or_else(|p| std::panic::resume_unwind(p)))?;
            }
        }
        Ok(Spawn { workers: workers.max(1), cpus: cpus.map(<[usize]>::to_vec) })
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        f()
    }

    fn join<RA: Send, RB: Send>(&self, a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB) {
        std::thread::scope(|s| {
            let cpus = self.cpus.as_deref();
            let h = s.spawn(move || {
                // `build` checked every CPU of the list.
                let _ = pin_worker(1, cpus);
                a()
            });
            let rb = b();
            (h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), rb)
        })
    }

    fn for_each_task(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        std::thread::scope(|s| {
            for i in 0..n {
                let cpus = self.cpus.as_deref();
                s.spawn(move || {
                    let _ = pin_worker(i, cpus);
                    f(i)
                });
            }
        });
    }
}
