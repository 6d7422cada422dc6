//! measure: clocks, timer and loop overheads, kernel resource accounting and
//! CPU affinity. Small, dependency-free building blocks used by the worker and
//! the workloads; nothing here decides what to measure or writes files.

pub mod affinity;
pub mod clock;
pub mod counters;
pub mod interference;
pub mod interrupts;
pub mod isa;
pub mod lockstep;
pub mod rusage;
