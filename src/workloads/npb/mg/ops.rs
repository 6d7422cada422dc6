//! The grid operators of NPB 3.4 MG (`resid`, `psinv`, `rprj3`, `interp`,
//! `norm2u3`, `comm3`, `zran3`), transcribed from the reference `mg.f90`
//! with 0-based indices and the same floating-point expressions in the same
//! order.
//!
//! A grid is a box of `n1 x n2 x n3` points stored with `i1` fastest (Fortran
//! order): the interior `1..n-1` on each axis plus one periodic ghost layer on
//! each side, filled by `comm3`. The parallel operators split their outermost
//! loop (the `i3` planes of the grid they write) into chunks on the runtime
//! with [`Par::for_planes`]: each chunk gets its own disjoint `&mut` run of
//! planes, so every output element is written by exactly one task.

use std::sync::Mutex;

use crate::measure::isa::{Path, multiversion};
use crate::workloads::npb::randlc::{power, randlc, vranlc};
use crate::workloads::rt::runtime::Runtime;

/// A grid's extents, ghost layers included (NPB's `n1, n2, n3` or `m1, m2, m3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub n1: usize,
    pub n2: usize,
    pub n3: usize,
}

impl Dims {
    /// A cube of `ng` interior points per axis (`ng + 2` with the ghosts).
    pub fn cube(ng: usize) -> Dims {
        Dims { n1: ng + 2, n2: ng + 2, n3: ng + 2 }
    }

    /// Points in one `i3` plane.
    pub fn plane(self) -> usize {
        self.n1 * self.n2
    }

    pub fn len(self) -> usize {
        self.plane() * self.n3
    }

    /// Index of `(i1, i2, i3)`.
    #[inline(always)]
    pub fn at(self, i1: usize, i2: usize, i3: usize) -> usize {
        i1 + self.n1 * (i2 + self.n2 * i3)
    }
}

/// Fewer points than this per task are not worth a task: small grids run in
/// one piece on the calling thread.
pub const MIN_POINTS_PER_TASK: usize = 4096;

/// How the operators split their work on a runtime.
pub struct Par<'a, R: Runtime> {
    pub rt: &'a R,
    /// The most tasks one operator call is split into.
    pub max_tasks: usize,
    /// The fewest grid points worth a task of their own.
    pub min_points: usize,
    /// The code path of the operators.
    pub path: Path,
}

impl<'a, R: Runtime> Par<'a, R> {
    pub fn new(rt: &'a R, max_tasks: usize, path: Path) -> Self {
        Par { rt, max_tasks, min_points: MIN_POINTS_PER_TASK, path }
    }

    /// Tasks for `units` independent units of `points_per_unit` points each.
    pub fn tasks(&self, units: usize, points_per_unit: usize) -> usize {
        let by_size = (units * points_per_unit / self.min_points.max(1)).max(1);
        units.min(self.max_tasks).min(by_size).max(1)
    }

    /// Splits planes `lo..hi` of `out` (`row` elements per plane) into runs
    /// of whole groups of `group` planes and calls `f(first_plane, run)` for
    /// each run, the runs in parallel. `points_per_plane` sizes the tasks.
    /// The runs are disjoint `&mut` slices; each is handed to exactly one
    /// task through its own `Mutex<Option<..>>` slot.
    pub fn for_planes<T: Send>(
        &self,
        out: &mut [T],
        row: usize,
        (lo, hi): (usize, usize),
        group: usize,
        points_per_plane: usize,
        f: &(dyn Fn(usize, &mut [T]) + Sync),
    ) {
        let units = (hi - lo) / group;
        debug_assert_eq!(units * group, hi - lo);
        let tasks = self.tasks(units, group * points_per_plane);
        let body = &mut out[lo * row..hi * row];
        if tasks == 1 {
            f(lo, body);
            return;
        }
        let mut slots = Vec::with_capacity(tasks);
        let mut rest = body;
        let mut done = 0;
        for t in 1..=tasks {
            let end = units * t / tasks;
            let (run, tail) = std::mem::take(&mut rest).split_at_mut((end - done) * group * row);
            slots.push(Mutex::new(Some((lo + done * group, run))));
            rest = tail;
            done = end;
        }
        self.rt.for_each_task(tasks, &|i| {
            let (first, run) = slots[i].lock().unwrap_or_else(|p| p.into_inner()).take().expect("each run is handed out once");
            f(first, run);
        });
    }
}

