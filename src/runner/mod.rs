//! runner: the parent side of a run, behind one front door ([`run`]). What
//! was asked is checked first (`config`: [`RunSpec`], what is measured;
//! [`RunRequest`], with where it is written and shown and its [`Target`]),
//! then the run goes where its target says:
//! - here (`life`: one run's life, from its directory and first record to
//!   its report, summary and exit code; `record`: the run's record as it
//!   starts and as it ends), through rounds of trials, each a fresh worker
//!   process (`local/`: rounds, trials, worker processes, rows composed and
//!   flushed as they are decided, the preload check);
//! - through a launcher, or one per host of `--hosts` (`remote/`: the
//!   launcher, the launched side's stream and its replay into a run
//!   directory here, every host at once);
//! - with `--perf-pass`, each ok row once more under perf (`perf/`).
//!
//! Whatever runs it, each trial and row is handed to the observers
//! (`observe/`: progress, terminal lines, JSON stream, plots and HTML,
//! history). A failing trial never stops the run; a stop signal ends it
//! early with every finished trial kept and the report still written. The
//! `--fail-on-regression` gate is the command's: it reads the records the
//! run leaves ([`Ran`]).

pub mod config;
pub mod life;
pub mod local;
pub mod observe;
pub mod perf;
pub mod record;
pub mod remote;

use std::path::PathBuf;

pub use config::{RunRequest, RunSpec, Target};

/// Exit code of a run stopped by a signal (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The worse of two run exit codes: interrupted, then failures, then success.
pub fn worse(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        EXIT_INTERRUPTED => 3,
        0 => 0,
        1 => 1,
        _ => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// How a run ended: its exit code (with `--hosts`, the worst of the
/// hosts', a host that never started its run included), and each run
/// directory written with its own exit code, in order (one per host of
/// `--hosts` that started its run).
#[derive(Debug)]
pub struct Ran {
    pub code: u8,
    pub runs: Vec<(PathBuf, u8)>,
}

/// Runs what `req` asks for, where its target says: here, through its
/// launcher, or on every host of `--hosts` at once (at most
/// `--max-parallel`).
pub fn run(req: &RunRequest) -> anyhow::Result<Ran> {
    crate::process::signals::install()?;
    match &req.target {
        Target::Local => {
            let (code, dir) = life::run_local(req)?;
            Ok(Ran { code, runs: vec![(dir, code)] })
        }
        Target::Launched(l) => {
            l.probe_envelope()?;
            let launched = remote::launched::run_launched(req, l, req.spec.label.clone(), None)?;
            let dir = launched.dir.expect("one launcher: a run that did not start is an error");
            Ok(Ran { code: launched.code, runs: vec![(dir, launched.code)] })
        }
        Target::Hosts { launchers, max_parallel } => remote::hosts::run_all(req, launchers, *max_parallel),
    }
}
