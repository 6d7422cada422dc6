//! The trend of one workload over the history (`history show`): its rows
//! that pass the `--params` filters in run order, one line per (system
//! label, axes) with each line's noise floor as a band around the median of
//! its runs, and the change points `history changes` finds placed on their
//! lines. Data only: the document and the chart made from it are
//! [`super::render`]'s, and the command prints or writes them. Also the
//! store-side steps `history changes` and `history regressions` share with
//! it: the workloads a pattern names, the series of a set of rows, one per
//! machine, and their change points.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::compare::FloorLookup;
use crate::envelope::Envelope;
use crate::evidence::Row;
use crate::model::{Params, Status, Unit, UsageError};

use super::changes::{self, ChangePoint, Changes};
use super::floors::Floors;
use super::{RunEntry, Store, regress};

/// The `--noise` of `history changes` by default, at which `history show`
/// marks the change points of its trend.
pub const CHANGES_THRESHOLD: f64 = 0.02;

/// The trend of one workload: what `history show` prints and plots.
pub struct Trend {
    pub workload: String,
    /// The `--params` filters.
    pub filters: Filters,
    /// Every run of the history, oldest first ([`TrendRow::run`] indexes it).
    pub runs: Vec<RunEntry>,
    /// The rows, in run order (then plan order): at least one.
    pub rows: Vec<TrendRow>,
    /// The history ids of the runs that hold a row, oldest first: the x
    /// axis of the trend (a line's point at x is the run `ticks[x]`).
    pub ticks: Vec<i64>,
    /// The unit of the first row (the chart's).
    pub unit: Unit,
    /// One line per (system label, axes) with an ok row, by label.
    pub lines: Vec<TrendLine>,
}

/// What the trend keeps of a stored row: the columns of its table, its
/// point and what its noise floor is looked up by (never its samples, so
/// that a long history is not held whole).
pub struct TrendRow {
    /// Index into [`Trend::runs`].
    pub run: usize,
    pub index: usize,
    pub label: String,
    pub axes: String,
    pub params: Params,
    pub status: Status,
    pub unit: Unit,
    /// `(median, lo, hi)` of an ok row, the bounds the median's without an interval.
    pub bounds: Option<(f64, f64, f64)>,
    pub has_interval: bool,
    pub n: usize,
}

/// One line of the trend.
pub struct TrendLine {
    /// What sets it apart from the other lines: its axes, its system label
    /// (when the rows have several), or both.
    pub label: String,
    /// (x, median, lo, hi), oldest first.
    pub points: Vec<(usize, f64, f64, f64)>,
    /// The noise floor of its newest row that has one, else why the newest
    /// has none.
    pub floor: FloorLookup,
    /// The floor as a band (lo, hi) around the median of the line's medians.
    pub band: Option<(f64, f64)>,
    /// The change points on this line, each between two x.
    pub changes: Vec<Mark>,
}

/// A change point placed on a line.
pub struct Mark {
    /// The x of the last run at the old level and of the first at the new one.
    pub before: usize,
    pub after: usize,
    pub point: ChangePoint,
}

/// The workloads held that `pattern` names: an id, a group, or a glob; all
/// of them without one. None named is a usage error listing those held.
pub fn matching_workloads(store: &Store, pattern: Option<&str>) -> anyhow::Result<Vec<String>> {
    let all = store.workloads()?;
    let Some(p) = pattern else { return Ok(all) };
    let glob = glob::Pattern::new(p).ok();
    let hits: Vec<String> = all
        .iter()
        .filter(|w| w.as_str() == p || w.split('.').next() == Some(p) || glob.as_ref().is_some_and(|g| g.matches(w)))
        .cloned()
        .collect();
    if hits.is_empty() {
        let held = if all.is_empty() { "none".to_string() } else { all.join(", ") };
        return Err(UsageError(format!("no rows of '{p}' in {} (workloads held: {held})", store.path().display())).into());
    }
    Ok(hits)
}

/// The `--params NAME=VALUE` filters of `history show` and `history
/// changes`: as typed (for the messages) and split.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub given: Vec<String>,
    pub pairs: Vec<(String, String)>,
}

impl Filters {
    /// `NAME=VALUE` filters, as typed to `--params`; anything else is a
    /// usage error naming it.
    pub fn parse(params: &[String]) -> anyhow::Result<Filters> {
        let pairs = params
            .iter()
            .map(|p| match p.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
                _ => Err(UsageError(format!("--params {p}: expected NAME=VALUE")).into()),
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Filters { given: params.to_vec(), pairs })
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Whether `row` passes every filter.
    pub fn pass(&self, row: &Row) -> bool {
        self.pairs.iter().all(|(k, v)| crate::model::params::param_matches(&row.cell.params, k, v))
    }
}

/// The envelope of each run, read once (`None`: unreadable).
struct Envelopes<'a> {
    store: &'a Store,
    read: RefCell<HashMap<i64, Option<Envelope>>>,
}

