//! One trial: a fresh worker process for one cell, in a private scratch
//! directory, its stderr appended to the row's log, its end turned into a
//! trial record.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::evidence::RunDir;
use crate::plan::Cell;

use super::compose::{self, Finished};
use super::config::RunConfig;
use super::launcher::Launcher;
use super::{spawn, utc_now};

/// A cell's private directory, removed with everything in it when dropped:
/// after its worker has ended, however it ended. With a launcher it lives on
/// the launched side, made and removed through the launcher (`mkdir`, `rm -rf`).
struct Scratch<'a> {
    path: PathBuf,
    launcher: Option<&'a Launcher>,
}

impl<'a> Scratch<'a> {
    fn create(root: &Path, name: &str, launcher: Option<&'a Launcher>) -> anyhow::Result<Scratch<'a>> {
        let path = root.join(format!("proofbench-{}-{name}", std::process::id()));
        match launcher {
            None => std::fs::create_dir(&path).with_context(|| format!("creating the scratch directory {}", path.display()))?,
            Some(l) => l
                .run_helper(&["mkdir", "--", &path.display().to_string()])
                .map_err(|e| anyhow::anyhow!("creating the scratch directory {} on the launched side: {e}", path.display()))?,
        }
        Ok(Scratch { path, launcher })
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        match self.launcher {
            None => {
                if let Err(e) = std::fs::remove_dir_all(&self.path)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    eprintln!("proofbench: warning: could not remove {}: {e}", self.path.display());
                }
            }
            Some(l) => {
                if let Err(e) = l.run_helper(&["rm", "-rf", "--", &self.path.display().to_string()]) {
                    eprintln!("proofbench: warning: could not remove {} on the launched side: {e}", self.path.display());
                }
            }
        }
    }
}

/// Runs trial `trial` of `cell` in round `round`. `None` when a stop signal
/// ended it (the trial is incomplete and is not kept).
pub fn run(cfg: &RunConfig, dir: &RunDir, cell: &Cell, trial: u32, round: u32) -> anyhow::Result<Option<Finished>> {
    let (mut log, log_rel) = dir.log_file(&cell.row_id)?;
    writeln!(log, "=== proofbench: trial {} of {} (round {}) ===", trial + 1, cell.row_id, round + 1)
        .with_context(|| format!("writing {log_rel}"))?;
    let started_utc = utc_now();
    let scratch = Scratch::create(&cfg.scratch_root, &format!("{}-t{trial}", cell.row_id), cfg.launcher.as_ref())?;
    let cell = &Cell { scratch_dir: Some(scratch.path.display().to_string()), ..cell.clone() };
    let cell_json = serde_json::to_string(cell).context("serializing a cell")?;
    let how = cfg.invocation(cell);
    let command = match &cfg.launcher {
        None => spawn::local(&cfg.exe, &how, &["worker"]),
        Some(l) => l.proofbench(&how, &["worker"]),
    };
    let wr = spawn::run_worker(command, &cell_json, log, cfg.timeout).with_context(|| format!("running the worker of {}", cell.row_id))?;
    drop(scratch);
    if wr.interrupted {
        return Ok(None);
    }
    let stderr_tail = compose::log_tail(&dir.path().join(&log_rel), 10);
    let (record, report) = compose::trial(&wr, cfg.timeout, &stderr_tail, trial, round, started_utc, utc_now());
    Ok(Some(Finished { record, report, log_rel, stderr_tail }))
}
