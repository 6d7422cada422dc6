//! The settings of a run, in the groups the command line gives them
//! (`proofbench run --help` heads its flags by group) and kept as they are
//! down to the record: [`RunOptions`] (what is measured: the [`Selection`]
//! and the [`Measurement`]) is what `run.json` records as `options`, field
//! for field, and what the plan is made from; [`Output`] (where the records
//! go and what the terminal shows), [`Launch`] (where the plan runs) and
//! [`Gate`] (`--fail-on-regression`, which `compare` and `history regressions`
//! flatten too) go no further than the run's request.
//! The command line derives its flags from these types (`#[command(flatten)]`),
//! so a flag, its help and the field the stages read are one declaration.
//! The value parsers the flags share are here too.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::run::CompareMode;
use super::{ColorWhen, MIN_TRIAL_BUDGET_MS, PerfPass, PinStrategy, Profile};

/// What a run measures: [`Selection`] and [`Measurement`]. `run.json`
/// records it as `options` (one flat object: the two groups' fields side
/// by side, as earlier records have them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct RunOptions {
    #[command(flatten)]
    #[serde(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    #[serde(flatten)]
    pub measurement: Measurement,
}

/// Which cells a run plans: workloads, axes, variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[command(next_help_heading = "Selection")]
pub struct Selection {
    /// Workloads to run: a group (`cpu`), an id (`cpu.primes`) or a glob
    /// (`'cpu.*'`). Default: every workload.
    #[arg(id = "selection", value_name = "SELECTION")]
    #[serde(rename = "selection")]
    pub patterns: Vec<String>,

    /// Worker counts to sweep: a list (`1,2,4`) or `auto` (1, 2, 4, ... up
    /// to the logical CPUs this process may use).
    #[arg(long, value_name = "LIST|auto")]
    pub workers: Option<String>,

    /// Also run worker counts above the logical CPU count (labelled
    /// oversubscribed).
    #[arg(long)]
    pub oversubscribe: bool,

    /// Pinning strategies for the workers of each cell; a list makes the
    /// strategy an axis (e.g. `--pin linear,avoid-smt`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none")]
    pub pin: Vec<PinStrategy>,

    /// Task runtimes for the workloads that have a `runtime` axis
    /// (e.g. `--runtime rayon,global-queue`; default: every runtime).
    #[arg(long, value_name = "LIST")]
    pub runtime: Option<String>,

    /// Allocators for the workloads that have an `allocator` axis: system,
    /// mimalloc, jemalloc (built in) or preload:<path.so> (loaded with
    /// LD_PRELOAD into the worker), e.g. `--allocator system,preload:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2`
    /// (default: the three built in).
    #[arg(long, value_name = "LIST")]
    #[serde(default)]
    pub allocator: Option<String>,

    /// `--compare-cores` or `--compare-strategies` (recorded as `compare`).
    #[command(flatten)]
    #[serde(flatten)]
    pub compare: CompareFlags,

    /// Set a workload parameter, e.g. `-p range=100000`; a comma list
    /// sweeps it as an axis. Repeatable.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,

    /// Include the `selftest.*` workloads in the default selection.
    #[arg(long)]
    pub include_selftest: bool,

    /// Directory on the filesystem that file and I/O workloads should use
    /// (each cell gets a private subdirectory, removed afterwards; default:
    /// the system temp dir).
    #[arg(long, value_name = "DIR")]
    #[serde(default, with = "lossy_path")]
    pub io_dir: Option<PathBuf>,

    /// Break the selected workloads that know this fault, to prove their
    /// verifiers fail (for tests).
    #[arg(long, value_name = "NAME", hide = true)]
    pub inject_fault: Option<String>,

