//! The measurement loop of one cell: settle, calibrate (batched workloads),
//! warmup, timed samples until the stopping rule holds, the verifier after
//! every sample, and the worker's own resource account.
//!
//! The loop reads its clock through a small private trait, `Clock`:
//! [`measure`] gives it the real `CLOCK_MONOTONIC` (a generic parameter
//! monomorphised to it, so nothing is added around a sample), and the tests a
//! scripted one, so that warmup, calibration and the stopping rule can be
//! checked with no real timing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::evidence::{MeasurementRecord, SampleRecord, StopReason, TrialFacts, VerifierRecord, WorkerReport};
use crate::measure::clock;
use crate::measure::counters::{Accumulator, CounterRecord, Counts, InterruptCounters, Probe};
use crate::measure::interference::{self, Interference};
use crate::measure::interrupts::Interrupts;
use crate::measure::lockstep::Baton;
use crate::measure::rusage::Rusage;
use crate::model::Cell;
use crate::model::Status;
use crate::workloads::contract::{Sampler, Timer, WorkloadSpec};

use super::stopping;

/// The clock of the sampling loop: the settle pause, the clock's own costs
/// (for calibration and the record) and the readings around each timed
/// sample that the stopping rule's time budget counts. The work window itself
/// is bracketed by the workload with its `Timer`; the trial's account of the
/// machine ([`Watch`]) compares real CPU times, so it keeps the real clock.
trait Clock {
    /// The clock's name in the record.
    const NAME: &'static str;
    /// Nanoseconds from an arbitrary origin; never decreases.
    fn now_ns(&self) -> u64;
    /// The resolution the clock reports, in nanoseconds.
    fn resolution_ns(&self) -> u64;
    /// What one reading costs, in nanoseconds.
    fn read_cost_ns(&self) -> f64;
    /// The cost of one iteration of an empty counted loop, in nanoseconds.
    fn loop_overhead_ns(&self) -> f64;
    /// Pauses for `ms` milliseconds (the settle after prepare).
    fn settle(&self, ms: u64);
}

/// `CLOCK_MONOTONIC` ([`clock`]): the clock of every real trial.
struct Monotonic;

impl Clock for Monotonic {
    const NAME: &'static str = "CLOCK_MONOTONIC";

    #[inline]
    fn now_ns(&self) -> u64 {
        clock::now_ns()
    }

    fn resolution_ns(&self) -> u64 {
        clock::resolution_ns()
    }

    fn read_cost_ns(&self) -> f64 {
        clock::timer_overhead_ns(1001)
    }

    fn loop_overhead_ns(&self) -> f64 {
        // A fixed, long loop: the per-iteration cost of a short one is mostly the clock.
        clock::loop_overhead_ns(1 << 20, 5)
    }

    fn settle(&self, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// Why the loop ended early.
enum Halt {
    /// The verifier failed (the row is invalid).
    Invalid,
    /// The workload returned an error or panicked (the row failed).
    Failed(String),
}

struct Loop<'a> {
    spec: &'a WorkloadSpec,
    inst: Box<dyn Sampler>,
    samples: Vec<SampleRecord>,
    verifier: Option<VerifierRecord>,
    checked: u32,
    probe: Arc<Mutex<Probe>>,
    counters: Accumulator,
    /// Whether the workload's timed samples bracket their work with
    /// `Timer::start`/`stop` (unknown until the first one).
    timer_brackets: Option<bool>,
}

impl Loop<'_> {
    /// Runs one sample and verifies it; returns its work window.
    fn snapshot(&self) -> Counts {
        self.probe.lock().unwrap_or_else(|p| p.into_inner()).snapshot()
    }

