//! One table writer: markdown pipe tables padded to column width, so the same
//! text reads well on a terminal and renders as markdown.
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
    fn render(self) -> String {
        match self {
            Cell::Text(s) => markdown::cell(&markdown::text(&shorten(&s, MAX_CELL_CHARS))),
            Cell::Markdown(s) => markdown::cell(&s),
            Cell::Plain(s) => shorten(&s, MAX_CELL_CHARS).chars().map(|c| if matches!(c, '\n' | '\r' | '\t') { ' ' } else { c }).collect(),
        }
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

/// A table of cells, held as the markdown they render to.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
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

    /// Adds a row of text cells, each escaped for markdown.
    pub fn push(&mut self, row: Vec<String>) {
        self.push_cells(row.into_iter().map(Cell::Text).collect());
    }

    /// Adds a row whose cells say whether they are text or markdown.
    pub fn push_cells(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row.into_iter().map(Cell::render).collect());
    }

    /// Markdown, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let (headers, rows) = (&self.headers, &self.rows);
        let widths: Vec<usize> = (0..headers.len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([headers[i].chars().count(), 3]).max().unwrap_or(3))
            .collect();
        // Padded by hand: a formatting width has a bound of its own.
        let line = |cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
                    match self.align[i] {
                        Align::Left => format!("{c}{pad}"),
                        Align::Right => format!("{pad}{c}"),
                    }
                })
                .collect();
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
    fn text_cells_are_escaped_and_markdown_cells_kept() {
        let mut t = Table::new(&[("Label", Align::Left), ("Sees", Align::Right), ("Param", Align::Left)]);
        t.push_cells(vec![Cell::from("<img src=x>\nnext `x`"), Cell::md("`n` >= 5"), Cell::md(markdown::code("a|b"))]);
        let text = t.render();
        let row = text.lines().nth(2).unwrap();
        assert_eq!(row, "| &lt;img src=x> next \\`x\\` | `n` >= 5 | `a\\|b` |");
    }
}
