//! The Slurm client calls behind one small trait, [`Cluster`]: submit a
//! batch job (`sbatch`), list jobs (`squeue`), show one job (`scontrol show
//! job`), read the accounting (`sacct`) and cancel jobs (`scancel`). The
//! real cluster, [`Slurm`], runs those commands (with the environment this
//! process was given, `SLURM_CONF` included), each in its own process group
//! with bounded output, killed after its time limit and, whatever ends this
//! process (SIGKILL included), with it. The logic that follows the jobs
//! ([`super::jobs`]) asks only the trait, so that it is tested with a fake
//! cluster and no daemon.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::process::helper::{HELPER_TIMEOUT, capture};

/// One `sbatch` of the batch script.
pub struct Submission<'a> {
    pub script: &'a Path,
    /// The node it must run on (`--nodelist`), else anywhere in the partition.
    pub node: Option<&'a str>,
    pub partition: Option<&'a str>,
    /// Its output file pattern (`--output`).
    pub output: &'a Path,
    pub job_name: &'a str,
    /// `--sbatch-arg`s, passed as they are.
    pub extra: &'a [String],
}

/// What is asked of Slurm. Each call returns the command's output, or one
/// line saying why there is none: the client's own error line, or, when it
/// was not given the time to answer or did not answer in it, a line that
/// [`super::is_no_answer`] recognises. `limit` bounds the call (at most
/// [`HELPER_TIMEOUT`]).
pub trait Cluster {
    /// Submits the script; returns the job id.
    fn submit(&self, job: &Submission) -> Result<String, String>;
    /// `squeue` of `ids`, every state, one `id|state|nodes|reason` line per job.
    fn queue(&self, ids: &[String], limit: Duration) -> Result<String, String>;
    /// `scontrol show job -o` of one job.
    fn job_info(&self, id: &str, limit: Duration) -> Result<String, String>;
    /// `sacct` of `ids` (`-D`: every attempt of a requeued job; `file`:
    /// from the job completion file, not the database).
    fn accounting(&self, ids: &[String], all_attempts: bool, file: bool, limit: Duration) -> Result<String, String>;
    /// `scancel` of `ids`.
    fn cancel(&self, ids: &[String]) -> Result<(), String>;
}

/// The cluster this machine's Slurm commands reach.
pub struct Slurm;

impl Cluster for Slurm {
    fn submit(&self, job: &Submission) -> Result<String, String> {
        let mut args = vec!["--parsable".to_string(), format!("--job-name={}", job.job_name)];
        args.extend(job.node.map(|n| format!("--nodelist={n}")));
        args.extend(job.partition.map(|p| format!("--partition={p}")));
        args.push(format!("--output={}", job.output.display()));
        args.extend(job.extra.iter().cloned());
        args.push(job.script.display().to_string());
        let out = run("sbatch", &args, HELPER_TIMEOUT)?;
        let id = out.trim().split(';').next().unwrap_or("").to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("sbatch printed no job id: '{}'", out.trim()));
        }
        Ok(id)
    }

    fn queue(&self, ids: &[String], limit: Duration) -> Result<String, String> {
        run("squeue", &["-h", "-t", "all", "-o", "%i|%T|%N|%r", "-j", &ids.join(",")].map(String::from), limit)
    }

    fn job_info(&self, id: &str, limit: Duration) -> Result<String, String> {
        run("scontrol", &["show", "job", "-o", id].map(String::from), limit)
    }

    fn accounting(&self, ids: &[String], all_attempts: bool, file: bool, limit: Duration) -> Result<String, String> {
        let mut args: Vec<String> =
            vec!["-n", "-P", "-X", "-o", "JobID,State,ExitCode,NodeList", "-j"].into_iter().map(String::from).collect();
        args.push(ids.join(","));
        if all_attempts {
            args.insert(0, "-D".into());
        }
        if file {
            args.insert(0, "-c".into());
        }
        run("sacct", &args, limit)
    }

    fn cancel(&self, ids: &[String]) -> Result<(), String> {
        run("scancel", ids, HELPER_TIMEOUT).map(|_| ())
    }
}

/// Runs a Slurm client as the launcher's helpers run (its own process
/// group, bounded output), killed after `limit` (at most
/// [`HELPER_TIMEOUT`]) and, whatever ends this process (SIGKILL included),
/// with it; returns its stdout, or its error line. A client that was not
/// given the time to answer or did not answer in it says `gave no answer`
/// ([`super::is_no_answer`]).
fn run(program: &str, args: &[String], limit: Duration) -> Result<String, String> {
    let limit = limit.min(HELPER_TIMEOUT);
    if limit.is_zero() {
        return Err(format!("{program} gave no answer: no time was left to ask"));
    }
    let mut command = Command::new(program);
    command.args(args);
    let parent = std::process::id() as i32;
    // SAFETY: prctl and getppid are async-signal-safe and change only the child.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // This process may have died before the prctl.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let out = match capture(command, limit) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(format!("{program} gave no answer within {:.0} s", limit.as_secs_f64())),
        Err(e) => return Err(format!("{program}: cannot run it: {e} (is Slurm installed?)")),
    };
    if out.code == Some(0) {
        return Ok(out.stdout);
    }
    let how = out.code.map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited with code {c}"));
    Err(super::first_error_line(&out.stderr).unwrap_or_else(|| format!("{program} {how}")))
}
