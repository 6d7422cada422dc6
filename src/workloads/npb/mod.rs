//! The `npb` group: kernels of the NAS Parallel Benchmarks 3.4 (EP, CG, MG),
//! parallel on the `runtime` axis, verified against the official values.

pub mod cg;
pub mod ep;
pub mod mg;
pub mod randlc;

use crate::model::named_enum;
use crate::workloads::contract::ParamSpec;

named_enum! {
    /// The NPB problem classes the kernels run (each kernel's table gives
    /// their sizes and verification values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ClassName {
        S = "S",
        W = "W",
        A = "A",
    }
}

/// The `class` parameter: S in the quick profile, W in full, A in seed.
pub fn class_param(help: &'static str) -> ParamSpec {
    ParamSpec::choice_of("class", help, [ClassName::S, ClassName::W, ClassName::A])
}
