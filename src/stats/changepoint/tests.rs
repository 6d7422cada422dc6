//! Tests of the change points: the exact partition and intervals against
//! `src/stats/reference.py`, PELT's pruning against the plain dynamic
//! programme, refusals, the work of an append, and seeded simulations on
//! recorded A/A noise of this machine (figures printed with --nocapture).

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::*;
use crate::stats::noise_floor;
use crate::stats::testdata::{assert_rel, normal};

/// Recorded A/A noise: each row's per-trial medians (every trial a fresh
/// worker process) divided by the median of that row's trials, both
/// variants of one `proofbench noise` run (quick profile, 3 planned trials
/// per variant) on this machine (`vm`, AMD EPYC, 2 CPUs, Linux
/// 6.18.44-fc), run 20261128T075324Z-vm-linux-6.18.44-fc-v782 (proofbench
/// 8c55651f), read from its rows.jsonl (`trials[].median`) and rounded to 5
/// digits. Quiet rows and noisy ones, bimodal ones (io.seqwrite writes,
/// rt.startup) among them; a simulated run's median is its row's level times
/// a draw from its pool.
pub(super) const NOISE: [(&str, &[f64]); 10] = [
    ("cpu.primes workers=1", &[0.99851, 1.00375, 0.99875, 0.99755, 1.00125, 1.00201]),
    ("cpu.primes workers=2", &[1.00117, 0.99427, 1.02296, 1.01304, 0.99883, 0.96814, 1.18634, 1.00445, 0.98772, 0.96893]),
    ("os.syscall getppid", &[1.00262, 1.00027, 0.99973, 1.00142, 0.99884, 0.99934]),
    ("os.stat", &[1.00005, 1.01554, 0.99995, 0.98977, 1.01035, 0.99308]),
    ("os.process-spawn", &[0.99255, 1.02942, 0.99752, 0.97578, 1.02367, 1.00248]),
    ("cpu.service process workers=1", &[0.99585, 1.0, 0.99825, 1.01804, 1.0, 1.00107]),
    (
        "cpu.service process workers=2",
        &[0.91324, 1.19338, 0.89243, 1.43778, 1.17753, 1.00215, 0.91325, 0.99785, 0.89652, 1.39507, 1.11103, 0.99703],
    ),
    ("io.seqwrite sync writes", &[1.00279, 0.90674, 1.00702, 0.99721, 0.89036, 1.00467]),
    ("io.seqwrite sync fsync", &[0.99369, 1.04626, 0.97983, 0.98356, 1.00631, 0.96484, 1.02649, 1.02235]),
    (
        "rt.startup spawn workers=1",
        &[0.9993, 0.7762, 1.00096, 1.16668, 1.00134, 0.99975, 0.77824, 0.77729, 1.0003, 1.00025, 1.00121, 0.99763],
    ),
];

/// A pool's noise floor as the history computes it (its values the runs of one build).
fn floor_of(pool: &[f64]) -> crate::stats::Floor {
    noise_floor(&[pool.to_vec()]).expect("six values are enough for a floor")
}

/// The settings `history changes` uses for `values` with the floor `f`.
fn settings_for(values: &[f64], f: &crate::stats::Floor) -> Settings {
    Settings::new(f.sd.max(noise_of(values).unwrap_or(0.0)), f.value)
}

/// A series of `n` runs drawn from `pool` (level 1000), with `steps`
/// (index of the first run after, ratio) planted.
fn series(rng: &mut Xoshiro256PlusPlus, pool: &[f64], n: usize, steps: &[(usize, f64)]) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let level: f64 = steps.iter().filter(|(at, _)| i >= *at).map(|(_, r)| r).product();
            1000.0 * level * pool[rng.random_range(0..pool.len())]
        })
        .collect()
}

