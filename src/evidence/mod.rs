//! evidence: the record types, their schema versions, and the results
//! directory. Nothing else in proofbench writes files of a run.

pub mod dir;
pub mod error;
#[cfg(test)]
pub(crate) mod fake;
pub mod profile;
pub mod read;
pub mod records;
pub mod trials;
pub mod worker;

pub use dir::{RunDir, check_not_running};
pub use error::EvidenceError;
pub use profile::{GuestProfile, PerfCounter, ProfileFile, ProfileFileKind, ProfileRecord, ProfileStatus};
pub use read::{StoredRun, read_run, read_run_or_id};
pub use records::*;
pub use trials::*;
pub use worker::*;