/// The periodic boundary of the `i1` and `i2` axes within one `i3` plane
/// (the first half of NPB's `comm3`, per plane).
pub fn comm3_plane(p: &mut [f64], d: Dims) {
    let (n1, n2) = (d.n1, d.n2);
    for i2 in 1..n2 - 1 {
        let row = &mut p[i2 * n1..(i2 + 1) * n1];
        row[0] = row[n1 - 2];
        row[n1 - 1] = row[1];
    }
    p.copy_within((n2 - 2) * n1..(n2 - 1) * n1, 0);
    p.copy_within(n1..2 * n1, (n2 - 1) * n1);
}

/// The periodic boundary of the `i3` axis: whole planes (the second half of
/// NPB's `comm3`). Needs every interior plane done.
pub fn comm3_ends(u: &mut [f64], d: Dims) {
    let (pl, n3) = (d.plane(), d.n3);
    u.copy_within((n3 - 2) * pl..(n3 - 1) * pl, 0);
    u.copy_within(pl..2 * pl, (n3 - 1) * pl);
}

/// NPB's `comm3`, serial: periodic ghost layers on all six faces.
pub fn comm3(u: &mut [f64], d: Dims) {
    let pl = d.plane();
    for i3 in 1..d.n3 - 1 {
        comm3_plane(&mut u[i3 * pl..(i3 + 1) * pl], d);
    }
    comm3_ends(u, d);
}

/// The `n1` points of row `(i2, i3)` of grid `x`.
#[inline(always)]
fn row(x: &[f64], d: Dims, i2: usize, i3: usize) -> &[f64] {
    let s = d.at(0, i2, i3);
    &x[s..s + d.n1]
}

/// The sums of the four face neighbours (`f`) and the four edge neighbours
/// (`e`) of row `(i2, i3)` in the `i2`-`i3` plane, for every `i1`: NPB's
/// `u1`/`u2` (resid) and `r1`/`r2` (psinv), in NPB's order.
#[inline(always)]
fn neighbour_sums(x: &[f64], d: Dims, i2: usize, i3: usize, f: &mut [f64], e: &mut [f64]) {
    let (a, b, c, g) = (row(x, d, i2 - 1, i3), row(x, d, i2 + 1, i3), row(x, d, i2, i3 - 1), row(x, d, i2, i3 + 1));
    let (h, k, l, m) = (row(x, d, i2 - 1, i3 - 1), row(x, d, i2 + 1, i3 - 1), row(x, d, i2 - 1, i3 + 1), row(x, d, i2 + 1, i3 + 1));
    let (f, e) = (&mut f[..d.n1], &mut e[..d.n1]);
    for i1 in 0..d.n1 {
        f[i1] = a[i1] + b[i1] + c[i1] + g[i1];
        e[i1] = h[i1] + k[i1] + l[i1] + m[i1];
    }
}

/// `r = v - A u` on the interior, then `comm3(r)`. `v = None` is NPB's call
/// with `v` and `r` the same array (the coarse levels of `mg3P`): each point
/// reads its own old value only, so the update is in place.
pub fn resid<R: Runtime>(par: &Par<R>, u: &[f64], v: Option<&[f64]>, r: &mut [f64], d: Dims, a: &[f64; 4]) {
    resid_on(par.path, par, u, v, r, d, a)
}

