//! The report as a document: a small tree of typed nodes that the report's
//! sections build from the records, and that one renderer per output turns
//! into text: [`markdown`] (report.md, `--update-doc` blocks, `--counters`),
//! [`terminal`] (what `run` prints: plain text, nothing escaped, which
//! `text::out` cleans of control characters as it prints) and
//! [`html`] (report.html). No renderer ever reads text another one wrote.
//!
//! Blocks: headings, paragraphs (one or more lines), lists, warnings, tables,
//! figures (the plots of a workload), a group's section, compact runs of
//! blocks (a sentence and the list it introduces), details (text an
//! output may fold away) and folds (blocks an output may fold away under a
//! summary line). Inline nodes are typed, so that each output escapes them
//! its own way: [`Inline::Text`] (any text, a record's included),
//! [`Inline::Code`] (a code span), [`Inline::Toned`] (a status) and
//! [`Inline::Link`] (a link to a section of the same document, by its
//! heading's [`slug`]). Each node is escaped on its own: a value that ends
//! where markup could start is closed off before the next.
//!
//! Text from the records that marks code with backticks (the registry's
//! summaries, timed regions and verifiers, a row's reason) enters through
//! [`Line::marked`], which splits it into text and code spans exactly as
//! `text::markdown::inline` reads it.
//!
//! Pure: nodes in, text out; nothing here reads a record or a file.

pub mod html;
pub mod markdown;
pub mod terminal;

use crate::text::markdown::Span;
pub use crate::text::table::Align;

/// The figures of `blocks`, at any depth, in order.
pub fn figures(blocks: &[Block]) -> Vec<&Figure> {
    blocks
        .iter()
        .flat_map(|b| match b {
            Block::Figures(f) => f.iter().collect(),
            Block::Group { blocks, .. } | Block::Compact(blocks) | Block::Fold { blocks, .. } => figures(blocks),
            _ => Vec::new(),
        })
        .collect()
}

/// A whole report: the page's title and its blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// The title of the page (report.html's `<title>`); the first heading
    /// says it in every output.
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    /// How many figures the document holds, at any depth.
    #[cfg(test)]
    pub fn figures(&self) -> usize {
        figures(&self.blocks).len()
    }
}

/// One block of a document. Blocks follow each other with a blank line
/// between them in markdown (none inside a [`Block::Compact`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A heading of level 1 to 6.
    Heading {
        level: u8,
        text: Line,
    },
    /// A paragraph of one or more lines (kept apart by line breaks).
    Paragraph(Vec<Line>),
    /// A bulleted list, one line per item.
    List(Vec<Line>),
    /// A warning about the whole run, shown apart from the text around it
    /// (`> warning: ...` in markdown).
    Warning(Line),
    Table(Table),
    /// The plots of a workload: listed by path in markdown, drawn inline in
    /// HTML.
    Figures(Vec<Figure>),
    /// A chart of the page alone (a comparison's forest plot, a fleet's
    /// heat map): its SVG inline in HTML, or why there is none; markdown
    /// and the terminal, which hold the same figures in their tables, leave
    /// it out (no line, no blank line).
    Chart(Chart),
    /// The section of one group of workloads.
    Group {
        name: String,
        blocks: Vec<Block>,
    },
    /// Blocks with no blank line between them in markdown: a sentence and
    /// the list it introduces. Empty, it still takes its place (an empty
    /// line in markdown).
    Compact(Vec<Block>),
    /// A long text under a one-line summary (a worker's stderr): folded in
    /// HTML, a fenced block in markdown.
    Details {
        summary: Line,
        text: String,
    },
    /// Blocks a reader opens when they want them (a machine record, the
    /// statistics tables): folded under `summary` in HTML; markdown and the
    /// terminal show the blocks as they are, without the summary.
    Fold {
        summary: Line,
        blocks: Vec<Block>,
    },
}

impl Block {
    /// A heading of `level` (1 to 6).
    pub fn heading(level: u8, text: impl Into<Line>) -> Block {
        debug_assert!((1..=6).contains(&level));
        Block::Heading { level, text: text.into() }
    }

    /// A paragraph of one line.
    pub fn paragraph(line: impl Into<Line>) -> Block {
        Block::Paragraph(vec![line.into()])
    }

    /// `blocks` folded under `summary` (nothing when there are none).
    pub fn fold(summary: impl Into<Line>, blocks: Vec<Block>) -> Option<Block> {
        (!blocks.is_empty()).then(|| Block::Fold { summary: summary.into(), blocks })
    }
}

