//! `proofbench run` and `proofbench noise`: the command line checked and
//! resolved into a [`RunRequest`] (the flags that go together, the
//! launchers, the defaults that need no machine), then the runner.

use std::process::ExitCode;

use crate::cli::RunArgs;
use crate::evidence::RunKind;
use crate::model::settings::Gate;
use crate::model::{DEFAULT_SEED, UsageError};
use crate::report;
use crate::runner::remote::launcher::{HOST, Launcher};
use crate::runner::{self, RunRequest, RunSpec, Target};

/// `proofbench run`: runs the benchmarks the arguments select, here or
/// through `--launcher` (once per host of `--hosts`).
pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(file) = &args.output.html {
        return Err(UsageError(format!(
            "--html {}: for noise; a run writes report.html in its run directory (`proofbench report DIR --html FILE` writes \
             it elsewhere)",
            file.display()
        ))
        .into());
    }
    let ran = runner::run(&request(args, RunKind::Run)?)?;
    Ok(ExitCode::from(gated(&ran, &args.gate)?))
}

/// `proofbench noise`: the selection as two identical variants (`a` and
/// `b`, the build as it is), interleaved in every round; the report's A/B
/// section is then the machine's noise profile, and the history records the
/// run as kind `noise`. `--html FILE` writes that profile as a page once the
/// run ends (checked before it starts; `run --html` is refused: a run writes
/// report.html in its directory).
pub fn noise(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(v) = args.options.selection.variants.first() {
        return Err(
            UsageError(format!("--variant {v}: noise runs two identical variants of its own; use `proofbench run --variant`")).into()
        );
    }
    if args.options.selection.base.is_some() || args.gate.fail_on_regression {
        let flag = if args.options.selection.base.is_some() { "--base" } else { "--fail-on-regression" };
        return Err(UsageError(format!("{flag}: not for noise, whose two variants are identical")).into());
    }
    if let Some(file) = &args.output.html {
        if args.launch.hosts.is_some() {
            return Err(UsageError(format!("--html {}: one page, but --hosts makes one run per host", file.display())).into());
        }
        // Refused before the run, not after it.
        super::check_html_target(file)?;
    }
    let mut args = args.clone();
    args.options.selection.variants = vec!["a=".into(), "b=".into()];
    let ran = runner::run(&request(&args, RunKind::Noise)?)?;
    if let (Some(file), Some((dir, _))) = (&args.output.html, ran.runs.first()) {
        let stored = crate::evidence::read_run(dir)?;
        super::write_html(file, &report::page::html(&report::sections::noise_document(&stored)))?;
    }
    Ok(ExitCode::from(ran.code))
}

/// The run the arguments ask for, checked before any machine is contacted:
/// the flags that only make sense together, the launchers, the command
/// workloads' files, and the plan itself (selection, `--param`,
/// `--workers`, `--variant`, durations), so that a typo costs no
/// connection.
pub(crate) fn request(args: &RunArgs, kind: RunKind) -> anyhow::Result<RunRequest> {
    if args.gate.fail_on_regression && args.options.selection.variants.is_empty() {
        return Err(UsageError("--fail-on-regression needs two or more --variant (compare gates two runs)".into()).into());
    }
    if args.options.selection.lockstep && args.options.selection.variants.is_empty() {
        return Err(UsageError("--lockstep needs two or more --variant (it runs a cell's variants together)".into()).into());
    }
    if args.options.selection.equivalence.is_some() && args.options.selection.variants.is_empty() {
        return Err(UsageError("--equivalence needs two or more --variant (it is the band of SAME between them)".into()).into());
    }
    if args.launch.max_parallel.is_some() && args.launch.hosts.is_none() {
        return Err(UsageError("--max-parallel needs --hosts".into()).into());
    }
    let target = target(args)?;
    // A bad workload file stops the run here, before anything is contacted or created.
    let commands = crate::workloads::command::load(&args.options.selection.workloads, &crate::workloads::registry::specs())?;
    // The settings go on as the command line grouped them; only the timeout
    // is resolved (the profile's when not given), as the record keeps it.
    let mut options = args.options.clone();
    let timeout_given = options.measurement.resolve_timeout();
    let spec = RunSpec {
        seed: options.measurement.seed.unwrap_or(DEFAULT_SEED),
        options,
        commands,
        kind,
        argv: std::env::args().collect(),
        label: args.output.label.clone(),
        timeout_given,
    };
    spec.check()?;
    Ok(RunRequest { spec, output: args.output.clone(), silent: false, target })
}