multiversion! {
    /// [`resid`] compiled for `path`.
    fn resid_on[R: Runtime](path: Path, par: &Par<R>, u: &[f64], v: Option<&[f64]>, r: &mut [f64], d: Dims, a: &[f64; 4]) {
        let (n1, n2, pl) = (d.n1, d.n2, d.plane());
        par.for_planes(r, pl, (1, d.n3 - 1), 1, pl, &|first, run| {
            let (mut u1, mut u2, mut old) = (vec![0.0; n1], vec![0.0; n1], vec![0.0; n1]);
            for (k, p) in run.chunks_exact_mut(pl).enumerate() {
                let i3 = first + k;
                for i2 in 1..n2 - 1 {
                    neighbour_sums(u, d, i2, i3, &mut u1, &mut u2);
                    let out = &mut p[n1 * i2..n1 * (i2 + 1)];
                    let vr: &[f64] = match v {
                        Some(v) => row(v, d, i2, i3),
                        None => {
                            old.copy_from_slice(out);
                            &old
                        }
                    };
                    let uc = row(u, d, i2, i3);
                    // Every slice cut to n1: the loop below then has no bounds check.
                    let (out, vr, uc, u1, u2) = (&mut out[..n1], &vr[..n1], &uc[..n1], &u1[..n1], &u2[..n1]);
                    for i1 in 1..n1 - 1 {
                        // a(1) = 0 is assumed, as NPB does.
                        out[i1] = vr[i1] - a[0] * uc[i1] - a[2] * (u2[i1] + u1[i1 - 1] + u1[i1 + 1]) - a[3] * (u2[i1 - 1] + u2[i1 + 1]);
                    }
                }
                comm3_plane(p, d);
            }
        });
        comm3_ends(r, d);
    }
}

/// The smoother `u = u + C r` on the interior, then `comm3(u)`.
pub fn psinv<R: Runtime>(par: &Par<R>, r: &[f64], u: &mut [f64], d: Dims, c: &[f64; 4]) {
    psinv_on(par.path, par, r, u, d, c)
}

multiversion! {
    /// [`psinv`] compiled for `path`.
    fn psinv_on[R: Runtime](path: Path, par: &Par<R>, r: &[f64], u: &mut [f64], d: Dims, c: &[f64; 4]) {
        let (n1, n2, pl) = (d.n1, d.n2, d.plane());
        par.for_planes(u, pl, (1, d.n3 - 1), 1, pl, &|first, run| {
            let (mut r1, mut r2) = (vec![0.0; n1], vec![0.0; n1]);
            for (k, p) in run.chunks_exact_mut(pl).enumerate() {
                let i3 = first + k;
                for i2 in 1..n2 - 1 {
                    neighbour_sums(r, d, i2, i3, &mut r1, &mut r2);
                    let out = &mut p[n1 * i2..n1 * (i2 + 1)];
                    let rc = row(r, d, i2, i3);
                    // Every slice cut to n1: the loop below then has no bounds check.
                    let (out, rc, r1, r2) = (&mut out[..n1], &rc[..n1], &r1[..n1], &r2[..n1]);
                    for i1 in 1..n1 - 1 {
                        // c(3) = 0 is assumed, as NPB does.
                        out[i1] =
                            out[i1] + c[0] * rc[i1] + c[1] * (rc[i1 - 1] + rc[i1 + 1] + r1[i1]) + c[2] * (r2[i1] + r1[i1 - 1] + r1[i1 + 1]);
                    }
                }
                comm3_plane(p, d);
            }
        });
        comm3_ends(u, d);
    }
}

/// The restriction `s = P r` from grid `dk` to the next coarser grid `dj`
/// (trilinear finite-element projection), then `comm3(s)`.
pub fn rprj3<R: Runtime>(par: &Par<R>, r: &[f64], dk: Dims, s: &mut [f64], dj: Dims) {
    rprj3_on(par.path, par, r, dk, s, dj)
}

