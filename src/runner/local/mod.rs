//! runner::local: the plan measured on this machine. Rounds of trials
//! (`rounds`), each trial one fresh worker process, or one per variant
//! alive together in a lockstep set (`trial`, `spawn`), trials and rows
//! composed into records and flushed as each row is decided (`compose`),
//! and the check that an `--allocator preload:` library binds malloc
//! (`preload`).

pub mod compose;
pub mod preload;
pub mod rounds;
pub mod spawn;
pub mod trial;
