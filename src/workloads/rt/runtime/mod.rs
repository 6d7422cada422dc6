//! Task runtimes: the `runtime` axis of the parallel workloads. A runtime is
//! one type behind the small [`Runtime`] trait; adding one is one file here and
//! one arm in [`prepare_with`].
//!
//! Workloads are generic over the runtime (the trait has generic methods, so
//! it is not object-safe): `prepare_with` builds the runtime the cell names and
//! hands it to the workload's [`Maker`], which returns the boxed instance.

pub mod global_queue;
mod job;
pub mod rayon;
pub mod spawn;
pub mod team;

use anyhow::Context;

use crate::model::{Cell, Profile};
use crate::workloads::contract::{ParamSpec, Prepared, Sampler};

pub use self::global_queue::GlobalQueue;
pub use self::rayon::Rayon;
pub use self::spawn::Spawn;
pub use self::team::Team;

/// A pool of worker threads that runs tasks.
///
/// Every call happens inside [`Runtime::install`]: code given to `install`,
/// `join` and `for_each_task` may itself call `join` and `for_each_task` on the
/// same runtime (captured by reference).
pub trait Runtime: Send + Sync + Sized + 'static {
    /// The value on the `runtime` axis.
    const NAME: &'static str;
    /// Whether millions of tiny tasks make sense (not for a thread per task).
    const FINE_GRAINED: bool = true;
    /// Whether `install` runs its closure on a thread of the pool (spawn has
    /// no pool: it runs it on the caller).
    const POOL: bool = true;

    /// Builds the pool: `workers` threads, worker i pinned to
    /// `cpus[i % cpus.len()]` when `cpus` is given. Pinning errors are errors.
    fn build(workers: usize, cpus: Option<&[usize]>) -> anyhow::Result<Self>;

    /// The number of worker threads.
    fn workers(&self) -> usize;

    /// Runs `f` on the runtime and returns its result.
    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R;

    /// Fork-join: runs `a` and `b`, possibly in parallel, and returns both
    /// results once both are done.
    fn join<RA: Send, RB: Send>(&self, a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB);

    /// Runs `f(i)` for every `i` in `0..n`, one task each, and returns when all
    /// have run. Tasks may block on each other only when `n <= workers()`.
    fn for_each_task(&self, n: usize, f: &(dyn Fn(usize) + Sync));

    /// What the runtime counted since it was built.
    fn counters(&self) -> RuntimeCounters;
}

/// What a runtime counts of its own scheduling, since it was built. Counted
/// where it costs nothing extra (under a lock the runtime takes anyway),
/// absent where the runtime cannot say (`note` says why).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeCounters {
    /// Tasks run by a thread other than the one that queued them.
    pub steals: Option<u64>,
    /// The longest the shared queue was, in tasks.
    pub queue_max_len: Option<u64>,
    /// Acquisitions of the queue's lock (not counting the re-acquisitions of
    /// a condition variable's wake-up).
    pub lock_acquisitions: Option<u64>,
    /// Of those, acquisitions that found the lock held and had to wait.
    pub lock_waits: Option<u64>,
    /// What is not counted, and why.
    pub note: Option<&'static str>,
}

impl RuntimeCounters {
    /// The row's `runtime_counters` detail: per-sample averages over
    /// `samples` (every sample the instance ran: calibration, warmup and
    /// timed, since the runtime counts them all), the queue's longest
    /// length as is.
    pub fn details(&self, samples: usize) -> serde_json::Value {
        let per = |v: Option<u64>| v.map(|v| v as f64 / samples.max(1) as f64);
        serde_json::json!({
            "samples": samples,
            "steals_per_sample": per(self.steals),
            "queue_max_len": self.queue_max_len,
            "lock_acquisitions_per_sample": per(self.lock_acquisitions),
            "lock_waits_per_sample": per(self.lock_waits),
            "note": self.note,
        })
    }
}

/// The task runtimes, in axis order: what the `rt` workloads compare.
pub const NAMES: [&str; 3] = [Rayon::NAME, GlobalQueue::NAME, Spawn::NAME];

/// Every runtime, in axis order: the task runtimes and `team`, the fixed
/// thread team that OpenMP programs (NPB's own) run on, which the `npb`
/// kernels also run on by default.
pub const ALL: [&str; 4] = [Rayon::NAME, GlobalQueue::NAME, Spawn::NAME, Team::NAME];

