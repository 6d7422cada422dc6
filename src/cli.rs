//! cli: every command-line flag, in one place (clap derive).
//!
//! This module only describes and parses what the user typed; it depends on
//! nothing in the crate but the vocabulary of `model`, where the run's
//! settings are declared in their flag groups (`model::settings`). The handlers of
//! `commands` turn what was typed into configurations for the stages
//! (`plan`, `runner`...); values that clap cannot check alone are validated
//! there, with errors that name the flag.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::ExportFormat;
use crate::model::settings::{Gate, Launch, Output, RunOptions};
pub use crate::model::settings::{
    MAX_SETTLE, MAX_TIMEOUT, MIN_TIMEOUT, parse_duration, parse_percent, parse_run_budget, parse_settle, parse_threshold,
    parse_time_budget, parse_timeout,
};

/// Runs systems benchmarks on Linux and writes every result as an evidence record.
#[derive(Debug, Parser)]
#[command(name = "proofbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run benchmarks and write a results directory.
    Run(Box<RunArgs>),
    /// List the workloads: unit, timed region, verifier, parameters.
    List(ListArgs),
    /// Print the machine record (envelope) of this machine.
    Env(EnvArgs),
    /// Re-render the report of a stored run from its records.
    Report(ReportArgs),
    /// Compare two stored runs row by row: ratio of medians with a 95%
    /// interval from the trials of both, and a verdict per row.
    Compare(CompareArgs),
    /// Many hosts' runs of the same rows side by side: per row, each host's
    /// median over the fleet's median (the median of the hosts' medians)
    /// with its 95% interval, the hosts beyond the noise band first.
    Fleet(FleetArgs),
    /// The SQLite history of runs: import, list, show a workload's trend,
    /// find the steps that regressed.
    History(HistoryArgs),
    /// Check a claims file (expected values or ranges per workload) against
    /// a run: a claims-vs-actual table.
    CheckClaims(CheckClaimsArgs),
    /// An A/A self-check of this machine: the selection run as two identical
    /// variants, interleaved; per row its spread, any false verdict, and the
    /// smallest change it can see here. Recorded in the history as the
    /// machine's noise profile.
    Noise(Box<RunArgs>),
    /// Find the commit between --good and --bad that moved a row: each
    /// commit it needs checked out in a worktree of its own, built, and
    /// measured against its neighbour in paired A/B runs in lockstep
    /// (SAME / DIFFERENT / UNKNOWN); the culprit confirmed against its
    /// parent. Resumable from its directory.
    Bisect(Box<BisectArgs>),
    /// Run the plan on Slurm nodes, one exclusive batch job per node, and
    /// follow the jobs: submit, status, wait (docs/LAUNCHERS.md, "Slurm").
    Slurm(SlurmArgs),
    /// Print the shell completion script of proofbench for SHELL (bash,
    /// zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff) of proofbench, or write one page per
    /// command to a directory with --dir.
    Man(ManArgs),
    /// Internal: run one cell (JSON on stdin), print one report line.
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// Internal: print TOKEN and exit 0 (the child of `os.process-spawn`).
    #[command(hide = true)]
    Noop { token: String },
    /// Internal: print the file of the object `malloc` is bound to in this
    /// process (how the runner checks an `--allocator preload:` library).
    #[command(hide = true)]
    MallocProvider,
    /// Internal: the launched side of a run through `--launcher`: read the
    /// run on stdin, run its plan here, stream its events on stdout.
    #[command(hide = true)]
    RemoteRun,
}

/// `proofbench run` and `proofbench noise`: the run's settings, in their
/// groups (`model::settings`).
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub options: RunOptions,
    #[command(flatten)]
    pub output: Output,
    #[command(flatten)]
    pub launch: Launch,
    #[command(flatten)]
    pub gate: Gate,
}

/// `proofbench bisect`: the search's own flags, then run's selection and
/// measurement flags (the A/B run every step makes).
#[derive(Clone, Debug, Args)]
pub struct BisectArgs {
    /// A commit where the row was as it should be.
    #[arg(long, value_name = "REV", required_unless_present = "resume")]
    pub good: Option<String>,

