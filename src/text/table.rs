//! One table writer: markdown pipe tables padded to column width, so the same
//! text reads well on a terminal and renders as markdown; and, for the
//! terminal alone, the same cells as aligned columns without pipes
//! ([`Table::render_aligned`]).
//!
//! Every cell is text unless said otherwise: [`Table::push`] escapes each
//! one for markdown ([`super::markdown::text`]), so a label, an axis value
//! or a reason can neither break its row nor become markup. A cell that
//! proofbench writes as markdown itself (a code span, a reason made by
//! `markdown::inline`) is pushed as [`Cell::Markdown`] and only has its
//! pipes escaped.
//!
//! A cell longer than [`MAX_CELL_CHARS`] characters (a 100 KB `env=` value
//! in a variant's label) is shortened, saying how much was left out: the
//! full value stays in the records (rows.jsonl, run.json), which tables
//! only show.
//!
//! Columns are padded on what a cell shows ([`Cell::Styled`] tells it apart
//! from the colour codes around it): pad first, colour after, so that a
//! coloured cell lines up with a plain one.

use super::markdown;

/// The most characters of a cell's value a table shows.
pub const MAX_CELL_CHARS: usize = 300;

/// What follows a value cut short: how many characters were left out.
pub fn left_out(n: usize) -> String {
    format!("… (+{n} characters)")
}

/// `s` cut to its first `max` characters, followed by [`left_out`]; `s`
/// itself when it is no longer.
pub fn shorten(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}{}", &s[..cut], left_out(s[cut..].chars().count()))),
    }
}

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One cell as it is pushed.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text: escaped for markdown.
    Text(String),
    /// Markdown written by proofbench (or made by `markdown::inline`,
    /// `markdown::code`): kept, its pipes and line breaks made safe.
    Markdown(String),
    /// Plain text for the terminal, which reads no markdown: nothing
    /// escaped, line breaks shown as spaces, shortened as text is.
    Plain(String),
    /// Terminal text with colour codes around its pieces: `shown` is
    /// written as it is, and padded as if it were `plain` (what the reader
    /// sees, one line, already shortened).
    Styled { shown: String, plain: String },
}

impl Cell {
    /// A cell that is already markdown.
    pub fn md(s: impl Into<String>) -> Cell {
        Cell::Markdown(s.into())
    }

    /// The cell as table markdown: text shortened to [`MAX_CELL_CHARS`]
    /// before it is escaped; markdown, which proofbench writes (a report
    /// cell already shortened by its document, a registry's help text), as
    /// it is.
    fn render(self) -> Shown {
        let text = match self {
            Cell::Text(s) => markdown::cell(&markdown::text(&shorten(&s, MAX_CELL_CHARS))),
            Cell::Markdown(s) => markdown::cell(&s),
            Cell::Plain(s) => shorten(&s, MAX_CELL_CHARS).chars().map(|c| if matches!(c, '\n' | '\r' | '\t') { ' ' } else { c }).collect(),
            Cell::Styled { shown, plain } => return Shown { width: plain.chars().count(), text: shown },
        };
        Shown { width: text.chars().count(), text }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

/// A cell as it is written, and how wide it shows.
#[derive(Clone, Debug, PartialEq)]
struct Shown {
    text: String,
    /// The characters a reader sees (colour codes left out).
    width: usize,
}

/// A table of cells, held as the text they render to.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    headers: Vec<Shown>,
    align: Vec<Align>,
    rows: Vec<Vec<Shown>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|c| Cell::from(c.0).render()).collect(),
            align: columns.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// A table whose headers are computed (e.g. one column per worker count).
    pub fn with_headers(headers: Vec<(String, Align)>) -> Table {
        Table {
            align: headers.iter().map(|h| h.1).collect(),
            headers: headers.into_iter().map(|h| Cell::Text(h.0).render()).collect(),
            rows: Vec::new(),
        }
    }

