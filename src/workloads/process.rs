//! Child processes: forking a child that runs a closure and exits (with
//! fixed-size messages over pipes) for the process-scale workloads, and
//! reading and ending the process tree below this process (its children, a
//! process group's members) for the worker and the command workloads, which
//! must leave nothing running.
//!
//! No process-wide state lives here: what a workload needs to know about the
//! worker process (the CPUs it started with, the descriptors its children
//! must close) comes through its `PrepareContext` (`workloads::contract`).

use std::io::{self, Read, Write};
use std::os::fd::RawFd;

/// The number of threads of this process (from /proc/self/task).
pub fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// Forks a child that runs `body` and `_exit`s with its return value (101 if
/// it panics); returns the child's pid in the parent. Never returns in the
/// child. `close_in_child` lists descriptors the child must not keep open
/// (other children's pipe ends, so that closing them in the parent is seen
/// as end-of-file by their readers, and the worker's report channel: a
/// workload forks through `PrepareContext::fork_child`, which adds it).
///
/// Refuses to fork when this process has more than one thread: only the
/// calling thread survives a fork, and a lock held by another thread (in the
/// allocator, say) would stay locked forever in the child.
///
/// The child dies with this process: it asks the kernel for SIGKILL when its
/// parent ends (`PR_SET_PDEATHSIG`), and exits at once if the parent has
/// already ended by then.
pub fn fork_child(close_in_child: &[RawFd], body: impl FnOnce() -> i32) -> io::Result<libc::pid_t> {
    let threads = thread_count()?;
    if threads != 1 {
        return Err(io::Error::other(format!("cannot fork worker processes from a process with {threads} threads")));
    }
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the process is single-threaded (checked above), so the child
    // inherits a consistent address space, allocator included.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(pid);
    }
    if !die_with_parent(parent, libc::SIGKILL) {
        // SAFETY: as below; the parent is gone, and with it whoever waited.
        unsafe { libc::_exit(126) }
    }
    for &fd in close_in_child {
        // SAFETY: closing descriptors this child inherited and must not hold.
        unsafe { libc::close(fd) };
    }
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
    // SAFETY: _exit ends the child without running the parent's exit
    // handlers or flushing buffers the parent owns.
    unsafe { libc::_exit(code) }
}

/// Asks the kernel to send `sig` to this process when the thread that
/// created it ends (`PR_SET_PDEATHSIG`), then checks that its parent is
/// still `parent`: false when the parent ended before the request was in
/// force (the process was already given to another). Async-signal-safe: it
/// may run between `fork` and `exec`.
pub fn die_with_parent(parent: libc::pid_t, sig: i32) -> bool {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and touches
    // no memory of ours; getppid has no preconditions.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) == 0 && libc::getppid() == parent }
}

/// One process as `/proc/PID/stat` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcInfo {
    pub pid: libc::pid_t,
    /// Its command name (at most 15 bytes).
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (a zombie, which runs nothing)...
    pub state: char,
    pub ppid: libc::pid_t,
    pub pgrp: libc::pid_t,
}

impl ProcInfo {
    /// Parses `/proc/PID/stat` text (the command name may hold spaces and
    /// parentheses: the fields after it start at the last `)`).
    pub fn parse(stat: &str) -> Option<ProcInfo> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let pid = stat[..open].trim().parse().ok()?;
        let comm = stat.get(open + 1..close)?.to_string();
        let mut f = stat[close + 1..].split_whitespace();
        let state = f.next()?.chars().next()?;
        let ppid = f.next()?.parse().ok()?;
        let pgrp = f.next()?.parse().ok()?;
        Some(ProcInfo { pid, comm, state, ppid, pgrp })
    }

    /// `sleep (pid 1234)`.
    pub fn shown(&self) -> String {
        format!("{} (pid {})", self.comm, self.pid)
    }
}

/// Every process this one can see, zombies included.
pub fn all_processes() -> Vec<ProcInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|s| ProcInfo::parse(&s))
        .collect()
}

