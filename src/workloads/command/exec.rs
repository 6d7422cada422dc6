//! Running a command workload in the worker: prepare (outside any timed
//! window), one run of the command per sample, the verifier on each run's
//! exit code and output, cleanup when the instance ends.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use anyhow::{Context, bail};
use regex::Regex;
use serde_json::json;

use super::{CommandDef, placeholder, shown};
use crate::plan::{Cell, value_text};
use crate::text::markdown::code;
use crate::workloads::contract::{Instance, Prepared, Timer, Verdict, Work};

/// Lines of output kept in the row's details and printed to the log.
const TAIL_LINES: usize = 20;

/// How one run of a command ended.
struct Outcome {
    code: Option<i32>,
    signal: Option<i32>,
    /// stdout, then stderr.
    text: String,
}

impl Outcome {
    fn of(out: Output) -> Outcome {
        use std::os::unix::process::ExitStatusExt;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&String::from_utf8_lossy(&out.stderr));
        }
        Outcome { code: out.status.code(), signal: out.status.signal(), text }
    }

    fn ended(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "ended in an unknown way".into(),
        }
    }

    fn tail(&self) -> String {
        let lines: Vec<&str> = self.text.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    }
}

/// A command with its placeholders filled for one cell.
struct Ready {
    argv: Vec<String>,
}

struct Place {
    cwd: PathBuf,
    env: BTreeMap<String, String>,
}

impl Place {
    fn run(&self, r: &Ready) -> anyhow::Result<Output> {
        Command::new(&r.argv[0])
            .args(&r.argv[1..])
            .current_dir(&self.cwd)
            .envs(&self.env)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start {} in {}", code(&shown(&r.argv)), self.cwd.display()))
    }
}

/// The first capture group of `re` in `text`, as a number.
fn read_number(re: &Regex, text: &str) -> Result<f64, String> {
    let caps = re.captures(text).ok_or_else(|| format!("no match for {}", code(re.as_str())))?;
    let m = caps.get(1).map(|m| m.as_str()).unwrap_or("");
    let cleaned: String = m.chars().filter(|c| *c != '_' && *c != ',').collect();
    match cleaned.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{} read '{m}', which is not a number", code(re.as_str()))),
    }
}

struct Checks {
    exit_code: i32,
    must_match: Vec<Regex>,
    must_not_match: Vec<Regex>,
    value: Option<(Regex, f64, f64)>,
}

struct CommandInstance {
    ctx: Place,
    command: Ready,
    cleanup: Option<Ready>,
    metric: Option<(Regex, Option<Regex>, f64)>,
    checks: Checks,
    last: Option<Outcome>,
    last_metric: Option<f64>,
}

fn regex(s: &str) -> anyhow::Result<Regex> {
    Regex::new(s).with_context(|| format!("the regex `{s}` does not compile"))
}

/// Fills the cell's placeholders and runs `prepare`, outside any timed window.
pub fn prepare(def: &CommandDef, cell: &Cell) -> anyhow::Result<Prepared> {
    let values: BTreeMap<String, String> = cell.params.iter().map(|(k, v)| (k.clone(), value_text(v))).collect();
    let fill = |argv: &[String]| Ready { argv: argv.iter().map(|a| placeholder::substitute(a, &values)).collect() };
    let ctx = Place {
        cwd: PathBuf::from(placeholder::substitute(&def.cwd, &values)),
        env: def.env.iter().map(|(k, v)| (k.clone(), placeholder::substitute(v, &values))).collect(),
    };
    let metric = match &def.metric {
        None => None,
        Some(m) => Some((regex(&m.regex)?, m.total_regex.as_deref().map(regex).transpose()?, m.scale)),
    };
    let v = &def.verify;
    let checks = Checks {
        exit_code: v.exit_code,
        must_match: v.must_match.iter().map(|r| regex(r)).collect::<Result<_, _>>()?,
        must_not_match: v.must_not_match.iter().map(|r| regex(r)).collect::<Result<_, _>>()?,
        value: v.value.as_ref().map(|c| anyhow::Ok((regex(&c.regex)?, c.expected, c.tolerance))).transpose()?,
    };
    let inst = CommandInstance {
        command: fill(&def.command),
        cleanup: def.cleanup.as_deref().map(fill),
        ctx,
        metric,
        checks,
        last: None,
        last_metric: None,
    };
    if let Some(p) = def.prepare.as_deref().map(fill) {
        eprintln!("prepare: {}", shown(&p.argv));
        let out = Outcome::of(inst.ctx.run(&p)?);
        eprintln!("{}", out.text.trim_end());
        if out.code != Some(0) {
            // Dropping the instance runs the cleanup command.
            bail!("the prepare command {} ended with {}; its output ends: {}", code(&shown(&p.argv)), out.ended(), out.tail());
        }
    }
    Ok(Prepared::Ready(Box::new(inst)))
}