/// Where the run goes: here, through one launcher, or through one per host.
fn target(args: &RunArgs) -> anyhow::Result<Target> {
    let mut launchers = launchers(args)?;
    Ok(match (args.launch.hosts.is_some(), launchers.len()) {
        (_, 0) => Target::Local,
        (false, _) => Target::Launched(launchers.remove(0)),
        (true, n) => Target::Hosts { max_parallel: args.launch.max_parallel.map_or(n, |m| m as usize), launchers },
    })
}

/// `--fail-on-regression` over the runs that ended: each run's variants
/// compared with its base, read back from its records, and the gate's line
/// on stderr. A run that ended otherwise than well (a failed row, an
/// interruption, a cut stream) keeps its own code, which says more than a
/// gate whose regressions the load may explain. Returns the exit code.
fn gated(ran: &runner::Ran, gate: &Gate) -> anyhow::Result<u8> {
    let mut code = ran.code;
    if !gate.fail_on_regression {
        return Ok(code);
    }
    let opts = crate::compare::Options { threshold: crate::stats::DEFAULT_NOISE, ..crate::compare::Options::default() };
    for (dir, run_code) in &ran.runs {
        let stored = crate::evidence::read_run(dir)?;
        let comparisons = crate::compare::paired::compare_run(&stored, &stored.run.id, &opts);
        let (g, why) = crate::compare::gate(comparisons.iter().flat_map(|c| &c.rows), gate);
        if let Some(why) = why {
            let whose = if ran.runs.len() > 1 { format!("{}: ", dir.display()) } else { String::new() };
            crate::text::out::to_stderr(&format!("proofbench: {whose}{why} against the base variant (--fail-on-regression)\n"));
        }
        if *run_code == 0 {
            code = runner::worse(code, g);
        }
    }
    Ok(code)
}

/// Checks `--launcher`, `--remote-exe` and `--hosts` together: one launcher
/// per host, or one without a host, or none (a local run). Errors are usage
/// errors naming the flag.
fn launchers(args: &RunArgs) -> anyhow::Result<Vec<Launcher>> {
    let Some(template) = &args.launch.launcher else {
        if args.launch.hosts.is_some() || args.launch.remote_exe.is_some() {
            let flag = if args.launch.hosts.is_some() { "--hosts" } else { "--remote-exe" };
            return Err(UsageError(format!("{flag} needs --launcher")).into());
        }
        return Ok(Vec::new());
    };
    let words =
        shlex::split(template).ok_or_else(|| UsageError(format!("--launcher '{template}': unbalanced quotes or a trailing backslash")))?;
    if words.is_empty() {
        return Err(UsageError("--launcher is empty: give a command prefix, e.g. --launcher 'ssh host'".into()).into());
    }
    let remote_exe = match &args.launch.remote_exe {
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
    match &args.launch.hosts {
        None if has_host => Err(UsageError(format!("--launcher '{template}' contains {HOST}: give the hosts with --hosts a,b,c")).into()),
        None => Ok(vec![make(None)]),
        Some(_) if !has_host => {
            Err(UsageError(format!("--hosts needs {HOST} in --launcher (e.g. --launcher 'ssh {HOST}'); '{template}' has none")).into())
        }
        Some(_) if args.output.run_dir.is_some() => {
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
            let submission = crate::runner::remote::launcher::new_submission();
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
    use crate::runner::local::spawn::Invocation;
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
    fn the_target_is_local_one_launcher_or_every_host() {
        assert_eq!(target(&args(&[])).unwrap(), Target::Local);
        match target(&args(&["--launcher", "ssh a"])).unwrap() {
            Target::Launched(l) => assert_eq!((l.prefix, l.host), (vec!["ssh".to_string(), "a".to_string()], None)),
            other => panic!("{other:?}"),
        }
        match target(&args(&["--launcher", "ssh {host}", "--hosts", "a,b,c", "--max-parallel", "2"])).unwrap() {
            Target::Hosts { launchers, max_parallel } => {
                let hosts: Vec<_> = launchers.iter().filter_map(|l| l.host.as_deref()).collect();
                assert_eq!((hosts, max_parallel), (vec!["a", "b", "c"], 2));
            }
            other => panic!("{other:?}"),
        }
        match target(&args(&["--launcher", "ssh {host}", "--hosts", "a,b"])).unwrap() {
            Target::Hosts { max_parallel, .. } => assert_eq!(max_parallel, 2, "every host at once by default"),
            other => panic!("{other:?}"),
        }
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
