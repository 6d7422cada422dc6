//! The `cpu` group: CPU-scaling workloads (capOS process-scale and
//! thread-scale).

pub mod barrier;
pub mod checksum;
pub mod dynamic;
pub mod primes;
pub mod service;

/// A 64-bit mixer (splitmix64's finaliser), used to build checksums in which
/// a missing, repeated or wrong element changes the sum.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
