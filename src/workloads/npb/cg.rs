//! `npb.cg`: the NAS Parallel Benchmarks' CG kernel (NPB 3.4) on a task
//! runtime.
//!
//! CG estimates the smallest eigenvalue of a random sparse symmetric positive
//! definite matrix by inverse power iteration: each of `niter` outer
//! iterations solves A z = x with 25 unpreconditioned conjugate gradient steps,
//! then zeta = shift + 1 / (x.z) and x = z / |z|. The matrix is NPB's `makea`
//! (a sum of `na` outer products of random sparse vectors from `sprnvc` and
//! `vecset`, assembled by `sparse`, geometrically scaled down to a condition
//! number 1 / rcond and shifted), generated serially and exactly as the
//! reference code does, at prepare.
//!
//! Every vector operation of `conj_grad` (the sparse matrix-vector products,
//! the dot products and the axpys) runs over the rows split into contiguous
//! chunks (4 per worker; 1 per worker on the `spawn` runtime, which starts a
//! thread per task, so that no more threads run than the worker count), by
//! fork-join recursion on the runtime: each `join`
//! halves the list of chunks and hands each half its own disjoint part of the
//! vectors it writes (`split_at_mut`, no locks, no unsafe code). Dot products
//! are summed chunk by chunk in a fixed tree order, so the worker count only
//! changes the order of floating-point additions.

use std::ops::Range;

use anyhow::bail;
use serde_json::json;

use super::randlc::{self, randlc};
use crate::measure::isa::{Path, multiversion};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, Sampled, Sampler, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::isa;
use crate::workloads::rt::common::timed_install;
use crate::workloads::rt::runtime::{self, Maker, Runtime};

/// The matrix's condition-number bound (NPB's `rcond`).
const RCOND: f64 = 0.1;
/// Conjugate gradient steps per outer iteration (NPB's `cgitmax`).
const CGITMAX: usize = 25;
/// The seed of the matrix generator (NPB's `tran`).
const TRAN: f64 = 314_159_265.0;
/// NPB's relative tolerance on zeta.
const EPSILON: f64 = 1e-10;
const FAULT: &str = "perturb-matrix";
/// How much the fault adds to one diagonal entry of the matrix (about -10):
/// zeta moves by 1.4e-7 (S), 1.6e-8 (W), 7.3e-9 (A) relative, well over the
/// tolerance; 1e-6 would move class W's and A's below it.
const PERTURBATION: f64 = 1e-3;

/// A problem class and NPB 3.4's verification value for it.
#[derive(Debug)]
struct Class {
    name: &'static str,
    na: usize,
    nonzer: usize,
    niter: usize,
    shift: f64,
    zeta: f64,
}

const CLASSES: [Class; 3] = [
    Class { name: "S", na: 1400, nonzer: 7, niter: 15, shift: 10.0, zeta: 8.5971775078648 },
    Class { name: "W", na: 7000, nonzer: 8, niter: 15, shift: 12.0, zeta: 10.362595087124 },
    Class { name: "A", na: 14000, nonzer: 11, niter: 15, shift: 20.0, zeta: 17.130235054029 },
];

impl Class {
    fn named(name: &str) -> anyhow::Result<&'static Class> {
        match CLASSES.iter().find(|c| c.name == name) {
            Some(c) => Ok(c),
            None => bail!("npb.cg has no class '{name}'"),
        }
    }

    /// NPB 3.4 cg.f90's operation count for the timed region:
    /// 2 niter na (3 + nonzer (nonzer + 1) + 25 (5 + nonzer (nonzer + 1)) + 3).
    fn ops(&self) -> u64 {
        let nz = (self.nonzer * (self.nonzer + 1)) as u64;
        2 * self.niter as u64 * self.na as u64 * (3 + nz + 25 * (5 + nz) + 3)
    }
}

pub struct Cg;

