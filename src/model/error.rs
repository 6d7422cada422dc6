//! The error of a value the user gave that is wrong for a reason clap cannot
//! see. Every stage that checks what the user asked for returns it, and the
//! command layer maps it to exit code 2. And the error of a step that a
//! stop signal ended before a run started (exit code 130).

/// A flag value that is wrong for a reason clap cannot see (a directory that
/// does not exist...). Exit code 2; the message names the flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A step that a stop signal (Ctrl-C, SIGTERM) ended before the run
/// started, such as the launcher's probe: exit code 130, as an interrupted
/// run's. The message says what was stopped.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Stopped(pub String);
