//! The build-time record of this binary ([`ToolInfo`]), filled in by `build.rs`.
//!
//! Compile-time constants, and the one thing the binary finds out where it runs: the code paths
//! of its multiversioned kernels this CPU can take. This module must never run git or rustc
//! itself, so the record describes the binary that is running, not whatever checkout happens to
//! be nearby.

use serde::{Deserialize, Serialize};

use crate::model::isa::{CodePath, names};

/// How the running binary was built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Crate name ("proofbench").
    pub name: String,
    /// Crate version (CARGO_PKG_VERSION).
    pub version: String,
    /// `git rev-parse HEAD` at build time, or "unknown".
    pub git_commit: String,
    /// Whether `git status --porcelain` listed anything at build time; `None` when git could
    /// not tell.
    pub git_dirty: Option<bool>,
    /// Cargo profile: "release" or "debug".
    pub build_profile: String,
    /// Target triple, e.g. "x86_64-unknown-linux-gnu".
    pub target: String,
    /// Target features enabled at compile time (`cfg(target_feature)`), e.g. "sse2".
    pub target_features: Vec<String>,
    /// `rustc -V` of the compiler that built this binary, or "unknown".
    pub rustc_version: String,
    /// The code paths of the multiversioned kernels (npb.ep, npb.cg, npb.mg) this CPU can
    /// take, widest first: `isa=native` takes the first. Empty in records made before it was
    /// recorded.
    #[serde(default)]
    pub code_paths: Vec<CodePath>,
}

/// The build-time record of the running binary.
pub fn tool_info() -> ToolInfo {
    let dirty = match env!("PROOFBENCH_GIT_DIRTY") {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    };
    ToolInfo {
        name: env!("CARGO_PKG_NAME").to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("PROOFBENCH_GIT_COMMIT").to_string(),
        git_dirty: dirty,
        build_profile: env!("PROOFBENCH_BUILD_PROFILE").to_string(),
        target: env!("PROOFBENCH_TARGET").to_string(),
        target_features: env!("PROOFBENCH_TARGET_FEATURES").split(',').filter(|f| !f.is_empty()).map(str::to_string).collect(),
        rustc_version: env!("PROOFBENCH_RUSTC_VERSION").to_string(),
        code_paths: crate::measure::isa::available(),
    }
}

impl ToolInfo {
    /// "proofbench 0.1.0 (abc1234, release)", with "-dirty" after the commit when the tree
    /// had uncommitted changes.
    pub fn describe(&self) -> String {
        let commit = if self.git_commit == "unknown" { "commit unknown".to_string() } else { self.git_commit.chars().take(7).collect() };
        let dirty = match self.git_dirty {
            Some(true) => "-dirty",
            _ => "",
        };
        format!("{} {} ({commit}{dirty}, {})", self.name, self.version, self.build_profile)
    }

    /// "avx512f (isa=native), avx2, baseline": the kernels' code paths on this CPU, or
    /// `None` in a record made before they were recorded.
    pub fn describe_code_paths(&self) -> Option<String> {
        let (first, rest) = self.code_paths.split_first()?;
        Some(if rest.is_empty() { format!("{first} (isa=native)") } else { format!("{first} (isa=native), {}", names(rest)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_script_values_are_present() {
        let t = tool_info();
        assert_eq!(t.name, "proofbench");
        assert_eq!(t.version, env!("CARGO_PKG_VERSION"));
        assert!(t.build_profile == "debug" || t.build_profile == "release");
        assert!(t.target.contains("linux"), "{}", t.target);
        assert!(t.rustc_version.starts_with("rustc ") || t.rustc_version == "unknown");
        assert!(t.git_commit.len() == 40 || t.git_commit == "unknown");
        #[cfg(target_arch = "x86_64")]
        assert!(t.target_features.iter().any(|f| f == "sse2"));
        assert_eq!(t.code_paths.last(), Some(&CodePath::Baseline), "every CPU takes the baseline");
    }

    #[test]
    fn code_paths_are_described_widest_first_with_the_native_one_named() {
        let mut t = tool_info();
        t.code_paths = vec![CodePath::Avx512f, CodePath::Avx2, CodePath::Baseline];
        assert_eq!(t.describe_code_paths().as_deref(), Some("avx512f (isa=native), avx2, baseline"));
        t.code_paths = vec![CodePath::Baseline];
        assert_eq!(t.describe_code_paths().as_deref(), Some("baseline (isa=native)"));
        t.code_paths.clear();
        assert_eq!(t.describe_code_paths(), None);
    }

    #[test]
    fn describe_is_short() {
        let mut t = tool_info();
        t.git_commit = "abc1234def".into();
        t.git_dirty = Some(false);
        t.build_profile = "release".into();
        assert_eq!(t.describe(), format!("proofbench {} (abc1234, release)", t.version));
        t.git_dirty = Some(true);
        assert!(t.describe().contains("abc1234-dirty"));
    }
}
