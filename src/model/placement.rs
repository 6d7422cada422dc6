//! Where a cell's workers run: the pinning strategy asked for, how the
//! worker count relates to the CPUs, and the CPUs chosen (the strategies
//! themselves are computed in `topology::pin`).

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// Where a cell's workers run: which logical CPU worker i is pinned to,
/// computed from the topology (see `topology::pin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PinStrategy {
    /// No pinning: the kernel's scheduler decides.
    None,
    /// Worker i on the i-th allowed logical CPU.
    Linear,
    /// One logical CPU per physical core first, SMT siblings only after.
    AvoidSmt,
    /// Fill each core's SMT siblings before the next core.
    Compact,
    /// Spread over sockets and L3 domains, physical cores first.
    Scatter,
    /// Stay inside one L3 domain while it has a free physical core.
    L3Isolate,
    /// One L3 domain's physical cores, then its SMT siblings, then the next domain.
    TieredSpillover,
}

impl PinStrategy {
    /// Every strategy, in the order tables list them.
    pub const ALL: [PinStrategy; 7] = [
        PinStrategy::None,
        PinStrategy::Linear,
        PinStrategy::AvoidSmt,
        PinStrategy::Compact,
        PinStrategy::Scatter,
        PinStrategy::L3Isolate,
        PinStrategy::TieredSpillover,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PinStrategy::None => "none",
            PinStrategy::Linear => "linear",
            PinStrategy::AvoidSmt => "avoid-smt",
            PinStrategy::Compact => "compact",
            PinStrategy::Scatter => "scatter",
            PinStrategy::L3Isolate => "l3-isolate",
            PinStrategy::TieredSpillover => "tiered-spillover",
        }
    }

    pub fn from_name(name: &str) -> Option<PinStrategy> {
        PinStrategy::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// How a worker count relates to the CPUs this process may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuClass {
    /// No more workers than physical cores.
    Physical,
    /// More workers than physical cores, no more than logical CPUs: SMT
    /// siblings share cores.
    Smt,
    /// More workers than logical CPUs.
    Oversubscribed,
}

impl CpuClass {
    pub fn as_str(self) -> &'static str {
        match self {
            CpuClass::Physical => "physical",
            CpuClass::Smt => "smt",
            CpuClass::Oversubscribed => "oversubscribed",
        }
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