/// Planted steps for a series of `n`: one or two, each `(1 + floor)^k` for
/// k in `floors` (e.g. 2..3), up or down, at least 5 runs from either end
/// and 10 apart.
fn planted(rng: &mut Xoshiro256PlusPlus, n: usize, floor: f64, floors: std::ops::Range<f64>) -> Vec<(usize, f64)> {
    let count = 1 + rng.random_range(0..2usize);
    let mut steps: Vec<(usize, f64)> = Vec::new();
    while steps.len() < count {
        let at = rng.random_range(5..n - 5);
        if steps.iter().any(|(a, _)| a.abs_diff(at) < 10) {
            continue;
        }
        let k = floors.start + (floors.end - floors.start) * rng.random::<f64>();
        let up = rng.random::<bool>();
        let r = (1.0 + floor).powf(if up { k } else { -k });
        steps.push((at, r));
    }
    steps.sort_by_key(|s| s.0);
    steps
}

/// (found within one run of a planted step, named, planted).
fn scored(found: &[usize], planted: &[(usize, f64)]) -> (usize, usize, usize) {
    let mut used = vec![false; found.len()];
    let mut hits = 0;
    for (at, _) in planted {
        if let Some(i) = (0..found.len()).find(|&i| !used[i] && found[i].abs_diff(*at) <= 1) {
            used[i] = true;
            hits += 1;
        }
    }
    (hits, found.len(), planted.len())
}

fn cuts(values: &[f64], settings: Settings) -> Vec<usize> {
    Detector::over(settings, values).unwrap().changes().iter().map(|c| c.at).collect()
}

#[test]
fn the_partition_and_intervals_match_the_plain_dynamic_programme_of_reference_py() {
    // CP of src/stats/reference.py (numpy 2.4.6, scipy 1.17.1).
    let cp = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 104.0, 103.0, 104.5, 103.5, 97.0, 96.5, 97.5, 96.8];
    let s = Settings { sigma: 0.005, min_effect: 0.0, penalty: 21.4, min_size: 2 };
    let d = Detector::over(s, &cp).unwrap();
    let changes = d.changes();
    assert_eq!(changes.iter().map(|c| c.at).collect::<Vec<_>>(), [6, 10], "CP_CUTS");
    let want = [1.0375065549232165, 1.028411882090339, 1.0466816557201986, 0.9344648158027323, 0.925495328710073, 0.9435212311555455];
    for (c, w) in changes.iter().zip(want.chunks(3)) {
        assert_rel(c.ratio, w[0], 1e-12);
        assert_rel(c.lo, w[1], 1e-12);
        assert_rel(c.hi, w[2], 1e-12);
    }
    assert_eq!((changes[0].before.clone(), changes[0].after.clone()), (0..6, 6..10));
    assert_eq!(Z95, 1.959963984540054, "CP_NORM_975");
    // The 3.75% step is below a 4% floor: merged, only the drop (4.5% from the merged level) is named,
    // measured from the whole level before it.
    let floored = Detector::over(Settings { min_effect: 0.04, ..s }, &cp).unwrap().changes();
    assert_eq!(floored.iter().map(|c| (c.at, c.before.clone())).collect::<Vec<_>>(), [(10, 0..10)]);
}

/// The optimal partition's cost by the plain O(n²) programme, no pruning.
fn plain_optimum(x: &[f64], s: &Settings) -> f64 {
    let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let cost = |a: usize, b: usize| {
        let seg = &logs[a..b];
        let m = seg.iter().sum::<f64>() / seg.len() as f64;
        seg.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (s.sigma * s.sigma)
    };
    let mut best = vec![f64::INFINITY; x.len() + 1];
    best[0] = -s.penalty;
    for t in 1..=x.len() {
        for a in 0..t.saturating_sub(s.min_size - 1) {
            best[t] = best[t].min(best[a] + cost(a, t) + s.penalty);
        }
    }
    best[x.len()]
}

