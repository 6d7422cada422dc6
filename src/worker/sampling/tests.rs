//! The sampling loop with a scripted workload and a scripted clock: every
//! sample lasts the duration its script gives (on the workload's timer and on
//! the loop's clock alike), so warmup, calibration and the stopping rule are
//! checked with no real timing.

use std::cell::Cell as Shared;
use std::rc::Rc;

use super::*;
use crate::evidence::StopReason;
use crate::model::placement::{CpuClass, Placement};
use crate::model::{CELL_SCHEMA, MeasureSpec};
use crate::model::{PinStrategy, Profile};
use crate::workloads::contract::{Check, Instance, Sampled, TableShape, Unit, Work};

const MS: u64 = 1_000_000;

/// A clock that moves only when a scripted sample (or the settle) moves it.
#[derive(Clone, Default)]
struct ScriptedClock {
    now: Rc<Shared<u64>>,
}

impl ScriptedClock {
    fn advance(&self, ns: u64) {
        self.now.set(self.now.get() + ns);
    }
}

impl Clock for ScriptedClock {
    const NAME: &'static str = "scripted";

    fn now_ns(&self) -> u64 {
        self.now.get()
    }

    fn resolution_ns(&self) -> u64 {
        1
    }

    fn read_cost_ns(&self) -> f64 {
        0.0
    }

    fn loop_overhead_ns(&self) -> f64 {
        0.5
    }

    fn settle(&self, ms: u64) {
        self.advance(ms * MS);
    }
}

/// A workload whose sample `k` (calibration, warmup and timed alike, in
/// order) lasts `per_iter_ns[k]` per iteration (the last entry repeats), and
/// whose verifier fails after sample `fail_at`.
struct Scripted {
    clock: ScriptedClock,
    per_iter_ns: Vec<u64>,
    fail_at: Option<usize>,
    calls: usize,
}

impl Instance for Scripted {
    /// The index of the sample.
    type Outcome = usize;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, usize)> {
        let per_iter = self.per_iter_ns[self.calls.min(self.per_iter_ns.len() - 1)];
        self.calls += 1;
        let ns = per_iter * iters;
        self.clock.advance(ns);
        timer.record_work(ns);
        Ok((Work::ops(iters), self.calls - 1))
    }

    fn verify(&mut self, &index: &usize) -> Check {
        let passed = self.fail_at != Some(index);
        Check { passed, expected: "ok".into(), observed: if passed { "ok" } else { "wrong" }.into() }
    }
}

fn spec(batched: bool) -> WorkloadSpec {
    WorkloadSpec {
        id: "test.scripted",
        group: "test",
        summary: "scripted samples",
        measures: "nothing",
        unit: Unit::NsPerOp,
        timed_region: "the scripted duration",
        total_window: None,
        verifier: "fails where the script says",
        batched,
        params: Vec::new(),
        faults: &[],
        shape: TableShape::Scaling,
    }
}

/// No warmup, 5 to 20 timed samples, a 1 s budget, a 2% CI target, no settle.
fn rule() -> MeasureSpec {
    MeasureSpec {
        warmup: 0,
        min_samples: 5,
        max_samples: 20,
        fixed_runs: None,
        budget_ms: 1000,
        ci_target_pct: 2.0,
        settle_ms: 0,
        target_sample_ms: 1.0,
    }
}

fn cell(measure: MeasureSpec) -> Cell {
    Cell {
        schema: CELL_SCHEMA.into(),
        index: 0,
        row_id: "000-test.scripted".into(),
        workload: "test.scripted".into(),
        group: "test".into(),
        label: "test".into(),
        profile: Profile::Quick,
        params: Default::default(),
        axes: Vec::new(),
        treatments: None,
        workers: None,
        placement: Placement { class: CpuClass::Physical, pin: PinStrategy::None, cpus: None, note: None },
        measure,
        seed: 7,
        fault: None,
        scratch_dir: None,
        command: None,
        variant: None,
    }
}

