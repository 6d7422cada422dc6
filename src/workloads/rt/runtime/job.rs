//! Tasks that live on the stack of the thread that hands them out, shared by
//! the runtimes written here (`global-queue`, `team`): a [`StackJob`] holds
//! the closure and then its result, and a [`JobRef`] is the type-erased
//! pointer to it that a queue or a team member holds, as in rayon's
//! `StackJob`. The thread that made a job never returns before it is done.

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::Thread;

/// A type-erased pointer to a task that stays valid until it has run.
pub(super) struct JobRef {
    pub(super) data: *const (),
    /// Runs the task.
    body: unsafe fn(*const ()),
    /// Tells the task's owner it is done: the last access to the task.
    finish: unsafe fn(*const ()),
    /// The thread that made it ([`thread_number`]).
    pub(super) owner: usize,
}

// SAFETY: a JobRef is only created for tasks whose closures are `Send`, and the
// task it points to outlives its execution (its owner waits for it).
unsafe impl Send for JobRef {}

impl JobRef {
    /// A reference to a task whose `run` takes `data`, runs it and tells its
    /// owner, in one step.
    pub(super) fn new(data: *const (), run: unsafe fn(*const ())) -> JobRef {
        unsafe fn nothing(_: *const ()) {}
        JobRef { data, body: run, finish: nothing, owner: thread_number() }
    }

    /// # Safety
    /// The task behind `data` must still be alive and not yet have run.
    pub(super) unsafe fn execute(self) {
        // SAFETY: guaranteed by the caller.
        unsafe { self.execute_then(|| ()) }
    }

    /// Runs the task, then `between`, then tells its owner it is done:
    /// whatever `between` does, the owner sees it done after.
    ///
    /// # Safety
    /// As [`JobRef::execute`].
    pub(super) unsafe fn execute_then(self, between: impl FnOnce()) {
        // SAFETY: guaranteed by the caller; the task stays alive until `finish`.
        unsafe { (self.body)(self.data) };
        between();
        // SAFETY: as above.
        unsafe { (self.finish)(self.data) }
    }
}

/// A task on its owner's stack: its closure, then its result.
pub(super) struct StackJob<F, R> {
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<Result<R, Box<dyn Any + Send>>>>,
    pub(super) done: AtomicBool,
    /// A thread to unpark once `done` is set (the owner, when it may sleep
    /// waiting for the job).
    waiter: Option<Thread>,
}

impl<F: FnOnce() -> R + Send, R: Send> StackJob<F, R> {
    pub(super) fn new(f: F) -> Self {
        StackJob { func: UnsafeCell::new(Some(f)), result: UnsafeCell::new(None), done: AtomicBool::new(false), waiter: None }
    }

    /// A job whose runner unparks the calling thread when it is done.
    pub(super) fn waking_caller(f: F) -> Self {
        StackJob { waiter: Some(std::thread::current()), ..StackJob::new(f) }
    }

    pub(super) fn as_job_ref(&self) -> JobRef {
        JobRef { data: self as *const Self as *const (), body: Self::body, finish: Self::finish, owner: thread_number() }
    }

    /// # Safety
    /// `data` points to a live `StackJob<F, R>` that has not run yet; only one
    /// thread runs it (each JobRef is handed out once).
    unsafe fn body(data: *const ()) {
        // SAFETY: guaranteed by the caller; the job is alive until `done` is set.
        let job = unsafe { &*(data as *const Self) };
        // SAFETY: only this thread touches `func` and `result` until `done` is set.
        let f = unsafe { (*job.func.get()).take() }.expect("a task runs once");
        let r = catch_unwind(AssertUnwindSafe(f));
        // SAFETY: as above.
        unsafe { *job.result.get() = Some(r) };
    }

    /// # Safety
    /// `data` points to a live `StackJob<F, R>` whose body has run.
    unsafe fn finish(data: *const ()) {
        // SAFETY: guaranteed by the caller.
        let job = unsafe { &*(data as *const Self) };
        // Taken before `done`: once `done` is seen, the owner may free the job.
        let waiter = job.waiter.clone();
        job.done.store(true, Ordering::SeqCst);
        if let Some(t) = waiter {
            t.unpark();
        }
    }

    /// The result, once `done`; re-raises a panic of the task.
    pub(super) fn into_result(self) -> R {
        debug_assert!(self.done.load(Ordering::SeqCst));
        match self.result.into_inner().expect("a finished task has a result") {
            Ok(r) => r,
            Err(p) => resume_unwind(p),
        }
    }
}

thread_local! {
    /// This thread's number (0: not yet given one).
    static THREAD_NUMBER: Cell<usize> = const { Cell::new(0) };
}

/// The numbers given to threads so far.
static THREAD_NUMBERS: AtomicUsize = AtomicUsize::new(0);

/// A number for the calling thread, the same on every call, different from
/// every other thread's.
pub(super) fn thread_number() -> usize {
    THREAD_NUMBER.with(|n| {
        if n.get() == 0 {
            n.set(THREAD_NUMBERS.fetch_add(1, Ordering::Relaxed) + 1);
        }
        n.get()
    })
}
