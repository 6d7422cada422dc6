//! proofbench: systems benchmarks on Linux, every result an evidence record.
//!
//! The crate is laid out as the pipeline of `ARCHITECTURE.md`: one module per
//! stage. `main.rs` wires them together.

pub mod envelope;
pub mod stats;
pub mod topology;