impl Workload for Cg {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "npb.cg",
            group: "npb",
            summary: "NAS Parallel Benchmarks 3.4 CG: inverse power iteration with 25-step conjugate gradient solves on NPB's \
                      random sparse matrix, rows split over runtime tasks",
            measures: "irregular memory access (sparse matrix-vector products) and fine-grained fork-join synchronisation on \
                       a task runtime: about 80 parallel phases per outer iteration; Mop/s as NPB \
                       counts it, 2 niter na (3 + nonzer (nonzer + 1) + 25 (5 + nonzer (nonzer + 1)) + 3) floating-point \
                       operations per run divided by the time",
            unit: Unit::MopsPerSec,
            timed_region: "NPB's timed region, inside the runtime's install (the hand-off to the pool is outside): the niter outer iterations (conj_grad, zeta, the normalisation of z into x), \
                           each vector operation split over the rows in fork-join tasks (4 chunks per worker, 1 per worker on spawn); the matrix \
                           generation (makea), NPB's one untimed warm-up iteration and the reset of x to ones before each \
                           sample are outside",
            total_window: None,
            verifier: "NPB 3.4's official zeta for the class (shift + 1 / (x.z) after the last outer iteration) within a \
                       relative error of 1e-10",
            batched: false,
            params: vec![
                super::class_param(
                    "NPB problem class: S (na = 1400, nonzer = 7, shift = 10), W (7000, 8, 12), A (14000, 11, 20); niter = 15",
                ),
                runtime::runtime_param(&runtime::ALL),
                isa::param(),
                ParamSpec::workers(
                    "worker threads of the runtime; the rows are split into 4 chunks per worker (1 on spawn: a thread each)",
                ),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let class = Class::named(cell.choice::<super::ClassName>("class")?.as_str())?;
        let mut matrix = makea(class.na, class.nonzer, class.shift);
        if cx.fault_is(FAULT) {
            matrix.perturb();
        }
        let path = match isa::path(cell)? {
            Ok(p) => p,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        runtime::prepare_with(cell, false, CgMaker { class, matrix, path })
    }
}

/// A sparse matrix in compressed rows, 0-based, columns ascending in a row.
/// Every column index is below the number of rows ([`Matrix::new`] checks
/// it, and nothing changes an index after), which [`Product::row`] relies on.
#[derive(Clone, Debug, PartialEq)]
struct Matrix {
    rowstr: Vec<usize>,
    colidx: Vec<u32>,
    a: Vec<f64>,
}

impl Matrix {
    /// The matrix of these compressed rows; panics on a column index that is
    /// not below the number of rows (a bug in the generator).
    fn new(rowstr: Vec<usize>, colidx: Vec<u32>, a: Vec<f64>) -> Matrix {
        let rows = rowstr.len() - 1;
        assert!(colidx.iter().all(|&c| (c as usize) < rows), "a column index of the matrix is not below its {rows} rows");
        assert_eq!((colidx.len(), rowstr[rows]), (a.len(), a.len()), "the rows do not cover the entries");
        Matrix { rowstr, colidx, a }
    }

    fn rows(&self) -> usize {
        self.rowstr.len() - 1
    }

    /// The matrix's rows times `v`, which must have an entry per row
    /// (checked here, once for every row's product).
    fn times<'a>(&'a self, v: &'a [f64]) -> Product<'a> {
        assert!(v.len() >= self.rows(), "a vector shorter than the matrix");
        Product { m: self, v }
    }

    /// The fault: adds PERTURBATION to the diagonal entry of row 0.
    fn perturb(&mut self) {
        let k = (self.rowstr[0]..self.rowstr[1]).find(|&k| self.colidx[k] == 0).expect("makea sets every diagonal entry");
        self.a[k] += PERTURBATION;
    }
}

/// A matrix and a vector checked to have an entry per row: the products of
/// its rows with the vector ([`Matrix::times`]).
struct Product<'a> {
    m: &'a Matrix,
    v: &'a [f64],
}

