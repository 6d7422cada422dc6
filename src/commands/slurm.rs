//! `proofbench slurm submit|status|wait`: the plan as one exclusive Slurm
//! batch job per node, and the jobs followed to their end. The script text,
//! the host lists, the reading of Slurm's output, the client calls
//! (`sbatch`, `squeue`, `scontrol`, `sacct`, `scancel`, behind
//! `slurm::Cluster`) and the following of the jobs are `crate::slurm`'s;
//! this handler checks the flags, writes the script and the jobs file,
//! calls them with the real cluster, prints and sleeps between `wait`'s
//! rounds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cli::{RunArgs, SlurmArgs, SlurmCommand, SlurmJobsArgs, SlurmSubmitArgs, SlurmWaitArgs};
use crate::evidence::RunKind;
use crate::measure::clock::utc_now;
use crate::model::UsageError;
use crate::slurm::jobs::{self as follow, Ending, Target, Tracked, Wait};
use crate::slurm::{self, JOBS_FILE, JOBS_SCHEMA, JobsFile, SCRIPT_NAME, Slurm};
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
    let exe = match &args.run.launch.remote_exe {
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

    let jobs = follow::submit_all(&Slurm, &script, &targets, args.partition.as_deref(), &results, &submission, &args.sbatch_args)
        .map_err(|refused| sbatch_error(args, refused.node.as_deref(), &refused.line, &refused.cancelled))?;
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
        let cancelled = follow::cancel(&Slurm, &jobs);
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
        ("--launcher", run.launch.launcher.is_some(), "the job runs on its node itself"),
        ("--hosts", run.launch.hosts.is_some(), "give the nodes with --nodelist"),
        ("--max-parallel", run.launch.max_parallel.is_some(), "every job runs at once, as Slurm schedules them"),
        ("--run-dir", run.output.run_dir.is_some(), "each job writes RESULTS/<node>-<job id>: give --results"),
        ("--out", given("--out"), "each job writes RESULTS/<node>-<job id>: give --results"),
        ("--db", run.output.db.is_some(), "the jobs record no history: import their run directories later (proofbench history import)"),
        ("--html", run.output.html.is_some(), "each run writes report.html in its run directory"),
    ];
    if let Some((flag, _, why)) = refused.iter().find(|(_, on, _)| *on) {
        return Err(UsageError(format!("{flag}: not for slurm submit ({why})")).into());
    }
    let mut run = run.clone();
    run.launch.remote_exe = None;
    run.output.no_history = true;
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

/// The job name of a submission into `results`: `proofbench-` and the
/// results directory's name (kept to file-name characters).
fn submission_name(results: &Path) -> String {
    let name = results.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "results".into());
    format!("proofbench-{}", crate::model::file_name::bounded(&name, 48))
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

/// The error of a round that could not ask Slurm: one line, exit
/// [`EXIT_NO_ANSWER`].
fn no_answer_exit(what: &str) -> ExitCode {
    to_stderr(&format!("proofbench: error: {what}\n"));
    ExitCode::from(EXIT_NO_ANSWER)
}

/// `slurm status`: one line per job. A job Slurm does not know is a bad
/// argument (its line says UNKNOWN; exit 2); a job Slurm did not answer
/// for within [`HELPER_TIMEOUT`](crate::process::helper::HELPER_TIMEOUT) has no line and is [`EXIT_NO_ANSWER`].
fn status(args: &SlurmJobsArgs) -> anyhow::Result<ExitCode> {
    let jobs = tracked(&args.jobs)?;
    let ids: Vec<String> = jobs.iter().map(|t| t.job_id.clone()).collect();
    let poll = follow::query(&Slurm, &ids, true, None)?;
    let lines: String = jobs.iter().filter_map(|t| poll.known.get(&t.job_id).map(|info| follow::job_line(t, info) + "\n")).collect();
    Out::new().print(&lines)?;
    if let Some(why) = poll.no_answer {
        let mut silent: Vec<&str> = ids.iter().filter(|id| !poll.known.contains_key(*id)).map(String::as_str).collect();
        silent.dedup();
        return Ok(no_answer_exit(&format!("Slurm did not answer ({why}), so the state of {} is not known", silent.join(", "))));
    }
    if let Some(line) = follow::unknown_ids(&jobs.iter().collect::<Vec<_>>(), &poll.known) {
        return Err(UsageError(line).into());
    }
    Ok(ExitCode::SUCCESS)
}

/// Exits 130 when SIGINT, SIGTERM or SIGHUP arrives while `wait` waits
/// (the jobs go on); the Slurm command it was running dies with it.
fn exit_on_signal() -> anyhow::Result<()> {
    crate::process::signals::install()?;
    crate::process::signals::set_waker(Some(Box::new(|| {
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
    let tracked = tracked(&args.jobs)?;
    exit_on_signal()?;
    let deadline = args.timeout.map(|t| Instant::now() + t);
    let mut wait = Wait::new(&tracked, deadline);
    loop {
        let round = wait.round(&Slurm)?;
        Out::new().print(&round.lines)?;
        if let Some(note) = round.note {
            to_stderr(&note);
        }
        if round.done {
            break;
        }
        std::thread::sleep(POLL.min(follow::left(deadline)));
    }
    match wait.end() {
        Ending::Completed => Ok(ExitCode::SUCCESS),
        Ending::Failed(line) => {
            to_stderr(&line);
            Ok(ExitCode::from(1))
        }
        Ending::NoAnswer(what) => Ok(no_answer_exit(&what)),
        Ending::Unknown(line) => Err(UsageError(line).into()),
    }
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
