//! proofbench: systems benchmarks on Linux, every result an evidence record.
//!
//! The crate is laid out as a pipeline (CONTRIBUTING.md, "Where things go"), one module per
//! stage: `cli` (flags) -> `commands` (one handler per subcommand) -> `plan`
//! -> `runner` (spawning `worker`s that run `workloads` with `measure`) ->
//! `evidence` -> `stats` -> `report`. `topology` and `envelope` describe the
//! machine; `model` is the vocabulary they all share and depends on none of
//! them. Stages point down only: `tests/cli/architecture.rs` fails on a
//! module cycle.

pub(crate) mod bisect;
pub(crate) mod claims;
pub mod cli;
pub mod commands;
pub(crate) mod compare;
pub(crate) mod envelope;
pub(crate) mod evidence;
pub(crate) mod fleet;
pub(crate) mod history;
pub(crate) mod measure;
pub(crate) mod model;
pub(crate) mod plan;
pub(crate) mod process;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod slurm;
pub(crate) mod stats;
pub mod testing;
pub(crate) mod text;
pub(crate) mod topology;
pub(crate) mod worker;
pub(crate) mod workloads;

/// The exit code for an error: 130 when a stop signal ended what was
/// asked before a run started, 2 when the user's input is at fault (a bad
/// flag value, an unknown workload, an unreadable or foreign run directory),
/// 1 otherwise.
pub(crate) fn exit_code_of(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<model::Stopped>() {
            // runner::EXIT_INTERRUPTED (128 + SIGINT), named here by value:
            // the crate root sits below runner.
            return 130;
        }
        if cause.is::<plan::PlanError>() || cause.is::<model::UsageError>() {
            return 2;
        }
        if let Some(e) = cause.downcast_ref::<evidence::EvidenceError>() {
            return if e.is_input_error() { 2 } else { 1 };
        }
    }
    1
}
