//! runner::launcher: reaches the launched side of a run through a command
//! prefix (`--launcher "ssh host"`, `"srun -N1 --exclusive"`,
//! `"taskset -c 2-3"`...). Two processes start there, each as
//! `PREFIX REMOTE_EXE ...`: the envelope probe (`env --json`, which checks
//! that the launched proofbench is this version), then the run itself
//! (`remote-run`, [`crate::runner::remote`]), which runs the whole plan there.
//!
//! The prefix is split into words shell-style and never run through a shell.

use std::process::Command;

use crate::envelope::{Envelope, tool_info};
use crate::evidence::LauncherRecord;
use crate::model::{Stopped, UsageError};

use crate::process::helper::{HELPER_TIMEOUT, NoAnswer, run_helper};
use crate::runner::local::spawn::Invocation;

/// The placeholder a launcher template carries when `--hosts` is given.
pub const HOST: &str = "{host}";

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
