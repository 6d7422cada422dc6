//! The first stage of a run: what was asked, checked into one value
//! ([`RunSpec`], what is measured, inside [`RunRequest`], which adds where
//! it is written and shown) before any machine is contacted; then resolved
//! against the machine that runs the plan into everything the rounds need
//! ([`RunConfig`]; ripgrep's two stages). Nothing here starts a worker or
//! writes a file; every refusal is a usage error naming its flag.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::envelope::Envelope;
use crate::evidence::RunKind;
use crate::model::command::CommandDef;
use crate::model::settings::Output;
use crate::model::{Cell, ColorWhen, Reading, SettingKey, UsageError, Variant};
use crate::plan::{self, Plan, RunOptions};
use crate::workloads::contract::WorkloadSpec;
use crate::workloads::registry;

use crate::runner::local::preload::{self, Need};
use crate::runner::local::spawn::{self, Invocation};
use crate::runner::remote::launcher::Launcher;

/// What a run measures, checked: everything its plan is made from, and
/// nothing of where it is written or shown. A launched run sends it to the
/// launched side as one JSON line (`proofbench internal remote-run`), which
/// makes the plan from it there.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSpec {
    /// What the user asked for, as run.json records it (`options`): the
    /// selection, profile, axes and measurement settings the plan reads,
    /// the per-trial timeout among them.
    pub options: RunOptions,
    /// The command workloads of `--workloads`, read and checked (the files
    /// stay on the launching side).
    pub commands: Vec<CommandDef>,
    pub kind: RunKind,
    /// The command line, as the envelope records it.
    pub argv: Vec<String>,
    /// `--seed`, else the default seed.
    pub seed: u64,
    /// `--label` (absent: the kernel release, or the host with `--hosts`).
    pub label: Option<String>,
    /// Whether the timeout is `--timeout`'s (not the profile's).
    pub timeout_given: bool,
}

impl RunSpec {
    /// The per-trial timeout (a worker process is killed after it).
    pub fn timeout(&self) -> Duration {
        self.options.measurement.timeout()
    }

    /// The workload declarations the plan draws from: the registry's and
    /// the command workloads'.
    pub fn specs(&self) -> Vec<WorkloadSpec> {
        crate::workloads::command::specs_with(registry::specs(), &self.commands)
    }

    /// The run's label and plan on the machine `envelope` describes: its
    /// topology sets the worker counts and the pinning, its kernel the
    /// default label (`label`, else `--label`, else `linux-RELEASE`). The
    /// launching side of a launched run makes the plan it expects from the
    /// launched side's envelope this way, and takes no other.
    pub fn plan_on(&self, label: Option<String>, envelope: &Envelope) -> anyhow::Result<(String, Plan)> {
        let topo = match &envelope.topology {
            Reading::Present(t) => t,
            Reading::Absent { absent } => anyhow::bail!("cannot plan without the CPU topology: {absent}"),
        };
        let release = envelope.kernel.release.ok().cloned().unwrap_or_else(|| "unknown".into());
        let label = label.or_else(|| self.label.clone()).unwrap_or_else(|| format!("linux-{release}"));
        let mut plan = plan::build(&self.options, &label, self.seed, &self.specs(), topo)?;
        crate::workloads::command::attach(&mut plan.cells, &self.commands);
        Ok((label, plan))
    }

    /// Checks everything that needs no machine: the settle time against
    /// the timeout, and the plan (selection, `--param`, `--workers`,
    /// `--variant`, `--base`, trials, warmup, label, fault) made for this
    /// machine's topology, or for a one-CPU machine where it cannot be
    /// read. The plan of the machine that runs it may differ in its worker
    /// counts, never in what is refused.
    pub fn check(&self) -> anyhow::Result<()> {
        check_settle(self)?;
        let topo = crate::topology::Topology::live().unwrap_or_else(|_| crate::topology::Topology::single_cpu());
        let label = self.label.clone().unwrap_or_else(|| "check".into());
        plan::build(&self.options, &label, self.seed, &self.specs(), &topo)?;
        Ok(())
    }
}

