//! The cell: one workload with every parameter and axis fixed. It is what the
//! runner sends to a worker (as JSON on stdin) and what a row records.

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::command::CommandDef;
use super::names::Named;
use super::params::{Params, value_text};
use super::placement::Placement;
use super::profile::{Profile, ProfileDefaults};
use super::variant::Variant;

pub const CELL_SCHEMA: &str = "proofbench.cell/1";

/// How each trial of a cell is sampled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasureSpec {
    /// Warmup samples before the timed ones (kept, marked warmup).
    pub warmup: u32,
    /// Stopping rule: at least this many timed samples per trial (fewer
    /// when samples are long, see `worker::stopping`)...
    pub min_samples: u32,
    /// ...and at most this many.
    pub max_samples: u32,
    /// `--runs N`: exactly N timed samples per trial, no stopping rule.
    pub fixed_runs: Option<u32>,
    /// Time budget for the timed samples of one trial, milliseconds: the
    /// cell's budget shared by its planned trials.
    pub budget_ms: u64,
    /// Stop when the CI half-width of the trial's median is within this %
    /// of it (and add trials while the row's is wider).
    pub ci_target_pct: f64,
    /// Pause after prepare, before the first sample, milliseconds.
    pub settle_ms: u64,
    /// Batched workloads: the calibrated length of one sample, milliseconds.
    pub target_sample_ms: f64,
}

impl MeasureSpec {
    /// The defaults of a profile, for one trial of the profile's default
    /// trial count.
    pub fn for_profile(profile: Profile) -> MeasureSpec {
        let d = ProfileDefaults::of(profile);
        let budget_ms = d.cell_budget_ms / u64::from(d.trials);
        match profile {
            Profile::Quick => MeasureSpec {
                warmup: 1,
                min_samples: 3,
                max_samples: 50,
                fixed_runs: None,
                budget_ms,
                ci_target_pct: 2.0,
                settle_ms: 10,
                target_sample_ms: 2.0,
            },
            Profile::Full => MeasureSpec {
                warmup: 2,
                min_samples: 5,
                max_samples: 200,
                fixed_runs: None,
                budget_ms,
                ci_target_pct: 1.0,
                settle_ms: 20,
                target_sample_ms: 10.0,
            },
            Profile::Seed => MeasureSpec {
                warmup: 2,
                min_samples: 5,
                max_samples: 100,
                fixed_runs: None,
                budget_ms,
                ci_target_pct: 2.0,
                settle_ms: 20,
                target_sample_ms: 10.0,
            },
        }
    }
}

/// How many trials each cell of a run gets (run.json `trials`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialPlan {
    /// Trials every cell gets (rounds every cell takes part in).
    pub min: u32,
    /// Trials a cell may get while its interval is wider than the target
    /// (equal to `min` when `--trials` fixed the count).
    pub max: u32,
    /// No extra round starts once the run has taken this long, ms.
    pub run_budget_ms: u64,
    /// A row gets more trials while its interval's half-width is wider than
    /// this percentage of its median.
    pub ci_target_pct: f64,
}

/// One workload with every parameter fixed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub schema: String,
    /// Position in the plan, from 0.
    pub index: usize,
    /// Unique within the run; names `raw/<row_id>.csv` and `logs/<row_id>.log`.
    pub row_id: String,
    pub workload: String,
    pub group: String,
    /// The system label (the "System" column).
    pub label: String,
    pub profile: Profile,
    /// Every parameter's value, axes included.
    pub params: Params,
    /// The parameters swept in this plan (a sub-list of `params`' names).
    pub axes: Vec<String>,
    /// The parameters that plant a change on purpose (treatments, e.g. a
    /// planted slowdown), from the workload's definition: `compare` matches
    /// rows across their values. Absent in records written before it was
    /// recorded; reading one fills it from the built-in workload of that
    /// name (none when no built-in workload has the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub treatments: Option<Vec<String>>,
    /// Worker count, for workloads with a `workers` axis.
    pub workers: Option<usize>,
    pub placement: Placement,
    pub measure: MeasureSpec,
    /// Seed for every random input of the cell.
    pub seed: u64,
    /// A fault injected on purpose (`--inject-fault`), to prove the verifier
    /// fails; `None` in every normal run.
    pub fault: Option<String>,
    /// A private directory for the cell's files, created by the runner just
    /// before the worker starts and removed after it ends, however it ends
    /// (`null` in the plan).
    pub scratch_dir: Option<String>,
    /// The definition of a command workload (read from a `--workloads`
    /// file), carried in the cell so that the worker needs no file; absent
    /// for built-in workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandDef>,
    /// The variant this cell is measured under (`--variant`): its name is
    /// also the cell's `variant` axis value. Absent in a run without variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
}

impl Cell {
    fn value(&self, name: &str) -> anyhow::Result<&Value> {
        self.params.get(name).ok_or_else(|| anyhow!("cell {} has no parameter '{name}'", self.row_id))
    }

    pub fn int(&self, name: &str) -> anyhow::Result<i64> {
        self.value(name)?.as_i64().with_context(|| format!("parameter '{name}' is not an integer"))
    }

    pub fn usize(&self, name: &str) -> anyhow::Result<usize> {
        usize::try_from(self.int(name)?).with_context(|| format!("parameter '{name}' is negative"))
    }

    pub fn u64(&self, name: &str) -> anyhow::Result<u64> {
        u64::try_from(self.int(name)?).with_context(|| format!("parameter '{name}' is negative"))
    }

    pub fn str(&self, name: &str) -> anyhow::Result<&str> {
        self.value(name)?.as_str().with_context(|| format!("parameter '{name}' is not a word"))
    }

    /// The value of a choice parameter, as the enum naming its choices.
    pub fn choice<E: Named>(&self, name: &str) -> anyhow::Result<E> {
        let word = self.str(name)?;
        E::from_name(word).ok_or_else(|| anyhow!("parameter '{name}': '{word}' is not one of {}", E::NAMES.join(", ")))
    }

    /// The names of the treatments (empty when the record has none).
    pub fn treatment_names(&self) -> &[String] {
        self.treatments.as_deref().unwrap_or(&[])
    }

    /// The worker count (1 for workloads without a `workers` axis).
    pub fn worker_count(&self) -> usize {
        self.workers.unwrap_or(1)
    }

    /// The logical CPU worker `i` is pinned to, if the cell pins.
    pub fn cpu_for(&self, i: usize) -> Option<usize> {
        self.placement.cpus.as_ref().filter(|c| !c.is_empty()).map(|c| c[i % c.len()])
    }

    /// The axis values of this cell, in axis order, e.g. `workers=2`.
    pub fn axis_values(&self) -> Vec<(String, Value)> {
        self.axes.iter().filter_map(|a| self.params.get(a).map(|v| (a.clone(), v.clone()))).collect()
    }

    /// The axis values as text, `name=value, ...` in axis order, leaving out
    /// the axis `except` (`""` leaves out none); `-` when none is left: how
    /// `compare` and the history match rows.
    pub fn axes_text_without(&self, except: &str) -> String {
        let v: Vec<String> =
            self.axes.iter().filter(|a| *a != except).filter_map(|a| Some(format!("{a}={}", value_text(self.params.get(a)?)))).collect();
        if v.is_empty() { "-".into() } else { v.join(", ") }
    }

    /// A short human name: `cpu.primes workers=2`.
    pub fn display_name(&self) -> String {
        let mut s = self.workload.clone();
        for (k, v) in self.axis_values() {
            s.push(' ');
            s.push_str(&k);
            s.push('=');
            s.push_str(&value_text(&v));
        }
        s
    }
}
