//! [`Reading`]: a value read from the machine, or the reason it could not be read; and the
//! small file-reading helpers that produce Readings relative to a root directory.
//!
//! Nothing here may panic on what it reads or invent a value: every failure becomes
//! [`Reading::Absent`] with a reason that names the file (as an absolute path on the machine
//! being described, i.e. relative to the root, so fixture paths do not leak into reasons).

use std::io::ErrorKind;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A reading of the machine: the value, or why it is absent. Serializes as the bare value when
/// present and as `{"absent": "<reason>"}` when absent. Round-trips through serde_json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reading<T> {
    /// The value could not be read; `absent` says why (and names the file).
    Absent {
        /// The reason, e.g. "not found: /sys/devices/system/cpu/cpu0/cpufreq".
        absent: String,
    },
    /// The value as read.
    Present(T),
}

impl<T> Reading<T> {
    /// The value, when present.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Reading::Present(v) => Some(v),
            Reading::Absent { .. } => None,
        }
    }

    /// An absent reading with this reason.
    pub fn absent(reason: impl Into<String>) -> Self {
        Reading::Absent { absent: reason.into() }
    }

    /// True when the value was read.
    pub fn is_present(&self) -> bool {
        matches!(self, Reading::Present(_))
    }

    /// Why the value is absent, when it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Reading::Absent { absent } => Some(absent),
            Reading::Present(_) => None,
        }
    }

    /// Applies `f` to a present value; an absent reading keeps its reason.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Reading<U> {
        match self {
            Reading::Present(v) => Reading::Present(f(v)),
            Reading::Absent { absent } => Reading::Absent { absent },
        }
    }

    /// Applies a fallible `f` to a present value; its error becomes the absent reason.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Result<U, String>) -> Reading<U> {
        match self {
            Reading::Present(v) => f(v).into(),
            Reading::Absent { absent } => Reading::Absent { absent },
        }
    }

    /// Borrows the value.
    pub fn as_ref(&self) -> Reading<&T> {
        match self {
            Reading::Present(v) => Reading::Present(v),
            Reading::Absent { absent } => Reading::Absent { absent: absent.clone() },
        }
    }
}

impl<T, E: std::fmt::Display> From<Result<T, E>> for Reading<T> {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(v) => Reading::Present(v),
            Err(e) => Reading::absent(e.to_string()),
        }
    }
}

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
    fn present_is_the_bare_value_and_absent_is_an_object() {
        let present: Reading<u64> = Reading::Present(42);
        let absent: Reading<u64> = Reading::absent("permission denied: /x");
        assert_eq!(serde_json::to_string(&present).unwrap(), "42");
        assert_eq!(serde_json::to_string(&absent).unwrap(), r#"{"absent":"permission denied: /x"}"#);
        let list: Reading<Vec<usize>> = Reading::Present(vec![0, 1]);
        assert_eq!(serde_json::to_string(&list).unwrap(), "[0,1]");
        let text: Reading<String> = Reading::Present("madvise".into());
        assert_eq!(serde_json::to_string(&text).unwrap(), r#""madvise""#);
    }

    #[test]
    fn both_shapes_round_trip() {
        for r in [Reading::Present(vec![1.5, 2.0, 0.25]), Reading::absent("gone")] {
            let json = serde_json::to_string(&r).unwrap();
            let back: Reading<Vec<f64>> = serde_json::from_str(&json).unwrap();
            assert_eq!(back, r);
        }
        let s: Reading<String> = serde_json::from_str(r#""absent""#).unwrap();
        assert_eq!(s, Reading::Present("absent".to_string()));
        let a: Reading<String> = serde_json::from_str(r#"{"absent":"why"}"#).unwrap();
        assert_eq!(a.reason(), Some("why"));
    }

    #[test]
    fn accessors() {
        let r: Reading<u8> = Reading::Present(3);
        assert_eq!(r.ok(), Some(&3));
        assert!(r.is_present());
        assert_eq!(r.clone().map(|v| v * 2), Reading::Present(6));
        let a: Reading<u8> = Reading::absent("no");
        assert_eq!(a.ok(), None);
        assert!(!a.is_present());
        assert_eq!(a.map(|v| v * 2).reason(), Some("no"));
    }

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
