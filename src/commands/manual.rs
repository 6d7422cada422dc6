//! `proofbench completions` and `proofbench man`: the shell completion
//! scripts and the manual pages, generated from the clap definitions of
//! `cli`, so that they name exactly the commands and flags that exist.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::report::terminal::Out;

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
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
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

/// `proofbench man`: the page of `proofbench` on stdout; with `--dir`, one
/// page per visible command written into the directory, whose paths are
/// printed.
pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(Cli::command().disable_help_subcommand(true)).render(&mut page).context("rendering the manual page")?;
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
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    // Written whole and renamed into place: a link already in the
    // directory is replaced, never followed.
    man.render(&mut page)
        .map_err(anyhow::Error::from)
        .and_then(|_| crate::evidence::dir::replace_atomic(&path, &page).map_err(anyhow::Error::from))
        .with_context(|| format!("--dir {}: cannot write the page of {}", dir.display(), cmd.get_display_name().unwrap_or(BIN)))?;
    written.push_str(&format!("{}\n", path.display()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
