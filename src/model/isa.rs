//! Code paths: the instruction sets a compute kernel is compiled for, one
//! of which each row's kernel takes at run time (`measure::isa` detects
//! them and dispatches), and the `isa` parameter that pins one.

use super::named_enum;

named_enum! {
    /// A code path of the multiversioned kernels, from the widest.
    /// `avx512f` is x86-64-v4 (AVX-512 F, BW, CD, DQ and VL, with
    /// everything of v3); `avx2` is x86-64-v3 (AVX2, FMA, BMI1/2, LZCNT,
    /// MOVBE, F16C); `baseline` is what the build targets (x86-64's SSE2,
    /// or another architecture's own baseline).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum CodePath {
        Avx512f = "avx512f",
        Avx2 = "avx2",
        Baseline = "baseline",
    }
}

named_enum! {
    /// The `isa` parameter: the widest path this CPU has (`native`), or one
    /// path pinned.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum IsaChoice {
        Native = "native",
        Baseline = "baseline",
        Avx2 = "avx2",
        Avx512f = "avx512f",
    }
}

impl IsaChoice {
    /// The path pinned, `None` for `native`.
    pub fn pinned(self) -> Option<CodePath> {
        match self {
            IsaChoice::Native => None,
            IsaChoice::Baseline => Some(CodePath::Baseline),
            IsaChoice::Avx2 => Some(CodePath::Avx2),
            IsaChoice::Avx512f => Some(CodePath::Avx512f),
        }
    }
}

/// Paths' names joined with commas: `avx2, baseline`.
pub fn names(paths: &[CodePath]) -> String {
    paths.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
}

/// The name of the parameter that picks a multiversioned kernel's path.
pub const PARAM: &str = "isa";

/// The key of a row's details that names the path its kernel took.
pub const DETAIL: &str = "code_path";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Named;

    #[test]
    fn every_choice_but_native_pins_the_path_of_its_name() {
        for c in IsaChoice::ALL {
            match c.pinned() {
                None => assert_eq!(c, IsaChoice::Native),
                Some(p) => assert_eq!(p.name(), c.name()),
            }
        }
    }
}