/// A checked run: what it measures ([`RunSpec`]), where its records go and
/// what the terminal shows (`--out`, `--json`, `--quiet`... as the command
/// line grouped them, [`Output`]), and where it runs ([`Target`]). The
/// command layer builds it from the command line; messages still name the
/// flags a value came from.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub spec: RunSpec,
    pub output: Output,
    /// Not even the summary at the end (a bisect's A/B runs, which it
    /// speaks for itself); errors and warnings still go to stderr.
    pub silent: bool,
    pub target: Target,
}

/// Where a run's plan runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// On this machine.
    Local,
    /// On the other side of one launcher (`--launcher` without `--hosts`).
    Launched(Launcher),
    /// On every host of `--hosts` at once, through the launcher made for
    /// each, at most `max_parallel` at a time.
    Hosts { launchers: Vec<Launcher>, max_parallel: usize },
}

impl RunRequest {
    /// The launched side's request (`proofbench remote-run`): `spec` run
    /// into exactly `run_dir`, nothing on the terminal, no history.
    pub fn streamed(spec: RunSpec, run_dir: PathBuf) -> RunRequest {
        let output = Output {
            out: run_dir.clone(),
            run_dir: Some(run_dir),
            label: None,
            commit: Some("none".into()),
            db: None,
            no_history: true,
            json: false,
            quiet: true,
            counters: false,
            tables: false,
            color: ColorWhen::Never,
            html: None,
        };
        RunRequest { spec, output, silent: false, target: Target::Local }
    }

    /// How stdout is styled (`--color` against the terminal and `NO_COLOR`).
    pub fn style(&self) -> crate::text::out::Style {
        crate::text::out::stdout_style(self.output.color)
    }

    /// Whether the run is recorded in the history (not `--no-history`).
    pub fn history(&self) -> bool {
        !self.output.no_history
    }
}

/// A validated run on the machine that runs its plan: the plan, the
/// machine, and the worker binary.
pub struct RunConfig {
    pub seed: u64,
    /// The per-trial timeout (a worker process is killed after it).
    pub timeout: Duration,
    pub label: String,
    pub options: RunOptions,
    /// The cells, their trials, the groups measured back to back in every
    /// round (one cell, or one cell under every variant) and the variants.
    pub plan: Plan,
    /// The registry and the command workloads the cells come from.
    pub specs: Vec<WorkloadSpec>,
    pub envelope: Envelope,
    /// The worker binary (this one).
    pub exe: PathBuf,
    /// Where each trial's scratch directory is made.
    pub scratch_root: ScratchRoot,
    /// The profiling pass (`--perf-pass`), checked once on this machine;
    /// `None` without one.
    pub perf: Option<crate::runner::perf::check::Setup>,
}

/// The directory each trial's scratch directory is made in, and what chose
/// it, as messages name it: `--io-dir DIR`, `TMPDIR=DIR`, or the system's
/// `/tmp`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScratchRoot {
    pub path: PathBuf,
    /// E.g. `--io-dir /mnt/fast`, `TMPDIR=/scratch`, `/tmp`.
    pub shown: String,
}

impl RunConfig {
    /// Plans `spec` for this machine and reads its envelope; checks what
    /// the variants and allocators need of it. `label` overrides
    /// `--label` (one per host of `--hosts`).
    pub fn new(spec: &RunSpec, label: Option<String>) -> anyhow::Result<RunConfig> {
        let specs = spec.specs();
        let seed = spec.seed;
        check_settle(spec)?;
        let envelope = Envelope::collect(Path::new("/"), spec.argv.clone(), seed);
        let (label, plan) = spec.plan_on(label, &envelope)?;
        let options = spec.options.clone();
        let exe = std::env::current_exe().context("locating the proofbench binary for the workers")?;
        for v in &plan.variants {
            check_variant(v, &exe, &plan.cells)?;
        }
        check_allocators(&exe, &plan.cells)?;
        let io_dir = options.selection.io_dir.clone();
        let scratch_root = scratch_root(io_dir.as_ref())?;
        Ok(RunConfig { seed, timeout: spec.timeout(), label, options, plan, specs, envelope, exe, scratch_root, perf: None })
    }