    /// A variant of what is measured, `NAME=SPEC` (two or more): every cell
    /// is measured under each variant, their trials alternating inside every
    /// round, and the report compares them paired by round. SPEC is a
    /// comma-separated list of settings: `exe=PATH` (another proofbench
    /// build as the worker), `preload=LIB` (an allocator library preloaded
    /// into the worker, checked to define malloc; any other library:
    /// `env=LD_PRELOAD=LIB`, checked to load), `allocator=NAME`, `env=K=V`,
    /// `launcher=PREFIX` (e.g. `taskset -c 1`), `param=NAME=VALUE`; empty
    /// for the build as it is (`--variant a=`).
    #[arg(long = "variant", value_name = "NAME=SPEC")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,

    /// The variant the others are compared with (default: the first).
    #[arg(long, value_name = "NAME")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,

    /// With --variant: each trial of a cell starts every variant's worker
    /// together and they take their timed samples in turn (A B, B A, ...,
    /// the order drawn per set), each sample of one a few milliseconds from
    /// one of the other, on the same CPU for cells of one thread; the
    /// paired comparison then sees the change, not the machine's drift.
    /// (`noise --lockstep`: its own two variants in lockstep.)
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lockstep: bool,

    /// With --variant: the band of SAME, e.g. `1%`: a row is SAME when
    /// its ratio's interval lies inside +-PERCENT (two one-sided tests);
    /// each row takes trial pairs until SAME or DIFFERENT, or UNKNOWN when
    /// the trials or the run's budget end first. Default 2%.
    #[arg(long, value_name = "PERCENT", value_parser = parse_equivalence)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,

    /// A TOML file of command workloads (`[[workload]]` entries, see
    /// docs/COMMAND-WORKLOADS.md); repeatable. Default: ./proofbench.toml
    /// when it exists.
    #[arg(long, value_name = "FILE.toml")]
    #[serde(skip)]
    pub workloads: Vec<PathBuf>,
}

/// How each cell is measured: the profile, trials, samples, budgets and
/// timeouts, the seed, the profiling pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[command(next_help_heading = "Measurement")]
pub struct Measurement {
    /// Parameter sizes to use.
    #[arg(long, value_enum, default_value_t = Profile::Quick)]
    pub profile: Profile,

    /// Take exactly N timed samples in each trial instead of the stopping rule.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub runs: Option<u32>,

    /// Measure every cell in N trials, each a fresh worker process (default
    /// 3 quick, 5 full and seed, with more for rows whose interval stays
    /// wide; exactly N when given without --max-trials).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    #[serde(default)]
    pub trials: Option<u32>,

    /// The most trials a cell may get while its 95% interval is wider than
    /// --ci-target, or while its comparison is undecided (default 10; 30
    /// trial pairs with --lockstep).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    #[serde(default)]
    pub max_trials: Option<u32>,

    /// No round of extra trials starts once the run has taken this long
    /// (default 150 s quick, 4 h full, 8 h seed; 0s to 7d).
    #[arg(long, value_name = "DURATION", value_parser = parse_run_budget)]
    #[serde(default, rename = "run_budget_ms", with = "millis")]
    pub run_budget: Option<Duration>,

    /// Time budget for the timed samples of one cell, shared by its trials
    /// (e.g. `5s`, `500ms`; default 900 ms quick, 10 s full, 20 s seed;
    /// 10ms to 24h).
    #[arg(long, value_name = "DURATION", value_parser = parse_time_budget)]
    #[serde(default, rename = "time_budget_ms", with = "millis")]
    pub time_budget: Option<Duration>,

    /// Kill a cell's worker after this long (default 60 s in the quick
    /// profile, 10 min in full and seed, whose sizes take minutes; 1s to 24h).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    #[serde(rename = "timeout_ms", with = "millis_resolved")]
    pub timeout: Option<Duration>,

    /// Warmup samples per cell (kept in the records, marked warmup).
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,

    /// Pause between a cell's setup and its first sample (e.g. `20ms`; 0s to
    /// 1h, and shorter than the timeout).
    #[arg(long, value_name = "DURATION", value_parser = parse_settle)]
    #[serde(default, rename = "settle_ms", with = "millis")]
    pub settle: Option<Duration>,

