//! Tests of NPB MG: each operator against a naive transcription of its
//! stencil on small non-cubic grids, split into many tasks on every runtime;
//! hand-computed cases (comm3's periodicity, constant fields); zran3 against
//! a sort of the generator's stream; class S against NPB's verification value
//! on every runtime; the injected fault.

use super::ops::{self, Dims, Par};
use super::*;
use crate::measure::isa::Path;
use crate::workloads::npb::randlc::{A, randlc};
use crate::workloads::rt::runtime::{GlobalQueue, Rayon, Spawn, Team};

/// `len` numbers of the NPB generator, shifted to (-0.5, 0.5).
fn field(len: usize, seed: f64) -> Vec<f64> {
    let mut x = seed;
    (0..len).map(|_| randlc(&mut x, A) - 0.5).collect()
}

/// A fine grid and the coarse grid one level below it, neither cubic.
const COARSE: Dims = Dims { n1: 4, n2: 5, n3: 6 };
const FINE: Dims = Dims { n1: 6, n2: 8, n3: 10 };

/// Nonzero components of an offset in {-1, 0, 1}^3.
fn offsets() -> impl Iterator<Item = ([isize; 3], usize)> {
    (0..27).map(|k| {
        let o = [k % 3 - 1, k / 3 % 3 - 1, k / 9 - 1];
        (o, o.iter().filter(|&&x| x != 0).count())
    })
}

fn shifted(d: Dims, (i1, i2, i3): (usize, usize, usize), o: [isize; 3]) -> usize {
    d.at((i1 as isize + o[0]) as usize, (i2 as isize + o[1]) as usize, (i3 as isize + o[2]) as usize)
}

fn interior(d: Dims) -> impl Iterator<Item = (usize, usize, usize)> {
    (1..d.n3 - 1).flat_map(move |i3| (1..d.n2 - 1).flat_map(move |i2| (1..d.n1 - 1).map(move |i1| (i1, i2, i3))))
}

/// `out[p] = base[p] + sign * sum over the 27 neighbours of w[nnz] x[p + o]`
/// on the interior, then comm3.
fn naive_stencil(x: &[f64], base: &[f64], d: Dims, w: [f64; 4], sign: f64) -> Vec<f64> {
    let mut out = base.to_vec();
    for p in interior(d) {
        let s: f64 = offsets().map(|(o, n)| w[n] * x[shifted(d, p, o)]).sum();
        out[d.at(p.0, p.1, p.2)] += sign * s;
    }
    ops::comm3(&mut out, d);
    out
}

fn naive_rprj3(r: &[f64], dk: Dims, dj: Dims) -> Vec<f64> {
    let mut s = vec![0.0; dj.len()];
    for (j1, j2, j3) in interior(dj) {
        let centre = (2 * j1, 2 * j2, 2 * j3);
        s[dj.at(j1, j2, j3)] = offsets().map(|(o, n)| 0.5f64.powi(n as i32 + 1) * r[shifted(dk, centre, o)]).sum();
    }
    ops::comm3(&mut s, dj);
    s
}

/// Coarse points and weights of fine index `f` on one axis.
fn parents(f: usize) -> Vec<(usize, f64)> {
    let h = f / 2;
    if f.is_multiple_of(2) { vec![(h, 1.0)] } else { vec![(h, 0.5), (h + 1, 0.5)] }
}

fn naive_interp(z: &[f64], dj: Dims, u: &[f64], dk: Dims) -> Vec<f64> {
    let mut out = u.to_vec();
    for i3 in 0..dk.n3 {
        for i2 in 0..dk.n2 {
            for i1 in 0..dk.n1 {
                let mut s = 0.0;
                for (c3, w3) in parents(i3) {
                    for (c2, w2) in parents(i2) {
                        for (c1, w1) in parents(i1) {
                            s += w1 * w2 * w3 * z[dj.at(c1, c2, c3)];
                        }
                    }
                }
                out[dk.at(i1, i2, i3)] += s;
            }
        }
    }
    out
}

fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-13, "{what}: element {i}: {x} vs {y}");
    }
}

