//! `cpu.primes`: independent worker processes count primes over 2..=N by
//! trial division, each over a contiguous split of equal estimated cost (the
//! capOS process-scale workload).

use std::io::{PipeReader, PipeWriter};
use std::os::fd::AsRawFd;

use anyhow::{Context, bail};
use serde_json::json;

use super::mix64;
use crate::measure::{affinity, clock};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::process::{read_words, wait_child, write_words};

pub struct Primes;

impl Workload for Primes {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "cpu.primes",
            group: "cpu",
            summary: "Independent worker processes count primes over 2..=N by trial division",
            measures: "process-level CPU scaling: how well the kernel runs independent CPU-bound processes on several CPUs",
            unit: Unit::Ns,
            timed_region: "the workers' compute only: from the first worker starting its split to the last one finishing \
                           (CLOCK_MONOTONIC in each worker); process creation, the split planning and result reporting are outside",
            total_window: None,
            verifier: "the aggregate count equals pi(N) and the sum of mix64(p) over the primes found equals the value computed \
                       by a sieve of Eratosthenes during prepare",
            batched: false,
            params: vec![
                ParamSpec::int("range", "count primes over 2..=range", 2, 100_000_000, [1_000_000, 10_000_000, 3_000_000]),
                ParamSpec::workers("worker processes, each counting one split"),
            ],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let n = cell.u64("range")?;
        let workers = cell.worker_count();
        let sieve = Sieve::new(n);
        let splits = balanced_splits(&sieve, workers);
        let shares = cost_shares(&sieve, &splits);
        let (expected_count, expected_checksum) = (sieve.count, sieve.checksum);
        drop(sieve); // before forking: the workers need none of it
        let mut procs = Vec::with_capacity(workers);
        for (i, &(lo, hi)) in splits.iter().enumerate() {
            procs.push(spawn_worker(cx, i, lo, hi, cell.cpu_for(i), &procs)?);
        }
        Ok(Prepared::ready(PrimesInstance { n, expected_count, expected_checksum, shares, splits, procs, worst_imbalance: 1.0 }))
    }
}

/// Is `n` prime, by trial division with odd divisors up to its square root.
/// The plain remainder is the operation this workload measures.
#[inline]
#[allow(clippy::manual_is_multiple_of)]
fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    if n % 2 == 0 {
        return n == 2;
    }
    let mut d = 3;
    while d * d <= n {
        if n % d == 0 {
            return false;
        }
        d += 2;
    }
    true
}

/// Count and checksum of the primes in `lo..hi` (the timed work).
fn count_range(lo: u64, hi: u64) -> (u64, u64) {
    let (mut count, mut sum) = (0u64, 0u64);
    for n in lo..hi {
        if is_prime(n) {
            count += 1;
            sum = sum.wrapping_add(mix64(n));
        }
    }
    (count, sum)
}

/// The reference: a smallest-prime-factor sieve over 0..=n, which gives
/// pi(n), the checksum, and the exact trial-division cost of every number.
struct Sieve {
    n: u64,
    spf: Vec<u32>,
    count: u64,
    checksum: u64,
}

impl Sieve {
    fn new(n: u64) -> Sieve {
        let len = n as usize + 1;
        let mut spf = vec![0u32; len];
        let (mut count, mut checksum) = (0u64, 0u64);
        for i in 2..len {
            if spf[i] == 0 {
                spf[i] = i as u32;
                count += 1;
                checksum = checksum.wrapping_add(mix64(i as u64));
                let mut j = i.saturating_mul(i);
                while j < len {
                    if spf[j] == 0 {
                        spf[j] = i as u32;
                    }
                    j += i;
                }
            }
        }
        Sieve { n, spf, count, checksum }
    }

    /// Loop iterations `is_prime(m)` takes: one for the even test, then one
    /// per odd divisor tried, plus a constant for the loop around it.
    fn cost(&self, m: u64) -> u64 {
        const PER_NUMBER: u64 = 2;
        if m < 3 || m.is_multiple_of(2) {
            return PER_NUMBER;
        }
        let p = self.spf[m as usize] as u64;
        let divisions = if p == m { (m.isqrt().max(1) - 1) / 2 } else { (p - 1) / 2 };
        PER_NUMBER + divisions
    }
}

