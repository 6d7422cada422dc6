//! `proofbench slurm submit|status|wait`: the plan as one exclusive Slurm
//! batch job per node, and the jobs followed to their end. The script text,
//! the host lists and the reading of Slurm's output are `crate::slurm`'s;
//! this handler runs `sbatch`, `squeue`, `scontrol`, `sacct` and `scancel`
//! (with the environment it was given: `SLURM_CONF` included).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use crate::cli::{RunArgs, SlurmArgs, SlurmCommand, SlurmJobsArgs, SlurmSubmitArgs, SlurmWaitArgs};
use crate::evidence::RunKind;
use crate::model::{UsageError, utc_now};
use crate::report::terminal::{Out, to_stderr};
use crate::runner::launcher::{HELPER_TIMEOUT, capture};
use crate::slurm::{self, JOBS_FILE, JOBS_SCHEMA, JobInfo, JobState, JobsFile, SCRIPT_NAME, SubmittedJob};
use crate::text::format::counted;

/// The flags of `slurm submit` that are not `run`'s and take a value: left
/// out of the words the script passes to `proofbench run`.
const OWN_FLAGS: [&str; 6] = ["--nodelist", "--partition", "--nodes", "--results", "--sbatch-arg", "--remote-exe"];

/// How often `wait` asks Slurm.
const POLL: Duration = Duration::from_secs(1);

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
    write_script(&script, &slurm::batch_script(&exe, &run_words(&argv), &results, &argv))?;

    let mut jobs: Vec<SubmittedJob> = Vec::new();
    for target in &targets {
        let node = match target {
            Target::Node(n) => Some(n.as_str()),
            Target::Anywhere => None,
        };
        let output_pattern = results.join(format!("{}-%j.out", node.unwrap_or("slurm")));
        match sbatch(&script, node, args.partition.as_deref(), &output_pattern, &args.sbatch_args) {
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
/// submission's jobs.json is refused. Errors name `--results`.
fn results_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let fail = |e: std::io::Error| UsageError(format!("--results {}: {e}", dir.display()));
    fs::create_dir_all(dir).map_err(fail)?;
    let abs = fs::canonicalize(dir).map_err(fail)?;
    tempfile::Builder::new()
        .prefix(".proofbench-check")
        .tempfile_in(&abs)
        .map_err(|e| fail(std::io::Error::new(e.kind(), format!("not writable: {e}"))))?;
    if abs.join(JOBS_FILE).exists() {
        return Err(
            UsageError(format!("--results {}: already holds a submission ({JOBS_FILE}); give another directory", dir.display())).into()
        );
    }
    Ok(abs)
}

/// Writes the script, readable and executable by everyone (mode 0755).
fn write_script(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::evidence::dir::write_atomic(path, text.as_bytes()).map_err(|e| e.for_flag("--results"))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|e| UsageError(format!("--results {}: {e}", path.display())))?;
    Ok(())
}

/// Runs a Slurm client as the launcher's helpers run (its own process
/// group, bounded output, killed after [`HELPER_TIMEOUT`]: a controller that
/// does not answer cannot hold `wait` past its timeout); returns its
/// stdout, or its error line.
fn slurm_command(program: &str, args: &[String]) -> Result<String, String> {
    let mut command = Command::new(program);
    command.args(args);
    let out = match capture(command, HELPER_TIMEOUT) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(format!("{program} gave no answer within {} s", HELPER_TIMEOUT.as_secs())),
        Err(e) => return Err(format!("{program}: cannot run it: {e} (is Slurm installed?)")),
    };
    if out.code == Some(0) {
        return Ok(out.stdout);
    }
    let how = out.code.map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited with code {c}"));
    Err(slurm::first_error_line(&out.stderr).unwrap_or_else(|| format!("{program} {how}")))
}

