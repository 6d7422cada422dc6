//! What the integration tests (`tests/cli`) read beyond the binary's output;
//! everything else is private to the crate, so that rustc reports dead code.

use std::path::Path;

/// The history database at `db`: SQLite's integrity check ("ok" when
/// sound) and the name of every run it holds.
pub fn history_check_and_run_names(db: &Path) -> anyhow::Result<(String, Vec<String>)> {
    let store = crate::history::Store::open_reader(db)?;
    Ok((store.integrity_check()?, store.runs()?.into_iter().map(|r| r.name).collect()))
}

/// The order in which a run with `seed` takes `cells` in round `round`.
pub fn round_order(cells: &[usize], seed: u64, round: u32) -> Vec<usize> {
    crate::runner::local::rounds::shuffled(cells, seed, round)
}

/// The 95% interval `(lo, hi)` of the ratio of `candidate`'s trial medians
/// to `base`'s, as `compare` and the scaling tables take it.
pub fn ratio_interval(base: &[f64], candidate: &[f64]) -> Option<(f64, f64)> {
    crate::stats::ratio(base, candidate, crate::stats::LEVEL).map(|r| (r.lo, r.hi))
}