/// Runs the loop on a scripted workload; returns its report and the clock's final reading.
fn run(measure: MeasureSpec, batched: bool, per_iter_ns: &[u64], fail_at: Option<usize>) -> (WorkerReport, u64) {
    let clock = ScriptedClock::default();
    let inst = Scripted { clock: clock.clone(), per_iter_ns: per_iter_ns.to_vec(), fail_at, calls: 0 };
    let allowed = crate::measure::affinity::current_thread().unwrap_or_default();
    let report = measure_with(&clock, &cell(measure), &allowed, &spec(batched), Box::new(Sampled::new(inst)), 0.0, Probe::open(), None);
    (report, clock.now_ns())
}

fn rec(report: &WorkerReport) -> &MeasurementRecord {
    report.measurement.as_ref().expect("a measurement record")
}

fn durations(report: &WorkerReport, warmup: bool) -> Vec<u64> {
    report.samples.iter().filter(|s| s.warmup == warmup).map(|s| s.work_ns).collect()
}

#[test]
fn warmup_samples_are_kept_apart_and_marked_and_samples_are_the_scripted_durations() {
    let script = [9 * MS, 7 * MS, 2 * MS, 3 * MS, 4 * MS];
    let (report, now) = run(MeasureSpec { warmup: 2, fixed_runs: Some(3), ..rule() }, false, &script, None);
    assert_eq!(report.status, Status::Ok, "{:?}", report.reason);
    assert_eq!(durations(&report, true), [9 * MS, 7 * MS], "warmup: the first two, marked");
    assert_eq!(durations(&report, false), [2 * MS, 3 * MS, 4 * MS], "timed: the rest, in order");
    assert!(report.samples.iter().map(|s| s.index).eq(0..5));
    assert!(report.samples[..2].iter().all(|s| s.warmup) && report.samples[2..].iter().all(|s| !s.warmup));
    // One operation per sample: the value (ns/op) is the duration.
    assert!(report.samples.iter().all(|s| s.iters == 1 && s.ops == 1 && s.value == s.work_ns as f64));
    let r = rec(&report);
    assert_eq!((r.warmup_samples, r.timed_samples, r.calibration_samples), (2, 3, 0));
    assert_eq!(r.stop_reason, Some(StopReason::Fixed));
    // The timed phase is the timed samples only, on the loop's clock.
    assert_eq!(r.timed_phase_ms, 9.0);
    assert_eq!(now, 25 * MS);
    assert_eq!(r.clock, "scripted");
    let v = report.verifier.as_ref().unwrap();
    assert!(v.passed && v.checked_samples == 5, "every sample, warmup included, is verified: {v:?}");
}

#[test]
fn steady_samples_stop_at_the_minimum_on_the_interval_target() {
    let (report, _) = run(rule(), false, &[MS], None);
    let r = rec(&report);
    assert_eq!(r.timed_samples, 5);
    assert_eq!(r.stop_reason, Some(StopReason::CiTarget));
    assert_eq!(r.ci_rel_half_width_at_stop, Some(0.0));
    assert_eq!(durations(&report, false), [MS; 5]);
}

#[test]
fn noisy_short_samples_stop_at_the_cap() {
    let noisy = [MS / 2, 3 * MS / 2];
    let script: Vec<u64> = (0..40).map(|i| noisy[i % 2]).collect();
    let (report, _) = run(rule(), false, &script, None);
    let r = rec(&report);
    assert_eq!((r.timed_samples, r.stop_reason), (20, Some(StopReason::Cap)));
    assert_eq!(durations(&report, false), script[..20]);
    assert_eq!(r.timed_phase_ms, 20.0);
}

