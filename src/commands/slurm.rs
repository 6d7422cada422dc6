//! `proofbench slurm submit|status|wait`: the plan as one exclusive Slurm
//! batch job per node, and the jobs followed to their end. The script text,
//! the host lists and the reading of Slurm's output are `crate::slurm`'s;
//! this handler runs `sbatch`, `squeue`, `scontrol`, `sacct` and `scancel`
//! (with the environment it was given: `SLURM_CONF` included), each bounded
//! in time (by `wait --timeout` too) and killed with this process, whatever
//! ends it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use crate::cli::{RunArgs, SlurmArgs, SlurmCommand, SlurmJobsArgs, SlurmSubmitArgs, SlurmWaitArgs};
use crate::evidence::RunKind;
use crate::measure::clock::utc_now;
use crate::model::UsageError;
use crate::runner::launcher::{HELPER_TIMEOUT, capture};
use crate::slurm::{self, JOBS_FILE, JOBS_SCHEMA, JobInfo, JobState, JobsFile, SCRIPT_NAME, SubmittedJob};
use crate::text::format::counted;
use crate::text::out::{Out, to_stderr};

/// The flags of `slurm submit` that are not `run`'s and take a value: left
/// out of the words the script passes to `proofbench run`.
const OWN_FLAGS: [&str; 6] = ["--nodelist", "--partition", "--nodes", "--results", "--sbatch-arg", "--remote-exe"];

/// How often `wait` asks Slurm.
const POLL: Duration = Duration::from_secs(1);

/// Exit code of `slurm status` and `slurm wait` when Slurm could not be
/// asked: the controller (or the accounting) did not answer, so nothing is
/// known of the jobs; not a job's failure (1) nor a bad argument (2).
pub const EXIT_NO_ANSWER: u8 = 3;

/// `proofbench slurm ...`.
pub fn slurm(args: &SlurmArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        SlurmCommand::Submit(a) => submit(a),
        SlurmCommand::Status(a) => status(a),
        SlurmCommand::Wait(a) => wait(a),
    }
}

/// Where each job goes: a named node, or anywhere in a partition.
enum Target {
    Node(String),
    Anywhere,
}

