//! Turns a cell, its workload's declaration and how its worker ended into the
//! row's evidence record, deciding the row's status.

use std::path::Path;
use std::time::Duration;

use crate::evidence::{ROW_SCHEMA, Row, RowStats, Status, WORKER_SCHEMA, WorkerReport, dir::parse_record};
use crate::plan::Cell;
use crate::workloads::contract::WorkloadSpec;

use super::spawn::WorkerRun;

/// The last `max_lines` lines of a log file (at most 4 KiB of its end).
pub fn log_tail(path: &Path, max_lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(4096))).and_then(|_| f.read_to_end(&mut bytes)).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

#[cfg(test)]
mod tail_tests {
    #[test]
    fn the_tail_is_the_last_lines_of_a_long_log() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.log");
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        assert_eq!(super::log_tail(&p, 2), "line 9998\nline 9999");
        assert_eq!(super::log_tail(&tmp.path().join("missing"), 2), "");
    }
}

/// The worker's report: the last non-empty line of its report channel.
fn parse_report(stdout: &str) -> Result<Option<WorkerReport>, String> {
    match stdout.lines().rev().find(|l| !l.trim().is_empty()) {
        None => Ok(None),
        Some(line) => parse_record(line, WORKER_SCHEMA, Path::new("<worker report>"), None).map(Some).map_err(|e| e.to_string()),
    }
}

/// The status and reason of a row from its report and its process's end.
fn status_of(
    report: Option<&WorkerReport>,
    bad_report: Option<&str>,
    run: &WorkerRun,
    timeout: Duration,
    stderr_tail: &str,
) -> (Status, Option<String>) {
    let p = &run.process;
    let last_line = stderr_tail.lines().last().unwrap_or("").trim();
    let died = match (p.signal_name.as_deref(), p.exit_code) {
        (Some(name), _) => Some(format!("killed by {name}")),
        (None, Some(0)) => None,
        (None, Some(c)) => Some(format!("exited with code {c}")),
        (None, None) => Some("ended in an unknown way".into()),
    };
    if p.timed_out {
        return (
            Status::Timeout,
            Some(format!("no report within the {} timeout; the worker's process group was killed", humantime::format_duration(timeout))),
        );
    }
    match (report, died) {
        (Some(r), None) => (r.status, r.reason.clone()),
        (Some(r), Some(how)) => {
            let reason = match &r.reason {
                Some(why) => format!("{why}; then the worker {how}"),
                None => format!("the worker reported {} but then {how}", r.status.as_str()),
            };
            (if r.status == Status::Ok { Status::Failed } else { r.status }, Some(reason))
        }
        (None, how) => {
            let mut reason = how.unwrap_or_else(|| "exited without a report".into());
            if let Some(bad) = bad_report {
                reason.push_str(&format!("; unreadable report ({bad})"));
            } else if p.exit_code == Some(0) {
                reason.push_str(" without a report");
            }
            if !last_line.is_empty() {
                reason.push_str(&format!("; last stderr line: {last_line}"));
            }
            (Status::Failed, Some(reason))
        }
    }
}

/// Everything known about a finished cell, as a row.
pub struct Finished<'a> {
    pub cell: &'a Cell,
    pub spec: &'a WorkloadSpec,
    pub run: &'a WorkerRun,
    pub timeout: Duration,
    pub log_rel: String,
    pub stderr_tail: String,
    pub started_utc: String,
    pub finished_utc: String,
}

/// Builds the row (without its raw-file path, which the writer sets).
pub fn row(f: Finished) -> Row {
    let (report, bad) = match parse_report(&f.run.stdout) {
        Ok(r) => (r, None),
        Err(e) => (None, Some(e)),
    };
    let (status, reason) = status_of(report.as_ref(), bad.as_deref(), f.run, f.timeout, &f.stderr_tail);
    let report = report.unwrap_or_else(|| WorkerReport::new(status, reason.clone()));
    let stats = RowStats::of(&report.samples, f.cell.seed);
    Row {
        schema: ROW_SCHEMA.to_string(),
        cell: f.cell.clone(),
        summary: f.spec.summary.to_string(),
        shape: f.spec.shape,
        unit: f.spec.unit,
        direction: f.spec.direction(),
        timed_region: f.spec.timed_region.to_string(),
        total_window: f.spec.total_window.map(str::to_string),
        status,
        reason,
        verifier: report.verifier,
        measurement: report.measurement,
        samples: report.samples,
        stats,
        details: report.details,
        process: f.run.process.clone(),
        rusage_measured: report.rusage_measured,
        counters: report.counters,
        stderr_tail: f.stderr_tail,
        log: f.log_rel,
        raw: None,
        started_utc: f.started_utc,
        finished_utc: f.finished_utc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::ProcessRecord;

    fn run(exit_code: Option<i32>, signal: Option<i32>, timed_out: bool, stdout: &str) -> WorkerRun {
        WorkerRun {
            stdout: stdout.into(),
            process: ProcessRecord {
                exit_code,
                signal,
                signal_name: signal.map(super::super::spawn::signal_name),
                timed_out,
                ..Default::default()
            },
            interrupted: false,
        }
    }

    fn ok_report() -> String {
        serde_json::to_string(&WorkerReport::new(Status::Ok, None)).unwrap()
    }

    fn status(r: &WorkerRun) -> (Status, Option<String>) {
        let (rep, bad) = match parse_report(&r.stdout) {
            Ok(x) => (x, None),
            Err(e) => (None, Some(e)),
        };
        status_of(rep.as_ref(), bad.as_deref(), r, Duration::from_secs(2), "boom here")
    }

    #[test]
    fn a_clean_report_gives_its_own_status() {
        assert_eq!(status(&run(Some(0), None, false, &ok_report())).0, Status::Ok);
    }

    #[test]
    fn a_signal_without_report_is_failed_with_the_signal_named() {
        let (s, why) = status(&run(None, Some(libc::SIGSEGV), false, ""));
        assert_eq!(s, Status::Failed);
        let why = why.unwrap();
        assert!(why.contains("SIGSEGV") && why.contains("boom here"), "{why}");
    }

    #[test]
    fn a_timeout_wins_over_everything() {
        let (s, why) = status(&run(None, Some(libc::SIGTERM), true, ""));
        assert_eq!(s, Status::Timeout);
        assert!(why.unwrap().contains("2s timeout"));
    }

    #[test]
    fn an_ok_report_followed_by_a_crash_is_not_ok() {
        let (s, why) = status(&run(Some(3), None, false, &ok_report()));
        assert_eq!(s, Status::Failed);
        assert!(why.unwrap().contains("exited with code 3"));
    }

    #[test]
    fn garbage_on_the_report_channel_is_failed() {
        let (s, why) = status(&run(Some(0), None, false, "hello\n"));
        assert_eq!(s, Status::Failed);
        assert!(why.unwrap().contains("unreadable report"));
    }
}
