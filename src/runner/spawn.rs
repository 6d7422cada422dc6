//! Runs one worker child: cell JSON on stdin, one report line on stdout,
//! stderr into the cell's log. The child leads its own process group; on
//! timeout or interrupt the whole group gets SIGTERM, then SIGKILL after a
//! grace period, and any straggler in the group is killed after the worker
//! exits. The child is reaped with wait4, which gives its resource usage.
//!
//! A worker dies with the run: the process this one starts (the worker, or
//! the launcher or wrapper in front of it) asks the kernel for SIGKILL when
//! the runner's thread that started it ends (`PR_SET_PDEATHSIG`, set between
//! fork and exec; the runner starts every worker from its main thread, so
//! the signal comes when the runner itself ends, however it ends), and the
//! worker's guard ([`crate::worker::guard`]) takes everything below it down
//! with it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::evidence::ProcessRecord;
use crate::measure::rusage::Rusage;
use crate::worker::guard::PARENT_PID_ENV;
use crate::workloads::process::die_with_parent;

use super::signals;

/// Time between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(1);

/// What the waiting loop hears about.
pub enum Event {
    Exited { status: i32, rusage: Rusage },
    WaitFailed(io::Error),
    Interrupt,
}

/// The outcome of one worker process.
pub struct WorkerRun {
    /// Everything the worker printed on its report channel.
    pub stdout: String,
    pub process: ProcessRecord,
    /// A stop signal arrived while it ran (the worker was killed).
    pub interrupted: bool,
}

/// The name of a signal number, e.g. `SIGSEGV`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

fn kill_group(pgid: i32, sig: i32) {
    // SAFETY: sending a signal to a process group we created; no memory involved.
    unsafe { libc::kill(-pgid, sig) };
}

/// How a proofbench process of the measured side starts, beyond its
/// arguments: the binary (another build, for an `exe=` variant), the
/// environment it gets on top of this one's (`LD_PRELOAD` for a preloaded
/// allocator, a variant's `env=`), and a command prefix it runs under (a
/// variant's `launcher=`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Invocation {
    /// Another proofbench binary; `None`: the run's own.
    pub exe: Option<String>,
    pub env: Vec<(String, String)>,
    pub wrapper: Vec<String>,
}

impl Invocation {
    /// Only `LD_PRELOAD=lib`, when given.
    pub fn preload(lib: Option<&str>) -> Invocation {
        Invocation { env: lib.map(|l| vec![("LD_PRELOAD".to_string(), l.to_string())]).unwrap_or_default(), ..Invocation::default() }
    }

    /// The words that start it on this machine: `[WRAPPER...] EXE ARGS...`
    /// (its environment is set on the command, see [`local`]).
    pub fn words(&self, own_exe: &str, args: &[&str]) -> Vec<String> {
        let mut words = self.wrapper.clone();
        words.push(self.exe.clone().unwrap_or_else(|| own_exe.to_string()));
        words.extend(args.iter().map(|a| a.to_string()));
        words
    }
}

/// A local proofbench command, `[WRAPPER...] EXE ARGS...`, with the
/// invocation's environment set for it (and only for it). Without a
/// wrapper the process is proofbench itself, whose parent is this one: it
/// is told this process's pid ([`PARENT_PID_ENV`]) to check that.
pub fn local(own_exe: &Path, how: &Invocation, args: &[&str]) -> Command {
    let words = how.words(&own_exe.display().to_string(), args);
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]).envs(how.env.iter().map(|(k, v)| (k, v)));
    if how.wrapper.is_empty() {
        command.env(PARENT_PID_ENV, std::process::id().to_string());
    }
    command
}

/// Makes the process `command` starts die (SIGKILL) when the calling
/// thread ends, and not start at all when this process ended before that
/// was in force.
fn die_with_this_process(command: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe system calls (prctl, getppid); it allocates nothing.
    unsafe {
        command.pre_exec(move || if die_with_parent(me, libc::SIGKILL) { Ok(()) } else { Err(io::Error::from_raw_os_error(libc::ESRCH)) })
    };
}

/// Runs a worker `command` ([`local`], or the same through a
/// launcher) on one cell with a timeout.
pub fn run_worker(mut command: Command, cell_json: &str, log: File, timeout: Duration) -> io::Result<WorkerRun> {
    let started = Instant::now();
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::from(log)).process_group(0);
    die_with_this_process(&mut command);
    let mut child = command.spawn()?;
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel::<Event>();
    let waker = tx.clone();
    signals::set_waker(Some(Box::new(move || {
        let _ = waker.send(Event::Interrupt);
    })));
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: rusage is plain data; all-zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: valid out-pointers; `pid` is our child, reaped only here.
            let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            if rc == pid {
                let _ = tx.send(Event::Exited { status, rusage: Rusage::from_libc(&ru) });
                return;
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                let _ = tx.send(Event::WaitFailed(err));
                return;
            }
        }
    });
    if let Some(mut stdin) = child.stdin.take() {
        // A worker that dies early closes its end; the error shows in its status.
        let _ = stdin.write_all(cell_json.as_bytes());
    }
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (otx, orx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        let _ = otx.send(s);
    });

    enum Phase {
        Running,
        Terminating(Instant),
        Killed,
    }
    let mut phase = Phase::Running;
    let mut timed_out = false;
    let mut interrupted = false;
    if signals::interrupted() {
        interrupted = true;
        kill_group(pid, libc::SIGTERM);
        phase = Phase::Terminating(Instant::now());
    }
    let (status, rusage) = loop {
        let event = match phase {
            Phase::Running => rx.recv_timeout((started + timeout).saturating_duration_since(Instant::now())),
            Phase::Terminating(t) => rx.recv_timeout((t + GRACE).saturating_duration_since(Instant::now())),
            Phase::Killed => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match event {
            Ok(Event::Exited { status, rusage }) => break (Some(status), Some(rusage)),
            Ok(Event::WaitFailed(e)) => {
                kill_group(pid, libc::SIGKILL);
                signals::set_waker(None);
                return Err(e);
            }
            Ok(Event::Interrupt) => {
                interrupted = true;
                if matches!(phase, Phase::Running) {
                    kill_group(pid, libc::SIGTERM);
                    phase = Phase::Terminating(Instant::now());
                }
            }
            Err(RecvTimeoutError::Timeout) => match phase {
                Phase::Running => {
                    timed_out = true;
                    kill_group(pid, libc::SIGTERM);
                    phase = Phase::Terminating(Instant::now());
                }
                Phase::Terminating(_) | Phase::Killed => {
                    kill_group(pid, libc::SIGKILL);
                    phase = Phase::Killed;
                }
            },
            Err(RecvTimeoutError::Disconnected) => break (None, None),
        }
    };
    // Whatever is left of the group (children of the worker) goes too.
    kill_group(pid, libc::SIGKILL);
    signals::set_waker(None);
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let stdout = orx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    let mut process = ProcessRecord { pid: Some(pid as u32), timed_out, wall_ms, rusage, ..Default::default() };
    if let Some(st) = status {
        if libc::WIFEXITED(st) {
            process.exit_code = Some(libc::WEXITSTATUS(st));
        } else if libc::WIFSIGNALED(st) {
            let sig = libc::WTERMSIG(st);
            process.signal = Some(sig);
            process.signal_name = Some(signal_name(sig));
        }
    }
    Ok(WorkerRun { stdout, process, interrupted })
}
