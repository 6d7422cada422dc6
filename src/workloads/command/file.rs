//! Reads and checks a command-workload file. Everything that can be known
//! before a run is checked here, so that a bad file stops the run before
//! anything starts: unknown keys, regexes, placeholders without an axis,
//! programs that do not exist, units and directions that disagree, ids that
//! clash with built-in workloads, environment variable names a shell would
//! refuse. Every error names `FILE:LINE` and the key.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use super::placeholder;
use crate::model::command::{AxisDef, CommandDef, MetricDef, ValueCheck, VerifyDef};
use crate::model::{
    UsageError,
    variant::{ENV_NAME_RULE, env_name_ok},
};
use crate::workloads::contract::{Direction, Unit, WorkloadSpec};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    id: Spanned<String>,
    summary: String,
    #[serde(default)]
    measures: Option<String>,
    unit: Spanned<String>,
    direction: Spanned<String>,
    command: Spanned<RawCommand>,
    #[serde(default)]
    shell: bool,
    #[serde(default)]
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    prepare: Option<Spanned<RawCommand>>,
    #[serde(default)]
    cleanup: Option<Spanned<RawCommand>>,
    #[serde(default)]
    axes: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    metric: Option<Spanned<RawMetric>>,
    #[serde(default)]
    verify: Option<RawVerify>,
    #[serde(default)]
    profile: Option<RawProfile>,
}

/// `[workload.profile]`: the guest-side pass of `run --perf-pass`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    command: Spanned<RawCommand>,
}

/// An argument list, or one string for `sh -c` (only with `shell = true`).
#[derive(Clone, Deserialize)]
#[serde(untagged)]
enum RawCommand {
    Args(Vec<String>),
    Line(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    regex: Spanned<String>,
    #[serde(default)]
    total_regex: Option<Spanned<String>>,
    #[serde(default)]
    scale: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerify {
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    must_match: Vec<Spanned<String>>,
    #[serde(default)]
    must_not_match: Vec<Spanned<String>>,
    #[serde(default)]
    value: Option<RawValueCheck>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawValueCheck {
    regex: Spanned<String>,
    expected: f64,
    #[serde(default)]
    tolerance: Option<Spanned<f64>>,
}

/// Where errors point: the file's name and text.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].matches('\n').count() + 1
    }

    fn at(&self, span: &Range<usize>) -> String {
        format!("{}:{}", self.path.display(), self.line(span))
    }

    fn err(&self, span: &Range<usize>, key: &str, why: impl std::fmt::Display) -> UsageError {
        UsageError(format!("{}: key `{key}`: {why}", self.at(span)))
    }
}

/// Reads `path` and returns its workloads, checked; `builtin` are the
/// built-in specs whose ids and groups the file must not reuse.
pub fn read(path: &Path, builtin: &[WorkloadSpec]) -> Result<Vec<CommandDef>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("--workloads {}: cannot read it: {e}", path.display())))?;
    parse(path, &text, builtin)
}

/// Parses and checks the text of a workload file (`path` names it in errors
/// and anchors relative directories).
pub fn parse(path: &Path, text: &str, builtin: &[WorkloadSpec]) -> Result<Vec<CommandDef>, UsageError> {
    let src = Source { path, text };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| src.at(&s)).unwrap_or_else(|| path.display().to_string());
        UsageError(format!("{at}: {}", e.message().trim()))
    })?;
    if raw.workload.is_empty() {
        return Err(UsageError(format!("{}: no [[workload]] entries", path.display())));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut defs: Vec<CommandDef> = Vec::new();
    for w in raw.workload {
        let span = w.span();
        let def = check(&src, &dir, span, w.into_inner(), builtin)?;
        if defs.iter().any(|d| d.id == def.id) {
            return Err(UsageError(format!("{}: key `id`: '{}' is defined twice in this file", def.source, def.id)));
        }
        defs.push(def);
    }
    Ok(defs)
}

fn compile(src: &Source, s: &Spanned<String>, key: &str, capture: bool) -> Result<String, UsageError> {
    let re = Regex::new(s.get_ref())
        .map_err(|e| src.err(&s.span(), key, format!("the regex does not compile: {}", one_line(&e.to_string()))))?;
    if capture && re.captures_len() < 2 {
        return Err(src.err(&s.span(), key, format!("the regex `{}` needs a capture group, e.g. `cycles=(\\d+)`", s.get_ref())));
    }
    Ok(s.get_ref().clone())
}

fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

fn is_group_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
}

/// The argument list of a command field, checked against `shell`.
fn argv(src: &Source, c: &Spanned<RawCommand>, key: &str, shell: bool) -> Result<Vec<String>, UsageError> {
    match (c.get_ref(), shell) {
        (RawCommand::Args(a), false) if a.is_empty() || a[0].is_empty() => Err(src.err(&c.span(), key, "the argument list is empty")),
        (RawCommand::Args(a), false) => Ok(a.clone()),
        (RawCommand::Line(_), false) => Err(src.err(
            &c.span(),
            key,
            "a string runs through a shell only with `shell = true`; write an argument list, e.g. [\"prog\", \"--flag\", \"{n}\"]",
        )),
        (RawCommand::Line(s), true) => Ok(vec!["sh".into(), "-c".into(), s.clone()]),
        (RawCommand::Args(_), true) => Err(src.err(&c.span(), key, "with `shell = true`, write the command as one string for `sh -c`")),
    }
}

