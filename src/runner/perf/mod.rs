//! The profiling pass of `run --perf-pass stat|record`: after a row's
//! timed trials, one more run of its worker (the same cell, for one timed
//! sample without warmup) under `perf stat` or `perf record -g`, whose samples go
//! nowhere: the row's samples and statistics are its trials' alone. Its
//! files go to `profiles/<row>/`: perf stat's output, or perf record's data
//! with a `perf report` top 20 and a flame graph SVG ([`flame`]).
//! A command workload's `[workload.profile]` command (the guest-side pass)
//! runs once too, in a worker like one sample of the workload, its output
//! kept.
//!
//! Perf is checked once, before the first row ([`check::setup`]): its binary
//! (`PROOFBENCH_PERF`, else `perf` on PATH), `perf --version`,
//! `perf_event_paranoid`, and a tiny run of the mode itself (`perf stat -e
//! task-clock true`, `perf record -g true`). Where any of them fails, every
//! row's pass is `skipped` with that one reason, and nothing else changes.
//! Every perf process has the run's per-trial timeout.

//! Here too: perf checked once per run (`check`) and the flame graphs (`flame`).

pub mod check;
pub mod flame;

use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::evidence::{GuestProfile, ProfileFile, ProfileFileKind as Kind, ProfileRecord, ProfileStatus, Row, RunDir};
use crate::model::command::VerifyDef;
use crate::model::{Cell, PerfPass, Status};

use crate::process::signals;
use crate::runner::config::RunConfig;
use crate::runner::local::trial::{self, Outside};
use check::{Perf, Setup, TOP_LINES, parse_stat};

/// The lines of `perf report --stdio` output without its `#` header and
/// blank lines, the first [`TOP_LINES`].
pub fn report_top(text: &str) -> Vec<String> {
    text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).take(TOP_LINES).map(|l| l.trim_end().to_string()).collect()
}

/// The profiling pass of `row`, when the run has one: its record (never
/// an error: what goes wrong is the pass's `failed` with the reason, and
/// the row is unaffected). `profiles/<row>/` is made only for a pass that
/// runs: perf's, or the workload's own guest-side command.
pub fn pass(cfg: &RunConfig, dir: &RunDir, row: &Row) -> Option<ProfileRecord> {
    let setup = cfg.perf.as_ref()?;
    let mode = setup.mode();
    let guest_def = row.cell.command.as_ref().and_then(|d| d.profile.clone());
    let not_now = if signals::interrupted() {
        Some("the run was interrupted".to_string())
    } else if row.status != Status::Ok {
        Some(format!("the row is {}: only ok rows are profiled", row.status.as_str()))
    } else {
        None
    };
    if let Some(why) = not_now {
        let mut rec = ProfileRecord::skipped(mode, why.clone());
        rec.guest = guest_def.map(|command| GuestProfile {
            status: ProfileStatus::Skipped,
            reason: Some(why),
            command,
            wall_ms: None,
            output: None,
        });
        return Some(rec);
    }
    let profile_dir = || dir.profile_dir(&row.cell.row_id).map_err(|e| format!("cannot make its directory: {e}"));
    let mut rec = match setup {
        Setup::Unavailable { reason, version, .. } => {
            ProfileRecord { perf_version: version.clone(), ..ProfileRecord::skipped(mode, reason.clone()) }
        }
        Setup::Ready(perf) => match profile_dir() {
            Ok((abs, rel)) => host(cfg, dir, &row.cell, perf, &abs, &rel),
            Err(why) => ProfileRecord { status: ProfileStatus::Failed, ..ProfileRecord::skipped(mode, why) },
        },
    };
    rec.guest = guest_def.map(|command| match profile_dir() {
        Ok((_, rel)) => guest(cfg, dir, &row.cell, &rel),
        Err(why) => GuestProfile { status: ProfileStatus::Failed, reason: Some(why), command, wall_ms: None, output: None },
    });
    Some(rec)
}

/// `rel`/`name`.
fn join(rel: &str, name: &str) -> String {
    format!("{rel}/{name}")
}