/// Whether this process has any child, live or not yet reaped, without
/// reaping it (`waitid` with `WNOWAIT`): cheap enough to ask after every
/// sample, before reading `/proc`.
pub fn has_children() -> bool {
    // SAFETY: siginfo_t is plain data; all-zero is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves every child as it is.
    let rc = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ECHILD)
}

/// Reaps every child of this process that has ended, without waiting;
/// returns their pids and wait statuses.
pub fn reap_ended() -> Vec<(libc::pid_t, i32)> {
    let mut out = Vec::new();
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return out;
        }
        out.push((pid, status));
    }
}

/// Kills (SIGKILL) every child of this process but those in `spare`, until
/// it has no other left, and reaps them: once a child dies its own children
/// come to this process when it is a subreaper (`PR_SET_CHILD_SUBREAPER`),
/// so the whole tree below it goes, whatever sessions or process groups its
/// members moved to. Gives up after `limit` (a process stuck in the kernel
/// cannot be reaped). Returns the live processes it killed, and the
/// children it reaped (spared ones that had ended included) with their
/// wait statuses.
pub fn kill_children(limit: std::time::Duration, spare: &[libc::pid_t]) -> (Vec<ProcInfo>, Vec<(libc::pid_t, i32)>) {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let deadline = std::time::Instant::now() + limit;
    let (mut killed, mut reaped) = (Vec::<ProcInfo>::new(), Vec::new());
    loop {
        reaped.extend(reap_ended());
        if !has_children() {
            break;
        }
        let children: Vec<ProcInfo> = all_processes().into_iter().filter(|p| p.ppid == me).collect();
        let zombies = children.iter().any(|p| p.state == 'Z');
        let doomed: Vec<ProcInfo> = children.into_iter().filter(|p| p.state != 'Z' && !spare.contains(&p.pid)).collect();
        // Done when only spared children are left (a zombie is reaped first).
        if (doomed.is_empty() && !zombies) || std::time::Instant::now() >= deadline {
            break;
        }
        for p in doomed {
            // SAFETY: `p.pid` is a child of this process, not yet reaped, so
            // its pid cannot have been reused.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
            if !killed.iter().any(|k| k.pid == p.pid) {
                killed.push(p);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    (killed, reaped)
}

/// The live members of process group `pgrp` (zombies left out).
pub fn group_members(pgrp: libc::pid_t) -> Vec<ProcInfo> {
    all_processes().into_iter().filter(|p| p.pgrp == pgrp && p.state != 'Z').collect()
}

/// Whether process `pid` exists and is not a zombie: a dead process's pid
/// is either free or a zombie's until it is reaped. (A pid reused by another
/// process answers true, which errs on the safe side for every caller.)
pub fn alive(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => ProcInfo::parse(&s).is_some_and(|p| p.state != 'Z' && p.state != 'X'),
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

/// Waits for a child and returns its raw wait status.
pub fn wait_child(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(status);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Writes `N` little-endian u64 words.
pub fn write_words<const N: usize>(w: &mut impl Write, words: [u64; N]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(N * 8);
    for x in words {
        buf.extend_from_slice(&x.to_le_bytes());
    }
    w.write_all(&buf)
}

/// Reads `N` little-endian u64 words.
pub fn read_words<const N: usize>(r: &mut impl Read) -> io::Result<[u64; N]> {
    let mut out = [0u64; N];
    let mut b = [0u8; 8];
    for x in out.iter_mut() {
        r.read_exact(&mut b)?;
        *x = u64::from_le_bytes(b);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_whatever_the_command_name_holds() {
        let p = ProcInfo::parse("4242 (my (odd) name) S 1 4240 4240 0 -1 4194560 ...").unwrap();
        assert_eq!(p, ProcInfo { pid: 4242, comm: "my (odd) name".into(), state: 'S', ppid: 1, pgrp: 4240 });
        assert_eq!(p.shown(), "my (odd) name (pid 4242)");
        assert_eq!(ProcInfo::parse("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(alive(std::process::id() as i32));
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id() as i32;
        c.wait().unwrap();
        assert!(!alive(pid));
    }
}
