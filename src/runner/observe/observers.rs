//! The observers of a run ([`super::Observer`] implementations): progress,
//! the JSON stream, each group's plots, HTML and terminal lines, and the
//! history, fanned out by [`Observers`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::evidence::{Row, RunDir, TrialRecord, read_run};
use crate::model::Cell;
use crate::report::variants::Verdicts;
use crate::report::{self};
use crate::text::document::Block;
use crate::text::out::{Out, Style, Styled};

use crate::runner::config::RunRequest;
use crate::runner::observe::progress::{Printer, Progress};
use crate::runner::observe::{Coming, Observer};

/// Every observer of a run, called in order.
pub struct Observers {
    list: Vec<Box<dyn Observer>>,
}

impl Observers {
    /// The observers `run` asks for: progress, the JSON stream (`--json`),
    /// plots, HTML and the terminal's lines (or tables) as each group's rows
    /// are all decided, and the history at the end (unless `--no-history`).
    pub fn for_run(req: &RunRequest, cells: &[Cell]) -> Observers {
        let progress = Progress::new(req.output.quiet);
        let printer = progress.printer();
        Observers::with(req, cells, Box::new(progress), printer, !req.output.json && !req.output.quiet)
    }

    /// The observers of one host's run of `--hosts`: `line` (its progress
    /// line) instead of the bar, the JSON stream, plots and HTML, nothing
    /// printed per group (the hosts run at once), and the history.
    pub fn for_host(req: &RunRequest, cells: &[Cell], line: Box<dyn Observer>) -> Observers {
        Observers::with(req, cells, line, Printer::none(), false)
    }

    /// The launched side's only observer: every event on stdout.
    pub fn streamed() -> Observers {
        Observers { list: vec![Box::new(crate::runner::remote::stream::StreamOut::new())] }
    }

    fn with(req: &RunRequest, cells: &[Cell], progress: Box<dyn Observer>, printer: Printer, print: bool) -> Observers {
        let mut list: Vec<Box<dyn Observer>> = vec![progress];
        if req.output.json {
            list.push(Box::new(JsonStream { out: Out::deferring() }));
        }
        let mut order: Vec<String> = Vec::new();
        for c in cells {
            if !order.contains(&c.group) {
                order.push(c.group.clone());
            }
        }
        list.push(Box::new(GroupOutputs {
            cells: cells.to_vec(),
            print,
            tables: req.output.tables,
            style: req.style(),
            counters: req.output.counters,
            order,
            decided: HashMap::new(),
            ready: HashMap::new(),
            printed: 0,
            hold: !std::io::IsTerminal::is_terminal(&std::io::stdout()),
            printer,
            out: Out::deferring(),
        }));
        if req.history() {
            list.push(Box::new(History { db: req.output.db.clone(), quiet: req.output.quiet }));
        }
        Observers { list }
    }

    pub fn round_started(&mut self, round: u32, coming: &Coming) {
        self.list.iter_mut().for_each(|o| o.round_started(round, coming));
    }

    pub fn trial_started(&mut self, cell: &Cell, trial: u32, round: u32) {
        self.list.iter_mut().for_each(|o| o.trial_started(cell, trial, round));
    }

    pub fn trial_finished(&mut self, cell: &Cell, trial: &TrialRecord) {
        self.list.iter_mut().for_each(|o| o.trial_finished(cell, trial));
    }

    pub fn row_finished(&mut self, row: &Row, dir: &RunDir) -> anyhow::Result<()> {
        self.list.iter_mut().try_for_each(|o| o.row_finished(row, dir))
    }

    pub fn run_finished(&mut self, dir: &Path) -> anyhow::Result<()> {
        self.list.iter_mut().try_for_each(|o| o.run_finished(dir))
    }
}

/// `--json`: each row on stdout as one JSON line when it is decided.
struct JsonStream {
    out: Out,
}

impl Observer for JsonStream {
    fn row_finished(&mut self, row: &Row, _dir: &RunDir) -> anyhow::Result<()> {
        self.out.print(&format!("{}\n", serde_json::to_string(row)?))?;
        Ok(())
    }
}

/// When every row of a group is decided: its plots (as RustFiber draws them
/// while its runs go on), report.html from the records stored so far, and
/// the group on the terminal: its name and one line per row, or with
/// `--tables` its full tables. Groups are printed in plan order, whatever
/// order their last rows are decided in (the rounds shuffle it): a group
/// that ends before one planned earlier waits for it, so that the output
/// reads the same from run to run and still comes as groups end. When
/// stdout is not a terminal (a pipe, a file), every group waits for the
/// run's end: the log reads the rounds' lines, then the tables, in order.
struct GroupOutputs {
    cells: Vec<Cell>,
    /// Whether anything is printed (not `--json`, not `--quiet`).
    print: bool,
    /// `--tables`.
    tables: bool,
    style: Style,
    counters: bool,
    /// The groups in plan order.
    order: Vec<String>,
    /// How many rows of each group are decided.
    decided: HashMap<String, usize>,
    /// What each decided group prints, kept until every group before it
    /// has printed.
    ready: HashMap<String, Styled>,
    /// How many groups of `order` have printed.
    printed: usize,
    /// Hold every group until the run's end (stdout is not a terminal).
    hold: bool,
    printer: Printer,
    out: Out,
}