    /// How the worker of `cell` starts: its variant's binary, environment
    /// and prefix, and `LD_PRELOAD` for a preloaded allocator or a
    /// variant's `preload=` (never both: the configuration refuses that).
    pub fn invocation(&self, cell: &Cell) -> Invocation {
        let v = cell.variant.as_ref();
        let preload = crate::workloads::alloc::allocator::preload_env(cell).or_else(|| v?.one(SettingKey::Preload).map(str::to_string));
        let mut how = Invocation::preload(preload.as_deref());
        if let Some(v) = v {
            how.exe = v.one(SettingKey::Exe).map(str::to_string);
            how.env.extend(v.env());
            how.wrapper = v.wrapper();
        }
        how
    }

    /// The workload declaration of a cell.
    pub fn spec(&self, cell: &Cell) -> &WorkloadSpec {
        self.specs.iter().find(|s| s.id == cell.workload).expect("planned from the registry")
    }
}

/// `--settle` happens inside every trial, so a settle as long as the
/// timeout would make every trial time out before its first sample.
fn check_settle(req: &RunSpec) -> Result<(), UsageError> {
    match req.options.measurement.settle {
        Some(settle) if settle >= req.timeout() => {
            let whose = if req.timeout_given {
                "--timeout".to_string()
            } else {
                format!("the {} profile's; see --timeout", req.options.measurement.profile.as_str())
            };
            Err(UsageError(format!(
                "--settle {}: must be shorter than the timeout ({}, {whose}), or every trial times out before it measures",
                humantime::format_duration(settle),
                humantime::format_duration(req.timeout())
            )))
        }
        _ => Ok(()),
    }
}

/// The first line of `--version` of a proofbench like this one.
fn own_version() -> String {
    format!("proofbench {}", env!("CARGO_PKG_VERSION"))
}

/// The value a variant's `env=LD_PRELOAD=...` gives, if it gives one.
fn env_preload(v: &Variant) -> Option<String> {
    v.env().into_iter().find(|(k, _)| k == "LD_PRELOAD").map(|(_, value)| value)
}

/// Checks what a variant needs from the machine before anything runs: that
/// its binary, under its prefix and environment, is a proofbench of this
/// version (the worker protocol is the version's), that a library it
/// preloads as an allocator replaces `malloc`, and that what it puts in
/// `LD_PRELOAD` otherwise loads; and that no two of its settings set
/// `LD_PRELOAD`. Every refusal names the variant.
fn check_variant(v: &Variant, exe: &Path, cells: &[Cell]) -> anyhow::Result<()> {
    let text = |s: &str| format!("{}={s}", v.name);
    let refuse = |what: &str, why: String| -> anyhow::Error { UsageError(format!("--variant {}: {why}", text(what))).into() };
    let allocator = cells.iter().find(|c| c.variant.as_ref() == Some(v) && crate::workloads::alloc::allocator::preload_env(c).is_some());
    let env = env_preload(v).map(|value| format!("env=LD_PRELOAD={value}"));
    let preload = v.one(SettingKey::Preload).map(|lib| format!("preload={lib}"));
    if let (Some(a), Some(b)) = (&preload, &env) {
        return Err(refuse(
            &format!("{a},{b}"),
            "both would set LD_PRELOAD: preload= is the allocator's, env=LD_PRELOAD= any other's".into(),
        ));
    }
    if let (Some(setting), Some(c)) = (preload.or(env), allocator) {
        return Err(refuse(
            &setting,
            format!("{} also preloads an allocator (allocator={}): both would set LD_PRELOAD", c.display_name(), c.str("allocator")?),
        ));
    }
    if v.one(SettingKey::Exe).is_none() && v.wrapper().is_empty() && v.env().is_empty() {
        return preloads_ok(v, exe);
    }
    let own = exe.display().to_string();
    let how = Invocation { exe: v.one(SettingKey::Exe).map(str::to_string), env: v.env(), wrapper: v.wrapper() };
    let shown = how.words(own.as_str(), &["--version"]).join(" ");
    let what = v.settings.iter().filter(|s| s.key != SettingKey::Param && s.key != SettingKey::Allocator);
    let what: Vec<String> = what.map(|s| s.to_string()).collect();
    let what = what.join(",");
    if let Some(p) = v.one(SettingKey::Exe)
        && !Path::new(p).is_file()
    {
        return Err(refuse(&what, format!("{p} is not a file")));
    }
    let command = spawn::local(exe, &how, &["--version"]);
    let out = match crate::process::helper::capture(command, crate::process::helper::HELPER_TIMEOUT) {
        Ok(Some(out)) => out,
        Ok(None) => {
            return Err(refuse(&what, format!("`{shown}` gave no answer within {} s", crate::process::helper::HELPER_TIMEOUT.as_secs())));
        }
        Err(e) => return Err(refuse(&what, format!("cannot start `{shown}`: {e}"))),
    };
    let first = out.stdout.lines().next().unwrap_or("").trim().to_string();
    if out.code != Some(0) {
        return Err(refuse(&what, format!("`{shown}` failed: {}", out.last_error_line())));
    }
    if first != own_version() {
        let said = if first.is_empty() { "nothing".to_string() } else { format!("'{first}'") };
        return Err(refuse(&what, format!("`{shown}` is not a proofbench of this version: it printed {said}, not '{}'", own_version())));
    }
    preloads_ok(v, exe)
}

