//! Turns how a worker ended into a trial record (deciding the trial's
//! status), and a cell's trials into the row's evidence record.

use std::path::Path;
use std::time::Duration;

use crate::evidence::dir::parse_record;
use crate::evidence::{ProcessRecord, ROW_SCHEMA, Row, RowStats, RowStop, TrialRecord, VerifierRecord, WORKER_SCHEMA, WorkerReport};
use crate::measure::interference::cpu_list;
use crate::model::{Cell, Direction, Status};
use crate::stats::{DEFAULT_NOISE, TrialEstimate};
use crate::workloads::contract::WorkloadSpec;

use crate::process::helper::mib;
use crate::runner::local::spawn::WorkerRun;

/// The last `max_lines` lines of a log file written from byte `from` on (at
/// most 4 KiB of its end): one trial's worker's own lines, when `from` is
/// where its stderr began (after the lines before it, proofbench's own
/// banner among them).
pub fn log_tail(path: &Path, max_lines: usize, from: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(4096).max(from))).and_then(|_| f.read_to_end(&mut bytes)).is_err() {
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
        assert_eq!(super::log_tail(&p, 2, 0), "line 9998\nline 9999");
        assert_eq!(super::log_tail(&tmp.path().join("missing"), 2, 0), "");
    }

    #[test]
    fn the_tail_starts_where_the_trial_s_worker_began_to_write() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.log");
        let before = "an earlier trial's last line\n=== proofbench: trial 2 of x (round 2) ===\n";
        std::fs::write(&p, before).unwrap();
        assert_eq!(super::log_tail(&p, 10, before.len() as u64), "", "the worker wrote nothing");
        std::fs::write(&p, format!("{before}its own line\n")).unwrap();
        assert_eq!(super::log_tail(&p, 10, before.len() as u64), "its own line");
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
    let last_line = stderr_tail.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
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
    if let Some(bound) = run.report_overflow {
        return (
            Status::Failed,
            Some(format!(
                "the worker printed more than {} on its report channel (the bound of this cell's one-line report); its process group was killed",
                mib(bound)
            )),
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
            let mut reason = how.unwrap_or_else(|| "exited with code 0".into());
            if let Some(bad) = bad_report {
                reason.push_str(&format!("; unreadable report ({bad})"));
            } else if p.exit_code == Some(0) {
                reason.push_str(" without a report");
            }
            if last_line.is_empty() {
                reason.push_str("; the worker wrote nothing on stderr");
            } else {
                reason.push_str(&format!("; last stderr line: {last_line}"));
            }
            (Status::Failed, Some(reason))
        }
    }
}

/// The record of one trial from how its worker ended, with the worker's
/// report (an empty one when it printed none).
pub fn trial(
    run: &WorkerRun,
    timeout: Duration,
    stderr_tail: &str,
    trial: u32,
    round: u32,
    started_utc: String,
    finished_utc: String,
) -> (TrialRecord, WorkerReport) {
    let (report, bad) = match parse_report(&run.stdout) {
        Ok(r) => (r, None),
        Err(e) => (None, Some(e)),
    };
    let (status, reason) = status_of(report.as_ref(), bad.as_deref(), run, timeout, stderr_tail);
    let mut report = report.unwrap_or_else(|| WorkerReport::new(status, reason.clone()));
    for s in &mut report.samples {
        s.trial = trial;
    }
    let record =
        TrialRecord { started_utc, finished_utc, ..TrialRecord::from_report(trial, round, status, reason, run.process.clone(), &report) };
    (record, report)
}

/// A finished trial: its record and the worker's report (samples, verifier,
/// counters, details).
pub struct Finished {
    pub record: TrialRecord,
    pub report: WorkerReport,
    /// The row's log, relative to the run directory.
    pub log_rel: String,
    /// The last lines of the log (this trial's end).
    pub stderr_tail: String,
}

/// A cell's trials, to be made into its row.
pub struct RowInput<'a> {
    pub cell: &'a Cell,
    pub spec: &'a WorkloadSpec,
    /// At least one, in the order they ran.
    pub trials: Vec<Finished>,
    pub planned: u32,
    pub stop: RowStop,
}

/// The verifiers of every trial as one record: the first failing trial's,
/// else the last trial's, with the samples checked over every trial.
fn merged_verifier(trials: &[Finished]) -> Option<VerifierRecord> {
    let all: Vec<&VerifierRecord> = trials.iter().filter_map(|t| t.report.verifier.as_ref()).collect();
    let pick = all.iter().find(|v| !v.passed).or(all.last())?;
    Some(VerifierRecord { checked_samples: all.iter().map(|v| v.checked_samples).sum(), ..(*pick).clone() })
}

