//! `proofbench check-claims`: a claims file against a run (a directory or a
//! history id).

use std::process::ExitCode;

use crate::claims::{self, ClaimStatus};
use crate::cli::CheckClaimsArgs;
use crate::text::document;

use super::read_run_arg;

/// `proofbench check-claims CLAIMS.toml RUN [--strict]`.
pub fn check_claims(args: &CheckClaimsArgs) -> anyhow::Result<ExitCode> {
    let claims = claims::read(&args.claims)?;
    let (run, run_name) = read_run_arg(&args.run, &args.db)?;
    let checked = claims::check_run(&claims, &run);
    let doc = claims::document(&checked, &run_name, &args.claims.display().to_string());
    super::show(&document::terminal::render_styled(&doc.blocks, super::stdout_style()), &doc, args.html.as_deref())?;
    if args.strict && checked.iter().any(|c| c.status != ClaimStatus::Within) {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
