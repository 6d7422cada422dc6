//! The small file-reading helpers that produce [`Reading`]s (a value read from the machine, or
//! the reason it could not be read) relative to a root directory.
//!
//! Nothing here may panic on what it reads or invent a value: every failure becomes
//! [`Reading::Absent`] with a reason that names the file (as an absolute path on the machine
//! being described, i.e. relative to the root, so fixture paths do not leak into reasons).

use std::io::ErrorKind;
use std::path::Path;

use crate::model::Reading;

/// Reads files under a root directory, turning failures into reasons.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Files<'a> {
    root: &'a Path,
}

impl<'a> Files<'a> {
    pub(crate) fn new(root: &'a Path) -> Self {
        Files { root }
    }

    /// The machine's own name for `rel`: "/" + rel.
    pub(crate) fn show(rel: &str) -> String {
        format!("/{}", rel.trim_start_matches('/'))
    }

    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).exists()
    }

    /// The file's text (lossy UTF-8, surrounding whitespace trimmed), or a reason.
    pub(crate) fn text(&self, rel: &str) -> Reading<String> {
        match std::fs::read(self.root.join(rel)) {
            Ok(bytes) => Reading::Present(String::from_utf8_lossy(&bytes).trim().to_string()),
            Err(e) => Reading::absent(io_reason(&e, rel)),
        }
    }

    /// The file's text parsed with `parse`; a parse failure quotes the text and names the file.
    pub(crate) fn parsed<T>(&self, rel: &str, parse: impl FnOnce(&str) -> Result<T, String>) -> Reading<T> {
        self.text(rel).and_then(|text| parse(&text).map_err(|why| format!("cannot parse {}: {why} ({text:?})", Files::show(rel))))
    }

    /// The file's text as a number.
    pub(crate) fn number<T: std::str::FromStr>(&self, rel: &str) -> Reading<T> {
        self.parsed(rel, |t| t.parse::<T>().map_err(|_| "not a number".to_string()))
    }
}

/// A reason for an I/O failure on `rel`.
fn io_reason(e: &std::io::Error, rel: &str) -> String {
    let path = Files::show(rel);
    match e.kind() {
        ErrorKind::NotFound => format!("not found: {path}"),
        ErrorKind::PermissionDenied => format!("permission denied: {path}"),
        _ => format!("cannot read {path}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_failures_become_reasons_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n"), "12x\n").unwrap();
        let files = Files::new(dir.path());
        assert_eq!(files.text("proc/nothing").reason(), Some("not found: /proc/nothing"));
        let n: Reading<u32> = files.number("n");
        assert_eq!(n.reason(), Some(r#"cannot parse /n: not a number ("12x")"#));
    }
}
