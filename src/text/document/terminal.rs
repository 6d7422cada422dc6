//! The terminal renderer: what `run` prints as each group ends and at its
//! end. A terminal reads no markdown, so nothing is escaped for it (an axis
//! value `[-]` shows as `[-]`, a reason's `<worker report>` as it is); the
//! layout is report.md's (headings, lists, padded tables, code spans in
//! backticks), with line breaks inside a value shown as spaces, or, for a
//! table of one line per row, aligned columns without pipes ([`columns`]).
//!
//! Every text node is cleaned of control characters ([`clean`]) before
//! anything is added around it: a record's ESC becomes U+FFFD, and the
//! colour codes of [`Style::color`] (statuses and verdicts by their tone,
//! headings bold) are the renderer's own, added last. What comes out is
//! [`Styled`]: text that may reach the terminal as it is. Columns are padded
//! on what a reader sees, before colour is added, so that coloured cells
//! line up with plain ones.

use std::borrow::Cow;

use anstyle::{AnsiColor, Effects};

use crate::text::table::{Cell, Grid, MAX_CELL_CHARS, hanging, uncoloured};

use super::{Block, Inline, Line, Table, Tone, one_line};

/// Whether `c` may reach a terminal as it is.
fn printable(c: char) -> bool {
    c == '\n' || c == '\t' || !c.is_control()
}

/// `text` with every control character but newline and tab (ESC, the rest
/// of C0, DEL, C1) replaced by U+FFFD (borrowed when there is none): a
/// record's text could hold a terminal escape that recolours, retitles or
/// rewrites the user's terminal; what was there still shows.
pub fn clean(text: &str) -> Cow<'_, str> {
    if text.chars().all(printable) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if printable(c) { c } else { '\u{FFFD}' }).collect())
}

/// How the terminal shows text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Colour the toned nodes (ok green, failed red, skipped yellow, no
    /// change dim) and bold the headings, with ANSI codes.
    pub color: bool,
    /// The terminal's width in characters: every table fits it (cells
    /// wrapped at their spaces, else columns left out, said under the
    /// table), in aligned columns without pipes. None: tables as wide as
    /// their cells, with pipes (what the tests of a document read).
    pub width: Option<usize>,
}

impl Style {
    pub const PLAIN: Style = Style { color: false, width: None };
    #[cfg(test)]
    pub const COLOR: Style = Style { color: true, width: None };
}

/// Text for the terminal whose every piece from a document was
/// [`clean`]ed before any colour code was added around it: it may be
/// written as it is. Only this module makes one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Styled(String);

impl Styled {
    /// `text`, cleaned, with no colour.
    pub fn plain(text: &str) -> Styled {
        Styled(clean(text).into_owned())
    }

    /// `text`, cleaned, in `tone` under `style`.
    pub fn toned(tone: Tone, text: &str, style: Style) -> Styled {
        let text = clean(text);
        Styled(if style.color { paint(tone_style(tone), &text) } else { text.into_owned() })
    }