impl Product<'_> {
    /// Row `j` times the vector, summed in column order.
    ///
    /// `v[c]` is read without a bounds check: with one in its inner loop (a
    /// compare and a branch per entry) the product ran at 0.87x (1,630
    /// against 1,881 Mop/s at one worker, class A, one interleaved run of 5
    /// trials), and NPB's C code has none.
    #[inline(always)]
    fn row(&self, j: usize) -> f64 {
        let (m, v) = (self.m, self.v);
        let (lo, hi) = (m.rowstr[j], m.rowstr[j + 1]);
        m.a[lo..hi].iter().zip(&m.colidx[lo..hi]).fold(0.0, |s, (a, &c)| {
            // SAFETY: every column index is below `rows()` (checked by
            // `Matrix::new`; the fields are private to this module and no
            // code changes an index), and `v` has at least `rows()` entries
            // (checked by `Matrix::times`, the only way to a Product).
            s + a * unsafe { *v.get_unchecked(c as usize) }
        })
    }
}

/// NPB's `makea`: `n` random sparse vectors of `nonzer` entries (`sprnvc`)
/// plus 0.5 on the diagonal (`vecset`), assembled by `sparse`.
fn makea(n: usize, nonzer: usize, shift: f64) -> Matrix {
    // The reference program draws one number before makea (`zeta = randlc(tran, amult)`).
    let mut tran = TRAN;
    randlc(&mut tran, randlc::A);
    // nn1: the smallest power of two not less than n (NPB doubles 1 at least once).
    let nn1 = n.next_power_of_two().max(2);
    let vectors: Vec<(Vec<f64>, Vec<usize>)> = (1..=n)
        .map(|iouter| {
            let (mut v, mut iv) = sprnvc(n, nonzer, nn1, &mut tran);
            vecset(&mut v, &mut iv, iouter, 0.5);
            (v, iv)
        })
        .collect();
    sparse(n, &vectors, shift)
}

/// NPB's `sprnvc`: a sparse vector of `nz` distinct random positions in
/// 1..=n (1-based, as the reference code) with random values. Each candidate
/// draws a value, then a position; positions above n or already drawn are
/// rejected (the value is lost with them).
fn sprnvc(n: usize, nz: usize, nn1: usize, tran: &mut f64) -> (Vec<f64>, Vec<usize>) {
    let (mut v, mut iv) = (Vec::with_capacity(nz + 1), Vec::with_capacity(nz + 1));
    while v.len() < nz {
        let vecelt = randlc(tran, randlc::A);
        let vecloc = randlc(tran, randlc::A);
        let i = icnvrt(vecloc, nn1) + 1;
        if i > n || iv.contains(&i) {
            continue;
        }
        v.push(vecelt);
        iv.push(i);
    }
    (v, iv)
}

/// NPB's `icnvrt`: `x` in (0, 1) scaled by a power of two and chopped.
fn icnvrt(x: f64, ipwr2: usize) -> usize {
    (ipwr2 as f64 * x) as usize
}

/// NPB's `vecset`: sets position `i` of the sparse vector to `val`, appending
/// it when absent (positions are distinct: at most one matches).
fn vecset(v: &mut Vec<f64>, iv: &mut Vec<usize>, i: usize, val: f64) {
    match iv.iter().position(|&k| k == i) {
        Some(k) => v[k] = val,
        None => {
            v.push(val);
            iv.push(i);
        }
    }
}

/// NPB's `sparse`: A = sum over i of size_i v_i v_i^T, size_i = rcond^(i/n),
/// plus (rcond - shift) on the diagonal; duplicates summed in the reference
/// code's order (outer vector, row entry, column entry), so every entry is
/// the same double.
fn sparse(n: usize, vectors: &[(Vec<f64>, Vec<usize>)], shift: f64) -> Matrix {
    let ratio = RCOND.powf(1.0 / n as f64);
    let mut size = 1.0;
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (i, (aelt, acol)) in vectors.iter().enumerate() {
        for (&j, &ej) in acol.iter().zip(aelt) {
            let scale = size * ej;
            let row = &mut rows[j - 1];
            for (&jcol, &ec) in acol.iter().zip(aelt) {
                let mut va = ec * scale;
                if jcol == j && j == i + 1 {
                    va = va + RCOND - shift;
                }
                match row.binary_search_by_key(&jcol, |e| e.0) {
                    Ok(k) => row[k].1 += va,
                    Err(k) => row.insert(k, (jcol, va)),
                }
            }
        }
        size *= ratio;
    }
    let mut rowstr = vec![0];
    rowstr.extend(rows.iter().scan(0, |end, row| {
        *end += row.len();
        Some(*end)
    }));
    let colidx = rows.iter().flatten().map(|&(c, _)| (c - 1) as u32).collect();
    Matrix::new(rowstr, colidx, rows.iter().flatten().map(|&(_, v)| v).collect())
}