    /// Stop a trial's sampling when the 95% CI half-width of its median is
    /// within this percentage of it, and give a row more trials while its
    /// interval is wider.
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    #[serde(rename = "ci_target_pct")]
    pub ci_target: Option<f64>,

    /// After each row's timed trials, run its worker once more under perf,
    /// outside the timed samples and their statistics: `stat` (`perf stat`
    /// on software events where the machine has no PMU) or `record` (`perf
    /// record -g`, with a `perf report` top 20 and a flame graph SVG). The
    /// artifacts go to `profiles/<row>/`; a command workload's
    /// `[workload.profile]` command runs once too. Where perf is missing or
    /// not permitted the pass is skipped, with the reason, and the rows are
    /// unaffected.
    #[arg(long, value_enum, value_name = "stat|record")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_pass: Option<PerfPass>,

    /// Seed for every random choice of the run (inputs, bootstrap).
    #[arg(long, value_name = "N")]
    #[serde(skip)]
    pub seed: Option<u64>,
}

impl Measurement {
    /// The per-trial timeout: `--timeout`, else the profile's. The command
    /// layer resolves it in place before the run ([`Measurement::resolve_timeout`]).
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or_else(|| self.profile.default_timeout())
    }

    /// Sets the timeout to the profile's when `--timeout` was not given;
    /// returns whether it was given.
    pub fn resolve_timeout(&mut self) -> bool {
        let given = self.timeout.is_some();
        self.timeout = Some(self.timeout());
        given
    }
}

/// `--compare-cores` or `--compare-strategies`: two flags on the command
/// line, one field in the record (`compare`: `cores`, `strategies` or null).
#[derive(Clone, Copy, Debug, Default, PartialEq, clap::Args)]
pub struct CompareFlags {
    /// One pinning strategy (`--pin`, default linear) at every worker count:
    /// scaling tables and plots per workload.
    #[arg(long, conflicts_with = "compare_strategies")]
    pub compare_cores: bool,

    /// The largest worker count (the allowed physical cores) under every
    /// pinning strategy: strategy tables and plots per workload.
    #[arg(long, conflicts_with_all = ["pin", "workers"])]
    pub compare_strategies: bool,
}

impl CompareFlags {
    /// The comparison asked for, if one was.
    pub fn mode(&self) -> Option<CompareMode> {
        match (self.compare_cores, self.compare_strategies) {
            (true, _) => Some(CompareMode::Cores),
            (false, true) => Some(CompareMode::Strategies),
            (false, false) => None,
        }
    }
}

impl Serialize for CompareFlags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("compare", &self.mode())?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for CompareFlags {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Recorded {
            compare: Option<CompareMode>,
        }
        let r = Recorded::deserialize(d)?;
        Ok(CompareFlags {
            compare_cores: r.compare == Some(CompareMode::Cores),
            compare_strategies: r.compare == Some(CompareMode::Strategies),
        })
    }
}

/// Where a run's records go and what the terminal shows of it.
#[derive(Clone, Debug, PartialEq, clap::Args)]
#[command(next_help_heading = "Output")]
pub struct Output {
    /// Directory that receives the run directories.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,

    /// Write into exactly this run directory (it must not hold a run).
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub run_dir: Option<PathBuf>,

    /// System label: the "System" column of every table
    /// (default `linux-<kernel release>`).
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,

    /// The commit of the system under test, recorded in run.json and the
    /// history (default: `git rev-parse HEAD` of the current directory when
    /// it is in a git repository; `none` records none).
    #[arg(long, value_name = "REV")]
    pub commit: Option<String>,

    /// The history database the run is recorded in (default
    /// `history.sqlite` in the directory that holds the run directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Do not record the run in the history database.
    #[arg(long, conflicts_with = "db")]
    pub no_history: bool,

    /// Stream each row to stdout as a JSON line as it ends.
    #[arg(long)]
    pub json: bool,

    /// No progress bar and no tables; errors and the final summary only.
    #[arg(long)]
    pub quiet: bool,

