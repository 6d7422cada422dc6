//! The verdict of a row (and of each of its trials): ok, invalid, failed,
//! timeout or skipped.

use serde::{Deserialize, Serialize};

/// The verdict of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran and verified: a performance result.
    Ok,
    /// Ran, but the verifier failed: never in a performance table.
    Invalid,
    /// Crashed or returned an error (exit code or signal recorded).
    Failed,
    /// Killed after the per-cell timeout.
    Timeout,
    /// Not possible on this machine; the reason says why.
    Skipped,
}

impl Status {
    pub const ALL: [Status; 5] = [Status::Ok, Status::Invalid, Status::Failed, Status::Timeout, Status::Skipped];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Invalid => "invalid",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Skipped => "skipped",
        }
    }

    /// Whether this status makes `run` exit with 1.
    pub fn is_failure(self) -> bool {
        matches!(self, Status::Invalid | Status::Failed | Status::Timeout)
    }
}
