//! Blocks and their patterns: what the `alloc` workloads write into every
//! block they allocate and check before they free it.
//!
//! A block's pattern is a function of its id (unique within a cell), so a
//! block that was overwritten, handed out twice, or swapped with another reads
//! back wrong. Word `k` of a block (bytes `8k..8k+8`, little-endian, the last
//! one cut at the block's end) holds `base ^ k * GOLDEN` with
//! `base = (salt ^ id) * ODD + 1` (mod 2^64): one multiplication, and a
//! bijection of the id, so two ids never share a base. With
//! [`Fill::Ends`] only the first and the last word are written and checked
//! (the first and last bytes included, as HAKMEM's benchmark touches them);
//! with [`Fill::Full`] every word is.

use std::ptr;

/// Multiplier that makes every word of a block differ.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Odd multiplier of the base word (odd: a bijection of the 64-bit id).
const ODD: u64 = 0xD6E8_FEB8_6659_FD93;

crate::model::named_enum! {
    /// How much of a block carries the pattern (the `fill` parameter).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Fill {
        /// The first and the last 8-byte word.
        Ends = "ends",
        /// Every byte.
        Full = "full",
    }
}

/// One live block: where it is, how big, and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub ptr: *mut u8,
    pub size: u32,
    pub id: u64,
}

// SAFETY: a block is owned memory from a thread-safe allocator; whichever
// thread holds the `Block` is the only one that touches or frees it.
unsafe impl Send for Block {}

impl Block {
    pub const EMPTY: Block = Block { ptr: ptr::null_mut(), size: 0, id: 0 };

    pub fn is_empty(&self) -> bool {
        self.ptr.is_null()
    }
}

/// The pattern's base word for block `id`: distinct for distinct ids (the
/// base is 0 for one id in 2^64 only, so a zeroed block fails its check).
#[inline(always)]
pub fn base(salt: u64, id: u64) -> u64 {
    (salt ^ id).wrapping_mul(ODD).wrapping_add(1)
}

#[inline(always)]
fn word(base: u64, k: usize) -> u64 {
    base ^ (k as u64).wrapping_mul(GOLDEN)
}

/// Writes word `k` of the pattern, cut to `len` (1..=8) bytes.
///
/// # Safety
/// `p + 8k .. p + 8k + len` is writable.
#[inline(always)]
unsafe fn put(p: *mut u8, base: u64, k: usize, len: usize) {
    let bytes = word(base, k).to_le_bytes();
    // SAFETY: by the caller; the source is a local array of 8 >= len bytes.
    unsafe {
        if len == 8 {
            ptr::write_unaligned(p.add(8 * k).cast::<[u8; 8]>(), bytes);
        } else {
            ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(8 * k), len);
        }
    }
}

/// Whether word `k` (cut to `len` bytes) reads back as written.
///
/// # Safety
/// `p + 8k .. p + 8k + len` is readable.
#[inline(always)]
unsafe fn same(p: *const u8, base: u64, k: usize, len: usize) -> bool {
    let bytes = word(base, k).to_le_bytes();
    // SAFETY: by the caller.
    unsafe {
        if len == 8 {
            ptr::read_unaligned(p.add(8 * k).cast::<[u8; 8]>()) == bytes
        } else {
            std::slice::from_raw_parts(p.add(8 * k), len) == &bytes[..len]
        }
    }
}

/// Writes the pattern of a block of `size` (>= 1) bytes with base `base`.
///
/// # Safety
/// `p .. p + size` is writable.
#[inline(always)]
pub unsafe fn write(p: *mut u8, size: usize, base: u64, fill: Fill) {
    let (words, rem) = (size / 8, size % 8);
    let last = if rem > 0 { words } else { words - 1 };
    let last_len = if rem > 0 { rem } else { 8 };
    // SAFETY: every word written lies inside the block.
    unsafe {
        match fill {
            Fill::Ends => {
                if last > 0 {
                    put(p, base, 0, 8);
                }
                put(p, base, last, last_len);
            }
            Fill::Full => {
                for k in 0..last {
                    put(p, base, k, 8);
                }
                put(p, base, last, last_len);
            }
        }
    }
}

/// Whether a block's pattern reads back intact (the words [`write()`] wrote).
///
/// # Safety
/// `p .. p + size` is readable.
#[inline(always)]
pub unsafe fn check(p: *const u8, size: usize, base: u64, fill: Fill) -> bool {
    let (words, rem) = (size / 8, size % 8);
    let last = if rem > 0 { words } else { words - 1 };
    let last_len = if rem > 0 { rem } else { 8 };
    // SAFETY: every word read lies inside the block.
    unsafe {
        match fill {
            Fill::Ends => (last == 0 || same(p, base, 0, 8)) & same(p, base, last, last_len),
            Fill::Full => {
                let mut ok = same(p, base, last, last_len);
                for k in 0..last {
                    ok &= same(p, base, k, 8);
                }
                ok
            }
        }
    }
}