    /// Also print each group's counters table on the terminal as the group
    /// ends (report.md always has them).
    #[arg(long)]
    pub counters: bool,

    /// Print each group's full statistics tables as the group ends, and the
    /// report's whole footer at the end (what report.md holds), instead of
    /// one line per row and a short summary.
    #[arg(long)]
    pub tables: bool,

    /// Colour statuses, verdicts and headings on stdout: `auto` (when stdout
    /// is a terminal and NO_COLOR is unset or empty), `always` or `never`.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,

    /// noise only: once the run ends, also write its noise profile (the
    /// A/B tables and the A/A summary) as one self-contained HTML page to
    /// FILE. `run` writes report.html in its run directory instead.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Where the plan runs: here, or through a launcher (once per host of
/// `--hosts`).
#[derive(Clone, Debug, Default, PartialEq, clap::Args)]
#[command(next_help_heading = "Launch")]
pub struct Launch {
    /// Run the plan on the other side of this command prefix (e.g. `'ssh
    /// host'`, `'srun -N1 --exclusive'`, `'taskset -c 2-3'`): `PREFIX
    /// proofbench env --json` checks the version there, then `PREFIX
    /// proofbench remote-run` runs the whole plan there and streams its rows
    /// back. Split into words like a shell would, never run through one.
    /// See docs/LAUNCHERS.md.
    #[arg(long, value_name = "PREFIX")]
    pub launcher: Option<String>,

    /// The proofbench binary on the launched side (default: this binary's
    /// own path).
    #[arg(long, value_name = "PATH")]
    pub remote_exe: Option<String>,

    /// Run the whole plan on every host at once, through a `--launcher`
    /// containing `{host}`; one run directory per host, labelled by host.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub hosts: Option<Vec<String>>,

    /// With `--hosts`: how many hosts run at once (default: all).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: Option<u32>,
}

/// `--fail-on-regression` and how it treats disturbed and UNKNOWN rows:
/// the gate of `run`, `compare` and `history regressions` alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, clap::Args)]
#[command(next_help_heading = "Gate")]
pub struct Gate {
    /// Exit 1 when a row was DIFFERENT and worse (regressed): with `run`,
    /// a variant against the base variant; with `compare`, the candidate
    /// against the base, or a row an incomplete run did not run; with
    /// `history regressions`, a step. Exit 3 when every regression was made
    /// from disturbed trials or on a busy machine (the load may explain
    /// it); exit 4 when none regressed but some row is UNKNOWN.
    #[arg(long)]
    pub fail_on_regression: bool,

    /// With --fail-on-regression: a regression made from disturbed trials
    /// or on a busy machine fails the gate as a plain one (exit 1, not 3).
    #[arg(long, requires = "fail_on_regression")]
    pub accept_disturbed: bool,

    /// With --fail-on-regression: rows (or steps) that are UNKNOWN pass the
    /// gate (exit 0, not 4); they are still said.
    #[arg(long, requires = "fail_on_regression")]
    pub allow_unknown: bool,
}

/// Durations as whole milliseconds in the record (`run_budget_ms`...).
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// The timeout as whole milliseconds: always present in a record (the
/// profile's when `--timeout` was not given; 0 only if never resolved).
mod millis_resolved {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.map_or(0, |d| d.as_millis() as u64))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Some(Duration::from_millis(u64::deserialize(d)?)))
    }
}

/// A path in the record as text (lossy where it is not UTF-8), as
/// `--io-dir` has always been recorded.
mod lossy_path {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            Some(p) => s.serialize_some(&p.display().to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(PathBuf::from))
    }
}

/// Parses `60s`, `500ms`, `1m30s`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    match read_duration(s) {
        Ok(Some(d)) => Ok(d),
        Ok(None) => Err(format!("'{s}' is too long a duration")),
        Err(e) => Err(e),
    }
}

