//! The observers of a run (`observer::Observer` implementations): progress,
//! the JSON stream, each group's plots, HTML and terminal tables, and the
//! history, fanned out by [`Observers`].

use std::path::{Path, PathBuf};

use crate::evidence::{Row, RunDir, TrialRecord, read_run};
use crate::model::Cell;
use crate::report::{self, terminal::Out};

use super::config::RunRequest;
use super::observer::Observer;
use super::progress::{Printer, Progress};

/// Every observer of a run, called in order.
pub struct Observers {
    list: Vec<Box<dyn Observer>>,
}

impl Observers {
    /// The observers `run` asks for: progress, the JSON stream (`--json`),
    /// plots, HTML and terminal tables as each group's rows are all decided,
    /// and the history at the end (unless `--no-history`).
    pub fn for_run(req: &RunRequest, cells: &[Cell]) -> Observers {
        let progress = Progress::new(req.quiet);
        let printer = progress.printer();
        let mut list: Vec<Box<dyn Observer>> = vec![Box::new(progress)];
        if req.json {
            list.push(Box::new(JsonStream { out: Out::deferring() }));
        }
        list.push(Box::new(GroupOutputs {
            cells: cells.to_vec(),
            tables: !req.json && !req.quiet,
            counters: req.counters,
            printer,
            out: Out::deferring(),
        }));
        if req.history {
            list.push(Box::new(History { db: req.db.clone(), quiet: req.quiet }));
        }
        Observers { list }
    }

    pub fn round_started(&mut self, round: u32, coming: usize) {
        self.list.iter_mut().for_each(|o| o.round_started(round, coming));
    }

    pub fn trial_started(&mut self, cell: &Cell, trial: u32, round: u32) {
        self.list.iter_mut().for_each(|o| o.trial_started(cell, trial, round));
    }

    pub fn trial_finished(&mut self, cell: &Cell, trial: &TrialRecord) {
        self.list.iter_mut().for_each(|o| o.trial_finished(cell, trial));
    }

    pub fn row_finished(&mut self, row: &Row, rows: &[Row], dir: &RunDir) -> anyhow::Result<()> {
        self.list.iter_mut().try_for_each(|o| o.row_finished(row, rows, dir))
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
    fn row_finished(&mut self, row: &Row, _rows: &[Row], _dir: &RunDir) -> anyhow::Result<()> {
        self.out.print(&format!("{}\n", serde_json::to_string(row)?))?;
        Ok(())
    }
}

/// When every row of a group is decided: its plots (as RustFiber draws them
/// while its runs go on), report.html from the records stored so far, and
/// the group's tables on the terminal.
struct GroupOutputs {
    cells: Vec<Cell>,
    tables: bool,
    counters: bool,
    printer: Printer,
    out: Out,
}

impl Observer for GroupOutputs {
    fn row_finished(&mut self, row: &Row, rows: &[Row], dir: &RunDir) -> anyhow::Result<()> {
        let group = &row.cell.group;
        let planned = self.cells.iter().filter(|c| &c.group == group).count();
        if rows.iter().filter(|r| &r.cell.group == group).count() < planned {
            return Ok(());
        }
        // Rows are decided out of plan order: tables and plots follow the plan.
        let mut ordered: Vec<Row> = rows.iter().filter(|r| &r.cell.group == group).cloned().collect();
        ordered.sort_by_key(|r| r.cell.index);
        // One section: its figures are the plot files, its text what is printed.
        // The variants' verdicts are judged with every comparison of the run.
        let verdicts = report::variants::Verdicts::so_far(rows, &self.cells);
        let section = report::group_section(&ordered, group, &verdicts);
        for f in crate::text::document::figures(&section) {
            dir.write_file(&f.path, &f.svg)?;
            let file = f.file_name();
            match report::plot::png::png(&f.svg) {
                Ok(png) => dir.write_bytes(&format!("plots/{}", report::plot::png::file_name(file)), &png)?,
                Err(e) => report::terminal::to_stderr(&format!("proofbench: warning: plots/{file}: no PNG copy: {e:#}\n")),
            }
        }
        // The page so far (the seeds' graphs drawn as results arrive).
        dir.write_file("report.html", &report::page::render(&read_run(dir.path())?))?;
        if self.tables {
            let mut text = crate::text::document::terminal::render(&section);
            if self.counters {
                text.push_str(&report::counters_section(&ordered, group));
            }
            self.printer.suspend(|| self.out.print(&format!("{text}\n")))?;
        }
        Ok(())
    }
}

/// Records the finished run in the history database.
struct History {
    db: Option<PathBuf>,
    quiet: bool,
}

impl Observer for History {
    fn run_finished(&mut self, dir: &Path) -> anyhow::Result<()> {
        crate::history::record_after_run(dir, self.db.as_deref(), self.quiet);
        Ok(())
    }
}