/// The `runtime` axis: the given runtimes (a subset of [`ALL`], the first the
/// default) in every profile; any of [`ALL`] on request.
pub fn runtime_param(names: &[&'static str]) -> ParamSpec {
    let values: Vec<serde_json::Value> = names.iter().map(|&n| n.into()).collect();
    ParamSpec::choice(
        "runtime",
        "the runtime: rayon (work stealing), global-queue (one locked queue), spawn (a thread per task), team (a fixed \
         thread team as OpenMP runs: forks go to idle members, waits spin before they sleep)",
        &ALL,
        [names[0]; 3],
    )
    .with_values(Profile::Quick, values.clone())
    .with_values(Profile::Full, values.clone())
    .with_values(Profile::Seed, values)
}

/// Builds a workload's instance on a runtime (boxed with
/// `contract::Sampled::boxed`).
pub trait Maker {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>>;
}

/// Builds the runtime the cell's `runtime` parameter names (with the cell's
/// worker count and pinning) and the instance on it. A workload of tiny tasks
/// (`fine_grained`) on a runtime that cannot run them does not apply
/// ([`Prepared::NotApplicable`], with the reason).
pub fn prepare_with(cell: &Cell, fine_grained: bool, maker: impl Maker) -> anyhow::Result<Prepared> {
    let name = cell.str("runtime")?;
    let workers = cell.worker_count();
    let cpus = cell.placement.cpus.as_deref();
    fn go<R: Runtime>(workers: usize, cpus: Option<&[usize]>, fine_grained: bool, maker: impl Maker) -> anyhow::Result<Prepared> {
        if fine_grained && !R::FINE_GRAINED {
            return Ok(Prepared::NotApplicable(format!(
                "the {} runtime starts a thread per task: not meaningful for this many tiny tasks",
                R::NAME
            )));
        }
        let rt = R::build(workers, cpus).with_context(|| format!("building the {} runtime with {workers} workers", R::NAME))?;
        maker.make(rt).map(Prepared::Ready)
    }
    match name {
        Rayon::NAME => go::<Rayon>(workers, cpus, fine_grained, maker),
        GlobalQueue::NAME => go::<GlobalQueue>(workers, cpus, fine_grained, maker),
        Spawn::NAME => go::<Spawn>(workers, cpus, fine_grained, maker),
        Team::NAME => go::<Team>(workers, cpus, fine_grained, maker),
        other => anyhow::bail!("unknown runtime '{other}'"),
    }
}

/// Starts `workers` pool threads named `{prefix}-{i}`, each pinning itself
/// ([`pin_worker`]) and then running `body(i)`, and pushes their handles onto
/// `threads`. Returns once every thread has pinned itself, or with the first
/// pinning error: the threads that did pin are then running `body`, and the
/// caller's `Drop` (which owns `threads`) must stop them.
pub(crate) fn start_pinned(
    threads: &mut Vec<std::thread::JoinHandle<()>>,
    workers: usize,
    cpus: Option<&[usize]>,
    prefix: &str,
    body: impl Fn(usize) + Send + Sync + 'static,
) -> anyhow::Result<()> {
    let body = std::sync::Arc::new(body);
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..workers {
        let (body, tx) = (body.clone(), tx.clone());
        let cpus = cpus.map(<[usize]>::to_vec);
        threads.push(std::thread::Builder::new().name(format!("{prefix}-{i}")).spawn(move || {
            let pinned = pin_worker(i, cpus.as_deref());
            let ok = pinned.is_ok();
            let _ = tx.send(pinned);
            drop(tx); // the caller reads until every sender is gone
            if ok {
                body(i);
            }
        })?);
    }
    drop(tx);
    rx.into_iter().collect()
}

/// Pins the calling thread to `cpus[i % cpus.len()]` when `cpus` is given.
pub(crate) fn pin_worker(i: usize, cpus: Option<&[usize]>) -> anyhow::Result<()> {
    if let Some(c) = cpus.filter(|c| !c.is_empty()) {
        let cpu = c[i % c.len()];
        crate::measure::affinity::pin_current_thread(cpu).with_context(|| format!("pinning worker {i} to CPU {cpu}"))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
