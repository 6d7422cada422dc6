//! The first stage of a run: what was asked ([`RunRequest`], which the
//! command layer builds from the command line), checked and resolved into
//! everything the rounds need (ripgrep's two stages). Nothing here starts a
//! worker or writes a file; every refusal is a usage error naming its flag.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::envelope::Envelope;
use crate::evidence::RunKind;
use crate::model::{Cell, Reading, SettingKey, TrialPlan, UsageError, Variant, utc_now};
use crate::plan::{self, Plan, RunOptions};
use crate::workloads::contract::WorkloadSpec;
use crate::workloads::registry;

use super::launcher::{self, Launcher};
use super::preload::{self, Need};
use super::spawn::{self, Invocation};

/// What a run is asked to do, as the command layer resolved it from the
/// command line (no flag types; every default that needs no machine
/// applied). Messages still name the flags a value came from.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// What the user asked for, as run.json records it (`options`): the
    /// selection, profile, axes and measurement settings the plan reads.
    pub options: RunOptions,
    pub kind: RunKind,
    /// The command line, as the envelope records it.
    pub argv: Vec<String>,
    /// `--seed`, else the default seed.
    pub seed: u64,
    /// The per-trial timeout: `--timeout`, else the profile's.
    pub timeout: Duration,
    /// Whether the timeout is `--timeout`'s (not the profile's).
    pub timeout_given: bool,
    /// `--settle`.
    pub settle: Option<Duration>,
    /// The files of command workloads (`--workloads`).
    pub workloads: Vec<PathBuf>,
    /// `--io-dir`.
    pub io_dir: Option<PathBuf>,
    /// The directory that receives the run directories (`--out`).
    pub out: PathBuf,
    /// Exactly this run directory (`--run-dir`).
    pub run_dir: Option<PathBuf>,
    /// `--label`.
    pub label: Option<String>,
    /// `--commit` as typed (`none` for none; absent: git's HEAD).
    pub commit: Option<String>,
    /// Whether the run is recorded in the history (not `--no-history`).
    pub history: bool,
    /// `--db`: the history database (absent: beside the run directory).
    pub db: Option<PathBuf>,
    /// `--json`: each row to stdout as a JSON line.
    pub json: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// `--counters`: each group's counters table on the terminal.
    pub counters: bool,
    /// `--tables`: each group's full tables and the whole footer on the
    /// terminal, instead of one line per row and a short summary.
    pub tables: bool,
    /// `--color`: how stdout is styled (resolved against the terminal and
    /// `NO_COLOR` by the command layer).
    pub style: crate::report::terminal::Style,
    /// The launchers of `--launcher` (one per host of `--hosts`; none: a
    /// local run), checked.
    pub launchers: Vec<Launcher>,
    /// `--fail-on-regression`.
    pub fail_on_regression: bool,
}

impl RunRequest {
    /// Whether the run goes once per host (`--hosts`).
    pub fn per_host(&self) -> bool {
        self.launchers.iter().any(|l| l.host.is_some())
    }
}

/// Where a run's cells run: here, or through a launcher whose side's
/// envelope has been probed.
pub enum Target {
    Local,
    Launched(Launcher, Box<Envelope>),
}