    /// A later commit (a descendant of --good) where the row had moved.
    #[arg(long, value_name = "REV", required_unless_present = "resume")]
    pub bad: Option<String>,

    /// The git repository to bisect (default: the current directory's).
    /// Its working tree and index are never touched: each commit is checked
    /// out with `git worktree add` under the bisect's directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,

    /// The command that builds a commit, run with `sh -c` in its worktree
    /// (default when the repository is proofbench: `cargo build --release`
    /// into one cargo target directory the bisect's commits share, the
    /// binary copied into the worktree; required otherwise). A commit whose
    /// build fails is skipped.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,

    /// The built program, relative to the worktree (default
    /// `target/release/proofbench` for proofbench itself, measured as an
    /// `exe=` variant; for a command workload, also given to its command as
    /// `$PROOFBENCH_BUILD_EXE`).
    #[arg(long, value_name = "PATH")]
    pub exe: Option<String>,

    /// Kill a commit's build after this long and skip the commit, as one
    /// that does not build (default 1h; 1s to 24h).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub build_timeout: Option<Duration>,

    /// Resume the bisect in DIR (a `bisect-*` directory): its builds and
    /// finished steps are reused, with the flags it was started with.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["good", "bad", "build", "exe", "build_timeout"])]
    pub resume: Option<PathBuf>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only these workloads: ids, groups or globs, as `run` takes them
    /// (`cpu`, `os.syscall`, `rt.*`). Default: every workload.
    #[arg(value_name = "WORKLOAD")]
    pub selection: Vec<String>,
    /// Print the registry as JSON.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the registry as markdown (the text of docs/WORKLOADS.md).
    #[arg(long)]
    pub markdown: bool,
    /// Also list the selftest workloads.
    #[arg(long)]
    pub include_selftest: bool,
    /// Also list the command workloads of this TOML file; repeatable.
    /// Default: ./proofbench.toml when it exists.
    #[arg(long, value_name = "FILE.toml")]
    pub workloads: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print the full record as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory (as written by `proofbench run`).
    pub run_dir: PathBuf,

    /// Print only the counters tables (context switches, migrations,
    /// faults, run-queue wait, hardware events) of every group.
    #[arg(long, conflicts_with_all = ["update_doc", "list_tables", "export"])]
    pub counters: bool,

    /// Replace every block between `<!-- proofbench:<table-id> start -->`
    /// and `<!-- proofbench:<table-id> end -->` in FILE with the current
    /// table; every other byte of FILE stays as it was.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["list_tables", "export"])]
    pub update_doc: Option<PathBuf>,

    /// List the table ids a document can embed.
    #[arg(long, conflicts_with = "export")]
    pub list_tables: bool,

    /// Print the rows in another format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub export: Option<ExportFormat>,

    /// How the report prints: for the terminal (tables fitted to its
    /// width, colour on a terminal unless NO_COLOR), or as report.md.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "terminal", conflicts_with_all = ["counters", "update_doc", "list_tables", "export"])]
    pub format: ReportFormat,

    /// Write the report as one self-contained HTML page (tables and plots
    /// inline) to FILE; without FILE to DIR/report.html; `--html -` prints it.
    #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with_all = ["counters", "update_doc", "list_tables", "export"])]
    pub html: Option<Option<PathBuf>>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base run: a run directory, or a history id (`h:12` or `#12`).
    /// Alone, a run measured with --variant: its variants compared paired
    /// by round.
    pub base: PathBuf,

    /// The candidate run: a run directory, or a history id.
    pub candidate: Option<PathBuf>,

    /// The history database that history ids refer to, and whose runs give
    /// each row its noise floor.
    #[arg(long, value_name = "PATH", default_value = "results/history.sqlite")]
    pub db: PathBuf,

    /// Noise threshold in percent: a row regresses or improves only when the
    /// whole 95% interval of its ratio lies beyond it, or beyond the row's
    /// noise floor from the history when that is larger.
    #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = parse_threshold, conflicts_with = "threshold")]
    pub noise: f64,

