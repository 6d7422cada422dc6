//! `proofbench run` and `proofbench noise`: the command line checked and
//! resolved into a [`RunRequest`] (the flags that go together, the
//! launchers, the defaults that need no machine), then the runner.

use std::process::ExitCode;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::evidence::RunKind;
use crate::model::{DEFAULT_SEED, UsageError};
use crate::plan::{CompareMode, RunOptions};
use crate::report;
use crate::runner::launcher::{HOST, Launcher};
use crate::runner::{self, RunRequest, RunSpec};

/// `proofbench run`: runs the benchmarks the arguments select, here or
/// through `--launcher` (once per host of `--hosts`).
pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(file) = &args.html {
        return Err(UsageError(format!(
            "--html {}: for noise; a run writes report.html in its run directory (`proofbench report DIR --html FILE` writes \
             it elsewhere)",
            file.display()
        ))
        .into());
    }
    runner::run(&request(args, RunKind::Run)?)
}

/// `proofbench noise`: the selection as two identical variants (`a` and
/// `b`, the build as it is), interleaved in every round; the report's A/B
/// section is then the machine's noise profile, and the history records the
/// run as kind `noise`. `--html FILE` writes that profile as a page once the
/// run ends (checked before it starts; `run --html` is refused: a run writes
/// report.html in its directory).
pub fn noise(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(v) = args.variants.first() {
        return Err(
            UsageError(format!("--variant {v}: noise runs two identical variants of its own; use `proofbench run --variant`")).into()
        );
    }
    if args.base.is_some() || args.fail_on_regression {
        let flag = if args.base.is_some() { "--base" } else { "--fail-on-regression" };
        return Err(UsageError(format!("{flag}: not for noise, whose two variants are identical")).into());
    }
    if let Some(file) = &args.html {
        if args.hosts.is_some() {
            return Err(UsageError(format!("--html {}: one page, but --hosts makes one run per host", file.display())).into());
        }
        // Refused before the run, not after it.
        super::check_html_target(file)?;
    }
    let mut args = args.clone();
    args.variants = vec!["a=".into(), "b=".into()];
    let (code, dirs) = runner::run_and_say_where(&request(&args, RunKind::Noise)?)?;
    if let (Some(file), Some(dir)) = (&args.html, dirs.first()) {
        let stored = crate::evidence::read_run(dir)?;
        super::write_html(file, &report::page::html(&report::sections::noise_document(&stored)))?;
    }
    Ok(code)
}

/// The run the arguments ask for, checked before any machine is contacted:
/// the flags that only make sense together, the launchers, the command
/// workloads' files, and the plan itself (selection, `--param`,
/// `--workers`, `--variant`, durations), so that a typo costs no
/// connection.
pub(crate) fn request(args: &RunArgs, kind: RunKind) -> anyhow::Result<RunRequest> {
    if args.fail_on_regression && args.variants.is_empty() {
        return Err(UsageError("--fail-on-regression needs two or more --variant (compare gates two runs)".into()).into());
    }
    if args.lockstep && args.variants.is_empty() {
        return Err(UsageError("--lockstep needs two or more --variant (it runs a cell's variants together)".into()).into());
    }
    if args.equivalence.is_some() && args.variants.is_empty() {
        return Err(UsageError("--equivalence needs two or more --variant (it is the band of SAME between them)".into()).into());
    }
    if args.max_parallel.is_some() && args.hosts.is_none() {
        return Err(UsageError("--max-parallel needs --hosts".into()).into());
    }
    let launchers = launchers(args)?;
    let timeout = args.timeout.unwrap_or_else(|| args.profile.default_timeout());
    // A bad workload file stops the run here, before anything is contacted or created.
    let commands = crate::workloads::command::load(&args.workloads, &crate::workloads::registry::specs())?;
    let spec = RunSpec {
        options: options(args, timeout),
        commands,
        kind,
        argv: std::env::args().collect(),
        seed: args.seed.unwrap_or(DEFAULT_SEED),
        label: args.label.clone(),
        timeout_given: args.timeout.is_some(),
    };
    spec.check()?;
    Ok(RunRequest {
        spec,
        out: args.out.clone(),
        run_dir: args.run_dir.clone(),
        commit: args.commit.clone(),
        history: !args.no_history,
        db: args.db.clone(),
        json: args.json,
        quiet: args.quiet,
        silent: false,
        counters: args.counters,
        tables: args.tables,
        style: crate::text::out::stdout_style(args.color),
        max_parallel: args.max_parallel.map_or(launchers.len().max(1), |n| n as usize),
        launchers,
        fail_on_regression: args.fail_on_regression,
        gate_rules: crate::compare::GateRules { accept_disturbed: args.accept_disturbed, allow_unknown: args.allow_unknown },
    })
}