/// Contiguous splits `[lo, hi)` of 2..=n, one per worker, with equal estimated
/// cost (trial division costs more for larger numbers, so equal ranges would
/// not be equal work).
fn balanced_splits(sieve: &Sieve, workers: usize) -> Vec<(u64, u64)> {
    let end = sieve.n + 1;
    let total: u128 = (2..end).map(|m| sieve.cost(m) as u128).sum();
    let mut splits = Vec::with_capacity(workers);
    let mut lo = 2;
    let mut acc: u128 = 0;
    let mut m = 2;
    for i in 1..=workers as u128 {
        let target = total * i / workers as u128;
        while m < end && acc < target {
            acc += sieve.cost(m) as u128;
            m += 1;
        }
        let hi = if i == workers as u128 { end } else { m };
        splits.push((lo, hi));
        lo = hi;
    }
    splits
}

/// Each split's share of the total estimated cost.
fn cost_shares(sieve: &Sieve, splits: &[(u64, u64)]) -> Vec<f64> {
    let costs: Vec<u128> = splits.iter().map(|&(lo, hi)| (lo..hi).map(|m| sieve.cost(m) as u128).sum()).collect();
    let total: u128 = costs.iter().sum::<u128>().max(1);
    costs.iter().map(|&c| c as f64 / total as f64).collect()
}

/// One worker process: the parent writes a byte to `cmd` to start a round
/// and reads `[count, checksum, start_ns, end_ns]` from `result`.
struct Proc {
    pid: libc::pid_t,
    cmd: Option<PipeWriter>,
    result: PipeReader,
}

fn spawn_worker(cx: &PrepareContext, i: usize, lo: u64, hi: u64, cpu: Option<usize>, earlier: &[Proc]) -> anyhow::Result<Proc> {
    let (cmd_r, cmd_w) = std::io::pipe().context("creating a command pipe")?;
    let (res_r, res_w) = std::io::pipe().context("creating a result pipe")?;
    let mut close: Vec<i32> =
        earlier.iter().flat_map(|p| [p.cmd.as_ref().map(|c| c.as_raw_fd()), Some(p.result.as_raw_fd())]).flatten().collect();
    close.extend([cmd_w.as_raw_fd(), res_r.as_raw_fd()]);
    let pid = cx
        .fork_child(&close, move || {
            let (mut cmd_r, mut res_w) = (cmd_r, res_w);
            if let Some(c) = cpu
                && let Err(e) = affinity::pin_current_thread(c)
            {
                eprintln!("cpu.primes worker {i}: cannot pin to CPU {c}: {e}");
                return 3;
            }
            let mut go = [0u8; 1];
            loop {
                match std::io::Read::read(&mut cmd_r, &mut go) {
                    Ok(1) => {}
                    _ => return 0,
                }
                let t0 = clock::now_ns();
                let (count, sum) = count_range(lo, hi);
                let t1 = clock::now_ns();
                if write_words(&mut res_w, [count, sum, t0, t1]).is_err() {
                    return 0;
                }
            }
        })
        .with_context(|| format!("forking worker process {i}"))?;
    Ok(Proc { pid, cmd: Some(cmd_w), result: res_r })
}

/// What the workers found in one sample.
struct Round {
    count: u64,
    checksum: u64,
    per_worker_ns: Vec<u64>,
}

struct PrimesInstance {
    n: u64,
    expected_count: u64,
    expected_checksum: u64,
    splits: Vec<(u64, u64)>,
    shares: Vec<f64>,
    procs: Vec<Proc>,
    worst_imbalance: f64,
}

