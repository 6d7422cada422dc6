//! `proofbench compare`: two stored runs row by row, or the variants of one
//! run paired by round.

use std::process::ExitCode;

use crate::cli::{CompareArgs, CompareFormat};
use crate::compare::{self, Notice};
use crate::history::floors::Floors;
use crate::model::UsageError;
use crate::text::document;
use crate::text::out::Styled;

use super::read_run_arg;

/// `proofbench compare BASE CANDIDATE`: two runs, each row judged against
/// the larger of the noise band and its noise floor from the history at
/// `--db` (when there is one). `proofbench compare RUN`: the variants of one
/// run, paired by round. An incomplete run is said first; under
/// `--fail-on-regression` the rows it did not run fail the gate unless
/// `--allow-missing`.
pub fn compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let threshold = args.threshold.unwrap_or(args.noise) / 100.0;
    let opts = compare::Options {
        threshold,
        across_machines: args.across_machines,
        ignore_params: args.ignore_params.clone(),
        equivalence: args.equivalence.map(|p| p / 100.0),
    };
    // An --html FILE that cannot be written stops the command before it
    // says anything (the envelopes' notices go to stderr before the page).
    if let Some(file) = &args.html {
        super::check_html_target(file)?;
    }
    let (base, base_name) = read_run_arg(&args.base, &args.db)?;
    let (comparisons, notices) = match &args.candidate {
        None => {
            let cs = compare::paired::compare_run(&base, &base_name, &opts);
            if cs.is_empty() {
                return Err(UsageError(format!(
                    "{base_name}: the run has no variants; give two runs (compare BASE CANDIDATE), or measure with --variant"
                ))
                .into());
            }
            (cs, Vec::new())
        }
        Some(cand) => {
            let (candidate, candidate_name) = read_run_arg(cand, &args.db)?;
            let floors = if args.db.is_file() {
                Floors::load(&crate::history::Store::open_reader(&args.db)?, &[])?
            } else {
                Floors::none(&format!("no history database at {}", args.db.display()))
            };
            let machine = base.run.envelope.machine_key();
            let mut c = compare::compare(&base, &candidate, &base_name, &candidate_name, &opts, &|r| floors.of(r, &machine));
            c.floors = Some(floors.source().to_string());
            let warnings = compare::warnings(&c, args.across_machines);
            (vec![c], warnings)
        }
    };
    // An incomplete run is said before anything else.
    let incomplete = compare::completion_warnings(&comparisons);
    let said: Vec<String> = incomplete.iter().map(|w| format!("warning: {w}\n")).collect();
    // The page (and markdown) holds every warning and note.
    let (mut all_warnings, mut notes) = (incomplete.clone(), Vec::new());
    for n in &notices {
        match n {
            Notice::Warning(w) => all_warnings.push(w.clone()),
            Notice::Note(t) => notes.push(t.clone()),
        }
    }
    let page = compare::document_with(&comparisons, &all_warnings, &notes, &|c| Some(compare::forest::of_comparison(c)));
    let text = match args.format {
        CompareFormat::Json => Styled::plain(&{
            crate::text::out::to_stderr(&said.concat());
            let json = if args.candidate.is_some() {
                serde_json::to_string_pretty(&comparisons[0])?
            } else {
                serde_json::to_string_pretty(&comparisons)?
            };
            format!("{json}\n")
        }),
        CompareFormat::Markdown => Styled::plain(&document::markdown::render(&page.blocks)),
        CompareFormat::Terminal => {
            // The envelopes' notices go to stderr; the incomplete run is said on stdout first.
            crate::text::out::to_stderr(&notices.iter().map(Notice::line).collect::<String>());
            let style = super::stdout_style();
            document::terminal::render_styled(&compare::document(&comparisons, &incomplete, &[]).blocks, style)
        }
    };
    super::show(&text, &page, args.html.as_deref())?;
    if !args.gate.fail_on_regression {
        return Ok(ExitCode::SUCCESS);
    }
    let (mut code, why) = compare::gate(comparisons.iter().flat_map(|c| &c.rows), &args.gate);
    if let Some(why) = why {
        crate::text::out::to_stderr(&format!("proofbench: {why} (--fail-on-regression)\n"));
    }
    let not_run: usize = comparisons.iter().map(compare::Comparison::not_run).sum();
    if not_run > 0 && !args.allow_missing {
        crate::text::out::to_stderr(&format!(
            "proofbench: {} could not be compared because a run is incomplete: --fail-on-regression fails on them \
             (--allow-missing to pass without them)\n",
            crate::text::format::counted(not_run, "row", "rows")
        ));
        code = 1;
    }
    Ok(ExitCode::from(code))
}
