//! `npb.mg`: the NAS Parallel Benchmarks 3.4 MG kernel, a V-cycle multigrid
//! solving the discrete Poisson problem `A u = v` on a periodic 3-D grid,
//! parallel on the `runtime` axis and verified against NPB's official L2
//! norm of the final residual.
//!
//! The algorithm follows NPB 3.4's `mg.f90`: `zran3` puts +1 at the ten
//! largest and -1 at the ten smallest of the generator's numbers in `v`; the
//! benchmark runs one untimed iteration, re-initialises `u = 0`, then times
//! `resid`, `nit` iterations of `mg3P` + `resid`, and `norm2u3`. Classes S, W
//! and A use the S(a) smoother coefficients. The operators are in
//! `mg/ops.rs`; each splits the `i3` planes of the grid it writes into
//! chunks run with [`Runtime::for_each_task`].

mod ops;
#[cfg(test)]
mod tests;

use anyhow::bail;
use serde_json::json;

use self::ops::{Dims, Par, interp, norm2u3, psinv, resid, rprj3, zran3};
use crate::measure::isa::Path;
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::isa;
use crate::workloads::rt::common::timed_install;
use crate::workloads::rt::runtime::{ALL, Maker, Runtime, prepare_with, runtime_param};

/// NPB's verification tolerance: |rnm2 - reference| / reference.
const EPSILON: f64 = 1e-8;

/// The fault: one point of `v` gets an extra +1 after `zran3`.
const FAULT: &str = "perturb-source";

/// Tasks per worker and operator call on the pooled runtimes; the `spawn`
/// runtime gets one task (one thread) per worker.
const TASKS_PER_WORKER: usize = 4;

/// The residual operator A (`a`) and the S(a) smoother (`c`) of classes S,
/// W and A.
const A_COEF: [f64; 4] = [-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0];
const C_COEF: [f64; 4] = [-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0];

/// A problem class of NPB MG.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Class {
    pub name: &'static str,
    /// Interior points per axis of the finest grid (nx = ny = nz).
    pub n: usize,
    /// Timed iterations.
    pub nit: usize,
    /// NPB 3.4's verification value of rnm2.
    pub reference: f64,
}

pub const CLASSES: [Class; 3] = [
    Class { name: "S", n: 32, nit: 4, reference: 0.5307707005734e-04 },
    Class { name: "W", n: 128, nit: 4, reference: 0.6467329375339e-05 },
    Class { name: "A", n: 256, nit: 4, reference: 0.2433365309069e-05 },
];

impl Class {
    pub fn named(name: &str) -> Option<Class> {
        CLASSES.iter().copied().find(|c| c.name == name)
    }

    /// Levels of the V-cycle (NPB's `lt`): the finest grid has 2^lt points per axis.
    pub fn levels(self) -> usize {
        self.n.trailing_zeros() as usize
    }

    /// NPB's operation count of the timed region: `58 nit nx ny nz`.
    pub fn ops(self) -> u64 {
        58 * self.nit as u64 * (self.n as u64).pow(3)
    }
}

pub struct NpbMg;