/// The vectors a phase writes, split between the two halves of a fork.
trait Parts: Send + Sized {
    fn split(self, at: usize) -> (Self, Self);
}

impl Parts for () {
    fn split(self, _: usize) -> ((), ()) {
        ((), ())
    }
}

impl Parts for &mut [f64] {
    fn split(self, at: usize) -> (Self, Self) {
        self.split_at_mut(at)
    }
}

impl<A: Parts, B: Parts> Parts for (A, B) {
    fn split(self, at: usize) -> (Self, Self) {
        let ((a1, a2), (b1, b2)) = (self.0.split(at), self.1.split(at));
        ((a1, b1), (a2, b2))
    }
}

/// Runs `leaf(rows, parts)` on every row chunk of `bounds` (chunk i is
/// `bounds[i]..bounds[i + 1]`; `parts` covers `bounds[0]..` and is indexed
/// from there), forking in halves with `rt.join`, and sums the leaves' two
/// partial results in that fixed tree order.
fn par<R: Runtime, P: Parts, F: Fn(Range<usize>, P) -> [f64; 2] + Sync>(rt: &R, bounds: &[usize], parts: P, leaf: &F) -> [f64; 2] {
    if bounds.len() <= 2 {
        return leaf(bounds[0]..bounds[1], parts);
    }
    let mid = bounds.len() / 2;
    let (left, right) = parts.split(bounds[mid] - bounds[0]);
    let (a, b) = rt.join(|| par(rt, &bounds[..=mid], left, leaf), || par(rt, &bounds[mid..], right, leaf));
    [a[0] + b[0], a[1] + b[1]]
}

/// NPB's work vectors (length na).
#[derive(Clone, Debug)]
struct Vectors {
    x: Vec<f64>,
    z: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    r: Vec<f64>,
}

impl Vectors {
    fn ones(n: usize) -> Vectors {
        Vectors { x: vec![1.0; n], z: vec![0.0; n], p: vec![0.0; n], q: vec![0.0; n], r: vec![0.0; n] }
    }
}

