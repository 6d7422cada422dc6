//! fleet: many hosts' runs of the same rows, side by side. Each host's row
//! is set against the fleet: its median over the fleet's median (the median
//! of the hosts' medians for that row), with the 95% interval of the host's
//! median from its trial medians (the trial, a process, is the unit of
//! replication, as in `compare`) divided by the fleet median. A host whose
//! whole interval lies beyond the noise band is an outlier, worse or better
//! as the row's unit says (`compare::verdict_of`); outliers come first,
//! farthest first.
//!
//! Hosts are compared only with hosts of the same kind of machine
//! ([`Envelope::kind`]: CPU model, cores, memory, hypervisor, kernel
//! release): each kind is a group with its own fleet medians. Rows are
//! matched by workload and axis values; a row that is not ok on a host, or
//! that a host's run lacks, is listed with its status, never dropped.
//!
//! It judges from the records alone (any build's runs); it never measures
//! and never writes. Pure but for what it is given.

mod render;

pub use render::{document, export, page};

use std::collections::{BTreeMap, HashMap};

use crate::compare::{Verdict, parameter_differences, verdict_of};
use crate::envelope::Envelope;
use crate::evidence::{Row, StoredRun};
use crate::model::{Direction, Status, Unit};
use crate::stats::median;

/// One host of the fleet: one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// The name the fleet gives it: its hostname, or (when runs share a
    /// hostname) its run's label or id.
    pub name: String,
    /// The hostname its envelope records (`unknown-host` without one).
    pub hostname: String,
    /// The run's directory, as given.
    pub run: String,
    /// Its group (an index into [`Fleet::groups`]).
    pub group: usize,
    /// How its run stands when it is not a whole, quiet run: cut short
    /// (the connection dropped, a signal or a time limit stopped it, no
    /// finish record) and busy (other processes took its CPUs); `None`
    /// for a whole run on a quiet machine.
    pub state: Option<String>,
    /// The submission its run belongs to ([`crate::evidence::RunRecord::submission`]):
    /// a `--hosts` invocation or a Slurm submission.
    pub submission: Option<String>,
}

/// Hosts of one kind of machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// `CPU model, N CPUs, kernel R` (the heading of its table).
    pub title: String,
    /// The fields of [`Envelope::kind`] that set it apart from the first
    /// group (empty for the first group).
    pub differs: Vec<String>,
    /// Its hosts, indices into [`Fleet::hosts`].
    pub hosts: Vec<usize>,
}

/// Where a host's row stands against the fleet.
#[derive(Clone, Debug, PartialEq)]
pub enum Standing {
    /// The whole interval lies beyond the noise band on the worse side.
    Worse,
    /// ... on the better side.
    Better,
    /// The interval reaches into the band.
    InBand,
    /// No interval: fewer than two trials, or a median not above zero.
    NoInterval(String),
    /// Measured with other parameters than the group's first host that
    /// has the row (neither axes nor treatments): which, with both values.
    /// Not part of the fleet median.
    Differs(String),
    /// The row is not ok on this host (its status and reason).
    NotOk(String),
    /// The host cannot run the row (skipped, with the reason): not
    /// measured, and no failure either.
    Skipped(String),
    /// The host's run has no such row: why (the connection dropped before
    /// it arrived, the run was stopped before it, or it is not in the run).
    Missing(String),
}

impl Standing {
    /// One word for tables and exports.
    pub fn as_str(&self) -> &'static str {
        match self {
            Standing::Worse => "worse",
            Standing::Better => "better",
            Standing::InBand => "in band",
            Standing::NoInterval(_) => "no interval",
            Standing::Differs(_) => "different parameters",
            Standing::NotOk(_) => "not ok",
            Standing::Skipped(_) => "skipped",
            Standing::Missing(_) => "missing",
        }
    }

    /// Whether the host lies beyond the band, either way.
    pub fn is_outlier(&self) -> bool {
        matches!(self, Standing::Worse | Standing::Better)
    }
}

/// One host's row.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Index into [`Fleet::hosts`].
    pub host: usize,
    /// The row: `workload name=value, ...` (its axes).
    pub row: String,
    pub workload: String,
    /// The axes' values, `name=value, ...` (`-` when none).
    pub axes: String,
    /// The row's status on this host (`missing` when its run lacks it).
    pub status: String,
    pub unit: Option<Unit>,
    pub direction: Option<Direction>,
    /// The host's median (ok rows).
    pub median: Option<f64>,
    /// The median of the medians of the hosts of its group.
    pub fleet_median: Option<f64>,
    /// median / fleet median.
    pub ratio: Option<f64>,
    /// The ratio's 95% interval: the interval of the host's median from its
    /// trial medians, over the fleet median.
    pub ratio_ci95: Option<[f64; 2]>,
    /// Trials with timed samples.
    pub trials: usize,
    /// Trials that other processes or the hypervisor disturbed, and by how
    /// much (`2 of 3 trials disturbed (others took 98% of their CPUs)`):
    /// such a row is neither plainly in band nor plainly an outlier.
    pub disturbed: Option<String>,
    /// Whether a signal (Ctrl-C, or a time limit's SIGTERM) cut the row
    /// short of its planned trials.
    pub cut: bool,
    pub standing: Standing,
}

