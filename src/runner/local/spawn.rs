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
use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, TryRecvError};
use std::time::{Duration, Instant};

use crate::evidence::ProcessRecord;
use crate::measure::rusage::Rusage;
use crate::model::MeasureSpec;
use crate::worker::guard::PARENT_PID_ENV;
use crate::workloads::process::die_with_parent;

use crate::process::pipes::{self, Inbox, Outbox, Wake};
use crate::process::signals;

/// Time between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(1);

/// What the waiting loop hears about.
pub enum Waited {
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
    /// The bound of its report channel, when it printed more than that
    /// ([`report_limit`]): what it printed is cut there, and the worker was
    /// stopped.
    pub report_overflow: Option<usize>,
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

/// Sends `sig` to the process group `pgid` (a worker's: its pid).
pub fn kill_group(pgid: i32, sig: i32) {
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

/// Room in a worker's report for what is not its samples (its details,
/// counters, facts and reason): far more than any workload needs.
pub const REPORT_ROOM: usize = 4 << 20;

/// Room in a worker's report for each sample it may take: a sample's JSON
/// is under 300 bytes even with every number at its longest.
pub const REPORT_ROOM_PER_SAMPLE: usize = 512;

/// The most samples a worker's report is given room for: a cell asking for
/// more (`--warmup` has no upper limit) gets a bound of this many.
const REPORT_SAMPLES_ROOM: u64 = 500_000;

/// The most a worker may print on its report channel (its stdout), bytes:
/// [`REPORT_ROOM`], the cell's own length (a report may echo parts of its
/// cell, such as a command's environment) and [`REPORT_ROOM_PER_SAMPLE`]
/// for each sample the cell may take (its warmup, and `--runs` or the
/// stopping rule's cap). Past it the worker is stopped and its trial fails
/// ([`WorkerRun::report_overflow`]): the runner never holds more of a
/// worker's output than this.
pub fn report_limit(measure: &MeasureSpec, cell_len: usize) -> usize {
    let samples = u64::from(measure.warmup) + u64::from(measure.fixed_runs.unwrap_or(measure.max_samples));
    REPORT_ROOM + cell_len + REPORT_ROOM_PER_SAMPLE * samples.min(REPORT_SAMPLES_ROOM) as usize
}

/// Runs a worker `command` ([`local`], or the same through a launcher) on
/// one cell with a timeout, keeping at most `report_limit` bytes of its
/// report channel ([`report_limit`]).
///
/// Everything it waits for is waited for in one poll: the worker's end (a
/// thread blocked in wait4 rings the loop), a stop signal (the signal
/// handler rings it), the cell going into the worker's stdin and its report
/// coming out of its stdout (both non-blocking, [`crate::process::pipes`]), and the
/// timeout. So a worker that never reads its cell, or prints without end,
/// still times out or is stopped by a signal; killing its process group
/// ends it, and with it the wait4 thread.
pub fn run_worker(command: Command, cell_json: &str, log: File, timeout: Duration, report_limit: usize) -> io::Result<WorkerRun> {
    run_worker_then(command, cell_json, log, timeout, report_limit, |_| {})
}

/// [`run_worker`], calling `started` with the worker's pid (its process
/// group's id too) as soon as it has started: a lockstep set closes its
/// copies of the worker's ends there and may stop a side that hangs.
pub fn run_worker_then(
    mut command: Command,
    cell_json: &str,
    log: File,
    timeout: Duration,
    report_limit: usize,
    started_then: impl FnOnce(i32),
) -> io::Result<WorkerRun> {
    let started = Instant::now();
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::from(log)).process_group(0);
    die_with_this_process(&mut command);
    let wake = Wake::new()?;
    let mut child = command.spawn()?;
    let pid = child.id() as i32;
    started_then(pid);
    let (tx, rx) = mpsc::channel::<Waited>();
    let (waker, ring) = (tx.clone(), wake.ring());
    signals::set_waker(Some(Box::new(move || {
        let _ = waker.send(Waited::Interrupt);
        ring.ring();
    })));
    let ring = wake.ring();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: rusage is plain data; all-zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let event = loop {
            // SAFETY: valid out-pointers; `pid` is our child, reaped only here.
            let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            if rc == pid {
                break Waited::Exited { status, rusage: Rusage::from_libc(&ru) };
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                break Waited::WaitFailed(err);
            }
        };
        let _ = tx.send(event);
        ring.ring();
    });
    let pipes = child.stdin.take().zip(child.stdout.take()).expect("stdin and stdout are piped");
    let (mut cell, mut report) = match (Outbox::new(pipes.0, cell_json.as_bytes().to_vec()), Inbox::new(pipes.1, report_limit)) {
        (Ok(c), Ok(r)) => (c, r),
        (Err(e), _) | (_, Err(e)) => return Err(stop(pid, e)),
    };

    enum Phase {
        Running,
        Terminating(Instant),
        Killed,
    }
    let mut phase = Phase::Running;
    let (mut timed_out, mut interrupted, mut overflowed) = (false, false, false);
    if signals::interrupted() {
        interrupted = true;
        kill_group(pid, libc::SIGTERM);
        phase = Phase::Terminating(Instant::now());
    }
    let (status, rusage) = loop {
        match rx.try_recv() {
            Ok(Waited::Exited { status, rusage }) => break (Some(status), Some(rusage)),
            Ok(Waited::WaitFailed(e)) => return Err(stop(pid, e)),
            Ok(Waited::Interrupt) => {
                interrupted = true;
                if matches!(phase, Phase::Running) {
                    kill_group(pid, libc::SIGTERM);
                    phase = Phase::Terminating(Instant::now());
                }
                continue;
            }
            Err(TryRecvError::Disconnected) => break (None, None),
            Err(TryRecvError::Empty) => {}
        }
        if report.overflowed() && matches!(phase, Phase::Running) {
            // The report is lost already: stop the worker now.
            overflowed = true;
            kill_group(pid, libc::SIGTERM);
            phase = Phase::Terminating(Instant::now());
        }
        let deadline = match phase {
            Phase::Running => Some(started + timeout),
            Phase::Terminating(t) => Some(t + GRACE),
            Phase::Killed => None,
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            if matches!(phase, Phase::Running) {
                timed_out = true;
                kill_group(pid, libc::SIGTERM);
                phase = Phase::Terminating(now);
            } else {
                kill_group(pid, libc::SIGKILL);
                phase = Phase::Killed;
            }
            continue;
        }
        let mut fds = vec![(wake.fd(), libc::POLLIN)];
        fds.extend(cell.fd().map(|fd| (fd, libc::POLLOUT)));
        fds.extend(report.fd().map(|fd| (fd, libc::POLLIN)));
        if let Err(e) = pipes::wait(&fds, deadline.map(|d| d - now)) {
            return Err(stop(pid, e));
        }
        wake.clear();
        cell.pump();
        report.pump();
    };
    // Whatever is left of the group (children of the worker) goes too.
    kill_group(pid, libc::SIGKILL);
    signals::set_waker(None);
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    drop(cell);
    // The rest of the report is in the pipe; a process outside the group
    // that still holds it open is not waited for.
    let drained_by = Instant::now() + GRACE;
    while let Some(fd) = report.fd() {
        let now = Instant::now();
        if now >= drained_by || pipes::wait(&[(fd, libc::POLLIN)], Some(drained_by - now)).is_err() {
            break;
        }
        report.pump();
    }
    let report_overflow = (overflowed || report.overflowed()).then_some(report_limit);
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
    Ok(WorkerRun { stdout: report.text(), process, interrupted, report_overflow })
}

