//! [`Reading`]: a value read from the machine, or the reason it could not be
//! read. The envelope, the counters and the records all carry them.

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
}
