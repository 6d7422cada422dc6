//! What bisect.json holds (the record of a bisect: its commits, builds,
//! measurements, steps and outcome) and the figures counted from it. Below
//! both the session that writes it and the page made from it, so that the
//! page reads a record without reaching into the session that runs one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Commit, Measured, Outcome, Step};

/// How a build is put under measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// proofbench itself: `exe=` variants, the worker is the build.
    Exe,
    /// A command workload: `env=PROOFBENCH_BUILD=<worktree>` variants.
    Env,
}

/// One build, as bisect.json keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BuildRecord {
    pub ok: bool,
    pub seconds: f64,
    /// The build's output, relative to the bisect's directory.
    pub log: String,
}

/// One A/B measurement, as bisect.json keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MeasureRecord {
    pub a: String,
    pub b: String,
    pub attempt: u32,
    /// Made to confirm a culprit against its parent: a run of its own,
    /// reused only by that step (a resumed bisect).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirming: bool,
    pub measured: Measured,
}

/// bisect.json: everything a resumed bisect and the page need.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub schema: String,
    /// `running`, `interrupted`, `failed` or `finished`.
    pub state: String,
    pub argv: Vec<String>,
    /// What must be the same for a bisect to reuse this one's builds and
    /// measurements: the commits, the build, and the A/B run's plan.
    pub key: String,
    pub repo: String,
    pub build: String,
    pub exe: String,
    pub mode: Mode,
    pub commits: Vec<Commit>,
    pub builds: BTreeMap<String, BuildRecord>,
    pub measured: Vec<MeasureRecord>,
    /// The steps of the last session, in order.
    pub steps: Vec<Step>,
    pub outcome: Option<Outcome>,
    /// `git show --stat` of the culprit.
    pub culprit_stat: Option<String>,
    pub error: Option<String>,
    /// Wall time over every session, and how many sessions.
    pub wall_seconds: f64,
    pub sessions: u32,
    /// Builds and measurements made by the last session (the rest came
    /// from the record).
    pub built_now: usize,
    pub measured_now: usize,
}

impl Record {
    /// The figures the page and the terminal end with.
    pub fn figures(&self) -> Figures {
        let commits: std::collections::BTreeSet<usize> = self.steps.iter().flat_map(|s| [s.a, s.b]).collect();
        Figures {
            wall: self.wall_seconds,
            builds: self.builds.len(),
            failed: self.builds.values().filter(|b| !b.ok).count(),
            build_seconds: self.builds.values().map(|b| b.seconds).sum(),
            measurements: self.measured.len(),
            measure_seconds: self.measured.iter().map(|m| m.measured.seconds).sum(),
            commits: commits.len(),
            sessions: self.sessions,
            built_now: self.built_now,
            measured_now: self.measured_now,
        }
    }
}

/// Time and counts of a bisect.
pub struct Figures {
    pub wall: f64,
    pub builds: usize,
    pub failed: usize,
    pub build_seconds: f64,
    pub measurements: usize,
    pub measure_seconds: f64,
    pub commits: usize,
    pub sessions: u32,
    pub built_now: usize,
    pub measured_now: usize,
}