/// The host-side pass: the worker under perf.
fn host(cfg: &RunConfig, dir: &RunDir, cell: &Cell, perf: &Perf, abs: &Path, rel: &str) -> ProfileRecord {
    let mode = perf.mode;
    let mut rec = ProfileRecord { perf_version: Some(perf.version.clone()), ..ProfileRecord::skipped(mode, "") };
    rec.reason = None;
    let fail = |mut rec: ProfileRecord, why: String| {
        rec.status = ProfileStatus::Failed;
        rec.reason = Some(why);
        rec
    };
    let (out_name, out_kind) = match mode {
        PerfPass::Stat => ("perf-stat.txt", Kind::PerfStat),
        PerfPass::Record => ("perf.data", Kind::PerfData),
    };
    let log_rel = join(rel, "perf.log");
    let log = match dir.profile_log(&log_rel) {
        Ok(f) => f,
        Err(e) => return fail(rec, e.to_string()),
    };
    rec.files.push(ProfileFile { kind: Kind::Log, path: log_rel });
    let out_abs = abs.join(out_name);
    let mut words = vec![perf.exe.display().to_string()];
    words.extend(perf.words(&out_abs.display().to_string()));
    rec.command = std::iter::once("perf".to_string()).chain(perf.words(&join(rel, out_name))).collect();
    // One timed sample, no warmup: capOS's one-sample profiling pass. The
    // worker still starts, prepares and calibrates, and perf sees that too.
    let mut once = cell.clone();
    once.measure.fixed_runs = Some(1);
    once.measure.warmup = 0;
    let ran = match trial::run_outside(cfg, &once, "perf", &words, log) {
        Ok(Outside::Ran(r)) => r,
        Ok(Outside::NotRun(why)) => return fail(rec, why),
        Ok(Outside::Interrupted) => return fail(rec, "the run was interrupted while it ran".into()),
        Err(e) => return fail(rec, format!("{e:#}")),
    };
    rec.wall_ms = Some(ran.process.wall_ms);
    if ran.status != Status::Ok {
        let why = ran.reason.clone().unwrap_or_else(|| ran.status.as_str().to_string());
        let timed = if ran.process.timed_out { " (killed after the per-trial timeout)" } else { "" };
        return fail(rec, format!("the profiled worker was {}{timed}: {why}; see {}", ran.status.as_str(), join(rel, "perf.log")));
    }
    if !out_abs.is_file() {
        return fail(rec, format!("perf wrote no {out_name}; see {}", join(rel, "perf.log")));
    }
    rec.files.push(ProfileFile { kind: out_kind, path: join(rel, out_name) });
    match mode {
        PerfPass::Stat => {
            rec.counters = std::fs::read_to_string(&out_abs).map(|t| parse_stat(&t)).unwrap_or_default();
            if rec.counters.is_empty() {
                return fail(rec, format!("{out_name} holds no counts"));
            }
        }
        PerfPass::Record => {
            if let Err(why) = record_files(cfg, dir, cell, perf, &out_abs, rel, &mut rec) {
                return fail(rec, why);
            }
        }
    }
    rec.status = ProfileStatus::Ok;
    rec
}

/// `perf report`'s top and the flame graph of a recorded profile.
fn record_files(
    cfg: &RunConfig,
    dir: &RunDir,
    cell: &Cell,
    perf: &Perf,
    data: &Path,
    rel: &str,
    rec: &mut ProfileRecord,
) -> Result<(), String> {
    let mut c = Command::new(&perf.exe);
    c.args(["report", "--stdio", "--no-children", "-g", "none", "-i"]).arg(data);
    let out = match crate::process::helper::capture(c, cfg.timeout) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(format!("`perf report` gave no answer within {}", humantime::format_duration(cfg.timeout))),
        Err(e) => return Err(format!("cannot start `perf report`: {e}")),
    };
    rec.top = report_top(&out.stdout);
    if out.code != Some(0) && rec.top.is_empty() {
        return Err(format!("`perf report` failed: {}", out.last_error_line()));
    }
    let top_rel = join(rel, "perf-report-top20.txt");
    let text = format!("# perf report --stdio --no-children -g none: the first {TOP_LINES} lines\n{}\n", rec.top.join("\n"));
    dir.write_file(&top_rel, &text).map_err(|e| e.to_string())?;
    rec.files.push(ProfileFile { kind: Kind::PerfReport, path: top_rel });
    let folded = script_folded(perf, data, cfg.timeout)?;
    rec.samples = Some(folded.samples());
    let folded_rel = join(rel, "stacks.folded");
    dir.write_file(&folded_rel, &folded.text()).map_err(|e| e.to_string())?;
    rec.files.push(ProfileFile { kind: Kind::FoldedStacks, path: folded_rel });
    let title = format!("{}: perf record -g", cell.row_id);
    let svg_rel = join(rel, "flame.svg");
    dir.write_file(&svg_rel, &flame::svg(&folded, &title)).map_err(|e| e.to_string())?;
    rec.files.push(ProfileFile { kind: Kind::FlameGraph, path: svg_rel });
    Ok(())
}

