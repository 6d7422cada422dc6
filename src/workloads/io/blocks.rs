//! The 4 KiB blocks the io workloads write and check, and the aligned
//! buffers that hold them.
//!
//! Every block carries stamps that say where it belongs: its file offset in
//! the first 8 bytes, a tag (the file's key xor a generation number) in the
//! next 8 and the offset's complement in the last 8; the rest is a template
//! drawn from the cell's seed. A read of the wrong block, a short or torn
//! read, or a block left from an earlier generation fails the check.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use crate::workloads::cpu::mix64;

/// Size of one block (and of one random read).
pub const BLOCK: usize = 4096;

/// Alignment of every I/O buffer: enough for O_DIRECT on any device whose
/// logical block is at most 4 KiB.
pub const ALIGN: usize = 4096;

/// A zeroed heap buffer aligned to [`ALIGN`], for direct I/O and registered
/// io_uring buffers.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only read it, like &[u8].
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// `len` zeroed bytes (at least one block).
    pub fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len.max(BLOCK), ALIGN).expect("buffer size fits a Layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else { std::alloc::handle_alloc_error(layout) };
        AlignedBuf { ptr, layout }
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation holds `len` initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The stamps of a file: its key (from the cell's seed) and the template of
/// every block's unstamped bytes.
#[derive(Clone)]
pub struct Stamps {
    pub key: u64,
    template: Vec<u8>,
}

/// What a block carried when its check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The offset stamp at its start.
    pub offset: u64,
    /// Its tag (key xor generation).
    pub tag: u64,
    /// The bytes the read or write returned (a block is `BLOCK`).
    pub len: usize,
}

impl Stamps {
    pub fn new(seed: u64) -> Stamps {
        let key = mix64(seed ^ 0x10_B10C);
        let template = (0..BLOCK / 8).flat_map(|i| mix64(key.wrapping_add(i as u64)).to_le_bytes()).collect();
        Stamps { key, template }
    }

    /// The tag of generation `generation`.
    pub fn tag(&self, generation: u64) -> u64 {
        self.key ^ generation
    }

    /// Fills `buf` (whole blocks) as the blocks starting at file offset
    /// `offset`, of generation `generation`.
    pub fn fill(&self, buf: &mut [u8], offset: u64, generation: u64) {
        for (i, b) in buf.chunks_exact_mut(BLOCK).enumerate() {
            b.copy_from_slice(&self.template);
            self.stamp(b, offset + (i * BLOCK) as u64, generation);
        }
    }

    /// Writes the three stamps of one block in place (the template bytes are
    /// left as they are).
    #[inline]
    pub fn stamp(&self, block: &mut [u8], offset: u64, generation: u64) {
        block[..8].copy_from_slice(&offset.to_le_bytes());
        block[8..16].copy_from_slice(&self.tag(generation).to_le_bytes());
        block[BLOCK - 8..BLOCK].copy_from_slice(&(!offset).to_le_bytes());
    }

    /// Checks the stamps of one block read (`data` is what the read returned):
    /// `Err` with what it carried when it is short, of another offset, of
    /// another file or generation.
    #[inline]
    pub fn check_stamps(&self, data: &[u8], offset: u64, generation: u64) -> Result<(), Found> {
        let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
        if data.len() < BLOCK {
            let head = if data.len() >= 16 { (word(0), word(8)) } else { (0, 0) };
            return Err(Found { offset: head.0, tag: head.1, len: data.len() });
        }
        let (head, tag, tail) = (word(0), word(8), word(BLOCK - 8));
        if head == offset && tag == self.tag(generation) && tail == !offset {
            Ok(())
        } else {
            Err(Found { offset: head, tag, len: data.len() })
        }
    }

    /// Checks every byte of one block: the stamps and the template.
    pub fn check_block(&self, data: &[u8], offset: u64, generation: u64) -> Result<(), Found> {
        self.check_stamps(data, offset, generation)?;
        if data[16..BLOCK - 8] == self.template[16..BLOCK - 8] {
            Ok(())
        } else {
            Err(Found { offset, tag: self.tag(generation), len: data.len() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_at_least_a_block() {
        let mut b = AlignedBuf::new(10);
        assert_eq!(b.as_slice().len(), BLOCK);
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        assert!(b.as_slice().iter().all(|x| *x == 0));
        b.as_mut_slice()[5] = 1;
        assert_eq!(b.as_slice()[5], 1);
        assert_eq!(AlignedBuf::new(3 * BLOCK).as_slice().len(), 3 * BLOCK);
    }

    #[test]
    fn stamped_blocks_pass_and_wrong_short_or_stale_ones_fail() {
        let s = Stamps::new(7);
        let mut buf = vec![0u8; 4 * BLOCK];
        s.fill(&mut buf, 8 * BLOCK as u64, 3);
        let second = &buf[BLOCK..2 * BLOCK];
        let at = 9 * BLOCK as u64;
        assert_eq!(s.check_block(second, at, 3), Ok(()));
        assert_eq!(s.check_stamps(second, at, 3), Ok(()));
        // Another offset (the neighbouring block), another generation, a short read.
        assert_eq!(s.check_stamps(second, at + BLOCK as u64, 3).unwrap_err().offset, at);
        assert!(s.check_stamps(second, at, 4).is_err());
        assert_eq!(s.check_stamps(&second[..100], at, 3).unwrap_err().len, 100);
        // Another file's key.
        assert!(Stamps::new(8).check_stamps(second, at, 3).is_err());
        // A torn block: the head of one block, the tail of another.
        let mut torn = second.to_vec();
        torn[BLOCK - 8..].copy_from_slice(&buf[2 * BLOCK - 8 + BLOCK..3 * BLOCK]);
        assert!(s.check_stamps(&torn, at, 3).is_err());
        // A flipped byte in the middle passes the stamps but not the full check.
        let mut flipped = second.to_vec();
        flipped[2000] ^= 1;
        assert_eq!(s.check_stamps(&flipped, at, 3), Ok(()));
        assert!(s.check_block(&flipped, at, 3).is_err());
    }
}
