//! The verdict of a row (and of each of its trials): ok, invalid, failed,
//! timeout or skipped.

use super::names::named_enum;

named_enum! {
    /// The verdict of a row.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Status {
        /// Ran and verified: a performance result.
        Ok = "ok",
        /// Ran, but the verifier failed: never in a performance table.
        Invalid = "invalid",
        /// Crashed or returned an error (exit code or signal recorded).
        Failed = "failed",
        /// Killed after the per-cell timeout.
        Timeout = "timeout",
        /// Not possible on this machine; the reason says why.
        Skipped = "skipped",
    }
}

impl Status {}
