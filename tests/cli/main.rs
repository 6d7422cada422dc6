//! Integration tests: the proofbench binary end to end, one module per area.
//! Each test gets its own temporary directory and passes small parameters so
//! that the debug build finishes quickly; nothing here checks a speed.

mod alloc;
mod architecture;
mod bisect;
mod busy;
mod changes;
mod command;
mod common;
mod compare;
mod completions;
mod counters;
mod cpu_patterns;
mod daemons;
mod errors;
mod fleet;
mod history;
mod history_db;
mod html;
mod hw;
mod hygiene;
mod io;
mod launcher;
mod lifecycle;
mod lockstep;
mod npb_ep_cg;
mod npb_mg;
mod os_fs;
mod os_ipc;
mod perf_pass;
mod publish;
mod records;
mod records_reliability;
mod rt_tasks;
mod slurm;
mod ssh;
mod statuses;
mod subcommands;
mod terminal;
mod trials;
mod variants;
mod verifiers;
mod worker_io;
