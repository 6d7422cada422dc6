//! Running a command workload in the worker: prepare (outside any timed
//! window), one run of the command per sample, the verifier on each run's
//! exit code and output, cleanup when the instance ends.
//!
//! A run of a command leaves nothing behind. The command leads a process
//! group of its own; its output is read as it comes, into bounded memory
//! ([`super::output`]), and the run ends when the command itself exits:
//! then whatever it left running is killed (SIGKILL), the members of its
//! process group and, since the worker is a child subreaper
//! ([`crate::worker::guard`]), whatever left the group (`setsid`) and came
//! back to the worker when its parent ended. A background process holding
//! the output open thus never holds the sample up; what was killed is said
//! in the row's `details` (`left_running`) and in the log.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use regex::Regex;
use serde_json::json;

use super::output::{self, Stream};
use super::{placeholder, shown};
use crate::model::command::CommandDef;
use crate::model::{Cell, value_text};
use crate::text::markdown::code;
use crate::workloads::contract::{Check, Instance, Prepared, Timer, Work};
use crate::workloads::process;

/// How long the output is still read after the command exited and what it
/// left running was killed: the pipes close as soon as their last holders
/// are gone, so this is only reached when one cannot be killed.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The same after `prepare`, whose survivors are kept and may hold it.
const KEPT_DRAIN: Duration = Duration::from_millis(200);

/// How one run of a command ended.
struct Outcome {
    code: Option<i32>,
    signal: Option<i32>,
    /// stdout, then stderr: what was kept of them ([`super::output`]).
    text: String,
    /// Bytes the command wrote to both.
    bytes: u64,
    /// Some of them were not kept.
    cut: bool,
    /// What the command left running when it exited, killed (`sleep (pid 12)`).
    left_running: Vec<String>,
    /// The output was still open [`DRAIN_LIMIT`] after the command exited.
    unclosed: bool,
}

impl Outcome {
    fn ended(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "ended in an unknown way".into(),
        }
    }

    fn tail(&self) -> String {
        output::tail_of(&self.text)
    }
}

/// A command with its placeholders filled for one cell.
struct Ready {
    argv: Vec<String>,
}

struct Place {
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    /// What `prepare` left running (the services the samples use), spared
    /// until the workload ends: its process group, and the processes.
    services: Vec<libc::pid_t>,
    service_groups: Vec<libc::pid_t>,
}

/// What becomes of what a command leaves running when it exits.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Leftovers {
    /// Killed at once (a sample's run, `cleanup`): nothing outlives it.
    Kill,
    /// Kept until the workload ends (`prepare`: a server the samples use,
    /// which `cleanup` may stop; what is left then is killed).
    Keep,
}

/// A descriptor for the child's exit (`pidfd_open`, Linux 5.3), to wait
/// for it in the same `poll` as its output.
fn pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a descriptor just returned to this process, owned by nothing else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether this process is a child subreaper (the worker is; a test harness
/// calling the workload directly is not, and its other children are not
/// the command's).
fn is_subreaper() -> bool {
    let mut flag: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes an int through the pointer.
    let rc = unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut flag as *mut libc::c_int as libc::c_ulong, 0, 0, 0) };
    rc == 0 && flag != 0
}

