//! The `rt` group: how task runtimes scale (the RustFiber benchmarks), on the
//! `runtime` axis.

pub mod common;
pub mod fib;
pub mod parallel_for;
pub mod prodcons;
pub mod quicksort;
pub mod runtime;
pub mod startup;
pub mod task_alloc;
