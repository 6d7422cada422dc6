//! The workload contract: what every workload declares and implements.
//!
//! A workload declares a [`WorkloadSpec`] (id, unit, timed region, verifier,
//! parameters with their quick / full / seed values) that `list`, the docs and
//! the records print from. At run time the worker asks it to [`Workload::prepare`]
//! a cell outside any timed window, handing it a [`PrepareContext`] (what the
//! worker process knows that the cell does not say: the CPUs it started with,
//! the descriptors its children must close), then calls [`Instance::sample`] repeatedly;
//! the instance brackets its own work window with the [`Timer`] and reports how
//! many operations the sample did. After every sample the harness calls
//! [`Instance::verify`], outside the timed window.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::measure::clock;
use crate::measure::counters::{Counts, Probe};
use crate::model::params::parse_suffixed_int;
use crate::model::{Cell, Named, Profile};

/// The vocabulary a workload declares itself in (defined in `model`, which
/// the records share), so that a workload's file takes its contract from one
/// `use`.
pub use crate::model::{Direction, TableShape, Unit, Work};

/// What a parameter's values may be.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum ParamKind {
    Int {
        min: i64,
        max: i64,
    },
    Choice {
        choices: Vec<&'static str>,
    },
    /// The worker-count axis: a list of counts, or `auto` from the topology.
    Workers,
    /// One of `choices`, or `PREFIX:TEXT` for a prefix in `prefixes` with
    /// any non-empty text (the allocator axis's `preload:<path.so>`).
    OpenChoice {
        choices: Vec<&'static str>,
        prefixes: Vec<&'static str>,
    },
}

/// One named knob of a workload with its value in each profile. More than one
/// value in a profile makes it an axis of that profile.
#[derive(Clone, Debug, Serialize)]
pub struct ParamSpec {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: ParamKind,
    pub quick: Vec<Value>,
    pub full: Vec<Value>,
    pub seed: Vec<Value>,
    /// A treatment applied to the system under test (e.g. a deliberate
    /// slowdown), not a size: `compare` matches rows across different
    /// values of it instead of calling them not comparable.
    pub treatment: bool,
}

impl ParamSpec {
    /// An integer parameter bounded to `min..=max`.
    pub fn int(name: &'static str, help: &'static str, min: i64, max: i64, [quick, full, seed]: [i64; 3]) -> Self {
        ParamSpec {
            name,
            help,
            kind: ParamKind::Int { min, max },
            quick: vec![quick.into()],
            full: vec![full.into()],
            seed: vec![seed.into()],
            treatment: false,
        }
    }

    /// A parameter taking one of a fixed set of words.
    pub fn choice(name: &'static str, help: &'static str, choices: &[&'static str], [quick, full, seed]: [&'static str; 3]) -> Self {
        ParamSpec {
            name,
            help,
            kind: ParamKind::Choice { choices: choices.to_vec() },
            quick: vec![quick.into()],
            full: vec![full.into()],
            seed: vec![seed.into()],
            treatment: false,
        }
    }

    /// A parameter taking one of the names of `E`: the spec's list of
    /// choices, the parser ([`Cell::choice`]) and the names in the records
    /// all come from `E`'s one list (`named_enum!` in `model::names`).
    pub fn choice_of<E: Named>(name: &'static str, help: &'static str, [quick, full, seed]: [E; 3]) -> Self {
        ParamSpec::choice(name, help, E::NAMES, [quick.name(), full.name(), seed.name()])
    }

    /// [`ParamSpec::choice_of`] swept as an axis: every value of `E` in every
    /// profile, the first the default.
    pub fn axis_of<E: Named>(name: &'static str, help: &'static str) -> Self {
        let all: Vec<Value> = E::NAMES.iter().map(|&n| n.into()).collect();
        ParamSpec::choice(name, help, E::NAMES, [E::NAMES[0]; 3])
            .with_values(Profile::Quick, all.clone())
            .with_values(Profile::Full, all.clone())
            .with_values(Profile::Seed, all)
    }