    /// Appends `other`.
    pub fn push(&mut self, other: &Styled) {
        self.0.push_str(&other.0);
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The colour of a tone.
fn tone_style(t: Tone) -> anstyle::Style {
    match t {
        Tone::Good => anstyle::Style::new().fg_color(Some(AnsiColor::Green.into())),
        Tone::Bad => anstyle::Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
        Tone::Warn => anstyle::Style::new().fg_color(Some(AnsiColor::Yellow.into())),
        Tone::Dim => anstyle::Style::new().effects(Effects::DIMMED),
    }
}

/// `text` between `s`'s codes and a reset (nothing around an empty text).
fn paint(s: anstyle::Style, text: &str) -> String {
    if text.is_empty() || s == anstyle::Style::new() { text.to_string() } else { format!("{}{text}{}", s.render(), s.render_reset()) }
}

/// `blocks` as plain text, a blank line between them (cleaned, no colour,
/// tables with pipes): what the tests read.
#[cfg(test)]
pub fn render(blocks: &[Block]) -> String {
    render_styled(blocks, Style::PLAIN).0
}

/// `blocks` as text for the terminal under `style`, a blank line between
/// them.
pub fn render_styled(blocks: &[Block], style: Style) -> Styled {
    Styled(blocks.iter().filter(super::in_text).map(|b| block(b, style)).collect::<Vec<_>>().join("\n"))
}

fn block(b: &Block, style: Style) -> String {
    let plain = |l: &Line| painted(l, style, anstyle::Style::new()).0;
    match b {
        Block::Heading { level, text } => {
            let bold = anstyle::Style::new().bold();
            let marks = "#".repeat(usize::from(*level));
            if style.color {
                format!("{} {}\n", paint(bold, &marks), painted(text, style, bold).0)
            } else {
                format!("{marks} {}\n", plain(text))
            }
        }
        Block::Paragraph(lines) => lines.iter().map(|l| prose("", &plain(l), style)).collect(),
        Block::List(items) => items.iter().map(|l| prose("- ", &plain(l), style)).collect(),
        Block::Warning(text) => prose(&format!("{} ", Styled::toned(Tone::Warn, "warning:", style).0), &plain(text), style),
        Block::Table(t) => table(t, style),
        Block::Figures(figures) => {
            let paths: Vec<&str> = figures.iter().map(|f| f.path.as_str()).collect();
            prose("", &format!("Plots: {}.", clean(&paths.join(", "))), style)
        }
        Block::Chart(_) => String::new(),
        Block::Group { blocks, .. } | Block::Fold { blocks, .. } => render_styled(blocks, style).0,
        Block::Compact(blocks) => blocks.iter().map(|b| block(b, style)).collect(),
        Block::Details { summary, text } => {
            let body: String = text.trim_end_matches('\n').lines().map(|l| format!("    {}\n", clean(l))).collect();
            format!("{}\n\n{body}", plain(summary))
        }
    }
}

/// Each line of `text` wrapped at its spaces within `width` characters,
/// the lines after the first of each indented two: prose on a terminal
/// (stderr's notes and warnings).
pub fn wrap_prose(text: &str, width: usize) -> String {
    let style = Style { width: Some(width), ..Style::PLAIN };
    let mut out: String = text.lines().map(|l| prose("", l, style)).collect();
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

/// One line of prose after `lead` (shown as it is), ended by a newline:
/// within the terminal's width when it is known, wrapped at its spaces
/// with every line after the first indented two more than `lead`.
fn prose(lead: &str, text: &str, style: Style) -> String {
    let Some(width) = style.width else {
        return format!("{lead}{text}\n");
    };
    hanging(lead, text, width, uncoloured(lead).chars().count() + 2)
}

/// A line's nodes as they read: text as it is, code in backticks (not
/// cleaned): what a test compares.
#[cfg(test)]
pub fn line(l: &Line) -> String {
    l.0.iter()
        .map(|i| match i {
            Inline::Text(s) | Inline::Toned(_, s) | Inline::Link { text: s, .. } => one_line(s),
            Inline::Code(c) => format!("`{}`", one_line(&c.text)),
        })
        .collect()
}

/// A line's text under `style` with `base` around its plain nodes (a
/// heading's bold), and the text it shows (cleaned, no colour).
fn painted(l: &Line, style: Style, base: anstyle::Style) -> (String, String) {
    let (mut shown, mut plain) = (String::new(), String::new());
    for i in &l.0 {
        let (text, s) = match i {
            Inline::Text(t) | Inline::Link { text: t, .. } => (clean(&one_line(t)).into_owned(), base),
            Inline::Code(c) => (format!("`{}`", clean(&one_line(&c.text))), base),
            Inline::Toned(tone, t) => {
                (clean(&one_line(t)).into_owned(), tone_style(*tone).effects(tone_style(*tone).get_effects() | base.get_effects()))
            }
        };
        shown.push_str(&if style.color { paint(s, &text) } else { text.clone() });
        plain.push_str(&text);
    }
    (shown, plain)
}

/// A table cell under `style`, shortened, padded on what it shows.
fn cell(l: &Line, style: Style) -> Cell {
    let (shown, plain) = painted(&l.shortened(MAX_CELL_CHARS), style, anstyle::Style::new());
    Cell::Styled { shown, plain }
}

/// A table padded to its columns' widths, long cells shortened: with
/// pipes, or within the terminal's width as aligned columns (the header
/// dim).
fn table(t: &Table, style: Style) -> String {
    let Some(width) = style.width else {
        let headers = t.columns.iter().map(|(h, a)| (Cell::Plain(clean(h).into_owned()), *a)).collect();
        let mut out = Grid::with_cell_headers(headers);
        for row in &t.rows {
            out.push_cells(row.iter().map(|c| cell(c, style)).collect());
        }
        return out.render();
    };
    let head = |text: &str| {
        let plain = clean(text).into_owned();
        Cell::Styled { shown: if style.color { paint(anstyle::Style::new().bold(), &plain) } else { plain.clone() }, plain }
    };
    let mut out = Grid::with_cell_headers(t.columns.iter().map(|(h, a)| (head(h), *a)).collect());
    for row in &t.rows {
        out.push_cells(row.iter().map(|c| cell(c, style)).collect());
    }
    out.render_fitted(0, Some(width), &t.drop_order)
}

/// A table of one line per row, for a person to scan: `title` (bold) at
/// the margin heads the first column, the other columns' titles beside it
/// (dim), then each row indented by two spaces, the columns aligned two
/// spaces apart with no pipes; a column empty in every row is left out.
pub fn columns(title: &str, t: &Table, style: Style) -> Styled {
    let head = |text: &str, s: anstyle::Style| {
        let plain = clean(text).into_owned();
        Cell::Styled { shown: if style.color { paint(s, &plain) } else { plain.clone() }, plain }
    };
    let mut headers = vec![(head(title, anstyle::Style::new().bold()), t.columns.first().map_or(super::Align::Left, |c| c.1))];
    headers.extend(t.columns.iter().skip(1).map(|(h, a)| (head(h, anstyle::Style::new().effects(Effects::DIMMED)), *a)));
    let mut out = Grid::with_cell_headers(headers);
    for row in &t.rows {
        out.push_cells(row.iter().map(|c| cell(c, style)).collect());
    }
    let text = if t.one_line_rows {
        out.render_fitted_one_line(2, style.width, &t.drop_order)
    } else {
        out.render_fitted(2, style.width, &t.drop_order)
    };
    Styled(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::document::Align;

    #[test]
    fn the_terminal_shows_values_as_they_are_with_no_markdown_escape() {
        let l = Line::from("os.syscall [").text("-").text("] regressed: ").text("<worker report>: not JSON & `x`");
        assert_eq!(line(&l), "os.syscall [-] regressed: <worker report>: not JSON & `x`");
        let mut t = Table::new(&[("Row", Align::Left), ("Why", Align::Left)]);
        t.push(vec!["a [b] | c".into(), "x\ny".into()]);
        let text = render(&[Block::heading(2, "Not ok"), Block::Table(t)]);
        assert_eq!(text, "## Not ok\n\n| Row       | Why |\n| --------- | --- |\n| a [b] | c | x y |\n");
    }

    fn toned_table() -> Table {
        let mut t = Table::new(&[("Row", Align::Left), ("Median", Align::Right), ("Status", Align::Left)]);
        t.push_row(vec![Line::from("w.x workers=1"), Line::from("1.00 ms"), Line::new().toned(Tone::Good, "ok")]);
        t.push_row(vec![
            Line::from("w.x workers=2"),
            Line::new().toned(Tone::Dim, "2 ns"),
            Line::new().toned(Tone::Warn, "skipped").text(" ").toned(Tone::Bad, "(x)"),
        ]);
        t
    }

    #[test]
    fn colour_is_added_after_padding_so_columns_line_up_on_what_shows() {
        let t = toned_table();
        for blocks in [vec![Block::Table(t.clone())], vec![Block::heading(2, "g"), Block::Table(t.clone())]] {
            let plain = render_styled(&blocks, Style::PLAIN);
            let colored = render_styled(&blocks, Style::COLOR);
            assert!(!plain.as_str().contains('\u{1b}'), "{plain:?}");
            assert!(colored.as_str().contains("\u{1b}[32mok\u{1b}[0m"), "ok is green: {colored:?}");
            assert!(colored.as_str().contains("\u{1b}[33mskipped\u{1b}[0m"), "skipped is yellow: {colored:?}");
            assert_eq!(uncoloured(colored.as_str()), plain.as_str(), "colour adds codes and nothing else");
        }
        let plain = columns("w", &t, Style::PLAIN);
        let colored = columns("w", &t, Style::COLOR);
        assert_eq!(uncoloured(colored.as_str()), plain.as_str());
        assert!(colored.as_str() != plain.as_str());
        // Every line's visible width: right-aligned medians end in one column.
        let ends: Vec<usize> = plain.as_str().lines().map(|l| l.find("ms").or(l.find("ns")).map_or(0, |i| i + 2)).collect();
        assert_eq!(ends[1], ends[2], "{plain:?}");
        let colored_lines: Vec<String> = colored.as_str().lines().map(uncoloured).collect();
        let plain_lines: Vec<&str> = plain.as_str().lines().collect();
        for (c, p) in colored_lines.iter().zip(&plain_lines) {
            assert_eq!(c.chars().count(), p.chars().count(), "visible widths equal: {c:?} {p:?}");
        }
        assert_eq!(
            plain.as_str(),
            "w                 Median  Status\n  w.x workers=1  1.00 ms  ok\n  w.x workers=2     2 ns  skipped (x)\n"
        );
    }

    #[test]
    fn prose_wraps_at_spaces_within_a_known_width_and_keeps_colour_balanced() {
        let long = "8 cells do not apply by design: os.yield mode=single placement=cross-cpu, os.ipc-rtt \
                    transport=loopback placement=cross-cpu, rt.fib (2), rt.parallel-for (2) (report.md says why)";
        let blocks = vec![
            Block::Paragraph(vec![Line::from(long), Line::from("short")]),
            Block::List(vec![Line::from(long)]),
            Block::Warning(Line::from("a ").toned(Tone::Bad, long)),
        ];
        // Without a width (markdown-like text, tests) every line stays whole.
        let whole = render_styled(&blocks, Style::PLAIN);
        assert_eq!(whole.as_str().lines().filter(|l| l.ends_with("(report.md says why)")).count(), 3, "{whole:?}");
        for style in [Style { width: Some(60), ..Style::PLAIN }, Style { width: Some(60), ..Style::COLOR }] {
            let text = render_styled(&blocks, style);
            let plain = uncoloured(text.as_str());
            for l in plain.lines() {
                assert!(l.chars().count() <= 60, "{} columns: {l:?}", l.chars().count());
            }
            // Nothing lost, no word cut: the words read in the same order.
            let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
            assert_eq!(words(&plain), words(&uncoloured(whole.as_str())));
            let lines: Vec<&str> = plain.lines().collect();
            assert!(lines[0].starts_with("8 cells") && lines[1].starts_with("  ") && !lines[1].starts_with("   "), "{plain}");
            let item = lines.iter().position(|l| l.starts_with("- 8 cells")).expect("the list item");
            assert!(lines[item + 1].starts_with("    ") && !lines[item + 1].starts_with("     "), "{plain}");
            let warn = lines.iter().position(|l| l.starts_with("warning: a 8 cells")).expect("the warning");
            assert!(lines[warn + 1].starts_with(&" ".repeat(11)), "{plain}");
            // Every coloured line closes what it opened.
            for l in text.as_str().lines().filter(|l| l.contains('\u{1b}')) {
                assert!(l.ends_with("\u{1b}[0m"), "{l:?}");
            }
        }
        // Stderr's text: each line wrapped, its newline kept or not.
        let err = wrap_prose(&format!("note: {long}\nshort\n"), 60);
        assert!(err.ends_with("\nshort\n") && err.lines().all(|l| l.chars().count() <= 60) && err.lines().count() > 3, "{err}");
        assert_eq!(wrap_prose("x y", 60), "x y");
        // A path longer than the line stays beside its label, whole.
        let path = format!("/tmp/{}/report.md", "d".repeat(80));
        assert_eq!(wrap_prose(&format!("Report: {path}\n"), 60), format!("Report: {path}\n"));
        let after = wrap_prose(&format!("Report: {path} and more words after it\n"), 60);
        assert_eq!(after, format!("Report: {path}\n  and more words after it\n"));
    }

    #[test]
    fn a_records_escape_is_replaced_even_when_colour_is_on() {
        let hostile = "\u{1b}[2Jgone\u{7}";
        let mut t = Table::new(&[("Row", Align::Left), ("Status", Align::Left)]);
        t.push_row(vec![Line::from(hostile), Line::new().toned(Tone::Bad, hostile)]);
        let blocks = vec![
            Block::heading(2, Line::from(hostile).toned(Tone::Warn, hostile)),
            Block::paragraph(Line::from(hostile).code(hostile).toned(Tone::Good, hostile)),
            Block::List(vec![Line::from(hostile)]),
            Block::Warning(Line::from(hostile)),
            Block::Table(t.clone()),
            Block::Details { summary: Line::from(hostile), text: hostile.into() },
        ];
        for style in [Style::PLAIN, Style::COLOR] {
            let out = render_styled(&blocks, style);
            let from_records = uncoloured(out.as_str());
            assert!(!from_records.contains('\u{1b}') && !from_records.contains('\u{7}'), "{out:?}");
            assert!(from_records.contains("\u{FFFD}[2Jgone\u{FFFD}"), "{out:?}");
            assert!(!out.as_str().contains("\u{1b}[2J"), "{out:?}");
            let cols = columns(hostile, &t, style);
            assert!(!cols.as_str().contains("\u{1b}[2J") && cols.as_str().contains("\u{FFFD}[2Jgone"), "{cols:?}");
        }
        assert_eq!(Styled::toned(Tone::Good, hostile, Style::COLOR).as_str(), "\u{1b}[32m\u{FFFD}[2Jgone\u{FFFD}\u{1b}[0m");
        assert_eq!(Styled::plain(hostile).as_str(), "\u{FFFD}[2Jgone\u{FFFD}");
    }
}
