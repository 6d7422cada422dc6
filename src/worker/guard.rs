//! The worker's guard: nothing a trial starts outlives the trial, nor the run.
//!
//! `proofbench worker` splits in two at its very start, while it has one
//! thread. The parent half, the guard, measures nothing: it is a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the trial starts
//! comes back to it when its own parent ends, whatever session or process
//! group it moved to; it waits, blocked in `sigwaitinfo`, for the worker
//! proper to end or for a stop signal, then kills (SIGKILL) and reaps every
//! process left below it and ends the way the worker did. The child half is
//! the worker proper ([`super::main`]): it dies with the guard
//! (`PR_SET_PDEATHSIG`), and is itself a subreaper, so that what a command
//! workload's command leaves running comes back to it after each sample.
//!
//! The guard learns that the run is gone from the kernel: it asks for
//! SIGTERM when its parent ends (`PR_SET_PDEATHSIG`; the runner starts
//! workers from its main thread, and the signal is tied to the thread), and
//! checks, right after asking, that its parent is still the runner (whose
//! pid the runner passes in [`PARENT_PID_ENV`] when nothing stands between
//! them), so that a runner killed before the request was in force is seen
//! too. The runner's timeout and interrupt (SIGTERM to the worker's process
//! group) reach it the same way.

use std::time::Duration;

use anyhow::bail;

use crate::workloads::process::{self, die_with_parent};

/// The environment variable by which the runner gives a worker it starts
/// itself (no launcher or wrapper between them) its own pid: the worker's
/// parent must be that process, or the run has already ended.
pub const PARENT_PID_ENV: &str = "PROOFBENCH_PARENT_PID";

/// How long the guard spends killing and reaping what is left: a process
/// stuck in the kernel cannot be reaped, and the runner sends SIGKILL one
/// second after SIGTERM.
const SWEEP_LIMIT: Duration = Duration::from_millis(500);

/// The signals the guard waits for: a child ended, or the trial must stop
/// (the runner's timeout or interrupt, or the runner's end).
const WAITED: [i32; 4] = [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialized by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &s in signals {
        // SAFETY: as above; `s` is a valid signal number.
        unsafe { libc::sigaddset(&mut set, s) };
    }
    set
}

/// Splits this process into the guard and the worker proper; returns in
/// the worker only (the guard never returns). Must run before anything
/// starts a thread.
pub fn split() -> anyhow::Result<()> {
    let expected = std::env::var(PARENT_PID_ENV).ok().and_then(|v| v.parse::<libc::pid_t>().ok());
    let threads = process::thread_count()?;
    if threads != 1 {
        // A library loaded into the worker (a preloaded allocator) started a
        // thread: forking now could leave one of its locks held forever in
        // the child. The worker then runs unguarded, still dying with the run.
        eprintln!(
            "proofbench worker: {threads} threads at start (a preloaded library's?): no guard; if the run is killed, \
             processes the trial started may outlive it"
        );
        // SAFETY: getppid has no preconditions.
        if !die_with_parent(expected.unwrap_or_else(|| unsafe { libc::getppid() }), libc::SIGKILL) {
            bail!("the run that started this worker has already ended");
        }
        return subreaper();
    }
    // SAFETY: this process has one thread (checked above): nothing reads
    // the environment meanwhile. What the workload starts must not see it.
    unsafe { std::env::remove_var(PARENT_PID_ENV) };
    let waited = signal_set(&WAITED);
    // SAFETY: an empty set, filled by sigprocmask.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Blocked before they can be sent, so that none is lost: the guard takes
    // them with sigwaitinfo.
    // SAFETY: valid sets; this is the only thread.
    if unsafe { libc::sigprocmask(libc::SIG_BLOCK, &waited, &mut before) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: getppid has no preconditions.
    let parent = expected.unwrap_or_else(|| unsafe { libc::getppid() });
    if !die_with_parent(parent, libc::SIGTERM) {
        bail!("the run that started this worker (pid {parent}) has already ended");
    }
    subreaper()?;
    // SAFETY: getpid has no preconditions.
    let guard_pid = unsafe { libc::getpid() };
    // SAFETY: this process has one thread (checked above), so the child
    // inherits a consistent address space, allocator included.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    if pid > 0 {
        guard(pid, &waited);
    }
    // The worker proper: the signals as they were, its death tied to the guard's.
    // SAFETY: a valid set saved above; this is the only thread.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
    if !die_with_parent(guard_pid, libc::SIGKILL) {
        bail!("the worker's guard (pid {guard_pid}) ended before the worker started");
    }
    subreaper()
}

/// Makes this process a child subreaper: what its descendants leave running
/// when their parents end comes to it.
fn subreaper() -> anyhow::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes a flag and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// The guard's life: wait for the worker to end or a stop signal, kill and
/// reap everything left, and end as the worker did (or by the stop signal).
fn guard(worker: libc::pid_t, waited: &libc::sigset_t) -> ! {
    // The cell and the report channel are the worker's: the runner sees the
    // report's end when the worker's copy closes.
    // SAFETY: closing this process's own standard input and output.
    unsafe {
        libc::close(0);
        libc::close(1);
    }
    // A lockstep pair's ends are the worker's too: with the guard holding
    // none, the runner sees the worker's death at once as their end.
    for fd in std::env::var(crate::measure::lockstep::ENV).iter().flat_map(|v| v.split(',')).filter_map(|f| f.trim().parse::<i32>().ok()) {
        if fd > 2 {
            // SAFETY: closing a descriptor the runner handed this process for the worker.
            unsafe { libc::close(fd) };
        }
    }
    let (mut status, mut stop) = (None, None);
    while status.is_none() && stop.is_none() {
        // SAFETY: `waited` is a valid set of signals blocked in this thread.
        let sig = unsafe { libc::sigwaitinfo(waited, std::ptr::null_mut()) };
        match sig {
            libc::SIGCHLD => status = process::reap_ended().into_iter().find(|(p, _)| *p == worker).map(|(_, s)| s),
            s if s > 0 => stop = Some(s),
            _ => {}
        }
    }
    if stop.is_some() {
        // SAFETY: `worker` is this process's child, not yet reaped.
        unsafe { libc::kill(worker, libc::SIGKILL) };
    }
    let (killed, reaped) = process::kill_children(SWEEP_LIMIT, &[]);
    if status.is_none() {
        status = reaped.iter().find(|(p, _)| *p == worker).map(|(_, s)| *s);
    }
    let left: Vec<String> = killed.iter().filter(|p| p.pid != worker).map(|p| p.shown()).collect();
    if !left.is_empty() {
        eprintln!("proofbench worker: killed {} process(es) the trial left running: {}", left.len(), left.join(", "));
    }
    if process::has_children() {
        eprintln!("proofbench worker: some processes of the trial could not be reaped within {} ms", SWEEP_LIMIT.as_millis());
    }
    match (stop, status) {
        (Some(sig), _) => end_by_signal(sig),
        (None, Some(st)) if libc::WIFSIGNALED(st) => end_by_signal(libc::WTERMSIG(st)),
        (None, Some(st)) if libc::WIFEXITED(st) => std::process::exit(libc::WEXITSTATUS(st)),
        _ => {
            eprintln!("proofbench worker: the worker (pid {worker}) could not be reaped");
            std::process::exit(1)
        }
    }
}

/// Ends this process by signal `sig`, as the worker ended (no core file:
/// the worker's, if any, is the one that matters).
fn end_by_signal(sig: i32) -> ! {
    let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on this process's own limits, signal
    // dispositions and mask; no memory of ours is kept by the kernel.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let only = signal_set(&[sig]);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
