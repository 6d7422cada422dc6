//! evidence: the record types, their schema versions, and the results
//! directory. Nothing else in proofbench writes files of a run.

pub mod dir;
pub mod records;
pub mod trials;
pub mod worker;

pub use dir::{EvidenceError, RunDir, StoredRun, read_run};
pub use records::*;
pub use trials::*;
pub use worker::*;