impl Workload for NpbMg {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "npb.mg",
            group: "npb",
            summary: "NAS Parallel Benchmarks 3.4 MG: V-cycle multigrid on a periodic 3-D grid, each grid operator split into tasks",
            measures: "memory-bandwidth-bound stencil sweeps and the runtime's fork-join cost: every iteration runs about four \
                       parallel operator calls per level of the V-cycle, from the finest grid (large tasks) down to 2^3 points \
                       (one task). Mop/s as NPB 3.4's mg.f90 reports it: 58 x nit x nx x ny x nz operations per sample \
                       (its mflops formula), divided by the work window",
            unit: Unit::MopsPerSec,
            timed_region: "NPB's benchmark timer, inside the runtime's install: resid and norm2u3 of the initial residual, then \
                           nit iterations of mg3P (rprj3 down to the coarsest grid, psinv there, then interp, resid and psinv \
                           up each level) and resid, then norm2u3 of the final residual (rnm2). Outside: allocation, zran3 \
                           (v), NPB's untimed start-up iteration (mg3P and resid, once at prepare), and before every sample \
                           NPB's re-initialisation u = 0 on the finest grid (v is never written, so it stays zran3's; r is \
                           recomputed by the first resid), so every sample computes the same rnm2",
            total_window: None,
            verifier: "rnm2, the L2 norm of the final residual, is within 1e-8 relative (|rnm2 - ref| / ref, NPB's epsilon) \
                       of NPB 3.4's official verification value for the class: S 0.5307707005734e-04, \
                       W 0.6467329375339e-05, A 0.2433365309069e-05",
            batched: false,
            params: vec![
                super::class_param("NPB problem class: S 32^3, W 128^3, A 256^3 points, 4 iterations each"),
                runtime_param(&ALL),
                isa::param(),
                ParamSpec::workers(
                    "worker threads of the runtime; each operator splits its planes into 4 tasks per worker (1 per worker on \
                     spawn)",
                ),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let name = cell.choice::<super::ClassName>("class")?.as_str();
        let Some(class) = Class::named(name) else { bail!("unknown NPB MG class '{name}'") };
        let path = match isa::path(cell)? {
            Ok(p) => p,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        prepare_with(cell, false, MgMaker { class, fault: cx.fault_is(FAULT), path })
    }
}

struct MgMaker {
    class: Class,
    fault: bool,
    path: Path,
}

impl Maker for MgMaker {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(MgInstance::new(rt, self.class, self.fault, self.path)))
    }
}

/// The grids of one MG problem: `u` and `r` on every level (index `k - 1`
/// for NPB's level `k`, the finest last), `v` on the finest.
pub struct Mg {
    class: Class,
    dims: Vec<Dims>,
    u: Vec<Vec<f64>>,
    r: Vec<Vec<f64>>,
    v: Vec<f64>,
}

impl Mg {
    /// Allocates the grids and fills `v` with `zran3` (plus the fault's
    /// extra charge when asked).
    pub fn new(class: Class, fault: bool) -> Mg {
        let lt = class.levels();
        let dims: Vec<Dims> = (1..=lt).map(|k| Dims::cube(1 << k)).collect();
        let u = dims.iter().map(|d| vec![0.0; d.len()]).collect();
        let r = dims.iter().map(|d| vec![0.0; d.len()]).collect();
        let top = dims[lt - 1];
        let mut v = vec![0.0; top.len()];
        zran3(&mut v, top);
        if fault {
            let c = class.n / 2;
            v[top.at(c, c, c)] += 1.0;
            ops::comm3(&mut v, top);
        }
        Mg { class, dims, u, r, v }
    }

    fn top(&self) -> usize {
        self.dims.len() - 1
    }

    fn extents(&self) -> (usize, usize, usize) {
        (self.class.n, self.class.n, self.class.n)
    }

    /// `r = v - A u` on the finest grid.
    fn resid_top<R: Runtime>(&mut self, par: &Par<R>) {
        let t = self.top();
        resid(par, &self.u[t], Some(&self.v), &mut self.r[t], self.dims[t], &A_COEF);
    }

    /// NPB's `mg3P`: one V-cycle.
    fn mg3p<R: Runtime>(&mut self, par: &Par<R>) {
        let t = self.top();
        // Down: restrict the residual to each coarser grid.
        for k in (1..=t).rev() {
            let (coarse, fine) = self.r.split_at_mut(k);
            rprj3(par, &fine[0], self.dims[k], &mut coarse[k - 1], self.dims[k - 1]);
        }
        // The coarsest grid: an approximate solution.
        self.u[0].fill(0.0);
        psinv(par, &self.r[0], &mut self.u[0], self.dims[0], &C_COEF);
        // Up: prolongate, then correct each intermediate level.
        for k in 1..t {
            let (coarse, fine) = self.u.split_at_mut(k);
            interp(par, &coarse[k - 1], self.dims[k - 1], &mut fine[0], self.dims[k], true);
            resid(par, &self.u[k], None, &mut self.r[k], self.dims[k], &A_COEF);
            psinv(par, &self.r[k], &mut self.u[k], self.dims[k], &C_COEF);
        }
        let (coarse, fine) = self.u.split_at_mut(t);
        interp(par, &coarse[t - 1], self.dims[t - 1], &mut fine[0], self.dims[t], false);
        self.resid_top(par);
        psinv(par, &self.r[t], &mut self.u[t], self.dims[t], &C_COEF);
    }