/// `slurm submit`: every check first (the run flags as `run` checks them,
/// the nodes, the results directory), then the script, then one `sbatch`
/// per node. A failed `sbatch` cancels the jobs this call submitted.
fn submit(args: &SlurmSubmitArgs) -> anyhow::Result<ExitCode> {
    let run = run_args(&args.run)?;
    super::run::request(&run, RunKind::Run)?;
    let targets = match (&args.nodelist, &args.partition, args.nodes) {
        (Some(list), _, _) => {
            let nodes = slurm::expand_hostlist(list).map_err(|e| UsageError(format!("--nodelist: {e}")))?;
            if let Some(twice) = nodes.iter().enumerate().find_map(|(i, n)| nodes[..i].contains(n).then_some(n)) {
                return Err(UsageError(format!("--nodelist {list}: {twice} is named twice")).into());
            }
            nodes.into_iter().map(Target::Node).collect::<Vec<_>>()
        }
        (None, Some(p), Some(n)) => {
            if p.trim().is_empty() {
                return Err(UsageError("--partition is empty".into()).into());
            }
            (0..n).map(|_| Target::Anywhere).collect()
        }
        _ => return Err(UsageError("give the nodes: --nodelist LIST, or --partition P --nodes N".into()).into()),
    };
    let exe = match &args.run.remote_exe {
        Some(p) if p.trim().is_empty() => return Err(UsageError("--remote-exe is empty".into()).into()),
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("locating the proofbench binary for the script (give --remote-exe): {e}"))?
            .display()
            .to_string(),
    };
    let results = results_dir(&args.results)?;
    let argv: Vec<String> = std::env::args().collect();
    let script = results.join(SCRIPT_NAME);
    // Every node's job of one submission has the same name, which each
    // run's envelope records (`slurm.job_name`): the history tells the
    // nodes of one submission by it.
    let submission = submission_name(&results);
    write_script(&script, &slurm::batch_script(&exe, &run_words(&argv), &results, &argv))?;

    let mut jobs: Vec<SubmittedJob> = Vec::new();
    for target in &targets {
        let node = match target {
            Target::Node(n) => Some(n.as_str()),
            Target::Anywhere => None,
        };
        let output_pattern = results.join(format!("{}-%j.out", node.unwrap_or("slurm")));
        match sbatch(&script, node, args.partition.as_deref(), &output_pattern, &submission, &args.sbatch_args) {
            Ok(id) => {
                let output = results.join(format!("{}-{id}.out", node.unwrap_or("slurm")));
                jobs.push(SubmittedJob { node: node.map(String::from), job_id: id, output });
            }
            Err(line) => {
                let cancelled = cancel(&jobs);
                return Err(sbatch_error(args, node, &line, &cancelled));
            }
        }
    }
    let file = JobsFile {
        schema: JOBS_SCHEMA.into(),
        results: results.clone(),
        script: script.clone(),
        submitted_utc: utc_now(),
        command_line: argv,
        jobs: jobs.clone(),
    };
    let text = serde_json::to_string_pretty(&file)? + "\n";
    if let Err(e) = crate::evidence::dir::write_atomic(&results.join(JOBS_FILE), text.as_bytes()) {
        let cancelled = cancel(&jobs);
        anyhow::bail!("{e}{cancelled}");
    }
    let lines: String = jobs.iter().map(|j| format!("{} {}\n", j.node.as_deref().unwrap_or("-"), j.job_id)).collect();
    Out::new().print(&lines)?;
    to_stderr(&format!(
        "proofbench: {} submitted; script {}, jobs {}; follow them with: proofbench slurm wait {}\n",
        counted(jobs.len(), "job", "jobs"),
        script.display(),
        results.join(JOBS_FILE).display(),
        results.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// The run flags checked for what a Slurm job can do: no launcher (the job
/// is the launch), no directory or database of the run's own (each job
/// writes `RESULTS/<node>-<job id>`, never a history); `--remote-exe` is the
/// script's binary, not a launcher's.
fn run_args(run: &RunArgs) -> anyhow::Result<RunArgs> {
    let argv: Vec<String> = std::env::args().collect();
    let given = |flag: &str| argv.iter().any(|w| w == flag || w.starts_with(&format!("{flag}=")));
    let refused = [
        ("--launcher", run.launcher.is_some(), "the job runs on its node itself"),
        ("--hosts", run.hosts.is_some(), "give the nodes with --nodelist"),
        ("--max-parallel", run.max_parallel.is_some(), "every job runs at once, as Slurm schedules them"),
        ("--run-dir", run.run_dir.is_some(), "each job writes RESULTS/<node>-<job id>: give --results"),
        ("--out", given("--out"), "each job writes RESULTS/<node>-<job id>: give --results"),
        ("--db", run.db.is_some(), "the jobs record no history: import their run directories later (proofbench history import)"),
        ("--html", run.html.is_some(), "each run writes report.html in its run directory"),
    ];
    if let Some((flag, _, why)) = refused.iter().find(|(_, on, _)| *on) {
        return Err(UsageError(format!("{flag}: not for slurm submit ({why})")).into());
    }
    let mut run = run.clone();
    run.remote_exe = None;
    run.no_history = true;
    Ok(run)
}

/// The words after `slurm submit` that are `run`'s: the command line as
/// typed without `submit`'s own flags and `--no-history` (the script adds
/// it). Everything after a `--` is kept.
fn run_words(argv: &[String]) -> Vec<String> {
    let start = argv.iter().position(|w| w == "submit").map_or(argv.len(), |i| i + 1);
    let mut out = Vec::new();
    let mut words = argv[start..].iter();
    while let Some(w) = words.next() {
        if w == "--" {
            out.push(w.clone());
            out.extend(words.by_ref().cloned());
        } else if OWN_FLAGS.contains(&w.as_str()) {
            words.next();
        } else if w != "--no-history" && !OWN_FLAGS.iter().any(|f| w.starts_with(&format!("{f}="))) {
            out.push(w.clone());
        }
    }
    out
}

/// The results directory, created if missing, made absolute and checked
/// writable (a file is made and removed in it); one that already holds a
/// submission's jobs.json is refused. Errors are one line naming
/// `--results` and what is in the way.
fn results_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let flag = format!("--results {}", dir.display());
    if let Err(e) = fs::create_dir_all(dir) {
        // The nearest part of the path that exists says what is in the way.
        let existing = dir.ancestors().find(|a| !a.as_os_str().is_empty() && fs::symlink_metadata(a).is_ok());
        let why = match existing {
            Some(a) if a == dir => "it exists and is not a directory".to_string(),
            Some(a) if !a.is_dir() => format!("{} is not a directory", a.display()),
            Some(a) => format!("cannot create a directory in {} ({})", a.display(), plain(&e)),
            None => format!("cannot create it ({})", plain(&e)),
        };
        return Err(UsageError(format!("{flag}: {why}")).into());
    }
    let abs = fs::canonicalize(dir).map_err(|e| UsageError(format!("{flag}: {}", plain(&e))))?;
    tempfile::Builder::new()
        .prefix(".proofbench-check")
        .tempfile_in(&abs)
        .map_err(|e| UsageError(format!("{flag}: cannot write into it ({})", plain(&e))))?;
    if abs.join(JOBS_FILE).exists() {
        return Err(UsageError(format!("{flag}: already holds a submission ({JOBS_FILE}); give another directory")).into());
    }
    Ok(abs)
}

/// An I/O error's text without Rust's `(os error N)`.
fn plain(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Writes the script, readable and executable by everyone (mode 0755).
fn write_script(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::evidence::dir::write_atomic(path, text.as_bytes()).map_err(|e| e.for_flag("--results"))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|e| UsageError(format!("--results {}: {e}", path.display())))?;
    Ok(())
}

/// Runs a Slurm client as the launcher's helpers run (its own process
/// group, bounded output), killed after `limit` (at most
/// [`HELPER_TIMEOUT`]) and, whatever ends this process (SIGKILL included),
/// with it; returns its stdout, or its error line. A client that was not
/// given the time to answer or did not answer in it says `gave no answer`
/// ([`slurm::is_no_answer`]).
fn slurm_command(program: &str, args: &[String], limit: Duration) -> Result<String, String> {
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
    Err(slurm::first_error_line(&out.stderr).unwrap_or_else(|| format!("{program} {how}")))
}

/// The job name of a submission into `results`: `proofbench-` and the
/// results directory's name (kept to file-name characters).
fn submission_name(results: &Path) -> String {
    let name = results.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "results".into());
    format!("proofbench-{}", crate::model::file_name::bounded(&name, 48))
}

