//! The NAS Parallel Benchmarks' pseudorandom number generator (NPB 3.4
//! `randlc` and `vranlc`): the linear congruential generator
//! x(k+1) = a * x(k) mod 2^46, computed exactly in double precision by
//! splitting the operands into 23-bit halves, as the reference code does. The
//! kernels' official verification values depend on every bit of it.

const R23: f64 = 1.0 / 8_388_608.0; // 2^-23
const T23: f64 = 8_388_608.0; // 2^23
const R46: f64 = R23 * R23;
const T46: f64 = T23 * T23;

/// The multiplier of every NPB kernel: 5^13.
pub const A: f64 = 1_220_703_125.0;

/// Advances `x` to `a * x mod 2^46` and returns the new `x` scaled to (0, 1).
/// `x` and `a` are integers below 2^46 held in doubles.
#[inline(always)]
pub fn randlc(x: &mut f64, a: f64) -> f64 {
    let t1 = R23 * a;
    let a1 = t1.trunc();
    let a2 = a - T23 * a1;
    let t1 = R23 * *x;
    let x1 = t1.trunc();
    let x2 = *x - T23 * x1;
    let t1 = a1 * x2 + a2 * x1;
    let t2 = (R23 * t1).trunc();
    let z = t1 - T23 * t2;
    let t3 = T23 * z + a2 * x2;
    let t4 = (R46 * t3).trunc();
    *x = t3 - T46 * t4;
    R46 * *x
}

/// Fills `y` with the next `y.len()` numbers of the sequence (`randlc`
/// repeated), leaving `x` at the last one.
#[inline(always)]
pub fn vranlc(x: &mut f64, a: f64, y: &mut [f64]) {
    for v in y.iter_mut() {
        *v = randlc(x, a);
    }
}

/// `a^n mod 2^46` by repeated squaring with `randlc` (how the kernels jump
/// ahead in the sequence, e.g. to give each parallel chunk its own start).
pub fn power(a: f64, mut n: u64) -> f64 {
    let mut result = 1.0;
    let mut q = a;
    while n > 0 {
        if n & 1 == 1 {
            randlc(&mut result, q);
        }
        let qq = q;
        randlc(&mut q, qq);
        n >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same generator in exact integer arithmetic.
    fn exact(x: u64, a: u64) -> u64 {
        ((x as u128 * a as u128) % (1u128 << 46)) as u64
    }

    #[test]
    fn randlc_is_the_exact_lcg_mod_2_pow_46() {
        let mut x = 314_159_265.0;
        let mut xi = 314_159_265u64;
        for _ in 0..100_000 {
            let r = randlc(&mut x, A);
            xi = exact(xi, 1_220_703_125);
            assert_eq!(x, xi as f64);
            assert_eq!(r, xi as f64 / (1u64 << 46) as f64);
        }
    }

    #[test]
    fn vranlc_and_power_agree_with_stepping() {
        let mut x = 271_828_183.0;
        let mut y = vec![0.0; 1000];
        vranlc(&mut x, A, &mut y);
        let mut x2 = 271_828_183.0;
        for v in &y {
            assert_eq!(*v, randlc(&mut x2, A));
        }
        // Jumping 1000 steps ahead with power(A, 1000) lands on the same x.
        let mut x3 = 271_828_183.0;
        randlc(&mut x3, power(A, 1000));
        assert_eq!(x3, x);
        assert_eq!(power(A, 0), 1.0);
        assert_eq!(power(A, 1), A);
    }
}
