//! Whether `run --perf-pass` can run here, decided once per run before the
//! first row: the perf binary (`PROOFBENCH_PERF`, else `perf` on PATH),
//! `perf --version`, `perf_event_paranoid`, and a tiny run of the mode
//! itself. Apart from the pass ([`crate::runner::perf`]) so that the run's
//! configuration can hold the answer without depending on the pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::evidence::PerfCounter;
use crate::model::PerfPass;

/// The environment variable naming the perf binary (default: `perf` on PATH).
pub const PERF_ENV: &str = "PROOFBENCH_PERF";

/// The software events perf stat counts on every machine.
pub const SOFTWARE_EVENTS: [&str; 4] = ["task-clock", "context-switches", "cpu-migrations", "page-faults"];

/// The hardware events added where the machine has a CPU PMU.
pub const HARDWARE_EVENTS: [&str; 2] = ["cycles", "instructions"];

/// How many lines of `perf report` the record keeps.
pub const TOP_LINES: usize = 20;

/// The reason of a launched run's pass.
pub const LAUNCHED: &str = "not available through --launcher: its files would stay on the launched side";

/// Whether the pass can run here, decided once per run.
#[derive(Clone, Debug)]
pub enum Setup {
    Ready(Perf),
    /// Why every row's pass is skipped (the guest-side pass still runs).
    Unavailable {
        mode: PerfPass,
        reason: String,
        version: Option<String>,
    },
}

/// Perf, checked.
#[derive(Clone, Debug)]
pub struct Perf {
    pub mode: PerfPass,
    pub exe: PathBuf,
    /// What `perf --version` printed.
    pub version: String,
    /// perf stat's events.
    pub events: Vec<String>,
}

impl Setup {
    pub fn mode(&self) -> PerfPass {
        match self {
            Setup::Ready(p) => p.mode,
            Setup::Unavailable { mode, .. } => *mode,
        }
    }

    /// Why the pass is skipped on every row, if it is.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Setup::Ready(_) => None,
            Setup::Unavailable { reason, .. } => Some(reason),
        }
    }
}

/// The perf binary: `PROOFBENCH_PERF`, else `perf` on PATH.
fn find_perf() -> Result<PathBuf, String> {
    match std::env::var_os(PERF_ENV).filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            crate::workloads::command::file::find_program(&p.display().to_string(), Path::new("/"))
                .ok_or_else(|| format!("perf is not installed: {PERF_ENV}={} is not an executable file", p.display()))
        }
        None => crate::workloads::command::file::find_program("perf", Path::new("/"))
            .ok_or_else(|| "perf is not installed: no `perf` on PATH (Debian: apt-get install linux-perf)".to_string()),
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`, when it can be read.
fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// Whether the CPU has a PMU perf can count with (its event source).
fn has_cpu_pmu() -> bool {
    ["cpu", "cpu_core", "armv8_pmuv3_0"].iter().any(|d| Path::new("/sys/bus/event_source/devices").join(d).exists())
}

/// The most a probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Checks perf for `mode` once: the binary, its version, the kernel's
/// permission, and a tiny run of the mode.
pub fn setup(mode: PerfPass, timeout: Duration) -> Setup {
    let unavailable = |reason: String, version: Option<String>| Setup::Unavailable { mode, reason, version };
    let exe = match find_perf() {
        Ok(p) => p,
        Err(why) => return unavailable(why, None),
    };
    let timeout = timeout.min(PROBE_TIMEOUT);
    let mut c = Command::new(&exe);
    c.arg("--version");
    let version = match crate::process::helper::capture(c, timeout) {
        Ok(Some(out)) if out.code == Some(0) && out.stdout.trim().starts_with("perf") => out.stdout.trim().to_string(),
        Ok(Some(out)) => {
            let said = if out.stderr.trim().is_empty() { out.stdout.trim() } else { out.stderr.trim() };
            let first = said.lines().next().unwrap_or("no output");
            return unavailable(format!("`{} --version` failed: {first}", exe.display()), None);
        }
        Ok(None) => return unavailable(format!("`{} --version` gave no answer within {} s", exe.display(), timeout.as_secs()), None),
        Err(e) => return unavailable(format!("cannot start {}: {e}", exe.display()), None),
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let level = paranoid();
    if let Some(l) = level
        && l > 2
        && !root
    {
        return unavailable(
            format!(
                "perf is not permitted: perf_event_paranoid is {l} (above 2: no perf events for unprivileged users); run as \
                 root or lower it (sysctl kernel.perf_event_paranoid=2)"
            ),
            Some(version),
        );
    }
    let mut events: Vec<String> = SOFTWARE_EVENTS.iter().map(|e| e.to_string()).collect();
    if has_cpu_pmu() {
        events.extend(HARDWARE_EVENTS.iter().map(|e| e.to_string()));
    }
    let perf = Perf { mode, exe, version, events };
    let probe = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return unavailable(format!("cannot make a directory for the perf probe: {e}"), Some(perf.version)),
    };
    let out_file = probe.path().join(if mode == PerfPass::Stat { "probe.txt" } else { "probe.data" });
    let mut words = perf.words(&out_file.display().to_string());
    words.push("true".into());
    let shown = format!("perf {}", words.join(" "));
    let mut c = Command::new(&perf.exe);
    c.args(&words).current_dir(probe.path());
    let fail = |why: String| {
        let level = level.map_or_else(|| "perf_event_paranoid unreadable".to_string(), |l| format!("perf_event_paranoid={l}"));
        unavailable(format!("perf is not permitted or does not work here: `{shown}` {why} ({level})"), Some(perf.version.clone()))
    };
    match crate::process::helper::capture(c, timeout) {
        Ok(Some(out)) if out.code == Some(0) => {}
        Ok(Some(out)) => return fail(format!("failed: {}", out.last_error_line())),
        Ok(None) => return fail(format!("gave no answer within {} s", timeout.as_secs())),
        Err(e) => return fail(format!("could not start: {e}")),
    }
    if mode == PerfPass::Stat {
        let counted = std::fs::read_to_string(&out_file).map(|t| parse_stat(&t)).unwrap_or_default();
        if !counted.iter().any(|c| c.event.starts_with("task-clock") && c.value.is_some()) {
            return fail("counted no task-clock".into());
        }
    } else if !out_file.is_file() {
        return fail("wrote no data".into());
    }
    Setup::Ready(perf)
}

impl Perf {
    /// Perf's words before the profiled command, writing to `out`.
    pub(super) fn words(&self, out: &str) -> Vec<String> {
        let mut w: Vec<String> = match self.mode {
            PerfPass::Stat => vec!["stat".into(), "-x".into(), ",".into(), "-e".into(), self.events.join(",")],
            PerfPass::Record => vec!["record".into(), "-g".into()],
        };
        w.extend(["-o".to_string(), out.to_string(), "--".to_string()]);
        w
    }
}

/// Parses `perf stat -x,` output: `value,unit,event,...` per line, `#`
/// comments and blank lines left out; a value perf could not count
/// (`<not supported>`, `<not counted>`) is `null` with it as the note.
pub fn parse_stat(text: &str) -> Vec<PerfCounter> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 3 || f[2].trim().is_empty() {
                return None;
            }
            let raw = f[0].trim();
            let value = raw.parse::<f64>().ok().filter(|v| v.is_finite());
            Some(PerfCounter {
                event: f[2].trim().to_string(),
                value,
                unit: f[1].trim().to_string(),
                note: if value.is_none() { Some(raw.to_string()) } else { None },
            })
        })
        .collect()
}
