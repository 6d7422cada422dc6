//! `proofbench list`: the workloads of the registry (and of command
//! workload files), all or those a selection names (as `run`'s), as text,
//! JSON or the markdown of docs/WORKLOADS.md.

use std::process::ExitCode;

use crate::cli::ListArgs;
use crate::report::workloads;
use crate::text::out::Out;
use crate::workloads::{command, registry};

/// `proofbench list`.
pub fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let defs = command::load(&args.workloads, &registry::specs())?;
    let specs = command::specs_with(registry::specs(), &defs);
    let chosen = crate::plan::select::select(&specs, &args.selection, args.include_selftest)?;
    let specs: Vec<_> = specs.into_iter().filter(|s| chosen.iter().any(|c| c == s.id)).collect();
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&specs)?)
    } else if args.markdown {
        workloads::markdown(&specs)
    } else {
        let width = super::stdout_style().width.unwrap_or(crate::text::out::DEFAULT_WIDTH);
        let mut text = workloads::text(&specs, width);
        for w in defs.iter().filter_map(|d| d.exit_code_only_warning()) {
            text.push_str(&format!("warning: {}{}{}\n", crate::text::markdown::code(w.id), w.what, w.at));
        }
        text
    };
    Out::new().print(&text)?;
    Ok(ExitCode::SUCCESS)
}