/// `sbatch --parsable` of the script for one node (or the partition),
/// named `job_name`; returns the job id, or sbatch's error line.
fn sbatch(
    script: &Path,
    node: Option<&str>,
    partition: Option<&str>,
    output: &Path,
    job_name: &str,
    extra: &[String],
) -> Result<String, String> {
    let mut args = vec!["--parsable".to_string(), format!("--job-name={job_name}")];
    args.extend(node.map(|n| format!("--nodelist={n}")));
    args.extend(partition.map(|p| format!("--partition={p}")));
    args.push(format!("--output={}", output.display()));
    args.extend(extra.iter().cloned());
    args.push(script.display().to_string());
    let out = slurm_command("sbatch", &args, HELPER_TIMEOUT)?;
    let id = out.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("sbatch printed no job id: '{}'", out.trim()));
    }
    Ok(id)
}

/// Cancels the jobs a failed submission had already made; returns what to
/// add to its error ("" when there were none).
fn cancel(jobs: &[SubmittedJob]) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = jobs.iter().map(|j| j.job_id.clone()).collect();
    match slurm_command("scancel", &ids, HELPER_TIMEOUT) {
        Ok(_) => format!(" (cancelled the jobs already submitted: {})", ids.join(" ")),
        Err(e) => format!(" (cancelling the jobs already submitted, {}, failed: {e})", ids.join(" ")),
    }
}