multiversion! {
    /// NPB's `conj_grad`: 25 conjugate gradient steps towards A z = x from
    /// z = 0; returns the residual norm |x - A z|.
    fn conj_grad[R: Runtime](path: Path, rt: &R, bounds: &[usize], m: &Matrix, v: &mut Vectors) -> f64 {
        let Vectors { x, z, p, q, r } = v;
        let x = &x[..];
        // q = z = 0, r = p = x, rho = r.r
        let [mut rho, _] = par(rt, bounds, (&mut q[..], (&mut z[..], (&mut r[..], &mut p[..]))), &|rows, (q, (z, (r, p)))| {
            // Iterators over slices of one length (a chunk's): no bounds
            // check in the loops, on any code path.
            let mut rho = 0.0;
            for ((((qi, zi), ri), pi), &xj) in q.iter_mut().zip(z.iter_mut()).zip(r.iter_mut()).zip(p.iter_mut()).zip(&x[rows]) {
                (*qi, *zi, *ri, *pi) = (0.0, 0.0, xj, xj);
                rho += *ri * *ri;
            }
            [rho, 0.0]
        });
        for _ in 0..CGITMAX {
            let rho0 = rho;
            // q = A p, d = p.q
            let pr = &p[..];
            let ap = m.times(pr);
            let [d, _] = par(rt, bounds, &mut q[..], &|rows, q| {
                let mut d = 0.0;
                for ((qi, j), &pj) in q.iter_mut().zip(rows.clone()).zip(&pr[rows]) {
                    *qi = ap.row(j);
                    d += pj * *qi;
                }
                [d, 0.0]
            });
            let alpha = rho0 / d;
            // z = z + alpha p, r = r - alpha q, rho = r.r
            let qr = &q[..];
            [rho, _] = par(rt, bounds, (&mut z[..], &mut r[..]), &|rows, (z, r)| {
                let mut rho = 0.0;
                for (((zi, ri), &pj), &qj) in z.iter_mut().zip(r.iter_mut()).zip(&pr[rows.clone()]).zip(&qr[rows]) {
                    *zi += alpha * pj;
                    *ri -= alpha * qj;
                    rho += *ri * *ri;
                }
                [rho, 0.0]
            });
            let beta = rho / rho0;
            // p = r + beta p
            let rr = &r[..];
            par(rt, bounds, &mut p[..], &|rows, p| {
                for (pi, &rj) in p.iter_mut().zip(&rr[rows]) {
                    *pi = rj + beta * *pi;
                }
                [0.0; 2]
            });
        }
        // r = A z, then |x - r|
        let az = m.times(&z[..]);
        let [sum, _] = par(rt, bounds, &mut r[..], &|rows, r| {
            let mut sum = 0.0;
            for ((ri, j), &xj) in r.iter_mut().zip(rows.clone()).zip(&x[rows]) {
                *ri = az.row(j);
                let d = xj - *ri;
                sum += d * d;
            }
            [sum, 0.0]
        });
        sum.sqrt()
    }
}

multiversion! {
    /// One outer iteration of the inverse power method: `conj_grad`, then
    /// zeta = shift + 1 / (x.z) and x = z / |z|. Returns (zeta, rnorm).
    fn outer[R: Runtime](path: Path, rt: &R, bounds: &[usize], m: &Matrix, shift: f64, v: &mut Vectors) -> (f64, f64) {
        let rnorm = conj_grad(path, rt, bounds, m, v);
        let (x, z) = (&mut v.x, &v.z[..]);
        let [xz, zz] = par(rt, bounds, (), &|rows, ()| {
            let (mut xz, mut zz) = (0.0, 0.0);
            for (&xj, &zj) in x[rows.clone()].iter().zip(&z[rows]) {
                xz += xj * zj;
                zz += zj * zj;
            }
            [xz, zz]
        });
        let norm = 1.0 / zz.sqrt();
        par(rt, bounds, &mut x[..], &|rows, x| {
            for (xi, &zj) in x.iter_mut().zip(&z[rows]) {
                *xi = norm * zj;
            }
            [0.0; 2]
        });
        (shift + 1.0 / xz, rnorm)
    }
}

/// The relative error NPB checks: |computed - reference| / |reference|.
fn rel_error(computed: f64, reference: f64) -> f64 {
    ((computed - reference) / reference).abs()
}

struct CgMaker {
    class: &'static Class,
    matrix: Matrix,
    path: Path,
}

impl Maker for CgMaker {
    fn make<R: Runtime>(self, rt: R) -> anyhow::Result<Box<dyn Sampler>> {
        Ok(Sampled::boxed(CgInstance::new(rt, self.class, self.matrix, self.path)))
    }
}

struct CgInstance<R> {
    rt: R,
    class: &'static Class,
    matrix: Matrix,
    /// Row chunks: chunk i is `bounds[i]..bounds[i + 1]`.
    bounds: Vec<usize>,
    v: Vectors,
    /// The code path of the iterations.
    path: Path,
}

impl<R: Runtime> CgInstance<R> {
    /// The instance after NPB's untimed warm-up iteration.
    fn new(rt: R, class: &'static Class, matrix: Matrix, path: Path) -> Self {
        let n = matrix.rows();
        // 1 chunk per worker on a runtime that starts a thread per task.
        let chunks = (if R::FINE_GRAINED { 4 } else { 1 } * rt.workers()).clamp(1, n);
        let bounds = (0..=chunks).map(|i| n * i / chunks).collect();
        let mut inst = CgInstance { rt, class, matrix, bounds, v: Vectors::ones(n), path };
        inst.iterate(1, &mut Timer::new());
        inst
    }

