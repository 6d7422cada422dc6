//! A bisect on disk: its directory (`bisect.json`, the page, `builds/`,
//! `steps/`), the real [`Lab`] (worktrees, the build command, one paired
//! A/B run in lockstep per measurement), and resuming: a bisect that finds
//! its record (`--resume DIR`, or the same bisect asked again with the same
//! `--out`) answers every build and measurement it already has from it, so
//! that the search replays to where it stopped without building or
//! measuring again.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::git::{self, Repo};
use super::record::{BuildRecord, MeasureRecord, Mode, Record};
use super::{Call, Lab, Measured, Purpose, Step};
use crate::compare::{self, Verdict, Word};
use crate::evidence::dir::write_atomic;
use crate::model::{Stopped, UsageError};
use crate::process::signals;
use crate::runner::{self, RunRequest};

/// The schema of bisect.json.
pub const SCHEMA: &str = "proofbench.bisect/1";

/// The environment variable a command workload's command reads to run the
/// build of the commit being measured: the commit's worktree.
pub const BUILD_VAR: &str = "PROOFBENCH_BUILD";
/// With `--exe`: the built program, `$PROOFBENCH_BUILD/EXE`.
pub const BUILD_EXE_VAR: &str = "PROOFBENCH_BUILD_EXE";

/// What a bisect was asked, checked by the command layer.
pub struct Config {
    pub repo: PathBuf,
    pub good: String,
    pub bad: String,
    pub build: Option<String>,
    pub exe: Option<String>,
    /// `--build-timeout`: a build that takes longer is killed, its commit skipped.
    pub build_timeout: std::time::Duration,
    /// The A/B run every measurement makes (its variants replaced).
    pub request: RunRequest,
    /// `--out`: where the bisect's directory goes.
    pub out: PathBuf,
    /// `--resume DIR`.
    pub resume: Option<PathBuf>,
    /// The bisect's arguments (after `bisect`), for `--resume`.
    pub argv: Vec<String>,
    /// Whether `--workloads` was given (command workloads measure the build).
    pub commands: bool,
}

/// The real lab of a bisect in `dir`.
struct RealLab<'a> {
    cfg: &'a Config,
    repo: &'a Repo,
    dir: PathBuf,
    rec: Record,
}

impl RealLab<'_> {
    fn save(&self) -> anyhow::Result<()> {
        save(&self.dir, &self.rec)
    }

    fn tree(&self, i: usize) -> PathBuf {
        self.dir.join("builds").join(&self.rec.commits[i].sha)
    }

    /// The variant that measures commit `i`'s build, named `name`.
    fn variant(&self, name: &str, i: usize) -> String {
        let tree = self.tree(i);
        match self.rec.mode {
            Mode::Exe => format!("{name}=exe={}", tree.join(&self.rec.exe).display()),
            Mode::Env if self.cfg.exe.is_some() => {
                format!("{name}=env={BUILD_VAR}={},env={BUILD_EXE_VAR}={}", tree.display(), tree.join(&self.rec.exe).display())
            }
            Mode::Env => format!("{name}=env={BUILD_VAR}={}", tree.display()),
        }
    }
}