    /// A table whose headers are cells of any kind (the terminal's: plain
    /// or styled, never escaped).
    pub fn with_cell_headers(headers: Vec<(Cell, Align)>) -> Table {
        Table {
            align: headers.iter().map(|h| h.1).collect(),
            headers: headers.into_iter().map(|h| h.0.render()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row of text cells, each escaped for markdown.
    pub fn push(&mut self, row: Vec<String>) {
        self.push_cells(row.into_iter().map(Cell::Text).collect());
    }

    /// Adds a row whose cells say whether they are text or markdown.
    pub fn push_cells(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row.into_iter().map(Cell::render).collect());
    }

    /// The widest cell of column `i`, its header included, and at least `min`.
    fn width(&self, i: usize, min: usize) -> usize {
        self.rows.iter().map(|r| r[i].width).chain([self.headers[i].width, min]).max().unwrap_or(min)
    }

    /// Cell `c` of column `i` padded to `width`, on what it shows.
    fn padded(&self, i: usize, c: &Shown, width: usize) -> String {
        // Padded by hand: a formatting width has a bound of its own, and
        // would count colour codes.
        let pad = " ".repeat(width.saturating_sub(c.width));
        match self.align[i] {
            Align::Left => format!("{}{pad}", c.text),
            Align::Right => format!("{pad}{}", c.text),
        }
    }

    /// Markdown, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let (headers, rows) = (&self.headers, &self.rows);
        let widths: Vec<usize> = (0..headers.len()).map(|i| self.width(i, 3)).collect();
        let line = |cells: &[Shown]| {
            let parts: Vec<String> = cells.iter().enumerate().map(|(i, c)| self.padded(i, c, widths[i])).collect();
            format!("| {} |\n", parts.join(" | "))
        };
        let mut out = line(headers);
        let seps: Vec<String> = widths
            .iter()
            .zip(&self.align)
            .map(|(w, a)| match a {
                Align::Left => "-".repeat(*w),
                Align::Right => format!("{}:", "-".repeat(w.saturating_sub(1))),
            })
            .collect();
        out.push_str(&format!("| {} |\n", seps.join(" | ")));
        for r in rows {
            out.push_str(&line(r));
        }
        out
    }

    /// For the terminal: the header line, then each row indented by
    /// `indent` spaces, the columns two spaces apart and no pipes; a column
    /// empty in every row is left out (the first is always kept), and no
    /// line ends in spaces. Each line ends in a newline.
    pub fn render_aligned(&self, indent: usize) -> String {
        let keep: Vec<usize> = (0..self.headers.len()).filter(|&i| i == 0 || self.rows.iter().any(|r| r[i].width > 0)).collect();
        // The first column's width takes the rows' indent into account: the
        // header starts at the margin, the rows `indent` further in.
        let widths: Vec<usize> = keep
            .iter()
            .map(|&i| {
                if i == 0 {
                    self.rows.iter().map(|r| r[0].width + indent).chain([self.headers[0].width]).max().unwrap_or(0)
                } else {
                    self.width(i, 0)
                }
            })
            .collect();
        let line = |cells: &[Shown], lead: usize| {
            let parts: Vec<String> = keep
                .iter()
                .zip(&widths)
                .map(|(&i, &w)| if i == 0 { self.padded(i, &cells[i], w - lead) } else { self.padded(i, &cells[i], w) })
                .collect();
            format!("{}{}", " ".repeat(lead), parts.join("  ").trim_end())
        };
        let mut out = format!("{}\n", line(&self.headers, 0));
        for r in &self.rows {
            out.push_str(&line(r, indent));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_padded_markdown_with_alignment_and_escapes_pipes() {
        let mut t = Table::new(&[("System", Align::Left), ("median", Align::Right)]);
        t.push(vec!["linux".into(), "1,234 ns".into()]);
        t.push(vec!["a|b".into(), "5 ns".into()]);
        assert_eq!(t.render(), "| System |   median |\n| ------ | -------: |\n| linux  | 1,234 ns |\n| a\\|b   |     5 ns |\n");
    }

    #[test]
    fn styled_cells_pad_on_what_they_show_and_aligned_columns_drop_empty_ones() {
        let red = |s: &str| Cell::Styled { shown: format!("\u{1b}[31m{s}\u{1b}[0m"), plain: s.into() };
        let mut t = Table::with_cell_headers(vec![
            (Cell::Plain("group".into()), Align::Left),
            (Cell::Plain("median".into()), Align::Right),
            (Cell::Plain("empty".into()), Align::Right),
            (Cell::Plain("status".into()), Align::Left),
        ]);
        t.push_cells(vec![Cell::Plain("a.b".into()), Cell::Plain("1.00 ms".into()), Cell::Plain(String::new()), red("failed")]);
        t.push_cells(vec![Cell::Plain("a.c x=1".into()), red("2 ns"), Cell::Plain(String::new()), Cell::Plain("ok".into())]);
        let text = t.render_aligned(2);
        assert_eq!(
            text,
            "group       median  status\n  a.b      1.00 ms  \u{1b}[31mfailed\u{1b}[0m\n  a.c x=1     \u{1b}[31m2 ns\u{1b}[0m  ok\n"
        );
        let pipes = t.render();
        let plain: Vec<String> = pipes.lines().map(|l| l.replace("\u{1b}[31m", "").replace("\u{1b}[0m", "")).collect();
        assert!(plain.iter().all(|l| l.chars().count() == plain[0].chars().count()), "{pipes}");
    }

    #[test]
    fn text_cells_are_escaped_and_markdown_cells_kept() {
        let mut t = Table::new(&[("Label", Align::Left), ("Sees", Align::Right), ("Param", Align::Left)]);
        t.push_cells(vec![Cell::from("<img src=x>\nnext `x`"), Cell::md("`n` >= 5"), Cell::md(markdown::code("a|b"))]);
        let text = t.render();
        let row = text.lines().nth(2).unwrap();
        assert_eq!(row, "| &lt;img src=x> next \\`x\\` | `n` >= 5 | `a\\|b` |");
    }
}
