//! slurm: running a plan as Slurm batch jobs. The pure side: the text of
//! the batch script, the host lists of `--nodelist`, the jobs file a
//! submission leaves in its results directory, and the job states read from
//! `squeue`, `scontrol show job -o` and `sacct` output. The client calls
//! behind a small trait (`cluster::Cluster`, with the real [`Slurm`] in
//! `cluster.rs`) and the following of the jobs through it (`jobs.rs`:
//! submit, query, wait's rounds), so that the `slurm` command
//! (src/commands/slurm.rs) only checks its flags, writes the script and
//! the jobs file, prints and sleeps, and its logic is tested with a fake
//! cluster.
//!
//! Nothing here reads the environment; the only file read is a failed
//! job's output file (its last line, said in `wait`'s error).

pub mod cluster;
#[cfg(test)]
mod fake;
pub mod jobs;
mod parse;
mod script;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use cluster::Slurm;
pub use parse::{expand_hostlist, first_error_line, is_no_answer, parse_sacct, parse_scontrol, parse_squeue};
pub use script::{SCRIPT_NAME, batch_script};

/// Schema name and version of [`JobsFile`].
pub const JOBS_SCHEMA: &str = "proofbench.slurm-jobs/1";
/// The jobs file's name in a results directory.
pub const JOBS_FILE: &str = "jobs.json";

/// What `slurm submit` left in its results directory (`jobs.json`): the
/// script and one entry per job, so that `status` and `wait` can follow
/// them from the directory alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobsFile {
    /// Always [`JOBS_SCHEMA`].
    pub schema: String,
    /// The results directory, absolute.
    pub results: PathBuf,
    /// The batch script every job ran, absolute.
    pub script: PathBuf,
    /// UTC time of the submission, RFC 3339 to the second.
    pub submitted_utc: String,
    /// The command line of the submission.
    pub command_line: Vec<String>,
    /// One entry per job, in submission order.
    pub jobs: Vec<SubmittedJob>,
}

/// One job of a submission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmittedJob {
    /// The node it was pinned to (`--nodelist`); `None` for a job of
    /// `--partition P --nodes N`, which runs wherever Slurm puts it.
    pub node: Option<String>,
    /// Slurm's job id.
    pub job_id: String,
    /// The file its stdout and stderr go to.
    pub output: PathBuf,
}

/// The run directory an attempt of a job writes, as the script names it:
/// `RESULTS/<node>-<job id>` for the first, `RESULTS/<node>-<job id>-rerunN`
/// after `restarts` = N requeues; `None` while the node is not known.
pub fn run_dir(results: &Path, node: Option<&str>, job_id: &str, restarts: u32) -> Option<PathBuf> {
    let rerun = if restarts == 0 { String::new() } else { format!("-rerun{restarts}") };
    node.map(|n| results.join(format!("{n}-{job_id}{rerun}")))
}

/// A Slurm job state (`squeue %T`, `scontrol JobState`, `sacct State`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for resources, or held.
    Pending,
    /// Running, or suspended, configuring, completing: not ended yet.
    Running(String),
    /// Ended with exit code 0.
    Completed,
    /// Ended another way: FAILED, CANCELLED, TIMEOUT, NODE_FAIL,
    /// OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED...
    Ended(String),
    /// Not known to squeue, scontrol or sacct (the reason says which were
    /// asked).
    Unknown(String),
}

impl JobState {
    /// The state Slurm names: `sacct` adds `by UID` to CANCELLED, and a
    /// state may carry a `+` of flags (`CANCELLED+`); both are dropped.
    pub fn from_slurm(text: &str) -> JobState {
        let name = text.split_whitespace().next().unwrap_or("").trim_end_matches('+').to_ascii_uppercase();
        match name.as_str() {
            "PENDING" | "PD" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" => JobState::Pending,
            "COMPLETED" | "CD" => JobState::Completed,
            "RUNNING" | "R" | "COMPLETING" | "CG" | "CONFIGURING" | "CF" | "SUSPENDED" | "S" | "STOPPED" | "ST" | "SIGNALING"
            | "STAGE_OUT" | "RESIZING" => JobState::Running(name),
            "" => JobState::Unknown("an empty state".into()),
            _ => JobState::Ended(name),
        }
    }

