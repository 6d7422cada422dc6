//! Test fixtures of records: a stored run made of given rows, with this
//! machine's envelope, for the tests of every stage that reads runs
//! (report, compare, history).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::json;

use super::{RUN_SCHEMA, Row, RunRecord, StoredRun};
use crate::envelope::Envelope;
use crate::model::Profile;

/// This machine's envelope, read once.
pub(crate) fn envelope() -> Envelope {
    static E: OnceLock<Envelope> = OnceLock::new();
    E.get_or_init(|| Envelope::collect(Path::new("/"), vec!["proofbench".into()], 1)).clone()
}

/// A run named `name` that started at `started` holding `rows`, and the
/// text of its run.json.
pub(crate) fn fake_run(name: &str, started: &str, commit: Option<&str>, rows: Vec<Row>) -> (StoredRun, String) {
    let options = json!({
        "selection": [], "profile": "quick", "workers": null, "oversubscribe": false, "pin": ["none"],
        "runtime": null, "allocator": null, "compare": null, "runs": null, "time_budget_ms": null,
        "timeout_ms": 60000, "warmup": null, "settle_ms": null, "ci_target_pct": null, "params": [],
        "include_selftest": true, "io_dir": null, "inject_fault": null
    });
    let run = RunRecord {
        schema: RUN_SCHEMA.into(),
        id: name.into(),
        label: "box".into(),
        commit: commit.map(String::from),
        profile: Profile::Quick,
        seed: 1,
        options: serde_json::from_value(options).expect("options"),
        envelope: envelope(),
        plan: rows.iter().map(|r| r.cell.clone()).collect(),
        started_utc: started.into(),
        finished_utc: Some(started.into()),
        wall_s: Some(1.0),
        cpu: None,
        interrupted: false,
        complete: true,
        counts: Some(crate::evidence::StatusCounts::of(rows.iter().map(|r| &r.status))),
        not_run: Vec::new(),
        launcher: None,
        trials: None,
        rounds: Vec::new(),
        interference: None,
        kind: Default::default(),
        variants: Vec::new(),
    };
    let text = serde_json::to_string_pretty(&run).unwrap();
    (StoredRun { dir: PathBuf::from(format!("/nowhere/{name}")), run, rows, warnings: Vec::new() }, text)
}