/// The worker processes of every trial as one: wall time and rusage summed,
/// the deciding trial's pid and ending.
fn merged_process(trials: &[Finished], deciding: &Finished) -> ProcessRecord {
    let rusage = trials.iter().filter_map(|t| t.record.process.rusage).reduce(|a, b| a.plus(&b));
    ProcessRecord { wall_ms: trials.iter().map(|t| t.record.process.wall_ms).sum(), rusage, ..deciding.record.process.clone() }
}

/// Builds the row of a cell from its trials (without its raw-file path,
/// which the writer sets). Its status is the first trial that is not ok,
/// else ok.
pub fn row(input: RowInput) -> Row {
    let RowInput { cell, spec, trials, planned, stop } = input;
    let last = trials.last().expect("a row has at least one trial");
    let deciding = trials.iter().find(|t| t.record.status != Status::Ok).unwrap_or(last);
    let (status, reason) = match deciding.record.status {
        Status::Ok => (Status::Ok, None),
        s => {
            let why = deciding.record.reason.clone().unwrap_or_default();
            let reason = if trials.len() == 1 { why } else { format!("trial {} of {}: {why}", deciding.record.trial + 1, trials.len()) };
            (s, Some(reason))
        }
    };
    let samples: Vec<_> = trials.iter().flat_map(|t| t.report.samples.iter().cloned()).collect();
    let stats = RowStats::of(&samples, DEFAULT_NOISE);
    let records: Vec<TrialRecord> = trials.iter().map(|t| t.record.clone()).collect();
    let disagreement = stats.as_ref().and_then(|s| disagreement(&records, &s.headline, spec.direction()));
    Row {
        schema: ROW_SCHEMA.to_string(),
        cell: cell.clone(),
        summary: spec.summary.to_string(),
        shape: spec.shape,
        unit: spec.unit,
        direction: spec.direction(),
        timed_region: spec.timed_region.to_string(),
        total_window: spec.total_window.map(str::to_string),
        status,
        reason,
        skip: if status == Status::Skipped { deciding.record.skip } else { None },
        verifier: merged_verifier(&trials),
        measurement: trials[0].report.measurement.clone(),
        samples,
        stats,
        details: trials.iter().map(|t| &t.report.details).find(|d| !d.is_null()).cloned().unwrap_or_default(),
        process: merged_process(&trials, deciding),
        rusage_measured: trials.iter().filter_map(|t| t.report.rusage_measured).reduce(|a, b| a.plus(&b)),
        counters: trials.iter().filter_map(|t| t.report.counters.clone()).reduce(|a, b| a.merged(&b)),
        trials: records,
        trials_planned: planned,
        stop: Some(stop),
        design: None,
        disagreement,
        stderr_tail: deciding.stderr_tail.clone(),
        log: last.log_rel.clone(),
        raw: None,
        started_utc: trials[0].record.started_utc.clone(),
        finished_utc: last.record.finished_utc.clone(),
        profile: None,
    }
}