impl Entry {
    /// The standing in words, qualified where the row is not a plain
    /// measurement: `in band, from disturbed trials`, `worse, cut short`.
    pub fn standing_text(&self) -> String {
        let mut s = self.standing.as_str().to_string();
        if matches!(self.standing, Standing::NotOk(_) | Standing::Skipped(_) | Standing::Missing(_)) {
            return s;
        }
        if self.disturbed.is_some() {
            s.push_str(", from disturbed trials");
        }
        if self.cut {
            s.push_str(", cut short");
        }
        s
    }

    /// How far the ratio lies from 1, on the log scale (0 without one).
    pub fn distance(&self) -> f64 {
        self.ratio.filter(|r| *r > 0.0).map_or(0.0, |r| r.ln().abs())
    }
}

/// The fleet: its hosts, their groups and every host's rows, outliers
/// first (farthest first), then by row and host.
#[derive(Clone, Debug, PartialEq)]
pub struct Fleet {
    pub hosts: Vec<Host>,
    pub groups: Vec<Group>,
    pub entries: Vec<Entry>,
    /// The noise band (a fraction: 0.02 = 2%).
    pub band: f64,
    /// How hosts that share a hostname were named apart.
    pub naming: Vec<String>,
}

impl Fleet {
    /// The outliers, farthest first.
    pub fn outliers(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.standing.is_outlier())
    }

    /// The rows that are not ok on their host, or missing from its run.
    pub fn not_ok(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| matches!(e.standing, Standing::NotOk(_) | Standing::Missing(_)))
    }

    /// The rows skipped on their host (it cannot run them).
    pub fn skipped(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| matches!(e.standing, Standing::Skipped(_)))
    }

    /// The hosts by the submission their runs belong to, in the order each
    /// first comes (`None`: runs made on their own).
    pub fn submissions(&self) -> Vec<(Option<&str>, Vec<usize>)> {
        let mut out: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let s = h.submission.as_deref();
            match out.iter_mut().find(|(k, _)| *k == s) {
                Some((_, hosts)) => hosts.push(i),
                None => out.push((s, vec![i])),
            }
        }
        out
    }
}

/// The hostname of an envelope, `unknown-host` without one.
fn hostname(e: &Envelope) -> String {
    e.hostname.ok().cloned().unwrap_or_else(|| "unknown-host".into())
}

/// Unique names for the runs: the hostname, or where runs share one, the
/// Slurm node each ran on (when that sets them apart: Slurm's several
/// nodes on one machine), else the label (likewise), else the run's id; a name still
/// taken gets `#2`, `#3`... Returns the names and a sentence for each
/// hostname that needed it.
fn host_names(runs: &[(&str, &StoredRun)]) -> (Vec<String>, Vec<String>) {
    let hostnames: Vec<String> = runs.iter().map(|(_, s)| hostname(&s.run.envelope)).collect();
    let mut by_host: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, h) in hostnames.iter().enumerate() {
        by_host.entry(h).or_default().push(i);
    }
    let mut names = hostnames.clone();
    let mut naming = Vec::new();
    for (h, idx) in &by_host {
        if idx.len() < 2 {
            continue;
        }
        let apart = |tags: &[Option<&str>]| {
            tags.iter().all(|t| t.is_some_and(|t| !t.is_empty()))
                && tags.iter().collect::<std::collections::BTreeSet<_>>().len() == tags.len()
        };
        let nodes: Vec<Option<&str>> = idx.iter().map(|&i| runs[i].1.run.envelope.slurm.as_ref().and_then(|s| s.node.as_deref())).collect();
        let labels: Vec<Option<&str>> = idx.iter().map(|&i| Some(runs[i].1.run.label.as_str())).collect();
        let (by, tags): (&str, Vec<Option<&str>>) = if apart(&nodes) {
            ("Slurm node", nodes)
        } else if apart(&labels) {
            ("label", labels)
        } else {
            ("run id", idx.iter().map(|&i| Some(runs[i].1.run.id.as_str())).collect())
        };
        for (&i, tag) in idx.iter().zip(tags) {
            names[i] = format!("{h}/{}", tag.unwrap_or_default());
        }
        naming.push(format!("{} runs share the hostname {h}: they are named by their {by} ({h}/...)", idx.len()));
    }
    // Whatever is still taken twice gets a number.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for n in &mut names {
        let k = seen.entry(n.clone()).or_insert(0);
        *k += 1;
        if *k > 1 {
            *n = format!("{n}#{k}");
        }
    }
    (names, naming)
}

