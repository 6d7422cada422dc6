//! `npb.ep`: the NAS Parallel Benchmarks' EP kernel ("embarrassingly
//! parallel", NPB 3.4) on a task runtime.
//!
//! EP draws 2^M pairs of uniform numbers from NPB's generator (x(k+1) =
//! 5^13 x(k) mod 2^46, seed 271828183), in 2^(M-16) batches of 2^16 pairs,
//! turns each pair inside the unit circle into two Gaussian deviates by the
//! Marsaglia polar method, and tallies them: sx and sy (the sums of |X| and
//! |Y|, NPB 3.4) and `q[l]`, the number of pairs whose larger deviate lies in
//! [l, l + 1). Every batch finds its own start seed by jumping ahead from the
//! seed (NPB's loop 120, with an = a^(2 NK)), so batches are independent: the
//! batches are split into contiguous ranges, one task each (4 per worker; 1
//! per worker on the `spawn` runtime, whose every task is a thread of its
//! own, so that no more threads run than the worker count), and the tasks'
//! tallies are summed in range order. The results depend on the worker count
//! only through the order of the floating-point additions of sx and sy.

use std::sync::{Mutex, PoisonError};

use anyhow::bail;
use serde_json::json;

use super::randlc::{self, randlc, vranlc};
use crate::measure::isa::{Path, multiversion};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::isa;
use crate::workloads::rt::common::timed_install;
use crate::workloads::rt::runtime::{self, Maker, Runtime};

/// log2 of the pairs per batch (NPB's `mk`).
const MK: u32 = 16;
/// Pairs per batch (NPB's `nk`).
const NK: usize = 1 << MK;
/// Annuli tallied (NPB's `nq`).
const NQ: usize = 10;
/// The seed of the sequence (NPB's `s`).
const SEED: f64 = 271_828_183.0;
/// NPB's relative tolerance on sx and sy.
const EPSILON: f64 = 1e-8;
const FAULT: &str = "skip-batch";

/// A problem class and NPB 3.4's verification values for it.
#[derive(Debug)]
struct Class {
    name: &'static str,
    /// log2 of the pairs generated.
    m: u32,
    sx: f64,
    sy: f64,
    /// Gaussian pairs: the sum of the annulus counts.
    pairs: u64,
}

const CLASSES: [Class; 3] = [
    Class { name: "S", m: 24, sx: 1.051299420395306e+07, sy: 1.051517131857535e+07, pairs: 13_176_389 },
    Class { name: "W", m: 25, sx: 2.102505525182392e+07, sy: 2.103162209578822e+07, pairs: 26_354_769 },
    Class { name: "A", m: 28, sx: 1.682235632304711e+08, sy: 1.682195123368299e+08, pairs: 210_832_767 },
];

impl Class {
    fn named(name: &str) -> anyhow::Result<&'static Class> {
        match CLASSES.iter().find(|c| c.name == name) {
            Some(c) => Ok(c),
            None => bail!("npb.ep has no class '{name}'"),
        }
    }

    /// Batches of NK pairs (NPB's `nn`).
    fn batches(&self) -> u64 {
        1 << (self.m - MK)
    }

    /// NPB's operation count: the 2^(M+1) random numbers generated.
    fn ops(&self) -> u64 {
        1 << (self.m + 1)
    }
}

pub struct Ep;