    /// The rvOS rule as a preset: the same test with a wider band, e.g.
    /// `--threshold 20%`.
    #[arg(long, value_name = "PERCENT", value_parser = parse_threshold)]
    pub threshold: Option<f64>,

    /// The band of SAME, e.g. `1%`: a row is SAME when its ratio's 95%
    /// interval lies inside +-PERCENT; DIFFERENT needs it beyond the noise
    /// band; anything else is UNKNOWN. Default: a run's own (variants of
    /// one run), else 2%.
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub equivalence: Option<f64>,

    #[command(flatten)]
    pub gate: Gate,

    /// With --fail-on-regression: rows that an incomplete run did not run
    /// do not fail the gate (they are still listed as not comparable).
    #[arg(long)]
    pub allow_missing: bool,

    /// Compare rows even when the two runs were made on different machines.
    #[arg(long)]
    pub across_machines: bool,

    /// Compare rows even when this parameter differs between the runs (a
    /// size or input changed on purpose, e.g. `--ignore-param range`);
    /// repeatable.
    #[arg(long = "ignore-param", value_name = "NAME")]
    pub ignore_params: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Terminal)]
    pub format: CompareFormat,

    /// Also write the comparison as one self-contained HTML page to FILE
    /// (`-`: print the page instead).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `proofbench fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Run directories, or results directories holding them (each
    /// subdirectory with a run.json is a run): at least two hosts' runs.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Noise threshold in percent: a host is an outlier in a row only when
    /// the whole 95% interval of its ratio to the fleet median lies beyond it.
    #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = parse_threshold)]
    pub noise: f64,

    /// Print the fleet as markdown (pipe tables) instead of the terminal's
    /// aligned columns, which fit its width.
    #[arg(long, conflicts_with = "export")]
    pub markdown: bool,

    /// Print one line per host and row in FORMAT instead of the tables.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub export: Option<ExportFormat>,

    /// Also write the fleet as one self-contained HTML page to FILE (`-`:
    /// print the page instead).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// How `report DIR` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// For the terminal: aligned columns fitted to its width.
    Terminal,
    /// report.md, byte for byte.
    Markdown,
}

/// How `compare` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Aligned columns fitted to the terminal's width (COLUMNS, else the
    /// terminal's, else 100), the verdicts coloured on a terminal; warnings on
    /// stderr.
    Terminal,
    /// The same table as markdown pipe tables, warnings as a quoted paragraph.
    Markdown,
    /// The comparison record (`proofbench.compare/3`).
    Json,
}

/// `proofbench history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The history database.
    #[arg(long, value_name = "PATH", default_value = "results/history.sqlite", global = true)]
    pub db: PathBuf,

    #[command(subcommand)]
    pub command: HistoryCommand,
}

/// The subcommands of `proofbench history`.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Record stored run directories (a run already held is skipped).
    Import {
        /// Run directories written by `proofbench run`, or results
        /// directories holding them (each subdirectory with a run.json is a
        /// run). All are recorded in one transaction, or none.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Every recorded run: id, date, label, commit, machine, rows ok/total.
    List,
    /// The median of a workload per run (with commit and label), and an SVG trend plot.
    Show {
        /// A workload id (`cpu.primes`).
        workload: String,
        /// Only rows whose parameter NAME has VALUE (repeatable).
        #[arg(short = 'p', long = "params", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Also write the trend plot (each series' noise floor a band, the
        /// change points marked) to FILE.svg; without it no file is written
        /// (`--html FILE` draws the plot inline).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Also write the table as one self-contained HTML page to FILE
        /// (`-`: print the page instead).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Compare each run with the next along every row series (as `compare`
    /// judges two runs) and flag the steps that regressed.
    Regressions {
        /// A workload id, a group or a glob (default: every workload).
        workload: Option<String>,
        /// Noise threshold in percent (as `compare --noise`); a row's noise
        /// floor from the history applies where it is larger.
        #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = parse_threshold)]
        noise: f64,
        /// Judge steps between runs on different machines too.
        #[arg(long)]
        across_machines: bool,
        /// The band of SAME (as `compare --equivalence`), default 2%.
        #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
        equivalence: Option<f64>,
        #[command(flatten)]
        gate: Gate,
        /// Also write the steps as one self-contained HTML page to FILE
        /// (`-`: print the page instead).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// The change points of every row series: where its level shifted over
    /// the runs of one machine, with the commits around each change, its
    /// size and the runs at each level (docs/METHODOLOGY.md).
    Changes {
        /// A workload id, a group or a glob (default: every workload).
        workload: Option<String>,
        /// Only rows whose parameter NAME has VALUE (repeatable).
        #[arg(short = 'p', long = "params", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// The smallest change named, in percent; a row's noise floor from
        /// the history applies where it is larger.
        #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = parse_threshold)]
        noise: f64,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ChangesFormat::Terminal)]
        format: ChangesFormat,
        /// Also write the changes as one self-contained HTML page to FILE
        /// (`-`: print the page instead).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
}

/// How `history changes` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ChangesFormat {
    /// A table.
    Terminal,
    /// The same table as markdown.
    Markdown,
    /// The change points as one JSON object (`proofbench.changes/1`).
    Json,
}

