//! plan: turns a selection, a profile and the axis flags into the ordered list
//! of cells a run executes. Pure given the registry and the topology: it reads
//! no files and starts nothing.

pub mod select;
pub mod variant;
pub mod workers;

use serde_json::Value;

pub use workers::WorkersSpec;

pub use crate::model::run::{CompareMode, RunOptions};

use crate::model::placement::Placement;
use crate::model::profile::ProfileDefaults;
use crate::model::variant::Variant;
use crate::model::{Cell, MIN_TRIAL_BUDGET_MS, MeasureSpec, Params, PinStrategy, TrialPlan, value_text};
use crate::topology::{Topology, pin};
use crate::workloads::contract::{ParamKind, WorkloadSpec};

/// Errors in what the user asked for (exit code 2). Each names the flag.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("unknown workload '{pattern}'{hint} (known: {known})")]
    UnknownWorkload { pattern: String, hint: String, known: String },
    #[error("bad selection '{pattern}': {why}")]
    BadSelection { pattern: String, why: String },
    #[error("--workers {text}: {why}")]
    BadWorkers { text: String, why: String },
    #[error("--param {text}: {why}")]
    BadParam { text: String, why: String },
    #[error("--label '{label}': {why}")]
    BadLabel { label: String, why: String },
    #[error("--warmup/--runs: {0}")]
    BadMeasure(String),
    #[error("{flag} {value}: {why}")]
    BadTrials { flag: &'static str, value: String, why: String },
    #[error("--inject-fault {fault}: no selected workload has that fault ({have})")]
    BadFault { fault: String, have: String },
    #[error("--variant {text}: {why}")]
    BadVariant { text: String, why: String },
    #[error("--base {name}: {why}")]
    BadBase { name: String, why: String },
}

/// The ordered cells of a run and how many trials each gets.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub trials: TrialPlan,
    /// Positions in `cells` that are measured together: one cell alone, or
    /// the same cell under every variant (base first), whose trials the
    /// rounds run back to back so that each round pairs them.
    pub groups: Vec<Vec<usize>>,
    /// The variants (none in a run without them).
    pub variants: Vec<Variant>,
}

/// The most trials a cell may have.
pub const MAX_TRIALS: u32 = 1000;

/// The trial pairs a `--lockstep` comparison may take to be decided unless
/// `--max-trials` says otherwise (the run's budget ends it sooner): a 1%
/// change at 1.3% spread per pair (`cpu.primes` on two workers, measured)
/// needs about 30.
pub const LOCKSTEP_MAX_PAIRS: u32 = 30;

/// The time budget of a cell's timed samples over its trials (`--time-budget`, else the profile's), ms.
fn cell_budget_ms(req: &RunOptions) -> u64 {
    req.measurement.time_budget.map_or(ProfileDefaults::of(req.measurement.profile).cell_budget_ms, |d| d.as_millis() as u64)
}

/// The trials of a run from `--trials`, `--max-trials`, `--run-budget`,
/// `--ci-target` and the profile, checked against the cell's time budget
/// (every trial needs [`MIN_TRIAL_BUDGET_MS`] of it). With variants, every
/// cell gets the profile's paired trials, and the default run budget is
/// the profile's for each variant; in lockstep, a cell may take up to
/// [`LOCKSTEP_MAX_PAIRS`] pairs to be decided.
pub fn trial_plan(req: &RunOptions) -> Result<TrialPlan, PlanError> {
    let d = ProfileDefaults::of(req.measurement.profile);
    let bad = |flag: &'static str, value: u32, why: String| PlanError::BadTrials { flag, value: value.to_string(), why };
    let variants = req.selection.variants.len().max(1) as u64;
    let min = req.measurement.trials.unwrap_or(if variants > 1 { d.paired_trials } else { d.trials });
    let max = match (req.measurement.trials, req.measurement.max_trials) {
        (_, Some(m)) => m,
        (Some(n), None) => n,
        (None, None) if variants > 1 && req.selection.lockstep => LOCKSTEP_MAX_PAIRS.max(d.max_trials),
        (None, None) => d.max_trials,
    };
    if !(1..=MAX_TRIALS).contains(&min) {
        return Err(bad("--trials", min, format!("must be between 1 and {MAX_TRIALS}")));
    }
    if max < min || max > MAX_TRIALS {
        return Err(bad("--max-trials", max, format!("must be between the trials every cell gets ({min}) and {MAX_TRIALS}")));
    }
    let cell_budget = cell_budget_ms(req);
    let most = cell_budget / MIN_TRIAL_BUDGET_MS;
    if u64::from(min) > most {
        return Err(bad(
            "--trials",
            min,
            format!(
                "the {cell_budget} ms time budget of a cell's timed samples allows at most {most} trials ({MIN_TRIAL_BUDGET_MS} ms each); \
                 give a larger --time-budget or fewer trials"
            ),
        ));
    }
    Ok(TrialPlan {
        min,
        max,
        run_budget_ms: req.measurement.run_budget.map_or(d.run_budget_ms * variants, |d| d.as_millis() as u64),
        ci_target_pct: req.measurement.ci_target.unwrap_or_else(|| MeasureSpec::for_profile(req.measurement.profile).ci_target_pct),
    })
}