    /// The worker-count axis (`auto` in every profile: from the topology).
    pub fn workers(help: &'static str) -> Self {
        ParamSpec {
            name: "workers",
            help,
            kind: ParamKind::Workers,
            quick: vec!["auto".into()],
            full: vec!["auto".into()],
            seed: vec!["auto".into()],
            treatment: false,
        }
    }

    /// Marks the parameter as a treatment (see [`ParamSpec::treatment`]).
    pub fn treated(mut self) -> Self {
        self.treatment = true;
        self
    }

    /// Replaces one profile's values (e.g. to sweep an axis in `full`).
    pub fn with_values(mut self, profile: Profile, values: Vec<Value>) -> Self {
        *match profile {
            Profile::Quick => &mut self.quick,
            Profile::Full => &mut self.full,
            Profile::Seed => &mut self.seed,
        } = values;
        self
    }

    pub fn values(&self, profile: Profile) -> &[Value] {
        match profile {
            Profile::Quick => &self.quick,
            Profile::Full => &self.full,
            Profile::Seed => &self.seed,
        }
    }

    /// Parses one value typed by the user, checking it against the kind.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let t = text.trim();
        match &self.kind {
            ParamKind::Int { min, max } => {
                let v = parse_suffixed_int(t).ok_or_else(|| format!("'{t}' is not an integer"))?;
                if v < *min || v > *max {
                    return Err(format!("{v} is outside {min}..={max}"));
                }
                Ok(v.into())
            }
            ParamKind::Choice { choices } => {
                if choices.contains(&t) {
                    Ok(t.into())
                } else {
                    Err(format!("'{t}' is not one of {}", choices.join(", ")))
                }
            }
            ParamKind::OpenChoice { choices, prefixes } => {
                let open = prefixes.iter().any(|p| t.strip_prefix(p).and_then(|r| r.strip_prefix(':')).is_some_and(|r| !r.is_empty()));
                if choices.contains(&t) || open {
                    Ok(t.into())
                } else {
                    let prefixed: Vec<String> = prefixes.iter().map(|p| format!("{p}:<...>")).collect();
                    Err(format!("'{t}' is not one of {}, {}", choices.join(", "), prefixed.join(", ")))
                }
            }
            ParamKind::Workers => {
                let v: i64 = t.parse().map_err(|_| format!("'{t}' is not a worker count"))?;
                if !(1..=4096).contains(&v) {
                    return Err(format!("{v} workers is outside 1..=4096"));
                }
                Ok(v.into())
            }
        }
    }
}

/// The declaration of a workload: everything `list`, the docs and the records
/// say about it, from one source.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadSpec {
    pub id: &'static str,
    pub group: &'static str,
    /// One line: what it is.
    pub summary: &'static str,
    /// What the number means for the system under test.
    pub measures: &'static str,
    pub unit: Unit,
    /// What is inside the work window, and what is not.
    pub timed_region: &'static str,
    /// What the total window adds, when the workload records one.
    pub total_window: Option<&'static str>,
    /// How the result is checked, and where the expected value comes from.
    pub verifier: &'static str,
    /// Whether one sample batches many iterations of a nanosecond-scale
    /// operation (calibrated by the harness).
    pub batched: bool,
    pub params: Vec<ParamSpec>,
    /// Faults a test can inject (`--inject-fault NAME`) to prove the verifier
    /// fails: each breaks the result on purpose.
    pub faults: &'static [&'static str],
    /// How the report tabulates the workload's rows.
    pub shape: TableShape,
}

impl WorkloadSpec {
    pub fn direction(&self) -> Direction {
        self.unit.direction()
    }

    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Selftest workloads are hidden from `list` and the default selection.
    pub fn hidden(&self) -> bool {
        self.group == "selftest"
    }
}

/// The verifier's check of a sample's result: passed, with the expected and
/// the observed value (a comparison's judgement is `compare::Verdict`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub passed: bool,
    /// The expected value and where it came from.
    pub expected: String,
    pub observed: String,
}

impl Check {
    /// Compares two displayable values.
    pub fn equal<T: PartialEq + std::fmt::Display>(expected: T, observed: T) -> Check {
        Check { passed: expected == observed, expected: expected.to_string(), observed: observed.to_string() }
    }
}

