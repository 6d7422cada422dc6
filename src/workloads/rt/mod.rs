//! The `rt` group: how task runtimes scale (the RustFiber benchmarks), on the
//! `runtime` axis.

pub mod runtime;