/// `proofbench check-claims`.
#[derive(Debug, Args)]
pub struct CheckClaimsArgs {
    /// The claims file (TOML, `[[claim]]` tables; see docs/RECORD-FORMAT.md).
    pub claims: PathBuf,

    /// The run: a run directory, or a history id (`h:12`).
    pub run: PathBuf,

    /// Exit 1 when any claim is not within its expected range (a claim not
    /// measured counts as not met).
    #[arg(long)]
    pub strict: bool,

    /// The history database that a history id refers to.
    #[arg(long, value_name = "PATH", default_value = "results/history.sqlite")]
    pub db: PathBuf,

    /// Also write the claims-vs-actual table as one self-contained HTML
    /// page to FILE (`-`: print the page instead).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {}

/// `proofbench slurm`.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    #[command(subcommand)]
    pub command: SlurmCommand,
}

/// The subcommands of `proofbench slurm`.
#[derive(Debug, Subcommand)]
pub enum SlurmCommand {
    /// Write an sbatch script that runs the whole plan on one node with the
    /// node to itself, submit it once per node, and print each node's job
    /// id. Every `run` flag is accepted and checked before anything is
    /// submitted; each job writes its own run directory under --results.
    Submit(Box<SlurmSubmitArgs>),
    /// One line per job: node, job id, state (with a requeued job's
    /// attempts: a node that failed), exit code, run directory. Exit 2 for
    /// a job Slurm does not know, 3 when Slurm did not answer.
    Status(SlurmJobsArgs),
    /// Wait until every job has ended, printing each end once: exit 0 when
    /// all completed, 1 when any failed, timed out or was cancelled (or
    /// --timeout came first), 3 when Slurm did not answer up to --timeout
    /// (it is asked again every second until then), 130 when interrupted.
    Wait(SlurmWaitArgs),
}

/// `proofbench slurm submit`.
#[derive(Debug, Args)]
pub struct SlurmSubmitArgs {
    /// The nodes to run on, one job each: a Slurm host list (`n1,n2`,
    /// `node[01-16]`).
    #[arg(long, value_name = "LIST", conflicts_with_all = ["partition", "nodes"], required_unless_present = "nodes")]
    pub nodelist: Option<String>,

    /// The partition the jobs of --nodes go to.
    #[arg(long, value_name = "NAME", requires = "nodes")]
    pub partition: Option<String>,

    /// Submit N jobs of one node each to --partition, wherever Slurm puts
    /// them (no node names known).
    #[arg(long, value_name = "N", requires = "partition", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub nodes: Option<u32>,

    /// The directory the jobs write into, on a filesystem every node
    /// mounts at the same path: the script, jobs.json, each job's output
    /// file and run directory (created if missing).
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,

    /// One more argument for sbatch, e.g. `--sbatch-arg=--time=30`
    /// (`--account`, `--qos`, `--constraint`...); repeatable.
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,

    /// The run options, as `proofbench run` takes them.
    #[command(flatten)]
    pub run: SubmitRunArgs,
}

