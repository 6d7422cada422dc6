//! The page of a bisect, made from its record alone: the answer, the steps
//! in order (commit, subject, ratio with its interval, verdict, the A/B
//! run's directory), other changes the range held, skipped commits, the
//! culprit's `git show --stat`, and the time spent building and measuring.
//! Written as report.md and report.html in the bisect's directory and
//! printed on the terminal.

use std::path::Path;

use super::record::{Figures, Record};
use super::{Answer, Call};
use crate::text::document::{Align, Block, Document, Line, Table, markdown, terminal};
use crate::text::format;

/// The figures in one sentence (what the lead quotes).
pub fn figures_text(f: &Figures) -> String {
    let mut s = format!(
        "Wall time {}; {} ({} failed) taking {}; {} taking {}; {} measured",
        format::seconds(f.wall),
        format::counted(f.builds, "build", "builds"),
        f.failed,
        format::seconds(f.build_seconds),
        format::counted(f.measurements, "A/B measurement", "A/B measurements"),
        format::seconds(f.measure_seconds),
        format::counted(f.commits, "commit", "commits"),
    );
    if f.sessions > 1 {
        s.push_str(&format!(
            "; over {} sessions, the last building {} and measuring {} (the rest reused)",
            f.sessions, f.built_now, f.measured_now
        ));
    }
    s
}

/// The answer in one sentence.
fn answer_text(rec: &Record) -> String {
    let c = &rec.commits;
    let name = |i: usize| format!("{} ({})", c[i].short(), c[i].subject);
    let list = |lo: usize, hi: usize| (lo + 1..=hi).map(|i| c[i].short().to_string()).collect::<Vec<_>>().join(", ");
    let Some(out) = &rec.outcome else {
        return match rec.state.as_str() {
            "interrupted" => "Interrupted: resume with `proofbench bisect --resume` and this directory, or the same command with the same --out (builds and finished steps are reused).".into(),
            _ => format!("Not finished: {}", rec.error.as_deref().unwrap_or("still running")),
        };
    };
    match &out.answer {
        Answer::Culprit { index, parent } => {
            format!(
                "Culprit: {}, DIFFERENT against its parent {} in the direction of good..bad, measured twice.",
                name(*index),
                c[*parent].short()
            )
        }
        Answer::NoChange { call: Call::Unknown } => "No culprit: good against bad is UNKNOWN, not DIFFERENT, after more trials: this machine could not tell whether there is a change to bisect (more trials, or a quieter machine, may).".into(),
        Answer::NoChange { call } => {
            format!("No culprit: good against bad is {}, not DIFFERENT: there is no change to bisect at this selection.", call.word())
        }
        Answer::Undecided { lo, hi, at } => format!(
            "No culprit: the step measuring {} against {} stayed UNKNOWN after its attempts; the change lies in {} and was not narrowed further (more trials, or a quieter machine, may decide it).",
            c[*at].short(),
            c[*lo].short(),
            list(*lo, *hi)
        ),
        Answer::Spread { lo, hi } => format!(
            "No culprit: {} against {} is DIFFERENT, but no single commit between them is DIFFERENT against its parent: the change is spread over {}.",
            c[*hi].short(),
            c[*lo].short(),
            list(*lo, *hi)
        ),
        Answer::Unbuildable { lo, hi } => format!(
            "No single culprit: the commits between {} and {} do not build; the change is one of {}.",
            c[*lo].short(),
            c[*hi].short(),
            list(*lo, *hi)
        ),
    }
}