    /// NPB's untimed start-up: resid, norm2u3, one iteration; then `u = 0`.
    pub fn startup<R: Runtime>(&mut self, par: &Par<R>) {
        self.resid_top(par);
        let _ = norm2u3(par, &self.r[self.top()], self.dims[self.top()], self.extents());
        self.mg3p(par);
        self.resid_top(par);
        self.reinit();
    }

    /// NPB's re-initialisation before the timed region: `u = 0` on the
    /// finest grid (the coarser ones are zeroed inside `mg3P`; `v` is only
    /// read; `r` is recomputed by the first `resid`).
    pub fn reinit(&mut self) {
        let t = self.top();
        self.u[t].fill(0.0);
    }

    /// NPB's timed region; returns rnm2.
    pub fn timed<R: Runtime>(&mut self, par: &Par<R>) -> f64 {
        let t = self.top();
        self.resid_top(par);
        let _initial = norm2u3(par, &self.r[t], self.dims[t], self.extents());
        for _ in 0..self.class.nit {
            self.mg3p(par);
            self.resid_top(par);
        }
        norm2u3(par, &self.r[t], self.dims[t], self.extents()).0
    }
}

/// The most tasks one operator call is split into on `rt`.
fn max_tasks<R: Runtime>(rt: &R) -> usize {
    if R::FINE_GRAINED { TASKS_PER_WORKER * rt.workers() } else { rt.workers() }
}

/// The verdict on `rnm2` for `class`.
fn judge(class: Class, x: f64) -> Check {
    let expected = format!("rnm2 = {:e} within {EPSILON:e} relative (NPB 3.4 class {} verification value)", class.reference, class.name);
    let err = ((x - class.reference) / class.reference).abs();
    Check { passed: err <= EPSILON, expected, observed: format!("rnm2 = {x:e} (relative error {err:e})") }
}

struct MgInstance<R: Runtime> {
    rt: R,
    mg: Mg,
    /// The code path of the operators.
    path: Path,
}

impl<R: Runtime> MgInstance<R> {
    fn new(rt: R, class: Class, fault: bool, path: Path) -> Self {
        let mut mg = Mg::new(class, fault);
        let par = Par::new(&rt, max_tasks(&rt), path);
        rt.install(|| mg.startup(&par));
        MgInstance { rt, mg, path }
    }
}

impl<R: Runtime> Instance for MgInstance<R> {
    /// rnm2, the residual's norm after the last iteration.
    type Outcome = f64;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, f64)> {
        self.mg.reinit();
        let par = Par::new(&self.rt, max_tasks(&self.rt), self.path);
        let mg = &mut self.mg;
        let rnm2 = timed_install(&self.rt, timer, || mg.timed(&par));
        Ok((Work::ops(self.mg.class.ops()), rnm2))
    }

    fn verify(&mut self, &rnm2: &f64) -> Check {
        judge(self.mg.class, rnm2)
    }

    fn details(&self, last: Option<&f64>) -> serde_json::Value {
        let c = self.mg.class;
        let details = json!({
            "class": c.name,
            "grid": format!("{0}x{0}x{0}", c.n),
            "nit": c.nit,
            "levels": c.levels(),
            "rnm2": last,
            "reference_rnm2": c.reference,
            "relative_error": last.map(|x| ((x - c.reference) / c.reference).abs()),
            "ops": c.ops(),
            "max_tasks_per_call": max_tasks(&self.rt),
        });
        isa::with_path(details, self.path)
    }
}