/// What the user asked for, as run.json records it.
fn options(args: &RunArgs, timeout: Duration) -> RunOptions {
    let ms = |d: Duration| d.as_millis() as u64;
    RunOptions {
        selection: args.selection.clone(),
        profile: args.profile,
        workers: args.workers.clone(),
        oversubscribe: args.oversubscribe,
        pin: args.pin.clone(),
        runtime: args.runtime.clone(),
        allocator: args.allocator.clone(),
        compare: if args.compare_cores {
            Some(CompareMode::Cores)
        } else if args.compare_strategies {
            Some(CompareMode::Strategies)
        } else {
            None
        },
        runs: args.runs,
        trials: args.trials,
        max_trials: args.max_trials,
        run_budget_ms: args.run_budget.map(ms),
        time_budget_ms: args.time_budget.map(ms),
        timeout_ms: ms(timeout),
        warmup: args.warmup,
        settle_ms: args.settle.map(ms),
        ci_target_pct: args.ci_target,
        params: args.params.clone(),
        include_selftest: args.include_selftest,
        io_dir: args.io_dir.as_ref().map(|p| p.display().to_string()),
        inject_fault: args.inject_fault.clone(),
        variants: args.variants.clone(),
        base: args.base.clone(),
        perf_pass: args.perf_pass,
        lockstep: args.lockstep,
        equivalence: args.equivalence.map(|p| p / 100.0),
    }
}

/// Checks `--launcher`, `--remote-exe` and `--hosts` together: one launcher
/// per host, or one without a host, or none (a local run). Errors are usage
/// errors naming the flag.
fn launchers(args: &RunArgs) -> anyhow::Result<Vec<Launcher>> {
    let Some(template) = &args.launcher else {
        if args.hosts.is_some() || args.remote_exe.is_some() {
            let flag = if args.hosts.is_some() { "--hosts" } else { "--remote-exe" };
            return Err(UsageError(format!("{flag} needs --launcher")).into());
        }
        return Ok(Vec::new());
    };
    let words =
        shlex::split(template).ok_or_else(|| UsageError(format!("--launcher '{template}': unbalanced quotes or a trailing backslash")))?;
    if words.is_empty() {
        return Err(UsageError("--launcher is empty: give a command prefix, e.g. --launcher 'ssh host'".into()).into());
    }
    let remote_exe = match &args.remote_exe {
        Some(p) if p.is_empty() => return Err(UsageError("--remote-exe is empty".into()).into()),
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("locating the proofbench binary for --remote-exe: {e}"))?
            .display()
            .to_string(),
    };
    let has_host = words.iter().any(|w| w.contains(HOST));
    let make = |host: Option<&str>| Launcher {
        template: template.clone(),
        prefix: words.iter().map(|w| host.map_or_else(|| w.clone(), |h| w.replace(HOST, h))).collect(),
        host: host.map(str::to_string),
        remote_exe: remote_exe.clone(),
        submission: None,
    };
    match &args.hosts {
        None if has_host => Err(UsageError(format!("--launcher '{template}' contains {HOST}: give the hosts with --hosts a,b,c")).into()),
        None => Ok(vec![make(None)]),
        Some(_) if !has_host => {
            Err(UsageError(format!("--hosts needs {HOST} in --launcher (e.g. --launcher 'ssh {HOST}'); '{template}' has none")).into())
        }
        Some(_) if args.run_dir.is_some() => {
            Err(UsageError("--run-dir names one directory, but --hosts writes one per host: use --out DIR".into()).into())
        }
        Some(hosts) => {
            let mut seen: Vec<&str> = Vec::new();
            for h in hosts {
                if let Some(why) = not_a_host_name(h) {
                    return Err(UsageError(format!("--hosts: '{h}' is not a host name: {why}")).into());
                }
                if seen.contains(&h.as_str()) {
                    return Err(UsageError(format!("--hosts: {h} is given twice")).into());
                }
                seen.push(h);
            }
            // One id for the invocation, named here: every host's run carries it.
            let submission = crate::runner::launcher::new_submission();
            Ok(hosts.iter().map(|h| Launcher { submission: Some(submission.clone()), ..make(Some(h)) }).collect())
        }
    }
}

