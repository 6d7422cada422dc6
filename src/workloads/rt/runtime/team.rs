//! `team`: a fixed team of threads run the way OpenMP runs a program such as
//! NPB, the baseline a task runtime is measured against. There is no queue:
//! `join(a, b)` hands `b` to an idle member of the team (trying the members
//! after its own in order: with two members the same half goes to the same
//! member every time, like OpenMP's static schedule; with more, to whichever
//! is idle first) and runs it in place when none is idle; `for_each_task`
//! splits its tasks into one contiguous block per member and forks over the
//! blocks.
//!
//! What makes it OpenMP-like is how a member waits, for work or for the `b` it
//! handed out: it spins for up to [`SPIN`] (libgomp's default,
//! `OMP_WAIT_POLICY` unset, spins 300,000 pauses before it sleeps, about as
//! long), then parks until woken. A program with many short parallel phases
//! (NPB CG's ~1,900 per run) then never pays for waking a sleeping thread
//! between phases, where a runtime whose idle threads sleep early (rayon's,
//! the global queue's) pays it at every phase. With more members than CPUs to
//! run them, spinning would take the CPU from the member being waited for, so
//! a member then spins only [`SPIN_OVERSUBSCRIBED`] pauses (libgomp throttles
//! the same way).
//!
//! `install` hands its closure to member 0 and sleeps (the caller is not a
//! member, so exactly `workers` threads run tasks). A panicking task is caught
//! on its member and re-raised by whoever waits for it.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam::utils::CachePadded;

use super::job::{JobRef, StackJob};
use super::{Runtime, RuntimeCounters, start_pinned};

/// How long a waiting member spins before it sleeps.
pub const SPIN: Duration = Duration::from_millis(1);
/// How many pauses a waiting member spins before it sleeps when the team has
/// more members than CPUs to run them (libgomp's throttled count).
pub const SPIN_OVERSUBSCRIBED: u32 = 1000;

/// A member's mailbox states.
const IDLE: u8 = 0;
/// A forking thread has claimed the member and is writing the job.
const CLAIMED: u8 = 1;
/// The job is in the mailbox (or running).
const FULL: u8 = 2;

struct Member {
    state: AtomicU8,
    /// Written by the claimer between CLAIMED and FULL, taken by the member
    /// after it sees FULL.
    job: Mutex<Option<JobRef>>,
    thread: OnceLock<Thread>,
}

struct Shared {
    members: Vec<CachePadded<Member>>,
    /// Jobs handed to another member, per forking member (each slot written
    /// by that member only), the last slot for threads outside the team.
    handoffs: Vec<CachePadded<AtomicU64>>,
    shutdown: AtomicBool,
    /// Whether the team has more members than CPUs it may run on.
    oversubscribed: bool,
}

thread_local! {
    /// The calling thread's team (its `Shared`'s address; 0 outside any) and
    /// its index in it.
    static MEMBER: Cell<(usize, usize)> = const { Cell::new((0, usize::MAX)) };
}

impl Shared {
    /// The calling thread's index in this team (`usize::MAX` if it is not a
    /// member: a thread of another team is not one of this one).
    fn me(&self) -> usize {
        match MEMBER.with(Cell::get) {
            (team, i) if team == self as *const Shared as usize => i,
            _ => usize::MAX,
        }
    }

    /// Spins, then parks, until `ready()` holds or the team shuts down.
    fn wait(&self, ready: impl Fn() -> bool) {
        let started = Instant::now();
        let mut spins: u32 = 0;
        while !ready() {
            if self.shutdown.load(Ordering::Relaxed) {
                return;
            }
            let spinning = if self.oversubscribed {
                spins < SPIN_OVERSUBSCRIBED
            } else {
                // The clock is read every 64 pauses, not on each.
                !spins.is_multiple_of(64) || started.elapsed() < SPIN
            };
            if spinning {
                spins = spins.wrapping_add(1);
                std::hint::spin_loop();
            } else {
                // Whoever makes `ready()` true unparks this thread after it
                // does, so no wake-up is lost; a stale one only loops again.
                std::thread::park_timeout(Duration::from_millis(100));
            }
        }
    }

