//! One table writer: markdown pipe tables padded to column width, so the same
//! text reads well on a terminal and renders as markdown; and, for the
//! terminal alone, the same cells as aligned columns without pipes
//! ([`Grid::render_fitted`], [`Grid::render_fitted_one_line`]).
//!
//! Every cell is text unless said otherwise: [`Grid::push`] escapes each
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
pub struct Grid {
    headers: Vec<Shown>,
    align: Vec<Align>,
    rows: Vec<Vec<Shown>>,
}

impl Grid {
    pub fn new(columns: &[(&str, Align)]) -> Grid {
        Grid {
            headers: columns.iter().map(|c| Cell::from(c.0).render()).collect(),
            align: columns.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// A table whose headers are computed (e.g. one column per worker count).
    pub fn with_headers(headers: Vec<(String, Align)>) -> Grid {
        Grid {
            align: headers.iter().map(|h| h.1).collect(),
            headers: headers.into_iter().map(|h| Cell::Text(h.0).render()).collect(),
            rows: Vec::new(),
        }
    }

    /// A table whose headers are cells of any kind (the terminal's: plain
    /// or styled, never escaped).
    pub fn with_cell_headers(headers: Vec<(Cell, Align)>) -> Grid {
        Grid {
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
    /// line ends in spaces. Each line ends in a newline. Within `width` characters (none: as wide
    /// as the cells): when the columns do not fit, the cells are wrapped at
    /// their spaces (never inside a word, each line of a cell in its
    /// column), the widest column first; when even that does not fit,
    /// columns are left out in `drop_order` (indices; the last columns
    /// first, the first never, when empty) and one line under the table
    /// names them.
    ///
    /// A row whose only cell is its first is a heading within the table
    /// (a workload over its rows): it spans the columns, written whole,
    /// and takes no part in the first column's width.
    pub fn render_fitted(&self, indent: usize, width: Option<usize>, drop_order: &[usize]) -> String {
        self.fitted(indent, width, drop_order, true)
    }

    /// [`Grid::render_fitted`] with each row on one line: when the
    /// columns do not fit, columns are left out in `drop_order` and no cell
    /// wraps.
    pub fn render_fitted_one_line(&self, indent: usize, width: Option<usize>, drop_order: &[usize]) -> String {
        self.fitted(indent, width, drop_order, false)
    }

    /// Whether row `r` is a heading: its first cell alone shows anything.
    fn is_heading(r: &[Shown]) -> bool {
        r.len() > 1 && r[0].width > 0 && r[1..].iter().all(|c| c.width == 0)
    }

    fn fitted(&self, indent: usize, width: Option<usize>, drop_order: &[usize], wrapping: bool) -> String {
        let cells = || self.rows.iter().filter(|r| !Self::is_heading(r));
        let mut keep: Vec<usize> = (0..self.headers.len()).filter(|&i| i == 0 || self.rows.iter().any(|r| r[i].width > 0)).collect();
        let order: Vec<usize> = if drop_order.is_empty() { (1..self.headers.len()).rev().collect() } else { drop_order.to_vec() };
        let mut dropped: Vec<usize> = Vec::new();
        // The first column's width takes the rows' indent into account: the
        // header starts at the margin, the rows `indent` further in.
        let lead = |i: usize, row: bool| if i == 0 && row { indent } else { 0 };
        let natural = |i: usize| cells().map(|r| r[i].width + lead(i, true)).chain([self.headers[i].width]).max().unwrap_or(0);
        // Text wraps at its spaces; a figure (right-aligned) stays whole;
        // without wrapping, every cell does (a header still wraps).
        let least = |i: usize| {
            let cell = |c: &Shown| if self.align[i] == Align::Right || !wrapping { c.width } else { longest_word(c) };
            cells().map(|r| cell(&r[i]) + lead(i, true)).chain([longest_word(&self.headers[i])]).max().unwrap_or(0)
        };
        let total = |ws: &[usize]| ws.iter().sum::<usize>() + 2 * ws.len().saturating_sub(1);
        let widths = loop {
            let mut ws: Vec<usize> = keep.iter().map(|&i| natural(i)).collect();
            let Some(max) = width else { break ws };
            let mins: Vec<usize> = keep.iter().map(|&i| least(i)).collect();
            while total(&ws) > max {
                // The widest column that can still give a character.
                let Some(j) = (0..ws.len()).filter(|&j| ws[j] > mins[j]).max_by_key(|&j| (ws[j], usize::MAX - j)) else { break };
                ws[j] -= 1;
            }
            match order.iter().find(|i| keep.contains(i) && **i != 0) {
                Some(&i) if total(&ws) > max => {
                    keep.retain(|&k| k != i);
                    dropped.push(i);
                }
                // Nothing left to drop and still too wide: text columns
                // narrow below their longest word (to `SPLIT_MIN`), the
                // widest first, whose words then break between characters
                // within the column.
                None if wrapping && total(&ws) > max => {
                    while total(&ws) > max {
                        let floor = |j: usize| if self.align[keep[j]] == Align::Left { mins[j].min(SPLIT_MIN) } else { mins[j] };
                        // A column already broken goes on narrowing before another breaks.
                        let Some(j) = (0..ws.len()).filter(|&j| ws[j] > floor(j)).max_by_key(|&j| (ws[j] < mins[j], ws[j], usize::MAX - j))
                        else {
                            break;
                        };
                        ws[j] -= 1;
                    }
                    break ws;
                }
                _ => break ws,
            }
        };
        let line = |cells: &[Shown], row: bool| -> Vec<String> {
            let wrapped: Vec<Vec<Shown>> = keep.iter().zip(&widths).map(|(&i, &w)| wrap(&cells[i], w - lead(i, row), true)).collect();
            let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
            let blank = Shown { text: String::new(), width: 0 };
            (0..height)
                .map(|k| {
                    let parts: Vec<String> = keep
                        .iter()
                        .zip(&widths)
                        .zip(&wrapped)
                        .map(|((&i, &w), lines)| self.padded(i, lines.get(k).unwrap_or(&blank), w - lead(i, row)))
                        .collect();
                    format!("{}{}", " ".repeat(if row { indent } else { 0 }), parts.join("  ").trim_end())
                })
                .collect()
        };
        let mut out = String::new();
        for l in line(&self.headers, false) {
            out.push_str(&format!("{l}\n"));
        }
        for r in &self.rows {
            if Self::is_heading(r) {
                out.push_str(&format!("{}{}\n", " ".repeat(indent), r[0].text.trim_end()));
                continue;
            }
            for l in line(r, true) {
                out.push_str(&format!("{l}\n"));
            }
        }
        if let (Some(max), false) = (width, dropped.is_empty()) {
            dropped.sort_unstable();
            let names: Vec<String> = dropped.iter().map(|&i| plain_of(&self.headers[i])).collect();
            for l in wrap_shown(&format!("(left out to fit {max} columns: {})", names.join(", ")), max) {
                out.push_str(&format!("{l}\n"));
            }
        }
        out
    }
}

/// What a cell shows, without the colour codes around its pieces.
fn plain_of(c: &Shown) -> String {
    uncoloured(&c.text)
}

/// `s` without its colour codes (ESC `[` ... `m`).
pub fn uncoloured(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            colour_code(&mut chars);
        } else {
            out.push(ch);
        }
    }
    out
}

/// The widest word a cell shows (the narrowest it can wrap to).
fn longest_word(c: &Shown) -> usize {
    plain_of(c).split(' ').map(|w| w.chars().count()).max().unwrap_or(0)
}

/// `shown` (text as the terminal gets it, colour codes included) wrapped at
/// its spaces into lines of at most `width` characters shown, the way a
/// table's cell wraps: a word longer than that stays whole, and colour is
/// closed at each line's end and opened again on the next.
pub fn wrap_shown(shown: &str, width: usize) -> Vec<String> {
    let c = Shown { text: shown.to_string(), width: uncoloured(shown).chars().count() };
    wrap(&c, width.max(1), false).into_iter().map(|l| l.text).collect()
}

/// `text` after `lead` (shown as it is), wrapped as [`wrap_shown`] within
/// `width` characters, every line after the first indented `hang`; each
/// line ends in a newline.
pub fn hanging(lead: &str, text: &str, width: usize, hang: usize) -> String {
    let mut lines = wrap_shown(text, width.saturating_sub(hang).max(20)).into_iter();
    let mut out = format!("{lead}{}\n", lines.next().unwrap_or_default());
    for l in lines {
        out.push_str(&format!("{:hang$}{l}\n", ""));
    }
    out
}

/// The narrowest a text column gets when a table cannot fit otherwise.
const SPLIT_MIN: usize = 8;

/// A cell wrapped at its spaces into lines of at most `width` characters
/// shown (a word longer than that stays whole on the line it starts, or
/// with `split` breaks between characters). Colour codes are kept with the characters they
/// colour: a line that ends inside a coloured piece closes it, and the
/// next opens it again.
fn wrap(c: &Shown, width: usize, split: bool) -> Vec<Shown> {
    if c.width <= width {
        return vec![c.clone()];
    }
    // The cell as words, each with its codes, and the code open at its end.
    let mut words: Vec<(String, usize)> = vec![(String::new(), 0)];
    let mut open: Option<String> = None;
    let mut opens_at: Vec<Option<String>> = vec![None];
    let mut chars = c.text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            let code = colour_code(&mut chars);
            open = opened(&code);
            words.last_mut().expect("one word").0.push_str(&code);
        } else if ch == ' ' {
            words.push((String::new(), 0));
            opens_at.push(open.clone());
        } else {
            let w = words.last_mut().expect("one word");
            w.0.push(ch);
            w.1 += 1;
        }
    }
    let pieces: Vec<((String, usize), Option<String>)> = words
        .into_iter()
        .zip(opens_at)
        .flat_map(|((word, w), was_open)| if split && w > width { split_word(&word, was_open, width) } else { vec![((word, w), was_open)] })
        .collect();
    let mut lines: Vec<Shown> = Vec::new();
    let mut cur = Shown { text: String::new(), width: 0 };
    let mut cur_open: Option<String> = None;
    for ((word, w), was_open) in pieces {
        // A word longer than a whole line stays where it is: a line of its own would not fit either.
        if cur.width > 0 && cur.width + 1 + w > width && w <= width {
            if cur_open.is_some() {
                cur.text.push_str("\u{1b}[0m");
            }
            lines.push(std::mem::replace(&mut cur, Shown { text: was_open.clone().unwrap_or_default(), width: 0 }));
        } else if cur.width > 0 {
            cur.text.push(' ');
            cur.width += 1;
        }
        cur.text.push_str(&word);
        cur.width += w;
        // The code open after this word.
        cur_open = word.rfind('\u{1b}').map_or(was_open, |at| {
            (!word[at..].starts_with("\u{1b}[0m")).then(|| word[at..].chars().take_while(|&d| d != 'm').chain(['m']).collect())
        });
    }
    lines.push(cur);
    lines
}