    /// Whether the job has ended (whatever way).
    pub fn has_ended(&self) -> bool {
        matches!(self, JobState::Completed | JobState::Ended(_))
    }

    /// The state's name as Slurm writes it.
    pub fn name(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running(s) | JobState::Ended(s) => s,
            JobState::Completed => "COMPLETED",
            JobState::Unknown(_) => "UNKNOWN",
        }
    }
}

/// What one of Slurm's commands says about a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInfo {
    /// The job id (`123`, or `123_4` for an array element).
    pub id: String,
    /// Its state.
    pub state: JobState,
    /// The nodes it runs or ran on, as a host list; `None` before it starts.
    pub nodes: Option<String>,
    /// `scontrol`'s and `squeue`'s reason (`NonZeroExitCode`, `TimeLimit`,
    /// `Resources`...); `None` for `None`.
    pub reason: Option<String>,
    /// The exit code of the batch script, `EXIT:SIGNAL` (`0:0`, `1:0`,
    /// `0:9`); `None` where the command does not say (`squeue`).
    pub exit_code: Option<String>,
    /// The batch script (`scontrol`'s `Command`).
    pub command: Option<String>,
    /// How many times Slurm requeued it (`scontrol`'s `Restarts`; 0 where
    /// the command does not say): the attempt running or ended is the
    /// `restarts + 1`-th.
    pub restarts: u32,
    /// The ends of its earlier attempts, oldest first (`sacct -D`; empty
    /// when accounting does not keep them).
    pub earlier: Vec<Attempt>,
}

/// How an earlier attempt of a requeued job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// Its end: `NODE_FAIL` when its node failed.
    pub state: JobState,
    /// The nodes it ran on.
    pub nodes: Option<String>,
}

impl Attempt {
    /// `node n2 failed, NODE_FAIL`, `PREEMPTED on n2`.
    fn text(&self) -> String {
        match (&self.state, self.nodes.as_deref()) {
            (JobState::Ended(s), Some(n)) if s == "NODE_FAIL" => format!("node {n} failed, NODE_FAIL"),
            (JobState::Ended(s), None) if s == "NODE_FAIL" => "its node failed, NODE_FAIL".into(),
            (s, Some(n)) => format!("{} on {n}", s.name()),
            (s, None) => s.name().to_string(),
        }
    }
}

impl JobInfo {
    /// The state as `status` and `wait` print it: Slurm's name, its reason
    /// after a state that is not COMPLETED, and for a requeued job its
    /// [`JobInfo::attempts_text`]: `PENDING (BeginTime; attempt 2; attempt
    /// 1: node n2 failed, NODE_FAIL)`.
    pub fn state_text(&self) -> String {
        let reason = self.reason.clone().filter(|_| self.state != JobState::Completed);
        let notes: Vec<String> = reason.into_iter().chain(self.attempts_text()).collect();
        if notes.is_empty() { self.state.name().to_string() } else { format!("{} ({})", self.state.name(), notes.join("; ")) }
    }

    /// For a requeued job, which attempt this is and how the earlier ones
    /// ended (`attempt 2; attempt 1: node n2 failed, NODE_FAIL`), or that
    /// it was requeued when accounting does not say how; `None` for a job
    /// never requeued.
    pub fn attempts_text(&self) -> Option<String> {
        if self.restarts == 0 {
            return None;
        }
        let mut notes = vec![format!("attempt {}", self.restarts + 1)];
        let ends = self.earlier.iter().take(self.restarts as usize).enumerate();
        notes.extend(ends.map(|(i, a)| format!("attempt {}: {}", i + 1, a.text())));
        if self.earlier.is_empty() {
            let times = if self.restarts == 1 { "once".to_string() } else { format!("{} times", self.restarts) };
            notes.push(format!("requeued {times}: a node failed, a preemption or scontrol requeue"));
        }
        Some(notes.join("; "))
    }

    /// The exit code as a reader wants it: `exit 3`, `signal 9`, `-` when
    /// not known.
    pub fn exit_text(&self) -> String {
        match self.exit_code.as_deref().map(|c| c.split_once(':').unwrap_or((c, "0"))) {
            Some((_, sig)) if sig != "0" => format!("signal {sig}"),
            Some((code, _)) => format!("exit {code}"),
            None => "-".into(),
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_jobs;
