//! `proofbench compare`: two stored runs row by row, or the variants of one
//! run paired by round.

use std::process::ExitCode;

use crate::cli::{CompareArgs, CompareFormat};
use crate::compare::{self, Verdict};
use crate::history::floors::Floors;
use crate::model::UsageError;
use crate::report::{self, terminal::Out};

use super::read_run_arg;

/// `proofbench compare BASE CANDIDATE`: two runs, each row judged against
/// the larger of the noise band and its noise floor from the history at
/// `--db` (when there is one). `proofbench compare RUN`: the variants of one
/// run, paired by round.
pub fn compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let threshold = args.threshold.unwrap_or(args.noise) / 100.0;
    let opts = compare::Options { threshold, across_machines: args.across_machines, ignore_params: args.ignore_params.clone() };
    let (base, base_name) = read_run_arg(&args.base, &args.db)?;
    let (comparisons, warnings) = match &args.candidate {
        None => {
            let cs = compare::paired::compare(&base.rows, &base_name, &opts);
            if cs.is_empty() {
                return Err(UsageError(format!(
                    "{base_name}: the run has no variants; give two runs (compare BASE CANDIDATE), or measure with --variant"
                ))
                .into());
            }
            (cs, String::new())
        }
        Some(cand) => {
            let (candidate, candidate_name) = read_run_arg(cand, &args.db)?;
            let floors = if args.db.is_file() {
                Floors::load(&crate::history::Store::open_reader(&args.db)?, &[])?
            } else {
                Floors::none(&format!("no history database at {}", args.db.display()))
            };
            let machine = compare::machine_key(&base.run.envelope);
            let mut c = compare::compare(&base, &candidate, &base_name, &candidate_name, &opts, &|r| floors.of(r, &machine));
            c.floors = Some(floors.source().to_string());
            let warnings = compare::warnings(&c, args.across_machines);
            (vec![c], warnings)
        }
    };
    let text = match args.format {
        CompareFormat::Json if args.candidate.is_some() => format!("{}\n", serde_json::to_string_pretty(&comparisons[0])?),
        CompareFormat::Json => format!("{}\n", serde_json::to_string_pretty(&comparisons)?),
        CompareFormat::Markdown => {
            let quoted: String = warnings.lines().map(|l| format!("> {}\n", crate::text::markdown::text(l))).collect();
            let tables: Vec<String> = comparisons.iter().map(compare::render).collect();
            if quoted.is_empty() { tables.join("\n") } else { format!("{quoted}\n{}", tables.join("\n")) }
        }
        CompareFormat::Terminal => {
            report::terminal::to_stderr(&warnings);
            comparisons.iter().map(compare::render).collect::<Vec<_>>().join("\n")
        }
    };
    Out::new().print(&text)?;
    if args.fail_on_regression && comparisons.iter().any(|c| c.count(Verdict::Regressed) > 0) {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