impl Instance for CommandInstance {
    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<Work> {
        timer.start();
        let out = self.ctx.run(&self.command);
        timer.stop();
        let out = Outcome::of(out?);
        if let Some((re, total, scale)) = &self.metric {
            let value = read_number(re, &out.text).map(|v| v * scale);
            let total = total.as_ref().map(|t| read_number(t, &out.text).map(|v| v * scale)).transpose();
            match (value, total) {
                (Ok(v), Ok(t)) => {
                    timer.record_value(v);
                    if let Some(t) = t {
                        timer.record_total_value(t);
                    }
                    self.last_metric = Some(v);
                }
                (Err(why), _) | (_, Err(why)) => {
                    eprintln!("{}", out.text.trim_end());
                    bail!(
                        "the metric: {why} in the output of {} ({}); it ends: {}",
                        code(&shown(&self.command.argv)),
                        out.ended(),
                        out.tail()
                    );
                }
            }
        }
        self.last = Some(out);
        Ok(Work::ops(1))
    }

    fn verify(&mut self) -> Verdict {
        let Some(out) = &self.last else {
            return Verdict { passed: false, expected: "a finished run".into(), observed: "no run".into() };
        };
        let c = &self.checks;
        let mut expected = vec![format!("exit code {}", c.exit_code)];
        let mut observed = vec![out.ended()];
        let mut passed = out.code == Some(c.exit_code);
        for re in &c.must_match {
            let ok = re.is_match(&out.text);
            passed &= ok;
            expected.push(format!("output matches {}", code(re.as_str())));
            observed.push(if ok { "matched".into() } else { format!("no match for {}", code(re.as_str())) });
        }
        for re in &c.must_not_match {
            let hit = re.find(&out.text);
            passed &= hit.is_none();
            expected.push(format!("output does not match {}", code(re.as_str())));
            observed.push(match hit {
                None => "no match".into(),
                Some(m) => format!("{} matched '{}'", code(re.as_str()), m.as_str()),
            });
        }
        if let Some((re, want, tol)) = &c.value {
            expected.push(format!("{} reads {want} ± {tol}", code(re.as_str())));
            match read_number(re, &out.text) {
                Ok(v) => {
                    passed &= (v - want).abs() <= *tol;
                    observed.push(format!("{} read {v}", code(re.as_str())));
                }
                Err(why) => {
                    passed = false;
                    observed.push(why);
                }
            }
        }
        if !passed {
            eprintln!("verifier failed; the output of `{}`:\n{}", shown(&self.command.argv), out.text.trim_end());
        }
        Verdict { passed, expected: expected.join("; "), observed: observed.join("; ") }
    }

    fn details(&self) -> serde_json::Value {
        json!({
            "command": self.command.argv,
            "cwd": self.ctx.cwd.display().to_string(),
            "env": self.ctx.env,
            "last_exit": self.last.as_ref().map(Outcome::ended),
            "last_metric": self.last_metric,
            "output_tail": self.last.as_ref().map(Outcome::tail),
        })
    }
}

impl Drop for CommandInstance {
    fn drop(&mut self) {
        if let Some(c) = &self.cleanup {
            eprintln!("cleanup: {}", shown(&c.argv));
            match self.ctx.run(c).map(Outcome::of) {
                Ok(out) if out.code == Some(0) => {}
                Ok(out) => eprintln!("proofbench: warning: the cleanup command ended with {}: {}", out.ended(), out.tail()),
                Err(e) => eprintln!("proofbench: warning: {e:#}"),
            }
        }
    }
}