multiversion! {
    /// [`rprj3`] compiled for `path`.
    fn rprj3_on[R: Runtime](path: Path, par: &Par<R>, r: &[f64], dk: Dims, s: &mut [f64], dj: Dims) {
        // NPB's d = 2 when the fine extent is 3; 0-based, i = 2 j + 1 - d.
        let off = |m: usize| if m == 3 { 0 } else { 1 };
        let (o1, o2, o3) = (off(dk.n1), off(dk.n2), off(dk.n3));
        let (m1j, m2j, pl) = (dj.n1, dj.n2, dj.plane());
        par.for_planes(s, pl, (1, dj.n3 - 1), 1, 8 * pl, &|first, run| {
            let (mut x1, mut y1) = (vec![0.0; dk.n1], vec![0.0; dk.n1]);
            for (k, p) in run.chunks_exact_mut(pl).enumerate() {
                let j3 = first + k;
                let i3 = 2 * j3 + o3 - 1;
                for j2 in 1..m2j - 1 {
                    let i2 = 2 * j2 + o2 - 1;
                    let (a, b, c, g) = (row(r, dk, i2 - 1, i3), row(r, dk, i2 + 1, i3), row(r, dk, i2, i3 - 1), row(r, dk, i2, i3 + 1));
                    let (h, l, m, q) =
                        (row(r, dk, i2 - 1, i3 - 1), row(r, dk, i2 - 1, i3 + 1), row(r, dk, i2 + 1, i3 - 1), row(r, dk, i2 + 1, i3 + 1));
                    let rc = row(r, dk, i2, i3);
                    for j1 in 1..m1j {
                        let i1 = 2 * j1 + o1 - 2; // NPB's i1 - 1
                        x1[i1] = a[i1] + b[i1] + c[i1] + g[i1];
                        y1[i1] = h[i1] + l[i1] + m[i1] + q[i1];
                    }
                    let out = &mut p[m1j * j2..m1j * (j2 + 1)];
                    for (j1, o) in out.iter_mut().enumerate().take(m1j - 1).skip(1) {
                        let i1 = 2 * j1 + o1 - 1;
                        let y2 = h[i1] + l[i1] + m[i1] + q[i1];
                        let x2 = a[i1] + b[i1] + c[i1] + g[i1];
                        *o = 0.5 * rc[i1]
                            + 0.25 * (rc[i1 - 1] + rc[i1 + 1] + x2)
                            + 0.125 * (x1[i1 - 1] + x1[i1 + 1] + y2)
                            + 0.0625 * (y1[i1 - 1] + y1[i1 + 1]);
                    }
                }
                comm3_plane(p, dj);
            }
        });
        comm3_ends(s, dj);
    }
}

/// The prolongation `u = u + Q z` from the coarse grid `dj` to the fine grid
/// `dk` (trilinear interpolation), over every point of `u`, ghosts included.
/// With `zero_first`, `u` is zeroed first (NPB's `zero3(u)` before `interp`
/// on the intermediate levels of `mg3P`), in the same tasks.
///
/// Only NPB's general branch: the branch for a fine extent of 3 never runs
/// for the cubic power-of-two grids of the classes (the coarsest level has
/// extent 4), and [`interp`] panics if asked for it.
pub fn interp<R: Runtime>(par: &Par<R>, z: &[f64], dj: Dims, u: &mut [f64], dk: Dims, zero_first: bool) {
    interp_on(par.path, par, z, dj, u, dk, zero_first)
}

