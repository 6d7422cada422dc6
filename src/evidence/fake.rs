//! Records made up for the tests of the stages that read them (compare,
//! report, history, claims, fleet): the one row builder of the tests
//! ([`row`], and its shapes [`workers_row`] and [`named_row`]), rows whose
//! trials each took one sample, and the runs that hold them, with this
//! machine's envelope. Test builds only; no test module builds rows of its
//! own or borrows another's.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::{ProcessRecord, ROW_SCHEMA, RUN_SCHEMA, Row, RowStats, RunRecord, SampleRecord, StoredRun, TrialRecord};
use crate::envelope::Envelope;
use crate::model::placement::{CpuClass, Placement};
use crate::model::{Cell, MeasureSpec, PinStrategy, Profile, Status, Unit, Variant, variant::AXIS};

/// An ok row of `workload` (plan position `index`) with the axes `axes`
/// (and `variant=NAME` first, under a variant), whose trial `i` ran in
/// round `i` and took one sample of `medians[i]`.
pub(crate) fn row(index: usize, workload: &str, axes: &[(&str, Value)], variant: Option<&Variant>, medians: &[f64], unit: Unit) -> Row {
    let mut params: Vec<(String, Value)> = axes.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    if let Some(v) = variant {
        params.insert(0, (AXIS.to_string(), Value::from(v.name.clone())));
    }
    let samples: Vec<SampleRecord> = medians
        .iter()
        .enumerate()
        .map(|(i, &value)| SampleRecord {
            trial: i as u32,
            index: 0,
            warmup: false,
            iters: 1,
            ops: 1,
            bytes: 0,
            work_ns: value as u64,
            total_ns: None,
            value,
            total_value: None,
        })
        .collect();
    let cell = Cell {
        schema: crate::model::CELL_SCHEMA.into(),
        index,
        row_id: format!("{index:03}-{workload}"),
        workload: workload.into(),
        group: workload.split('.').next().unwrap_or_default().into(),
        label: "box".into(),
        profile: Profile::Quick,
        axes: params.iter().map(|(k, _)| k.clone()).collect(),
        treatments: Some(Vec::new()),
        params: params.into_iter().collect(),
        workers: None,
        placement: Placement { class: CpuClass::Physical, pin: PinStrategy::None, cpus: None, note: None },
        measure: MeasureSpec::for_profile(Profile::Quick),
        seed: 1,
        fault: None,
        scratch_dir: None,
        command: None,
        variant: variant.cloned(),
    };
    let trials = samples.iter().map(|s| trial(s.trial, s.value, Status::Ok)).collect();
    Row {
        schema: ROW_SCHEMA.into(),
        cell,
        summary: "A test".into(),
        shape: crate::model::TableShape::Primitive,
        unit,
        direction: unit.direction(),
        timed_region: "t".into(),
        total_window: None,
        status: Status::Ok,
        reason: None,
        skip: None,
        verifier: None,
        measurement: None,
        stats: RowStats::of(&samples, crate::stats::DEFAULT_NOISE),
        trials,
        trials_planned: medians.len() as u32,
        stop: Some(super::RowStop::Fixed),
        design: None,
        disagreement: None,
        samples,
        details: Value::Null,
        process: ProcessRecord::default(),
        rusage_measured: None,
        counters: None,
        stderr_tail: String::new(),
        log: String::new(),
        raw: None,
        started_utc: String::new(),
        finished_utc: String::new(),
        profile: None,
    }
}

/// A row of workload `w.x` at `workers` workers of CPU class `class` (the
/// scaling tables' shape), whose trial `i` took one sample of `values[i]`
/// (and of `totals[i]` as its total window), with `status` (a row not ok
/// says "broken"; a skip is one of the machine).
pub(crate) fn workers_row(workers: usize, class: CpuClass, values: &[f64], totals: Option<&[f64]>, status: Status, unit: Unit) -> Row {
    let mut r = row(workers, "w.x", &[("workers", json!(workers))], None, values, unit);
    r.cell.row_id = format!("{workers:03}-w.x-workers={workers}");
    r.cell.workers = Some(workers);
    r.cell.placement.class = class;
    r.cell.placement.note = (class == CpuClass::Oversubscribed).then(|| "CPUs are shared".into());
    if let Some(t) = totals {
        for (s, &total) in r.samples.iter_mut().zip(t) {
            (s.total_ns, s.total_value) = (Some(total as u64), Some(total));
        }
        r.total_window = Some("spawn + work + join".into());
        r.stats = RowStats::of(&r.samples, crate::stats::DEFAULT_NOISE);
    }
    r.shape = crate::model::TableShape::Scaling;
    r.stop = Some(super::RowStop::CiTarget);
    with_status(r, status)
}

/// A row of `workload` with the parameters `params` (none of them an axis)
/// whose trial `i` took one sample of `values[i]`, with `status`.
pub(crate) fn named_row(workload: &str, params: &[(&str, Value)], values: &[f64], status: Status, unit: Unit) -> Row {
    let mut r = workers_row(0, CpuClass::Physical, values, None, status, unit);
    let c = &mut r.cell;
    c.row_id = format!("000-{workload}");
    c.workload = workload.into();
    c.group = workload.split('.').next().unwrap_or_default().into();
    c.params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    c.axes = Vec::new();
    c.workers = None;
    r
}

/// `r` with `status`, its trials too: a row not ok says "broken", a skip is
/// one of the machine.
pub(crate) fn with_status(mut r: Row, status: Status) -> Row {
    r.status = status;
    r.reason = (status != Status::Ok).then(|| "broken".into());
    r.skip = (status == Status::Skipped).then_some(crate::model::SkipKind::Machine);
    r.trials = r.samples.iter().map(|s| trial(s.trial, s.value, status)).collect();
    r
}

