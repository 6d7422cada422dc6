//! process::helper: a short command whose answer is needed (a launcher's
//! envelope probe, the preload check, `perf --version`, Slurm's client
//! calls), run in its own process group with its output captured, bounded
//! in time and in size. Its pipes are polled, never read blocking.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::pipes::{self, Inbox};

/// How long a child that was told to end (or whose process group was
/// killed) may keep its pipes open before they are given up on.
pub const DRAIN: Duration = Duration::from_secs(1);

/// How long a helper command (the envelope probe, the preload
/// check, `mkdir`, `rm`) may take before its process group is killed.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(60);

/// What a helper command printed and how it ended.
#[derive(Debug)]
pub struct Captured {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Its exit code; `None` when it was killed by a signal.
    pub code: Option<i32>,
    /// Why it was killed before it ended: it printed more than
    /// [`HELPER_OUTPUT_LIMIT`] on a stream (what it printed is cut there).
    pub cut: Option<String>,
}

impl Captured {
    /// For an error message: why it was cut short, else the last non-empty
    /// line of its stderr.
    pub fn last_error_line(&self) -> &str {
        if let Some(why) = &self.cut {
            return why;
        }
        self.stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("(nothing on stderr)")
    }
}

/// The most of a helper command's stdout, and of its stderr, that is kept
/// (an envelope is tens of KiB): a helper that prints more is killed
/// ([`Captured::cut`]).
pub const HELPER_OUTPUT_LIMIT: usize = 4 << 20;

/// Runs `command` (stdin closed, stdout and stderr captured, at most
/// [`HELPER_OUTPUT_LIMIT`] of each) in its own process group; `Ok(None)`
/// when it did not end within `timeout` (the group is then killed). Its
/// pipes are polled, never read blocking: a process outside the group that
/// keeps one open after the command ended is not waited for past
/// [`DRAIN`]. Unlike a worker it is not stopped by SIGINT, so
/// the cleanup of an interrupted cell still runs.
pub fn capture(command: Command, timeout: Duration) -> std::io::Result<Option<Captured>> {
    Ok(run_helper(command, timeout, false)?.ok())
}

/// Why a helper gave no answer.
#[derive(Debug, PartialEq)]
pub enum NoAnswer {
    /// It did not end within its time.
    TimedOut,
    /// A stop signal arrived while it ran.
    Stopped,
}

/// [`capture`]; with `stoppable`, a stop signal (Ctrl-C, SIGTERM) kills
/// the helper's process group at once, as its timeout would.
pub fn run_helper(mut command: Command, timeout: Duration, stoppable: bool) -> std::io::Result<Result<Captured, NoAnswer>> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = command.spawn()?;
    let pgid = child.id() as i32;
    // SAFETY: signalling the process group this function created; it may be empty.
    let kill = || unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let pipes = child.stdout.take().zip(child.stderr.take()).expect("stdout and stderr are piped");
    let (mut out, mut err) = match (Inbox::new(pipes.0, HELPER_OUTPUT_LIMIT), Inbox::new(pipes.1, HELPER_OUTPUT_LIMIT)) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => {
            kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let overflowed =
        |out: &Inbox, err: &Inbox| [("stdout", out), ("stderr", err)].into_iter().find_map(|(n, i)| i.overflowed().then_some(n));
    let started = Instant::now();
    let status = loop {
        // An overflow first: the command may have ended of it (EPIPE) meanwhile.
        let cut = overflowed(&out, &err).is_some();
        if !cut && let Some(st) = child.try_wait()? {
            break Ok(st);
        }
        let stopped = stoppable && super::signals::interrupted();
        if cut || stopped || started.elapsed() >= timeout {
            kill();
            let st = child.wait()?;
            break match (cut, stopped) {
                (true, _) => Ok(st),
                (false, true) => Err(NoAnswer::Stopped),
                (false, false) => Err(NoAnswer::TimedOut),
            };
        }
        // The exit is looked for every 5 ms, output as it comes.
        let fds: Vec<_> = [out.fd(), err.fd()].into_iter().flatten().map(|fd| (fd, libc::POLLIN)).collect();
        if let Err(e) = pipes::wait(&fds, Some(Duration::from_millis(5))) {
            kill();
            let _ = child.wait();
            return Err(e);
        }
        out.pump();
        err.pump();
    };
    // Stragglers of the group would hold the pipes open.
    kill();
    if matches!(status, Err(NoAnswer::Stopped)) {
        return Ok(Err(NoAnswer::Stopped));
    }
    let drained_by = Instant::now() + DRAIN;
    loop {
        let fds: Vec<_> = [out.fd(), err.fd()].into_iter().flatten().map(|fd| (fd, libc::POLLIN)).collect();
        let now = Instant::now();
        if fds.is_empty() || now >= drained_by || pipes::wait(&fds, Some(drained_by - now)).is_err() {
            break;
        }
        out.pump();
        err.pump();
    }
    let cut = overflowed(&out, &err).map(|stream| format!("it printed more than {} on {stream}, and was killed", mib(HELPER_OUTPUT_LIMIT)));
    Ok(status.map(|st| Captured { stdout: out.text(), stderr: err.text(), code: if cut.is_some() { None } else { st.code() }, cut }))
}

/// `bytes` in MiB with one decimal, as the messages about output bounds say it.
pub fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_reports_output_exit_codes_and_timeouts() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = capture(c, Duration::from_secs(30)).unwrap().unwrap();
        assert_eq!((out.stdout.as_str(), out.stderr.as_str(), out.code), ("out\n", "err\n", Some(3)));
        assert_eq!(out.last_error_line(), "err");
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 30"]);
        assert!(capture(c, Duration::from_millis(200)).unwrap().is_none(), "a hang is reported as no answer");
        assert!(capture(Command::new("/no/such/program"), Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_helper_printing_64_mib_is_killed_at_the_bound_and_says_so() {
        let mut c = Command::new("sh");
        c.args(["-c", "head -c 67108864 /dev/zero"]);
        let out = capture(c, Duration::from_secs(60)).unwrap().unwrap();
        assert_eq!((out.stdout.len(), out.code), (HELPER_OUTPUT_LIMIT, None));
        assert_eq!(out.last_error_line(), "it printed more than 4.0 MiB on stdout, and was killed");
    }

    #[test]
    fn a_helper_whose_background_child_keeps_its_output_open_is_not_waited_for() {
        // The child leaves the group (setsid: its group is then its own pid,
        // which the shell waits to see) and holds stdout and stderr open for 30 s.
        let mut c = Command::new("sh");
        c.args(["-c", "setsid sleep 30 & p=$!; while [ \"$(cut -d' ' -f5 /proc/$p/stat)\" != $p ]; do sleep 0.01; done; echo $p"]);
        let t = Instant::now();
        let out = capture(c, Duration::from_secs(20)).unwrap().unwrap();
        let waited = t.elapsed();
        let pid: i32 = out.stdout.trim().parse().unwrap();
        // SAFETY: ending the test's own straggler, whose pid it printed.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(out.code, Some(0));
        assert!(waited < Duration::from_secs(10), "waited {waited:?} for a process outside the group");
    }
}
