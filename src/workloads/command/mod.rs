//! Command workloads: benchmarks a project brings itself, as `[[workload]]`
//! entries of a TOML file (`run --workloads FILE.toml`, or `./proofbench.toml`).
//!
//! Each entry becomes a workload with the same contract as a built-in one:
//! a spec (id, unit, timed region, verifier, axes) that `list` and the
//! records print, and an instance that runs the command once per sample and
//! verifies its exit code and output. The file is read and checked once, in
//! the parent, before anything runs ([`mod@file`]); the validated definition
//! ([`CommandDef`]) then travels inside each cell, so that a worker builds
//! the workload without the file ([`exec`]).
//!
//! The format is documented in docs/COMMAND-WORKLOADS.md.

pub mod exec;
pub mod file;
pub mod output;
pub mod placeholder;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::command::CommandDef;
use crate::model::{Cell, UsageError};
use crate::text::markdown::code;
use crate::workloads::contract::{ParamKind, ParamSpec, PrepareContext, Prepared, TableShape, Workload, WorkloadSpec};

/// The file read when no `--workloads` is given, if it exists.
pub const DEFAULT_FILE: &str = "proofbench.toml";

/// The warning for a command workload whose verifier checks only the exit
/// code: its `id`, then `what` (proofbench's wording, its keys in
/// backticks), then `at` (where the workload is declared, as the file said).
pub struct ExitCodeOnly<'a> {
    pub id: &'a str,
    pub what: String,
    pub at: &'a str,
}

impl CommandDef {
    /// The timed region, in words (markdown: the command and the regex as
    /// code spans whose fences outlast any backtick inside them).
    pub fn timed_region(&self) -> String {
        let cmd = code(&shown(&self.command));
        match &self.metric {
            None => {
                format!("one run of {cmd}, from spawn to exit (wall time, output captured); prepare and cleanup commands are outside it")
            }
            Some(m) => format!(
                "what the command measures itself: the number the regex {} reads from the output of one run of {cmd}{}; the run's wall time is the work window recorded beside it",
                code(&m.regex),
                if m.scale != 1.0 { format!(", times {}", m.scale) } else { String::new() }
            ),
        }
    }

    /// The verifier, in words (markdown, as [`CommandDef::timed_region`]).
    pub fn verifier_text(&self) -> String {
        let v = &self.verify;
        let mut parts = vec![format!("exit code {}", v.exit_code)];
        parts.extend(v.must_match.iter().map(|r| format!("the output matches {}", code(r))));
        parts.extend(v.must_not_match.iter().map(|r| format!("the output does not match {}", code(r))));
        if let Some(c) = &v.value {
            parts.push(format!("{} reads {} ± {}", code(&c.regex), c.expected, c.tolerance));
        }
        let only = if v.exit_code_only() { " only: the output is not checked" } else { "" };
        format!("{}{only} (from {}; checked after every run)", parts.join("; "), self.source)
    }

