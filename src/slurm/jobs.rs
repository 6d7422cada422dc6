//! Following Slurm jobs through a [`Cluster`]: submitting one job per
//! target (a failed submission cancelling the jobs it had made), asking what
//! each job's state is (`squeue`, then `scontrol`, then `sacct`, each bounded
//! by a deadline, a silent controller costing one wait per round), the line
//! each job is printed as, why one did not complete, and `slurm wait`'s
//! rounds and ending. It prints nothing and never sleeps: the `slurm`
//! command does, so that all of this is tested with a fake cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cluster::{Cluster, Submission};
use super::{Attempt, JobInfo, JobState, SCRIPT_NAME, SubmittedJob};
use crate::process::helper::HELPER_TIMEOUT;
use crate::text::format::counted;

/// Where each job goes: a named node, or anywhere in a partition.
pub enum Target {
    Node(String),
    Anywhere,
}

/// A submission that failed at one target: the target's node, sbatch's
/// line, and what became of the jobs already submitted ("" when none).
pub struct Refused {
    pub node: Option<String>,
    pub line: String,
    pub cancelled: String,
}

/// Submits `script` once per target, into `results`, every job named
/// `job_name`; a failed `sbatch` cancels the jobs this call submitted.
pub fn submit_all(
    cluster: &dyn Cluster,
    script: &Path,
    targets: &[Target],
    partition: Option<&str>,
    results: &Path,
    job_name: &str,
    extra: &[String],
) -> Result<Vec<SubmittedJob>, Refused> {
    let mut jobs: Vec<SubmittedJob> = Vec::new();
    for target in targets {
        let node = match target {
            Target::Node(n) => Some(n.as_str()),
            Target::Anywhere => None,
        };
        let output = results.join(format!("{}-%j.out", node.unwrap_or("slurm")));
        let job = Submission { script, node, partition, output: &output, job_name, extra };
        match cluster.submit(&job) {
            Ok(id) => {
                let output = results.join(format!("{}-{id}.out", node.unwrap_or("slurm")));
                jobs.push(SubmittedJob { node: node.map(String::from), job_id: id, output });
            }
            Err(line) => return Err(Refused { node: node.map(String::from), line, cancelled: cancel(cluster, &jobs) }),
        }
    }
    Ok(jobs)
}

/// Cancels the jobs a failed submission had already made; returns what to
/// add to its error ("" when there were none).
pub fn cancel(cluster: &dyn Cluster, jobs: &[SubmittedJob]) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = jobs.iter().map(|j| j.job_id.clone()).collect();
    match cluster.cancel(&ids) {
        Ok(()) => format!(" (cancelled the jobs already submitted: {})", ids.join(" ")),
        Err(e) => format!(" (cancelling the jobs already submitted, {}, failed: {e})", ids.join(" ")),
    }
}

/// A job `status` and `wait` follow.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub node: Option<String>,
    pub job_id: String,
    pub results: Option<PathBuf>,
    pub output: Option<PathBuf>,
}

/// What one round of questions to Slurm learned.
pub struct Poll {
    /// Each job a command answered for; a job none of them knows, when
    /// they all answered, is `Unknown`.
    pub known: BTreeMap<String, JobInfo>,
    /// Why some jobs could not be asked about: the controller (or the
    /// accounting) did not answer, or the time ran out. Their states are
    /// not known, and they are not `Unknown`.
    pub no_answer: Option<String>,
}

/// The time left until `deadline`; [`HELPER_TIMEOUT`] without one.
pub fn left(deadline: Option<Instant>) -> Duration {
    deadline.map_or(HELPER_TIMEOUT, |d| d.saturating_duration_since(Instant::now()))
}