impl GroupOutputs {
    /// What group `group` prints, from its rows so far (`ordered`, in plan
    /// order) and the run's verdicts so far (`section`: its section, when
    /// it is made already).
    fn text(&self, ordered: &[Row], group: &str, verdicts: &Verdicts, section: Option<&[Block]>) -> Styled {
        let mut text = if self.tables {
            let made;
            let section = match section {
                Some(s) => s,
                None => {
                    made = report::group_section(ordered, group, verdicts);
                    &made
                }
            };
            let mut t = crate::text::document::terminal::render_styled(section, self.style);
            if self.counters {
                t.push(&report::counters_section(ordered, group, self.style));
            }
            t.push(&Styled::plain("\n"));
            t
        } else {
            report::brief::group(ordered, group, verdicts, self.style)
        };
        if !self.tables && self.counters {
            text.push(&report::counters_section(ordered, group, self.style));
        }
        text
    }

    /// Prints every ready group whose predecessors in plan order have all
    /// printed (at the run's `end` only, when holding).
    fn flush(&mut self, end: bool) -> anyhow::Result<()> {
        if self.hold && !end {
            return Ok(());
        }
        while let Some(text) = self.order.get(self.printed).and_then(|g| self.ready.remove(g)) {
            self.printer.suspend(|| self.out.print_styled(&text))?;
            self.printed += 1;
        }
        Ok(())
    }
}

impl Observer for GroupOutputs {
    fn row_finished(&mut self, row: &Row, dir: &RunDir) -> anyhow::Result<()> {
        let group = &row.cell.group;
        let decided = self.decided.entry(group.clone()).or_insert(0);
        *decided += 1;
        if *decided < self.cells.iter().filter(|c| &c.group == group).count() {
            return Ok(());
        }
        // The rows so far, as stored: read once, each held once.
        let mut stored = read_run(dir.path())?;
        // The page so far (the seeds' graphs drawn as results arrive); after
        // the last row, the run's end writes it.
        if self.decided.values().sum::<usize>() < self.cells.len() {
            dir.write_file("report.html", &report::page::render(&stored))?;
        }
        // The variants' verdicts are judged with every comparison of the run.
        let verdicts = Verdicts::so_far(&stored.rows, &self.cells);
        // Rows are decided out of plan order: tables and plots follow the plan.
        let mut ordered: Vec<Row> = std::mem::take(&mut stored.rows).into_iter().filter(|r| &r.cell.group == group).collect();
        drop(stored);
        ordered.sort_by_key(|r| r.cell.index);
        // One section: its figures are the plot files.
        let section = report::group_section(&ordered, group, &verdicts);
        for f in crate::text::document::figures(&section) {
            dir.write_file(&f.path, &f.svg)?;
            let file = f.file_name();
            match crate::text::plot::png::png(&f.svg) {
                Ok(png) => dir.write_bytes(&format!("plots/{}", crate::text::plot::png::file_name(file)), &png)?,
                Err(e) => crate::text::out::to_stderr(&format!("proofbench: warning: plots/{file}: no PNG copy: {e:#}\n")),
            }
        }
        if self.print {
            let text = self.text(&ordered, group, &verdicts, Some(&section));
            self.ready.insert(group.clone(), text);
            self.flush(false)?;
        }
        Ok(())
    }

    /// The groups still waiting print now, in plan order; so do those a
    /// stop signal left with only some of their rows (what they have).
    fn run_finished(&mut self, dir: &Path) -> anyhow::Result<()> {
        if !self.print || self.printed == self.order.len() {
            return Ok(());
        }
        let rows = read_run(dir)?.rows;
        let partial: Vec<String> = self.order[self.printed..]
            .iter()
            .filter(|g| !self.ready.contains_key(*g) && rows.iter().any(|r| &r.cell.group == *g))
            .cloned()
            .collect();
        let verdicts = Verdicts::so_far(&rows, &self.cells);
        for g in partial {
            let mut ordered: Vec<Row> = rows.iter().filter(|r| r.cell.group == g).cloned().collect();
            ordered.sort_by_key(|r| r.cell.index);
            let text = self.text(&ordered, &g, &verdicts, None);
            self.ready.insert(g, text);
        }
        // A group with no row at all prints nothing: the summary names its cells.
        self.order.retain(|g| self.ready.contains_key(g) || rows.iter().any(|r| &r.cell.group == g));
        self.printed = self.printed.min(self.order.len());
        self.flush(true)
    }
}

/// Records the finished run in the history database.
struct History {
    db: Option<PathBuf>,
    quiet: bool,
}

impl Observer for History {
    fn run_finished(&mut self, dir: &Path) -> anyhow::Result<()> {
        // The hosts of `--hosts` end at their own times, into one database:
        // one writer at a time.
        static ONE_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = ONE_WRITER.lock().unwrap_or_else(|e| e.into_inner());
        crate::history::record_after_run(dir, self.db.as_deref(), self.quiet);
        Ok(())
    }
}