/// What a workload's `prepare` gets from the worker besides the cell: the
/// facts of the worker process (which a workload must not read from process
/// globals or from the thread it happens to run on) and the cell's scratch
/// directory and fault. The worker builds it once, before pinning itself.
#[derive(Clone, Debug, PartialEq)]
pub struct PrepareContext {
    /// The CPUs the worker process was allowed when it started, before any
    /// pinning: the set a workload that places its own threads chooses from.
    pub allowed: Vec<usize>,
    /// Descriptors every child a workload forks must close (the worker's
    /// report channel): [`PrepareContext::fork_child`] closes them.
    pub close_in_children: Vec<RawFd>,
    /// The cell's private scratch directory, created by the runner (`None`
    /// in the plan, or when the workload needs none).
    pub scratch: Option<PathBuf>,
    /// A fault injected on purpose (`--inject-fault`); `None` in every normal run.
    pub fault: Option<String>,
}

impl PrepareContext {
    /// The context of a cell in a worker that started with `allowed` CPUs and
    /// must keep `close_in_children` from its children.
    pub fn new(cell: &Cell, allowed: Vec<usize>, close_in_children: Vec<RawFd>) -> PrepareContext {
        PrepareContext { allowed, close_in_children, scratch: cell.scratch_dir.as_ref().map(PathBuf::from), fault: cell.fault.clone() }
    }

    /// The context of a cell prepared outside a worker (unit tests, tools):
    /// the calling thread's CPUs now, no descriptor to close.
    #[cfg(test)]
    pub fn current(cell: &Cell) -> PrepareContext {
        PrepareContext::new(cell, crate::measure::affinity::current_thread().unwrap_or_default(), Vec::new())
    }

    /// Whether the fault `name` is injected into this cell.
    pub fn fault_is(&self, name: &str) -> bool {
        self.fault.as_deref() == Some(name)
    }

    /// The cell's scratch directory; an error when it has none or it is gone.
    pub fn scratch_dir(&self) -> anyhow::Result<&Path> {
        let d = self
            .scratch
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("this cell has no scratch directory (run it through `proofbench run`)"))?;
        anyhow::ensure!(d.is_dir(), "scratch directory {} does not exist", d.display());
        Ok(d)
    }

    /// Forks a child that runs `body` ([`crate::workloads::process::fork_child`]),
    /// closing in it `close` and the worker's own descriptors
    /// ([`PrepareContext::close_in_children`]).
    pub fn fork_child(&self, close: &[RawFd], body: impl FnOnce() -> i32) -> std::io::Result<libc::pid_t> {
        let all: Vec<RawFd> = close.iter().chain(&self.close_in_children).copied().collect();
        crate::workloads::process::fork_child(&all, body)
    }
}

/// A prepared cell, or the reason it cannot run.
pub enum Prepared {
    /// The instance, as the harness drives it (made by [`Prepared::ready`]).
    Ready(Box<dyn Sampler>),
    /// This machine cannot run the cell (no SMT siblings, a refused
    /// syscall, too little memory): the reason says why.
    Skip(String),
    /// The cell does not apply by design, on any machine (a placement for a
    /// workload with one end): the reason says why. The report lists such
    /// rows apart, briefly, not among the rows that are not ok.
    NotApplicable(String),
}

impl Prepared {
    /// A prepared instance, ready to be sampled.
    pub fn ready<I: Instance + 'static>(inst: I) -> Prepared {
        Prepared::Ready(Sampled::boxed(inst))
    }
}

/// The work windows of one sample, bracketed by the workload.
///
/// `start`/`stop` bracket the work window around code in this thread;
/// workloads whose work happens elsewhere (threads, child processes) record
/// the windows they measured with [`Timer::record_work`] and
/// [`Timer::record_total`]. Timestamps come from `CLOCK_MONOTONIC`, which is
/// comparable across threads and processes.
///
/// A timer made [`Timer::with_counters`] also reads the worker's counters just
/// outside its own clock reads, so that they cover exactly the work window.
#[derive(Debug, Default)]
pub struct Timer {
    started: Option<u64>,
    work_ns: Option<u64>,
    total_ns: Option<u64>,
    value: Option<f64>,
    total_value: Option<f64>,
    counters: Option<TimerCounters>,
}