impl<'a> Envelopes<'a> {
    fn new(store: &'a Store) -> Self {
        Envelopes { store, read: RefCell::new(HashMap::new()) }
    }

    fn of(&self, id: i64) -> Option<Envelope> {
        self.read.borrow_mut().entry(id).or_insert_with(|| self.store.envelope(id).ok()).clone()
    }

    /// The machine of a run: (key, short name).
    fn machine(&self, id: i64) -> (String, String) {
        match self.of(id) {
            Some(e) => (e.machine_key(), e.machine_short_name()),
            None => (format!("unreadable envelope of h:{id}"), format!("h:{id} (envelope unreadable)")),
        }
    }

    /// A series' floor from its newest row (its runs share one machine).
    fn floor(&self, floors: &Floors, s: &regress::Series) -> FloorLookup {
        let (run, row) = &s.points[s.points.len() - 1];
        match self.of(run.id) {
            Some(e) => floors.of(row, &e.machine_key()),
            None => Err("no floor: the run's envelope is unreadable".to_string()),
        }
    }
}

/// The change points of the ok `rows` (history id of the run, row) over
/// `runs`: one series per machine, as `history regressions` makes them,
/// found at `threshold` with each series' floor from `floors`.
pub fn changes_of(store: &Store, runs: &[RunEntry], rows: Vec<(i64, Row)>, floors: &Floors, threshold: f64) -> Changes {
    let envelopes = Envelopes::new(store);
    let series = regress::series(runs, rows, &|id| envelopes.machine(id));
    changes::find(&series, threshold, &|s| envelopes.floor(floors, s), floors.source())
}

/// The steps `history regressions` judges: every series of `rows` (one per
/// machine unless `opts.across_machines`), each consecutive pair of runs
/// judged as `compare` judges two runs, with each row's floor from the
/// history; and where the floors came from.
pub fn steps_of(
    store: &Store,
    runs: &[RunEntry],
    rows: Vec<(i64, Row)>,
    opts: &crate::compare::Options,
) -> anyhow::Result<(Vec<regress::Step>, String)> {
    let envelopes = Envelopes::new(store);
    let across = opts.across_machines;
    let machine = |id: i64| if across { (String::new(), String::new()) } else { envelopes.machine(id) };
    let series = regress::series(runs, rows, &machine);
    let machines = |a: i64, b: i64| match (envelopes.of(a), envelopes.of(b)) {
        (Some(x), Some(y)) => x.machine_differences(&y),
        _ => vec!["envelope unreadable".to_string()],
    };
    let floors = Floors::load(store, &[])?;
    let floor = |id: i64, row: &Row| match envelopes.of(id) {
        Some(e) => floors.of(row, &e.machine_key()),
        None => Err("no floor: the run's envelope is unreadable".to_string()),
    };
    let steps = regress::steps(&series, opts, &machines, &floor);
    Ok((steps, floors.source().to_string()))
}

/// A stored row with the history id of its run.
type Stored = (i64, Row);

/// The rows of `workload` that pass every filter, in run order (then plan
/// order), and each ok one without its samples (history id of its run,
/// row: what the change points are found from). Cost: linear in the rows,
/// plus a sort.
fn filtered_rows(store: &Store, runs: &[RunEntry], workload: &str, filters: &Filters) -> anyhow::Result<(Vec<TrendRow>, Vec<Stored>)> {
    let pos: HashMap<i64, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let (mut rows, mut slim) = (Vec::new(), Vec::new());
    store.each_row_of(workload, |id, mut row| {
        let Some(&run) = pos.get(&id) else { return Ok(()) };
        if !filters.pass(&row) {
            return Ok(());
        }
        if row.status == Status::Ok {
            let mut kept = row.clone();
            kept.samples = Vec::new();
            kept.details = serde_json::Value::Null;
            kept.stderr_tail = String::new();
            slim.push((id, kept));
        }
        row.samples = Vec::new();
        rows.push(TrendRow {
            run,
            index: row.cell.index,
            axes: row.axes_text(),
            bounds: row.median_with_bounds(),
            has_interval: row.interval().is_some(),
            n: row.stats.as_ref().map_or(0, |s| s.work.n),
            status: row.status,
            unit: row.unit,
            label: row.cell.label,
            params: row.cell.params,
        });
        Ok(())
    })?;
    rows.sort_by_key(|r| (r.run, r.index));
    Ok((rows, slim))
}