/// Every operator on `R` (split into as many tasks as there are planes)
/// equals the naive stencil, and bit for bit the same operator in one task.
fn operators_match<R: Runtime>(workers: usize) {
    let rt = R::build(workers, None).unwrap();
    let split = Par { rt: &rt, max_tasks: 64, min_points: 1, path: Path::native() };
    let whole = Par { rt: &rt, max_tasks: 1, min_points: 1, path: Path::native() };
    let (uf, vf, rc) = (field(FINE.len(), 3.0), field(FINE.len(), 5.0), field(COARSE.len(), 7.0));
    rt.install(|| {
        for par in [&split, &whole] {
            let mut r = vec![0.0; FINE.len()];
            ops::resid(par, &uf, Some(&vf), &mut r, FINE, &A_COEF);
            close(&r, &naive_stencil(&uf, &vf, FINE, A_COEF, -1.0), "resid");
            let mut in_place = vf.clone();
            ops::resid(par, &uf, None, &mut in_place, FINE, &A_COEF);
            assert_eq!(in_place, r, "resid in place");

            let mut u = uf.clone();
            ops::psinv(par, &vf, &mut u, FINE, &C_COEF);
            close(&u, &naive_stencil(&vf, &uf, FINE, C_COEF, 1.0), "psinv");

            let mut s = vec![0.0; COARSE.len()];
            ops::rprj3(par, &vf, FINE, &mut s, COARSE);
            close(&s, &naive_rprj3(&vf, FINE, COARSE), "rprj3");

            let mut u = uf.clone();
            ops::interp(par, &rc, COARSE, &mut u, FINE, false);
            close(&u, &naive_interp(&rc, COARSE, &uf, FINE), "interp");
            let mut z = uf.clone();
            ops::interp(par, &rc, COARSE, &mut z, FINE, true);
            close(&z, &naive_interp(&rc, COARSE, &vec![0.0; FINE.len()], FINE), "interp onto zero");
        }
        let n = (FINE.n1 - 2, FINE.n2 - 2, FINE.n3 - 2);
        let (a, b) = (ops::norm2u3(&split, &vf, FINE, n), ops::norm2u3(&whole, &vf, FINE, n));
        assert_eq!(a, b, "norm2u3 does not depend on the split");
        let sum: f64 = interior(FINE).map(|p| vf[FINE.at(p.0, p.1, p.2)].powi(2)).sum();
        assert!((a.0 - (sum / (n.0 * n.1 * n.2) as f64).sqrt()).abs() < 1e-15);
    });
}

#[test]
fn operators_match_naive_stencils_on_every_runtime() {
    operators_match::<Rayon>(3);
    operators_match::<GlobalQueue>(3);
    operators_match::<Spawn>(3);
    operators_match::<Team>(3);
    operators_match::<Rayon>(1);
}

/// `for_planes` hands each plane to exactly one task, and the tasks of one
/// call run at the same time (each waits until all have started).
fn runs_are_disjoint_and_concurrent<R: Runtime>() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let rt = R::build(2, None).unwrap();
    let par = Par { rt: &rt, max_tasks: 2, min_points: 1, path: Path::native() };
    let mut planes = vec![0usize; 10 * 3];
    let started = AtomicUsize::new(0);
    rt.install(|| {
        par.for_planes(&mut planes, 3, (1, 9), 1, 3, &|first, run| {
            started.fetch_add(1, Ordering::SeqCst);
            let t = std::time::Instant::now();
            while started.load(Ordering::SeqCst) < 2 {
                assert!(t.elapsed().as_secs() < 10, "{}: the two runs did not run together", R::NAME);
                std::hint::spin_loop();
            }
            for (k, p) in run.chunks_exact_mut(3).enumerate() {
                p.iter_mut().for_each(|x| *x += first + k);
            }
        })
    });
    let want: Vec<usize> = (0..10).flat_map(|i| [if (1..9).contains(&i) { i } else { 0 }; 3]).collect();
    assert_eq!(planes, want, "{}", R::NAME);
}

#[test]
fn plane_runs_are_disjoint_and_run_concurrently_on_every_runtime() {
    runs_are_disjoint_and_concurrent::<Rayon>();
    runs_are_disjoint_and_concurrent::<GlobalQueue>();
    runs_are_disjoint_and_concurrent::<Spawn>();
    runs_are_disjoint_and_concurrent::<Team>();
}