#[test]
fn pruning_keeps_the_optimal_partition() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    for case in 0..200 {
        let n = 5 + case % 60;
        let steps: Vec<(usize, f64)> = (0..case % 4).map(|i| (1 + (i * 7 + case) % (n - 1), 1.0 + 0.03 * (i as f64 + 1.0))).collect();
        let x: Vec<f64> = (0..n)
            .map(|i| 100.0 * steps.iter().filter(|(a, _)| i >= *a).map(|(_, r)| r).product::<f64>() * (0.01 * normal(&mut rng)).exp())
            .collect();
        let s = Settings { sigma: 0.01, min_effect: 0.0, penalty: PENALTY, min_size: 1 + case % 3 };
        let d = Detector::over(s, &x).unwrap();
        let got: f64 = d.segments().iter().map(|r| d.cost(r.start, r.end) + s.penalty).sum::<f64>() - s.penalty;
        let want = plain_optimum(&x, &s);
        assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "case {case}: PELT {got} vs plain {want} ({:?})", d.segments());
        assert!(d.segments().iter().all(|r| r.len() >= s.min_size.min(n)), "case {case}: {:?}", d.segments());
    }
}

#[test]
fn values_and_settings_that_cannot_be_judged_are_refused() {
    let s = Settings::new(0.01, 0.02);
    let mut d = Detector::new(s).unwrap();
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(d.push(bad), Err(Refused::Value(_))), "{bad}");
    }
    assert!(d.is_empty() && d.changes().is_empty() && d.segments().is_empty());
    d.push(5.0).unwrap();
    assert_eq!(d.segments(), std::iter::once(0..1).collect::<Vec<_>>(), "one value: one level, shorter than a level may be");
    for bad in [
        Settings { sigma: 0.0, ..s },
        Settings { sigma: f64::NAN, ..s },
        Settings { min_effect: -0.1, ..s },
        Settings { penalty: 0.0, ..s },
        Settings { min_size: 0, ..s },
    ] {
        assert!(Detector::new(bad).is_err(), "{bad:?}");
    }
    assert_eq!(noise_of(&[1.0, 2.0]), None);
    assert_eq!(noise_of(&[1.0, 0.0, 2.0]), None);
    // The floor's noise is the least sigma: 2% is 1.96 √2 sigma in logs.
    assert_rel(Settings::new(0.0, 0.02).sigma, 1.02f64.ln() / (Z95 * std::f64::consts::SQRT_2), 1e-12);
    assert_eq!(Settings::new(0.5, 0.02).sigma, 0.5);
    // Equal values, no smallest change (`--noise 0%`, no floor): still judged, one level.
    let flat = Settings::new(noise_of(&[7.0; 6]).unwrap(), 0.0);
    assert!(Detector::new(flat).is_ok() && Detector::over(flat, &[7.0; 6]).unwrap().changes().is_empty(), "{flat:?}");
}

#[test]
fn an_append_examines_only_the_runs_since_about_the_last_change() {
    // 10,000 runs, a level shift of 10% every 500 runs, noise 1%: after
    // each change has settled, a push weighs only the level it is in.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let s = Settings::new(0.01, 0.02);
    let mut d = Detector::new(s).unwrap();
    let mut worst_late = 0;
    for i in 0..10_000usize {
        let level = if (i / 500) % 2 == 0 { 100.0 } else { 110.0 };
        d.push(level * (0.01 * normal(&mut rng)).exp()).unwrap();
        if i % 500 >= 50 {
            // 50 runs into a level: the candidates are those since its start.
            worst_late = worst_late.max(d.last_work());
            assert!(d.candidates() <= i % 500 + 10, "run {i}: {} candidates", d.candidates());
        }
    }
    let found: Vec<usize> = d.changes().iter().map(|c| c.at).collect();
    assert_eq!(found, (1..20).map(|k| k * 500).collect::<Vec<_>>());
    assert!(worst_late <= 510, "{worst_late} segment costs in one push");
    println!("10,000 runs, 19 changes: at most {worst_late} segment costs per push 50 runs after a change");
}

