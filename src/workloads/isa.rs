//! The `isa` parameter of the multiversioned kernels (npb.ep, npb.cg,
//! npb.mg): which code path ([`crate::measure::isa`]) a row's kernel takes,
//! and how its details name it.

use crate::measure::isa::Path;
use crate::model::Cell;
use crate::model::isa::{DETAIL, IsaChoice, PARAM};
use crate::workloads::contract::ParamSpec;

/// The `isa` parameter: `native` (the widest path this CPU has) in every
/// profile; `-p isa=baseline,native` (or `--isa`) sweeps paths as an axis.
pub fn param() -> ParamSpec {
    ParamSpec::choice_of(
        PARAM,
        "code path of the kernel: native (the widest this CPU has: avx512f, avx2, else baseline) or one pinned; \
         a path the CPU lacks skips the row",
        [IsaChoice::Native; 3],
    )
}

/// The path the cell's `isa` asks for, or why this CPU cannot take it (the
/// reason of a skipped row).
pub fn path(cell: &Cell) -> anyhow::Result<Result<Path, String>> {
    Ok(Path::choose(cell.choice::<IsaChoice>(PARAM)?))
}

/// `details` (a JSON object) with the entry naming the path the kernel took.
pub fn with_path(mut details: serde_json::Value, path: Path) -> serde_json::Value {
    if let Some(map) = details.as_object_mut() {
        map.insert(DETAIL.to_string(), path.code_path().as_str().into());
    }
    details
}