#[test]
fn noisy_long_samples_stop_before_the_next_would_overrun_the_budget() {
    // 140 and 160 ms in turn against 1 s: after five (740 ms) another 140 ms
    // fits; after six (900 ms) another of the last one's 160 ms would overrun,
    // so the trial stops at six, past its minimum of five.
    let script: Vec<u64> = (0..10).map(|i| if i % 2 == 0 { 140 * MS } else { 160 * MS }).collect();
    let (report, now) = run(rule(), false, &script, None);
    let r = rec(&report);
    assert_eq!((r.timed_samples, r.stop_reason), (6, Some(StopReason::Budget)));
    assert_eq!(durations(&report, false), script[..6]);
    assert_eq!(r.timed_phase_ms, 900.0);
    assert_eq!(now, 900 * MS);
    assert!(r.ci_rel_half_width_at_stop.is_some_and(|w| w * 100.0 > 2.0));
}

#[test]
fn a_sample_longer_than_the_budget_is_the_only_one() {
    let (report, _) = run(rule(), false, &[1500 * MS], None);
    let r = rec(&report);
    assert_eq!((r.timed_samples, r.stop_reason), (1, Some(StopReason::Budget)));
    assert_eq!(durations(&report, false), [1500 * MS]);
}

#[test]
fn the_settle_pause_and_warmup_are_outside_the_timed_phase() {
    let m = MeasureSpec { warmup: 1, settle_ms: 50, fixed_runs: Some(2), ..rule() };
    let (report, now) = run(m, false, &[100 * MS, MS], None);
    let r = rec(&report);
    assert_eq!(r.settle_ms, 50);
    assert_eq!(r.timed_phase_ms, 2.0);
    assert_eq!(now, 50 * MS + 100 * MS + 2 * MS);
}

#[test]
fn a_failed_verifier_stops_the_loop_with_the_samples_so_far() {
    let (report, _) = run(MeasureSpec { warmup: 1, ..rule() }, false, &[MS, 2 * MS, 3 * MS], Some(2));
    assert_eq!(report.status, Status::Invalid);
    assert!(report.reason.as_deref().is_some_and(|r| r.contains("expected ok, observed wrong")), "{:?}", report.reason);
    // The failing sample is kept: it is the evidence.
    assert_eq!(durations(&report, true), [MS]);
    assert_eq!(durations(&report, false), [2 * MS, 3 * MS]);
    let v = report.verifier.as_ref().unwrap();
    assert!(!v.passed && v.checked_samples == 3);
    assert_eq!(rec(&report).stop_reason, None);
}

#[test]
fn a_batch_is_calibrated_to_the_target_from_the_median_of_three() {
    // 1 us per iteration, a 1 ms target: 1, 100 and 1200 iterations; 1200
    // reach it, and two more samples confirm it (five calibration samples,
    // none kept).
    let m = MeasureSpec { warmup: 2, fixed_runs: Some(3), ..rule() };
    let (report, _) = run(m, true, &[1000], None);
    let r = rec(&report);
    assert_eq!((r.iters_per_sample, r.calibration_samples), (1200, 5));
    assert!(!r.iters_grown_after_warmup);
    assert_eq!(r.loop_overhead_ns_per_iter, Some(0.5));
    assert_eq!(report.samples.len(), 5, "calibration samples are not kept");
    assert!(report.samples.iter().all(|s| s.iters == 1200 && s.work_ns == 1_200_000 && s.value == 1000.0));
}

#[test]
fn a_batch_calibrated_cold_grows_once_when_warm_samples_are_faster() {
    // Calibration at 1 us per iteration fixes 1200; warm iterations take
    // 0.5 us, so the warm median (0.6 ms) is short of the 1 ms target: the
    // batch grows to 1200 x 1 / 0.6 x 1.2 = 2400 for the timed samples.
    let m = MeasureSpec { warmup: 2, fixed_runs: Some(3), ..rule() };
    let (report, _) = run(m, true, &[1000, 1000, 1000, 1000, 1000, 500], None);
    let r = rec(&report);
    assert!(r.iters_grown_after_warmup);
    assert_eq!(r.iters_per_sample, 2400);
    assert!(report.samples.iter().filter(|s| s.warmup).all(|s| s.iters == 1200 && s.work_ns == 600_000));
    assert!(report.samples.iter().filter(|s| !s.warmup).all(|s| s.iters == 2400 && s.work_ns == 1_200_000));
}