/// The ids of the `run` flags `slurm submit` hides: those it always refuses
/// (the job is the launch, and its directory is chosen for it), and
/// `--no-history`, which every job's script gives (accepted and dropped).
const SUBMIT_HIDDEN: [&str; 8] = ["launcher", "hosts", "max_parallel", "run_dir", "out", "db", "html", "no_history"];

/// The run options of `slurm submit`: `proofbench run`'s, with
/// `SUBMIT_HIDDEN` hidden from its help, manual page and completions,
/// yet still parsed, so that each refused one is refused with its reason.
#[derive(Clone, Debug)]
pub struct SubmitRunArgs(pub RunArgs);

impl std::ops::Deref for SubmitRunArgs {
    type Target = RunArgs;
    fn deref(&self) -> &RunArgs {
        &self.0
    }
}

impl clap::FromArgMatches for SubmitRunArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        RunArgs::from_arg_matches(matches).map(SubmitRunArgs)
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
}

impl Args for SubmitRunArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        SUBMIT_HIDDEN.iter().fold(RunArgs::augment_args(cmd), |c, id| c.mut_arg(*id, |a| a.hide(true)))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        SUBMIT_HIDDEN.iter().fold(RunArgs::augment_args_for_update(cmd), |c, id| c.mut_arg(*id, |a| a.hide(true)))
    }
}

/// `proofbench slurm status`.
#[derive(Debug, Args)]
pub struct SlurmJobsArgs {
    /// Results directories written by `slurm submit` (their jobs.json) or
    /// Slurm job ids.
    #[arg(required = true, value_name = "RESULTS_DIR|JOBID")]
    pub jobs: Vec<String>,
}

/// `proofbench slurm wait`.
#[derive(Debug, Args)]
pub struct SlurmWaitArgs {
    /// Results directories written by `slurm submit` (their jobs.json) or
    /// Slurm job ids.
    #[arg(required = true, value_name = "RESULTS_DIR|JOBID")]
    pub jobs: Vec<String>,

    /// Give up after this long (the jobs go on): exit 1 naming the jobs
    /// still pending or running (3 if Slurm did not answer the last time
    /// it was asked). It bounds every Slurm command `wait` runs too.
    /// Default: wait as long as they take.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

/// `proofbench completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print the completion script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `proofbench man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (`proofbench.1`,
    /// `proofbench-run.1`, ..., created if missing) instead of printing the
    /// page of `proofbench` itself.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn thresholds_are_percentages_up_to_a_thousand() {
        assert_eq!(parse_threshold("20%").unwrap(), 20.0);
        assert_eq!(parse_threshold("2").unwrap(), 2.0);
        assert_eq!(parse_threshold("500%").unwrap(), 500.0);
        assert!(parse_threshold("-1%").is_err() && parse_threshold("2000%").is_err() && parse_threshold("lots").is_err());
    }

    #[test]
    fn durations_accept_units_and_bare_seconds() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1m 30s").unwrap(), Duration::from_secs(90));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn duration_flags_have_ranges_and_huge_numbers_do_not_panic() {
        assert_eq!(parse_timeout("1s").unwrap(), MIN_TIMEOUT);
        assert_eq!(parse_timeout("24h").unwrap(), MAX_TIMEOUT);
        for bad in ["0", "0s", "1ns", "999ms", "24h 1s", "1e20", "1e400"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_settle("0").unwrap(), Duration::ZERO);
        assert!(parse_settle("9999999h").unwrap_err().contains("between 0s and 1h"));
        assert!(parse_time_budget("9ms").is_err() && parse_time_budget("10ms").is_ok());
        assert!(parse_run_budget("1ms").is_ok() && parse_run_budget("8d").is_err());
        assert!(parse_duration("1e20").unwrap_err().contains("too long"));
        assert!(parse_duration("NaN").is_err() && parse_duration("inf").is_err());
    }

    #[test]
    fn percentages_are_bounded() {
        assert_eq!(parse_percent("2%").unwrap(), 2.0);
        assert_eq!(parse_percent("0.5").unwrap(), 0.5);
        assert!(parse_percent("0").is_err());
        assert!(parse_percent("150%").is_err());
    }
}
