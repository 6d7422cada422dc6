//! The two sides of a comparison: how far each run got, the key rows
//! match by, and the matching itself, which lists a row one side lacks as
//! missing there, or as not run when that side's run planned it but ended
//! without it.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::RowComparison;
use crate::evidence::{Row, RunRecord};
use crate::model::Cell;

/// How far a compared run got: its plan, the cells that have a row, and
/// how it ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Completion {
    pub cells_planned: usize,
    /// Planned cells that have a row.
    pub cells_ran: usize,
    /// Whether run.json has its finish record (a run that was killed, or
    /// is still running, has none).
    pub finished: bool,
    /// Whether a signal ended the run early.
    pub interrupted: bool,
    /// `incomplete: N of M cells ran` (no finish record), `interrupted: N
    /// of M cells ran`...; `None` for a run that finished every cell.
    pub state: Option<String>,
}

impl Completion {
    /// How far `run` got, with `rows` its rows.
    pub fn of(run: &RunRecord, rows: &[Row]) -> Completion {
        let planned = run.plan.len();
        let ran = planned - run.cells_without_row(rows).len();
        let finished = run.finished_utc.is_some();
        Completion {
            cells_planned: planned,
            cells_ran: ran,
            finished,
            interrupted: run.interrupted,
            state: crate::evidence::state_text(finished, run.interrupted, ran, planned),
        }
    }

    /// `rows` taken as the whole of a finished run (rows without their
    /// run record: a report's, or a run's so far).
    pub fn assumed(rows: usize) -> Completion {
        Completion { cells_planned: rows, cells_ran: rows, finished: true, interrupted: false, state: None }
    }

    /// A run that finished every planned cell.
    pub fn is_complete(&self) -> bool {
        self.state.is_none()
    }

    /// Why cells of an incomplete run have no row.
    pub(crate) fn why(&self) -> &'static str {
        if !self.finished {
            "it has no finish record: it was killed, or it is still running"
        } else if self.interrupted {
            "a signal ended it early"
        } else {
            "it ended before them"
        }
    }
}

/// The match key of a row: its workload and the values of its axes (all
/// of them between two runs; all but the variant between variants).
pub(crate) type Key = (String, String);

/// The key of a planned cell, its axis `except` left out (`""`: none).
pub(crate) fn cell_key(c: &Cell, except: &str) -> Key {
    (c.workload.clone(), c.axes_text_without(except))
}

/// Each row with its key, computed once.
pub(crate) fn keyed<'a>(rows: impl IntoIterator<Item = &'a Row>, except: &str) -> Vec<(Key, &'a Row)> {
    rows.into_iter().map(|r| (cell_key(&r.cell, except), r)).collect()
}

/// One side of a comparison: what it is called, how far its run got, and
/// the keys of its planned cells that have no row (only when the run is
/// incomplete), in plan order.
pub(crate) struct Side {
    name: &'static str,
    pub(crate) completion: Completion,
    not_run: Vec<Key>,
    not_run_set: HashSet<Key>,
}

impl Side {
    /// `planned` are the side's cells of the plan, `ran` the plan indexes
    /// that have a row; keys leave out the axis `except`.
    pub(crate) fn new<'a>(
        name: &'static str,
        completion: Completion,
        planned: impl IntoIterator<Item = &'a Cell>,
        ran: &HashSet<usize>,
        except: &str,
    ) -> Side {
        let not_run: Vec<Key> = if completion.is_complete() {
            Vec::new()
        } else {
            planned.into_iter().filter(|c| !ran.contains(&c.index)).map(|c| cell_key(c, except)).collect()
        };
        let not_run_set = not_run.iter().cloned().collect();
        Side { name, completion, not_run, not_run_set }
    }
}

/// The rows of one comparison: each row of the base with its match in the
/// candidate (`judge` decides the pair), then the candidate's rows the base
/// lacks, then the planned cells neither side ran (only the matched pairs
/// without `missing_too`). Rows match by key (the first row of a key on
/// the candidate's side, as a search would find).
///
/// Cost: O(base + candidate) hash look-ups.
pub(crate) fn match_rows(
    base: &[(Key, &Row)],
    cand: &[(Key, &Row)],
    sides: &[Side; 2],
    band: f64,
    missing_too: bool,
    mut judge: impl FnMut(&Row, &Row) -> RowComparison,
) -> Vec<RowComparison> {
    let mut cand_at: HashMap<&Key, &Row> = HashMap::with_capacity(cand.len());
    for (k, r) in cand {
        cand_at.entry(k).or_insert(*r);
    }
    let base_keys: HashSet<&Key> = base.iter().map(|(k, _)| k).collect();
    let mut out = Vec::with_capacity(base.len());
    for (k, b) in base {
        match cand_at.get(k) {
            Some(c) => out.push(judge(b, c)),
            None if missing_too => out.push(missing(k, [Some(b), None], sides, band)),
            None => {}
        }
    }
    if !missing_too {
        return out;
    }
    out.extend(cand.iter().filter(|(k, _)| !base_keys.contains(k)).map(|(k, c)| missing(k, [None, Some(c)], sides, band)));
    let mut seen: HashSet<&Key> = HashSet::new();
    for k in sides.iter().flat_map(|s| &s.not_run) {
        if !base_keys.contains(k) && !cand_at.contains_key(k) && seen.insert(k) {
            out.push(missing(k, [None, None], sides, band));
        }
    }
    out
}

/// A row missing on one side or both (`rows`: base, candidate): `not
/// comparable`, saying on which side it is missing, and whether that side
/// planned it but ended without it (`not run in the candidate
/// (incomplete: 0 of 2 cells ran)`).
fn missing(key: &Key, rows: [Option<&Row>; 2], sides: &[Side; 2], band: f64) -> RowComparison {
    let mut out = RowComparison::empty(&key.0, key.1.clone(), band);
    if let Some(r) = rows[0].or(rows[1]) {
        (out.unit, out.direction) = (Some(r.unit), Some(r.direction));
    }
    (out.base_median, out.candidate_median) = (rows[0].and_then(Row::median), rows[1].and_then(Row::median));
    out.trials = rows.map(|r| r.map_or(0, |r| r.trial_medians().len()));
    let mut why = Vec::new();
    for (i, side) in sides.iter().enumerate().filter(|(i, _)| rows[*i].is_none()) {
        match &side.completion.state {
            Some(state) if side.not_run_set.contains(key) => {
                out.not_run[i] = true;
                why.push(format!("not run in the {} ({state})", side.name));
            }
            _ => {
                out.missing[i] = true;
                why.push(format!("missing in the {}", side.name));
            }
        }
    }
    out.reason = why.join("; ");
    out
}