/// An inline node: a piece of a line.
#[derive(Clone, Debug, PartialEq)]
pub enum Inline {
    /// Text, shown as it is in every output: escaped for markdown by
    /// `text::markdown::text`, HTML-escaped, its control characters replaced
    /// on the terminal. Line breaks inside it are shown as spaces.
    Text(String),
    /// A code span.
    Code(Code),
    /// Text with a meaning a reader should see at a glance (a status, a
    /// verdict): shown as text in markdown, coloured on a terminal that
    /// allows it, a classed `<span>` in HTML.
    Toned(Tone, String),
    /// A link to a section of the same document: `href` is a fragment,
    /// `#` and a heading's [`slug`] (the id HTML gives the heading, and the
    /// anchor GitHub gives it in markdown), or a file of the run directory
    /// ([`is_run_file`]: a profile's files). `[text](#anchor)` in markdown,
    /// an `<a href>` in HTML, the text alone on the terminal. A renderer
    /// shows a link whose `href` is neither as its text alone, so that no
    /// text can become a link out of the run directory.
    Link { text: String, href: String },
}

/// What a [`Inline::Toned`] text says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Good news: ok, improved.
    Good,
    /// Bad news: failed, invalid, timed out, regressed.
    Bad,
    /// Worth a look: skipped on this machine, a warning, disagreeing trials.
    Warn,
    /// Background: skipped by design, no change.
    Dim,
}

impl Tone {
    /// Its name, the class HTML gives its span (`tone-good`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Tone::Good => "good",
            Tone::Bad => "bad",
            Tone::Warn => "warn",
            Tone::Dim => "dim",
        }
    }
}

/// A code span: `text` is what it shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Code {
    /// The characters shown (line breaks as spaces).
    pub text: String,
    /// The span as a record's text wrote it, backticks and padding
    /// included, which markdown keeps byte for byte; `None` for a value
    /// proofbench shows as code, which markdown fences as `text::markdown::code` does.
    pub written: Option<String>,
}

/// Whether `href` names a file inside the run directory the page is in: a
/// relative path each of whose parts is a plain file name
/// (`crate::model::file_name::is_plain`: no `..`, no scheme, no query). Such
/// a link, and a fragment, are the only links a renderer writes.
pub fn is_run_file(href: &str) -> bool {
    !href.is_empty() && href.split('/').all(crate::model::file_name::is_plain)
}

/// A run of inline nodes: a line of a paragraph, a heading, a list item, a
/// table cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line(pub Vec<Inline>);

impl Line {
    pub fn new() -> Line {
        Line(Vec::new())
    }

    /// `s` appended as text.
    pub fn text(mut self, s: impl Into<String>) -> Line {
        self.0.push(Inline::Text(s.into()));
        self
    }

    /// `s` appended as text of a tone.
    pub fn toned(mut self, tone: Tone, s: impl Into<String>) -> Line {
        self.0.push(Inline::Toned(tone, s.into()));
        self
    }

    /// `text` appended as a link to the section whose heading's [`slug`]
    /// is `anchor`.
    pub fn link(mut self, text: impl Into<String>, anchor: &str) -> Line {
        self.0.push(Inline::Link { text: text.into(), href: format!("#{anchor}") });
        self
    }

    /// `text` appended as a link to a file of the run directory, `path`
    /// relative to it (a profile's flame graph): a link only when every
    /// part of `path` is a plain file name ([`is_run_file`]).
    pub fn file_link(mut self, text: impl Into<String>, path: &str) -> Line {
        self.0.push(Inline::Link { text: text.into(), href: path.to_string() });
        self
    }

    /// `s` appended as a code span.
    pub fn code(mut self, s: impl Into<String>) -> Line {
        self.0.push(Inline::Code(Code { text: s.into(), written: None }));
        self
    }

    /// A record's text appended, its `code spans` as [`Inline::Code`] and
    /// the rest as [`Inline::Text`], split exactly where
    /// `text::markdown::inline` splits it: a span is a run of backticks up
    /// to the next run of the same length (CommonMark); a span holding a
    /// `<` that could open a tag, and a run without its closing run, are
    /// text, their backticks shown.
    pub fn marked(mut self, s: &str) -> Line {
        self.0.extend(marked(s));
        self
    }

    /// The characters the line shows.
    pub fn chars(&self) -> usize {
        self.0
            .iter()
            .map(|i| match i {
                Inline::Text(t) | Inline::Toned(_, t) | Inline::Link { text: t, .. } => t.chars().count(),
                Inline::Code(c) => c.text.chars().count(),
            })
            .sum()
    }

    /// The line cut to the first `max` characters it shows, followed by how
    /// many were left out (what a table shows of a long value: the records
    /// hold it whole); the line itself when it is no longer. A code span
    /// cut keeps only what it shows, fenced anew.
    pub fn shortened(&self, max: usize) -> std::borrow::Cow<'_, Line> {
        let total = self.chars();
        if total <= max {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut out = Line::new();
        let mut room = max;
        for node in &self.0 {
            if room == 0 {
                break;
            }
            let take = |s: &str| -> String { s.chars().take(room).collect() };
            let kept = match node {
                Inline::Text(t) => Inline::Text(take(t)),
                Inline::Toned(tone, t) => Inline::Toned(*tone, take(t)),
                Inline::Link { text, href } => Inline::Link { text: take(text), href: href.clone() },
                Inline::Code(c) if c.text.chars().count() <= room => node.clone(),
                Inline::Code(c) => Inline::Code(Code { text: take(&c.text), written: None }),
            };
            room -= match &kept {
                Inline::Text(t) | Inline::Toned(_, t) | Inline::Link { text: t, .. } => t.chars().count(),
                Inline::Code(c) => c.text.chars().count(),
            };
            out.0.push(kept);
        }
        std::borrow::Cow::Owned(out.text(crate::text::table::left_out(total - max)))
    }
}

