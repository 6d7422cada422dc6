//! The batch script of `slurm submit`: readable, and submittable again by
//! hand with nothing but `sbatch`.

use std::path::Path;

/// The script's name in the results directory.
pub const SCRIPT_NAME: &str = "proofbench-slurm.sh";

/// `word` quoted for a POSIX shell (left bare when it needs no quotes).
fn quote(word: &str) -> String {
    // Only a NUL cannot be quoted, and no argument or path holds one.
    shlex::try_quote(word).map(|q| q.into_owned()).unwrap_or_else(|_| word.replace('\0', ""))
}

/// The text of the batch script: `exe run --run-dir DIR --no-history
/// RUN_WORDS` (the run's own words last, so that a `--` among them ends
/// nothing of ours), as one exclusive one-node job. DIR is
/// `RESULTS/<node>-<job id>` ([`super::run_dir`]): the first attempt's;
/// a job Slurm requeued (its node failed, or `scontrol requeue`) writes
/// `RESULTS/<node>-<job id>-rerunN` on its N-th restart, so that no
/// attempt finds its directory taken and every attempt's rows stay where
/// they were written. The job asks to be requeued (`--requeue`) and its
/// output file is appended to (`--open-mode=append`), each attempt's first
/// line naming it. `command_line` (the submission's) is written into a
/// comment; `results` must be absolute, as the job may start in another
/// directory.
pub fn batch_script(exe: &str, run_words: &[String], results: &Path, command_line: &[String]) -> String {
    let results_q = quote(&results.display().to_string());
    // A comment must stay one line, whatever the arguments hold.
    let comment = |s: String| s.replace(['\n', '\r'], " ");
    let line = comment(command_line.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "));
    let run: String = run_words.iter().map(|w| format!(" {}", quote(w))).collect();
    format!(
        "#!/bin/sh\n\
         # The whole proofbench plan once on the node this job runs on, with the\n\
         # node to itself; the run directory is {results}/<node>-<job id>, and\n\
         # {results}/<node>-<job id>-rerunN for the N-th restart of a job Slurm\n\
         # requeued (its node failed): each attempt keeps its own rows.\n\
         # Written by: {line}\n\
         # To submit it again by hand, once per node:\n\
         #   sbatch --nodelist=NODE --output={results}/NODE-%j.out {script}\n\
         #SBATCH --job-name=proofbench\n\
         #SBATCH --nodes=1\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --exclusive\n\
         #SBATCH --requeue\n\
         #SBATCH --open-mode=append\n\
         set -u\n\
         node=\"${{SLURMD_NODENAME:-$(hostname -s)}}\"\n\
         restarts=\"${{SLURM_RESTART_COUNT:-0}}\"\n\
         dir={results_q}/\"$node-$SLURM_JOB_ID\"\n\
         if [ \"$restarts\" != 0 ]; then dir=\"$dir-rerun$restarts\"; fi\n\
         echo \"proofbench-slurm.sh: job $SLURM_JOB_ID, attempt $((restarts + 1)), on node $node: run directory $dir\" >&2\n\
         exec {exe} run --run-dir \"$dir\" --no-history{run}\n",
        results = comment(results_q.clone()),
        script = comment(quote(&results.join(SCRIPT_NAME).display().to_string())),
        exe = quote(exe),
    )
}