    /// What `list` and the report say of a workload whose verifier checks
    /// only the exit code (`None` when it checks the output), in pieces so
    /// that each output writes them its own way: the id, proofbench's wording
    /// (its keys in backticks), and where to add a check (the file's own
    /// text).
    pub fn exit_code_only_warning(&self) -> Option<ExitCodeOnly<'_>> {
        self.verify.exit_code_only().then(|| ExitCodeOnly {
            id: &self.id,
            what: format!(
                ": only the exit code of each run is checked (expected {}), not its output: a run that printed a wrong \
                 result passes. Add `must_match`, `must_not_match` or `value` under `[workload.verify]` at ",
                self.verify.exit_code
            ),
            at: &self.source,
        })
    }

    /// The spec `list`, the plan and the records use. Its texts are leaked:
    /// a process builds a handful of them, once.
    pub fn spec(&self) -> WorkloadSpec {
        let group = leak(self.group().to_string());
        let params = self
            .axes
            .iter()
            .map(|a| {
                let kind = if a.values.iter().all(Value::is_i64) {
                    ParamKind::Int { min: i64::MIN, max: i64::MAX }
                } else {
                    ParamKind::Choice { choices: a.values.iter().map(|v| leak(crate::model::value_text(v))).collect() }
                };
                ParamSpec {
                    name: leak(a.name.clone()),
                    help: leak(format!("axis from {}", self.source)),
                    kind,
                    quick: a.values.clone(),
                    full: a.values.clone(),
                    seed: a.values.clone(),
                    treatment: false,
                }
            })
            .collect();
        WorkloadSpec {
            id: leak(self.id.clone()),
            group,
            summary: leak(self.summary.clone()),
            measures: leak(self.measures.clone().unwrap_or_else(|| self.summary.clone())),
            unit: self.unit,
            timed_region: leak(self.timed_region()),
            total_window: self
                .metric
                .as_ref()
                .and_then(|m| m.total_regex.as_ref())
                .map(|r| leak(format!("the number the regex {} reads from the same output", code(r)))),
            verifier: leak(self.verifier_text()),
            batched: false,
            params,
            faults: &[],
            shape: TableShape::Scaling,
        }
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// An argument list as one line (for texts, not for a shell).
pub fn shown(argv: &[String]) -> String {
    if argv.len() == 3 && argv[0] == "sh" && argv[1] == "-c" {
        return argv[2].clone();
    }
    argv.iter().map(|a| if a.contains(' ') || a.is_empty() { format!("'{a}'") } else { a.clone() }).collect::<Vec<_>>().join(" ")
}

/// A command workload, built from its definition (in the parent from the
/// file, in the worker from the cell).
pub struct CommandWorkload {
    pub def: CommandDef,
}

impl Workload for CommandWorkload {
    fn spec(&self) -> WorkloadSpec {
        self.def.spec()
    }

    fn prepare(&self, cell: &Cell, _cx: &PrepareContext) -> anyhow::Result<Prepared> {
        exec::prepare(&self.def, cell)
    }
}

/// The command workloads of a run or a listing: the `--workloads` files, or
/// `./proofbench.toml` when none is given and it exists. Checked against
/// each other and against `builtin` (ids and groups must not clash); every
/// error is a usage error naming the file, line and key.
pub fn load(files: &[PathBuf], builtin: &[WorkloadSpec]) -> Result<Vec<CommandDef>, UsageError> {
    let default = Path::new(DEFAULT_FILE);
    let files: Vec<PathBuf> = if files.is_empty() && default.is_file() { vec![default.to_path_buf()] } else { files.to_vec() };
    let mut defs: Vec<CommandDef> = Vec::new();
    for f in &files {
        for d in file::read(f, builtin)? {
            if let Some(other) = defs.iter().find(|o| o.id == d.id) {
                return Err(UsageError(format!("{}: key `id`: '{}' is already defined at {}", d.source, d.id, other.source)));
            }
            defs.push(d);
        }
    }
    Ok(defs)
}

/// The built-in specs followed by the command workloads' specs.
pub fn specs_with(builtin: Vec<WorkloadSpec>, defs: &[CommandDef]) -> Vec<WorkloadSpec> {
    let mut specs = builtin;
    specs.extend(defs.iter().map(CommandDef::spec));
    specs
}

/// Gives each planned cell of a command workload its definition.
pub fn attach(cells: &mut [Cell], defs: &[CommandDef]) {
    for c in cells {
        if let Some(d) = defs.iter().find(|d| d.id == c.workload) {
            c.command = Some(d.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::contract::Timer;

    const FILE: &str = r#"
[[workload]]
id = "demo.echo"
summary = "Prints its axis"
unit = "ns"
direction = "lower-is-better"
command = ["sh", "-c", "echo v={n}; echo sum=10"]
metric = { regex = 'v=(\d+)', scale = 1000 }
[workload.axes]
n = [3, 4]
[workload.verify]
value = { regex = 'sum=(\d+)', expected = 10 }
"#;

    fn def(text: &str) -> CommandDef {
        file::parse(Path::new("demo.toml"), text, &crate::workloads::registry::specs()).unwrap().remove(0)
    }

    fn cell(n: i64) -> Cell {
        crate::workloads::os::fs_common::test_cell("demo.echo", serde_json::json!({ "n": n }), None, Path::new("/nonexistent"))
    }

    fn instance(def: &CommandDef, n: i64) -> Box<dyn crate::workloads::contract::Sampler> {
        match (CommandWorkload { def: def.clone() }).prepare_here(&cell(n)).unwrap() {
            Prepared::Ready(i) => i,
            Prepared::Skip(why) | Prepared::NotApplicable(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn built_in_cells_serialize_without_a_command_and_command_cells_round_trip() {
        let plain = cell(3);
        assert!(!serde_json::to_string(&plain).unwrap().contains("\"command\""));
        let mut cells = vec![plain];
        attach(&mut cells, &[def(FILE)]);
        let text = serde_json::to_string(&cells[0]).unwrap();
        let back: Cell = serde_json::from_str(&text).unwrap();
        assert_eq!(back, cells[0]);
        assert_eq!(back.command.unwrap().id, "demo.echo");
    }

    #[test]
    fn a_sample_records_the_metric_read_from_the_output_and_verifies_it() {
        let d = def(FILE);
        for n in [3, 4] {
            let mut inst = instance(&d, n);
            let mut t = Timer::new();
            inst.sample(1, &mut t).unwrap();
            assert_eq!(t.value(), Some(n as f64 * 1000.0));
            assert!(t.work_ns().is_some(), "the run's wall time is the work window");
            assert!(inst.verify().passed);
            assert_eq!(inst.details()["command"][2], format!("echo v={n}; echo sum=10"));
        }
    }

    #[test]
    fn a_wrong_value_or_exit_code_fails_the_verifier_and_a_missing_metric_fails_the_sample() {
        let mut inst = instance(&def(&FILE.replace("expected = 10", "expected = 11")), 3);
        inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed && v.observed.contains("read 10"), "{v:?}");
        let mut inst = instance(&def(&FILE.replace("echo sum=10\"", "echo sum=10; exit 3\"")), 3);
        inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed && v.observed.starts_with("exit code 3"), "{v:?}");
        let mut inst = instance(&def(&FILE.replace("v=(\\d+)", "w=(\\d+)")), 3);
        let e = inst.sample(1, &mut Timer::new()).unwrap_err().to_string();
        assert!(e.contains("no match for `w=(\\d+)`"), "{e}");
    }
}