impl Instance for PrimesInstance {
    type Outcome = Round;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Round)> {
        for (i, p) in self.procs.iter_mut().enumerate() {
            let cmd = p.cmd.as_mut().context("worker already stopped")?;
            std::io::Write::write_all(cmd, &[1]).with_context(|| format!("starting worker process {i}"))?;
        }
        let mut round = Round { count: 0, checksum: 0, per_worker_ns: Vec::new() };
        let (mut first_start, mut last_end) = (u64::MAX, 0u64);
        for (i, p) in self.procs.iter_mut().enumerate() {
            let [count, sum, start, end] =
                read_words::<4>(&mut p.result).with_context(|| format!("reading the result of worker process {i} (did it die?)"))?;
            round.count += count;
            round.checksum = round.checksum.wrapping_add(sum);
            round.per_worker_ns.push(end.saturating_sub(start));
            first_start = first_start.min(start);
            last_end = last_end.max(end);
        }
        if last_end < first_start {
            bail!("worker timestamps out of order");
        }
        timer.record_work(last_end - first_start);
        let (min, max) = (round.per_worker_ns.iter().min().copied().unwrap_or(1), round.per_worker_ns.iter().max().copied().unwrap_or(1));
        self.worst_imbalance = self.worst_imbalance.max(max as f64 / min.max(1) as f64);
        Ok((Work::ops(self.n.saturating_sub(1)), round))
    }

    fn verify(&mut self, r: &Round) -> Check {
        Check {
            passed: r.count == self.expected_count && r.checksum == self.expected_checksum,
            expected: format!("pi({}) = {}, checksum {:#018x} (sieve)", self.n, self.expected_count, self.expected_checksum),
            observed: format!("{} primes, checksum {:#018x}", r.count, r.checksum),
        }
    }

    fn details(&self, last: Option<&Round>) -> serde_json::Value {
        json!({
            "splits": self.splits,
            "estimated_cost_shares": self.shares,
            "pi_n": self.expected_count,
            "last_sample_worker_ns": last.map(|r| r.per_worker_ns.clone()),
            "worst_worker_imbalance": self.worst_imbalance,
        })
    }
}

impl Drop for PrimesInstance {
    fn drop(&mut self) {
        for p in &mut self.procs {
            p.cmd = None; // end of file: the worker exits
        }
        for p in &self.procs {
            let _ = wait_child(p.pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_division_agrees_with_the_sieve() {
        let s = Sieve::new(10_000);
        for m in 0..=10_000u64 {
            assert_eq!(is_prime(m), m >= 2 && s.spf[m as usize] as u64 == m, "{m}");
        }
    }

    #[test]
    fn pi_of_known_values() {
        // pi(10^k): 4, 25, 168, 1229, 9592, 78498 (OEIS A006880).
        for (n, pi) in [(10, 4), (100, 25), (1000, 168), (10_000, 1229), (100_000, 9592), (1_000_000, 78498)] {
            assert_eq!(Sieve::new(n).count, pi, "pi({n})");
        }
    }

    #[test]
    fn splits_cover_the_range_once_and_balance_the_cost() {
        let s = Sieve::new(300_000);
        for workers in [1, 2, 3, 4, 7] {
            let splits = balanced_splits(&s, workers);
            assert_eq!(splits.len(), workers);
            assert_eq!(splits[0].0, 2);
            assert_eq!(splits.last().unwrap().1, 300_001);
            for w in splits.windows(2) {
                assert_eq!(w[0].1, w[1].0, "gap or overlap in {splits:?}");
            }
            let shares = cost_shares(&s, &splits);
            for sh in &shares {
                assert!((sh - 1.0 / workers as f64).abs() < 0.01, "{workers} workers: {shares:?}");
            }
            // The parts together find every prime exactly once.
            let (count, sum) = splits.iter().fold((0, 0u64), |(c, x), &(lo, hi)| {
                let (c2, x2) = count_range(lo, hi);
                (c + c2, x.wrapping_add(x2))
            });
            assert_eq!((count, sum), (s.count, s.checksum));
        }
        // Equal cost is not equal range: the first half of two is the longer.
        let two = balanced_splits(&s, 2);
        assert!(two[0].1 - two[0].0 > two[1].1 - two[1].0);
    }

    #[test]
    fn the_verifier_fails_on_a_wrong_count_or_checksum() {
        let s = Sieve::new(1000);
        let mut inst = PrimesInstance {
            n: 1000,
            expected_count: s.count,
            expected_checksum: s.checksum,
            splits: vec![(2, 1001)],
            shares: vec![1.0],
            procs: vec![],
            worst_imbalance: 1.0,
        };
        let (c, x) = count_range(2, 1001);
        assert!(inst.verify(&Round { count: c, checksum: x, per_worker_ns: vec![1] }).passed);
        // A split that misses the number 997 (a prime).
        let (c, x) = count_range(2, 997);
        let v = inst.verify(&Round { count: c, checksum: x, per_worker_ns: vec![1] });
        assert!(!v.passed && v.observed.contains("167 primes"), "{v:?}");
        // Right count, wrong set: 997 counted twice and 2 left out.
        let (c, x) = count_range(3, 1001);
        assert!(!inst.verify(&Round { count: c + 1, checksum: x.wrapping_add(mix64(997)), per_worker_ns: vec![1] }).passed);
    }
}