    /// `niter` outer iterations from the current x on the runtime, bracketed
    /// by `timer` inside `install`; returns the last (zeta, rnorm).
    fn iterate(&mut self, niter: usize, timer: &mut Timer) -> (f64, f64) {
        let (rt, bounds, m, shift, v, path) = (&self.rt, &self.bounds[..], &self.matrix, self.class.shift, &mut self.v, self.path);
        timed_install(rt, timer, || (0..niter).fold((f64::NAN, f64::NAN), |_, _| outer(path, rt, bounds, m, shift, v)))
    }
}

impl<R: Runtime> Instance for CgInstance<R> {
    /// (zeta, rnorm) after the sample's last outer iteration.
    type Outcome = (f64, f64);

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, (f64, f64))> {
        // NPB resets x to ones before starting its timer.
        self.v.x.fill(1.0);
        let last = self.iterate(self.class.niter, timer);
        Ok((Work::ops(self.class.ops()), last))
    }

    fn verify(&mut self, &(zeta, rnorm): &(f64, f64)) -> Check {
        let c = self.class;
        let expected = format!("zeta = {:e} (relative error <= {EPSILON:e}; NPB 3.4, class {})", c.zeta, c.name);
        let err = rel_error(zeta, c.zeta);
        let observed = format!("zeta = {zeta:e} (relative error {err:.3e}; last residual norm {rnorm:e})");
        Check { passed: err <= EPSILON, expected, observed }
    }

    fn details(&self, last: Option<&(f64, f64)>) -> serde_json::Value {
        let c = self.class;
        let details = json!({
            "class": c.name,
            "na": c.na,
            "nonzer": c.nonzer,
            "niter": c.niter,
            "shift": c.shift,
            "rcond": RCOND,
            "nonzeros": self.matrix.a.len(),
            "chunks": self.bounds.len() - 1,
            "zeta": last.map(|l| l.0),
            "zeta_rel_error": last.map(|l| rel_error(l.0, c.zeta)),
            "rnorm": last.map(|l| l.1),
            "ops_per_sample": c.ops(),
        });
        isa::with_path(details, self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn, Team};

    /// A small problem without official values, for checks against a serial reference.
    const SMALL: Class = Class { name: "small", na: 300, nonzer: 5, niter: 4, shift: 10.0, zeta: 0.0 };

    #[test]
    fn icnvrt_sprnvc_and_vecset_follow_npb() {
        assert_eq!((icnvrt(0.5, 8), icnvrt(0.999, 8), icnvrt(1e-9, 1024)), (4, 7, 0));
        let (mut tran, mut t) = (TRAN, TRAN);
        let (v, iv) = sprnvc(100, 7, 128, &mut tran);
        assert_eq!((v.len(), iv.len()), (7, 7));
        assert!(iv.iter().enumerate().all(|(k, i)| (1..=100).contains(i) && !iv[..k].contains(i)), "{iv:?}");
        // The first entry is the first (value, position) drawn, unless its position was above n.
        let (first, pos) = (randlc(&mut t, randlc::A), icnvrt(randlc(&mut t, randlc::A), 128) + 1);
        assert!(pos > 100 || (v[0], iv[0]) == (first, pos));
        let (mut v, mut iv) = (vec![0.1, 0.2], vec![3, 9]);
        vecset(&mut v, &mut iv, 9, 0.5);
        assert_eq!((&v[..], &iv[..]), (&[0.1, 0.5][..], &[3, 9][..]));
        vecset(&mut v, &mut iv, 4, 0.5);
        assert_eq!((&v[..], &iv[..]), (&[0.1, 0.5, 0.5][..], &[3, 9, 4][..]));
    }

    #[test]
    fn makea_gives_sorted_symmetric_rows_with_a_diagonal() {
        let m = makea(SMALL.na, SMALL.nonzer, SMALL.shift);
        assert_eq!(m.rows(), SMALL.na);
        assert!(m.a.len() <= SMALL.na * (SMALL.nonzer + 1).pow(2));
        let entry = |j: usize, c: usize| (m.rowstr[j]..m.rowstr[j + 1]).find(|&k| m.colidx[k] as usize == c).map(|k| m.a[k]);
        for j in 0..m.rows() {
            let cols = &m.colidx[m.rowstr[j]..m.rowstr[j + 1]];
            assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {j} is not sorted");
            // Every row has its diagonal (vecset), shifted by rcond - shift.
            assert!(entry(j, j).unwrap() < 0.0, "row {j}");
            for &c in cols {
                let (a, b) = (entry(j, c as usize).unwrap(), entry(c as usize, j).unwrap());
                assert!((a - b).abs() <= 1e-15, "A[{j}][{c}] = {a}, A[{c}][{j}] = {b}");
            }
        }
        // Class S: NPB's generator gives this matrix (a regression value; zeta checks it fully).
        assert_eq!(makea(1400, 7, 10.0).a.len(), 78_148);
    }

    /// NPB's serial CG in plain loops: the reference for the parallel one.
    fn serial_zeta(m: &Matrix, c: &Class) -> f64 {
        let n = m.rows();
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        let mut x = vec![1.0; n];
        let mut zeta = f64::NAN;
        for _ in 0..c.niter {
            let (mut z, mut r, mut p) = (vec![0.0; n], x.clone(), x.clone());
            let mut rho = dot(&r, &r);
            for _ in 0..CGITMAX {
                let ap = m.times(&p);
                let q: Vec<f64> = (0..n).map(|j| ap.row(j)).collect();
                let alpha = rho / dot(&p, &q);
                for j in 0..n {
                    z[j] += alpha * p[j];
                    r[j] -= alpha * q[j];
                }
                let rho1 = dot(&r, &r);
                let beta = rho1 / std::mem::replace(&mut rho, rho1);
                for j in 0..n {
                    p[j] = r[j] + beta * p[j];
                }
            }
            zeta = c.shift + 1.0 / dot(&x, &z);
            let norm = 1.0 / dot(&z, &z).sqrt();
            x = z.iter().map(|v| norm * v).collect();
        }
        zeta
    }

    fn matches_serial<R: Runtime>(m: &Matrix, reference: f64) {
        for workers in [1, 2, 3] {
            let mut inst = CgInstance::new(R::build(workers, None).unwrap(), &SMALL, m.clone(), Path::native());
            for _ in 0..2 {
                let (_, (zeta, rnorm)) = inst.sample(1, &mut Timer::new()).unwrap();
                assert!(rel_error(zeta, reference) < 1e-12, "{} on {workers}: {zeta} vs {reference}", R::NAME);
                assert!(rnorm.is_finite());
            }
            assert_eq!(inst.details(None)["chunks"], if R::FINE_GRAINED { 4 } else { 1 } * workers);
        }
    }

    #[test]
    fn every_code_path_gives_the_same_bits() {
        let m = makea(SMALL.na, SMALL.nonzer, SMALL.shift);
        let run = |path: Path| {
            let mut inst = CgInstance::new(Rayon::build(2, None).unwrap(), &SMALL, m.clone(), path);
            let (_, (zeta, rnorm)) = inst.sample(1, &mut Timer::new()).unwrap();
            assert_eq!(inst.details(None)["code_path"], path.code_path().as_str());
            (zeta.to_bits(), rnorm.to_bits())
        };
        let reference = run(Path::BASELINE);
        for path in Path::every() {
            assert_eq!(run(path), reference, "{path:?}");
        }
    }

    #[test]
    fn every_runtime_and_split_gives_the_serial_zeta() {
        let m = makea(SMALL.na, SMALL.nonzer, SMALL.shift);
        let reference = serial_zeta(&m, &SMALL);
        assert!(reference.is_finite() && reference > 0.0);
        matches_serial::<Rayon>(&m, reference);
        matches_serial::<GlobalQueue>(&m, reference);
        matches_serial::<Spawn>(&m, reference);
        matches_serial::<Team>(&m, reference);
    }

    #[test]
    fn par_covers_every_row_once_and_sums_in_order() {
        let rt = GlobalQueue::build(2, None).unwrap();
        let bounds = [0, 3, 4, 9, 10, 17];
        let mut v = [0.0; 17];
        let [s, n] = rt.install(|| {
            par(&rt, &bounds, &mut v[..], &|rows, part| {
                assert_eq!(part.len(), rows.len());
                for (i, j) in rows.clone().enumerate() {
                    part[i] += j as f64;
                }
                [rows.map(|j| j as f64).sum(), 1.0]
            })
        });
        assert_eq!((s, n), ((0..17).sum::<usize>() as f64, 5.0));
        assert!(v.iter().enumerate().all(|(j, &x)| x == j as f64));
    }

    #[test]
    fn a_matrix_refuses_column_indices_outside_its_rows() {
        let ok = std::panic::catch_unwind(|| Matrix::new(vec![0, 1, 2], vec![1, 0], vec![1.0, 2.0]));
        assert_eq!(ok.map(|m| m.times(&[3.0, 4.0]).row(0)).ok(), Some(4.0));
        assert!(std::panic::catch_unwind(|| Matrix::new(vec![0, 1, 2], vec![1, 2], vec![1.0, 2.0])).is_err());
        assert!(std::panic::catch_unwind(|| Matrix::new(vec![0, 1, 3], vec![1, 0], vec![1.0, 2.0])).is_err());
        let m = Matrix::new(vec![0, 1, 2], vec![1, 0], vec![1.0, 2.0]);
        assert!(std::panic::catch_unwind(|| m.times(&[3.0]).row(0)).is_err(), "a short vector");
    }

    #[test]
    fn the_operation_count_is_npb_s() {
        let ops: Vec<u64> = CLASSES.iter().map(Class::ops).collect();
        assert_eq!(ops, [66_654_000, 420_630_000, 1_496_460_000]);
        assert!(Class::named("B").is_err());
    }

    #[test]
    fn the_verifier_uses_npb_s_relative_tolerance() {
        let c = &CLASSES[0];
        let mut inst = CgInstance::new(Rayon::build(1, None).unwrap(), &SMALL, makea(SMALL.na, SMALL.nonzer, SMALL.shift), Path::native());
        inst.class = c;
        for (zeta, ok) in [(c.zeta, true), (c.zeta * (1.0 + 5e-11), true), (c.zeta * (1.0 + 2e-10), false), (f64::NAN, false)] {
            let v = inst.verify(&(zeta, 1e-15));
            assert_eq!(v.passed, ok, "{v:?}");
            assert!(v.expected.contains("8.5971775078648e0"), "{v:?}");
        }
    }

    fn class_s<R: Runtime>(workers: usize, matrix: &Matrix) -> Check {
        let mut inst = CgInstance::new(R::build(workers, None).unwrap(), &CLASSES[0], matrix.clone(), Path::native());
        let (w, out) = inst.sample(1, &mut Timer::new()).unwrap();
        assert_eq!(w, Work::ops(66_654_000));
        inst.verify(&out)
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "class S takes seconds per runtime in a debug build (tests/cli/npb_ep_cg.rs runs it)")]
    fn class_s_verifies_on_every_runtime_with_1_and_2_workers_and_the_fault_fails_it() {
        let mut m = makea(1400, 7, 10.0);
        for workers in [1, 2] {
            for v in [
                class_s::<Rayon>(workers, &m),
                class_s::<GlobalQueue>(workers, &m),
                class_s::<Spawn>(workers, &m),
                class_s::<Team>(workers, &m),
            ] {
                assert!(v.passed, "{workers} workers: {v:?}");
            }
        }
        m.perturb();
        let v = class_s::<Rayon>(2, &m);
        assert!(!v.passed, "{v:?}");
    }
}