impl Lab for RealLab<'_> {
    fn build(&mut self, i: usize) -> anyhow::Result<bool> {
        let c = self.rec.commits[i].clone();
        let tree = self.tree(i);
        if let Some(b) = self.rec.builds.get(&c.sha) {
            // Reused when its worktree is still there.
            if !b.ok || tree.join(&self.rec.exe).exists() {
                return Ok(b.ok);
            }
        }
        if signals::interrupted() {
            bail!(Stopped("a stop signal arrived".into()));
        }
        std::fs::create_dir_all(self.dir.join("builds"))?;
        self.repo.worktree(&tree, &c.sha)?;
        let log = format!("builds/{}.log", c.sha);
        let (mut ok, took) = git::build(&self.rec.build, &tree, &self.dir.join(&log), self.cfg.build_timeout)?;
        if ok && self.rec.mode == Mode::Exe && !tree.join(&self.rec.exe).is_file() {
            ok = false;
        }
        println!(
            "{} {} {}{}",
            if ok { "built" } else { "build failed, skipped:" },
            c.short(),
            crate::text::format::seconds(took.as_secs_f64()),
            if ok { String::new() } else { format!(" (log: {})", self.dir.join(&log).display()) }
        );
        self.rec.builds.insert(c.sha.clone(), BuildRecord { ok, seconds: took.as_secs_f64(), log });
        self.rec.built_now += 1;
        self.save()?;
        Ok(ok)
    }

    fn measure(&mut self, purpose: Purpose, a: usize, b: usize, attempt: u32) -> anyhow::Result<Measured> {
        let (sa, sb) = (self.rec.commits[a].sha.clone(), self.rec.commits[b].sha.clone());
        let confirming = purpose == Purpose::Culprit;
        if let Some(m) = self.rec.measured.iter().find(|m| m.a == sa && m.b == sb && m.attempt == attempt && m.confirming == confirming) {
            return Ok(m.measured.clone());
        }
        if signals::interrupted() {
            bail!(Stopped("a stop signal arrived".into()));
        }
        let n = self.rec.measured.len() + 1;
        let run_dir = self.dir.join("steps").join(format!("{n:02}-{}-{}-{attempt}", &sa[..10], &sb[..10]));
        if run_dir.exists() {
            // A step an interruption cut short, by this bisect: measured anew.
            std::fs::remove_dir_all(&run_dir).with_context(|| format!("removing the unfinished step {}", run_dir.display()))?;
        }
        std::fs::create_dir_all(self.dir.join("steps"))?;
        let mut req = self.cfg.request.clone();
        req.spec.options.selection.variants = vec![self.variant("a", a), self.variant("b", b)];
        req.spec.options.selection.base = Some("a".into());
        req.spec.options.selection.lockstep = true;
        if attempt > 1 {
            // More rounds: three times the trials and the budget per attempt.
            let k = 3u32.pow(attempt - 1);
            let o = &mut req.spec.options.measurement;
            o.max_trials = Some(o.max_trials.unwrap_or(crate::plan::LOCKSTEP_MAX_PAIRS).max(o.trials.unwrap_or(0)) * k);
            let d = crate::model::profile::ProfileDefaults::of(o.profile);
            let ms = Duration::from_millis;
            o.run_budget = Some(o.run_budget.unwrap_or(ms(2 * d.run_budget_ms)) * k);
            o.time_budget = Some(o.time_budget.unwrap_or(ms(d.cell_budget_ms)) * k);
        }
        req.output.run_dir = Some(run_dir.clone());
        req.output.commit = Some(sb.clone());
        req.output.quiet = true;
        req.silent = true;
        req.output.json = false;
        let start = Instant::now();
        let ran = runner::run(&req)?;
        let seconds = start.elapsed().as_secs_f64();
        if signals::interrupted() {
            bail!(Stopped(format!("a stop signal arrived during the A/B run {}", run_dir.display())));
        }
        let dir = ran.runs.first().map_or(run_dir, |(d, _)| d.clone());
        let measured = judge(&dir, seconds)?;
        self.rec.measured.push(MeasureRecord { a: sa, b: sb, attempt, confirming, measured: measured.clone() });
        self.rec.measured_now += 1;
        self.save()?;
        Ok(measured)
    }

    fn step_done(&mut self, step: &Step) {
        let c = &self.rec.commits;
        let r = step.result();
        println!(
            "step {:>2} ({}): {} {} against {}: {} {}{}",
            self.rec.steps.len() + 1,
            step.purpose.as_str(),
            c[step.b].short(),
            c[step.b].headline(40),
            c[step.a].short(),
            r.ratio_text(),
            step.said(),
            if step.attempts.len() > 1 { format!(" ({} attempts)", step.attempts.len()) } else { String::new() }
        );
        self.rec.steps.push(step.clone());
        if let Err(e) = self.save() {
            crate::text::out::to_stderr(&format!("proofbench: warning: bisect.json not saved: {e:#}\n"));
        }
    }
}