/// A failed `sbatch` as one line naming what to fix: the node, the
/// partition or the `--sbatch-arg`s (exit 2); anything else (no controller)
/// is the cluster's failure (exit 1).
fn sbatch_error(args: &SlurmSubmitArgs, node: Option<&str>, line: &str, cancelled: &str) -> anyhow::Error {
    let lower = line.to_ascii_lowercase();
    let flag = if lower.contains("node") && !lower.contains("partition") {
        match (node, args.nodes) {
            (Some(n), _) => Some(format!("--nodelist {n}")),
            (None, Some(n)) => Some(format!("--nodes {n}")),
            _ => None,
        }
    } else if lower.contains("partition") && args.partition.is_some() {
        args.partition.as_ref().map(|p| format!("--partition {p}"))
    } else if !args.sbatch_args.is_empty() {
        Some(args.sbatch_args.iter().map(|a| format!("--sbatch-arg {a}")).collect::<Vec<_>>().join(" "))
    } else {
        None
    };
    match flag {
        Some(flag) => UsageError(format!("{flag}: {line}{cancelled}")).into(),
        None => anyhow::anyhow!("sbatch{}: {line}{cancelled}", node.map(|n| format!(" for node {n}")).unwrap_or_default()),
    }
}

/// A job `status` and `wait` follow.
struct Tracked {
    node: Option<String>,
    job_id: String,
    results: Option<PathBuf>,
    output: Option<PathBuf>,
}

/// The jobs the arguments name: results directories (their jobs.json) and
/// job ids. Anything else is a usage error naming it.
fn tracked(args: &[String]) -> anyhow::Result<Vec<Tracked>> {
    let mut out = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        if path.is_dir() {
            let file = path.join(JOBS_FILE);
            let text = fs::read_to_string(&file)
                .map_err(|e| UsageError(format!("{arg}: no jobs of slurm submit here ({}: {e})", file.display())))?;
            let jobs: JobsFile =
                serde_json::from_str(&text).map_err(|e| UsageError(format!("{}: not a jobs file of slurm submit: {e}", file.display())))?;
            if jobs.schema != JOBS_SCHEMA {
                return Err(UsageError(format!("{}: schema '{}', this build reads {JOBS_SCHEMA}", file.display(), jobs.schema)).into());
            }
            out.extend(jobs.jobs.into_iter().map(|j| Tracked {
                node: j.node,
                job_id: j.job_id,
                results: Some(jobs.results.clone()),
                output: Some(j.output),
            }));
        } else if is_job_id(arg) {
            out.push(Tracked { node: None, job_id: arg.clone(), results: None, output: None });
        } else {
            return Err(UsageError(format!("{arg}: neither a results directory of slurm submit nor a job id")).into());
        }
    }
    Ok(out)
}

