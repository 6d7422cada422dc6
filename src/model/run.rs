//! Facts of a run that several stages share: the seed a run uses unless told
//! otherwise, and how a moment is written in the records.

use std::time::SystemTime;

/// The seed of a run unless `--seed` is given (fixed, so that runs repeat).
pub const DEFAULT_SEED: u64 = 0x5EED_2026;

/// UTC now as RFC 3339 with seconds.
pub fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// The current UTC time to the millisecond, `2026-01-01T00:00:00.123Z`: for
/// spans shorter than a few seconds (a run's rounds).
pub fn utc_now_millis() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