/// One `--param` after parsing: which workloads it applies to and its values.
struct Override {
    workload: Option<String>,
    name: String,
    text: String,
    raw: String,
    /// The `--variant` it came from (`NAME=SPEC` as typed), if any.
    variant: Option<String>,
}

impl Override {
    /// An error about this override, naming the flag it came from.
    fn error(&self, why: String) -> PlanError {
        match &self.variant {
            Some(v) => PlanError::BadVariant { text: v.clone(), why: format!("param={}: {why}", self.raw) },
            None => PlanError::BadParam { text: self.raw.clone(), why },
        }
    }
}

fn parse_override(raw: &str, specs: &[&WorkloadSpec]) -> Result<Override, PlanError> {
    let (key, text) =
        raw.split_once('=').ok_or_else(|| PlanError::BadParam { text: raw.to_string(), why: "expected NAME=VALUE".into() })?;
    let key = key.trim();
    let (workload, name) = match specs.iter().find_map(|s| key.strip_prefix(s.id).and_then(|r| r.strip_prefix('.')).map(|n| (s.id, n))) {
        // `cpu.primes.range=...` scopes the value to one workload.
        Some((id, name)) => (Some(id.to_string()), name.to_string()),
        None => (None, key.to_string()),
    };
    Ok(Override { workload, name, text: text.to_string(), raw: raw.to_string(), variant: None })
}

/// Checks a system label: it names directories and table columns.
pub fn check_label(label: &str) -> Result<(), PlanError> {
    let bad = |why: &str| Err(PlanError::BadLabel { label: label.to_string(), why: why.to_string() });
    if label.trim().is_empty() {
        return bad("must not be empty");
    }
    if label.len() > 80 {
        return bad("must be at most 80 characters");
    }
    if label.chars().any(|c| c.is_control() || c == '/' || c == '|') {
        return bad("must not contain '/', '|' or control characters");
    }
    Ok(())
}

/// Builds the plan for the system `label`, with every random input drawn from
/// `seed`. `specs` is the whole registry, in registry order. With
/// `--variant`, every cell is planned under each variant (see [`variant`]).
pub fn build(req: &RunOptions, label: &str, seed: u64, specs: &[WorkloadSpec], topo: &Topology) -> Result<Plan, PlanError> {
    let variants = variant::parse_all(&req.selection.variants, req.selection.base.as_deref())?;
    if variants.is_empty() {
        let (cells, trials) = build_one(req, label, seed, specs, topo, None)?;
        let groups = (0..cells.len()).map(|i| vec![i]).collect();
        return Ok(Plan { cells, trials, groups, variants });
    }
    // The base first in every group (`parse_all` keeps the order typed).
    let mut ordered: Vec<(&Variant, &String)> = variants.iter().zip(&req.selection.variants).filter(|(v, _)| v.base).collect();
    ordered.extend(variants.iter().zip(&req.selection.variants).filter(|(v, _)| !v.base));
    let mut planned: Vec<(Vec<Cell>, &Variant)> = Vec::new();
    let mut trials = None;
    for (v, text) in ordered {
        let (cells, t) = build_one(req, label, seed, specs, topo, Some((v, text)))?;
        trials = Some(t);
        planned.push((cells, v));
    }
    let key = |c: &Cell| (c.workload.clone(), c.display_name());
    let (base_cells, base) = &planned[0];
    for (cells, v) in &planned[1..] {
        let (a, b): (Vec<_>, Vec<_>) = (base_cells.iter().map(key).collect(), cells.iter().map(key).collect());
        if a != b {
            let first = a.iter().zip(&b).find(|(x, y)| x != y).map(|(x, y)| format!("'{}' against '{}'", x.1, y.1));
            let at = first.unwrap_or_else(|| format!("{} cells against {}", a.len(), b.len()));
            return Err(PlanError::BadVariant {
                text: v.name.clone(),
                why: format!(
                    "its cells do not line up with those of the base '{}' ({at}): a parameter that one variant sets must be set \
                     by every variant",
                    base.name
                ),
            });
        }
    }
    let (mut cells, mut groups) = (Vec::new(), Vec::new());
    for k in 0..base_cells.len() {
        let mut group = Vec::new();
        for (vc, v) in &planned {
            let mut c = vc[k].clone();
            c.index = cells.len();
            c.params.insert(crate::model::variant::AXIS.to_string(), Value::from(v.name.clone()));
            c.axes.insert(0, crate::model::variant::AXIS.to_string());
            c.row_id = row_id(c.index, &c);
            c.variant = Some((*v).clone());
            group.push(cells.len());
            cells.push(c);
        }
        groups.push(group);
    }
    Ok(Plan { cells, trials: trials.expect("two or more variants"), groups, variants })
}