/// `perf script` of `data`, folded as it is read; killed after `timeout`
/// or on a stop signal.
fn script_folded(perf: &Perf, data: &Path, timeout: Duration) -> Result<flame::Folded, String> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(&perf.exe);
    c.args(["script", "-i"]).arg(data).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).process_group(0);
    let mut child = c.spawn().map_err(|e| format!("cannot start `perf script`: {e}"))?;
    let pgid = child.id() as i32;
    let (tx, rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let end = Instant::now() + timeout;
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Err(RecvTimeoutError::Timeout) if Instant::now() < end && !signals::interrupted() => continue,
                Err(RecvTimeoutError::Timeout) => {
                    // SAFETY: signalling the process group this function made.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    return true;
                }
                _ => return false,
            }
        }
    });
    let stdout = child.stdout.take().expect("piped");
    let folded = flame::collapse(BufReader::new(stdout));
    // SAFETY: as above; whatever is left of the group goes.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let status = child.wait();
    drop(tx);
    let killed = watchdog.join().unwrap_or(true);
    if killed {
        return Err(format!("`perf script` did not finish within {} and was killed", humantime::format_duration(timeout)));
    }
    let folded = folded.map_err(|e| format!("reading `perf script`'s output: {e}"))?;
    match status {
        Ok(st) if st.success() || folded.samples() > 0 => Ok(folded),
        Ok(st) => Err(format!("`perf script` ended with {st}")),
        Err(e) => Err(format!("waiting for `perf script`: {e}")),
    }
}

/// The guest-side pass: the workload's `[workload.profile]` command run
/// once in a worker, like one sample of the workload (its prepare and
/// cleanup around it), its output copied into `guest.log`.
fn guest(cfg: &RunConfig, dir: &RunDir, cell: &Cell, rel: &str) -> GuestProfile {
    let def = cell.command.as_ref().expect("a command workload");
    let argv = def.profile.clone().unwrap_or_default();
    let values: std::collections::BTreeMap<String, String> =
        cell.params.iter().map(|(k, v)| (k.clone(), crate::model::value_text(v))).collect();
    let shown: Vec<String> = argv.iter().map(|a| crate::workloads::command::placeholder::substitute(a, &values)).collect();
    let mut g = GuestProfile { status: ProfileStatus::Failed, reason: None, command: shown, wall_ms: None, output: None };
    let log_rel = join(rel, "guest.log");
    let log = match dir.profile_log(&log_rel) {
        Ok(f) => f,
        Err(e) => {
            g.reason = Some(e.to_string());
            return g;
        }
    };
    g.output = Some(log_rel.clone());
    let mut once = cell.clone();
    once.command = Some(crate::model::command::CommandDef {
        command: argv,
        metric: None,
        verify: VerifyDef { exit_code: 0, must_match: Vec::new(), must_not_match: Vec::new(), value: None },
        echo_output: true,
        profile: None,
        ..def.clone()
    });
    once.measure.fixed_runs = Some(1);
    once.measure.warmup = 0;
    once.measure.settle_ms = 0;
    match trial::run_outside(cfg, &once, "guest", &[], log) {
        Ok(Outside::Ran(r)) => {
            g.wall_ms = Some(r.process.wall_ms);
            if r.status == Status::Ok {
                g.status = ProfileStatus::Ok;
            } else {
                g.reason = Some(format!("{}: {}; see {log_rel}", r.status.as_str(), r.reason.unwrap_or_default()));
            }
        }
        Ok(Outside::NotRun(why)) => g.reason = Some(why),
        Ok(Outside::Interrupted) => g.reason = Some("the run was interrupted while it ran".into()),
        Err(e) => g.reason = Some(format!("{e:#}")),
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_csv_is_parsed_and_uncounted_events_say_why() {
        let text = "# started on Wed Nov 25 23:39:15 2026\n\n0.88,msec,task-clock,880000,100.00,0.009,CPUs utilized\n\
                    2,,context-switches,880000,100.00,2.273,K/sec\n<not supported>,,cycles,0,100.00,,\nnonsense\n";
        let c = parse_stat(text);
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!((c[0].event.as_str(), c[0].value, c[0].unit.as_str()), ("task-clock", Some(0.88), "msec"));
        assert_eq!((c[1].event.as_str(), c[1].value), ("context-switches", Some(2.0)));
        assert_eq!((c[2].value, c[2].note.as_deref()), (None, Some("<not supported>")));
    }

    #[test]
    fn the_report_top_leaves_out_the_header_and_keeps_twenty_lines() {
        let mut text = String::from("# header\n#\n\n");
        for i in 0..30 {
            text.push_str(&format!("    {i}.00%  proofbench  proofbench  [.] f{i}\n"));
        }
        let top = report_top(&text);
        assert_eq!(top.len(), TOP_LINES);
        assert_eq!(top[0], "    0.00%  proofbench  proofbench  [.] f0");
        assert!(report_top("# only a header\n").is_empty());
    }

    #[test]
    fn perf_words_put_the_output_before_the_command() {
        let p = Perf {
            mode: PerfPass::Stat,
            exe: "/usr/bin/perf".into(),
            version: "perf version 6".into(),
            events: vec!["task-clock".into(), "page-faults".into()],
        };
        assert_eq!(p.words("o.txt"), ["stat", "-x", ",", "-e", "task-clock,page-faults", "-o", "o.txt", "--"]);
        let r = Perf { mode: PerfPass::Record, ..p };
        assert_eq!(r.words("p.data"), ["record", "-g", "-o", "p.data", "--"]);
    }
}
