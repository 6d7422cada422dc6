//! runner::launcher: reaches the launched side of a run through a command
//! prefix (`--launcher "ssh host"`, `"srun -N1 --exclusive"`,
//! `"taskset -c 2-3"`...). Two processes start there, each as
//! `PREFIX REMOTE_EXE ...`: the envelope probe (`env --json`, which checks
//! that the launched proofbench is this version), then the run itself
//! (`remote-run`, [`super::remote`]), which runs the whole plan there.
//!
//! The prefix is split into words shell-style and never run through a shell.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::envelope::{Envelope, tool_info};
use crate::evidence::LauncherRecord;
use crate::model::{Stopped, UsageError};

use super::pipes::{self, Inbox};
use super::spawn::Invocation;

/// The placeholder a launcher template carries when `--hosts` is given.
pub const HOST: &str = "{host}";

/// How long a launched helper command (the envelope probe, the preload
/// check, `mkdir`, `rm`) may take before its process group is killed.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(60);

/// One launcher: the prefix words for one host and the proofbench binary
/// they lead to.
#[derive(Clone, Debug, PartialEq)]
pub struct Launcher {
    /// `--launcher` as typed (with `{host}` when `--hosts` is given).
    pub template: String,
    /// The prefix words, `{host}` replaced.
    pub prefix: Vec<String>,
    /// The host of `--hosts` this launcher leads to.
    pub host: Option<String>,
    /// The proofbench binary on the launched side (`--remote-exe`).
    pub remote_exe: String,
    /// The `--hosts` invocation this launcher is one host of
    /// ([`new_submission`]); `None` for a run of one launcher.
    pub submission: Option<String>,
}

/// A new id for one `--hosts` invocation, which every host's run of it
/// carries: `hosts 20260101T000000Z-k3x9qa`, the time it starts here and
/// six random characters (two invocations started in the same second
/// differ).
pub fn new_submission() -> String {
    let now = crate::measure::clock::utc_now();
    let stamp: String = now.chars().filter(|c| c.is_ascii_digit() || matches!(c, 'T' | 'Z')).collect();
    format!("hosts {stamp}-{}", crate::evidence::dir::random_suffix(6))
}

/// What a launched helper command printed and how it ended.
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

impl Launcher {
    /// `--launcher 'ssh a'` (or `--launcher 'ssh {host}' for host a`): how
    /// error messages name this launcher.
    pub fn name(&self) -> String {
        match &self.host {
            Some(h) => format!("--launcher '{}' for host {h}", self.template),
            None => format!("--launcher '{}'", self.template),
        }
    }

    /// The prefix and `args` as one line, quoted so that a shell would
    /// split it back the same way.
    pub fn display(&self, args: &[&str]) -> String {
        let words: Vec<&str> = self.prefix.iter().map(String::as_str).chain(args.iter().copied()).collect();
        shlex::try_join(words.iter().copied()).unwrap_or_else(|_| words.join(" "))
    }

