//! `proofbench bisect`: the command line checked (run's selection and
//! measurement flags reused, the ones a bisect sets itself refused) into a
//! [`session::Config`], then the bisect (`src/bisect/`).

use std::process::ExitCode;

use clap::Parser;

use crate::bisect::session::{self, BUILD_VAR};
use crate::cli::{BisectArgs, Cli, Command};
use crate::evidence::RunKind;
use crate::model::UsageError;

/// `proofbench bisect`: exit 0 with a culprit named, 1 without one (no
/// change, UNKNOWN, spread, unbuildable), 130 interrupted.
pub fn bisect(args: &BisectArgs) -> anyhow::Result<ExitCode> {
    let (args, argv) = match &args.resume {
        Some(dir) => {
            let rec = session::read_record(dir)?;
            (stored_args(&rec.argv)?, rec.argv)
        }
        None => (args.clone(), std::env::args().skip_while(|a| a != "bisect").skip(1).collect()),
    };
    refuse_run_flags(&args)?;
    let mut run = args.run.clone();
    // Two placeholder variants, so that the A/B run is checked here as it
    // will run; each step puts its two builds in their place.
    run.options.selection.variants = vec![format!("a=env={BUILD_VAR}=a"), format!("b=env={BUILD_VAR}=b")];
    run.options.selection.lockstep = true;
    let mut request = super::run::request(&run, RunKind::Run)?;
    one_row(&request)?;
    if !request.output.no_history && request.output.db.is_none() {
        request.output.db = Some(run.output.out.join("history.sqlite"));
    }
    let cfg = session::Config {
        repo: args.repo.clone(),
        good: args.good.clone().unwrap_or_default(),
        bad: args.bad.clone().unwrap_or_default(),
        build: args.build.clone(),
        exe: args.exe.clone(),
        build_timeout: args.build_timeout.unwrap_or(std::time::Duration::from_secs(3600)),
        request,
        out: run.output.out.clone(),
        resume: args.resume.clone(),
        argv,
        commands: !run.options.selection.workloads.is_empty(),
    };
    let (code, _) = session::run(&cfg)?;
    Ok(ExitCode::from(code))
}

/// The arguments a bisect was started with, from its record.
fn stored_args(argv: &[String]) -> anyhow::Result<BisectArgs> {
    let cli = Cli::try_parse_from(["proofbench", "bisect"].iter().map(|s| s.to_string()).chain(argv.iter().cloned()))
        .map_err(|e| UsageError(format!("--resume: the stored arguments do not parse: {}", e.to_string().lines().next().unwrap_or(""))))?;
    match cli.command {
        Command::Bisect(a) => Ok(*a),
        _ => unreachable!("parsed as bisect"),
    }
}

/// Run's flags that a bisect sets itself or cannot honour.
fn refuse_run_flags(args: &BisectArgs) -> anyhow::Result<()> {
    let (s, o, l) = (&args.run.options.selection, &args.run.output, &args.run.launch);
    let refused = [
        (!s.variants.is_empty(), "--variant", "a bisect's two variants are the builds of two commits"),
        (s.base.is_some(), "--base", "the base of each step is its good side's build"),
        (o.run_dir.is_some(), "--run-dir", "each step writes its run into the bisect's directory; give --out"),
        (l.launcher.is_some() || l.hosts.is_some() || l.remote_exe.is_some(), "--launcher", "a bisect measures on this machine"),
        (args.run.gate.fail_on_regression, "--fail-on-regression", "the bisect's exit code says whether it named a culprit"),
        (o.html.is_some(), "--html", "a bisect writes report.html in its directory"),
        (o.json, "--json", "a bisect prints its steps"),
        (s.compare.mode().is_some(), "--compare-cores", "a bisect follows one row"),
    ];
    match refused.iter().find(|(given, _, _)| *given) {
        Some((_, flag, why)) => Err(UsageError(format!("{flag}: not for bisect: {why}")).into()),
        None => Ok(()),
    }
}

/// A bisect follows one row: the selection must make one cell per variant.
fn one_row(req: &crate::runner::RunRequest) -> anyhow::Result<()> {
    let topo = crate::topology::Topology::live().unwrap_or_else(|_| crate::topology::Topology::single_cpu());
    let plan = crate::plan::build(&req.spec.options, "check", req.spec.seed, &req.spec.specs(), &topo)?;
    let rows = plan.cells.len() / plan.variants.len().max(1);
    if rows != 1 {
        let names: Vec<String> =
            plan.cells.iter().filter(|c| c.variant.as_ref().is_some_and(|v| v.base)).take(4).map(|c| c.row_id.clone()).collect();
        return Err(UsageError(format!(
            "SELECTION: a bisect follows one row, and this selection makes {rows} ({}{}): name one workload and fix its axes with -p NAME=VALUE",
            names.join(", "),
            if rows > 4 { ", ..." } else { "" }
        ))
        .into());
    }
    Ok(())
}
