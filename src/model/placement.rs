//! Where a cell's workers run: the pinning strategy asked for, how the
//! worker count relates to the CPUs, and the CPUs chosen (the strategies
//! themselves are computed in `topology::pin`).

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::names::named_enum;

named_enum! {
    /// Where a cell's workers run: which logical CPU worker i is pinned to,
    /// computed from the topology (see `topology::pin`). `ALL` lists the
    /// strategies in the order tables list them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
    pub enum PinStrategy {
        /// No pinning: the kernel's scheduler decides.
        None = "none",
        /// Worker i on the i-th allowed logical CPU.
        Linear = "linear",
        /// One logical CPU per physical core first, SMT siblings only after.
        AvoidSmt = "avoid-smt",
        /// Fill each core's SMT siblings before the next core.
        Compact = "compact",
        /// Spread over sockets and L3 domains, physical cores first.
        Scatter = "scatter",
        /// Stay inside one L3 domain while it has a free physical core.
        L3Isolate = "l3-isolate",
        /// One L3 domain's physical cores, then its SMT siblings, then the next domain.
        TieredSpillover = "tiered-spillover",
    }
}

named_enum! {
    /// How a worker count relates to the CPUs this process may use.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum CpuClass {
        /// No more workers than physical cores.
        Physical = "physical",
        /// More workers than physical cores, no more than logical CPUs: SMT
        /// siblings share cores.
        Smt = "smt",
        /// More workers than logical CPUs.
        Oversubscribed = "oversubscribed",
    }
}

/// Where a cell's workers run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub class: CpuClass,
    pub pin: PinStrategy,
    /// Logical CPU of worker i is `cpus[i % cpus.len()]`; `None`: not pinned.
    pub cpus: Option<Vec<usize>>,
    /// What the strategy degenerated to on this machine, if it could not be
    /// honoured as named.
    pub note: Option<String>,
}