    /// Runs one sample and verifies it; returns its work window. Timed
    /// samples (kept, not warmup) also add their counters.
    fn sample(&mut self, iters: u64, warmup: bool, keep: bool) -> Result<u64, Halt> {
        let counted = keep && !warmup;
        // The outer snapshots are needed only while the workload has not
        // shown that it brackets its work with the Timer (which then reads
        // the counters itself): learnt from the first timed sample.
        let outer = counted && self.timer_brackets != Some(true);
        let mut timer = if counted { Timer::with_counters(self.probe.clone()) } else { Timer::new() };
        let outer_begin = outer.then(|| self.snapshot());
        let work = match catch_unwind(AssertUnwindSafe(|| self.inst.sample(iters, &mut timer))) {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => return Err(Halt::Failed(format!("sample failed: {e:#}"))),
            Err(panic) => return Err(Halt::Failed(format!("sample panicked: {}", panic_text(&panic)))),
        };
        if counted {
            let inner = timer.take_counter_window();
            self.timer_brackets.get_or_insert(inner.is_some());
            match (inner, outer_begin) {
                (Some((b, e)), _) => self.counters.add(&b, &e, true),
                (None, Some(b)) => self.counters.add(&b, &self.snapshot(), false),
                // Bracketed before, not this time: the sample is left out of
                // the counters (their `samples` says how many they cover).
                (None, None) => {}
            }
        }
        let verdict = match catch_unwind(AssertUnwindSafe(|| self.inst.verify())) {
            Ok(v) => v,
            Err(panic) => return Err(Halt::Failed(format!("verifier panicked: {}", panic_text(&panic)))),
        };
        self.checked += 1;
        let first_failure = self.verifier.as_ref().is_none_or(|v| v.passed);
        if first_failure {
            self.verifier = Some(VerifierRecord {
                description: self.spec.verifier.to_string(),
                passed: verdict.passed,
                expected: verdict.expected,
                observed: verdict.observed,
                checked_samples: self.checked,
            });
        }
        if let Some(v) = self.verifier.as_mut() {
            v.checked_samples = self.checked;
        }
        let work_ns = timer.work_ns().ok_or_else(|| Halt::Failed("the workload did not record a work window".into()))?;
        let value = match timer.value() {
            Some(v) => v,
            None => self.spec.unit.value(work_ns, iters, work).ok_or_else(|| {
                Halt::Failed(format!(
                    "a work window of {work_ns} ns with {} operations has no value in {}",
                    work.ops,
                    self.spec.unit.as_str()
                ))
            })?,
        };
        if keep {
            self.samples.push(SampleRecord {
                trial: 0,
                index: self.samples.len() as u32,
                warmup,
                iters,
                ops: work.ops,
                bytes: work.bytes,
                work_ns,
                total_ns: timer.total_ns(),
                value,
                total_value: timer.total_value().or_else(|| timer.total_ns().and_then(|t| self.spec.unit.value(t, iters, work))),
            });
        }
        if !verdict.passed {
            return Err(Halt::Invalid);
        }
        Ok(work_ns)
    }
}

/// The shortest a batched sample may be: the profile's target length, and at
/// least 100 clock reads so the clock costs under 1% of it.
fn calibration_floor(m: &crate::model::MeasureSpec, timer_overhead_ns: f64) -> f64 {
    (m.target_sample_ms * 1e6).max(100.0 * timer_overhead_ns)
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "(no message)".into())
}

/// Measures a prepared cell and returns the worker's report.
///
/// `allowed` are the CPUs the worker process started with; `probe` was
/// opened before the workload's prepare (so that inherited hardware counters
/// follow the threads it made).
pub fn measure(
    cell: &Cell,
    allowed: &[usize],
    spec: &WorkloadSpec,
    inst: Box<dyn Sampler>,
    prepare_ms: f64,
    probe: Probe,
    gate: Option<&mut Baton>,
) -> WorkerReport {
    measure_with(&Monotonic, cell, allowed, spec, inst, prepare_ms, probe, gate)
}