/// Whether `program` can be started from `cwd`: a path with a slash names a
/// file (relative to `cwd`), a bare name is looked up on PATH.
pub fn find_program(program: &str, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = cwd.join(program);
        return runnable(&p).then_some(p);
    }
    std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|d| d.join(program)).find(|p| runnable(p)))
}

/// The longest workload id a file may define.
const MAX_ID_LEN: usize = 64;

fn check(src: &Source, dir: &Path, span: Range<usize>, w: RawWorkload, builtin: &[WorkloadSpec]) -> Result<CommandDef, UsageError> {
    // id: GROUP.NAME, a group of the user's own.
    let id = w.id.get_ref().clone();
    let Some((group, name)) = id.split_once('.') else {
        return Err(src.err(&w.id.span(), "id", format!("'{id}' must be GROUP.NAME, e.g. myos.smp-scale")));
    };
    if !is_group_name(group) || name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(src.err(&w.id.span(), "id", format!("'{id}' must be GROUP.NAME with letters, digits, '-', '_' (and '.' in NAME)")));
    }
    // It names files (plots, logs): a name has a bound of its own.
    if id.len() > MAX_ID_LEN {
        return Err(src.err(&w.id.span(), "id", format!("'{}...' is {} characters long; at most {MAX_ID_LEN}", &id[..32], id.len())));
    }
    if let Some(b) = builtin.iter().find(|s| s.id == id || s.group == group) {
        let what = if b.id == id { format!("the built-in workload '{id}'") } else { format!("the built-in group '{group}'") };
        return Err(src.err(&w.id.span(), "id", format!("'{id}' clashes with {what}; choose a group of your own")));
    }
    if w.summary.trim().is_empty() {
        return Err(src.err(&span, "summary", "must not be empty"));
    }

    // unit and direction: the direction is written out and must agree.
    let unit = Unit::from_name(w.unit.get_ref())
        .ok_or_else(|| src.err(&w.unit.span(), "unit", format!("'{}' is not one of {}", w.unit.get_ref(), Unit::NAMES.join(", "))))?;
    let direction = match w.direction.get_ref().as_str() {
        "lower-is-better" => Direction::LowerIsBetter,
        "higher-is-better" => Direction::HigherIsBetter,
        other => return Err(src.err(&w.direction.span(), "direction", format!("'{other}' is not lower-is-better or higher-is-better"))),
    };
    if direction != unit.direction() {
        return Err(src.err(
            &w.direction.span(),
            "direction",
            format!("a row in {} is {}; the direction must say so", unit.as_str(), unit.direction().as_str()),
        ));
    }

    // What a sample is.
    let metric = match &w.metric {
        None if unit != Unit::Ns => {
            return Err(src.err(
                &w.unit.span(),
                "unit",
                format!("a wall-time sample is in ns; read a metric from the output ([workload.metric]) for a row in {}", unit.as_str()),
            ));
        }
        None => None,
        Some(m) => {
            let m = m.get_ref();
            let scale = m.scale.as_ref().map(|s| (*s.get_ref(), s.span())).unwrap_or((1.0, 0..0));
            if !(scale.0.is_finite() && scale.0 > 0.0) {
                return Err(src.err(&scale.1, "metric.scale", "must be a positive number"));
            }
            Some(MetricDef {
                regex: compile(src, &m.regex, "metric.regex", true)?,
                total_regex: m.total_regex.as_ref().map(|r| compile(src, r, "metric.total_regex", true)).transpose()?,
                scale: scale.0,
            })
        }
    };

    // The verifier.
    let verify = match &w.verify {
        None => VerifyDef { exit_code: 0, must_match: vec![], must_not_match: vec![], value: None },
        Some(v) => VerifyDef {
            exit_code: v.exit_code.unwrap_or(0),
            must_match: v.must_match.iter().map(|r| compile(src, r, "verify.must_match", false)).collect::<Result<_, _>>()?,
            must_not_match: v.must_not_match.iter().map(|r| compile(src, r, "verify.must_not_match", false)).collect::<Result<_, _>>()?,
            value: match &v.value {
                None => None,
                Some(c) => {
                    let tolerance = c.tolerance.as_ref().map(|t| (*t.get_ref(), t.span())).unwrap_or((0.0, 0..0));
                    if !(tolerance.0.is_finite() && tolerance.0 >= 0.0) {
                        return Err(src.err(&tolerance.1, "verify.value.tolerance", "must be a number >= 0"));
                    }
                    Some(ValueCheck {
                        regex: compile(src, &c.regex, "verify.value.regex", true)?,
                        expected: c.expected,
                        tolerance: tolerance.0,
                    })
                }
            },
        },
    };

    // Axes: integers or strings, one kind per axis; `workers` varies fastest.
    let mut axes: Vec<AxisDef> = Vec::new();
    for (name, v) in &w.axes {
        let key = format!("axes.{name}");
        if !placeholder::names(&format!("{{{name}}}")).iter().any(|n| n == name) {
            return Err(src.err(&v.span(), &key, "an axis name is letters, digits and '_', not starting with a digit"));
        }
        let items: Vec<&toml::Value> = match v.get_ref() {
            toml::Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        let values: Vec<Value> = items
            .iter()
            .map(|t| match t {
                toml::Value::Integer(i) => Ok(Value::from(*i)),
                toml::Value::String(s) if !s.is_empty() => Ok(Value::from(s.clone())),
                other => Err(src.err(&v.span(), &key, format!("values must be integers or non-empty strings, not {}", other.type_str()))),
            })
            .collect::<Result<_, _>>()?;
        if values.is_empty() {
            return Err(src.err(&v.span(), &key, "needs at least one value"));
        }
        if values.iter().any(Value::is_i64) && !values.iter().all(Value::is_i64) {
            return Err(src.err(&v.span(), &key, "mixes integers and strings"));
        }
        if values.iter().enumerate().any(|(i, x)| values[..i].contains(x)) {
            return Err(src.err(&v.span(), &key, "repeats a value"));
        }
        axes.push(AxisDef { name: name.clone(), values });
    }
    axes.sort_by_key(|a| a.name == "workers");
    let axis_names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
    let undefined = |texts: &[&String], s: &Range<usize>, key: &str| -> Result<(), UsageError> {
        for t in texts {
            if let Some(n) = placeholder::names(t).into_iter().find(|n| !axis_names.contains(&n.as_str())) {
                let have = if axis_names.is_empty() { "none".to_string() } else { axis_names.join(", ") };
                return Err(src.err(
                    s,
                    key,
                    format!("placeholder `{{{n}}}` is not an axis (axes: {have}); define it under [workload.axes]"),
                ));
            }
        }
        Ok(())
    };

    // Commands, directory and environment.
    let command = argv(src, &w.command, "command", w.shell)?;
    undefined(&command.iter().collect::<Vec<_>>(), &w.command.span(), "command")?;
    let cwd = match &w.cwd {
        None => dir.to_path_buf(),
        Some(c) => {
            undefined(&[c.get_ref()], &c.span(), "cwd")?;
            let p = dir.join(c.get_ref());
            if placeholder::names(c.get_ref()).is_empty() && !p.is_dir() {
                return Err(src.err(&c.span(), "cwd", format!("{} is not a directory", p.display())));
            }
            p
        }
    };
    for (k, v) in &w.env {
        let key = if k.is_empty() { "env.\"\"".to_string() } else { format!("env.{}", k.escape_debug()) };
        if !env_name_ok(k) {
            return Err(src.err(&v.span(), &key, format!("{k:?} is not an environment variable name: use {ENV_NAME_RULE}")));
        }
        if v.get_ref().contains('\0') {
            return Err(src.err(&v.span(), &key, "the value contains a NUL byte"));
        }
        undefined(&[v.get_ref()], &v.span(), &key)?;
    }
    let mut commands: Vec<(&str, Range<usize>, Vec<String>)> = vec![("command", w.command.span(), command.clone())];
    let mut extra = |c: &Option<Spanned<RawCommand>>, key: &'static str| -> Result<Option<Vec<String>>, UsageError> {
        let Some(c) = c else { return Ok(None) };
        let a = argv(src, c, key, w.shell)?;
        undefined(&a.iter().collect::<Vec<_>>(), &c.span(), key)?;
        commands.push((key, c.span(), a.clone()));
        Ok(Some(a))
    };
    let prepare = extra(&w.prepare, "prepare")?;
    let cleanup = extra(&w.cleanup, "cleanup")?;
    let profile = extra(&w.profile.as_ref().map(|p| p.command.clone()), "profile.command")?;
    let cwd_fixed = placeholder::names(&cwd.display().to_string()).is_empty();
    for (key, s, a) in &commands {
        let program = &a[0];
        if placeholder::names(program).is_empty() && (cwd_fixed || !program.contains('/')) && find_program(program, &cwd).is_none() {
            let where_ = if program.contains('/') {
                format!("{} is not an executable file", cwd.join(program).display())
            } else {
                "not found on PATH".to_string()
            };
            return Err(src.err(s, key, format!("program `{program}`: {where_}")));
        }
    }

    Ok(CommandDef {
        id,
        summary: w.summary.trim().to_string(),
        measures: w.measures.map(|m| m.trim().to_string()),
        unit,
        source: src.at(&span),
        command,
        shell: w.shell,
        cwd: cwd.display().to_string(),
        env: w.env.into_iter().map(|(k, v)| (k, v.into_inner())).collect(),
        prepare,
        cleanup,
        axes,
        metric,
        verify,
        profile,
        echo_output: false,
    })
}

#[cfg(test)]
mod tests;
