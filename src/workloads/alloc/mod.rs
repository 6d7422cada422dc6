//! The `alloc` group: memory-allocator workloads (HAKMEM's random-mixed,
//! mimalloc-bench's Larson, cross-thread frees), each on the `allocator`
//! axis. Every block a workload allocates carries a pattern derived from its
//! id, checked before it is freed (`block`); every allocation and free goes
//! through one interface (`allocator`), so every allocator runs the same code.
//!
//! The blocks measured come only from the allocator under test; the
//! workloads' own bookkeeping (slot arrays, thread handles) is allocated
//! outside the timed windows or by Rust's allocator (the C library's malloc,
//! or the preloaded one under `preload:`), and the rows say so.

pub mod allocator;
pub mod block;
pub mod larson;
pub mod random_mixed;
pub mod xthread;

use serde_json::Value;

use crate::model::Cell;
use crate::workloads::contract::ParamSpec;

use block::Fill;

/// The `fill` parameter: how much of each block carries its pattern.
pub fn fill_param() -> ParamSpec {
    ParamSpec::choice_of(
        "fill",
        "how much of each block is written and checked: ends (its first and last 8-byte words, so that \
         every block is touched at both ends) or full (every byte)",
        [Fill::Ends; 3],
    )
}

/// The cell's `fill`.
pub fn fill_of(cell: &Cell) -> anyhow::Result<Fill> {
    cell.choice("fill")
}

/// The `min_size` and `max_size` parameters (block sizes drawn uniformly in
/// between, mimalloc-bench's Larson range by default).
pub fn size_range_params() -> [ParamSpec; 2] {
    [
        ParamSpec::int("min_size", "smallest block size in bytes (sizes are uniform in min_size..=max_size)", 1, 1 << 24, [8; 3]),
        ParamSpec::int("max_size", "largest block size in bytes", 1, 1 << 24, [1000; 3]),
    ]
}

/// The cell's size range `(min, max)`, checked.
pub fn size_range_of(cell: &Cell) -> anyhow::Result<(u32, u32)> {
    let (lo, hi) = (cell.u64("min_size")?, cell.u64("max_size")?);
    if lo > hi {
        anyhow::bail!("min_size = {lo} is larger than max_size = {hi}");
    }
    Ok((lo as u32, hi as u32))
}

/// A workload's `details` with its `fill` and its allocator's facts
/// ([`allocator::Resolved::info`]) added.
pub fn details(mut d: Value, fill: Fill, info: &Value) -> Value {
    if let Value::Object(d) = &mut d {
        d.insert("fill".into(), fill.as_str().into());
        if let Value::Object(i) = info {
            d.extend(i.clone());
        }
    }
    d
}