/// Trial `n` (run in round `n`) that took one timed sample of median
/// `median`, with `status` (a skip one of the machine).
pub(crate) fn trial(n: u32, median: f64, status: Status) -> TrialRecord {
    TrialRecord {
        trial: n,
        round: n,
        status,
        reason: None,
        skip: (status == Status::Skipped).then_some(crate::model::SkipKind::Machine),
        started_utc: String::new(),
        finished_utc: String::new(),
        process: ProcessRecord::default(),
        warmup_samples: 0,
        timed_samples: 1,
        median: Some(median),
        verified: Some(true),
        measurement: None,
        rusage_measured: None,
        facts: None,
        lockstep: None,
        not_in_lockstep: None,
    }
}

/// A variant that changes nothing: `name`, the base or not.
pub(crate) fn variant(name: &str, base: bool) -> Variant {
    Variant { name: name.into(), base, settings: Vec::new() }
}

/// A finished run of every cell of `plan` that holds `rows` (leave cells of
/// the plan without a row, and call [`killed`], for a run that did not get
/// to them), on this machine.
pub(crate) fn run(plan: Vec<Cell>, rows: Vec<Row>) -> StoredRun {
    let run = RunRecord {
        plan,
        started_utc: "2025-01-01T00:00:00Z".into(),
        finished_utc: Some("2025-01-01T00:01:00Z".into()),
        wall_s: Some(60.0),
        ..record("fake", "2025-01-01T00:00:00Z", None, &rows)
    };
    StoredRun { dir: "/nowhere/fake".into(), run, rows, warnings: Vec::new() }
}

/// `run` as a SIGKILL leaves it: no finish record.
pub(crate) fn killed(mut run: StoredRun) -> StoredRun {
    (run.run.finished_utc, run.run.wall_s, run.run.counts, run.run.complete) = (None, None, None, false);
    run
}
/// This machine's envelope, read once.
pub(crate) fn envelope() -> Envelope {
    static E: OnceLock<Envelope> = OnceLock::new();
    E.get_or_init(|| Envelope::collect(Path::new("/"), vec!["proofbench".into()], 1)).clone()
}

/// The record of a finished run named `name` that started at `started`
/// and planned exactly the cells of `rows`.
fn record(name: &str, started: &str, commit: Option<&str>, rows: &[Row]) -> RunRecord {
    let options = json!({
        "selection": [], "profile": "quick", "workers": null, "oversubscribe": false, "pin": ["none"],
        "runtime": null, "allocator": null, "compare": null, "runs": null, "time_budget_ms": null,
        "timeout_ms": 60000, "warmup": null, "settle_ms": null, "ci_target_pct": null, "params": [],
        "include_selftest": true, "io_dir": null, "inject_fault": null
    });
    RunRecord {
        schema: RUN_SCHEMA.into(),
        id: name.into(),
        label: "box".into(),
        commit: commit.map(String::from),
        profile: Profile::Quick,
        seed: 1,
        options: serde_json::from_value(options).expect("options"),
        envelope: envelope(),
        plan: rows.iter().map(|r| r.cell.clone()).collect(),
        started_utc: started.into(),
        finished_utc: Some(started.into()),
        wall_s: Some(1.0),
        cpu: None,
        interrupted: false,
        complete: true,
        counts: Some(crate::evidence::StatusCounts::of(rows.iter().map(|r| &r.status))),
        not_run: Vec::new(),
        launcher: None,
        trials: None,
        rounds: Vec::new(),
        interference: None,
        kind: Default::default(),
        variants: Vec::new(),
    }
}

/// How a run of `--launcher 'ssh -- {host}'` reached `host`, one host of
/// the `--hosts` invocation `submission` (`None`: a run of one launcher).
pub(crate) fn launcher(host: &str, submission: Option<&str>) -> crate::evidence::LauncherRecord {
    crate::evidence::LauncherRecord {
        template: "ssh -- {host}".into(),
        host: Some(host.into()),
        prefix: vec!["ssh".into(), "--".into(), host.into()],
        remote_exe: "proofbench".into(),
        launched_from: Some("head".into()),
        submission: submission.map(String::from),
    }
}

/// A run named `name` that started at `started` holding `rows`, and the
/// text of its run.json.
pub(crate) fn fake_run(name: &str, started: &str, commit: Option<&str>, rows: Vec<Row>) -> (StoredRun, String) {
    let run = record(name, started, commit, &rows);
    let text = serde_json::to_string_pretty(&run).unwrap();
    (StoredRun { dir: PathBuf::from(format!("/nowhere/{name}")), run, rows, warnings: Vec::new() }, text)
}

/// What else ran over a second of CPUs 0 and 1: others took `share` of
/// them (disturbed from 10%).
pub(crate) fn busy(share: f64) -> crate::measure::interference::Interference {
    crate::measure::interference::Interference {
        cpus: vec![0, 1],
        window_ms: 1000.0,
        own_cpu_ms: 1000.0 * (1.0 - share),
        busy_ms: 2000.0,
        others_cpu_ms: 2000.0 * share,
        others_share: share,
        steal_ms: 0.0,
        steal_share: 0.0,
        pressure_ms: None,
        pressure_share: None,
        resolution_ms: 10.0,
        disturbed: share >= 0.1,
        partners_cpu_ms: None,
    }
}

/// `r` with every trial disturbed: others took `share` of its CPUs.
pub(crate) fn disturbed(mut r: Row, share: f64) -> Row {
    for t in &mut r.trials {
        t.facts = Some(super::TrialFacts {
            allowed_cpus: vec![0, 1],
            thread_cpus: vec![0],
            anon_huge_bytes: None,
            interference: Some(busy(share)),
        });
    }
    r
}