/// `CPU model, N CPUs, kernel R`.
fn group_title(e: &Envelope) -> String {
    let model = e.cpu.model_name.ok().cloned().unwrap_or_else(|| "unknown CPU".into());
    let cpus = e.cpu.logical_cpus.ok().map(|n| format!("{n} CPUs")).unwrap_or_else(|| "? CPUs".into());
    let kernel = e.kernel.release.ok().cloned().unwrap_or_else(|| "unknown".into());
    format!("{model}, {cpus}, kernel {kernel}")
}

/// The row's key: workload and axis values.
fn key(r: &Row) -> (String, String) {
    (r.cell.workload.clone(), r.axes_text())
}

/// How a host's run stands, if it is not a whole run on a quiet machine
/// (see [`Host::state`]).
fn run_state(s: &StoredRun) -> Option<String> {
    let run = &s.run;
    let (ran, planned) = (s.rows.len(), run.plan.len());
    let mut parts = Vec::new();
    if run.finished_utc.is_none() {
        parts.push(format!("incomplete: no finish record (killed, or still running): {ran} of {planned} cells ran"));
    } else if run.interrupted {
        parts.push(format!("cut: a signal (Ctrl-C, or a time limit's SIGTERM) stopped it: {ran} of {planned} cells ran"));
    } else if !run.complete || !run.not_run.is_empty() {
        if run.launcher.is_some() {
            parts.push(format!("cut: the connection dropped: {ran} of {planned} cells arrived"));
        } else {
            parts.push(format!("cut: it ended early: {ran} of {planned} cells ran"));
        }
    }
    if let Some(i) = run.interference.as_ref().filter(|i| i.disturbed) {
        parts.push(format!("busy: others took {:.0}% of its CPUs", 100.0 * i.others_share));
    }
    let disturbed = s.rows.iter().filter(|r| r.disturbed_trials() > 0).count();
    if disturbed > 0 {
        parts.push(format!("{} of {} rows from disturbed trials", disturbed, s.rows.len()));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Why a host's run has no row of `k`: the cell was planned and the run
/// was cut before it (the connection dropped, a signal, no finish record),
/// or the run never planned it.
fn why_missing(s: &StoredRun, k: &(String, String)) -> String {
    let run = &s.run;
    let planned = run.plan.iter().any(|c| c.workload == k.0 && c.axes_text_without("") == k.1);
    if !planned {
        return "not in this host's plan".into();
    }
    if run.finished_utc.is_none() {
        "the run has no finish record (it was killed, or is still running)".into()
    } else if run.interrupted {
        "the run was stopped (Ctrl-C, or a time limit) before this row".into()
    } else if run.launcher.is_some() {
        "the connection dropped before this row arrived".into()
    } else {
        "the run ended before this row".into()
    }
}

/// The interval of the ratio of `row`'s median to `fleet`, or why there is
/// none: the row's own 95% interval over trials (as its report prints it;
/// the exact ratio when its trial medians are all equal) over the fleet
/// median.
fn ratio_interval(row: &Row, fleet: f64) -> Result<[f64; 2], String> {
    let tm = row.trial_medians();
    if tm.len() < 2 {
        return Err(format!("{} trial: an interval needs at least 2 (--trials)", tm.len()));
    }
    if fleet <= 0.0 || tm.iter().any(|x| *x <= 0.0) {
        return Err("a median is zero or negative".into());
    }
    let (lo, hi) = row.interval().unwrap_or((tm[0], tm[0]));
    Ok([lo / fleet, hi / fleet])
}

/// The fleet of `runs` (each with the name it was given by), judged
/// against the noise band `band` (a fraction). Cost: linear in the rows,
/// plus a sort.
pub fn build(runs: &[(&str, &StoredRun)], band: f64) -> Fleet {
    let (names, naming) = host_names(runs);
    // Groups by kind of machine, in the order their first host comes.
    let mut groups: Vec<Group> = Vec::new();
    let mut kinds: Vec<Vec<(&'static str, String)>> = Vec::new();
    let mut hosts = Vec::new();
    for (i, (dir, s)) in runs.iter().enumerate() {
        let kind = s.run.envelope.kind();
        let g = match kinds.iter().position(|k| *k == kind) {
            Some(g) => g,
            None => {
                let differs = kinds
                    .first()
                    .map(|first| first.iter().zip(&kind).filter(|(a, b)| a.1 != b.1).map(|(a, b)| format!("{} {}", a.0, b.1)).collect())
                    .unwrap_or_default();
                groups.push(Group { title: group_title(&s.run.envelope), differs, hosts: Vec::new() });
                kinds.push(kind);
                kinds.len() - 1
            }
        };
        groups[g].hosts.push(i);
        hosts.push(Host {
            name: names[i].clone(),
            hostname: hostname(&s.run.envelope),
            run: dir.to_string(),
            group: g,
            state: run_state(s),
            submission: s.run.submission(),
        });
    }
    // Each host's rows by key; every key of the group, in the order of the
    // first host that has it.
    let by_key: Vec<HashMap<(String, String), &Row>> = runs.iter().map(|(_, s)| s.rows.iter().map(|r| (key(r), r)).collect()).collect();
    let mut entries = Vec::new();
    for group in &groups {
        let mut keys: Vec<((String, String), String)> = Vec::new();
        let mut seen: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
        for &h in &group.hosts {
            for r in &runs[h].1.rows {
                let k = key(r);
                if seen.insert(k.clone()) {
                    keys.push((k, r.cell.display_name()));
                }
            }
        }
        for (k, name) in keys {
            let present: Vec<(usize, &Row)> = group.hosts.iter().filter_map(|&h| by_key[h].get(&k).map(|r| (h, *r))).collect();
            // The first host with the row sets the parameters; a host that
            // measured it with others is listed apart.
            let reference = present.first().map(|(_, r)| *r);
            let differs = |r: &Row| reference.map(|f| parameter_differences(f, r, &[])).unwrap_or_default();
            let like: Vec<&Row> = present.iter().map(|(_, r)| *r).filter(|r| differs(r).is_empty()).collect();
            let unit = like.iter().find(|r| r.median().is_some()).map(|r| r.unit);
            let medians: Vec<f64> = like.iter().filter(|r| Some(r.unit) == unit).filter_map(|r| r.median()).collect();
            let fleet = (!medians.is_empty()).then(|| median(&medians));
            for &h in &group.hosts {
                let blank = Entry {
                    host: h,
                    row: name.clone(),
                    workload: k.0.clone(),
                    axes: k.1.clone(),
                    status: "missing".into(),
                    // The fleet median is printed in the row's unit.
                    unit,
                    direction: None,
                    median: None,
                    fleet_median: fleet,
                    ratio: None,
                    ratio_ci95: None,
                    trials: 0,
                    disturbed: None,
                    cut: false,
                    standing: Standing::Missing(String::new()),
                };
                let Some(row) = by_key[h].get(&k) else {
                    entries.push(Entry { standing: Standing::Missing(why_missing(runs[h].1, &k)), ..blank });
                    continue;
                };
                let mut e = Entry {
                    status: row.status.as_str().into(),
                    unit: Some(row.unit),
                    direction: Some(row.direction),
                    median: row.median(),
                    trials: row.trial_medians().len(),
                    disturbed: row.disturbed_text(),
                    cut: row.cut_short(),
                    ..blank
                };
                let differences = differs(row);
                e.standing = match (e.median, fleet) {
                    _ if !differences.is_empty() => Standing::Differs(differences.join("; ")),
                    _ if row.status == Status::Skipped => Standing::Skipped(row.reason.clone().unwrap_or_default()),
                    _ if row.status != Status::Ok => {
                        Standing::NotOk(row.reason.clone().map_or_else(|| e.status.clone(), |why| format!("{}: {why}", e.status)))
                    }
                    (None, _) => Standing::NoInterval("no timed samples".into()),
                    _ if Some(row.unit) != unit => Standing::NoInterval(format!("its unit {} is not the other hosts'", row.unit.as_str())),
                    (Some(m), Some(f)) if f > 0.0 => {
                        e.ratio = Some(m / f);
                        match ratio_interval(row, f) {
                            Ok([lo, hi]) => {
                                e.ratio_ci95 = Some([lo, hi]);
                                match verdict_of(row.direction, lo, hi, band, "the noise band").0 {
                                    Verdict::Regressed => Standing::Worse,
                                    Verdict::Improved => Standing::Better,
                                    _ => Standing::InBand,
                                }
                            }
                            Err(why) => Standing::NoInterval(why),
                        }
                    }
                    _ => Standing::NoInterval("the fleet median is zero or negative".into()),
                };
                entries.push(e);
            }
        }
    }
    // Outliers first, farthest first; the rest keep their order (by group,
    // row, host) as the sort is stable.
    entries.sort_by(|a, b| {
        b.standing
            .is_outlier()
            .cmp(&a.standing.is_outlier())
            .then_with(|| if a.standing.is_outlier() { b.distance().total_cmp(&a.distance()) } else { std::cmp::Ordering::Equal })
    });
    Fleet { hosts, groups, entries, band, naming }
}

#[cfg(test)]
mod tests;