/// `123` or an array element `123_4`.
fn is_job_id(s: &str) -> bool {
    let (id, element) = s.split_once('_').unwrap_or((s, "0"));
    [id, element].iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// What one round of questions to Slurm learned.
struct Poll {
    /// Each job a command answered for; a job none of them knows, when
    /// they all answered, is `Unknown`.
    known: BTreeMap<String, JobInfo>,
    /// Why some jobs could not be asked about: the controller (or the
    /// accounting) did not answer, or the time ran out. Their states are
    /// not known, and they are not `Unknown`.
    no_answer: Option<String>,
}

/// The time left until `deadline`; `None` without one.
fn left(deadline: Option<Instant>) -> Duration {
    deadline.map_or(HELPER_TIMEOUT, |d| d.saturating_duration_since(Instant::now()))
}

/// What Slurm says about each job: `squeue` for all at once; `scontrol
/// show job` for those it does not list or that have ended (their exit
/// code and requeues), or for all with `every`; `sacct` (the database,
/// else the job completion file) for the rest, and for the earlier
/// attempts of a requeued job. Every command is bounded by `deadline`; once
/// one gives no answer, no more are asked this round (a controller that
/// hangs costs one wait, not one per job).
fn query(ids: &[String], every: bool, deadline: Option<Instant>) -> anyhow::Result<Poll> {
    let mut known: BTreeMap<String, JobInfo> = BTreeMap::new();
    let mut no_answer: Option<String> = None;
    let ask = |program: &str, args: &[String], no_answer: &mut Option<String>| -> Option<Result<String, String>> {
        if no_answer.is_some() {
            return None;
        }
        match slurm_command(program, args, left(deadline)) {
            Err(line) if slurm::is_no_answer(&line) => {
                *no_answer = Some(line);
                None
            }
            other => Some(other),
        }
    };
    let squeue = ["-h", "-t", "all", "-o", "%i|%T|%N|%r", "-j", &ids.join(",")].map(String::from);
    match ask("squeue", &squeue, &mut no_answer) {
        Some(Ok(text)) => known.extend(slurm::parse_squeue(&text).into_iter().map(|j| (j.id.clone(), j))),
        // squeue refuses the whole list when one job has left the controller.
        Some(Err(line)) if line.contains("Invalid job id") => {}
        Some(Err(line)) => anyhow::bail!("{line}"),
        None => {}
    }
    for id in ids {
        if !every && known.get(id).is_some_and(|j| !j.state.has_ended()) {
            continue;
        }
        if let Some(Ok(text)) = ask("scontrol", &["show", "job", "-o", id].map(String::from), &mut no_answer)
            && let Some(j) = slurm::parse_scontrol(&text).into_iter().find(|j| &j.id == id)
        {
            known.insert(id.clone(), j);
        }
    }
    let sacct = |ids: &[String], all_attempts: bool| {
        let mut fields =
            vec!["-n", "-P", "-X", "-o", "JobID,State,ExitCode,NodeList", "-j"].into_iter().map(String::from).collect::<Vec<_>>();
        fields.push(ids.join(","));
        if all_attempts {
            fields.insert(0, "-D".into());
        }
        let with_file: Vec<String> = std::iter::once("-c".to_string()).chain(fields.iter().cloned()).collect();
        [fields, with_file]
    };
    let missing: Vec<String> = ids.iter().filter(|id| !known.contains_key(*id)).cloned().collect();
    if !missing.is_empty() {
        for args in sacct(&missing, false) {
            if let Some(Ok(text)) = ask("sacct", &args, &mut no_answer) {
                known.extend(slurm::parse_sacct(&text).into_iter().filter(|j| missing.contains(&j.id)).map(|j| (j.id.clone(), j)));
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
        for args in sacct(&requeued, true) {
            if let Ok(text) = slurm_command("sacct", &args, left(deadline)) {
                for attempt in slurm::parse_sacct(&text) {
                    if let Some(j) = known.get_mut(&attempt.id)
                        && j.earlier.len() < j.restarts as usize
                    {
                        j.earlier.push(slurm::Attempt { state: attempt.state, nodes: attempt.nodes });
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
fn job_line(t: &Tracked, info: &JobInfo) -> String {
    let node = t.node.clone().or_else(|| info.nodes.clone());
    let results = t.results.clone().or_else(|| {
        let script = Path::new(info.command.as_deref()?);
        (script.file_name()? == SCRIPT_NAME).then(|| script.parent().map(Path::to_path_buf)).flatten()
    });
    let run_dir = results.and_then(|r| slurm::run_dir(&r, node.as_deref(), &t.job_id, info.restarts));
    format!(
        "{} {} {} {} {}",
        node.as_deref().unwrap_or("-"),
        t.job_id,
        info.state_text(),
        if info.state.has_ended() { info.exit_text() } else { "-".into() },
        run_dir.map_or_else(|| "-".to_string(), |d| d.display().to_string())
    )
}

/// The error of a round that could not ask Slurm: one line, exit
/// [`EXIT_NO_ANSWER`].
fn no_answer_exit(what: &str) -> ExitCode {
    to_stderr(&format!("proofbench: error: {what}\n"));
    ExitCode::from(EXIT_NO_ANSWER)
}

/// The ids none of Slurm's commands knows, as a usage error's line.
fn unknown_ids(jobs: &[&Tracked], known: &BTreeMap<String, JobInfo>) -> Option<String> {
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

/// `slurm status`: one line per job. A job Slurm does not know is a bad
/// argument (its line says UNKNOWN; exit 2); a job Slurm did not answer
/// for within [`HELPER_TIMEOUT`] has no line and is [`EXIT_NO_ANSWER`].
fn status(args: &SlurmJobsArgs) -> anyhow::Result<ExitCode> {
    let jobs = tracked(&args.jobs)?;
    let ids: Vec<String> = jobs.iter().map(|t| t.job_id.clone()).collect();
    let poll = query(&ids, true, None)?;
    let lines: String = jobs.iter().filter_map(|t| poll.known.get(&t.job_id).map(|info| job_line(t, info) + "\n")).collect();
    Out::new().print(&lines)?;
    if let Some(why) = poll.no_answer {
        let mut silent: Vec<&str> = ids.iter().filter(|id| !poll.known.contains_key(*id)).map(String::as_str).collect();
        silent.dedup();
        return Ok(no_answer_exit(&format!("Slurm did not answer ({why}), so the state of {} is not known", silent.join(", "))));
    }
    if let Some(line) = unknown_ids(&jobs.iter().collect::<Vec<_>>(), &poll.known) {
        return Err(UsageError(line).into());
    }
    Ok(ExitCode::SUCCESS)
}

/// Why a job that did not complete ended: its state, exit code, Slurm's
/// reason, its attempts and the last line of its output file (what the job
/// itself said).
fn failure(t: &Tracked, info: &JobInfo) -> String {
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
    let said = t.output.as_ref().and_then(|f| fs::read_to_string(f).ok()).and_then(|text| {
        text.lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map(|l| format!("'{}' in {}", l, t.output.as_ref().map(|p| p.display()).unwrap()))
    });
    why.extend(said);
    format!("{who} {}", why.join(", "))
}

/// Exits 130 when SIGINT, SIGTERM or SIGHUP arrives while `wait` waits
/// (the jobs go on); the Slurm command it was running dies with it.
fn exit_on_signal() -> anyhow::Result<()> {
    crate::runner::signals::install()?;
    crate::runner::signals::set_waker(Some(Box::new(|| {
        to_stderr("proofbench: slurm wait interrupted; the jobs go on (follow them again with slurm wait or slurm status)\n");
        std::process::exit(crate::runner::EXIT_INTERRUPTED.into());
    })));
    Ok(())
}

/// `slurm wait`: asks Slurm once a second until every job has ended,
/// printing each end once. A round Slurm did not answer is asked again
/// (said once on stderr, and again when it answers), until `--timeout`,
/// which bounds every command it runs too.
fn wait(args: &SlurmWaitArgs) -> anyhow::Result<ExitCode> {
    let jobs = tracked(&args.jobs)?;
    exit_on_signal()?;
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let mut ended: BTreeSet<String> = BTreeSet::new();
    let mut failures: Vec<String> = Vec::new();
    let mut unknown: Vec<&Tracked> = Vec::new();
    let mut completed = 0;
    let mut silent: Option<String> = None;
    let mut last: BTreeMap<String, JobInfo> = BTreeMap::new();
    loop {
        let waiting: Vec<&Tracked> = jobs.iter().filter(|t| !ended.contains(&t.job_id)).collect();
        let mut ids: Vec<String> = waiting.iter().map(|t| t.job_id.clone()).collect();
        ids.dedup();
        let poll = query(&ids, false, deadline)?;
        let mut lines = String::new();
        for t in waiting {
            let Some(info) = poll.known.get(&t.job_id) else { continue };
            last.insert(t.job_id.clone(), info.clone());
            if !(info.state.has_ended() || matches!(info.state, JobState::Unknown(_))) {
                continue;
            }
            ended.insert(t.job_id.clone());
            lines += &(job_line(t, info) + "\n");
            match &info.state {
                JobState::Completed => completed += 1,
                JobState::Unknown(_) => unknown.push(t),
                _ => failures.push(failure(t, info)),
            }
        }
        Out::new().print(&lines)?;
        let done = jobs.iter().all(|t| ended.contains(&t.job_id)) || deadline.is_some_and(|d| Instant::now() >= d);
        // Said once when Slurm stops answering and once when it answers again
        // (the end says the rest).
        match (&poll.no_answer, &silent) {
            (Some(why), None) if !done => {
                to_stderr(&format!("proofbench: Slurm does not answer ({why}); asking again every second (the jobs go on)\n"))
            }
            (None, Some(_)) if !done => to_stderr("proofbench: Slurm answers again\n"),
            _ => {}
        }
        silent = poll.no_answer.clone();
        if done {
            break;
        }
        std::thread::sleep(POLL.min(left(deadline)));
    }
    let left: Vec<String> = jobs
        .iter()
        .filter(|t| !ended.contains(&t.job_id))
        .map(|t| last.get(&t.job_id).map_or_else(|| t.job_id.clone(), |i| format!("{} ({})", t.job_id, i.state.name())))
        .collect();
    let unknown = unknown_ids(&unknown, &last);
    if !failures.is_empty() || (!left.is_empty() && silent.is_none()) {
        failures.extend(unknown);
        if !left.is_empty() {
            let seen = if silent.is_some() { " (Slurm did not answer the last time it was asked)" } else { "" };
            failures.push(format!("--timeout: still not ended: {}{seen}", left.join(", ")));
        }
        to_stderr(&format!(
            "proofbench: error: {completed} of {} completed; {}\n",
            counted(jobs.len(), "job", "jobs"),
            failures.join("; ")
        ));
        return Ok(ExitCode::from(1));
    }
    if !left.is_empty() {
        return Ok(no_answer_exit(&format!(
            "--timeout: Slurm did not answer ({}), so these jobs' states are not known: {}; {completed} of {} completed",
            silent.unwrap_or_default(),
            left.join(", "),
            counted(jobs.len(), "job", "jobs")
        )));
    }
    if let Some(line) = unknown {
        return Err(UsageError(line).into());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        run_words(&shlex::split(line).unwrap())
    }

    #[test]
    fn the_run_words_are_the_command_line_without_the_slurm_flags() {
        assert_eq!(
            words(
                "pb slurm submit os.syscall --nodelist n[1-3] --profile quick --results=/r --sbatch-arg --time=5 --trials 1 --no-history"
            ),
            ["os.syscall", "--profile", "quick", "--trials", "1"]
        );
        assert_eq!(words("pb slurm submit --remote-exe /x -p a=1 -- --nodelist"), ["-p", "a=1", "--", "--nodelist"]);
    }

    #[test]
    fn job_ids_are_numbers_or_array_elements() {
        assert!(is_job_id("12") && is_job_id("12_3"));
        assert!(!is_job_id("") && !is_job_id("12_") && !is_job_id("n1") && !is_job_id("results"));
    }
}