impl Workload for Ep {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "npb.ep",
            group: "npb",
            summary: "NAS Parallel Benchmarks 3.4 EP: Gaussian deviates from NPB's generator, tallied in annuli, batches split over runtime tasks",
            measures: "throughput of an embarrassingly parallel floating-point kernel on a task runtime: \
                       Mop/s as NPB counts it, 2^(M+1) random numbers per run divided by the time",
            unit: Unit::MopsPerSec,
            timed_region: "NPB's timed region, inside the runtime's install (the hand-off to the pool is outside): computing the jump multiplier a^(2^17), then every batch (its start seed by \
                           jumping ahead, 2^17 uniform numbers by vranlc, the Gaussian pairs tallied) in tasks of contiguous \
                           batch ranges (4 per worker, 1 per worker on spawn), and the sum of the tasks' tallies; the per-task buffers are allocated \
                           and touched at prepare",
            total_window: None,
            verifier: "NPB 3.4's official values for the class: sx and sy (sums of |X| and |Y|) within a relative error of \
                       1e-8, and the number of Gaussian pairs (the sum of the 10 annulus counts) exactly",
            batched: false,
            params: vec![
                super::class_param("NPB problem class: S (M = 24), W (M = 25), A (M = 28); 2^M pairs"),
                runtime::runtime_param(&runtime::ALL),
                isa::param(),
                ParamSpec::workers(
                    "worker threads of the runtime; the batches are split into 4 tasks per worker (1 on spawn: a thread each)",
                ),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let class = Class::named(cell.choice::<super::ClassName>("class")?.as_str())?;
        // The fault: the middle batch is generated by no task and tallied nowhere.
        let skip = cx.fault_is(FAULT).then(|| class.batches() / 2);
        let path = match isa::path(cell)? {
            Ok(p) => p,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        runtime::prepare_with(cell, false, EpMaker { class, skip, path })
    }
}

/// What EP tallies: the sums of |X| and |Y| and the annulus counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Tally {
    sx: f64,
    sy: f64,
    q: [u64; NQ],
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.sx += other.sx;
        self.sy += other.sy;
        for (a, b) in self.q.iter_mut().zip(other.q) {
            *a += b;
        }
    }

    /// Gaussian pairs counted (NPB's `gc`).
    fn pairs(&self) -> u64 {
        self.q.iter().sum()
    }
}

/// an = a^(2 NK) mod 2^46, by squaring a MK + 1 times as NPB does (loop 100):
/// the multiplier that jumps one batch (2 NK numbers) ahead.
fn batch_multiplier() -> f64 {
    let mut t1 = randlc::A;
    for _ in 0..=MK {
        let t = t1;
        randlc(&mut t1, t);
    }
    t1
}

/// The start seed of batch `kk` (from 0): SEED * an^kk mod 2^46, by NPB's
/// binary jump (loop 120).
fn batch_seed(mut kk: u64, an: f64) -> f64 {
    let (mut t1, mut t2) = (SEED, an);
    loop {
        let ik = kk / 2;
        if 2 * ik != kk {
            randlc(&mut t1, t2);
        }
        if ik == 0 {
            return t1;
        }
        let t = t2;
        randlc(&mut t2, t);
        kk = ik;
    }
}

/// Batch `kk`: its 2 NK uniform numbers into `x` (NPB's `vranlc` call), then
/// the acceptance-rejection loop 140 tallying its Gaussian pairs into `t`.
#[inline(always)]
fn batch(kk: u64, an: f64, x: &mut [f64], t: &mut Tally) {
    let mut seed = batch_seed(kk, an);
    vranlc(&mut seed, randlc::A, x);
    for pair in x.chunks_exact(2) {
        let x1 = 2.0 * pair[0] - 1.0;
        let x2 = 2.0 * pair[1] - 1.0;
        let t1 = x1 * x1 + x2 * x2;
        if t1 <= 1.0 {
            let t2 = (-2.0 * t1.ln() / t1).sqrt();
            let t3 = (x1 * t2).abs();
            let t4 = (x2 * t2).abs();
            // l <= 5 for every class here. |deviate| <= sqrt(-2 ln t1) could reach
            // 10 only for t1 < e^-50: NPB would write past q, this panics.
            t.q[t3.max(t4) as usize] += 1;
            t.sx += t3;
            t.sy += t4;
        }
    }
}