#[test]
fn comm3_copies_the_opposite_interior_face_into_each_ghost_layer() {
    let d = Dims { n1: 4, n2: 5, n3: 6 };
    let mut u: Vec<f64> = (0..d.len()).map(|i| i as f64).collect();
    let interior_before: Vec<f64> = interior(d).map(|p| u[d.at(p.0, p.1, p.2)]).collect();
    ops::comm3(&mut u, d);
    assert_eq!(interior(d).map(|p| u[d.at(p.0, p.1, p.2)]).collect::<Vec<_>>(), interior_before);
    // Every point equals the interior point its coordinates wrap to.
    let wrap = |i: usize, n: usize| 1 + (i + n - 3) % (n - 2);
    for i3 in 0..d.n3 {
        for i2 in 0..d.n2 {
            for i1 in 0..d.n1 {
                let src = d.at(wrap(i1, d.n1), wrap(i2, d.n2), wrap(i3, d.n3));
                assert_eq!(u[d.at(i1, i2, i3)], src as f64, "({i1}, {i2}, {i3})");
            }
        }
    }
    // By hand: the corner (0, 0, 0) is the interior corner (2, 3, 4).
    assert_eq!(u[0], d.at(2, 3, 4) as f64);
}

#[test]
fn constant_fields_give_the_stencil_weight_sums() {
    let rt = Rayon::build(2, None).unwrap();
    let par = Par { rt: &rt, max_tasks: 8, min_points: 1, path: Path::native() };
    let d = Dims::cube(4);
    let ones = vec![1.0; d.len()];
    // norm2u3 of the constant 3: both norms are 3.
    let threes = vec![3.0; d.len()];
    assert_eq!(ops::norm2u3(&par, &threes, d, (4, 4, 4)), (3.0, 3.0));
    // A of a constant is -8/3 + 12/6 + 8/12 = 0, so r = v.
    let mut r = vec![0.0; d.len()];
    ops::resid(&par, &ones, Some(&threes), &mut r, d, &A_COEF);
    assert!(r.iter().all(|&x| (x - 3.0).abs() < 1e-15), "{r:?}");
    // The smoother adds (-3/8 + 6/32 - 12/64) r = -3/8 r.
    let mut u = vec![0.0; d.len()];
    ops::psinv(&par, &ones, &mut u, d, &C_COEF);
    assert!(u.iter().all(|&x| x == -0.375), "{u:?}");
    // The restriction weighs 27 points: 0.5 + 6/4 + 12/8 + 8/16 = 4.
    let mut s = vec![0.0; Dims::cube(2).len()];
    ops::rprj3(&par, &ones, d, &mut s, Dims::cube(2));
    assert!(s.iter().all(|&x| x == 4.0), "{s:?}");
    // Interpolating a constant reproduces it everywhere, ghosts included.
    let mut u = vec![0.0; d.len()];
    ops::interp(&par, &vec![2.0; Dims::cube(2).len()], Dims::cube(2), &mut u, d, true);
    assert!(u.iter().all(|&x| x == 2.0), "{u:?}");
}

#[test]
fn zran3_marks_the_ten_largest_and_smallest_numbers_of_the_stream() {
    let d = Dims { n1: 10, n2: 8, n3: 7 };
    let mut z = vec![7.0; d.len()];
    let (minus, plus) = ops::zran3(&mut z, d);
    // Row by row and plane by plane, the jumps make the interior one
    // consecutive stream from the seed.
    let mut x = 314_159_265.0;
    let mut numbers: Vec<(f64, usize)> = interior(d).map(|p| (randlc(&mut x, A), d.at(p.0, p.1, p.2))).collect();
    numbers.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut want_minus: Vec<usize> = numbers[..10].iter().map(|n| n.1).collect();
    let mut want_plus: Vec<usize> = numbers[numbers.len() - 10..].iter().map(|n| n.1).collect();
    let (mut got_minus, mut got_plus) = (minus.to_vec(), plus.to_vec());
    for v in [&mut want_minus, &mut want_plus, &mut got_minus, &mut got_plus] {
        v.sort_unstable();
    }
    assert_eq!(got_minus, want_minus);
    assert_eq!(got_plus, want_plus);
    for p in interior(d) {
        let i = d.at(p.0, p.1, p.2);
        let want = if want_plus.contains(&i) {
            1.0
        } else if want_minus.contains(&i) {
            -1.0
        } else {
            0.0
        };
        assert_eq!(z[i], want);
    }
    let mut periodic = z.clone();
    ops::comm3(&mut periodic, d);
    assert_eq!(periodic, z, "ghost layers are filled");
}

