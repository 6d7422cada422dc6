//! `proofbench completions` and `proofbench man`: the shell completion
//! scripts and the manual pages, generated from the clap definitions of
//! `cli`, so that they name exactly the commands and flags that exist.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::text::out::Out;

/// The name the scripts complete and the pages are titled with.
const BIN: &str = "proofbench";

/// `proofbench completions SHELL`: the completion script on stdout.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut visible(&Cli::command()), BIN, &mut script);
    Out::new().print(&String::from_utf8(script).context("the completion script is not UTF-8")?)?;
    Ok(ExitCode::SUCCESS)
}

/// `cmd` without its hidden subcommands and flags (`worker`, `noop`,
/// `--inject-fault`...), which the completion generators would offer
/// otherwise: the command, its about text, visible flags and visible
/// subcommands, rebuilt, since clap can add to a command but not take away.
fn visible(cmd: &clap::Command) -> clap::Command {
    let mut out = clap::Command::new(cmd.get_name().to_owned())
        .subcommand_required(cmd.is_subcommand_required_set())
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned().map(offering_workloads))
        .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(visible));
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(about) = cmd.get_long_about() {
        out = out.long_about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(version.to_owned());
    }
    out
}

/// A selection of workloads (`run`'s, `noise`'s, `list`'s positional
/// `selection`) offering the registry's groups and ids to complete; a glob
/// is still accepted, as only the script sees this copy.
fn offering_workloads(arg: clap::Arg) -> clap::Arg {
    if arg.get_id() != "selection" || !arg.is_positional() {
        return arg;
    }
    let mut names: Vec<&'static str> = Vec::new();
    for s in crate::workloads::registry::specs().iter().filter(|s| !s.hidden()) {
        for name in [s.group, s.id] {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    arg.value_parser(clap::builder::PossibleValuesParser::new(names))
}

/// `proofbench man`: the page of `proofbench` on stdout; with `--dir`, one
/// page per visible command written into the directory, whose paths are
/// printed.
pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.dir else {
        let page = render(&Cli::command().disable_help_subcommand(true)).context("rendering the manual page")?;
        Out::new().print(&String::from_utf8(page).context("the manual page is not UTF-8")?)?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("--dir {}: cannot create the directory", dir.display()))?;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = String::new();
    write_pages(&cmd, dir, &mut written)?;
    Out::new().print(&written)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `cmd` (built, so that a subcommand's page is named
/// `proofbench-run.1`) and of each of its visible subcommands into `dir`;
/// appends each path written, one a line, to `written`.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut String) -> anyhow::Result<()> {
    let path = dir.join(clap_mangen::Man::new(cmd.clone()).get_filename());
    // Written whole and renamed into place: a link already in the
    // directory is replaced, never followed.
    render(cmd)
        .map_err(anyhow::Error::from)
        .and_then(|page| crate::evidence::dir::replace_atomic(&path, &page).map_err(anyhow::Error::from))
        .with_context(|| format!("--dir {}: cannot write the page of {}", dir.display(), cmd.get_display_name().unwrap_or(BIN)))?;
    written.push_str(&format!("{}\n", path.display()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

/// The page of `cmd`: clap_mangen's sections, then EXIT STATUS,
/// ENVIRONMENT and EXAMPLES (the command's own, when it has some).
fn render(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    let mut section = |title: &str, paragraphs: &[(&str, &str)]| {
        page.extend(format!(".SH \"{title}\"\n").as_bytes());
        for (tag, text) in paragraphs {
            page.extend(format!(".TP\n{}\n{}\n", roff(tag), roff(text)).as_bytes());
        }
    };
    section("EXIT STATUS", EXIT_STATUS);
    section("ENVIRONMENT", ENVIRONMENT);
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    if let Some((_, examples)) = EXAMPLES.iter().find(|(page, _)| *page == name) {
        section("EXAMPLES", examples);
    }
    Ok(page)
}

/// `text` as roff: backslashes and hyphens escaped, and a line that would
/// start with a control character made plain.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) { format!("\\&{escaped}") } else { escaped }
}

/// The exit codes every command keeps (README.md, "Exit codes").
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Every row ok or skipped; the command did what was asked."),
    (
        "1",
        "Some row invalid, failed or timed out, or a failure of the machine (a full disk); with --fail-on-regression, a row \
         DIFFERENT and worse, or a row an incomplete run did not run.",
    ),
    ("2", "A usage or input error (a bad flag, an unknown workload, an unreadable run directory), said in one line naming it."),
    ("3", "--fail-on-regression found regressions only from disturbed trials or a busy machine."),
    ("4", "--fail-on-regression found no regression but some row UNKNOWN (--allow-unknown passes them)."),
    ("130", "Interrupted (SIGINT or SIGTERM); the finished rows and the report are kept."),
];

/// The environment proofbench reads.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("NO_COLOR", "When set and not empty, no colour on a terminal (as --color never)."),
    ("TERM", "dumb: no colour."),
    ("TMPDIR", "Where runs make their private scratch directories (default /tmp)."),
    ("PROOFBENCH_PERF", "The perf binary the profiling pass and the counters use (default: perf on PATH)."),
    ("SLURM_JOB_ID, SLURM_*", "Inside a Slurm job: recorded in the machine record (node, job, step)."),
];

/// Examples per page (its display name).
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "proofbench",
        &[
            ("proofbench run", "The default suite (under 3 minutes on 2 cores); the tables, then report.md and report.html."),
            ("proofbench list cpu", "The cpu workloads: unit, timed region, verifier, parameters."),
            ("proofbench compare results/A results/B --fail-on-regression", "Two runs compared; exit 1 on a regression."),
        ],
    ),
    (
        "proofbench-run",
        &[
            ("proofbench run cpu.primes -p workers=1,2", "One workload at one and two workers."),
            (
                "proofbench run os --variant old= --variant new=exe=../patched/target/release/proofbench --lockstep",
                "Two builds as an A/B in lockstep pairs: each row SAME, DIFFERENT or UNKNOWN.",
            ),
            ("proofbench run --profile full --out results", "The full profile, kept under results/."),
        ],
    ),
    (
        "proofbench-compare",
        &[
            ("proofbench compare BASE CANDIDATE", "Two run directories, row by row."),
            ("proofbench compare RUN", "The variants of one run against its base variant."),
            ("proofbench compare h:12 h:15 --equivalence 1%", "Two runs of the history, SAME within 1%."),
        ],
    ),
    ("proofbench-noise", &[("proofbench noise --lockstep", "The default selection as two identical variants: what this machine can see.")]),
    ("proofbench-list", &[("proofbench list 'rt.*' --json", "The runtime workloads as JSON.")]),
];