/// `sbatch --parsable` of the script for one node (or the partition);
/// returns the job id, or sbatch's error line.
fn sbatch(script: &Path, node: Option<&str>, partition: Option<&str>, output: &Path, extra: &[String]) -> Result<String, String> {
    let mut args = vec!["--parsable".to_string()];
    args.extend(node.map(|n| format!("--nodelist={n}")));
    args.extend(partition.map(|p| format!("--partition={p}")));
    args.push(format!("--output={}", output.display()));
    args.extend(extra.iter().cloned());
    args.push(script.display().to_string());
    let out = slurm_command("sbatch", &args)?;
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
    match slurm_command("scancel", &ids) {
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

/// What Slurm says about each job: `squeue` for all at once; `scontrol
/// show job` for those it does not list or that have ended (their exit
/// code); `sacct` (the database, else the job completion file) for the
/// rest. A job none of them knows is `Unknown`.
fn query(ids: &[String]) -> anyhow::Result<BTreeMap<String, JobInfo>> {
    let mut known: BTreeMap<String, JobInfo> = BTreeMap::new();
    let squeue = ["-h", "-t", "all", "-o", "%i|%T|%N|%r", "-j", &ids.join(",")].map(String::from);
    match slurm_command("squeue", &squeue) {
        Ok(text) => known.extend(slurm::parse_squeue(&text).into_iter().map(|j| (j.id.clone(), j))),
        // squeue refuses the whole list when one job has left the controller.
        Err(line) if line.contains("Invalid job id") => {}
        Err(line) => anyhow::bail!("{line}"),
    }
    for id in ids {
        if known.get(id).is_some_and(|j| !j.state.has_ended()) {
            continue;
        }
        if let Ok(text) = slurm_command("scontrol", &["show", "job", "-o", id].map(String::from)) {
            known.extend(slurm::parse_scontrol(&text).into_iter().filter(|j| &j.id == id).map(|j| (j.id.clone(), j)));
        }
    }
    let missing: Vec<String> = ids.iter().filter(|id| !known.contains_key(*id)).cloned().collect();
    if !missing.is_empty() {
        let fields = ["-n", "-P", "-X", "-o", "JobID,State,ExitCode,NodeList", "-j", &missing.join(",")].map(String::from);
        let with_file: Vec<String> = std::iter::once("-c".to_string()).chain(fields.iter().cloned()).collect();
        for args in [fields.to_vec(), with_file] {
            if let Ok(text) = slurm_command("sacct", &args) {
                known.extend(slurm::parse_sacct(&text).into_iter().filter(|j| missing.contains(&j.id)).map(|j| (j.id.clone(), j)));
            }
            if missing.iter().all(|id| known.contains_key(id)) {
                break;
            }
        }
    }
    for id in ids {
        known.entry(id.clone()).or_insert_with(|| JobInfo {
            id: id.clone(),
            state: JobState::Unknown("not known to squeue, scontrol or sacct (ended long ago without accounting?)".into()),
            nodes: None,
            reason: None,
            exit_code: None,
            command: None,
        });
    }
    Ok(known)
}

/// One job's line: node, job id, state, exit code, run directory (`-` for
/// what is not known yet).
fn job_line(t: &Tracked, info: &JobInfo) -> String {
    let node = t.node.clone().or_else(|| info.nodes.clone());
    let results = t.results.clone().or_else(|| {
        let script = Path::new(info.command.as_deref()?);
        (script.file_name()? == SCRIPT_NAME).then(|| script.parent().map(Path::to_path_buf)).flatten()
    });
    let run_dir = results.and_then(|r| slurm::run_dir(&r, node.as_deref(), &t.job_id));
    let state = match (&info.state, &info.reason) {
        (JobState::Completed, _) | (_, None) => info.state.name().to_string(),
        (s, Some(r)) => format!("{} ({r})", s.name()),
    };
    format!(
        "{} {} {state} {} {}",
        node.as_deref().unwrap_or("-"),
        t.job_id,
        info.exit_text(),
        run_dir.map_or_else(|| "-".to_string(), |d| d.display().to_string())
    )
}

/// `slurm status`: one line per job.
fn status(args: &SlurmJobsArgs) -> anyhow::Result<ExitCode> {
    let jobs = tracked(&args.jobs)?;
    let ids: Vec<String> = jobs.iter().map(|t| t.job_id.clone()).collect();
    let known = query(&ids)?;
    let lines: String = jobs.iter().map(|t| job_line(t, &known[&t.job_id]) + "\n").collect();
    Out::new().print(&lines)?;
    Ok(ExitCode::SUCCESS)
}

/// Why a job that did not complete ended: its state, exit code, Slurm's
/// reason and the last line of its output file (what the job itself said).
fn failure(t: &Tracked, info: &JobInfo) -> String {
    let who = match t.node.as_deref().or(info.nodes.as_deref()) {
        Some(n) => format!("{n} (job {})", t.job_id),
        None => format!("job {}", t.job_id),
    };
    let mut why = vec![info.state.name().to_string()];
    if let JobState::Unknown(reason) = &info.state {
        why.push(reason.clone());
    }
    if info.exit_code.is_some() {
        why.push(info.exit_text());
    }
    why.extend(info.reason.clone());
    let said = t.output.as_ref().and_then(|f| fs::read_to_string(f).ok()).and_then(|text| {
        text.lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map(|l| format!("'{}' in {}", l, t.output.as_ref().map(|p| p.display()).unwrap()))
    });
    why.extend(said);
    format!("{who} {}", why.join(", "))
}

/// `slurm wait`: polls until every job has ended, printing each end once.
fn wait(args: &SlurmWaitArgs) -> anyhow::Result<ExitCode> {
    let jobs = tracked(&args.jobs)?;
    let ids: Vec<String> = jobs.iter().map(|t| t.job_id.clone()).collect();
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let mut ended: BTreeSet<String> = BTreeSet::new();
    let mut failures: Vec<String> = Vec::new();
    let mut completed = 0;
    loop {
        let known = query(&ids)?;
        let mut lines = String::new();
        for t in &jobs {
            let info = &known[&t.job_id];
            if ended.contains(&t.job_id) {
                continue;
            }
            if info.state.has_ended() || matches!(info.state, JobState::Unknown(_)) {
                ended.insert(t.job_id.clone());
                lines += &(job_line(t, info) + "\n");
                if info.state == JobState::Completed {
                    completed += 1;
                } else {
                    failures.push(failure(t, info));
                }
            }
        }
        Out::new().print(&lines)?;
        if ended.len() == jobs.len() {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let left: Vec<String> = jobs
                .iter()
                .filter(|t| !ended.contains(&t.job_id))
                .map(|t| format!("{} ({})", t.job_id, known[&t.job_id].state.name()))
                .collect();
            failures.push(format!("--timeout: still not ended: {}", left.join(", ")));
            break;
        }
        std::thread::sleep(POLL);
    }
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    to_stderr(&format!("proofbench: error: {completed} of {} completed; {}\n", counted(jobs.len(), "job", "jobs"), failures.join("; ")));
    Ok(ExitCode::from(1))
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