/// The verdict of the A/B run in `dir`: its one row of `b` against `a`.
fn judge(dir: &Path, seconds: f64) -> anyhow::Result<Measured> {
    let stored = crate::evidence::read_run(dir)?;
    let opts = compare::Options { threshold: 0.02, across_machines: false, ignore_params: Vec::new(), equivalence: None };
    let comparisons = compare::paired::compare_run(&stored, &dir.display().to_string(), &opts);
    let row =
        comparisons.first().and_then(|c| c.rows.first()).with_context(|| format!("{}: the A/B run compared no row", dir.display()))?;
    let call = match (row.word, row.verdict) {
        (Some(Word::Different), Verdict::Regressed) => Call::Worse,
        (Some(Word::Different), _) => Call::Better,
        (Some(Word::Same), _) => Call::Same,
        (Some(Word::Unknown), _) => Call::Unknown,
        (None, _) => bail!("{}: the row could not be compared ({}); see its report.md", dir.display(), row.reason),
    };
    Ok(Measured {
        call,
        ratio: row.ratio,
        ci95: row.ratio_ci95,
        run_dir: Some(dir.display().to_string()),
        reason: row.reason.clone(),
        seconds,
    })
}

/// Locks `dir` for this bisect (`flock` on `.lock`, released if it dies).
fn lock(dir: &Path) -> anyhow::Result<File> {
    let f = File::create(dir.join(".lock")).with_context(|| format!("locking {}", dir.display()))?;
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(UsageError(format!("{}: another bisect is using this directory", dir.display())).into());
    }
    Ok(f)
}