/// A duration, `None` when it is longer than a `Duration` holds (`1e20`,
/// `99999999999999999999h`): an error, never a panic.
fn read_duration(s: &str) -> Result<Option<Duration>, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return match Duration::try_from_secs_f64(secs) {
            Ok(d) => Ok(Some(d)),
            Err(_) if secs.is_finite() && secs > 0.0 => Ok(None),
            Err(_) => Err(format!("'{s}' is not a duration (use e.g. 5s or 500ms)")),
        };
    }
    match humantime::parse_duration(t) {
        Ok(d) => Ok(Some(d)),
        Err(humantime::DurationError::NumberOverflow) => Ok(None),
        Err(e) => Err(format!("'{s}' is not a duration ({e}; use e.g. 5s or 500ms)")),
    }
}

/// A duration accepted only from `min` to `max` (both written as the user
/// would type them in the error); `why` says what the bounds protect.
fn duration_in(s: &str, (min, min_text): (Duration, &str), (max, max_text): (Duration, &str), why: &str) -> Result<Duration, String> {
    match read_duration(s)? {
        Some(d) if (min..=max).contains(&d) => Ok(d),
        _ => Err(format!("must be between {min_text} and {max_text} ({why})")),
    }
}

const HOUR: Duration = Duration::from_secs(3600);

/// The shortest `--timeout`: one second. A trial's clock starts when its
/// worker is spawned, and before it can measure anything the worker must be
/// exec'd (through a launcher: `ssh`, `srun`), read its cell, load its
/// allocator, prepare its inputs and write its report; on a loaded machine
/// that alone takes tens to hundreds of milliseconds. A shorter timeout
/// would only turn every row into a `timeout` that says nothing about the
/// workload.
pub const MIN_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest `--timeout`: a day. The seed profile's largest cells take
/// minutes; a trial that needs more than a day is a hang.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// The longest `--settle`: an hour, far beyond what lets a machine's
/// frequency and caches settle.
pub const MAX_SETTLE: Duration = HOUR;

/// `--timeout`: from [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`].
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    duration_in(s, (MIN_TIMEOUT, "1s"), (MAX_TIMEOUT, "24h"), "a worker needs about a second to start and report")
}

/// `--settle`: from 0 to [`MAX_SETTLE`] (the run also checks it against the
/// timeout, which it must be shorter than).
pub fn parse_settle(s: &str) -> Result<Duration, String> {
    duration_in(s, (Duration::ZERO, "0s"), (MAX_SETTLE, "1h"), "the pause before a cell's first sample")
}

/// `--time-budget`: at least one trial's share (`MIN_TRIAL_BUDGET_MS`), at most a day.
pub fn parse_time_budget(s: &str) -> Result<Duration, String> {
    let min = Duration::from_millis(MIN_TRIAL_BUDGET_MS);
    duration_in(s, (min, "10ms"), (MAX_TIMEOUT, "24h"), "the timed samples of one cell, shared by its trials")
}

/// `--run-budget`: from 0 (no round of extra trials) to a week.
pub fn parse_run_budget(s: &str) -> Result<Duration, String> {
    duration_in(s, (Duration::ZERO, "0s"), (7 * 24 * HOUR, "7d"), "after it no round of extra trials starts")
}

/// A percentage, `2`, `2%` or `0.5%`, accepted only inside `range`;
/// `expected` names the range in the error.
fn percent_in(s: &str, range: impl std::ops::RangeBounds<f64>, expected: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && range.contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a percentage {expected}")),
    }
}

/// A CI target: above 0 and below 100 percent.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let positive = (std::ops::Bound::Excluded(0.0), std::ops::Bound::Excluded(100.0));
    percent_in(s, positive, "between 0 and 100 (e.g. 2%)")
}

/// A comparison threshold: `20`, `20%` or `500%` (0 to 1000 percent).
pub fn parse_threshold(s: &str) -> Result<f64, String> {
    percent_in(s, 0.0..=1000.0, "between 0 and 1000 (e.g. 2% or 20%)")
}