/// What Slurm says about each job: `squeue` for all at once; `scontrol
/// show job` for those it does not list or that have ended (their exit
/// code and requeues), or for all with `every`; `sacct` (the database,
/// else the job completion file) for the rest, and for the earlier
/// attempts of a requeued job. Every command is bounded by `deadline`; once
/// one gives no answer, no more are asked this round (a controller that
/// hangs costs one wait, not one per job).
pub fn query(cluster: &dyn Cluster, ids: &[String], every: bool, deadline: Option<Instant>) -> anyhow::Result<Poll> {
    let mut known: BTreeMap<String, JobInfo> = BTreeMap::new();
    let mut no_answer: Option<String> = None;
    let ask = |call: &dyn Fn(Duration) -> Result<String, String>, no_answer: &mut Option<String>| -> Option<Result<String, String>> {
        if no_answer.is_some() {
            return None;
        }
        match call(left(deadline)) {
            Err(line) if super::is_no_answer(&line) => {
                *no_answer = Some(line);
                None
            }
            other => Some(other),
        }
    };
    match ask(&|limit| cluster.queue(ids, limit), &mut no_answer) {
        Some(Ok(text)) => known.extend(super::parse_squeue(&text).into_iter().map(|j| (j.id.clone(), j))),
        // squeue refuses the whole list when one job has left the controller.
        Some(Err(line)) if line.contains("Invalid job id") => {}
        Some(Err(line)) => anyhow::bail!("{line}"),
        None => {}
    }
    for id in ids {
        if !every && known.get(id).is_some_and(|j| !j.state.has_ended()) {
            continue;
        }
        if let Some(Ok(text)) = ask(&|limit| cluster.job_info(id, limit), &mut no_answer)
            && let Some(j) = super::parse_scontrol(&text).into_iter().find(|j| &j.id == id)
        {
            known.insert(id.clone(), j);
        }
    }
    let missing: Vec<String> = ids.iter().filter(|id| !known.contains_key(*id)).cloned().collect();
    if !missing.is_empty() {
        for file in [false, true] {
            if let Some(Ok(text)) = ask(&|limit| cluster.accounting(&missing, false, file, limit), &mut no_answer) {
                known.extend(super::parse_sacct(&text).into_iter().filter(|j| missing.contains(&j.id)).map(|j| (j.id.clone(), j)));
            }
            if missing.iter().all(|id| known.contains_key(id)) {
                break;
            }
        }
    }
    // How a requeued job's earlier attempts ended: what is known of it
    // stands without this, so a failure here is not a round without answer.
    let requeued: Vec<String> = known.values().filter(|j| j.restarts > 0).map(|j| j.id.clone()).collect();
    if !requeued.is_empty() && no_answer.is_none() {
        for file in [false, true] {
            if let Ok(text) = cluster.accounting(&requeued, true, file, left(deadline)) {
                for attempt in super::parse_sacct(&text) {
                    if let Some(j) = known.get_mut(&attempt.id)
                        && j.earlier.len() < j.restarts as usize
                    {
                        j.earlier.push(Attempt { state: attempt.state, nodes: attempt.nodes });
                    }
                }
            }
            if requeued.iter().all(|id| !known[id].earlier.is_empty()) {
                break;
            }
        }
    }
    if no_answer.is_none() {
        for id in ids {
            known.entry(id.clone()).or_insert_with(|| JobInfo {
                id: id.clone(),
                state: JobState::Unknown("not known to squeue, scontrol or sacct (ended long ago without accounting?)".into()),
                nodes: None,
                reason: None,
                exit_code: None,
                command: None,
                restarts: 0,
                earlier: Vec::new(),
            });
        }
    }
    Ok(Poll { known, no_answer })
}

/// One job's line: node, job id, state (with its reason and attempts),
/// exit code once it has ended, run directory of this attempt (`-` for what
/// is not known yet).
pub fn job_line(t: &Tracked, info: &JobInfo) -> String {
    let node = t.node.clone().or_else(|| info.nodes.clone());
    let results = t.results.clone().or_else(|| {
        let script = Path::new(info.command.as_deref()?);
        (script.file_name()? == SCRIPT_NAME).then(|| script.parent().map(Path::to_path_buf)).flatten()
    });
    let run_dir = results.and_then(|r| super::run_dir(&r, node.as_deref(), &t.job_id, info.restarts));
    format!(
        "{} {} {} {} {}",
        node.as_deref().unwrap_or("-"),
        t.job_id,
        info.state_text(),
        if info.state.has_ended() { info.exit_text() } else { "-".into() },
        run_dir.map_or_else(|| "-".to_string(), |d| d.display().to_string())
    )
}

/// The ids none of Slurm's commands knows, as a usage error's line.
pub fn unknown_ids(jobs: &[&Tracked], known: &BTreeMap<String, JobInfo>) -> Option<String> {
    let unknown: Vec<&str> =
        jobs.iter().filter(|t| matches!(known[&t.job_id].state, JobState::Unknown(_))).map(|t| t.job_id.as_str()).collect();
    (!unknown.is_empty()).then(|| {
        format!(
            "{} {}: not known to squeue, scontrol or sacct (a mistyped id, or a job that ended long ago without accounting)",
            if unknown.len() == 1 { "job" } else { "jobs" },
            unknown.join(", ")
        )
    })
}

/// Why a job that did not complete ended: its state, exit code, Slurm's
/// reason, its attempts and the last line of its output file (what the job
/// itself said).
pub fn failure(t: &Tracked, info: &JobInfo) -> String {
    let who = match t.node.as_deref().or(info.nodes.as_deref()) {
        Some(n) => format!("{n} (job {})", t.job_id),
        None => format!("job {}", t.job_id),
    };
    let mut why = vec![info.state.name().to_string()];
    if info.state.name() == "NODE_FAIL" {
        why.push("its node failed".into());
    }
    if let JobState::Unknown(reason) = &info.state {
        why.push(reason.clone());
    }
    if info.exit_code.is_some() {
        why.push(info.exit_text());
    }
    why.extend(info.reason.clone());
    why.extend(info.attempts_text());
    let said = t.output.as_ref().and_then(|f| std::fs::read_to_string(f).ok()).and_then(|text| {
        text.lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map(|l| format!("'{}' in {}", l, t.output.as_ref().map(|p| p.display()).unwrap()))
    });
    why.extend(said);
    format!("{who} {}", why.join(", "))
}

