//! The `npb` group: kernels of the NAS Parallel Benchmarks 3.4 (EP, CG, MG),
//! parallel on the `runtime` axis, verified against the official values.

pub mod cg;
pub mod ep;
pub mod mg;
pub mod randlc;