/// A line of one text node, allocated for one (a table of many rows holds
/// one such line per cell).
impl From<String> for Line {
    fn from(s: String) -> Line {
        Line(vec![Inline::Text(s)])
    }
}

impl From<&str> for Line {
    fn from(s: &str) -> Line {
        Line::from(s.to_string())
    }
}

/// A plot of a workload: the file the run wrote, its caption and its SVG.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Its path relative to the run directory (`plots/<name>.svg`).
    pub path: String,
    /// What it shows (the title drawn on it).
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

impl Figure {
    /// The file name of [`Figure::path`].
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// A chart drawn for a page (not a file of a run): what it shows and its
/// SVG, or, when there was nothing to draw, why.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// What it shows, said under it.
    pub caption: String,
    /// The SVG document, or why none was drawn (`no row has an interval`).
    pub svg: Result<String, String>,
}

/// Whether a renderer of text (markdown, the terminal) shows `b`: every
/// block but a [`Block::Chart`].
pub fn in_text(b: &&Block) -> bool {
    !matches!(b, Block::Chart(_))
}

/// A table: titled, aligned columns and rows of cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Each column's title (text) and alignment.
    pub columns: Vec<(String, Align)>,
    /// Rows of cells, one per column.
    pub rows: Vec<Vec<Line>>,
    /// The columns a terminal too narrow for the table leaves out, the
    /// least important first (empty: the last columns first).
    pub drop_order: Vec<usize>,
    /// Whether a terminal keeps each row on one line: too wide a table
    /// leaves columns out rather than wrap a cell.
    pub one_line_rows: bool,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            columns: columns.iter().map(|&(t, a)| (t.to_string(), a)).collect(),
            rows: Vec::new(),
            drop_order: Vec::new(),
            one_line_rows: false,
        }
    }

    /// A table whose titles are computed (e.g. one column per worker count).
    pub fn with_headers(columns: Vec<(String, Align)>) -> Table {
        Table { columns, rows: Vec::new(), drop_order: Vec::new(), one_line_rows: false }
    }

    /// The table with the columns a narrow terminal leaves out, the least
    /// important first.
    pub fn dropping(mut self, order: &[usize]) -> Table {
        self.drop_order = order.to_vec();
        self
    }

    /// The table with each row on one line on a terminal: columns are left
    /// out (in the drop order) before any cell would wrap.
    pub fn one_line_rows(mut self) -> Table {
        self.one_line_rows = true;
        self
    }

    /// Adds a row of text cells.
    pub fn push(&mut self, row: Vec<String>) {
        self.push_row(row.into_iter().map(Line::from).collect());
    }

    /// Adds a row of cells of any inline nodes.
    pub fn push_row(&mut self, row: Vec<Line>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// The anchor of a heading that says `text`, as GitHub makes it for
/// markdown (and report.html gives the heading as its id): lower case,
/// every space a `-`, letters, digits, `-` and `_` kept, everything else
/// dropped (`cpu.primes` gives `cpuprimes`). A second heading with the same
/// slug gets `-1`, a third `-2` (the HTML renderer counts them).
pub fn slug(text: &str) -> String {
    text.trim()
        .chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The characters a line shows, as plain text (code without its fences).
pub fn plain(l: &Line) -> String {
    l.0.iter()
        .map(|i| match i {
            Inline::Text(t) | Inline::Toned(_, t) | Inline::Link { text: t, .. } => one_line(t),
            Inline::Code(c) => one_line(&c.text),
        })
        .collect()
}

/// `s` with line breaks and tabs as spaces.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if matches!(c, '\n' | '\r' | '\t') { ' ' } else { c }).collect()
}

/// The inline nodes of a record's text (see [`Line::marked`]): the pieces
/// `text::markdown::spans` cuts, so that markdown escapes their ends as it
/// always has.
fn marked(s: &str) -> Vec<Inline> {
    crate::text::markdown::spans(s)
        .into_iter()
        .map(|span| match span {
            Span::Text(t) => Inline::Text(t),
            Span::Code(written) => {
                let run = written.chars().take_while(|&c| c == '`').count();
                // CommonMark shows the content with one space stripped from
                // each end when both ends have one (and it is not all spaces).
                let content = one_line(&written[run..written.len() - run]);
                let text = match content.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
                    Some(inner) if !content.trim().is_empty() => inner.to_string(),
                    _ => content,
                };
                Inline::Code(Code { text, written: Some(written) })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