multiversion! {
    /// Batches `first..last` in order into a fresh tally, leaving out `skip`,
    /// compiled for `path`.
    fn batches[](path: Path, first: u64, last: u64, an: f64, skip: Option<u64>, x: &mut [f64]) -> Tally {
        let mut t = Tally::default();
        for kk in (first..last).filter(|&k| Some(k) != skip) {
            batch(kk, an, x, &mut t);
        }
        t
    }
}

/// Tasks per worker: 4 to balance the load, but 1 on a runtime that starts a
/// thread per task (`spawn`), whose threads would otherwise outnumber the
/// workers the row is labelled with.
fn tasks_per_worker<R: Runtime>() -> u64 {
    if R::FINE_GRAINED { 4 } else { 1 }
}

/// The relative error NPB checks: |computed - reference| / |reference|.
fn rel_error(computed: f64, reference: f64) -> f64 {
    ((computed - reference) / reference).abs()
}

struct EpMaker {
    class: &'static Class,
    skip: Option<u64>,
    path: Path,
}

impl Maker for EpMaker {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(EpInstance::new(rt, self.class, self.skip, self.path)))
    }
}

struct EpInstance<R> {
    rt: R,
    class: &'static Class,
    /// Batch ranges of the tasks: task i runs `bounds[i]..bounds[i + 1]`.
    bounds: Vec<u64>,
    /// One 2 NK buffer per task (NPB's `x`), touched at prepare.
    buffers: Vec<Mutex<Vec<f64>>>,
    partials: Vec<Mutex<Tally>>,
    skip: Option<u64>,
    /// The code path of the batches.
    path: Path,
}

impl<R: Runtime> EpInstance<R> {
    fn new(rt: R, class: &'static Class, skip: Option<u64>, path: Path) -> Self {
        let nn = class.batches();
        let tasks = (tasks_per_worker::<R>() * rt.workers() as u64).clamp(1, nn);
        let bounds = (0..=tasks).map(|i| nn * i / tasks).collect();
        // Filled like NPB's loop 5, so that every page is touched now.
        let buffers = (0..tasks).map(|_| Mutex::new(vec![-1e99; 2 * NK])).collect();
        let partials = (0..tasks).map(|_| Mutex::new(Tally::default())).collect();
        EpInstance { rt, class, bounds, buffers, partials, skip, path }
    }

    fn tasks(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The whole kernel, NPB's timed region; runs inside the runtime's `install`.
    fn kernel(&self) -> Tally {
        let (bounds, buffers, partials, skip, path) = (&self.bounds, &self.buffers, &self.partials, self.skip, self.path);
        let an = batch_multiplier();
        self.rt.for_each_task(self.tasks(), &|i| {
            let mut x = buffers[i].lock().unwrap_or_else(PoisonError::into_inner);
            let t = batches(path, bounds[i], bounds[i + 1], an, skip, &mut x);
            *partials[i].lock().unwrap_or_else(PoisonError::into_inner) = t;
        });
        let mut total = Tally::default();
        for p in partials {
            total.add(&p.lock().unwrap_or_else(PoisonError::into_inner));
        }
        total
    }
}

impl<R: Runtime> Instance for EpInstance<R> {
    /// The sums and counts of the whole kernel.
    type Outcome = Tally;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Tally)> {
        let t = timed_install(&self.rt, timer, || self.kernel());
        Ok((Work::ops(self.class.ops()), t))
    }

    fn verify(&mut self, t: &Tally) -> Check {
        let c = self.class;
        let expected = format!(
            "sx = {:e}, sy = {:e} (relative error <= {EPSILON:e}), gaussian pairs = {} exactly (NPB 3.4, class {})",
            c.sx, c.sy, c.pairs, c.name
        );
        let (ex, ey) = (rel_error(t.sx, c.sx), rel_error(t.sy, c.sy));
        Check {
            passed: ex <= EPSILON && ey <= EPSILON && t.pairs() == c.pairs,
            expected,
            observed: format!(
                "sx = {:e} (relative error {ex:.3e}), sy = {:e} (relative error {ey:.3e}), gaussian pairs = {}",
                t.sx,
                t.sy,
                t.pairs()
            ),
        }
    }