/// When the trials disagree beyond their samples' noise: by how much, and
/// the likely cause from what they recorded. Trials split into a high and a
/// low group around the geometric middle of their medians; a recorded fact
/// (the CPUs their threads ran on, their transparent huge page backing,
/// whether other processes disturbed them) is named as the likely cause when
/// it separates the groups: no value of it is shared between them. Time is
/// named first when the high and the low trials, in the order of their
/// rounds, form fewer runs than a random order would give
/// ([`crate::stats::runs::time_ordered`]): the machine changed state for a
/// stretch of the run.
pub fn disagreement(trials: &[TrialRecord], est: &TrialEstimate, dir: Direction) -> Option<String> {
    if !est.disagree {
        return None;
    }
    let mut ok: Vec<&TrialRecord> = trials.iter().filter(|t| t.median.is_some()).collect();
    ok.sort_by_key(|t| (t.round, t.trial));
    let medians: Vec<f64> = ok.iter().filter_map(|t| t.median).collect();
    let (lo, hi) = medians.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &m| (a.min(m), b.max(m)));
    let mut text = format!(
        "trials disagree: their medians span {:.0}% ({} to {})",
        100.0 * (hi / lo - 1.0),
        crate::text::format::number(lo),
        crate::text::format::number(hi)
    );
    if let Some(w) = est.within {
        text.push_str(&format!(" while the samples of one trial spread {:.1}%", 100.0 * w));
    }
    let high = crate::stats::runs::high_low(&medians);
    let (up, down): (Vec<&TrialRecord>, Vec<&TrialRecord>) = (
        ok.iter().zip(&high).filter(|(_, h)| **h).map(|(t, _)| *t).collect(),
        ok.iter().zip(&high).filter(|(_, h)| !**h).map(|(t, _)| *t).collect(),
    );
    let numbers = |ts: &[&TrialRecord], word: &str, n: fn(&TrialRecord) -> u32| -> String {
        let n: Vec<usize> = ts.iter().map(|t| n(t) as usize + 1).collect();
        format!("{word}{} {}", if n.len() == 1 { "" } else { "s" }, cpu_list(&n))
    };
    let names = |ts: &[&TrialRecord]| -> String {
        let n: Vec<String> = ts.iter().map(|t| (t.trial + 1).to_string()).collect();
        format!("{} {}", if n.len() == 1 { "trial" } else { "trials" }, n.join(", "))
    };
    // "trials 1, 3 (high): CPUs 1; trial 2 (low): CPUs 0" when the fact separates the groups.
    let separates = |fact: &dyn Fn(&TrialRecord) -> Option<String>| -> Option<String> {
        let values = |g: &[&TrialRecord]| -> Option<Vec<String>> { g.iter().map(|t| fact(t)).collect() };
        let (a, b) = (values(&up)?, values(&down)?);
        if a.iter().any(|v| b.contains(v)) {
            return None;
        }
        let list = |v: &[String]| {
            let mut v = v.to_vec();
            v.dedup();
            v.join(" or ")
        };
        Some(format!("{} (high): {}; {} (low): {}", names(&up), list(&a), names(&down), list(&b)))
    };
    let mut causes = Vec::new();
    if let Some(p) = crate::stats::runs::time_ordered(&medians) {
        let (slow, fast) = if dir == Direction::LowerIsBetter { (&up, &down) } else { (&down, &up) };
        causes.push(format!(
            "time: {} were slow and {} fast, so the machine changed state during the run (trials in a random order \
             split into so few stretches with probability {p:.3})",
            numbers(slow, "round", |t| t.round),
            numbers(fast, "round", |t| t.round)
        ));
    }
    if let Some(g) = separates(&|t| t.facts.as_ref().map(|f| format!("CPUs {}", cpu_list(&f.thread_cpus)))) {
        causes.push(format!("their threads ran on different CPUs ({g})"));
    }
    if let Some(g) = separates(&|t| t.facts.as_ref().and_then(|f| f.anon_huge_bytes).map(|b| format!("{} MiB of huge pages", b >> 20))) {
        causes.push(format!("their memory had different transparent huge page backing ({g})"));
    }
    if let Some(g) = separates(&|t| t.facts.as_ref().map(|_| if t.disturbed() { "disturbed".to_string() } else { "quiet".to_string() })) {
        causes.push(format!("other processes took their CPUs ({g})"));
    }
    if causes.is_empty() {
        text.push_str(
            "; likely cause: process-level state (memory layout, physical pages, a neighbour's cache use): what the trials \
             recorded (CPUs, huge page backing, interference, the order they ran in) does not separate the high ones from \
             the low",
        );
    } else {
        text.push_str(&format!("; likely cause: {}", causes.join("; ")));
    }
    Some(text)
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
            report_overflow: None,
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
    fn a_clean_exit_without_a_report_says_so_once_and_names_the_worker_s_last_line_or_none() {
        let r = run(Some(0), None, false, "");
        let why = |tail: &str| status_of(None, None, &r, Duration::from_secs(2), tail);
        assert_eq!(why(""), (Status::Failed, Some("exited with code 0 without a report; the worker wrote nothing on stderr".into())));
        assert_eq!(why("first\nlast\n\n").1.unwrap(), "exited with code 0 without a report; last stderr line: last");
    }

    #[test]
    fn a_report_past_its_bound_fails_the_trial_naming_the_bound() {
        let r = WorkerRun { report_overflow: Some(4 << 20), ..run(None, Some(libc::SIGTERM), false, "xxxx") };
        let (s, why) = status(&r);
        assert_eq!(s, Status::Failed);
        assert!(why.as_deref().unwrap().starts_with("the worker printed more than 4.0 MiB on its report channel"), "{why:?}");
    }

    #[test]
    fn garbage_on_the_report_channel_is_failed() {
        let (s, why) = status(&run(Some(0), None, false, "hello\n"));
        assert_eq!(s, Status::Failed);
        assert!(why.unwrap().contains("unreadable report"));
    }

    fn trial(n: u32, median: f64, cpus: &[usize], huge: u64) -> TrialRecord {
        let mut t = crate::evidence::fake::trial(n, median, Status::Ok);
        t.timed_samples = 3;
        t.facts = Some(crate::evidence::TrialFacts {
            allowed_cpus: vec![0, 1],
            thread_cpus: cpus.to_vec(),
            anon_huge_bytes: Some(huge),
            interference: None,
        });
        t
    }

    fn estimate(trials: &[TrialRecord]) -> TrialEstimate {
        let data: Vec<Vec<f64>> =
            trials.iter().map(|t| vec![t.median.unwrap() * 0.999, t.median.unwrap(), t.median.unwrap() * 1.001]).collect();
        let slices: Vec<&[f64]> = data.iter().map(Vec::as_slice).collect();
        crate::stats::estimate(&slices, 0.02).unwrap()
    }

    #[test]
    fn a_cause_is_named_only_when_it_separates_the_high_trials_from_the_low() {
        // Two modes, and the CPUs the threads ran on split exactly along them.
        let trials = [trial(0, 100.0, &[0], 0), trial(1, 200.0, &[0, 1], 0), trial(2, 101.0, &[0], 0)];
        let why = disagreement(&trials, &estimate(&trials), Direction::LowerIsBetter).unwrap();
        assert!(why.starts_with("trials disagree: their medians span 100% (100 to 200)"), "{why}");
        assert!(why.contains("their threads ran on different CPUs (trial 2 (high): CPUs 0-1; trials 1, 3 (low): CPUs 0)"), "{why}");
        assert!(!why.contains("huge page"), "the same backing everywhere is no cause: {why}");

        // The CPUs differ, but not along the modes: not named; huge pages are.
        let trials = [trial(0, 100.0, &[1], 0), trial(1, 200.0, &[0], 1 << 30), trial(2, 101.0, &[0], 0)];
        let why = disagreement(&trials, &estimate(&trials), Direction::LowerIsBetter).unwrap();
        assert!(!why.contains("different CPUs"), "{why}");
        assert!(
            why.contains(
                "different transparent huge page backing (trial 2 (high): 1024 MiB of huge pages; trials 1, 3 (low): 0 MiB of huge pages)"
            ),
            "{why}"
        );

        // Nothing recorded separates them: process-level state.
        let trials = [trial(0, 100.0, &[0], 0), trial(1, 200.0, &[0], 0), trial(2, 101.0, &[0], 0)];
        assert!(disagreement(&trials, &estimate(&trials), Direction::LowerIsBetter).unwrap().contains("likely cause: process-level state"));

        // Trials that agree: nothing to say.
        let trials = [trial(0, 100.0, &[0], 0), trial(1, 101.0, &[1], 0), trial(2, 100.5, &[0], 0)];
        assert_eq!(disagreement(&trials, &estimate(&trials), Direction::LowerIsBetter), None);
    }

    #[test]
    fn trials_slow_for_a_stretch_of_rounds_are_explained_by_time() {
        // os.syscall as seen on a busy machine: rounds 1-5 at 215-235 ns, then
        // rounds 6-9 at 167 ns; every trial on the same CPUs, none disturbed.
        let slow = [215.0, 228.0, 235.0, 221.0, 219.0];
        let medians: Vec<f64> = slow.iter().copied().chain([167.0, 166.5, 167.2, 166.8]).collect();
        let trials: Vec<TrialRecord> = medians.iter().enumerate().map(|(i, &m)| trial(i as u32, m, &[0], 0)).collect();
        let why = disagreement(&trials, &estimate(&trials), Direction::LowerIsBetter).unwrap();
        assert!(
            why.contains(
                "likely cause: time: rounds 1-5 were slow and rounds 6-9 fast, so the machine changed state during the run \
                 (trials in a random order split into so few stretches with probability 0.016)"
            ),
            "{why}"
        );
        assert!(!why.contains("process-level state"), "{why}");

        // A rate (higher is better): the high trials are the fast ones.
        let why = disagreement(&trials, &estimate(&trials), Direction::HigherIsBetter).unwrap();
        assert!(why.contains("time: rounds 6-9 were slow and rounds 1-5 fast"), "{why}");

        // The same trials in an order with no stretch: not time.
        let order = [0, 5, 1, 6, 2, 7, 3, 8, 4];
        let shuffled: Vec<TrialRecord> = order.iter().enumerate().map(|(i, &k)| trial(i as u32, medians[k], &[0], 0)).collect();
        let why = disagreement(&shuffled, &estimate(&shuffled), Direction::LowerIsBetter).unwrap();
        assert!(!why.contains("time:") && why.contains("process-level state"), "{why}");

        // Three trials cannot show an order: never time.
        let few = [trial(0, 230.0, &[0], 0), trial(1, 167.0, &[0], 0), trial(2, 166.0, &[0], 0)];
        let why = disagreement(&few, &estimate(&few), Direction::LowerIsBetter).unwrap();
        assert!(!why.contains("time:"), "{why}");
    }
}
