//! The verdict of a row (and of each of its trials): ok, invalid, failed,
//! timeout or skipped, and why a skipped one was ([`SkipKind`]).

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

named_enum! {
    /// Why a row was skipped: its cell does not apply by design (the
    /// workload says so of the combination whatever the machine: a
    /// placement for a workload with one end), or this machine cannot run it
    /// (no SMT siblings, a refused syscall, too little memory).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum SkipKind {
        /// The combination of parameters does not apply, on any machine.
        ByDesign = "by-design",
        /// This machine (or its permissions, its filesystem) cannot run it.
        Machine = "machine",
    }
}
