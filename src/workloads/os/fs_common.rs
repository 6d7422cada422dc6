//! Helpers shared by the workloads of the `os` group: the private directory of a workload instance, refusals by the
//! kernel turned into skipped rows, and deterministic file contents.

use std::io;
use std::path::{Path, PathBuf};

use crate::workloads::contract::Prepared;
use crate::workloads::cpu::mix64;

/// Whether the kernel refused an operation outright (a sandbox, a read-only
/// or foreign filesystem, a syscall filtered away): the row is then skipped,
/// not failed.
pub fn refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES | libc::ENOSYS | libc::EROFS))
}

/// `Prepared::Skip` when the kernel refused `what`, the error otherwise.
pub fn skip_or_fail(what: &str, e: io::Error) -> anyhow::Result<Prepared> {
    if refused(&e) {
        Ok(Prepared::Skip(format!("{what} is not permitted here: {e}")))
    } else {
        Err(anyhow::Error::new(e).context(format!("{what} failed")))
    }
}

/// Creates `<scratch>/<name>`, the private directory of one workload
/// instance, and returns its path.
pub fn instance_dir(scratch: &Path, name: &str) -> io::Result<PathBuf> {
    let d = scratch.join(name);
    std::fs::create_dir(&d)?;
    Ok(d)
}

/// `bytes` bytes of content for file `index`, a function of the cell's seed:
/// two files (or two seeds) differ in almost every byte.
pub fn content(seed: u64, index: u64, bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 8);
    let mut k = 0u64;
    while out.len() < bytes {
        out.extend_from_slice(&mix64(seed ^ index.rotate_left(24) ^ k.wrapping_mul(0x9E37_79B9)).to_le_bytes());
        k += 1;
    }
    out.truncate(bytes);
    out
}

/// For a path on ext4, whether that filesystem has a journal (its
/// `/sys/fs/ext4/<device>/journal_task` reads `<none>` without one); `None`
/// on other filesystems or when sysfs does not say. Without a journal ext4
/// will not reuse an inode freed in the last 5 s (300 s while its inode-table
/// block is dirty), so creating files after many deletions costs more.
pub fn ext4_journal(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let want = format!("{}:{}", libc::major(dev), libc::minor(dev));
    for e in std::fs::read_dir("/sys/fs/ext4").ok()?.flatten() {
        let block = Path::new("/sys/class/block").join(e.file_name()).join("dev");
        if std::fs::read_to_string(block).is_ok_and(|d| d.trim() == want) {
            let task = std::fs::read_to_string(e.path().join("journal_task")).ok()?;
            return Some(task.trim() != "<none>");
        }
    }
    None
}

/// The number of entries of a directory (`.` and `..` not counted).
pub fn entry_count(dir: &Path) -> io::Result<usize> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        e?;
        n += 1;
    }
    Ok(n)
}

/// A cell of `workload` with `params`, an optional fault, and `scratch` as its
/// scratch directory, for unit tests that call `prepare`.
#[cfg(test)]
pub fn test_cell(workload: &str, params: serde_json::Value, fault: Option<&str>, scratch: &Path) -> crate::model::Cell {
    use crate::model::placement::{CpuClass, Placement};
    use crate::model::{CELL_SCHEMA, MeasureSpec};
    use crate::model::{PinStrategy, Profile};
    let params = params.as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
    crate::model::Cell {
        schema: CELL_SCHEMA.into(),
        index: 0,
        row_id: format!("000-{workload}"),
        workload: workload.into(),
        group: "os".into(),
        label: "test".into(),
        profile: Profile::Quick,
        params,
        axes: vec![],
        treatments: None,
        workers: None,
        placement: Placement { class: CpuClass::Physical, pin: PinStrategy::None, cpus: None, note: None },
        measure: MeasureSpec::for_profile(Profile::Quick),
        seed: 42,
        fault: fault.map(String::from),
        scratch_dir: Some(scratch.display().to_string()),
        command: None,
        variant: None,
    }
}

/// The instance a `prepare` returned, or a panic naming why there is none.
#[cfg(test)]
pub fn ready(p: anyhow::Result<Prepared>) -> Box<dyn crate::workloads::contract::Sampler> {
    match p {
        Ok(Prepared::Ready(i)) => i,
        Ok(Prepared::Skip(why) | Prepared::NotApplicable(why)) => panic!("skipped: {why}"),
        Err(e) => panic!("prepare failed: {e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_skips_and_other_errors_fail() {
        assert!(
            matches!(skip_or_fail("x", io::Error::from_raw_os_error(libc::EPERM)), Ok(Prepared::Skip(s)) if s.contains("not permitted"))
        );
        assert!(skip_or_fail("x", io::Error::from_raw_os_error(libc::ENOSPC)).is_err());
        assert!(refused(&io::Error::from_raw_os_error(libc::ENOSYS)));
        assert!(!refused(&io::Error::other("no errno")));
    }

    #[test]
    fn contents_have_the_length_asked_and_depend_on_index_and_seed() {
        assert_eq!(content(1, 2, 64).len(), 64);
        assert_eq!(content(1, 2, 3).len(), 3);
        assert_eq!(content(1, 2, 64), content(1, 2, 64));
        assert_ne!(content(1, 2, 64), content(1, 3, 64));
        assert_ne!(content(1, 2, 64), content(2, 2, 64));
    }

    #[test]
    fn only_ext4_paths_have_a_journal_answer() {
        assert_eq!(ext4_journal(Path::new("/proc")), None);
        assert_eq!(ext4_journal(Path::new("/no/such/path")), None);
        let tmp = tempfile::tempdir().unwrap();
        if crate::workloads::scratch::filesystem_type(tmp.path()) != "ext4" {
            assert_eq!(ext4_journal(tmp.path()), None);
        }
    }

    #[test]
    fn instance_dirs_are_created_once_and_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let d = instance_dir(tmp.path(), "x").unwrap();
        assert!(d.is_dir());
        assert!(instance_dir(tmp.path(), "x").is_err(), "a second instance never shares the directory");
        std::fs::write(d.join("a"), b"1").unwrap();
        std::fs::write(d.join("b"), b"2").unwrap();
        assert_eq!(entry_count(&d).unwrap(), 2);
    }
}
