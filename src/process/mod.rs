//! Child processes below every stage that starts one: bounded non-blocking
//! pipes ([`pipes`]), the stop signals a run, a bisect or a Slurm wait
//! obey ([`signals`]), and short helper commands whose answer is captured
//! within a time limit ([`helper`]). Knows no workload, record or run.

pub mod helper;
pub mod pipes;
pub mod signals;