/// The colour code whose ESC was just read from `chars`: ESC and the rest
/// of it, up to and with its `m`.
fn colour_code(chars: &mut std::str::Chars<'_>) -> String {
    let mut code = String::from('\u{1b}');
    for d in chars.by_ref() {
        code.push(d);
        if d == 'm' {
            break;
        }
    }
    code
}

/// The colour open after `code`: none after a reset.
fn opened(code: &str) -> Option<String> {
    (code != "\u{1b}[0m").then(|| code.to_string())
}

/// A word (with its colour codes, `was_open` the code open before it)
/// cut into pieces of `width` characters shown, the last shorter, each
/// with the code open before it.
fn split_word(word: &str, was_open: Option<String>, width: usize) -> Vec<((String, usize), Option<String>)> {
    let mut pieces = Vec::new();
    let (mut cur, mut n, mut cur_open, mut open) = (String::new(), 0, was_open.clone(), was_open);
    let mut chars = word.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            let code = colour_code(&mut chars);
            open = opened(&code);
            cur.push_str(&code);
            continue;
        }
        if n == width {
            pieces.push(((std::mem::take(&mut cur), n), std::mem::replace(&mut cur_open, open.clone())));
            n = 0;
        }
        cur.push(ch);
        n += 1;
    }
    pieces.push(((cur, n), cur_open));
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_padded_markdown_with_alignment_and_escapes_pipes() {
        let mut t = Grid::new(&[("System", Align::Left), ("median", Align::Right)]);
        t.push(vec!["linux".into(), "1,234 ns".into()]);
        t.push(vec!["a|b".into(), "5 ns".into()]);
        assert_eq!(t.render(), "| System |   median |\n| ------ | -------: |\n| linux  | 1,234 ns |\n| a\\|b   |     5 ns |\n");
    }

    #[test]
    fn styled_cells_pad_on_what_they_show_and_aligned_columns_drop_empty_ones() {
        let red = |s: &str| Cell::Styled { shown: format!("\u{1b}[31m{s}\u{1b}[0m"), plain: s.into() };
        let mut t = Grid::with_cell_headers(vec![
            (Cell::Plain("group".into()), Align::Left),
            (Cell::Plain("median".into()), Align::Right),
            (Cell::Plain("empty".into()), Align::Right),
            (Cell::Plain("status".into()), Align::Left),
        ]);
        t.push_cells(vec![Cell::Plain("a.b".into()), Cell::Plain("1.00 ms".into()), Cell::Plain(String::new()), red("failed")]);
        t.push_cells(vec![Cell::Plain("a.c x=1".into()), red("2 ns"), Cell::Plain(String::new()), Cell::Plain("ok".into())]);
        let text = t.render_fitted(2, None, &[]);
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
        let mut t = Grid::new(&[("Label", Align::Left), ("Sees", Align::Right), ("Param", Align::Left)]);
        t.push_cells(vec![Cell::from("<img src=x>\nnext `x`"), Cell::md("`n` >= 5"), Cell::md(markdown::code("a|b"))]);
        let text = t.render();
        let row = text.lines().nth(2).unwrap();
        assert_eq!(row, "| &lt;img src=x> next \\`x\\` | `n` >= 5 | `a\\|b` |");
    }

    /// The overview's columns for two rows, the second's status long.
    fn overview() -> Grid {
        let mut t = Grid::with_cell_headers(
            [
                ("cpu", Align::Left),
                ("Median", Align::Right),
                ("95% CI", Align::Right),
                ("Speedup / ratio", Align::Right),
                ("Sees", Align::Right),
                ("Status", Align::Left),
            ]
            .map(|(h, a)| (Cell::Plain(h.into()), a))
            .to_vec(),
        );
        for (name, status) in
            [("cpu.checksum workers=1", "ok"), ("cpu.checksum parent_wait=spin workers=2", "ok (trials disagree, disturbed)")]
        {
            t.push_cells(
                [name, "88.71 ms", "-9.98% / +11.08%", "1.001x vs 1", ">= 17.10%", status].map(|c| Cell::Plain(c.into())).to_vec(),
            );
        }
        t
    }

    /// A cell shown in red.
    fn red(s: &str) -> Cell {
        Cell::Styled { shown: format!("\u{1b}[31m{s}\u{1b}[0m"), plain: s.into() }
    }

    /// The widest line of `text`, in characters.
    fn widest(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    #[test]
    fn a_table_fits_100_columns_by_wrapping_text_at_its_spaces() {
        let t = overview();
        let wide = t.render_fitted(2, None, &[]);
        assert!(widest(&wide) > 100, "{wide}");
        let text = t.render_fitted(2, Some(100), &[4, 2, 3, 1]);
        assert!(widest(&text) <= 100, "{text}");
        assert!(!text.contains("left out"), "wrapping was enough:\n{text}");
        // Every figure stays whole on its line; the long name and status wrap at their spaces.
        for figure in ["88.71 ms", "-9.98% / +11.08%", "1.001x vs 1", ">= 17.10%"] {
            assert_eq!(text.matches(figure).count(), 2, "{figure}:\n{text}");
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        for w in ["cpu.checksum", "parent_wait=spin", "workers=2", "(trials", "disagree,", "disturbed)"] {
            assert!(words.contains(&w), "{w} whole:\n{text}");
        }
    }

    #[test]
    fn at_80_columns_columns_are_left_out_in_the_stated_order_and_said_under_the_table() {
        let t = overview();
        let text = t.render_fitted(2, Some(80), &[4, 2, 3, 1]);
        assert!(widest(&text) <= 80, "{text}");
        let last = text.lines().last().unwrap();
        assert_eq!(last, "(left out to fit 80 columns: Sees)", "{text}");
        assert!(!text.contains(">= 17.10%") && text.contains("-9.98% / +11.08%") && text.contains("Speedup /"), "{text}");
        // Narrower still: the interval goes next, never the name or the status.
        let narrow = t.render_fitted(2, Some(50), &[4, 2, 3, 1]);
        let note = narrow[narrow.find("(left out").expect("the note")..].replace('\n', " ");
        assert!(note.starts_with("(left out to fit 50 columns: 95% CI, Speedup / ratio, Sees"), "{narrow}");
        assert!(widest(&narrow) <= 50, "the note wraps too: {narrow}");
        assert!(narrow.contains("Status") && narrow.contains("disturbed)"), "{narrow}");
    }

    #[test]
    fn a_coloured_cell_wraps_with_its_colour_closed_and_reopened() {
        let red = "\u{1b}[31m";
        let c = Shown { text: format!("{red}ok (trials disagree)\u{1b}[0m"), width: 20 };
        let lines = wrap(&c, 10, false);
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, [format!("{red}ok (trials\u{1b}[0m"), format!("{red}disagree)\u{1b}[0m")]);
        assert_eq!(lines.iter().map(|l| l.width).collect::<Vec<_>>(), [10, 9]);
    }

    #[test]
    fn with_nothing_left_to_drop_a_long_word_breaks_within_its_column_and_nothing_is_lost() {
        let host = "vm/20261129T032841Z-vm-linux-6.18.44-fc-v669";
        let mut t = Grid::new(&[("Row", Align::Left), ("Host", Align::Left), ("Standing", Align::Left)]);
        t.push(vec!["cpu.dynamic runtime=global-queue".into(), host.into(), "in band".into()]);
        t.push_cells(vec![Cell::Plain("os.syscall".into()), red(host), Cell::Plain("ok".into())]);
        // Only the standing may go: the row and the host then break.
        let cols = t.render_fitted(0, Some(40), &[2]);
        let plain = uncoloured(&cols);
        let (table, note) = plain.split_at(plain.find("(left out").expect("the note"));
        assert_eq!(note, "(left out to fit 40 columns: Standing)\n", "{plain}");
        assert!(widest(table) <= 40, "{plain}");
        assert!(widest(table) > 30, "the columns use the width: {plain}");
        // The host column, read down, gives each host back whole.
        let at = table.lines().next().unwrap().find("Host").unwrap();
        let hosts: String = table.lines().skip(1).map(|l| l.get(at..).unwrap_or("").trim_end()).collect();
        assert_eq!(hosts, format!("{host}{host}"), "{plain}");
        assert!(table.contains("runtime=global-queue"), "a word that fits stays whole: {plain}");
        // A coloured word broken across lines is closed and reopened.
        let coloured: Vec<&str> = cols.lines().filter(|l| l.contains('\u{1b}')).collect();
        assert!(coloured.len() >= 2, "{cols:?}");
        for l in coloured {
            assert!(l.ends_with("\u{1b}[0m") && l.contains("\u{1b}[31m"), "{l:?}");
        }
        // A table that can drop what does not fit never breaks a word.
        let dropping = uncoloured(&t.render_fitted(0, Some(40), &[2, 1]));
        assert!(
            dropping.replace('\n', " ").ends_with("(left out to fit 40 columns: Host, Standing) ") && !dropping.contains("vm/"),
            "{dropping}"
        );
    }
}