#[test]
fn planted_steps_of_two_floors_or_more_are_found_within_one_run() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2026);
    let (mut hits, mut named, mut planted_n) = (0, 0, 0);
    for i in 0..200 {
        let (name, pool) = NOISE[i % NOISE.len()];
        let f = floor_of(pool);
        let steps = planted(&mut rng, 60, f.value, 2.0..3.0);
        let x = series(&mut rng, pool, 60, &steps);
        let found = cuts(&x, settings_for(&x, &f));
        let (h, n, p) = scored(&found, &steps);
        if h < p || n > h {
            println!("  {name} (floor {:.2}%): planted {steps:?}, found {found:?}", f.value * 100.0);
        }
        (hits, named, planted_n) = (hits + h, named + n, planted_n + p);
    }
    let (precision, recall) = (hits as f64 / named as f64, hits as f64 / planted_n as f64);
    println!(
        "steps of 2 to 3 noise floors, 60 runs: precision {precision:.3} ({hits} of {named} named), recall {recall:.3} ({hits} of {planted_n} planted)"
    );
    assert!(precision >= 0.9 && recall >= 0.9, "precision {precision}, recall {recall}");
}

#[test]
fn the_interval_of_a_change_found_holds_the_planted_ratio_in_about_95_of_100() {
    // Steps of 2 to 3 floors on recorded noise, as above; every change found
    // within one run of a planted one is scored: does its 95% interval hold
    // the planted ratio? And how wide is it against the interval the
    // detection's sigma (the larger of floor and successive differences)
    // would give?
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(95);
    let (mut scored_n, mut held, mut narrower) = (0, 0, 0);
    let mut widths = Vec::new();
    for i in 0..400 {
        let pool = NOISE[i % NOISE.len()].1;
        let f = floor_of(pool);
        let steps = planted(&mut rng, 60, f.value, 2.0..3.0);
        let x = series(&mut rng, pool, 60, &steps);
        let s = settings_for(&x, &f);
        for c in Detector::over(s, &x).unwrap().changes() {
            let Some((_, r)) = steps.iter().find(|(at, _)| c.at.abs_diff(*at) <= 1) else { continue };
            scored_n += 1;
            held += usize::from(c.lo <= *r && *r <= c.hi);
            let half = Z95 * s.sigma * (1.0 / c.before.len() as f64 + 1.0 / c.after.len() as f64).sqrt();
            narrower += usize::from((c.hi / c.lo).ln() < 2.0 * half);
            widths.push((c.hi / c.lo).ln() / (2.0 * half));
        }
    }
    let coverage = held as f64 / scored_n as f64;
    widths.sort_by(f64::total_cmp);
    println!(
        "95% intervals of {scored_n} changes found: {held} hold the planted ratio ({coverage:.3}); {narrower} narrower than from the detection's sigma (median width {:.2}x of it)",
        widths[widths.len() / 2]
    );
    assert!(scored_n >= 400, "{scored_n} changes scored");
    assert!((0.92..=0.99).contains(&coverage), "coverage {coverage}");
    assert!(narrower * 2 > scored_n, "{narrower} of {scored_n} narrower");
}

#[test]
fn a_series_of_one_build_shows_no_change_in_at_least_95_of_100() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(34);
    let mut with_change = 0;
    for i in 0..100 {
        let (name, pool) = NOISE[i % NOISE.len()];
        let f = floor_of(pool);
        let x = series(&mut rng, pool, 60, &[]);
        let found = cuts(&x, settings_for(&x, &f));
        if !found.is_empty() {
            println!("  {name}: {found:?}");
            with_change += 1;
        }
    }
    println!("no step, 60 runs: {with_change} of 100 series with a change point");
    assert!(with_change <= 5, "{with_change} of 100");
}

