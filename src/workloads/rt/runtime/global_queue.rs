//! `global-queue`: a pool of threads sharing one locked FIFO queue of tasks,
//! the "single global runnable queue" model of capOS's scheduler rows, which
//! fails to scale because every push and pop takes the same lock.
//!
//! The queue has two ends and one lock. Idle workers take the oldest task (the
//! biggest part of a recursion, as a thief would); `join(a, b)` queues `b`,
//! runs `a` itself, then helps by taking the newest task (usually its own `b`)
//! until `b` is done, sleeping on the queue's condition variable when there is
//! nothing to run. Taking the newest keeps helping in step with the recursion:
//! taking the oldest would stack one waiting task's frames on another's without
//! bound. `install` hands its closure to a pool thread, so exactly `workers`
//! threads ever run tasks.
//!
//! Tasks are closures living on the stack of the thread that queued them (as
//! in rayon's `StackJob`): the queue holds type-erased pointers to them, and
//! the queuing thread never returns before they are done.
//!
//! The queue counts, under its own lock (no atomic added): its longest
//! length, the acquisitions of the lock and those that found it held
//! (`try_lock` failed, then `lock`), and the tasks run by a thread other than
//! the one that queued them (steals, in a work-stealing runtime's words).

use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;

use super::job::{JobRef, StackJob, thread_number};
use super::{Runtime, RuntimeCounters, start_pinned};

/// A task of `for_each_task`: runs `f(i)` and counts down the batch.
struct BatchJob<'a> {
    i: usize,
    f: &'a (dyn Fn(usize) + Sync),
    remaining: &'a AtomicUsize,
    panic: &'a Mutex<Option<Box<dyn Any + Send>>>,
}

impl BatchJob<'_> {
    fn as_job_ref(&self) -> JobRef {
        JobRef::new(self as *const Self as *const (), Self::run)
    }

    /// # Safety
    /// `data` points to a live `BatchJob` whose batch has not been counted down
    /// to zero yet.
    unsafe fn run(data: *const ()) {
        // SAFETY: guaranteed by the caller; the batch outlives `remaining` > 0.
        let job = unsafe { &*(data as *const BatchJob<'_>) };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| (job.f)(job.i))) {
            job.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(p);
        }
        // Last access to the job.
        job.remaining.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How many tasks a waiting thread may run nested inside its waits before it
/// runs only its own (see `Shared::help_until`).
const MAX_HELP_DEPTH: usize = 64;

thread_local! {
    /// Tasks this thread is running inside waits, nested.
    static HELP_DEPTH: Cell<usize> = const { Cell::new(0) };
}

struct State {
    jobs: VecDeque<JobRef>,
    shutdown: bool,
    /// What the runtime counts, kept under the lock.
    counts: Counts,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    max_len: u64,
    acquisitions: u64,
    waits: u64,
    steals: u64,
}

impl State {
    /// Takes a task off the queue (`pop` chooses which) and counts it as a
    /// steal when another thread queued it.
    fn take(&mut self, pop: impl FnOnce(&mut VecDeque<JobRef>) -> Option<JobRef>) -> Option<JobRef> {
        let job = pop(&mut self.jobs)?;
        if job.owner != thread_number() {
            self.counts.steals += 1;
        }
        Some(job)
    }

    fn queued(&mut self) {
        self.counts.max_len = self.counts.max_len.max(self.jobs.len() as u64);
    }
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a task is queued, when one finishes while someone waits
    /// for it, and at shutdown.
    cond: Condvar,
    /// Threads sleeping until a task of theirs finishes.
    waiters: AtomicUsize,
}

impl Shared {
    /// Takes the lock, counting the acquisition and whether it found the
    /// lock held.
    fn lock(&self) -> MutexGuard<'_, State> {
        let mut g = match self.state.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
                g.counts.waits += 1;
                g
            }
        };
        g.counts.acquisitions += 1;
        g
    }

    fn push(&self, job: JobRef) {
        let mut st = self.lock();
        st.jobs.push_back(job);
        st.queued();
        drop(st);
        self.cond.notify_one();
    }

    fn push_all(&self, jobs: impl Iterator<Item = JobRef>) {
        let mut st = self.lock();
        st.jobs.extend(jobs);
        st.queued();
        drop(st);
        self.cond.notify_all();
    }

    /// After a task finished: wake the threads waiting for theirs.
    fn finished(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.lock();
            self.cond.notify_all();
        }
    }

    /// Runs queued tasks until `done()` holds, sleeping when there are none.
    ///
    /// A waiting thread that runs someone else's task stacks that task's
    /// frames on its own wait; across threads this could nest without bound.
    /// So below `MAX_HELP_DEPTH` nested helps it takes any task (the newest),
    /// and at the limit only a task of its own (`mine`: its `b`, or one of its
    /// batch), still queued, which it can always run: waits follow the task
    /// tree, so they always end.
    fn help_until(&self, done: impl Fn() -> bool, mine: impl Fn(*const ()) -> bool) {
        loop {
            let mut st = self.lock();
            if done() {
                // The wake-up that brought us here may have been meant for an
                // idle worker: pass it on while tasks wait.
                if !st.jobs.is_empty() {
                    self.cond.notify_one();
                }
                return;
            }
            let depth = HELP_DEPTH.with(Cell::get);
            let job = if depth < MAX_HELP_DEPTH {
                st.take(VecDeque::pop_back)
            } else {
                st.take(|jobs| jobs.iter().rposition(|j| mine(j.data)).and_then(|i| jobs.remove(i)))
            };
            if let Some(job) = job {
                drop(st);
                HELP_DEPTH.with(|d| d.set(depth + 1));
                // SAFETY: queued tasks are alive until they have run, and each
                // is popped once.
                unsafe { job.execute() };
                HELP_DEPTH.with(|d| d.set(depth));
                self.finished();
                continue;
            }
            // Counted before `done` is checked again under the lock, so that a
            // task finishing now sees us and notifies after we sleep.
            self.waiters.fetch_add(1, Ordering::SeqCst);
            if !done() {
                st = self.cond.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            self.waiters.fetch_sub(1, Ordering::SeqCst);
            drop(st);
        }
    }
}