/// What the checks of one thread or one sample found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub mallocs: u64,
    pub frees: u64,
    /// Blocks whose pattern read back wrong before their free.
    pub damaged: u64,
    /// The first damaged block: its id and size.
    pub first_damaged: Option<(u64, u32)>,
}

impl Tally {
    /// Records the check of block `b`.
    #[inline]
    pub fn checked(&mut self, b: &Block, ok: bool) {
        if !ok {
            self.damaged += 1;
            if self.first_damaged.is_none() {
                self.first_damaged = Some((b.id, b.size));
            }
        }
    }

    pub fn add(&mut self, o: &Tally) {
        self.mallocs += o.mallocs;
        self.frees += o.frees;
        self.damaged += o.damaged;
        self.first_damaged = self.first_damaged.or(o.first_damaged);
    }

    /// `N damaged (first: id 0x.., 256 B)` or `0 damaged`.
    pub fn damaged_text(&self) -> String {
        match self.first_damaged {
            Some((id, size)) => format!("{} damaged (first: block {id:#x}, {size} B)", self.damaged),
            None => format!("{} damaged", self.damaged),
        }
    }
}

/// A uniform draw in `0..n` from a 64-bit random word (multiply-shift: no
/// division; the bias is below n / 2^64).
#[inline]
pub fn below(r: u64, n: u64) -> u64 {
    ((u128::from(r) * u128::from(n)) >> 64) as u64
}

/// Damages a block on purpose (the `corrupt-block` fault): flips its first byte.
///
/// # Safety
/// `b` is a live block.
pub unsafe fn corrupt(b: &Block) {
    // SAFETY: the first byte of a live block of at least 1 byte.
    unsafe { *b.ptr ^= 0xFF };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::cpu::mix64;

    fn buf(size: usize) -> Vec<u8> {
        vec![0u8; size]
    }

    #[test]
    fn patterns_read_back_for_every_size_and_fill() {
        for fill in [Fill::Ends, Fill::Full] {
            for size in [1usize, 7, 8, 9, 15, 16, 17, 255, 256, 1000] {
                let mut b = buf(size);
                // SAFETY: the buffer holds `size` bytes.
                unsafe {
                    write(b.as_mut_ptr(), size, base(1, 42), fill);
                    assert!(check(b.as_ptr(), size, base(1, 42), fill), "{fill:?} {size}");
                    assert!(!check(b.as_ptr(), size, base(1, 43), fill), "another id fails: {fill:?} {size}");
                }
            }
        }
    }

    #[test]
    fn the_first_and_last_bytes_are_always_covered() {
        for fill in [Fill::Ends, Fill::Full] {
            for size in [1usize, 9, 16, 17, 256, 1000] {
                for pos in [0, size - 1] {
                    let mut b = buf(size);
                    // SAFETY: the buffer holds `size` bytes.
                    unsafe {
                        write(b.as_mut_ptr(), size, base(3, 7), fill);
                        b[pos] ^= 1;
                        assert!(!check(b.as_ptr(), size, base(3, 7), fill), "{fill:?} {size}: byte {pos}");
                    }
                }
            }
        }
    }

    #[test]
    fn full_fill_covers_the_middle_and_ends_does_not_write_it() {
        let size = 256;
        let mut b = buf(size);
        // SAFETY: the buffer holds `size` bytes.
        unsafe {
            write(b.as_mut_ptr(), size, base(5, 1), Fill::Ends);
            assert!(b[8..248].iter().all(|&x| x == 0), "ends writes two words only");
            write(b.as_mut_ptr(), size, base(5, 1), Fill::Full);
            b[100] ^= 0x10;
            assert!(check(b.as_ptr(), size, base(5, 1), Fill::Ends));
            assert!(!check(b.as_ptr(), size, base(5, 1), Fill::Full));
        }
    }

    #[test]
    fn distinct_ids_have_distinct_bases() {
        let mut seen: Vec<u64> = (0..10_000u64).map(|id| base(77, id)).chain((0..10_000u64).map(|id| base(77, id << 40))).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 19_999, "id 0 appears in both ranges");
        assert!(seen.iter().all(|&b| b != 0));
    }

    #[test]
    fn a_corrupted_block_fails_its_check_and_is_tallied() {
        let mut b = buf(64);
        let blk = Block { ptr: b.as_mut_ptr(), size: 64, id: 9 };
        let mut t = Tally::default();
        // SAFETY: the buffer is the block's 64 bytes.
        unsafe {
            write(blk.ptr, 64, base(0, 9), Fill::Ends);
            corrupt(&blk);
            t.checked(&blk, check(blk.ptr, 64, base(0, 9), Fill::Ends));
        }
        assert_eq!(t.damaged, 1);
        assert_eq!(t.damaged_text(), "1 damaged (first: block 0x9, 64 B)");
    }

    #[test]
    fn draws_below_n_stay_in_range_and_spread() {
        assert_eq!(below(u64::MAX, 10), 9);
        assert_eq!(below(0, 10), 0);
        let mut seen = [0u32; 4];
        for i in 0..4000u64 {
            seen[below(mix64(i), 4) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
