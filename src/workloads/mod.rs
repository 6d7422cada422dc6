//! workloads: the registry and one folder per group, one file per workload.
//! The contract every workload follows is in `contract.rs`.

pub mod alloc;
pub mod command;
pub mod contract;
pub mod cpu;
pub mod hw;
pub mod io;
pub mod isa;
pub mod mismatch;
pub mod npb;
pub mod os;
pub mod process;
pub mod registry;
pub mod rt;
pub mod scratch;
pub mod selftest;
