//! The check, before anything runs, of what the workers will have in
//! `LD_PRELOAD`. Two settings put a library there: an allocator
//! (`--allocator preload:LIB`, a variant's `preload=LIB`), which must load
//! and replace `malloc`, or else the run would measure the C library's
//! allocator under the library's name; and a variant's `env=LD_PRELOAD=...`
//! (one library or several, for any purpose), which must load. Both are
//! tried the same way, where the workers will run: `proofbench
//! malloc-provider` (a hidden subcommand that prints the object `malloc` is
//! bound to) with the value in `LD_PRELOAD`, by the process that runs the
//! plan (on the launched side of a launched run). The loader only
//! warns when it cannot preload a library, and some allocators cannot be
//! opened with dlopen at all (initial-exec TLS), so a child process is the
//! faithful test.

use std::path::Path;

use crate::workloads::alloc::allocator::same_library;

use crate::process::helper::{self, HELPER_TIMEOUT};
use crate::runner::local::spawn::{self, Invocation};

/// What a preloaded value must do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Need {
    /// Load (`env=LD_PRELOAD=...`).
    Load,
    /// Load and replace `malloc` (an allocator: one library).
    Malloc,
}

/// The libraries of an `LD_PRELOAD` value, which the loader separates by
/// spaces and colons.
fn libraries(value: &str) -> Vec<&str> {
    value.split([' ', ':']).filter(|l| !l.is_empty()).collect()
}

/// Checks that `value`, in the workers' `LD_PRELOAD`, does what `need`
/// asks, with the binary `exe` of the workers. The error says why not, for
/// a message that names the setting.
pub fn check(exe: &Path, value: &str, need: Need) -> Result<(), String> {
    let libs = libraries(value);
    if need == Need::Malloc && (libs.len() != 1 || libs[0] != value) {
        return Err("LD_PRELOAD separates libraries by spaces and colons: the path may contain neither".into());
    }
    if libs.is_empty() {
        return Ok(());
    }
    if let Some(lib) = libs.iter().find(|l| l.contains('/') && !Path::new(l).is_file()) {
        return Err(format!("{lib} does not exist (or is not a file)"));
    }
    let how = Invocation::preload(Some(value));
    let command = spawn::local(exe, &how, &["malloc-provider"]);
    let out = match helper::capture(command, HELPER_TIMEOUT) {
        Ok(Some(out)) => out,
        Ok(None) => return Err(format!("the check gave no answer within {} s", HELPER_TIMEOUT.as_secs())),
        Err(e) => return Err(format!("cannot start {} to try it: {e}", exe.display())),
    };
    if let Some(l) = out.stderr.lines().find(|l| l.contains("LD_PRELOAD") || l.contains("ld.so")) {
        return Err(format!("it does not load: {}", l.trim()));
    }
    if out.code != Some(0) {
        return Err(format!("a process with it preloaded failed: {}", out.last_error_line()));
    }
    let provider = out.stdout.trim();
    if need == Need::Load || provider == value || same_library(provider, value) {
        Ok(())
    } else {
        Err(format!(
            "it loads, but malloc stays bound to {}: it does not define malloc, so preloading it would not replace the allocator \
             (to preload a library that is not an allocator, use a variant's env=LD_PRELOAD=...)",
            if provider.is_empty() { "(unknown)" } else { provider }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_that_is_missing_or_unusable_is_refused_before_any_process_starts() {
        let exe = Path::new("/nonexistent/proofbench");
        for need in [Need::Load, Need::Malloc] {
            let e = check(exe, "/nonexistent/libnothing.so", need).unwrap_err();
            assert_eq!(e, "/nonexistent/libnothing.so does not exist (or is not a file)");
            let e = check(exe, "libc.so.6", need).unwrap_err();
            assert!(e.contains("cannot start"), "{e}");
        }
        let e = check(exe, "/tmp/a b.so", Need::Malloc).unwrap_err();
        assert!(e.contains("spaces and colons"), "{e}");
        let e = check(exe, "libm.so.6 /nonexistent/libnothing.so", Need::Load).unwrap_err();
        assert!(e.starts_with("/nonexistent/libnothing.so does not exist"), "every library of a list is checked: {e}");
        assert_eq!(check(exe, " : ", Need::Load), Ok(()), "an empty list preloads nothing");
    }

    #[test]
    fn an_ld_preload_value_is_split_as_the_loader_splits_it() {
        assert_eq!(libraries("/a.so /b.so:libc.so.6  "), ["/a.so", "/b.so", "libc.so.6"]);
        assert!(libraries("").is_empty());
    }
}