    /// `PREFIX ARGS...`, not started.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.prefix[0]);
        c.args(&self.prefix[1..]).args(args);
        c
    }

    /// `PREFIX [env K=V...] [WRAPPER...] EXE ARGS...`, EXE the invocation's
    /// or `--remote-exe`: environment variables do not cross ssh or srun, so
    /// they are in the argv.
    pub fn proofbench(&self, how: &Invocation, args: &[&str]) -> Command {
        let mut words: Vec<String> = Vec::new();
        if !how.env.is_empty() {
            words.push("env".into());
            words.extend(how.env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        words.extend(how.words(&self.remote_exe, args));
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        self.command(&words)
    }

    /// The record stored in run.json.
    pub fn record(&self) -> LauncherRecord {
        LauncherRecord {
            template: self.template.clone(),
            host: self.host.clone(),
            prefix: self.prefix.clone(),
            remote_exe: self.remote_exe.clone(),
            launched_from: std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_string()),
            submission: self.submission.clone(),
        }
    }

    /// Runs `PREFIX REMOTE_EXE env --json` and returns the launched side's
    /// envelope. Refuses (usage error naming the launcher) when the prefix
    /// cannot start, the command fails or times out, what it prints is not
    /// an envelope, or the launched proofbench is another version.
    pub fn probe_envelope(&self) -> anyhow::Result<Envelope> {
        let envelope = self.fetch_envelope()?;
        let (here, there) = (tool_info(), &envelope.tool);
        if there.name != here.name || there.version != here.version {
            return Err(UsageError(format!(
                "--remote-exe {}: the launched side runs {} {}, this is {} {}: install the same version there",
                self.remote_exe, there.name, there.version, here.name, here.version
            ))
            .into());
        }
        if there.git_commit != here.git_commit {
            crate::text::out::to_stderr(&format!(
                "proofbench: warning: {}: the launched side's proofbench was built from commit {}, this one from {}\n",
                self.name(),
                there.git_commit,
                here.git_commit
            ));
        }
        Ok(envelope)
    }

    /// `PREFIX REMOTE_EXE env --json`, parsed; no version check. A stop
    /// signal meanwhile ends the probe's process group at once
    /// ([`Stopped`]).
    fn fetch_envelope(&self) -> anyhow::Result<Envelope> {
        let shown = self.display(&[&self.remote_exe, "env", "--json"]);
        let out = run_helper(self.proofbench(&Invocation::default(), &["env", "--json"]), HELPER_TIMEOUT, true)
            .map_err(|e| UsageError(format!("{}: cannot start '{}': {e}", self.name(), self.prefix[0])))?;
        let out = match out {
            Ok(out) => out,
            Err(NoAnswer::TimedOut) => {
                return Err(UsageError(format!("{}: `{shown}` gave no answer within {} s", self.name(), HELPER_TIMEOUT.as_secs())).into());
            }
            Err(NoAnswer::Stopped) => return Err(Stopped(format!("{}: stopped while probing; nothing was run", self.name())).into()),
        };
        if out.code != Some(0) {
            let how = out.code.map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited with code {c}"));
            let hint = if out.code == Some(127) || out.code == Some(126) {
                " (is the launcher's program installed, and does --remote-exe name proofbench on the launched side?)"
            } else {
                ""
            };
            return Err(UsageError(format!("{}: `{shown}` {how}: {}{hint}", self.name(), out.last_error_line())).into());
        }
        let envelope: Envelope = serde_json::from_str(out.stdout.trim())
            .map_err(|e| UsageError(format!("{}: `{shown}` did not print a proofbench envelope ({e})", self.name())))?;
        Ok(envelope)
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
/// [`super::spawn::GRACE`]. Unlike a worker it is not stopped by SIGINT, so
/// the cleanup of an interrupted cell still runs.
pub fn capture(command: Command, timeout: Duration) -> std::io::Result<Option<Captured>> {
    Ok(run_helper(command, timeout, false)?.ok())
}

/// Why a helper gave no answer.
#[derive(Debug, PartialEq)]
enum NoAnswer {
    /// It did not end within its time.
    TimedOut,
    /// A stop signal arrived while it ran.
    Stopped,
}

/// [`capture`]; with `stoppable`, a stop signal (Ctrl-C, SIGTERM) kills
/// the helper's process group at once, as its timeout would.
fn run_helper(mut command: Command, timeout: Duration, stoppable: bool) -> std::io::Result<Result<Captured, NoAnswer>> {
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
    let drained_by = Instant::now() + super::spawn::GRACE;
    loop {
        let fds: Vec<_> = [out.fd(), err.fd()].into_iter().flatten().map(|fd| (fd, libc::POLLIN)).collect();
        let now = Instant::now();
        if fds.is_empty() || now >= drained_by || pipes::wait(&fds, Some(drained_by - now)).is_err() {
            break;
        }
        out.pump();
        err.pump();
    }
    let cut = overflowed(&out, &err)
        .map(|stream| format!("it printed more than {} on {stream}, and was killed", super::spawn::mib(HELPER_OUTPUT_LIMIT)));
    Ok(status.map(|st| Captured { stdout: out.text(), stderr: err.text(), code: if cut.is_some() { None } else { st.code() }, cut }))
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