/// `--equivalence`: a percentage above 0 and below 100, kept as a fraction
/// (`2%` is 0.02), as the record holds it.
pub fn parse_equivalence(s: &str) -> Result<f64, String> {
    parse_percent(s).map(|p| p / 100.0)
}

#[cfg(test)]
impl RunOptions {
    /// The options `proofbench run WORDS...` gives (for tests): the
    /// defaults the command line has, not a second list of them.
    pub fn from_words(words: &[&str]) -> RunOptions {
        #[derive(clap::Parser)]
        struct Words {
            #[command(flatten)]
            options: RunOptions,
        }
        let parsed = <Words as clap::Parser>::try_parse_from(std::iter::once("run").chain(words.iter().copied()));
        parsed.unwrap_or_else(|e| panic!("{words:?}: {e}")).options
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `options` as run.json has recorded it before the settings were
    /// grouped (a default-shaped run, taken from a stored record).
    fn recorded() -> serde_json::Value {
        json!({"selection": ["cpu.primes", "os.syscall"], "profile": "quick", "workers": "1,2", "oversubscribe": false,
               "pin": ["none"], "runtime": null, "allocator": null, "compare": null, "runs": null, "trials": 3,
               "max_trials": null, "run_budget_ms": null, "time_budget_ms": null, "timeout_ms": 60000, "warmup": null,
               "settle_ms": null, "ci_target_pct": null, "params": ["range=100000"], "include_selftest": false,
               "io_dir": null, "inject_fault": null})
    }

    #[test]
    fn the_command_line_groups_are_recorded_as_earlier_records_have_them() {
        let mut o = RunOptions::from_words(&["cpu.primes", "os.syscall", "--workers", "1,2", "--trials", "3", "-p", "range=100000"]);
        assert!(!o.measurement.resolve_timeout(), "no --timeout given");
        assert_eq!(serde_json::to_value(&o).unwrap(), recorded());
        let back: RunOptions = serde_json::from_value(recorded()).unwrap();
        assert_eq!(back, o, "an earlier record reads back into the same groups");
    }

    #[test]
    fn every_recorded_setting_keeps_its_name_unit_and_form() {
        let mut o = RunOptions::from_words(&[
            "--variant",
            "a=",
            "--variant",
            "b=env=X=1",
            "--base",
            "b",
            "--lockstep",
            "--equivalence",
            "1%",
            "--settle",
            "20ms",
            "--run-budget",
            "10s",
            "--time-budget",
            "2s",
            "--timeout",
            "30s",
            "--io-dir",
            "/tmp/x",
            "--compare-cores",
            "--perf-pass",
            "stat",
            "--ci-target",
            "0.5",
            "--max-trials",
            "7",
            "--seed",
            "9",
            "--workloads",
            "w.toml",
        ]);
        assert!(o.measurement.resolve_timeout(), "--timeout given");
        let v = serde_json::to_value(&o).unwrap();
        for (key, want) in [
            ("variants", json!(["a=", "b=env=X=1"])),
            ("base", json!("b")),
            ("lockstep", json!(true)),
            ("equivalence", json!(0.01)),
            ("settle_ms", json!(20)),
            ("run_budget_ms", json!(10_000)),
            ("time_budget_ms", json!(2000)),
            ("timeout_ms", json!(30_000)),
            ("io_dir", json!("/tmp/x")),
            ("compare", json!("cores")),
            ("perf_pass", json!("stat")),
            ("ci_target_pct", json!(0.5)),
            ("max_trials", json!(7)),
        ] {
            assert_eq!(v[key], want, "{key} in {v}");
        }
        // The seed and the workload files are recorded elsewhere (the run's
        // seed; the command workloads' definitions), never as options.
        assert!(v.get("seed").is_none() && v.get("workloads").is_none(), "{v}");
        let back: RunOptions = serde_json::from_value(v).unwrap();
        assert_eq!((back.selection.compare.mode(), back.measurement.timeout), (Some(CompareMode::Cores), Some(Duration::from_secs(30))));
        assert_eq!((back.measurement.seed, back.selection.workloads.len()), (None, 0));
    }
}
