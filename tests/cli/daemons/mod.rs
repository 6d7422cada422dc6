//! Real daemons for the tests that need one: [`sshd::Sshd`] runs an OpenSSH
//! server per host alias, so that `--launcher "ssh ..."` and `--hosts` are
//! tested through a real ssh connection.
//!
//! A fixture that cannot start prints `skipped: <reason>` and gives `None`;
//! under `CI=true` (where .ci/run installs the daemons) it panics instead.

pub mod sshd;

/// Whether the tests run in CI (`CI=true`, as CI services set it), where a
/// daemon that cannot start is a failure, not a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The skip rule: under `CI=true` a panic naming `reason`; else `skipped:
/// <reason>` on stderr and `None`.
pub fn skip<T>(reason: &str) -> Option<T> {
    assert!(!in_ci(), "{reason} (CI=true: .ci/run installs what the fixture needs, and it runs as root)");
    eprintln!("skipped: {reason}");
    None
}