/// [`measure`] with the loop's clock given. With a lockstep `gate`, each
/// timed sample waits for the runner's token and hands it back, and the
/// runner, not the stopping rule, says when the timed loop ends
/// ([`crate::measure::lockstep`]).
#[allow(clippy::too_many_arguments)]
fn measure_with<C: Clock>(
    clk: &C,
    cell: &Cell,
    allowed: &[usize],
    spec: &WorkloadSpec,
    inst: Box<dyn Sampler>,
    prepare_ms: f64,
    probe: Probe,
    mut gate: Option<&mut Baton>,
) -> WorkerReport {
    let m = &cell.measure;
    clk.settle(m.settle_ms);
    let timer_overhead_ns = clk.read_cost_ns();
    let mut lp = Loop {
        spec,
        inst,
        samples: Vec::new(),
        verifier: None,
        checked: 0,
        probe: Arc::new(Mutex::new(probe)),
        counters: Accumulator::new(),
        timer_brackets: None,
    };
    let mut rec = MeasurementRecord {
        clock: C::NAME.into(),
        clock_resolution_ns: clk.resolution_ns(),
        timer_overhead_ns,
        loop_overhead_ns_per_iter: None,
        overhead_subtracted: false,
        iters_per_sample: 1,
        calibration_samples: 0,
        iters_grown_after_warmup: false,
        prepare_ms,
        settle_ms: m.settle_ms,
        warmup_samples: 0,
        timed_samples: 0,
        timed_phase_ms: 0.0,
        stop_reason: None,
        ci_rel_half_width_at_stop: None,
    };
    let mut watch: Option<Watch> = None;
    // `/proc/interrupts` before the first timed sample (and the real clock).
    let mut irq_begin: Option<(Interrupts, u64)> = None;
    let outcome = (|| -> Result<(), Halt> {
        if spec.batched {
            // Grow the batch until one sample lasts the target and the clock's
            // own cost is under 1% of it.
            // A count is accepted only when the median of three samples
            // reaches the target: one slow sample (a wakeup of an idle CPU,
            // an interrupt) must not fix a batch that is too small.
            let floor = calibration_floor(m, timer_overhead_ns);
            let mut iters = 1u64;
            loop {
                rec.calibration_samples += 1;
                let mut ns = lp.sample(iters, false, false)?;
                if ns as f64 >= floor {
                    let more = [lp.sample(iters, false, false)?, lp.sample(iters, false, false)?];
                    rec.calibration_samples += 2;
                    let mut three = [ns, more[0], more[1]];
                    three.sort_unstable();
                    ns = three[1];
                }
                if ns as f64 >= floor || iters >= 1 << 40 || rec.calibration_samples >= 60 {
                    break;
                }
                let grow = if ns == 0 { 10.0 } else { (floor / ns as f64 * 1.2).clamp(1.5, 100.0) };
                iters = ((iters as f64 * grow).ceil() as u64).max(iters + 1);
            }
            rec.iters_per_sample = iters;
            rec.loop_overhead_ns_per_iter = Some(clk.loop_overhead_ns());
        }
        watch = Some(Watch::start(cell, allowed));
        for _ in 0..m.warmup {
            lp.sample(rec.iters_per_sample, true, true)?;
            rec.warmup_samples += 1;
        }
        if spec.batched && rec.warmup_samples > 0 {
            // Calibration ran on cold CPUs, right after the settle pause: if
            // the warm samples are shorter than the target, grow the batch
            // once more (never shrink it).
            let warm: Vec<f64> = lp.samples.iter().filter(|s| s.warmup).map(|s| s.work_ns as f64).collect();
            let med = crate::stats::median(&warm);
            let floor = calibration_floor(m, timer_overhead_ns);
            if med > 0.0 && med < floor {
                rec.iters_per_sample = ((rec.iters_per_sample as f64 * floor / med * 1.2).ceil() as u64).max(rec.iters_per_sample + 1);
                rec.iters_grown_after_warmup = true;
            }
        }
        // Outside every sample: one read costs tens of microseconds.
        irq_begin = Interrupts::read().map(|i| (i, clock::now_ns()));
        let lockstep = |e: std::io::Error| Halt::Failed(format!("lockstep: the runner's token was lost ({e})"));
        if let Some(g) = gate.as_deref_mut() {
            g.ready().map_err(lockstep)?;
        }
        let t0 = clk.now_ns();
        let mut values: Vec<f64> = Vec::new();
        loop {
            if let Some(g) = gate.as_deref_mut()
                && !g.wait().map_err(lockstep)?
            {
                rec.stop_reason = Some(StopReason::Lockstep);
                return Ok(());
            }
            let before = clk.now_ns();
            lp.sample(rec.iters_per_sample, false, true)?;
            let after = clk.now_ns();
            rec.timed_samples += 1;
            values.push(lp.samples.last().map(|s| s.value).unwrap_or(f64::NAN));
            rec.timed_phase_ms = (after - t0) as f64 / 1e6;
            if let Some(g) = gate.as_deref_mut() {
                g.done().map_err(lockstep)?;
                continue;
            }
            let d = stopping::decide(&values, after - t0, after - before, m, cell.seed);
            if let Some(reason) = d.stop {
                rec.stop_reason = Some(reason);
                rec.ci_rel_half_width_at_stop = d.ci_rel_half_width;
                return Ok(());
            }
        }
    })();
    // Right after the last timed sample, before anything else the trial does.
    let irq_end = irq_begin.as_ref().and_then(|_| Interrupts::read().map(|i| (i, clock::now_ns())));
    let trial_cpus = watch.as_ref().map(|w| w.cpus.clone()).unwrap_or_default();
    let (facts, rusage_measured) = watch.map(Watch::finish).unzip();
    let interrupts = match (irq_begin, irq_end) {
        (Some(begin), Some(end)) if rec.timed_samples > 0 => Some(interrupt_counters(&trial_cpus, begin, end, rec.timed_samples)),
        _ => None,
    };
    let (status, reason) = match outcome {
        Ok(()) => (Status::Ok, None),
        Err(Halt::Invalid) => {
            let v = lp.verifier.as_ref();
            (
                Status::Invalid,
                Some(format!("verifier failed: expected {}, observed {}", v.map_or("?", |v| &v.expected), v.map_or("?", |v| &v.observed))),
            )
        }
        Err(Halt::Failed(why)) => (Status::Failed, Some(why)),
    };
    let details = catch_unwind(AssertUnwindSafe(|| lp.inst.details())).unwrap_or(serde_json::Value::Null);
    let counters = {
        let probe = lp.probe.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut lp.counters).finish(&probe).map(|c| CounterRecord { interrupts, ..c })
    };
    WorkerReport {
        samples: std::mem::take(&mut lp.samples),
        verifier: lp.verifier.take(),
        measurement: Some(rec),
        details,
        rusage_measured,
        counters,
        facts,
        ..WorkerReport::new(status, reason)
    }
}