multiversion! {
    /// [`interp`] compiled for `path`.
    fn interp_on[R: Runtime](path: Path, par: &Par<R>, z: &[f64], dj: Dims, u: &mut [f64], dk: Dims, zero_first: bool) {
        assert!(dk.n1 != 3 && dk.n2 != 3 && dk.n3 != 3, "interp onto an extent of 3 is not implemented");
        let (mm1, mm2, pl) = (dj.n1, dj.n2, dk.plane());
        let n1 = dk.n1;
        // Coarse plane i3 writes fine planes 2 i3 and 2 i3 + 1.
        par.for_planes(u, pl, (0, 2 * (dj.n3 - 1)), 2, pl, &|first, run| {
            if zero_first {
                run.fill(0.0);
            }
            let (mut z1, mut z2, mut z3) = (vec![0.0; mm1], vec![0.0; mm1], vec![0.0; mm1]);
            for (k, pair) in run.chunks_exact_mut(2 * pl).enumerate() {
                let i3 = first / 2 + k;
                let (lo, hi) = pair.split_at_mut(pl);
                for i2 in 0..mm2 - 1 {
                    let (z00, z10, z01, z11) = (row(z, dj, i2, i3), row(z, dj, i2 + 1, i3), row(z, dj, i2, i3 + 1), row(z, dj, i2 + 1, i3 + 1));
                    // Slices of one length, pairs of fine points (`chunks_exact_mut(2)`)
                    // and neighbouring coarse points (`windows(2)`): no bounds check.
                    let (z00, z10, z01, z11) = (&z00[..mm1], &z10[..mm1], &z01[..mm1], &z11[..mm1]);
                    let (z1, z2, z3) = (&mut z1[..mm1], &mut z2[..mm1], &mut z3[..mm1]);
                    for i1 in 0..mm1 {
                        z1[i1] = z10[i1] + z00[i1];
                        z2[i1] = z01[i1] + z00[i1];
                        z3[i1] = z11[i1] + z01[i1] + z1[i1];
                    }
                    // Fine rows 2 i2 and 2 i2 + 1 of fine planes 2 i3 (lo) and 2 i3 + 1 (hi).
                    let (le, lo_rest) = lo[n1 * 2 * i2..n1 * (2 * i2 + 2)].split_at_mut(n1);
                    let (he, ho) = hi[n1 * 2 * i2..n1 * (2 * i2 + 2)].split_at_mut(n1);
                    for (o, z) in le.chunks_exact_mut(2).zip(z00.windows(2)).take(mm1 - 1) {
                        o[0] += z[0];
                        o[1] += 0.5 * (z[1] + z[0]);
                    }
                    for (o, z) in lo_rest.chunks_exact_mut(2).zip(z1.windows(2)).take(mm1 - 1) {
                        o[0] += 0.5 * z[0];
                        o[1] += 0.25 * (z[0] + z[1]);
                    }
                    for (o, z) in he.chunks_exact_mut(2).zip(z2.windows(2)).take(mm1 - 1) {
                        o[0] += 0.5 * z[0];
                        o[1] += 0.25 * (z[0] + z[1]);
                    }
                    for (o, z) in ho.chunks_exact_mut(2).zip(z3.windows(2)).take(mm1 - 1) {
                        o[0] += 0.25 * z[0];
                        o[1] += 0.125 * (z[0] + z[1]);
                    }
                }
            }
        });
    }
}

/// NPB's `norm2u3`: the L2 norm `sqrt(sum r^2 / (nx ny nz))` and the maximum
/// norm over the interior. Each plane's sum is taken in NPB's order and the
/// plane sums are added in plane order, so the result does not depend on how
/// the planes were split.
pub fn norm2u3<R: Runtime>(par: &Par<R>, r: &[f64], d: Dims, extents: (usize, usize, usize)) -> (f64, f64) {
    norm2u3_on(par.path, par, r, d, extents)
}