/// `007-cpu.primes-variant=a-workers=2`: unique within a run, safe as a file
/// name and bounded (`model::file_name`): a 240-character axis value is cut,
/// with a hash of the whole.
fn row_id(index: usize, cell: &Cell) -> String {
    let mut id = format!("{index:03}-{}", cell.workload);
    for (a, v) in cell.axis_values() {
        id.push('-');
        id.push_str(&a);
        id.push('=');
        id.push_str(&value_text(&v));
    }
    crate::model::file_name::bounded(&id, crate::model::file_name::MAX_NAME_PART)
}

/// The cells of one plan: the selection under one variant (`NAME=SPEC` as
/// typed), or without one.
fn build_one(
    req: &RunOptions,
    label: &str,
    seed: u64,
    specs: &[WorkloadSpec],
    topo: &Topology,
    variant: Option<(&Variant, &str)>,
) -> Result<(Vec<Cell>, TrialPlan), PlanError> {
    check_label(label)?;
    let ids = select::select(specs, &req.selection.patterns, req.selection.include_selftest)?;
    let chosen: Vec<&WorkloadSpec> = ids.iter().filter_map(|id| specs.iter().find(|s| s.id == id)).collect();

    let mut overrides: Vec<Override> = req.selection.params.iter().map(|p| parse_override(p, &chosen)).collect::<Result<_, _>>()?;
    let flag = |name: &str, text: &str, raw: String| Override { workload: None, name: name.into(), text: text.into(), raw, variant: None };
    if let Some(r) = &req.selection.runtime {
        overrides.push(flag("runtime", r, format!("runtime={r} (--runtime)")));
    }
    if let Some(a) = &req.selection.allocator {
        overrides.push(flag("allocator", a, format!("allocator={a} (--allocator)")));
    }
    // A variant's values come last: they win over every flag.
    if let Some((v, text)) = variant {
        for p in v.params() {
            overrides.push(Override { variant: Some(text.to_string()), ..parse_override(&p, &chosen)? });
        }
    }
    for o in &overrides {
        let applies = chosen.iter().any(|s| o.workload.as_deref().is_none_or(|w| w == s.id) && s.param(&o.name).is_some());
        if !applies {
            let have: Vec<String> =
                chosen.iter().map(|s| format!("{}: {}", s.id, s.params.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))).collect();
            return Err(o.error(format!("no selected workload has a parameter '{}' ({})", o.name, have.join("; "))));
        }
    }
    let mut workers_flag = req.selection.workers.as_deref().map(WorkersSpec::parse).transpose()?;
    let mut pins = req.selection.pin.clone();
    pins.dedup();
    if pins.is_empty() {
        pins.push(PinStrategy::None);
    }
    match req.selection.compare.mode() {
        // RustFiber's core comparison runs its Linear strategy.
        Some(CompareMode::Cores) if pins == [PinStrategy::None] => pins = vec![PinStrategy::Linear],
        Some(CompareMode::Strategies) => {
            pins = PinStrategy::ALL.to_vec();
            workers_flag = Some(WorkersSpec::List(vec![topo.allowed_physical_cores().max(1)]));
        }
        _ => {}
    }
    if let Some(f) = &req.selection.inject_fault
        && !chosen.iter().any(|s| s.faults.contains(&f.as_str()))
    {
        let have: Vec<String> =
            chosen.iter().filter(|s| !s.faults.is_empty()).map(|s| format!("{}: {}", s.id, s.faults.join(", "))).collect();
        let have = if have.is_empty() { "the selected workloads have none".to_string() } else { have.join("; ") };
        return Err(PlanError::BadFault { fault: f.clone(), have });
    }

    let trials = trial_plan(req)?;
    let mut measure = MeasureSpec::for_profile(req.measurement.profile);
    if let Some(n) = req.measurement.runs {
        measure.fixed_runs = Some(n);
    }
    // Each trial gets its share of the cell's budget.
    measure.budget_ms = cell_budget_ms(req) / u64::from(trials.min);
    if let Some(w) = req.measurement.warmup {
        if w > 1000 {
            return Err(PlanError::BadMeasure(format!("{w} warmup samples is more than 1000")));
        }
        measure.warmup = w;
    }
    if let Some(s) = req.measurement.settle {
        measure.settle_ms = s.as_millis() as u64;
    }
    if let Some(c) = req.measurement.ci_target {
        measure.ci_target_pct = c;
    }

    let mut cells = Vec::new();
    for spec in chosen {
        // Values of every parameter, in declaration order.
        let mut columns: Vec<(String, Vec<Value>, bool)> = Vec::new();
        for p in &spec.params {
            let given = overrides.iter().rev().find(|o| o.name == p.name && o.workload.as_deref().is_none_or(|w| w == spec.id));
            let values: Vec<Value> = if p.kind == ParamKind::Workers {
                let from_param = given.map(|o| WorkersSpec::parse(&o.text)).transpose()?;
                let ws = from_param.or_else(|| workers_flag.clone()).unwrap_or(WorkersSpec::Auto);
                ws.counts(topo, req.selection.oversubscribe).into_iter().map(Value::from).collect()
            } else if let Some(o) = given {
                // A value given twice (`-p pad_pct=0,0`, or `1,01`) is one
                // cell, as a worker count given twice is.
                let mut values: Vec<Value> = Vec::new();
                for t in o.text.split(',') {
                    let v = p.parse(t).map_err(|why| o.error(why))?;
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                values
            } else {
                p.values(req.measurement.profile).to_vec()
            };
            let is_axis = p.kind == ParamKind::Workers || values.len() > 1;
            if p.kind == ParamKind::Workers && pins.len() > 1 {
                // Several strategies: `pin` is an axis of the workloads that place
                // workers, just before the worker count (which varies fastest).
                columns.push(("pin".into(), pins.iter().map(|p| Value::from(p.as_str())).collect(), true));
            }
            columns.push((p.name.to_string(), values, is_axis));
        }
        let axes: Vec<String> = columns.iter().filter(|c| c.2).map(|c| c.0.clone()).collect();
        let treatments: Vec<String> = spec.params.iter().filter(|p| p.treatment).map(|p| p.name.to_string()).collect();
        for combo in cartesian(&columns) {
            let params: Params = combo.iter().cloned().collect();
            let workers = params.get("workers").and_then(Value::as_u64).map(|w| w as usize);
            let pin = params.get("pin").and_then(Value::as_str).and_then(PinStrategy::from_name).unwrap_or(pins[0]);
            let placement = placement_for(pin, topo, workers);
            let index = cells.len();
            let mut cell = Cell {
                schema: crate::model::CELL_SCHEMA.to_string(),
                index,
                row_id: String::new(),
                workload: spec.id.to_string(),
                group: spec.group.to_string(),
                label: label.to_string(),
                profile: req.measurement.profile,
                params,
                axes: axes.clone(),
                treatments: Some(treatments.clone()),
                workers,
                placement,
                measure: measure.clone(),
                seed,
                fault: req.selection.inject_fault.clone().filter(|f| spec.faults.contains(&f.as_str())),
                scratch_dir: None,
                command: None,
                variant: None,
            };
            cell.row_id = row_id(index, &cell);
            cells.push(cell);
        }
    }
    Ok((cells, trials))
}

fn placement_for(strategy: PinStrategy, topo: &Topology, workers: Option<usize>) -> Placement {
    let k = workers.unwrap_or(1);
    let a = pin::assign(strategy, topo, k);
    Placement { class: workers::classify(k, topo), pin: strategy, cpus: a.cpus, note: a.note }
}

/// Every combination of the columns' values, the last column varying fastest.
fn cartesian(columns: &[(String, Vec<Value>, bool)]) -> Vec<Vec<(String, Value)>> {
    let mut out: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for (name, values, _) in columns {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push((name.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests;