/// Why `h` cannot be a host of `--hosts`, if it cannot: the host goes
/// into the launcher's words, where a leading `-` would be an option of
/// the launcher (ssh's `-oProxyCommand=...` runs a command here), and
/// into the run's label and directory name. A host is a name or an
/// address, optionally with a user (`user@host`, `[::1]`, `fe80::1%eth0`).
fn not_a_host_name(h: &str) -> Option<&'static str> {
    if h.is_empty() {
        Some("it is empty")
    } else if h.starts_with('-') {
        Some("it starts with '-', which a launcher would take for an option")
    } else if !h.chars().all(|c| c.is_ascii_alphanumeric() || "._-:@[]%".contains(c)) {
        Some("a host holds only letters, digits and . _ - : @ [ ] %")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::runner::spawn::Invocation;
    use clap::Parser;

    fn args(extra: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from([&["proofbench", "run"], extra].concat()).expect("parses");
        match cli.command {
            Command::Run(a) => *a,
            _ => unreachable!(),
        }
    }

    fn usage(extra: &[&str]) -> String {
        let e = launchers(&args(extra)).expect_err("refused");
        assert!(e.is::<UsageError>(), "{e:#}");
        e.to_string()
    }

    #[test]
    fn no_launcher_is_a_local_run() {
        assert!(launchers(&args(&[])).unwrap().is_empty());
    }

    #[test]
    fn the_prefix_is_split_shell_style_and_not_run_through_a_shell() {
        let l = launchers(&args(&["--launcher", "sh -c 'exec \"$@\"' sh", "--remote-exe", "/opt/pb"])).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].prefix, ["sh", "-c", "exec \"$@\"", "sh"]);
        assert_eq!(l[0].host, None);
        let c = l[0].proofbench(&Invocation::preload(Some("/lib/libx.so")), &["worker"]);
        let argv: Vec<_> = std::iter::once(c.get_program()).chain(c.get_args()).map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(argv, ["sh", "-c", "exec \"$@\"", "sh", "env", "LD_PRELOAD=/lib/libx.so", "/opt/pb", "worker"]);
        assert_eq!(l[0].display(&["a b"]), "sh -c 'exec \"$@\"' sh 'a b'");
    }

    #[test]
    fn hosts_give_one_launcher_each_with_the_host_in_place() {
        let l = launchers(&args(&["--launcher", "ssh -o BatchMode=yes {host}", "--hosts", "a,b.example"])).unwrap();
        assert_eq!(l.iter().map(|l| l.prefix.join(" ")).collect::<Vec<_>>(), ["ssh -o BatchMode=yes a", "ssh -o BatchMode=yes b.example"]);
        assert_eq!(l[1].host.as_deref(), Some("b.example"));
        assert_eq!(l[1].name(), "--launcher 'ssh -o BatchMode=yes {host}' for host b.example");
        // The default remote binary is this one.
        assert_eq!(l[0].remote_exe, std::env::current_exe().unwrap().display().to_string());
    }

    #[test]
    fn bad_combinations_are_usage_errors_naming_the_flag() {
        assert!(usage(&["--launcher", "ssh a", "--hosts", "a,b"]).contains("--hosts needs {host}"));
        assert!(usage(&["--launcher", "ssh {host}"]).contains("--hosts"));
        assert!(usage(&["--hosts", "a"]).contains("--hosts needs --launcher"));
        assert!(usage(&["--remote-exe", "/x"]).contains("--remote-exe needs --launcher"));
        assert!(usage(&["--launcher", "ssh 'a"]).contains("unbalanced quotes"));
        assert!(usage(&["--launcher", "  "]).contains("--launcher is empty"));
        assert!(usage(&["--launcher", "ssh {host}", "--hosts", "a,a"]).contains("a is given twice"));
        assert!(usage(&["--launcher", "ssh {host}", "--hosts", "a,,b"]).contains("is not a host name"));
        for bad in ["-oProxyCommand=touch${IFS}PWN", "-x", "a/b", "a|b", "a b", "a\tb", "a;b", "$(x)", "a`b`"] {
            let e = usage(&["--launcher", "ssh -o BatchMode=yes {host}", &format!("--hosts={bad}")]);
            assert!(e.contains("is not a host name"), "{bad}: {e}");
        }
        let ok = launchers(&args(&["--launcher", "ssh -- {host}", "--hosts", "user@bench-1.example,[::1],fe80::1%eth0,10.0.0.7"])).unwrap();
        assert_eq!(ok.len(), 4);
        assert!(usage(&["--launcher", "ssh {host}", "--hosts", "a", "--run-dir", "x"]).contains("--out"));
    }
}