    fn details(&self, last: Option<&Tally>) -> serde_json::Value {
        let c = self.class;
        let details = json!({
            "class": c.name,
            "m": c.m,
            "pairs": 1u64 << c.m,
            "batches": c.batches(),
            "tasks": self.tasks(),
            "sx": last.map(|t| t.sx),
            "sy": last.map(|t| t.sy),
            "sx_rel_error": last.map(|t| rel_error(t.sx, c.sx)),
            "sy_rel_error": last.map(|t| rel_error(t.sy, c.sy)),
            "gaussian_pairs": last.map(|t| t.pairs()),
            "counts": last.map(|t| t.q),
            "ops_per_sample": c.ops(),
        });
        isa::with_path(details, self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn, Team};

    #[test]
    fn the_batch_multiplier_and_seeds_jump_exactly() {
        // an is a^(2^17): 2 NK steps of the generator.
        assert_eq!(batch_multiplier(), randlc::power(randlc::A, 2 * NK as u64));
        assert_eq!(batch_seed(0, batch_multiplier()), SEED);
        // Batch 3 starts where stepping 3 * 2 NK numbers from the seed ends.
        let mut x = SEED;
        let mut skipped = vec![0.0; 3 * 2 * NK];
        vranlc(&mut x, randlc::A, &mut skipped);
        assert_eq!(batch_seed(3, batch_multiplier()), x);
        assert_eq!(batch_seed(5, batch_multiplier()), {
            let mut s = SEED;
            randlc(&mut s, randlc::power(randlc::A, 5 * 2 * NK as u64));
            s
        });
    }

    #[test]
    fn tallies_do_not_depend_on_how_the_batches_are_split() {
        let an = batch_multiplier();
        let mut x = vec![0.0; 2 * NK];
        let whole = batches(Path::BASELINE, 0, 6, an, None, &mut x);
        let mut split = batches(Path::BASELINE, 0, 2, an, None, &mut x);
        split.add(&batches(Path::BASELINE, 2, 3, an, None, &mut x));
        split.add(&batches(Path::BASELINE, 3, 6, an, None, &mut x));
        assert_eq!(whole.q, split.q);
        assert!(rel_error(split.sx, whole.sx) < 1e-12 && rel_error(split.sy, whole.sy) < 1e-12);
        // About pi/4 of the pairs fall inside the unit circle.
        let frac = whole.pairs() as f64 / (6 * NK) as f64;
        assert!((frac - std::f64::consts::FRAC_PI_4).abs() < 0.01, "{frac}");
        assert!(whole.q[NQ - 1] == 0 && whole.q[0] > whole.q[1]);
        let skipped = batches(Path::BASELINE, 0, 6, an, Some(4), &mut x);
        assert_eq!(skipped.pairs() + batches(Path::BASELINE, 4, 5, an, None, &mut x).pairs(), whole.pairs());
    }

    #[test]
    fn every_code_path_tallies_the_same_bits() {
        let an = batch_multiplier();
        let mut x = vec![0.0; 2 * NK];
        let reference = batches(Path::BASELINE, 0, 3, an, None, &mut x);
        for path in Path::every() {
            let t = batches(path, 0, 3, an, None, &mut x);
            assert_eq!((t.q, t.sx.to_bits(), t.sy.to_bits()), (reference.q, reference.sx.to_bits(), reference.sy.to_bits()), "{path:?}");
        }
    }

    fn verifies<R: Runtime>(workers: usize) {
        let rt = R::build(workers, None).unwrap();
        let mut inst = EpInstance::new(rt, &CLASSES[0], None, Path::native());
        let mut timer = Timer::new();
        let (w, out) = inst.sample(1, &mut timer).unwrap();
        assert_eq!(w, Work::ops(1 << 25));
        assert!(timer.work_ns().is_some());
        let v = inst.verify(&out);
        assert!(v.passed, "{} on {workers}: {v:?}", R::NAME);
        assert_eq!(inst.details(Some(&out))["gaussian_pairs"], 13_176_389);
        assert_eq!(inst.details(Some(&out))["tasks"], tasks_per_worker::<R>() as usize * workers);
    }

    #[test]
    fn every_runtime_and_split_gives_the_serial_tally() {
        // 4 batches, no official values: the serial tally is the reference.
        const SMALL: Class = Class { name: "small", m: 18, sx: 0.0, sy: 0.0, pairs: 0 };
        let reference = batches(Path::BASELINE, 0, SMALL.batches(), batch_multiplier(), None, &mut vec![0.0; 2 * NK]);
        fn check<R: Runtime>(reference: &Tally) {
            for workers in [1, 2, 3] {
                let inst = EpInstance::new(R::build(workers, None).unwrap(), &SMALL, None, Path::native());
                assert_eq!(inst.tasks(), (tasks_per_worker::<R>() as usize * workers).min(4), "4 batches: at most one task each");
                let t = inst.rt.install(|| inst.kernel());
                assert_eq!(t.q, reference.q, "{} on {workers}", R::NAME);
                assert!(rel_error(t.sx, reference.sx) < 1e-12 && rel_error(t.sy, reference.sy) < 1e-12);
            }
        }
        check::<Rayon>(&reference);
        check::<GlobalQueue>(&reference);
        check::<Spawn>(&reference);
        check::<Team>(&reference);
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "class S takes tens of seconds in a debug build (tests/cli/npb_ep_cg.rs runs it)")]
    fn class_s_verifies_on_every_runtime_with_1_and_2_workers() {
        for workers in [1, 2] {
            verifies::<Rayon>(workers);
            verifies::<GlobalQueue>(workers);
            verifies::<Spawn>(workers);
            verifies::<Team>(workers);
        }
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "class S takes tens of seconds in a debug build (tests/cli/npb_ep_cg.rs runs it)")]
    fn a_skipped_batch_fails_the_verifier() {
        let rt = Rayon::build(2, None).unwrap();
        let mut inst = EpInstance::new(rt, &CLASSES[0], Some(CLASSES[0].batches() / 2), Path::native());
        let (_, out) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed, "{v:?}");
        assert!(v.observed.contains("gaussian pairs = 131"), "{v:?}");
    }

    #[test]
    fn the_verifier_checks_each_value_with_npb_tolerances() {
        let rt = Rayon::build(1, None).unwrap();
        let mut inst = EpInstance::new(rt, &CLASSES[0], None, Path::native());
        let c = &CLASSES[0];
        let exact = Tally { sx: c.sx, sy: c.sy, q: [c.pairs, 0, 0, 0, 0, 0, 0, 0, 0, 0] };
        assert!(inst.verify(&exact).passed);
        assert!(inst.verify(&Tally { sx: c.sx * (1.0 + 5e-9), ..exact }).passed, "within 1e-8");
        assert!(!inst.verify(&Tally { sx: c.sx * (1.0 + 2e-8), ..exact }).passed, "sx off by 2e-8");
        assert!(!inst.verify(&Tally { sy: f64::NAN, ..exact }).passed, "NaN");
        assert!(inst.verify(&Tally { q: [c.pairs - 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], ..exact }).passed, "the count is the sum of the annuli");
        let v = inst.verify(&Tally { q: [c.pairs + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], ..exact });
        assert!(!v.passed && v.expected.contains("1.051299420395306e7") && v.observed.contains("13176390"), "{v:?}");
    }

    #[test]
    fn classes_have_npb_sizes() {
        let names: Vec<_> = CLASSES.iter().map(|c| (c.name, c.m, c.batches(), c.ops())).collect();
        assert_eq!(names, [("S", 24, 256, 1 << 25), ("W", 25, 512, 1 << 26), ("A", 28, 4096, 1 << 29)]);
        assert!(Class::named("B").is_err());
    }
}