/// Ends a worker whose run cannot go on (SIGKILL to its group, which also
/// ends the thread waiting for it) and passes on why.
fn stop(pid: i32, e: io::Error) -> io::Error {
    kill_group(pid, libc::SIGKILL);
    signals::set_waker(None);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log file for a worker's stderr, in a directory removed with it.
    fn log() -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("worker.log")).unwrap();
        (dir, f)
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_worker_that_never_reads_its_stdin_times_out_with_a_cell_larger_than_the_pipe() {
        let (_dir, log) = log();
        let cell = "x".repeat(2 << 20);
        let timeout = Duration::from_millis(300);
        let run = run_worker(sh("exec sleep 20"), &cell, log, timeout, 1 << 20).unwrap();
        assert!(run.process.timed_out, "{:?}", run.process);
        assert_eq!(run.process.signal_name.as_deref(), Some("SIGTERM"));
        let bound = (timeout + GRACE).as_secs_f64() * 1e3 + 2000.0;
        assert!(run.process.wall_ms < bound, "ended after {} ms, more than the timeout and the grace", run.process.wall_ms);
    }

    #[test]
    fn a_worker_printing_64_mib_is_stopped_at_the_bound_of_its_report() {
        let (_dir, log) = log();
        let limit = 4 << 20;
        let run = run_worker(sh("head -c 67108864 /dev/zero"), "{}", log, Duration::from_secs(60), limit).unwrap();
        assert_eq!(run.report_overflow, Some(limit));
        assert_eq!(run.stdout.len(), limit, "the bound is kept, nothing past it");
        assert!(!run.process.timed_out && run.process.exit_code != Some(0), "stopped, not ended of itself: {:?}", run.process);
    }

    #[test]
    fn a_worker_echoing_a_cell_larger_than_the_pipe_gets_it_whole_and_is_read_whole() {
        let (_dir, log) = log();
        let cell: String = (0..200_000).map(|i| format!("{i},")).collect();
        let run = run_worker(sh("cat"), &cell, log, Duration::from_secs(60), cell.len()).unwrap();
        assert_eq!((run.process.exit_code, run.report_overflow), (Some(0), None));
        assert!(run.stdout == cell, "{} of {} bytes came back", run.stdout.len(), cell.len());
    }

    #[test]
    fn a_report_has_room_for_every_sample_its_cell_may_take_and_for_the_cell() {
        let m = MeasureSpec::for_profile(crate::model::Profile::Quick);
        assert_eq!(report_limit(&m, 1000), REPORT_ROOM + 1000 + REPORT_ROOM_PER_SAMPLE * (m.warmup + m.max_samples) as usize);
        let runs = MeasureSpec { fixed_runs: Some(100_000), warmup: 2, ..m.clone() };
        assert_eq!(report_limit(&runs, 0), REPORT_ROOM + REPORT_ROOM_PER_SAMPLE * 100_002);
        let endless = MeasureSpec { warmup: u32::MAX, ..m };
        assert_eq!(report_limit(&endless, 0), REPORT_ROOM + REPORT_ROOM_PER_SAMPLE * 500_000, "bounded for any --warmup");
        // The longest sample there can be fits in its room.
        let longest = crate::evidence::SampleRecord {
            trial: u32::MAX,
            index: u32::MAX,
            warmup: false,
            iters: u64::MAX,
            ops: u64::MAX,
            bytes: u64::MAX,
            work_ns: u64::MAX,
            total_ns: Some(u64::MAX),
            value: -f64::MIN_POSITIVE * 3.0,
            total_value: Some(-f64::MAX / 3.0),
        };
        let len = serde_json::to_string(&longest).unwrap().len();
        assert!(len < 300, "{len} bytes");
    }
}
