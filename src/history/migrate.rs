//! Older history databases brought to the current schema in place, inside
//! the transaction that opens them (so a failure changes nothing).
//!
//! Version 1 identified a run by a hash of its whole run.json, which changes
//! when the run finishes: a run imported while it ran and recorded again at
//! its end was held twice. Version 2 identifies it by what it starts with
//! ([`super::run_uid`]); migrating recomputes every `uid` and merges the
//! records of one run into one: the most complete record (finished, then
//! most rows) under the oldest history id.

use std::collections::BTreeMap;

use rusqlite::Transaction;

/// The columns of a run's record, all but its id and uid.
const RUN_COLUMNS: &str = "name, dir, started_utc, finished_utc, label, git_commit, machine, profile, tool_version, tool_commit, \
     rows_total, rows_ok, complete, recorded_utc, run_json";

/// One held record of a run.
struct Held {
    id: i64,
    finished: bool,
    rows: i64,
}

/// Version 1 to 2: every uid recomputed, the records of one run merged.
/// Returns a note for each merge. A run.json that does not parse keeps its
/// uid (the damage is reported when the run is read).
pub(super) fn from_v1(tx: &Transaction<'_>) -> anyhow::Result<Vec<String>> {
    let mut runs: BTreeMap<String, Vec<Held>> = BTreeMap::new();
    {
        let mut q = tx.prepare("SELECT id, CAST(run_json AS BLOB), finished_utc IS NOT NULL, rows_total FROM runs ORDER BY id")?;
        let mut rows = q.query([])?;
        while let Some(r) = rows.next()? {
            let json = r.get::<_, Vec<u8>>(1).ok().and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            let Some(json) = json else { continue };
            runs.entry(super::uid_of(&json)).or_default().push(Held { id: r.get(0)?, finished: r.get(2)?, rows: r.get(3)? });
        }
    }
    let mut notes = Vec::new();
    for (uid, held) in runs {
        let keep = held.iter().map(|h| h.id).min().expect("a group has a record");
        let best = held.iter().max_by_key(|h| (h.finished, h.rows, h.id)).expect("a group has a record").id;
        if best != keep {
            tx.execute("DELETE FROM rows WHERE run = ?1", [keep])?;
            tx.execute("UPDATE rows SET run = ?1 WHERE run = ?2", [keep, best])?;
            tx.execute(
                &format!("UPDATE runs SET ({RUN_COLUMNS}) = (SELECT {RUN_COLUMNS} FROM runs WHERE id = ?2) WHERE id = ?1"),
                [keep, best],
            )?;
        }
        for other in held.iter().map(|h| h.id).filter(|&id| id != keep) {
            tx.execute("DELETE FROM rows WHERE run = ?1", [other])?;
            tx.execute("DELETE FROM runs WHERE id = ?1", [other])?;
            notes.push(format!("h:{other} was a second record of the run h:{keep} (one made before it finished); merged into h:{keep}"));
        }
        tx.execute("UPDATE runs SET uid = ?1 WHERE id = ?2", rusqlite::params![uid, keep])?;
    }
    Ok(notes)
}