/// The trend of `workload` (a workload id held in `store`) over the rows
/// that pass `filters`. A workload not held, or no row passing, is a usage
/// error (`db` names the database in it).
pub fn trend(store: &Store, workload: &str, filters: &Filters) -> anyhow::Result<Trend> {
    let names = matching_workloads(store, Some(workload))?;
    if !names.iter().any(|n| n == workload) {
        let db = store.path().display();
        return Err(UsageError(format!("'{workload}' is not a workload id held in {db} (held: {})", names.join(", "))).into());
    }
    let runs = store.runs()?;
    let (rows, slim) = filtered_rows(store, &runs, workload, filters)?;
    if rows.is_empty() {
        return Err(UsageError(format!("no rows of {workload} match --params {}", filters.given.join(" "))).into());
    }
    // One line per (axes, label); x = the position of the run among the
    // runs that hold this workload. Each line keeps its rows (`members`,
    // oldest first).
    let mut ticks: Vec<i64> = Vec::new();
    let mut points: BTreeMap<String, Vec<(usize, f64, f64, f64)>> = BTreeMap::new();
    let mut members: HashMap<String, Vec<usize>> = HashMap::new();
    let labels: BTreeSet<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    let line_key = |label: &str, axes: &str| match (labels.len() > 1, axes) {
        (_, "-") => label.to_string(),
        (true, axes) => format!("{label} {axes}"),
        (false, axes) => axes.to_string(),
    };
    for (i, r) in rows.iter().enumerate() {
        let id = runs[r.run].id;
        if ticks.last() != Some(&id) {
            ticks.push(id);
        }
        if let Some((m, lo, hi)) = r.bounds {
            let key = line_key(&r.label, &r.axes);
            points.entry(key.clone()).or_default().push((ticks.len() - 1, m, lo, hi));
            members.entry(key).or_default().push(i);
        }
    }
    // Each line's noise floor, from its newest row: a band around the
    // median of its runs. A run's machine is read once however many lines
    // it holds, and a floor looked up once however many rows share it.
    let floors = Floors::load(store, &[workload.to_string()])?;
    let mut machines: HashMap<usize, String> = HashMap::new();
    let mut looked_up: HashMap<(String, String, String), FloorLookup> = HashMap::new();
    let mut floor_of = |r: &TrendRow| {
        let machine = machines
            .entry(r.run)
            .or_insert_with(|| store.envelope(runs[r.run].id).map(|env| env.machine_key()).unwrap_or_default())
            .clone();
        let params = serde_json::to_string(&r.params).unwrap_or_default();
        looked_up
            .entry((params, r.label.clone(), machine))
            .or_insert_with_key(|(_, _, m)| floors.of_cell(workload, &r.params, &r.label, m))
            .clone()
    };
    let mut lines: Vec<TrendLine> = Vec::new();
    for (label, points) in points {
        // The newest row of the line with a floor (a line may mix
        // parameters, such as a treatment), else why the newest has none.
        let mut lookups = members[&label].iter().rev().map(|&i| floor_of(&rows[i]));
        let Some(first) = lookups.next() else { continue };
        let floor = if first.is_ok() { first } else { lookups.find(Result::is_ok).unwrap_or(first) };
        let center = crate::stats::median(&points.iter().map(|p| p.1).collect::<Vec<_>>());
        let band = floor.as_ref().ok().map(|f| (center / (1.0 + f.value), center * (1.0 + f.value)));
        lines.push(TrendLine { label, points, floor, band, changes: Vec::new() });
    }
    // The change points of `history changes` (at its default --noise),
    // each on the line of its rows.
    let found = changes_of(store, &runs, slim, &floors, CHANGES_THRESHOLD);
    let x_of = |id: i64| ticks.iter().position(|t| *t == id);
    for line in &mut lines {
        line.changes = found
            .series
            .iter()
            .filter(|s| line_key(&s.label, &s.axes) == line.label)
            .flat_map(|s| &s.changes)
            .filter_map(|p| Some(Mark { before: x_of(p.last_before.id)?, after: x_of(p.first_after.id)?, point: p.clone() }))
            .collect();
    }
    let unit = rows[0].unit;
    Ok(Trend { workload: workload.to_string(), filters: filters.clone(), runs, rows, ticks, unit, lines })
}