#[test]
fn classes_and_the_operation_count_are_npbs() {
    let s = Class::named("S").unwrap();
    assert_eq!((s.n, s.nit, s.levels()), (32, 4, 5));
    assert_eq!(s.ops(), 58 * 4 * 32 * 32 * 32);
    assert_eq!(Class::named("W").unwrap().levels(), 7);
    assert_eq!(Class::named("A").unwrap().levels(), 8);
    assert!(Class::named("B").is_none());
    let spec = NpbMg.spec();
    assert_eq!(spec.params.last().unwrap().name, "workers");
    assert_eq!(spec.faults, &[FAULT]);
}

#[test]
fn the_verdict_uses_npbs_relative_epsilon() {
    let s = Class::named("S").unwrap();
    assert!(!judge(s, f64::NAN).passed);
    assert!(judge(s, s.reference * (1.0 + 5e-9)).passed);
    assert!(!judge(s, s.reference * (1.0 + 2e-8)).passed);
    let v = judge(s, s.reference);
    assert!(v.expected.contains("5.307707005734e-5"), "{}", v.expected);
    assert!(v.observed.contains("5.307707005734e-5"), "{}", v.observed);
}

/// Class S on `R` with `workers`: two samples, each verified; returns rnm2.
fn class_s<R: Runtime>(workers: usize, fault: bool) -> (Check, f64) {
    class_s_on::<R>(workers, fault, Path::native())
}

/// [`class_s`] with the operators on `path`.
fn class_s_on<R: Runtime>(workers: usize, fault: bool, path: Path) -> (Check, f64) {
    let mut inst = MgInstance::new(R::build(workers, None).unwrap(), Class::named("S").unwrap(), fault, path);
    let mut seen = Vec::new();
    for _ in 0..2 {
        let mut t = Timer::new();
        let (w, rnm2) = inst.sample(1, &mut t).unwrap();
        assert_eq!(w.ops, 58 * 4 * 32 * 32 * 32);
        assert!(t.work_ns().is_some());
        seen.push(rnm2);
    }
    assert_eq!(seen[0], seen[1], "every sample computes the same rnm2");
    let d = inst.details(seen.last());
    assert_eq!((d["class"].as_str(), d["levels"].as_u64()), (Some("S"), Some(5)));
    assert_eq!(d["code_path"], path.code_path().as_str());
    (inst.verify(&seen[1]), seen[0])
}

#[test]
fn class_s_verifies_on_every_runtime_with_one_and_two_workers() {
    let mut all = Vec::new();
    for workers in [1, 2] {
        for (name, (v, rnm2)) in [
            ("rayon", class_s::<Rayon>(workers, false)),
            ("global-queue", class_s::<GlobalQueue>(workers, false)),
            ("spawn", class_s::<Spawn>(workers, false)),
            ("team", class_s::<Team>(workers, false)),
        ] {
            assert!(v.passed, "{name} with {workers} workers: expected {}, observed {}", v.expected, v.observed);
            all.push(rnm2);
        }
    }
    assert!(all.iter().all(|&x| x == all[0]), "rnm2 depends on the runtime or the worker count: {all:?}");
}

#[test]
fn class_s_verifies_on_every_code_path_with_the_same_bits() {
    // Every path once, the baseline last: the others must give its bits.
    let runs: Vec<(Path, (Check, f64))> = Path::every().into_iter().map(|p| (p, class_s_on::<Rayon>(2, false, p))).collect();
    let (last, (_, reference)) = runs.last().expect("the baseline is always there");
    assert_eq!(*last, Path::BASELINE);
    for (path, (v, rnm2)) in &runs {
        assert!(v.passed, "{path:?}: {}", v.observed);
        assert_eq!(rnm2.to_bits(), reference.to_bits(), "{path:?}");
    }
}

#[test]
fn the_perturbed_source_fails_the_verifier() {
    let (v, _) = class_s::<Rayon>(2, true);
    assert!(!v.passed, "observed {}", v.observed);
}
