//! `rayon`: work stealing, the runtime a Rust user would reach for.

use super::{Runtime, RuntimeCounters, pin_worker};

pub struct Rayon {
    pool: ::rayon::ThreadPool,
}

impl Runtime for Rayon {
    const NAME: &'static str = "rayon";

    fn build(workers: usize, cpus: Option<&[usize]>) -> anyhow::Result<Self> {
        let pool = ::rayon::ThreadPoolBuilder::new().num_threads(workers.max(1)).thread_name(|i| format!("rayon-{i}")).build()?;
        // Pin every worker from inside it, so that failures come back here.
        let cpus = cpus.map(<[usize]>::to_vec);
        for r in pool.broadcast(|ctx| pin_worker(ctx.index(), cpus.as_deref())) {
            r?;
        }
        Ok(Rayon { pool })
    }

    fn workers(&self) -> usize {
        self.pool.current_num_threads()
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    fn join<RA: Send, RB: Send>(&self, a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB) {
        self.pool.join(a, b)
    }

    fn for_each_task(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        self.pool.scope(|s| {
            for i in 0..n {
                s.spawn(move |_| f(i));
            }
        });
    }

    fn counters(&self) -> RuntimeCounters {
        RuntimeCounters { note: Some("rayon does not expose steals (nor its deques' lengths)"), ..RuntimeCounters::default() }
    }
}