/// Checks what a variant puts in `LD_PRELOAD` where the workers will run
/// ([`preload::check`]): its `preload=` library must replace `malloc`, the
/// libraries of its `env=LD_PRELOAD=` must load.
fn preloads_ok(v: &Variant, exe: &Path) -> anyhow::Result<()> {
    let settings = [
        v.one(SettingKey::Preload).map(|lib| ("preload", lib.to_string(), Need::Malloc)),
        env_preload(v).map(|value| ("env=LD_PRELOAD", value, Need::Load)),
    ];
    for (key, value, need) in settings.into_iter().flatten() {
        preload::check(exe, &value, need).map_err(|why| UsageError(format!("--variant {}={key}={value}: {why}", v.name)))?;
    }
    Ok(())
}

/// Checks every `--allocator preload:LIB` library the cells name, once
/// each, where the workers will run: it must replace `malloc`
/// ([`preload::check`]).
fn check_allocators(exe: &Path, cells: &[Cell]) -> anyhow::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    for lib in cells.iter().filter_map(crate::workloads::alloc::allocator::preload_env) {
        if !seen.contains(&lib) {
            preload::check(exe, &lib, Need::Malloc).map_err(|why| UsageError(format!("--allocator preload:{lib}: {why}")))?;
            seen.push(lib);
        }
    }
    Ok(())
}

/// The directory each trial's scratch directory goes in. An `--io-dir`
/// that is not a directory is a usage error; one that cannot be written is
/// not (nor a `TMPDIR` that is missing or cannot be written): the rows that
/// need files are then skipped with the reason, and the others run
/// ([`crate::runner::local::trial`]).
fn scratch_root(io_dir: Option<&PathBuf>) -> anyhow::Result<ScratchRoot> {
    if let Some(dir) = io_dir {
        if !dir.is_dir() {
            return Err(UsageError(format!("--io-dir {}: not a directory", dir.display())).into());
        }
        return Ok(ScratchRoot { path: dir.clone(), shown: format!("--io-dir {}", dir.display()) });
    }
    let root = local_temp_root(std::env::var_os("TMPDIR"));
    if !root.path.is_dir() {
        crate::text::out::to_stderr(&format!(
            "proofbench: warning: {}: not a directory; the rows that need files will be skipped (--io-dir DIR puts them elsewhere)\n",
            root.shown
        ));
    }
    Ok(root)
}

/// The local scratch root without `--io-dir`: `TMPDIR` when it is set and
/// not empty (the variable named in messages), else `/tmp`.
fn local_temp_root(tmpdir: Option<std::ffi::OsString>) -> ScratchRoot {
    match tmpdir.filter(|v| !v.is_empty()) {
        Some(v) => {
            let path = PathBuf::from(v);
            ScratchRoot { shown: format!("TMPDIR={}", path.display()), path }
        }
        None => ScratchRoot { path: PathBuf::from("/tmp"), shown: "/tmp".into() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temp_root_names_tmpdir_only_when_it_chose_it() {
        let r = local_temp_root(Some("/nonexist".into()));
        assert_eq!((r.path, r.shown.as_str()), (PathBuf::from("/nonexist"), "TMPDIR=/nonexist"));
        assert_eq!(local_temp_root(Some("".into())).shown, "/tmp");
        assert_eq!(local_temp_root(None).path, PathBuf::from("/tmp"));
    }
}