pub struct GlobalQueue {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

fn worker_loop(shared: &Shared) {
    loop {
        let job = {
            let mut st = shared.lock();
            loop {
                if let Some(j) = st.take(VecDeque::pop_front) {
                    break j;
                }
                if st.shutdown {
                    return;
                }
                st = shared.cond.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        // SAFETY: queued tasks are alive until they have run; popped once.
        unsafe { job.execute() };
        shared.finished();
    }
}

impl Runtime for GlobalQueue {
    const NAME: &'static str = "global-queue";

    fn build(workers: usize, cpus: Option<&[usize]>) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { jobs: VecDeque::new(), shutdown: false, counts: Counts::default() }),
            cond: Condvar::new(),
            waiters: AtomicUsize::new(0),
        });
        let mut rt = GlobalQueue { shared: shared.clone(), threads: Vec::new() };
        // On a pinning failure `rt` is dropped, which stops the pool.
        start_pinned(&mut rt.threads, workers.max(1), cpus, "gq", move |_| worker_loop(&shared))?;
        Ok(rt)
    }

    fn workers(&self) -> usize {
        self.threads.len()
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        // Not a pool thread: wait for the answer on a channel of our own,
        // without running tasks (so exactly `workers` threads run them) and
        // without counting as a waiter (which would make every finished task
        // wake us).
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let job = StackJob::new(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        });
        self.shared.push(job.as_job_ref());
        let r = rx.recv().expect("the pool runs every queued task");
        // The worker still marks the job done after the send: wait for that,
        // a few instructions away, before the job's frame goes.
        while !job.done.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        job.into_result();
        r.unwrap_or_else(|p| resume_unwind(p))
    }

    fn join<RA: Send, RB: Send>(&self, a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB) {
        let job_b = StackJob::new(b);
        self.shared.push(job_b.as_job_ref());
        let ra = catch_unwind(AssertUnwindSafe(a));
        // `b` must finish before this frame (which owns it) goes, even if `a` panicked.
        let own = job_b.as_job_ref().data;
        self.shared.help_until(|| job_b.done.load(Ordering::SeqCst), |p| p == own);
        let rb = job_b.into_result();
        (ra.unwrap_or_else(|p| resume_unwind(p)), rb)
    }

    fn for_each_task(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        let remaining = AtomicUsize::new(n);
        let panic = Mutex::new(None);
        let jobs: Vec<BatchJob<'_>> = (0..n).map(|i| BatchJob { i, f, remaining: &remaining, panic: &panic }).collect();
        self.shared.push_all(jobs.iter().map(BatchJob::as_job_ref));
        let batch = jobs.as_ptr_range();
        let (start, end) = (batch.start as usize, batch.end as usize);
        self.shared.help_until(|| remaining.load(Ordering::SeqCst) == 0, |p| (start..end).contains(&(p as usize)));
        drop(jobs);
        if let Some(p) = panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
            resume_unwind(p);
        }
    }

    fn counters(&self) -> RuntimeCounters {
        let c = self.counts();
        RuntimeCounters {
            steals: Some(c.steals),
            queue_max_len: Some(c.max_len),
            lock_acquisitions: Some(c.acquisitions),
            lock_waits: Some(c.waits),
            note: None,
        }
    }
}

impl GlobalQueue {
    fn counts(&self) -> Counts {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).counts
    }
}

impl Drop for GlobalQueue {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.cond.notify_all();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}
