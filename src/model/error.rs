//! The error of a value the user gave that is wrong for a reason clap cannot
//! see. Every stage that checks what the user asked for returns it, and the
//! command layer maps it to exit code 2.

/// A flag value that is wrong for a reason clap cannot see (a directory that
/// does not exist...). Exit code 2; the message names the flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