/// `slurm wait` over its jobs: asked round by round until every job has
/// ended (or the deadline), each end said once.
pub struct Wait<'a> {
    jobs: &'a [Tracked],
    deadline: Option<Instant>,
    ended: BTreeSet<String>,
    failures: Vec<String>,
    unknown: Vec<&'a Tracked>,
    completed: usize,
    /// Why Slurm did not answer the last round, if it did not.
    silent: Option<String>,
    last: BTreeMap<String, JobInfo>,
}

/// What one round of `slurm wait` has to say.
pub struct Round {
    /// The lines of the jobs that ended in it (for stdout).
    pub lines: String,
    /// A note for stderr: Slurm stopped answering, or answers again.
    pub note: Option<String>,
    /// Every job has ended, or the deadline has passed.
    pub done: bool,
}

/// How `slurm wait` ends.
#[derive(Debug, PartialEq)]
pub enum Ending {
    /// Every job completed.
    Completed,
    /// Some failed, or --timeout came while Slurm answered: the line for
    /// stderr (exit 1).
    Failed(String),
    /// --timeout came while Slurm did not answer: what is not known.
    NoAnswer(String),
    /// Some job ids are known to no Slurm command (a usage error).
    Unknown(String),
}

impl<'a> Wait<'a> {
    pub fn new(jobs: &'a [Tracked], deadline: Option<Instant>) -> Self {
        Wait {
            jobs,
            deadline,
            ended: BTreeSet::new(),
            failures: Vec::new(),
            unknown: Vec::new(),
            completed: 0,
            silent: None,
            last: BTreeMap::new(),
        }
    }

    /// Asks Slurm once about the jobs that have not ended.
    pub fn round(&mut self, cluster: &dyn Cluster) -> anyhow::Result<Round> {
        let jobs = self.jobs;
        let waiting: Vec<&Tracked> = jobs.iter().filter(|t| !self.ended.contains(&t.job_id)).collect();
        let mut ids: Vec<String> = waiting.iter().map(|t| t.job_id.clone()).collect();
        ids.dedup();
        let poll = query(cluster, &ids, false, self.deadline)?;
        let mut lines = String::new();
        for t in waiting {
            let Some(info) = poll.known.get(&t.job_id) else { continue };
            self.last.insert(t.job_id.clone(), info.clone());
            if !(info.state.has_ended() || matches!(info.state, JobState::Unknown(_))) {
                continue;
            }
            self.ended.insert(t.job_id.clone());
            lines += &(job_line(t, info) + "\n");
            match &info.state {
                JobState::Completed => self.completed += 1,
                JobState::Unknown(_) => self.unknown.push(t),
                _ => self.failures.push(failure(t, info)),
            }
        }
        let done = jobs.iter().all(|t| self.ended.contains(&t.job_id)) || self.deadline.is_some_and(|d| Instant::now() >= d);
        // Said once when Slurm stops answering and once when it answers again
        // (the end says the rest).
        let note = match (&poll.no_answer, &self.silent) {
            (Some(why), None) if !done => {
                Some(format!("proofbench: Slurm does not answer ({why}); asking again every second (the jobs go on)\n"))
            }
            (None, Some(_)) if !done => Some("proofbench: Slurm answers again\n".to_string()),
            _ => None,
        };
        self.silent = poll.no_answer;
        Ok(Round { lines, note, done })
    }

    /// How the wait ends, once a round said it is done.
    pub fn end(self) -> Ending {
        let jobs = self.jobs;
        let left: Vec<String> = jobs
            .iter()
            .filter(|t| !self.ended.contains(&t.job_id))
            .map(|t| self.last.get(&t.job_id).map_or_else(|| t.job_id.clone(), |i| format!("{} ({})", t.job_id, i.state.name())))
            .collect();
        let unknown = unknown_ids(&self.unknown, &self.last);
        let mut failures = self.failures;
        let completed = self.completed;
        if !failures.is_empty() || (!left.is_empty() && self.silent.is_none()) {
            failures.extend(unknown);
            if !left.is_empty() {
                let seen = if self.silent.is_some() { " (Slurm did not answer the last time it was asked)" } else { "" };
                failures.push(format!("--timeout: still not ended: {}{seen}", left.join(", ")));
            }
            return Ending::Failed(format!(
                "proofbench: error: {completed} of {} completed; {}\n",
                counted(jobs.len(), "job", "jobs"),
                failures.join("; ")
            ));
        }
        if !left.is_empty() {
            return Ending::NoAnswer(format!(
                "--timeout: Slurm did not answer ({}), so these jobs' states are not known: {}; {completed} of {} completed",
                self.silent.unwrap_or_default(),
                left.join(", "),
                counted(jobs.len(), "job", "jobs")
            ));
        }
        match unknown {
            Some(line) => Ending::Unknown(line),
            None => Ending::Completed,
        }
    }
}
