//! The filesystem a cell's private scratch directory lives on (the runner
//! creates and removes the directory; a workload gets its path from its
//! `PrepareContext`).

use std::path::Path;

/// The name of the filesystem holding `path` (from `statfs(2)`'s magic
/// number): `tmpfs`, `ext4`, `xfs`... or `unknown (0x...)`.
pub fn filesystem_type(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return "unknown (path has a NUL byte)".into() };
    // SAFETY: statfs is plain data; all-zero is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return format!("unknown ({})", std::io::Error::last_os_error());
    }
    let magic = st.f_type as u64;
    let name = match magic {
        0xEF53 => "ext4",
        0x0102_1994 => "tmpfs",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6969 => "nfs",
        0xFF53_4D42 => "cifs",
        0x0102_1997 => "9p",
        0x6573_5546 => "fuse",
        0x5346_544E => "ntfs",
        0x4D44 => "vfat",
        0x3153_464A => "jfs",
        0x5265_4973 => "reiserfs",
        0x2011_BAB0 => "exfat",
        0x6462_6720 => "debugfs",
        0x858_458F6 => "ramfs",
        _ => return format!("unknown (0x{magic:x})"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_and_tmp_filesystems_are_named() {
        assert_eq!(filesystem_type(Path::new("/proc")), "unknown (0x9fa0)", "procfs is not in the list on purpose");
        let tmp = tempfile::tempdir().unwrap();
        assert!(!filesystem_type(tmp.path()).is_empty());
        assert!(filesystem_type(Path::new("/no/such/dir")).starts_with("unknown (No such file"));
    }
}