/// Kills what a command that has exited left running: the members of its
/// process group `pgid`, and, in a subreaper, every child this process has
/// but `spare` (the command itself was reaped: the others came back when
/// their parents ended). Returns them.
fn end_leftovers(pgid: libc::pid_t, spare: &[libc::pid_t]) -> Vec<String> {
    let mut gone: Vec<process::ProcInfo> = Vec::new();
    // SAFETY: signal 0 only asks whether the group has a member.
    if unsafe { libc::kill(-pgid, 0) } == 0 {
        gone = process::group_members(pgid);
        // SAFETY: the group is the command's (its id cannot be reused while it has members).
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    if is_subreaper() && process::has_children() {
        let (killed, _) = process::kill_children(Duration::from_millis(500), spare);
        for k in killed {
            if !gone.iter().any(|g| g.pid == k.pid) {
                gone.push(k);
            }
        }
    }
    gone.iter().map(process::ProcInfo::shown).collect()
}

/// What a command that has exited left running, untouched: the members of
/// its process group `pgid` and, in a subreaper, the children this process
/// has but `known`.
fn survivors(pgid: libc::pid_t, known: &[libc::pid_t]) -> Vec<process::ProcInfo> {
    let mut found: Vec<process::ProcInfo> = process::group_members(pgid).into_iter().filter(|p| !known.contains(&p.pid)).collect();
    if is_subreaper() && process::has_children() {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        for p in process::all_processes() {
            if p.ppid == me && p.state != 'Z' && !known.contains(&p.pid) && !found.iter().any(|f| f.pid == p.pid) {
                found.push(p);
            }
        }
    }
    found
}

/// Reads what is there on `fd` into `into`; false at end of file or on an
/// error (the pipe is then done with).
fn read_some(fd: &mut std::fs::File, buf: &mut [u8], into: &mut Stream) -> bool {
    loop {
        match fd.read(buf) {
            Ok(0) => return false,
            Ok(n) => {
                into.push(&buf[..n]);
                return true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return e.kind() == std::io::ErrorKind::WouldBlock,
        }
    }
}

impl Place {
    /// Runs `r` to its end, calling `on_exit` the moment the command exits
    /// (the end of a sample's work window); what it leaves running is
    /// killed or kept (`after`).
    fn run(&mut self, r: &Ready, after: Leftovers, on_exit: impl FnOnce()) -> anyhow::Result<Outcome> {
        let mut child = Command::new(&r.argv[0])
            .args(&r.argv[1..])
            .current_dir(&self.cwd)
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| self.start_error(r, e))?;
        let pid = child.id() as libc::pid_t;
        let exit_fd = pidfd(pid);
        let mut pipes: [Option<std::fs::File>; 2] = [
            child.stdout.take().map(|p| std::fs::File::from(OwnedFd::from(p))),
            child.stderr.take().map(|p| std::fs::File::from(OwnedFd::from(p))),
        ];
        let mut streams = [Stream::default(), Stream::default()];
        let mut buf = vec![0u8; 64 * 1024];
        let mut on_exit = Some(on_exit);
        let (mut status, mut left, mut unclosed): (Option<ExitStatus>, Vec<String>, bool) = (None, Vec::new(), false);
        let mut drained_by = None;
        while status.is_none() || pipes.iter().any(Option::is_some) {
            let mut fds: Vec<libc::pollfd> = Vec::with_capacity(3);
            let mut which = Vec::with_capacity(3);
            for (i, p) in pipes.iter().enumerate() {
                if let Some(f) = p {
                    fds.push(libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 });
                    which.push(i);
                }
            }
            if status.is_none()
                && let Some(fd) = &exit_fd
            {
                fds.push(libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            }
            // Without a pidfd the exit is looked for every millisecond; once the
            // command has exited, its leftovers are looked for every 10 ms.
            let timeout = match (status.is_some(), exit_fd.is_some()) {
                (false, true) => -1,
                (false, false) => 1,
                (true, _) => 10,
            };
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err(std::io::Error::last_os_error()).context("waiting for the command's output");
            }
            for (slot, &i) in which.iter().enumerate() {
                if n > 0 && fds[slot].revents != 0 {
                    let f = pipes[i].as_mut().expect("polled because open");
                    if !read_some(f, &mut buf, &mut streams[i]) {
                        pipes[i] = None;
                    }
                }
            }
            if status.is_none() {
                if let Some(st) = child.try_wait().context("waiting for the command")? {
                    if let Some(f) = on_exit.take() {
                        f();
                    }
                    status = Some(st);
                    match after {
                        Leftovers::Kill => left = end_leftovers(pid, &self.services),
                        Leftovers::Keep => self.keep(pid),
                    }
                    // A service `prepare` keeps may hold its output: it is not waited for.
                    drained_by = Some(Instant::now() + if after == Leftovers::Keep { KEPT_DRAIN } else { DRAIN_LIMIT });
                }
            } else if pipes.iter().any(Option::is_some) {
                // What was killed may have had children of its own: they come here now.
                if after == Leftovers::Kill {
                    for p in end_leftovers(pid, &self.services) {
                        if !left.contains(&p) {
                            left.push(p);
                        }
                    }
                }
                if drained_by.is_some_and(|t| Instant::now() >= t) {
                    unclosed = true;
                    break;
                }
            }
        }
        use std::os::unix::process::ExitStatusExt;
        let st = status.expect("the loop ends after the exit");
        let [out, err] = &streams;
        let mut text = out.text();
        if err.total() > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&err.text());
        }
        if !left.is_empty() {
            eprintln!("proofbench: `{}` exited and left running: {}; killed", shown(&r.argv), left.join(", "));
        }
        if after == Leftovers::Keep {
            self.keep(pid);
        }
        if unclosed && after == Leftovers::Kill {
            eprintln!(
                "proofbench: the output of `{}` was still open {} s after it exited; stopped reading it",
                shown(&r.argv),
                DRAIN_LIMIT.as_secs()
            );
        }
        Ok(Outcome {
            code: st.code(),
            signal: st.signal(),
            text,
            bytes: out.total() + err.total(),
            cut: out.cut() || err.cut(),
            left_running: left,
            unclosed,
        })
    }

    /// Spares what `pgid`'s command left running until the workload ends.
    fn keep(&mut self, pgid: libc::pid_t) {
        let found = survivors(pgid, &self.services);
        if !found.is_empty() {
            let shown: Vec<String> = found.iter().map(process::ProcInfo::shown).collect();
            eprintln!("proofbench: kept running until the workload ends: {}", shown.join(", "));
        }
        self.services.extend(found.iter().map(|p| p.pid));
        if !self.service_groups.contains(&pgid) {
            self.service_groups.push(pgid);
        }
    }

    /// Kills what `prepare` left running and what is left below this
    /// process, when the workload ends (after `cleanup`).
    fn end_services(&mut self) {
        for &g in &self.service_groups {
            // SAFETY: signalling a process group `prepare` led; a group id is
            // not reused while it has members.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
        if is_subreaper() {
            let (killed, _) = process::kill_children(Duration::from_millis(500), &[]);
            if !killed.is_empty() {
                let shown: Vec<String> = killed.iter().map(process::ProcInfo::shown).collect();
                eprintln!("proofbench: killed what the workload's commands left running: {}", shown.join(", "));
            }
        }
        self.services.clear();
        self.service_groups.clear();
    }

    /// Why the command could not start, naming what is missing: the
    /// directory, or the program and the PATH it was looked for on.
    fn start_error(&self, r: &Ready, e: std::io::Error) -> anyhow::Error {
        let what = code(&shown(&r.argv));
        let program = &r.argv[0];
        if e.kind() == std::io::ErrorKind::NotFound {
            if !self.cwd.is_dir() {
                return anyhow!("cannot start {what}: its directory {} does not exist", self.cwd.display());
            }
            if !program.contains('/') {
                let (path, whose) = match self.env.get("PATH") {
                    Some(p) => (p.clone(), "set by the workload's `env`"),
                    None => (std::env::var("PATH").unwrap_or_default(), "the worker's"),
                };
                if find_on_path(program, &path).is_none() {
                    return anyhow!("cannot start {what}: program {} not found on PATH={path} ({whose})", code(program));
                }
            }
        }
        anyhow!("cannot start {what} in {}: {e}", self.cwd.display())
    }
}

