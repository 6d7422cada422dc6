//! Build script: records how this binary was built, for the envelope's `tool` section.
//!
//! Emits `cargo::rustc-env` variables read by `envelope::tool_info()`:
//! PROOFBENCH_GIT_COMMIT, PROOFBENCH_GIT_DIRTY ("true"/"false"/"unknown"),
//! PROOFBENCH_BUILD_PROFILE, PROOFBENCH_TARGET, PROOFBENCH_TARGET_FEATURES (comma-separated)
//! and PROOFBENCH_RUSTC_VERSION. Anything it cannot find out is recorded as "unknown"; it
//! must never fail the build for want of git, and never write outside OUT_DIR.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const UNKNOWN: &str = "unknown";

/// Runs a command and returns its trimmed stdout when it succeeds.
fn output(program: &str, args: &[&str], dir: &Path) -> Option<String> {
    let out = Command::new(program).args(args).current_dir(dir).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn rerun_if_exists(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));

    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=RUSTC");
    // Once any rerun-if-changed is printed, cargo no longer reruns this script on every source
    // change; list what the dirty flag depends on so it stays current.
    for rel in ["src", "tests", "Cargo.toml", "Cargo.lock"] {
        rerun_if_exists(&manifest_dir.join(rel));
    }

    let git = |args: &[&str]| output("git", args, &manifest_dir);
    let commit = git(&["rev-parse", "HEAD"]).filter(|s| !s.is_empty());
    let dirty = match (&commit, git(&["status", "--porcelain"])) {
        (Some(_), Some(status)) => (!status.is_empty()).to_string(),
        _ => UNKNOWN.to_string(),
    };
    // In a worktree `.git` is a file; ask git where HEAD, the index and the branch ref live.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let git_dir = manifest_dir.join(git_dir);
        rerun_if_exists(&git_dir.join("HEAD"));
        rerun_if_exists(&git_dir.join("index"));
        if let (Some(common), Some(branch)) = (git(&["rev-parse", "--git-common-dir"]), git(&["symbolic-ref", "-q", "HEAD"])) {
            let common = manifest_dir.join(common);
            rerun_if_exists(&common.join(branch));
            rerun_if_exists(&common.join("packed-refs"));
        }
    }

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = output(&rustc, &["-V"], &manifest_dir).unwrap_or_else(|| UNKNOWN.into());
    let profile = env::var("PROFILE").unwrap_or_else(|_| UNKNOWN.into());
    let target = env::var("TARGET").unwrap_or_else(|_| UNKNOWN.into());
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();

    let vars = [
        ("PROOFBENCH_GIT_COMMIT", commit.unwrap_or_else(|| UNKNOWN.into())),
        ("PROOFBENCH_GIT_DIRTY", dirty),
        ("PROOFBENCH_BUILD_PROFILE", profile),
        ("PROOFBENCH_TARGET", target),
        ("PROOFBENCH_TARGET_FEATURES", features),
        ("PROOFBENCH_RUSTC_VERSION", rustc_version),
    ];
    for (key, value) in vars {
        // A value must stay on one line to be a single cargo instruction.
        let value = value.replace(['\n', '\r'], " ");
        println!("cargo::rustc-env={key}={value}");
    }
}