multiversion! {
    /// [`norm2u3`] compiled for `path`.
    fn norm2u3_on[R: Runtime](path: Path, par: &Par<R>, r: &[f64], d: Dims, extents: (usize, usize, usize)) -> (f64, f64) {
        let (nx, ny, nz) = extents;
        let mut per_plane = vec![(0.0f64, 0.0f64); d.n3];
        par.for_planes(&mut per_plane, 1, (1, d.n3 - 1), 1, d.plane(), &|first, run| {
            for (k, out) in run.iter_mut().enumerate() {
                let i3 = first + k;
                let (mut s, mut mx) = (0.0f64, 0.0f64);
                for i2 in 1..d.n2 - 1 {
                    for &x in &r[d.at(1, i2, i3)..d.at(d.n1 - 1, i2, i3)] {
                        s += x * x;
                        mx = mx.max(x.abs());
                    }
                }
                *out = (s, mx);
            }
        });
        let (s, mx) = per_plane[1..d.n3 - 1].iter().fold((0.0, 0.0f64), |(s, m), &(ps, pm)| (s + ps, m.max(pm)));
        ((s / (nx * ny * nz) as f64).sqrt(), mx)
    }
}

/// The ten largest (`+1`) and ten smallest (`-1`) points of zran3, kept
/// sorted the way NPB's `bubble` keeps them: entry 0 is the one to beat.
struct Ten {
    vals: [f64; 10],
    at: [usize; 10],
}

impl Ten {
    /// Offers `x` at index `at`; `largest` keeps the ten largest values.
    #[inline]
    fn offer(&mut self, x: f64, at: usize, largest: bool) {
        let beats = if largest { x > self.vals[0] } else { x < self.vals[0] };
        if !beats {
            return;
        }
        self.vals[0] = x;
        self.at[0] = at;
        for i in 0..9 {
            let out_of_order = if largest { self.vals[i] > self.vals[i + 1] } else { self.vals[i] < self.vals[i + 1] };
            if !out_of_order {
                return;
            }
            self.vals.swap(i, i + 1);
            self.at.swap(i, i + 1);
        }
    }
}

/// NPB's `zran3` for one process owning the whole grid: fills the interior
/// of `z` (a grid of `nx x ny x nz` interior points) from the generator
/// (seed 314159265, multiplier 5^13, jumping `nx` numbers per row and
/// `nx ny` per plane), then sets `z` to +1 at the ten largest, -1 at the ten
/// smallest of those numbers and 0 elsewhere, and applies `comm3`. Returns
/// the indices of the -1 and the +1 points.
pub fn zran3(z: &mut [f64], d: Dims) -> ([usize; 10], [usize; 10]) {
    const SEED: f64 = 314_159_265.0;
    let a = crate::workloads::npb::randlc::A;
    let (nx, ny, nz) = (d.n1 - 2, d.n2 - 2, d.n3 - 2);
    let a1 = power(a, nx as u64);
    let a2 = power(a, (nx * ny) as u64);
    z.fill(0.0);
    // The starting offset of this process's block is 0: ai = a^0 = 1.
    let mut x0 = SEED;
    randlc(&mut x0, power(a, 0));
    for i3 in 1..=nz {
        let mut x1 = x0;
        for i2 in 1..=ny {
            let mut xx = x1;
            let start = d.at(1, i2, i3);
            vranlc(&mut xx, a, &mut z[start..start + nx]);
            randlc(&mut x1, a1);
        }
        randlc(&mut x0, a2);
    }
    let mut hi = Ten { vals: [0.0; 10], at: [0; 10] };
    let mut lo = Ten { vals: [1.0; 10], at: [0; 10] };
    for i3 in 1..d.n3 - 1 {
        for i2 in 1..d.n2 - 1 {
            for i1 in 1..d.n1 - 1 {
                let at = d.at(i1, i2, i3);
                hi.offer(z[at], at, true);
                lo.offer(z[at], at, false);
            }
        }
    }
    z.fill(0.0);
    for i in (0..10).rev() {
        z[lo.at[i]] = -1.0;
    }
    for i in (0..10).rev() {
        z[hi.at[i]] = 1.0;
    }
    comm3(z, d);
    (lo.at, hi.at)
}