#[derive(Debug)]
struct TimerCounters {
    probe: Arc<Mutex<Probe>>,
    begin: Option<Counts>,
    window: Option<(Counts, Counts)>,
}

impl TimerCounters {
    fn snapshot(&self) -> Counts {
        self.probe.lock().unwrap_or_else(|p| p.into_inner()).snapshot()
    }
}

impl Timer {
    pub fn new() -> Timer {
        Timer::default()
    }

    /// A timer whose `start`/`stop` also snapshot these counters (before the
    /// opening clock read and after the closing one).
    pub fn with_counters(probe: Arc<Mutex<Probe>>) -> Timer {
        Timer { counters: Some(TimerCounters { probe, begin: None, window: None }), ..Timer::default() }
    }

    /// The counters around the last `start`..`stop` window, if this timer
    /// reads counters and the workload used `start`/`stop`.
    pub fn take_counter_window(&mut self) -> Option<(Counts, Counts)> {
        self.counters.as_mut().and_then(|c| c.window.take())
    }

    /// Opens the work window.
    #[inline]
    pub fn start(&mut self) {
        if let Some(c) = self.counters.as_mut() {
            c.begin = Some(c.snapshot());
        }
        self.started = Some(clock::now_ns());
    }

    /// Closes the work window opened by `start`.
    #[inline]
    pub fn stop(&mut self) {
        let end = clock::now_ns();
        if let Some(s) = self.started.take() {
            self.work_ns = Some(end.saturating_sub(s));
        }
        if let Some(c) = self.counters.as_mut()
            && let Some(b) = c.begin.take()
        {
            c.window = Some((b, c.snapshot()));
        }
    }

    pub fn record_work(&mut self, ns: u64) {
        self.work_ns = Some(ns);
    }

    pub fn record_total(&mut self, ns: u64) {
        self.total_ns = Some(ns);
    }

    /// Records the sample's value in the row's unit directly, for workloads
    /// whose number is not derived from a window (a metric a command prints
    /// about itself); the harness then uses it instead of deriving one.
    pub fn record_value(&mut self, value: f64) {
        self.value = Some(value);
    }

    /// Records the total window's value in the row's unit directly (see
    /// [`Timer::record_value`]).
    pub fn record_total_value(&mut self, value: f64) {
        self.total_value = Some(value);
    }

    /// The value recorded with [`Timer::record_value`], if any.
    pub fn value(&self) -> Option<f64> {
        self.value
    }

    /// The value recorded with [`Timer::record_total_value`], if any.
    pub fn total_value(&self) -> Option<f64> {
        self.total_value
    }

    pub fn work_ns(&self) -> Option<u64> {
        self.work_ns
    }

    pub fn total_ns(&self) -> Option<u64> {
        self.total_ns
    }
}

/// A cell prepared by a workload, ready to be sampled.
///
/// A sample returns what it did ([`Work`]) and its [`Instance::Outcome`]:
/// what the verifier needs to judge it (a count, a checksum, the first
/// mismatch), returned by value once the work window is closed. The harness
/// keeps the last outcome and hands it to [`Instance::verify`] after every
/// sample, so the verifier always has one: an instance stores no "last
/// sample" of its own.
pub trait Instance {
    /// What one sample hands to the verifier.
    type Outcome;

    /// Runs one sample of `iters` iterations (1 unless the spec is batched),
    /// brackets its work window with `timer`, and returns the work done and
    /// the outcome.
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Self::Outcome)>;

    /// Checks the outcome of the last sample against the independent
    /// expectation computed at prepare time.
    fn verify(&mut self, last: &Self::Outcome) -> Check;

    /// Workload-specific facts for the row (split points, sizes...); `last`
    /// is the last sample's outcome, if a sample ran.
    fn details(&self, last: Option<&Self::Outcome>) -> Value {
        let _ = last;
        Value::Null
    }
}

