//! Helpers: the binary, a temporary run directory, and readers of its records.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The proofbench binary cargo built for these tests.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_proofbench"))
}

/// A fixed, small number of trials and samples: a cell takes milliseconds.
/// Two trials (the fewest with an interval), each 1 warmup and 3 timed samples.
pub const FAST: &[&str] = &["--trials", "2", "--runs", "3", "--warmup", "1", "--settle", "0"];
/// Trials in a `FAST` run.
pub const FAST_TRIALS: usize = 2;
/// Small sizes for `cpu.primes` (a parameter no selected workload has is an error).
pub const SMALL_PRIMES: &[&str] = &["-p", "range=20000"];
/// Small sizes for `cpu.checksum`.
pub const SMALL_CHECKSUM: &[&str] = &["-p", "blocks=512", "-p", "work_rounds=4"];

/// A temporary directory holding one run directory, `run/`.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox { tmp: tempfile::tempdir().expect("temp dir") }
    }

    pub fn run_dir(&self) -> PathBuf {
        self.tmp.path().join("run")
    }

    /// `proofbench run --run-dir <tmp>/run ARGS...`, waited for.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("proofbench runs")
    }

    /// The same command, not started.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.arg("run").arg("--run-dir").arg(self.run_dir()).args(args).current_dir(self.tmp.path());
        c
    }

    pub fn run_json(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.run_dir().join("run.json")).expect("run.json")).expect("run.json is JSON")
    }

    pub fn rows(&self) -> Vec<Value> {
        rows_of(&self.run_dir())
    }

    /// `proofbench compare <tmp>/run --format json`: the variants' comparisons.
    pub fn compare_json(&self) -> Value {
        let out = Command::new(bin()).arg("compare").arg(self.run_dir()).args(["--format", "json"]).output().expect("compare runs");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("compare --format json: {e}: {}", String::from_utf8_lossy(&out.stderr)))
    }

    pub fn report_md(&self) -> String {
        std::fs::read_to_string(self.run_dir().join("report.md")).expect("report.md")
    }
}

/// The rows of a run directory, in plan order (rows.jsonl holds them in
/// the order their last trials were decided).
pub fn rows_of(dir: &Path) -> Vec<Value> {
    let mut rows: Vec<Value> = std::fs::read_to_string(dir.join("rows.jsonl"))
        .expect("rows.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each row is JSON"))
        .collect();
    rows.sort_by_key(|r| r["cell"]["index"].as_u64());
    rows
}

/// The samples of a row taken by trial `trial`.
pub fn trial_samples(row: &Value, trial: u64) -> Vec<&Value> {
    row["samples"].as_array().expect("samples").iter().filter(|s| s["trial"] == trial).collect()
}

/// The row of a workload (first one).
pub fn row<'a>(rows: &'a [Value], workload: &str) -> &'a Value {
    rows.iter().find(|r| r["cell"]["workload"] == workload).unwrap_or_else(|| panic!("no row for {workload}"))
}

/// A JSON value that must be a string.
pub fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("{v} is not a string"))
}

/// A row's id (`000-cpu.primes-workers=1`).
pub fn row_name(r: &Value) -> &str {
    s(&r["cell"]["row_id"])
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The entries of a directory (the scratch root given as `--io-dir`).
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// Runs `args` in `sb` with its scratch directories under `io` and waits for
/// the run to end (the tests give it endless sampling and a short timeout);
/// returns whether `file`, a path inside a cell's scratch directory, was seen
/// while the worker lived.
pub fn saw_scratch_file(sb: &Sandbox, args: &[&str], io: &Path, file: &str) -> bool {
    let io_arg = io.to_str().unwrap();
    let mut child = sb.command(&[args, &["--io-dir", io_arg]].concat()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    let mut seen = false;
    while child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < Duration::from_secs(60), "the run did not end");
        seen |= leftovers(io).iter().any(|d| io.join(d).join(file).exists());
        std::thread::sleep(Duration::from_millis(20));
    }
    seen
}

/// The run directories under an `--out` folder (beside them lies the history
/// database the runs recorded themselves in).
pub fn run_dirs(out: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

/// The arguments of one run of selftest.noisy in 3 trials of 10 timed
/// samples: 1 ms sleeps with 20 us of jitter, scaled by `slowdown_pct` (long
/// enough that a loaded machine's late wake-ups do not blur a 4x slowdown).
pub fn noisy_args(slowdown_pct: u32) -> Vec<String> {
    noisy_trials(slowdown_pct, 3)
}

/// [`noisy_args`] with `trials` trials.
pub fn noisy_trials(slowdown_pct: u32, trials: u32) -> Vec<String> {
    let fixed = [
        "selftest.noisy",
        "--include-selftest",
        "--runs",
        "10",
        "--warmup",
        "1",
        "--settle",
        "0",
        "-p",
        "base_us=1000",
        "-p",
        "jitter_us=20",
    ];
    fixed
        .iter()
        .map(|s| s.to_string())
        .chain(["--trials".into(), trials.to_string(), "-p".into(), format!("slowdown_pct={slowdown_pct}")])
        .collect()
}

/// Starts every command at once (output captured), then waits for each;
/// returns their outputs in order.
pub fn all_at_once(commands: impl IntoIterator<Item = Command>) -> Vec<Output> {
    let children: Vec<_> =
        commands.into_iter().map(|mut c| c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("proofbench starts")).collect();
    children.into_iter().map(|c| c.wait_with_output().expect("proofbench ends")).collect()
}

/// `c` set to start its process under umask 022, so that a file it makes
/// gets the modes a usual umask allows (0644).
pub fn umask_022(c: &mut Command) -> &mut Command {
    // SAFETY: umask is async-signal-safe and touches only the child.
    unsafe {
        c.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        })
    }
}

/// The page a `--html FILE` wrote at `file` (under [`umask_022`]): one
/// self-contained HTML page, mode 0644, whose only script is its own.
pub fn html_page(file: &Path) -> String {
    let page = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(page.starts_with("<!DOCTYPE html>\n") && page.trim_end().ends_with("</html>"), "{page}");
    assert_eq!(page.matches("<script").count(), 1, "only the page's own script: {page}");
    let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644, "{}", file.display());
    page
}

/// `tool` on PATH.
pub fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(tool)).find(|p| p.is_file())
}

/// A test that needs `tool` and cannot run without it: skipped with the
/// reason printed, except under `CI=true`, where the tool must be there
/// (.ci/run installs it).
pub fn missing(tool: &str, install: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(!ci, "`{tool}` is not on PATH and CI=true: CI must install it ({install})");
    eprintln!("skipped: no `{tool}` on PATH ({install}; .ci/run does)");
}