/// The interrupts on `cpus` between the readings around the timed samples.
/// The idle baseline is the runner's to add (one idle window per run, not a
/// pause per trial).
fn interrupt_counters(cpus: &[usize], (begin, t0): (Interrupts, u64), (end, t1): (Interrupts, u64), samples: u32) -> InterruptCounters {
    InterruptCounters {
        cpus: end.present(cpus),
        samples,
        span_ns: t1.saturating_sub(t0),
        counts: begin.sum(cpus).until(&end.sum(cpus)),
        baseline_ns: 0,
        baseline: None,
    }
}

/// The worker's own account and what the trial's samples ran beside:
/// opened before the first warmup sample, closed after the last timed one
/// (both outside every sample).
struct Watch {
    /// The CPUs the trial could use: those its cell pins to, else those the
    /// worker was allowed.
    cpus: Vec<usize>,
    /// The CPUs the worker process started with.
    allowed: Vec<usize>,
    machine: interference::Snapshot,
    own: Rusage,
    children: Rusage,
    /// CPU time of the live processes the worker made (ms).
    descendants_ms: f64,
    t0: u64,
}

impl Watch {
    fn start(cell: &Cell, allowed: &[usize]) -> Watch {
        let mut cpus = cell.placement.cpus.clone().filter(|c| !c.is_empty()).unwrap_or_else(|| allowed.to_vec());
        cpus.sort_unstable();
        cpus.dedup();
        Watch {
            cpus,
            allowed: allowed.to_vec(),
            machine: interference::Snapshot::read(),
            own: Rusage::this_process(),
            children: Rusage::children(),
            descendants_ms: interference::descendants_cpu_ms(),
            t0: clock::now_ns(),
        }
    }

    /// The trial's facts and the worker's own account since the start. Its
    /// CPU time counts its threads, the children it reaped, and those still
    /// alive (a child reaped in the window moves from the last to the
    /// second, so the sum counts it once).
    fn finish(self) -> (TrialFacts, Rusage) {
        let window_ms = (clock::now_ns() - self.t0) as f64 / 1e6;
        let measured = Rusage::this_process().since(&self.own);
        let reaped = measured.plus(&Rusage::children().since(&self.children));
        let own_ms = reaped.cpu_seconds() * 1e3 + (interference::descendants_cpu_ms() - self.descendants_ms);
        let machine = interference::Snapshot::read();
        let facts = TrialFacts {
            interference: Some(Interference::between(&self.machine, &machine, &self.cpus, own_ms.max(0.0), window_ms)),
            thread_cpus: interference::thread_cpus(),
            anon_huge_bytes: interference::anon_huge_bytes(),
            allowed_cpus: self.allowed,
        };
        (facts, measured)
    }
}

#[cfg(test)]
mod tests;
