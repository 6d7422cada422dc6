//! runner::remote::launched: a run through a launcher, both sides. This
//! side ([`run_launched`]): the launched side runs the plan and streams it
//! (`drive`), this side writes the run directory and concludes it as a
//! local run would (`life`). The launched side ([`run_streamed`], behind
//! `proofbench remote-run`): the plan run there with every event streamed
//! on stdout.

use std::path::{Path, PathBuf};

use crate::evidence::RunRecord;

use super::launcher::Launcher;
use super::stream;
use crate::runner::config::RunRequest;
use crate::runner::life::{announce, conclude, exit_code, run_here};
use crate::runner::observe::Observers;
use crate::runner::worse;

/// Makes the observers of one host's run of `--hosts` at its start.
pub(crate) type HostObservers<'a> = dyn Fn(&RunRecord, &Path) -> Observers + 'a;

/// A run through a launcher, concluded: how it ended, and its run
/// directory (absent when the launched side never started the run; that
/// is an error with one launcher, and `--hosts` reports it by host).
pub(crate) struct Launched {
    pub(crate) code: u8,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) counts: String,
    pub(crate) states: Vec<String>,
}

/// One run through `launcher` (its side probed): the launched side runs
/// the plan and streams it; this side writes the run directory and the
/// report. `view` replaces the terminal's bar and lines (one line per host
/// with `--hosts`).
pub(crate) fn run_launched(
    req: &RunRequest,
    launcher: &Launcher,
    label: Option<String>,
    view: Option<&HostObservers>,
) -> anyhow::Result<Launched> {
    let received = super::drive(req, launcher, label, &mut |run, dir| match view {
        Some(make) => make(run, dir),
        None => {
            if !req.output.quiet {
                announce(run, req, dir, Some(launcher));
            }
            Observers::for_run(req, &run.plan)
        }
    })?;
    let super::Received { dir, observers, run, rows, cut } = received;
    let (Some(dir), Some(mut observers), Some(run)) = (dir, observers, run) else {
        return Ok(Launched { code: 1, dir: None, counts: "the run did not start".into(), states: Vec::new() });
    };
    if let Some(why) = &cut {
        let missing = &run.not_run;
        crate::text::out::to_stderr(&format!(
            "proofbench: {}: the run was cut short: {why}; {rows} of {} rows arrived and are kept in {}{}\n",
            launcher.name(),
            run.plan.len(),
            dir.path().display(),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; did not arrive: {} (run.json lists them under not_run)", shortened_list(missing, 6))
            }
        ));
    }
    let end = conclude(req, &dir, &mut observers, view.is_none(), cut.as_deref())?;
    let code = if cut.is_some() { worse(end.code, 1) } else { end.code };
    Ok(Launched { code, dir: Some(dir.path().to_path_buf()), counts: end.counts, states: end.states })
}

/// The first `n` of `items`, and how many more.
pub(crate) fn shortened_list(items: &[String], n: usize) -> String {
    let shown = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n { format!("{shown} and {} more", items.len() - n) } else { shown }
}

/// The launched side of a launched run (`proofbench remote-run`): the plan
/// made and run here, every event streamed on stdout, nothing written but
/// the working run directory (`req.output.run_dir`), which the caller removes.
/// Returns the exit code.
pub(crate) fn run_streamed(req: &RunRequest) -> anyhow::Result<u8> {
    let (_dir, run, _observers, failed) = run_here(req, true, |run, _| {
        stream::StreamOut::new().send(&stream::Event::Start { schema: stream::STREAM_SCHEMA.into(), run: Box::new(run.clone()) });
        Observers::streamed()
    })?;
    stream::StreamOut::new().send(&stream::Event::End { run: Box::new(run.clone()) });
    if let Some(e) = failed {
        anyhow::bail!(e);
    }
    Ok(exit_code(&run))
}