/// Where `program` is on `path` (a `:`-separated list, as the kernel's
/// execvp looks).
fn find_on_path(program: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    path.split(':')
        .map(|d| Path::new(if d.is_empty() { "." } else { d }).join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The first capture group of `re` in `text`, as a number.
fn read_number(re: &Regex, text: &str) -> Result<f64, String> {
    let caps = re.captures(text).ok_or_else(|| format!("no match for {}", code(re.as_str())))?;
    let m = caps.get(1).map(|m| m.as_str()).unwrap_or("");
    let cleaned: String = m.chars().filter(|c| *c != '_' && *c != ',').collect();
    match cleaned.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{} read '{m}', which is not a number", code(re.as_str()))),
    }
}

struct Checks {
    exit_code: i32,
    must_match: Vec<Regex>,
    must_not_match: Vec<Regex>,
    value: Option<(Regex, f64, f64)>,
}

struct CommandInstance {
    ctx: Place,
    command: Ready,
    cleanup: Option<Ready>,
    metric: Option<(Regex, Option<Regex>, f64)>,
    checks: Checks,
    last_metric: Option<f64>,
    /// Runs of the command so far, and those that left something running
    /// (killed), with the last such run's list.
    runs: u32,
    left_runs: u32,
    last_left: Vec<String>,
    /// Runs whose output was still open after the command exited.
    unclosed_runs: u32,
    /// Each run's output goes to stderr too (the guest-side pass).
    echo_output: bool,
}

fn regex(s: &str) -> anyhow::Result<Regex> {
    Regex::new(s).with_context(|| format!("the regex `{s}` does not compile"))
}

/// Fills the cell's placeholders and runs `prepare`, outside any timed window.
pub fn prepare(def: &CommandDef, cell: &Cell) -> anyhow::Result<Prepared> {
    let values: BTreeMap<String, String> = cell.params.iter().map(|(k, v)| (k.clone(), value_text(v))).collect();
    let fill = |argv: &[String]| Ready { argv: argv.iter().map(|a| placeholder::substitute(a, &values)).collect() };
    let ctx = Place {
        cwd: PathBuf::from(placeholder::substitute(&def.cwd, &values)),
        env: def.env.iter().map(|(k, v)| (k.clone(), placeholder::substitute(v, &values))).collect(),
        services: Vec::new(),
        service_groups: Vec::new(),
    };
    let metric = match &def.metric {
        None => None,
        Some(m) => Some((regex(&m.regex)?, m.total_regex.as_deref().map(regex).transpose()?, m.scale)),
    };
    let v = &def.verify;
    let checks = Checks {
        exit_code: v.exit_code,
        must_match: v.must_match.iter().map(|r| regex(r)).collect::<Result<_, _>>()?,
        must_not_match: v.must_not_match.iter().map(|r| regex(r)).collect::<Result<_, _>>()?,
        value: v.value.as_ref().map(|c| anyhow::Ok((regex(&c.regex)?, c.expected, c.tolerance))).transpose()?,
    };
    let mut inst = CommandInstance {
        command: fill(&def.command),
        cleanup: def.cleanup.as_deref().map(fill),
        ctx,
        metric,
        checks,
        last_metric: None,
        runs: 0,
        left_runs: 0,
        last_left: Vec::new(),
        unclosed_runs: 0,
        echo_output: def.echo_output,
    };
    if let Some(p) = def.prepare.as_deref().map(fill) {
        eprintln!("prepare: {}", shown(&p.argv));
        let out = inst.ctx.run(&p, Leftovers::Keep, || {})?;
        eprintln!("{}", out.text.trim_end());
        if out.code != Some(0) {
            // Dropping the instance runs the cleanup command.
            bail!("the prepare command {} ended with {}; its output ends: {}", code(&shown(&p.argv)), out.ended(), out.tail());
        }
    }
    Ok(Prepared::ready(inst))
}

impl Instance for CommandInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        timer.start();
        let out = self.ctx.run(&self.command, Leftovers::Kill, || timer.stop())?;
        self.runs += 1;
        if self.echo_output {
            eprintln!("{}", out.text.trim_end());
        }
        if !out.left_running.is_empty() {
            self.left_runs += 1;
            self.last_left = out.left_running.clone();
        }
        self.unclosed_runs += u32::from(out.unclosed);
        if let Some((re, total, scale)) = &self.metric {
            let value = read_number(re, &out.text).map(|v| v * scale);
            let total = total.as_ref().map(|t| read_number(t, &out.text).map(|v| v * scale)).transpose();
            match (value, total) {
                (Ok(v), Ok(t)) => {
                    timer.record_value(v);
                    if let Some(t) = t {
                        timer.record_total_value(t);
                    }
                    self.last_metric = Some(v);
                }
                (Err(why), _) | (_, Err(why)) => {
                    eprintln!("{}", out.text.trim_end());
                    bail!(
                        "the metric: {why} in the output of {} ({}); it ends: {}",
                        code(&shown(&self.command.argv)),
                        out.ended(),
                        out.tail()
                    );
                }
            }
        }
        Ok((Work::ops(1), out))
    }

    fn verify(&mut self, out: &Outcome) -> Check {
        let c = &self.checks;
        let mut expected = vec![format!("exit code {}", c.exit_code)];
        let mut observed = vec![out.ended()];
        let mut passed = out.code == Some(c.exit_code);
        for re in &c.must_match {
            let ok = re.is_match(&out.text);
            passed &= ok;
            expected.push(format!("output matches {}", code(re.as_str())));
            observed.push(if ok { "matched".into() } else { format!("no match for {}", code(re.as_str())) });
        }
        for re in &c.must_not_match {
            let hit = re.find(&out.text);
            passed &= hit.is_none();
            expected.push(format!("output does not match {}", code(re.as_str())));
            observed.push(match hit {
                None => "no match".into(),
                Some(m) => format!("{} matched '{}'", code(re.as_str()), m.as_str()),
            });
        }
        if let Some((re, want, tol)) = &c.value {
            expected.push(format!("{} reads {want} ± {tol}", code(re.as_str())));
            match read_number(re, &out.text) {
                Ok(v) => {
                    passed &= (v - want).abs() <= *tol;
                    observed.push(format!("{} read {v}", code(re.as_str())));
                }
                Err(why) => {
                    passed = false;
                    observed.push(why);
                }
            }
        }
        if !passed {
            eprintln!("verifier failed; the output of `{}`:\n{}", shown(&self.command.argv), out.text.trim_end());
        }
        Check { passed, expected: expected.join("; "), observed: observed.join("; ") }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        json!({
            "command": self.command.argv,
            "cwd": self.ctx.cwd.display().to_string(),
            "env": self.ctx.env,
            "last_exit": last.map(Outcome::ended),
            "last_metric": self.last_metric,
            "output_tail": last.map(Outcome::tail),
            "output_bytes": last.map(|o| o.bytes),
            "output_cut": last.map(|o| o.cut),
            "left_running": (self.left_runs > 0).then(|| format!(
                "killed what the command left running after it exited, in {} of {} runs; the last time: {}",
                self.left_runs,
                self.runs,
                self.last_left.join(", ")
            )),
            "output_unclosed_runs": (self.unclosed_runs > 0).then_some(self.unclosed_runs),
        })
    }
}

