//! A pointer chase over the cache lines of an array, in a chosen order.
//!
//! The array is `lines` cache lines of `words_per_line` 64-bit words. The
//! order is a single cycle through every line; the line at position `k` of
//! the cycle holds, in its first word, the index of the line at position
//! `k + 1` (the last one points back to the first) and, in its second word,
//! its rank `k`. A walk of `m` steps from rank `r` therefore loads one word
//! pair per line, each address known only when the previous load returns
//! (so out-of-order execution cannot overlap the misses: only a prefetcher
//! that predicts the next line helps), and the ranks it reads sum to the
//! closed form `sum((r + i) mod lines, i < m)`, whatever the order.
//!
//! Every pattern runs the same instructions; only the addresses differ.

use rand::SeedableRng;
use rand::seq::SliceRandom;

/// The order of the lines in the cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Line 0, s, 2s, ... then 1, 1 + s, ... (stride 1: sequential).
    Stride(usize),
    /// A uniformly random permutation of the lines (seeded), chased as one cycle.
    Random(u64),
}

/// The lines in cycle order: `order[k]` is the line at rank `k`.
pub fn order(lines: usize, o: Order) -> Vec<u32> {
    assert!(lines > 0 && lines <= u32::MAX as usize, "{lines} lines");
    match o {
        Order::Stride(s) => {
            let s = s.clamp(1, lines);
            (0..s).flat_map(|r| (r..lines).step_by(s)).map(|l| l as u32).collect()
        }
        Order::Random(seed) => {
            let mut v: Vec<u32> = (0..lines as u32).collect();
            v.shuffle(&mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed));
            v
        }
    }
}

/// Writes the cycle of `order` into `mem` (`order.len()` lines of
/// `words_per_line` words, at least 2), in cycle order: the lines written
/// last are the ones a walk from rank 0 reaches last, so a walk always loads
/// the least recently touched lines (with an array of twice the last-level
/// cache, none of them is still cached).
pub fn build(mem: &mut [u64], words_per_line: usize, order: &[u32]) {
    let n = order.len();
    assert!(words_per_line >= 2 && mem.len() >= n * words_per_line, "array too small for {n} lines");
    for (k, &l) in order.iter().enumerate() {
        let at = l as usize * words_per_line;
        mem[at] = u64::from(order[if k + 1 == n { 0 } else { k + 1 }]);
        mem[at + 1] = k as u64;
    }
}

/// What a walk saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walked {
    /// Wrapping sum of the ranks read.
    pub sum: u64,
    /// The line the walk stopped at (the next one it would load).
    pub end_line: usize,
}

/// `steps` dependent loads from line `start`.
#[inline(never)]
pub fn walk(mem: &[u64], words_per_line: usize, start: usize, steps: u64) -> Walked {
    let mut line = start;
    let mut sum = 0u64;
    for _ in 0..steps {
        let at = line * words_per_line;
        sum = sum.wrapping_add(mem[at + 1]);
        line = mem[at] as usize;
    }
    Walked { sum, end_line: line }
}

/// The rank stored in a line.
pub fn rank_of(mem: &[u64], words_per_line: usize, line: usize) -> u64 {
    mem[line * words_per_line + 1]
}

/// The sum, modulo 2^64, of `(start + i) mod n` for `i < steps`: the ranks a
/// correct walk of `steps` from rank `start` reads.
pub fn expected_sum(n: u64, start: u64, steps: u64) -> u64 {
    // Sum of a..b (b exclusive).
    let range = |a: u128, b: u128| if b > a { (a + b - 1) * (b - a) / 2 } else { 0 };
    let (n128, start) = (u128::from(n), u128::from(start % n));
    let (full, rem) = (u128::from(steps / n), u128::from(steps % n));
    let mut total = full * range(0, n128);
    if start + rem <= n128 {
        total += range(start, start + rem);
    } else {
        total += range(start, n128) + range(0, start + rem - n128);
    }
    total as u64
}

/// Breaks the cycle on purpose (the `skip-line` fault): the line at rank
/// `at` points to the line at rank `at + 2`, so a walk through it skips one
/// rank and reads a wrong sum.
pub fn skip_one(mem: &mut [u64], words_per_line: usize, order: &[u32], at: usize) {
    let n = order.len();
    mem[order[at % n] as usize * words_per_line] = u64::from(order[(at + 2) % n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(n: u64, start: u64, steps: u64) -> u64 {
        (0..steps).fold(0u64, |s, i| s.wrapping_add((start + i) % n))
    }

    #[test]
    fn the_closed_form_matches_a_brute_sum() {
        for n in [1, 2, 7, 64] {
            for start in [0, 1, n / 2, n - 1] {
                for steps in [0, 1, n - 1, n, n + 3, 5 * n + 1] {
                    assert_eq!(expected_sum(n, start, steps), brute(n, start, steps), "n {n} start {start} steps {steps}");
                }
            }
        }
        // Large enough to need 128-bit intermediates.
        let n = 1u64 << 32;
        assert_eq!(expected_sum(n, 0, n), ((u128::from(n) * u128::from(n - 1) / 2) as u64));
    }

    #[test]
    fn every_order_is_one_cycle_through_every_line() {
        for o in [Order::Stride(1), Order::Stride(16), Order::Stride(3), Order::Random(9)] {
            for n in [1usize, 2, 17, 1000] {
                let ord = order(n, o);
                let mut seen = ord.clone();
                seen.sort_unstable();
                assert_eq!(seen, (0..n as u32).collect::<Vec<_>>(), "{o:?} is a permutation");
                let mut mem = vec![0u64; n * 8];
                build(&mut mem, 8, &ord);
                let mut line = ord[0] as usize;
                let mut visited = vec![false; n];
                for k in 0..n {
                    assert!(!visited[line], "{o:?}: line {line} visited twice");
                    visited[line] = true;
                    assert_eq!(rank_of(&mem, 8, line), k as u64);
                    line = mem[line * 8] as usize;
                }
                assert_eq!(line, ord[0] as usize, "{o:?}: the cycle closes");
            }
        }
    }

    #[test]
    fn strided_and_sequential_orders_step_as_named() {
        assert_eq!(order(6, Order::Stride(1)), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(order(7, Order::Stride(3)), vec![0, 3, 6, 1, 4, 2, 5]);
        assert_ne!(order(1000, Order::Random(1)), order(1000, Order::Random(2)));
        assert_eq!(order(1000, Order::Random(1)), order(1000, Order::Random(1)));
    }

    #[test]
    fn walks_sum_to_the_closed_form_and_a_skipped_line_does_not() {
        let n = 257;
        let ord = order(n, Order::Random(5));
        let mut mem = vec![0u64; n * 8];
        build(&mut mem, 8, &ord);
        // Continue walks across calls, wrapping the cycle.
        let (mut line, mut rank) = (ord[0] as usize, 0u64);
        for steps in [1u64, 100, 256, 600] {
            let w = walk(&mem, 8, line, steps);
            assert_eq!(w.sum, expected_sum(n as u64, rank, steps));
            rank = (rank + steps) % n as u64;
            assert_eq!(rank_of(&mem, 8, w.end_line), rank);
            line = w.end_line;
        }
        skip_one(&mut mem, 8, &ord, 1);
        let w = walk(&mem, 8, ord[0] as usize, 10);
        assert_ne!(w.sum, expected_sum(n as u64, 0, 10));
        assert_ne!(rank_of(&mem, 8, w.end_line), 10);
    }
}
