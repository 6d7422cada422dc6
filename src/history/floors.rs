//! Noise floors from the history: for each row (same workload and
//! parameters, same machine identity, same system label), how far its
//! median moves between runs of one build (`stats::noise_floor`).
//!
//! A build is the commit of the system under test together with the
//! proofbench that measured it (version, commit, dirty). Runs without a
//! commit are left out: nothing says which of them are the same build.
//! A `noise` run counts as a build of its own whose two variants are two
//! runs of it. Rows of other variant runs are left out (their variants are
//! different builds or settings by design).
//!
//! Only the columns the history keeps for queries are read (status,
//! median, parameters, and each run's record once), never a row's samples.

use std::collections::HashMap;

use rusqlite::params;
use serde_json::Value;

use crate::compare::FloorLookup;
use crate::evidence::{Row, RunKind};
use crate::model::{Params, variant::AXIS};
use crate::stats::noise_floor;
use crate::text::format;

use super::Store;

/// The medians of the history's ok rows, grouped by row key and build.
#[derive(Debug, Default)]
pub struct Floors {
    /// key -> build -> medians, in run order.
    by_key: HashMap<String, Vec<(String, Vec<f64>)>>,
    /// Where they came from, for messages.
    source: String,
    /// Runs left out because they name no commit (so no build).
    uncommitted: usize,
}

/// The row key of a floor: workload, parameters without the variant, label, machine.
fn key(workload: &str, params: &Params, label: &str, machine: &str) -> String {
    let mut p = params.clone();
    p.remove(AXIS);
    format!("{workload}\u{1f}{}\u{1f}{label}\u{1f}{machine}", serde_json::to_string(&p).unwrap_or_default())
}

/// What a run contributes: its build (`None`: it contributes nothing), its
/// label, its machine, and whether it is a `noise` run.
struct RunFacts {
    build: Option<String>,
    label: String,
    machine: String,
    noise: bool,
}

impl Floors {
    /// Reads every ok row of `workloads` (every workload when empty).
    pub fn load(store: &Store, workloads: &[String]) -> anyhow::Result<Floors> {
        let mut runs: HashMap<i64, RunFacts> = HashMap::new();
        for entry in store.runs()? {
            let run = store.run_record(entry.id)?;
            let noise = run.kind == RunKind::Noise;
            let t = &run.envelope.tool;
            let build = match (&run.commit, noise) {
                (_, true) => Some(format!("noise run h:{}", entry.id)),
                (Some(c), false) => {
                    Some(format!("{c}|{} {}{}", t.version, t.git_commit, if t.git_dirty == Some(true) { "-dirty" } else { "" }))
                }
                (None, false) => None,
            };
            runs.insert(entry.id, RunFacts { build, label: run.label.clone(), machine: run.envelope.machine_key(), noise });
        }
        let uncommitted = runs.values().filter(|f| f.build.is_none()).count();
        let mut floors = Floors { by_key: HashMap::new(), source: store.path().display().to_string(), uncommitted };
        let mut q = store
            .conn
            .prepare("SELECT run, workload, params, median FROM rows WHERE status = 'ok' AND median IS NOT NULL ORDER BY run, row_id")?;
        let mut rows = q.query(params![])?;
        while let Some(r) = rows.next()? {
            let run: i64 = r.get(0)?;
            let workload = store.text(r, 1, run, "rows.workload")?;
            let params = store.text(r, 2, run, "rows.params")?;
            let median: f64 = r.get(3)?;
            if !workloads.is_empty() && !workloads.contains(&workload) {
                continue;
            }
            let Some(facts) = runs.get(&run) else { continue };
            let Some(build) = &facts.build else { continue };
            let params = serde_json::from_str::<Params>(&params)
                .map_err(|e| store.damaged(run, "rows.params", format!("not a JSON object ({e})")))?;
            let has_variant = params.get(AXIS).is_some_and(|v| !matches!(v, Value::Null));
            if has_variant && !facts.noise {
                continue;
            }
            let builds = floors.by_key.entry(key(&workload, &params, &facts.label, &facts.machine)).or_default();
            match builds.iter_mut().find(|(b, _)| b == build) {
                Some((_, medians)) => medians.push(median),
                None => builds.push((build.clone(), vec![median])),
            }
        }
        Ok(floors)
    }

    /// A floor set with no history behind it: every lookup says why.
    pub fn none(why: &str) -> Floors {
        Floors { by_key: HashMap::new(), source: why.to_string(), uncommitted: 0 }
    }

    /// Where the floors come from (`results/history.sqlite`), or why there are none.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether a history stands behind these floors.
    pub fn has_history(&self) -> bool {
        !self.by_key.is_empty()
    }

    /// The floor of `row` measured on the machine with identity `machine`
    /// ([`Envelope::machine_key`](crate::envelope::Envelope::machine_key)), or why it has none.
    pub fn of(&self, row: &Row, machine: &str) -> FloorLookup {
        self.of_cell(&row.cell.workload, &row.cell.params, &row.cell.label, machine)
    }

    /// [`Floors::of`] a row of `workload` with `params`, of the system
    /// labelled `label`.
    pub fn of_cell(&self, workload: &str, params: &Params, label: &str, machine: &str) -> FloorLookup {
        if !self.has_history() {
            return Err(match self.uncommitted {
                0 => format!("no history ({})", self.source),
                n => format!(
                    "no run in {} names its commit ({} without one; `run --commit REV`, or run in a git checkout): a floor comes \
                     from repeated runs of one build",
                    self.source,
                    format::counted(n, "run", "runs")
                ),
            });
        }
        let builds: Vec<Vec<f64>> =
            self.by_key.get(&key(workload, params, label, machine)).map(|b| b.iter().map(|(_, m)| m.clone()).collect()).unwrap_or_default();
        noise_floor(&builds).map_err(|e| e.to_string())
    }
}