impl Drop for CommandInstance {
    fn drop(&mut self) {
        if let Some(c) = &self.cleanup {
            eprintln!("cleanup: {}", shown(&c.argv));
            match self.ctx.run(c, Leftovers::Kill, || {}) {
                Ok(out) if out.code == Some(0) => {}
                Ok(out) => eprintln!("proofbench: warning: the cleanup command ended with {}: {}", out.ended(), out.tail()),
                Err(e) => eprintln!("proofbench: warning: {e:#}"),
            }
        }
        self.ctx.end_services();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(env: &[(&str, &str)]) -> Place {
        Place {
            cwd: std::env::temp_dir(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            services: Vec::new(),
            service_groups: Vec::new(),
        }
    }

    #[test]
    fn a_program_hidden_by_the_path_is_named_with_that_path() {
        let sh = Ready { argv: vec!["sh".into(), "-c".into(), "echo hi".into()] };
        let e = place(&[("PATH", "/no/such/bin")]).run(&sh, Leftovers::Kill, || {}).err().unwrap().to_string();
        assert_eq!(e, "cannot start `echo hi`: program `sh` not found on PATH=/no/such/bin (set by the workload's `env`)");
        assert!(find_on_path("sh", "/no/such/bin:/bin:/usr/bin").is_some());
    }

    #[test]
    fn a_run_ends_when_the_command_exits_and_its_background_group_is_killed() {
        let r = Ready { argv: vec!["sh".into(), "-c".into(), "sleep 1001 & echo x".into()] };
        let t = Instant::now();
        let out = place(&[]).run(&r, Leftovers::Kill, || {}).unwrap();
        assert!(t.elapsed() < Duration::from_secs(100), "not held up by the sleep");
        assert_eq!((out.text.as_str(), out.code), ("x\n", Some(0)));
        // The background job, named `sleep` or, killed before its exec, `sh`.
        assert!(out.left_running.len() == 1 && out.left_running[0].contains(" (pid "), "{:?}", out.left_running);
    }
}
