//! The errors of reading and writing run directories, each naming its file
//! once, and whether each is the user's input (exit code 2) or a failure of
//! the machine (exit code 1).

use std::io;
use std::path::{Path, PathBuf};

/// Errors reading or writing a results directory.
///
/// The I/O error is part of the message, not a `source`: printed with its
/// causes, an error names its path and the system's reason once.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    /// `flag` is the option that named the path, where one did (`--out`).
    #[error("{}{}: {error}", flag.map(|f| format!("{f} ")).unwrap_or_default(), path.display())]
    Io { path: PathBuf, error: io::Error, flag: Option<&'static str> },
    #[error("{path} is in use by another proofbench run{pid}; wait for it or choose another --run-dir", pid = pid_text(*pid))]
    Locked { path: PathBuf, pid: Option<u32> },
    #[error("{path}: the run is still running{pid}; import it once it has ended (a run records itself in its history database when it ends)", pid = pid_text(*pid))]
    Running { path: PathBuf, pid: Option<u32> },
    #[error("{path} already holds a run; choose another --run-dir")]
    HasRun { path: PathBuf },
    #[error("{path} is not a proofbench run directory (no run.json); pass a directory written by 'proofbench run'")]
    NotARunDir { path: PathBuf },
    #[error("{path}{line}: {why}", line = line_text(*line))]
    Parse { path: PathBuf, line: Option<usize>, why: String },
    #[error("{path}{line}: record schema {found} is newer than this proofbench reads ({supported}); use a newer proofbench", line = line_text(*line))]
    NewerSchema { path: PathBuf, line: Option<usize>, found: String, supported: String },
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
}

fn line_text(line: Option<usize>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}

impl EvidenceError {
    pub(crate) fn io(path: &Path, error: io::Error) -> EvidenceError {
        EvidenceError::Io { path: path.to_path_buf(), error, flag: None }
    }

    /// The error of a path the user gave with `flag` (`--out`, `--html`):
    /// the message starts with the flag. A thing at `path` that is not a
    /// directory where one was to be made says so.
    pub fn for_flag(self, flag: &'static str) -> EvidenceError {
        match self {
            EvidenceError::Io { path, error, .. } => {
                let not_a_dir = matches!(error.raw_os_error(), Some(libc::EEXIST | libc::ENOTDIR))
                    && std::fs::metadata(&path).is_ok_and(|m| !m.is_dir());
                let error = if not_a_dir { io::Error::from_raw_os_error(libc::ENOTDIR) } else { error };
                EvidenceError::Io { path, error, flag: Some(flag) }
            }
            other => other,
        }
    }

    /// Whether the error is in what the user gave (exit code 2) rather than
    /// a failure of the machine (a full disk, an I/O error: exit code 1).
    pub fn is_input_error(&self) -> bool {
        match self {
            EvidenceError::Io { error, .. } => is_input_io(error),
            _ => true,
        }
    }
}

/// Whether an I/O error comes from the path given (missing, not a
/// directory, not permitted, a read-only filesystem, not UTF-8) rather than
/// from the machine (no space, quota, I/O error, out of memory or files).
pub fn is_input_io(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::InvalidData {
        return true;
    }
    matches!(
        e.raw_os_error(),
        Some(
            libc::ENOENT
                | libc::ENOTDIR
                | libc::EISDIR
                | libc::EEXIST
                | libc::EACCES
                | libc::EPERM
                | libc::EROFS
                | libc::ENAMETOOLONG
                | libc::ELOOP
                | libc::ENXIO
                | libc::ENODEV
                | libc::ETXTBSY
                | libc::EINVAL
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_names_its_path_and_reason_once_and_is_classified_by_errno() {
        let full = EvidenceError::io(Path::new("/x/rows.jsonl"), io::Error::from_raw_os_error(libc::ENOSPC));
        let text = format!("{:#}", anyhow::Error::from(full));
        assert_eq!(text, "/x/rows.jsonl: No space left on device (os error 28)");
        let e = EvidenceError::io(Path::new("/dev/full"), io::Error::from_raw_os_error(libc::ENOSPC)).for_flag("--html");
        assert_eq!(e.to_string(), "--html /dev/full: No space left on device (os error 28)");
        assert!(!e.is_input_error(), "a full disk is the machine's failure");
        let e = EvidenceError::io(Path::new("/proc/foo"), io::Error::from_raw_os_error(libc::ENOENT)).for_flag("--out");
        assert!(e.is_input_error());
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let e = EvidenceError::io(tmp.path(), io::Error::from_raw_os_error(libc::EEXIST)).for_flag("--out");
        assert_eq!(e.to_string(), format!("--out {}: Not a directory (os error 20)", tmp.path().display()));
        assert!(e.is_input_error());
    }
}
