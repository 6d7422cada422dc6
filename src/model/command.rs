//! A command workload as plain data: the validated definition of a
//! `[[workload]]` entry that a cell carries to its worker, so that the
//! worker needs no file. Reading the file and running the command are the
//! job of `workloads::command`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::unit::Unit;

/// One axis of a command workload: its name and the values it sweeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AxisDef {
    pub name: String,
    /// Integers or strings (one kind per axis); one value fixes a parameter,
    /// several sweep it.
    pub values: Vec<Value>,
}

/// A number read from the command's output with a regular expression.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricDef {
    /// Its first capture group is the sample's value (before `scale`).
    pub regex: String,
    /// Reads the total window's value the same way, when given.
    pub total_regex: Option<String>,
    /// Multiplies what the regexes read (e.g. 1e6 for milliseconds in a
    /// `ns` row).
    pub scale: f64,
}

/// A number read from the output that must equal an expected one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueCheck {
    /// Its first capture group is the observed number.
    pub regex: String,
    pub expected: f64,
    /// The largest accepted |observed - expected|.
    pub tolerance: f64,
}

/// How the result of a run of the command is checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerifyDef {
    pub exit_code: i32,
    /// Regexes that must each match the output.
    pub must_match: Vec<String>,
    /// Regexes none of which may match the output.
    pub must_not_match: Vec<String>,
    pub value: Option<ValueCheck>,
}

/// A validated command workload: what a cell carries to its worker.
/// Commands are argument lists with `{axis}` placeholders; a shell command
/// is stored as `sh -c SCRIPT`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandDef {
    pub id: String,
    pub summary: String,
    pub measures: Option<String>,
    pub unit: Unit,
    /// The file and line the workload was defined at.
    pub source: String,
    pub command: Vec<String>,
    pub shell: bool,
    /// Absolute, or with placeholders; relative paths were resolved against
    /// the file's directory.
    pub cwd: String,
    pub env: BTreeMap<String, String>,
    pub prepare: Option<Vec<String>>,
    pub cleanup: Option<Vec<String>>,
    pub axes: Vec<AxisDef>,
    /// `None`: a sample is the wall time of one run of the command.
    pub metric: Option<MetricDef>,
    pub verify: VerifyDef,
    /// `[workload.profile]`: the command of the guest-side pass of `run
    /// --perf-pass` (the system under test's own counters), run once per
    /// row outside the timed samples, with the same placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Vec<String>>,
    /// Each run's output is copied to the worker's stderr (the guest-side
    /// pass, whose output is kept); false in every planned cell.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub echo_output: bool,
}

impl VerifyDef {
    /// Whether nothing but the exit code is checked: no `must_match`,
    /// `must_not_match` or `value` (a workload without `[workload.verify]`).
    pub fn exit_code_only(&self) -> bool {
        self.must_match.is_empty() && self.must_not_match.is_empty() && self.value.is_none()
    }
}

impl CommandDef {
    /// The group: the id up to its first dot.
    pub fn group(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }
}