/// The directory of an earlier bisect under `out` with the same key (the
/// newest), if any.
fn earlier(out: &Path, key: &str) -> Option<(PathBuf, Record)> {
    let mut found: Vec<(PathBuf, Record)> = std::fs::read_dir(out)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("bisect-")))
        .filter_map(|p| {
            let r: Record = serde_json::from_slice(&std::fs::read(p.join("bisect.json")).ok()?).ok()?;
            (r.key == key).then_some((p, r))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.pop()
}

/// Reads the record of `--resume DIR`: a usage error naming the flag when
/// there is none.
pub fn read_record(dir: &Path) -> anyhow::Result<Record> {
    let file = dir.join("bisect.json");
    let bytes = std::fs::read(&file).map_err(|e| UsageError(format!("--resume {}: no bisect there ({e})", dir.display())))?;
    let r: Record = serde_json::from_slice(&bytes)
        .map_err(|e| UsageError(format!("--resume {}: bisect.json is not a bisect's ({e})", dir.display())))?;
    if r.schema != SCHEMA {
        return Err(UsageError(format!("--resume {}: bisect.json has schema {}, not {SCHEMA}", dir.display(), r.schema)).into());
    }
    Ok(r)
}

/// The build of a proofbench commit when `--build` is not given: `cargo
/// build --release` into one cargo target directory that every commit of
/// the bisect shares (`<bisect>/cargo-target`, the worktrees being
/// `<bisect>/builds/<sha>`), so that a commit after the first rebuilds
/// what changed rather than every crate; the binary is then copied into
/// the worktree's `target/release`, where the next build cannot overwrite it.
pub const PROOFBENCH_BUILD: &str = "CARGO_TARGET_DIR=../../cargo-target cargo build --release \
     && mkdir -p target/release && cp ../../cargo-target/release/proofbench target/release/proofbench";

/// Runs the bisect `cfg` asks for; returns its exit code (0 a culprit
/// named, 1 none, 130 interrupted) and its directory.
pub fn run(cfg: &Config) -> anyhow::Result<(u8, PathBuf)> {
    signals::install()?;
    let started = Instant::now();
    let repo = Repo::open(&cfg.repo)?;
    let good = repo.resolve(&cfg.good, "--good")?;
    let bad = repo.resolve(&cfg.bad, "--bad")?;
    let proofbench = repo.is_proofbench();
    let mode = if cfg.commands { Mode::Env } else { Mode::Exe };
    if mode == Mode::Exe && !proofbench {
        return Err(UsageError(format!(
            "--workloads: {} is not proofbench, so its builds are measured by a command workload whose command runs \
             ${BUILD_VAR}/<program>; give its file with --workloads",
            repo.dir.display()
        ))
        .into());
    }
    if mode == Mode::Env && !cfg.request.spec.commands.iter().any(|d| serde_json::to_string(d).is_ok_and(|s| s.contains(BUILD_VAR))) {
        return Err(UsageError(format!(
            "--workloads: no command workload names ${BUILD_VAR}, so every commit would measure the same program: run the \
             build from there (e.g. command = '\"${BUILD_VAR}/prog\"' with shell = true)"
        ))
        .into());
    }
    let build = match (&cfg.build, proofbench) {
        (Some(b), _) if b.trim().is_empty() => return Err(UsageError("--build is empty".into()).into()),
        (Some(b), _) => b.clone(),
        (None, true) => PROOFBENCH_BUILD.into(),
        (None, false) => {
            return Err(UsageError(format!(
                "--build: {} is not proofbench; give the command that builds a commit in its worktree (e.g. --build 'make')",
                repo.dir.display()
            ))
            .into());
        }
    };
    let exe = match (&cfg.exe, mode) {
        (Some(e), _) if Path::new(e).is_absolute() || e.split('/').any(|p| p == "..") => {
            return Err(UsageError(format!("--exe {e}: a path inside the worktree (relative, without ..)")).into());
        }
        (Some(e), _) => e.clone(),
        (None, Mode::Exe) => "target/release/proofbench".into(),
        (None, Mode::Env) => String::new(),
    };
    let commits = repo.range(&good, &bad)?;
    if commits.len() < 2 {
        return Err(UsageError(format!("--good {} and --bad {}: the same commit, nothing to bisect", cfg.good, cfg.bad)).into());
    }
    let key =
        serde_json::to_string(&(&good, &bad, &build, &exe, &cfg.request.spec.options, &cfg.request.spec.commands, cfg.request.spec.seed))?;
    let found = match &cfg.resume {
        Some(d) => Some((d.clone(), read_record(d)?)),
        None => earlier(&cfg.out, &key),
    };
    let (dir, mut rec) = match found {
        Some((d, r)) => {
            println!("resuming the bisect in {}", d.display());
            (d, r)
        }
        None => {
            let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect();
            let d = cfg.out.join(format!("bisect-{stamp}"));
            std::fs::create_dir_all(&d).map_err(|e| UsageError(format!("--out {}: {e}", cfg.out.display())))?;
            let rec = Record {
                schema: SCHEMA.into(),
                state: "running".into(),
                argv: cfg.argv.clone(),
                key,
                repo: repo.dir.display().to_string(),
                build,
                exe,
                mode,
                commits,
                builds: BTreeMap::new(),
                measured: Vec::new(),
                steps: Vec::new(),
                outcome: None,
                culprit_stat: None,
                error: None,
                wall_seconds: 0.0,
                sessions: 0,
                built_now: 0,
                measured_now: 0,
            };
            (d, rec)
        }
    };
    let dir = std::path::absolute(&dir)?;
    let _lock = lock(&dir)?;
    let earlier_wall = rec.wall_seconds;
    rec.state = "running".into();
    rec.steps.clear();
    rec.sessions += 1;
    rec.built_now = 0;
    rec.measured_now = 0;
    rec.error = None;
    println!("bisect of {} commits, {}..{}: {}", rec.commits.len(), &good[..10], &bad[..10], dir.display());
    let mut lab = RealLab { cfg, repo: &repo, dir: dir.clone(), rec };
    lab.save()?;
    let result = super::search(lab.rec.commits.len(), &mut lab);
    let mut rec = lab.rec;
    rec.wall_seconds = earlier_wall + started.elapsed().as_secs_f64();
    let code = match result {
        Ok(outcome) => {
            if let super::Answer::Culprit { index, .. } = outcome.answer {
                rec.culprit_stat = repo.show_stat(&rec.commits[index].sha).ok();
            }
            let named = matches!(outcome.answer, super::Answer::Culprit { .. });
            rec.outcome = Some(outcome);
            rec.state = "finished".into();
            Ok(if named { 0 } else { 1 })
        }
        Err(e) => {
            let stopped = crate::exit_code_of(&e) == runner::EXIT_INTERRUPTED;
            rec.state = if stopped { "interrupted" } else { "failed" }.into();
            rec.error = Some(format!("{e:#}"));
            if stopped { Ok(runner::EXIT_INTERRUPTED) } else { Err(e) }
        }
    };
    // The record and the page are written however the bisect ended.
    save(&dir, &rec)?;
    super::page::write(&dir, &rec)?;
    Ok((code?, dir))
}

/// Writes the bisect's record, `bisect.json`, whole (renamed into place).
fn save(dir: &Path, rec: &Record) -> anyhow::Result<()> {
    write_atomic(&dir.join("bisect.json"), &serde_json::to_vec_pretty(rec)?)?;
    Ok(())
}