/// PELT against E-divisive means with a permutation test (199
/// permutations, alpha 0.05, each level at least 2 runs, then levels
/// closer than the floor merged, as PELT's are), on the same simulated
/// series, half without a step, half with steps of `k` floors: the figures
/// of docs/METHODOLOGY.md. Slow: `cargo test --lib -- --ignored
/// the_methods_compared --nocapture`.
#[test]
#[ignore]
fn the_methods_compared_on_recorded_noise() {
    for (n, k) in [(30, 1.0..1.5), (60, 1.0..1.5), (60, 1.5..2.0), (60, 2.0..3.0), (120, 1.0..1.5), (120, 2.0..3.0)] {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2026 + n as u64);
        let mut score = [(0, 0, 0, 0); 2];
        let mut time = [std::time::Duration::ZERO; 2];
        for i in 0..200 {
            let (_, pool) = NOISE[i % NOISE.len()];
            let f = floor_of(pool);
            let steps = if i % 2 == 0 { Vec::new() } else { planted(&mut rng, n, f.value, k.clone()) };
            let x = series(&mut rng, pool, n, &steps);
            let s = settings_for(&x, &f);
            let clock = std::time::Instant::now();
            let pelt = cuts(&x, s);
            time[0] += clock.elapsed();
            let clock = std::time::Instant::now();
            let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
            let ed = merged(&x, &edivisive::changes(&logs, MIN_SIZE, 0.05, 199, i as u64), s);
            time[1] += clock.elapsed();
            for (m, found) in [pelt, ed].iter().enumerate() {
                let (h, nm, p) = scored(found, &steps);
                let fp = usize::from(steps.is_empty() && !found.is_empty());
                score[m] = (score[m].0 + h, score[m].1 + nm, score[m].2 + p, score[m].3 + fp);
            }
        }
        for (m, name) in ["PELT", "E-divisive"].iter().enumerate() {
            let (h, nm, p, fp) = score[m];
            println!(
                "{n} runs, steps of {k:?} floors, {name}: precision {:.3}, recall {:.3}, series of one build with a change {fp} of 100, {:.3} ms a series",
                h as f64 / nm.max(1) as f64,
                h as f64 / p as f64,
                time[m].as_secs_f64() * 1000.0 / 200.0
            );
        }
    }
}

/// `cuts` given: the levels closer than the floor merged as
/// [`Detector::changes`] merges PELT's (the closest first).
fn merged(x: &[f64], cuts: &[usize], s: Settings) -> Vec<usize> {
    let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let mean = |a: usize, b: usize| logs[a..b].iter().sum::<f64>() / (b - a) as f64;
    let mut bounds: Vec<usize> = [0].into_iter().chain(cuts.iter().copied()).chain([x.len()]).collect();
    loop {
        let closest = (1..bounds.len() - 1)
            .map(|i| (i, (mean(bounds[i], bounds[i + 1]) - mean(bounds[i - 1], bounds[i])).abs()))
            .filter(|&(_, d)| d < (1.0 + s.min_effect).ln())
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((i, _)) = closest else { break };
        bounds.remove(i);
    }
    bounds[1..bounds.len() - 1].to_vec()
}

/// The time of one append to a series of 10,000 runs (no change: the most
/// work a push does), for scripts/changepoints.sh, which runs it in a
/// release build and holds the target (under a second). Prints the figure;
/// asserts only the work done.
#[test]
#[ignore]
fn append_to_a_10000_run_series_figures() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let x: Vec<f64> = (0..10_000).map(|_| 100.0 * (0.01 * normal(&mut rng)).exp()).collect();
    let s = Settings::new(0.01, 0.02);
    let built = std::time::Instant::now();
    let mut d = Detector::over(s, &x).unwrap();
    let built = built.elapsed();
    let mut worst = std::time::Duration::ZERO;
    for _ in 0..100 {
        let t = std::time::Instant::now();
        d.push(100.0 * (0.01 * normal(&mut rng)).exp()).unwrap();
        let _ = d.changes();
        worst = worst.max(t.elapsed());
    }
    assert!(d.last_work() <= d.len(), "at most one segment cost per run held");
    println!("changepoints: whole series of 10000 runs {:.6} s", built.as_secs_f64());
    println!("changepoints: append (push and changes), worst of 100 {:.6} s", worst.as_secs_f64());
}