/// A validated run: the plan, the machine, and how to reach it.
pub struct RunConfig {
    pub seed: u64,
    /// The per-trial timeout (a worker process is killed after it).
    pub timeout: Duration,
    pub label: String,
    pub options: RunOptions,
    pub cells: Vec<Cell>,
    pub trials: TrialPlan,
    /// Positions in `cells` measured together, back to back in every round
    /// (one cell, or one cell under every variant).
    pub groups: Vec<Vec<usize>>,
    /// `--variant` (empty without).
    pub variants: Vec<Variant>,
    pub kind: RunKind,
    /// The registry and the command workloads the cells come from.
    pub specs: Vec<WorkloadSpec>,
    pub envelope: Envelope,
    pub launcher: Option<Launcher>,
    /// The worker binary (this one).
    pub exe: PathBuf,
    /// Where each trial's scratch directory is made.
    pub scratch_root: ScratchRoot,
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
    /// Checks the request, plans the cells for `target` and reads its
    /// envelope. `label` overrides `--label` (one per host of `--hosts`).
    pub fn new(req: &RunRequest, target: Target, label: Option<String>) -> anyhow::Result<RunConfig> {
        // A bad workload file stops the run here, before anything is created.
        let commands = crate::workloads::command::load(&req.workloads, &registry::specs())?;
        let specs = crate::workloads::command::specs_with(registry::specs(), &commands);
        let (seed, timeout, kind) = (req.seed, req.timeout, req.kind);
        check_settle(req)?;
        let argv = req.argv.clone();
        let (envelope, launcher) = match target {
            Target::Local => (Envelope::collect(Path::new("/"), argv, seed), None),
            Target::Launched(l, e) => {
                // The machine is the launched side's; the run (command line,
                // seed, start time) is this one's.
                let envelope =
                    Envelope { command_line: argv, seed, started_utc: utc_now(), finished_utc: None, load_avg_after: None, ..*e };
                (envelope, Some(l))
            }
        };
        let topo = match &envelope.topology {
            Reading::Present(t) => t.clone(),
            Reading::Absent { absent } => anyhow::bail!("cannot plan without the CPU topology: {absent}"),
        };
        let release = envelope.kernel.release.ok().cloned().unwrap_or_else(|| "unknown".into());
        let label = label.unwrap_or_else(|| format!("linux-{release}"));
        let options = req.options.clone();
        let Plan { mut cells, trials, groups, variants } = plan::build(&options, &label, seed, &specs, &topo)?;
        crate::workloads::command::attach(&mut cells, &commands);
        let exe = std::env::current_exe().context("locating the proofbench binary for the workers")?;
        for v in &variants {
            check_variant(v, &exe, launcher.as_ref(), &cells)?;
        }
        check_allocators(&exe, launcher.as_ref(), &cells)?;
        let scratch_root = scratch_root(req.io_dir.as_ref(), launcher.as_ref())?;
        Ok(RunConfig { seed, timeout, label, options, cells, trials, groups, variants, kind, specs, envelope, launcher, exe, scratch_root })
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
fn check_settle(req: &RunRequest) -> Result<(), UsageError> {
    match req.settle {
        Some(settle) if settle >= req.timeout => {
            let whose = if req.timeout_given {
                "--timeout".to_string()
            } else {
                format!("the {} profile's; see --timeout", req.options.profile.as_str())
            };
            Err(UsageError(format!(
                "--settle {}: must be shorter than the timeout ({}, {whose}), or every trial times out before it measures",
                humantime::format_duration(settle),
                humantime::format_duration(req.timeout)
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
fn check_variant(v: &Variant, exe: &Path, launcher: Option<&Launcher>, cells: &[Cell]) -> anyhow::Result<()> {
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
        return preloads_ok(v, exe, launcher);
    }
    let own = exe.display().to_string();
    let how = Invocation { exe: v.one(SettingKey::Exe).map(str::to_string), env: v.env(), wrapper: v.wrapper() };
    let shown = how.words(launcher.map_or(own.as_str(), |l| l.remote_exe.as_str()), &["--version"]).join(" ");
    let what = v.settings.iter().filter(|s| s.key != SettingKey::Param && s.key != SettingKey::Allocator);
    let what: Vec<String> = what.map(|s| s.to_string()).collect();
    let what = what.join(",");
    if let Some(p) = v.one(SettingKey::Exe)
        && launcher.is_none()
        && !Path::new(p).is_file()
    {
        return Err(refuse(&what, format!("{p} is not a file")));
    }
    let command = match launcher {
        None => spawn::local(exe, &how, &["--version"]),
        Some(l) => l.proofbench(&how, &["--version"]),
    };
    let out = match launcher::capture(command, launcher::HELPER_TIMEOUT) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(refuse(&what, format!("`{shown}` gave no answer within {} s", launcher::HELPER_TIMEOUT.as_secs()))),
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
    preloads_ok(v, exe, launcher)
}

/// Checks what a variant puts in `LD_PRELOAD` where the workers will run
/// ([`preload::check`]): its `preload=` library must replace `malloc`, the
/// libraries of its `env=LD_PRELOAD=` must load.
fn preloads_ok(v: &Variant, exe: &Path, launcher: Option<&Launcher>) -> anyhow::Result<()> {
    let settings = [
        v.one(SettingKey::Preload).map(|lib| ("preload", lib.to_string(), Need::Malloc)),
        env_preload(v).map(|value| ("env=LD_PRELOAD", value, Need::Load)),
    ];
    for (key, value, need) in settings.into_iter().flatten() {
        preload::check(exe, launcher, &value, need).map_err(|why| UsageError(format!("--variant {}={key}={value}: {why}", v.name)))?;
    }
    Ok(())
}

/// Checks every `--allocator preload:LIB` library the cells name, once
/// each, where the workers will run: it must replace `malloc`
/// ([`preload::check`]).
fn check_allocators(exe: &Path, launcher: Option<&Launcher>, cells: &[Cell]) -> anyhow::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    for lib in cells.iter().filter_map(crate::workloads::alloc::allocator::preload_env) {
        if !seen.contains(&lib) {
            preload::check(exe, launcher, &lib, Need::Malloc).map_err(|why| UsageError(format!("--allocator preload:{lib}: {why}")))?;
            seen.push(lib);
        }
    }
    Ok(())
}

/// The directory each trial's scratch directory goes in, checked on the
/// side that will use it. An `--io-dir` that is not a directory is a usage
/// error; one that cannot be written is not (nor a `TMPDIR` that is missing
/// or cannot be written): the rows that need files are then skipped with
/// the reason, and the others run ([`super::trial`]).
fn scratch_root(io_dir: Option<&PathBuf>, launcher: Option<&Launcher>) -> anyhow::Result<ScratchRoot> {
    match launcher {
        None => {
            if let Some(dir) = io_dir {
                if !dir.is_dir() {
                    return Err(UsageError(format!("--io-dir {}: not a directory", dir.display())).into());
                }
                return Ok(ScratchRoot { path: dir.clone(), shown: format!("--io-dir {}", dir.display()) });
            }
            let root = local_temp_root(std::env::var_os("TMPDIR"));
            if !root.path.is_dir() {
                eprintln!(
                    "proofbench: warning: {}: not a directory; the rows that need files will be skipped (--io-dir DIR puts them elsewhere)",
                    root.shown
                );
            }
            Ok(root)
        }
        Some(l) => {
            let root = match io_dir {
                Some(dir) => ScratchRoot { path: dir.clone(), shown: format!("--io-dir {}", dir.display()) },
                None => ScratchRoot {
                    path: PathBuf::from(launcher::DEFAULT_SCRATCH_ROOT),
                    shown: format!("{} (the launched side's default)", launcher::DEFAULT_SCRATCH_ROOT),
                },
            };
            l.check_dir(&root.path.display().to_string()).map_err(|e| UsageError(format!("{}: {e}", root.shown)))?;
            Ok(root)
        }
    }
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