    /// An idle member other than `me`, claimed: the members after `me` first,
    /// in order.
    fn claim(&self, me: usize) -> Option<&Member> {
        let n = self.members.len();
        let start = if me < n { me + 1 } else { 0 };
        (0..n).map(|k| (start + k) % n).filter(|&i| i != me).map(|i| &*self.members[i]).find(|m| {
            m.state.load(Ordering::Relaxed) == IDLE && m.state.compare_exchange(IDLE, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })
    }

    fn member_loop(&self, i: usize) {
        MEMBER.with(|m| m.set((self as *const Shared as usize, i)));
        let me = &*self.members[i];
        loop {
            self.wait(|| me.state.load(Ordering::Acquire) == FULL);
            if self.shutdown.load(Ordering::Relaxed) && me.state.load(Ordering::Acquire) != FULL {
                return;
            }
            let job = me.job.lock().unwrap_or_else(|e| e.into_inner()).take().expect("a full mailbox holds a job");
            // Idle again before the job's owner sees it done, so that a fork
            // right after the owner's wait finds this member free.
            // SAFETY: the job's owner waits for it to be done; each mailbox
            // holds a job once.
            unsafe { job.execute_then(|| me.state.store(IDLE, Ordering::Release)) };
        }
    }
}

/// Gives `job` to the claimed member `m` and wakes it.
fn fill(m: &Member, job: JobRef) {
    *m.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    m.state.store(FULL, Ordering::Release);
    if let Some(t) = m.thread.get() {
        t.unpark();
    }
}

pub struct Team {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Team {
    /// Runs `b` on the claimed member `m` while `a` runs here, and returns
    /// both results once both are done (`b` must finish before this frame,
    /// which owns it, goes, even if `a` panicked). The wait for `b` spins
    /// first when `spin` (the caller is a member: its CPU is the team's) and
    /// sleeps at once otherwise.
    fn fork<RA, RB: Send>(&self, m: &Member, a: impl FnOnce() -> RA, b: impl FnOnce() -> RB + Send, spin: bool) -> (RA, RB) {
        let job_b = StackJob::waking_caller(b);
        fill(m, job_b.as_job_ref());
        let ra = catch_unwind(AssertUnwindSafe(a));
        if spin {
            self.shared.wait(|| job_b.done.load(Ordering::Acquire));
        }
        while !job_b.done.load(Ordering::Acquire) {
            std::thread::park();
        }
        let rb = job_b.into_result();
        (ra.unwrap_or_else(|p| resume_unwind(p)), rb)
    }
}

impl Runtime for Team {
    const NAME: &'static str = "team";

    fn build(workers: usize, cpus: Option<&[usize]>) -> anyhow::Result<Self> {
        let workers = workers.max(1);
        let usable = match cpus {
            Some(c) if !c.is_empty() => c.len(),
            _ => crate::measure::affinity::current_thread().map(|c| c.len()).unwrap_or(1),
        };
        let shared = Arc::new(Shared {
            members: (0..workers)
                .map(|_| CachePadded::new(Member { state: AtomicU8::new(IDLE), job: Mutex::new(None), thread: OnceLock::new() }))
                .collect(),
            handoffs: (0..=workers).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            shutdown: AtomicBool::new(false),
            oversubscribed: workers > usable,
        });
        let mut team = Team { shared: shared.clone(), threads: Vec::new() };
        let members = shared.clone();
        let started = start_pinned(&mut team.threads, workers, cpus, "team", move |i| members.member_loop(i));
        // The handles that forks unpark, before any fork can come.
        for (m, h) in shared.members.iter().zip(&team.threads) {
            let _ = m.thread.set(h.thread().clone());
        }
        started?; // a pinning failure: `team` is dropped, which stops the others
        Ok(team)
    }

    fn workers(&self) -> usize {
        self.threads.len()
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        if self.shared.me() < self.shared.members.len() {
            return f(); // already on the team
        }
        // Member 0 is idle between installs (nothing else hands it work).
        let m = loop {
            let m = &*self.shared.members[0];
            if m.state.compare_exchange(IDLE, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                break m;
            }
            std::thread::yield_now();
        };
        self.fork(m, || (), f, false).1
    }

    fn join<RA: Send, RB: Send>(&self, a: impl FnOnce() -> RA + Send, b: impl FnOnce() -> RB + Send) -> (RA, RB) {
        let me = self.shared.me();
        let Some(m) = self.shared.claim(me) else {
            return (a(), b());
        };
        self.shared.handoffs[me.min(self.shared.members.len())].fetch_add(1, Ordering::Relaxed);
        self.fork(m, a, b, true)
    }

    fn for_each_task(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        // One contiguous block of tasks per member (block k: tasks n k / W up
        // to n (k + 1) / W), forked in halves, the larger half first.
        fn blocks(team: &Team, n: usize, (lo, hi): (usize, usize), f: &(dyn Fn(usize) + Sync)) {
            let w = team.workers();
            if hi - lo <= 1 {
                return (n * lo / w..n * hi / w).for_each(f);
            }
            let mid = lo + (hi - lo).div_ceil(2);
            team.join(|| blocks(team, n, (lo, mid), f), || blocks(team, n, (mid, hi), f));
        }
        blocks(self, n, (0, self.workers()), f);
    }

    fn counters(&self) -> RuntimeCounters {
        RuntimeCounters {
            steals: Some(self.shared.handoffs.iter().map(|h| h.load(Ordering::Relaxed)).sum()),
            note: Some("team has no queue and no lock: a fork goes to an idle member (counted as steals) or runs in place"),
            ..RuntimeCounters::default()
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for h in self.threads.drain(..) {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}