/// A prepared instance as the harness drives it: an [`Instance`] with the
/// outcome of its last sample kept beside it ([`Sampled`]), its type erased.
pub trait Sampler {
    /// Runs one sample (see [`Instance::sample`]) and keeps its outcome.
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<Work>;

    /// Verifies the last sample's outcome. The worker calls it only after a
    /// sample; before any, it fails, saying so.
    fn verify(&mut self) -> Check;

    /// The instance's details with the last outcome.
    fn details(&self) -> Value;
}

/// An [`Instance`] and the outcome of its last sample.
pub struct Sampled<I: Instance> {
    inst: I,
    last: Option<I::Outcome>,
}

impl<I: Instance> Sampled<I> {
    pub fn new(inst: I) -> Sampled<I> {
        Sampled { inst, last: None }
    }

    /// `inst`, boxed as the harness drives it.
    pub fn boxed(inst: I) -> Box<dyn Sampler>
    where
        I: 'static,
    {
        Box::new(Sampled::new(inst))
    }
}

impl<I: Instance> Sampler for Sampled<I> {
    #[inline]
    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        // A sample that fails leaves no outcome: the details then show none
        // rather than an earlier sample's. (Dropped here, before the sample
        // opens its window.)
        self.last = None;
        let (work, outcome) = self.inst.sample(iters, timer)?;
        self.last = Some(outcome);
        Ok(work)
    }

    fn verify(&mut self) -> Check {
        match &self.last {
            Some(last) => self.inst.verify(last),
            None => Check { passed: false, expected: "a sample to verify".into(), observed: "verify was called before any sample".into() },
        }
    }

    fn details(&self) -> Value {
        self.inst.details(self.last.as_ref())
    }
}

/// A benchmark kind. Implementations are registered in `registry.rs`.
pub trait Workload: Send + Sync {
    fn spec(&self) -> WorkloadSpec;

    /// Builds the inputs of a cell, outside any timed window. Everything it
    /// needs besides the cell comes through `cx`.
    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared>;

    /// `prepare` with the context of the calling thread
    /// ([`PrepareContext::current`]), for unit tests.
    #[cfg(test)]
    fn prepare_here(&self, cell: &Cell) -> anyhow::Result<Prepared> {
        self.prepare(cell, &PrepareContext::current(cell))
    }

    /// Whether the workload works on files in the cell's scratch directory
    /// ([`PrepareContext::scratch_dir`]). When the runner cannot make
    /// that directory (a read-only `--io-dir`, a missing `TMPDIR`), such a
    /// cell is skipped with the reason, and the others run without one.
    fn needs_scratch(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_params_accept_suffixes_and_check_bounds() {
        let p = ParamSpec::int("range", "", 2, 1_000_000_000, [1, 2, 3]);
        assert_eq!(p.parse("3M").unwrap(), Value::from(3_000_000));
        assert_eq!(p.parse("3m").unwrap(), Value::from(3_000_000));
        assert_eq!(p.parse("3_000").unwrap(), Value::from(3000));
        assert!(p.parse("1").unwrap_err().contains("outside"));
        assert!(p.parse("many").unwrap_err().contains("not an integer"));
    }

    #[test]
    fn open_choices_take_a_prefixed_text() {
        let p = ParamSpec {
            name: "allocator",
            help: "",
            kind: ParamKind::OpenChoice { choices: vec!["system"], prefixes: vec!["preload"] },
            quick: vec![],
            full: vec![],
            seed: vec![],
            treatment: false,
        };
        assert_eq!(p.parse("system").unwrap(), Value::from("system"));
        assert_eq!(p.parse("preload:/x/lib.so").unwrap(), Value::from("preload:/x/lib.so"));
        assert!(p.parse("preload:").unwrap_err().contains("system, preload:<...>"));
        assert!(p.parse("tcmalloc").is_err());
    }

    #[test]
    fn choice_params_name_the_choices() {
        let p = ParamSpec::choice("wait", "", &["join", "spin"], ["join"; 3]);
        assert_eq!(p.parse("spin").unwrap(), Value::from("spin"));
        assert!(p.parse("sleep").unwrap_err().contains("join, spin"));
    }
}