/// The bisect as a document.
pub fn document(rec: &Record) -> Document {
    let c = &rec.commits;
    let (first, last) = (&c[0], &c[c.len() - 1]);
    let mut blocks = vec![
        Block::heading(1, format!("Bisect {}..{}", first.short(), last.short())),
        Block::paragraph(Line::new().text(format!(
            "{} commits of {}, built with `{}`; each step measures a commit's build (B) against the good side's (A) in a paired A/B run in lockstep.",
            c.len(),
            rec.repo,
            rec.build
        ))),
        Block::paragraph(Line::new().text(answer_text(rec))),
    ];
    if let Some(out) = &rec.outcome {
        if !out.other_changes.is_empty() {
            blocks.push(Block::heading(2, "The range held another change"));
            blocks.push(Block::List(
                out.other_changes
                    .iter()
                    .map(|o| Line::new().text(format!("{} against {}: {} ({})", c[o.b].short(), c[o.a].short(), o.call.said(), o.note)))
                    .collect(),
            ));
        }
        if !out.undecided_ranges.is_empty() {
            blocks.push(Block::heading(2, "Parts of the range that could not be told"));
            blocks.push(Block::List(
                out.undecided_ranges
                    .iter()
                    .map(|&(a, b)| {
                        Line::new().text(format!(
                            "{} against {}: UNKNOWN (whether it held another change is not known; bisect that part again to find out)",
                            c[b].short(),
                            c[a].short()
                        ))
                    })
                    .collect(),
            ));
        }
        if !out.skipped.is_empty() {
            blocks.push(Block::heading(2, "Skipped: did not build"));
            blocks.push(Block::List(out.skipped.iter().map(|&i| Line::new().text(format!("{} {}", c[i].short(), c[i].subject))).collect()));
        }
    }
    blocks.push(Block::heading(2, "Steps"));
    let mut t = Table::new(&[
        ("#", Align::Right),
        ("Purpose", Align::Left),
        ("B", Align::Left),
        ("Subject", Align::Left),
        ("A", Align::Left),
        ("Ratio B/A (95% CI)", Align::Right),
        ("Verdict", Align::Left),
        ("Attempts", Align::Right),
        ("A/B run", Align::Left),
    ])
    .dropping(&[8, 4, 7]);
    for (n, s) in rec.steps.iter().enumerate() {
        let r = s.result();
        let run = r.run_dir.as_deref().and_then(|d| Path::new(d).file_name()).map(|f| format!("steps/{}", f.to_string_lossy()));
        t.push(vec![
            (n + 1).to_string(),
            s.purpose.as_str().into(),
            c[s.b].short().into(),
            c[s.b].headline(40),
            c[s.a].short().into(),
            r.ratio_text(),
            s.said(),
            s.attempts.len().to_string(),
            run.unwrap_or_else(|| "-".into()),
        ]);
    }
    blocks.push(Block::Table(t));
    if rec.steps.iter().any(|s| s.side.is_some()) {
        blocks.push(Block::paragraph(Line::new().text(
            "\"nearer good\" (or bad): the step's interval lies wholly before (or past) half of the change still tracked (good..bad's at first, then the range's), which placed the commit on that side of it when its verdict alone did not: an UNKNOWN, or a smaller change of its own.",
        )));
    }
    if let Some(stat) = &rec.culprit_stat {
        blocks.push(Block::heading(2, "The culprit"));
        blocks.push(Block::Details { summary: Line::new().text("git show --stat"), text: stat.trim_end().to_string() });
    }
    blocks.push(Block::heading(2, "Time"));
    blocks.push(Block::paragraph(Line::new().text(figures_text(&rec.figures()))));
    Document { title: format!("proofbench bisect {}..{}", first.short(), last.short()), blocks }
}

/// Writes report.md and report.html into `dir` and prints the page.
pub fn write(dir: &Path, rec: &Record) -> anyhow::Result<()> {
    let doc = document(rec);
    crate::evidence::dir::write_atomic(&dir.join("report.md"), markdown::render(&doc.blocks).as_bytes())?;
    crate::evidence::dir::write_atomic(&dir.join("report.html"), crate::report::page::html(&doc).as_bytes())?;
    let style = crate::text::out::stdout_style(crate::model::ColorWhen::Auto);
    crate::text::out::Out::new().print_styled(&terminal::render_styled(&doc.blocks, style))?;
    println!("Bisect: {}/report.md", dir.display());
    Ok(())
}
