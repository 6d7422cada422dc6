//! Markdown escaping: how text that comes from the user or a workload (a
//! label, a summary, an axis value, a reason, a command line) enters
//! report.md, the terminal tables and the documents `--update-doc` fills, as
//! text and never as markup.
//!
//! Every function here returns markdown that a CommonMark/GFM renderer shows
//! as the characters it was given, escaping only what could start markup, so
//! that ordinary text (`>= 5%`, `n <= 5`, `a & b`) is written as it is:
//!
//! - `<` before a letter, `/`, `!` or `?` (a tag, a comment, an autolink:
//!   `<img src=x onerror=...>` can never be HTML) and `&` before a letter or
//!   `#` (an entity) become `&lt;` and `&amp;`;
//! - `` ` `` and `[` are backslash-escaped (no code span, link or image can
//!   start with them), and so is `\` before punctuation, and `*` or `_`
//!   wherever it could open or close emphasis (`*b*`, `2*3`, `_x_`; not
//!   `O_DIRECT * 2` or `base_us`);
//! - `|` too inside a table cell (no cell can break its row);
//! - line breaks become spaces (a value cannot start a heading, a list or a
//!   table row), and control characters U+FFFD (no terminal escape reaches a
//!   terminal that prints report.md).
//!
//! A `<`, `&` or `\` at the end of a value is escaped too, so that two values
//! written side by side cannot make markup together. Nothing reads this
//! markdown back: report.html is rendered from the same document nodes
//! (`text::document`), escaped for HTML instead.
//!
//! - [`text`]: plain text anywhere inside a line: a table cell, a heading, a
//!   sentence.
//! - [`inline`]: text that may hold `code spans` (the registry's summaries,
//!   timed regions and verifiers, a row's reason): the spans are kept, all
//!   else is escaped as [`text`]; a span holding what would be a tag outside
//!   it (`<img`) is escaped as text too, its backticks shown, so that no
//!   renderer, however lax, ever sees a tag.
//! - [`paragraph`]: [`inline`] at the start of a line, with the characters
//!   that would open a block there (`#`, `-`, `>`, `1.`...) escaped.
//! - [`code`]: a code span holding a value exactly, its fence longer than any
//!   run of backticks inside.
//! - [`cell`]: markdown made safe inside a pipe table (`text::table` applies
//!   it to every cell).

/// Whether a `<` followed by `next` (`None`: the end of the value) could
/// open markup: a tag, a comment, a declaration or an autolink.
fn opens_tag(next: Option<char>) -> bool {
    next.is_none_or(|n| n.is_alphabetic() || matches!(n, '/' | '!' | '?'))
}

/// Whether a `*` or `_` between `prev` and `next` (`None`: the edge of the
/// value, where anything may follow) could open or close emphasis. One
/// between blanks cannot (`O_DIRECT * 2`), nor can a `_` inside a word
/// (`base_us`); any other can (`*b*`, `2*3`, `_x_`).
fn emphasis(c: char, prev: Option<char>, next: Option<char>) -> bool {
    let both = |f: fn(&char) -> bool| prev.as_ref().is_some_and(f) && next.as_ref().is_some_and(f);
    !(both(|x| x.is_whitespace()) || (c == '_' && both(|x| x.is_alphanumeric())))
}

/// `c`, between `prev` and `next`, as markdown text appended to `out`.
fn push_text(out: &mut String, c: char, prev: Option<char>, next: Option<char>) {
    match c {
        '*' | '_' if emphasis(c, prev, next) => {
            out.push('\\');
            out.push(c);
        }
        '<' if opens_tag(next) => out.push_str("&lt;"),
        '&' if next.is_none_or(|n| n.is_ascii_alphabetic() || n == '#') => out.push_str("&amp;"),
        '\\' if next.is_none_or(|n| n.is_ascii_punctuation()) => out.push_str("\\\\"),
        '`' | '[' => {
            out.push('\\');
            out.push(c);
        }
        '\n' | '\r' | '\t' => out.push(' '),
        c if c.is_control() => out.push('\u{FFFD}'),
        c => out.push(c),
    }
}

/// `chars` as markdown text appended to `out`.
fn push_all(out: &mut String, chars: &[char]) {
    for (i, &c) in chars.iter().enumerate() {
        push_text(out, c, i.checked_sub(1).map(|p| chars[p]), chars.get(i + 1).copied());
    }
}

/// `s` as plain markdown text for any place inside a line.
pub fn text(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    push_all(&mut out, &chars);
    out
}

/// A code span holding `s` exactly (line breaks as spaces, control
/// characters as U+FFFD): its fence is one backtick longer than the longest
/// run inside, and a space pads content that starts or ends with a backtick
/// or a space (CommonMark strips one space from each end).
pub fn code(s: &str) -> String {
    let content: String = s
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else if c.is_control() {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = content.starts_with(['`', ' ']) || content.ends_with(['`', ' ']);
    if pad { format!("{fence} {content} {fence}") } else { format!("{fence}{content}{fence}") }
}

/// A piece of a record's text as CommonMark reads it (see [`spans`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    /// Text: up to the next backtick, a run of backticks without its
    /// closing run, or a would-be span holding a `<` that could open a tag
    /// (its backticks included).
    Text(String),
    /// A code span as written, its backtick fences included.
    Code(String),
}

/// `s` cut into text and `code spans` (CommonMark: a run of backticks up to
/// the next run of the same length), in order. The one place record text is
/// split: [`inline`] writes it as markdown, the report's document model
/// (`Line::marked`) as typed nodes.
pub fn spans(s: &str) -> Vec<Span> {
    let chars: Vec<char> = s.chars().collect();
    let piece = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            let end = chars[i..].iter().position(|&c| c == '`').map_or(chars.len(), |k| i + k);
            out.push(Span::Text(piece(i, end)));
            i = end;
            continue;
        }
        let run = backticks(&chars, i);
        match closing(&chars, i + run, run) {
            Some(end) if !holds_tag(&chars[i + run..end]) => {
                out.push(Span::Code(piece(i, end + run)));
                i = end + run;
            }
            Some(end) => {
                out.push(Span::Text(piece(i, end + run)));
                i = end + run;
            }
            None => {
                out.push(Span::Text(piece(i, i + run)));
                i += run;
            }
        }
    }
    out
}

/// `s` as markdown in which `code spans` are kept as they are (line breaks
/// as spaces, control characters as U+FFFD) and everything else is escaped
/// as [`text`], piece by piece as [`spans`] cuts it. A span whose content
/// holds a `<` that could open a tag is escaped as text, its backticks
/// shown, and so is a run of backticks without its closing run.
pub fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for span in spans(s) {
        match span {
            Span::Text(t) => push_all(&mut out, &t.chars().collect::<Vec<char>>()),
            Span::Code(written) => out.extend(written.chars().map(|c| match c {
                '\n' | '\r' | '\t' => ' ',
                c if c.is_control() => '\u{FFFD}',
                c => c,
            })),
        }
    }
    out
}

/// Whether `chars` hold a `<` that would open a tag outside a code span.
fn holds_tag(chars: &[char]) -> bool {
    chars.iter().enumerate().any(|(k, &c)| c == '<' && opens_tag(chars.get(k + 1).copied()))
}

/// The length of the run of backticks at `at`.
fn backticks(chars: &[char], at: usize) -> usize {
    chars[at..].iter().take_while(|&&c| c == '`').count()
}

/// Where the first run of exactly `run` backticks at or after `from` starts.
fn closing(chars: &[char], from: usize, run: usize) -> Option<usize> {
    let mut k = from;
    while k < chars.len() {
        if chars[k] == '`' {
            let n = backticks(chars, k);
            if n == run {
                return Some(k);
            }
            k += n;
        } else {
            k += 1;
        }
    }
    None
}

/// [`inline`] for the start of a line: leading blanks dropped, and a first
/// character that would open a block there (a heading, a list item, a
/// thematic break, a setext underline, a table row, an ordered item `1.`)
/// escaped.
pub fn paragraph(s: &str) -> String {
    let md = inline(s.trim_start());
    let first = md.chars().next();
    if first.is_some_and(|c| "#-+*=_~|>".contains(c)) {
        return format!("\\{md}");
    }
    // `12.` or `12)`: an ordered list item.
    let digits = md.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) && md[digits..].starts_with(['.', ')']) {
        return format!("{}\\{}", &md[..digits], &md[digits..]);
    }
    md
}

/// A cell that is already markdown (written by proofbench, or made by
/// [`text`], [`inline`] or [`code`]) made safe inside a pipe table: every
/// `|` that GFM's row splitter would take as a column break is escaped
/// (inside a code span too, where GFM also reads `\|` as `|`), line breaks
/// become spaces.
pub fn cell(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut chars = md.chars();
    while let Some(c) = chars.next() {
        match c {
            // GFM's splitter takes a backslash and the character after it
            // as one: an escaped `|` (or `\`) is no break.
            '\\' => {
                out.push('\\');
                match chars.next() {
                    Some('\n' | '\r') => out.push(' '),
                    Some(n) => out.push(n),
                    None => {}
                }
            }
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_leaves_no_tag_entity_span_link_cell_break_or_control() {
        assert_eq!(text("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)>");
        assert_eq!(text("</b><!-- c --><?x <https://a.b>"), "&lt;/b>&lt;!-- c -->&lt;?x &lt;https://a.b>");
        assert_eq!(text("a&lt;b &#60; &#x3c;"), "a&amp;lt;b &amp;#60; &amp;#x3c;");
        assert_eq!(text("a`b|c\\`d[e](f) ![g](h)"), "a\\`b|c\\\\\\`d\\[e](f) !\\[g](h)");
        assert_eq!(text("line\nbreak\r\ttab"), "line break  tab");
        assert_eq!(text("\u{1b}[31mred\u{7f}\u{9b}"), "\u{FFFD}\\[31mred\u{FFFD}\u{FFFD}");
        // Ordinary text is written as it is.
        for plain in ["workers=2, O_DIRECT * 2 >= 1", "n <= 5, i < n", "a & b", "C:\\dir", "50%", "x > y"] {
            assert_eq!(text(plain), plain);
        }
        // Emphasis cannot start or end; a lone `*` between blanks and a `_` inside a word stay.
        assert_eq!(text("*b* 2*3 _x_ __init__ a * b base_us"), "\\*b\\* 2\\*3 \\_x\\_ \\_\\_init\\_\\_ a * b base_us");
        // A value ending where markup could start is closed off.
        assert_eq!(format!("{}{}", text("a <"), text("img")), "a &lt;img");
        assert_eq!(format!("{}{}", text("a &"), text("lt;")), "a &amp;lt;");
        assert_eq!(format!("{}{}", text("a \\"), text("`")), "a \\\\\\`");
    }

    #[test]
    fn code_spans_fence_past_the_backticks_inside() {
        assert_eq!(code("plots/a.svg"), "`plots/a.svg`");
        assert_eq!(code("echo `date`"), "`` echo `date` ``");
        assert_eq!(code("a``b"), "```a``b```");
        assert_eq!(code("``"), "``` `` ```");
        assert_eq!(code("a | b & <c> \\d"), "`a | b & <c> \\d`");
        assert_eq!(code("x\ny\u{1b}"), "`x y\u{FFFD}`");
    }

    #[test]
    fn inline_keeps_code_spans_and_escapes_the_rest() {
        assert_eq!(inline("a loop of `iters` calls <b>"), "a loop of `iters` calls &lt;b>");
        assert_eq!(inline("one run of `` echo `date` ``, then"), "one run of `` echo `date` ``, then");
        assert_eq!(inline("`a < b && c` and [x]"), "`a < b && c` and \\[x]");
        // A lone backtick is text; a span holding a tag is text with its backticks shown.
        assert_eq!(inline("a`b"), "a\\`b");
        assert_eq!(inline("`<img>` ok"), "\\`&lt;img>\\` ok");
        assert_eq!(inline("x\n# y `a\nb`"), "x # y `a b`");
        // A backslash before a span is text: the span stays one.
        assert_eq!(inline("a\\`b`"), "a\\\\`b`");
    }

    #[test]
    fn a_paragraph_cannot_open_a_block() {
        assert_eq!(paragraph("# title"), "\\# title");
        assert_eq!(paragraph("  - item"), "\\- item");
        assert_eq!(paragraph("+ item"), "\\+ item");
        assert_eq!(paragraph("12. item"), "12\\. item");
        assert_eq!(paragraph("3) item"), "3\\) item");
        assert_eq!(paragraph("> quote"), "\\> quote");
        assert_eq!(paragraph("| a | b |"), "\\| a | b |");
        assert_eq!(paragraph("```rust"), "\\`\\`\\`rust");
        assert_eq!(paragraph("<div>"), "&lt;div>");
        assert_eq!(paragraph("Runs `sh`."), "Runs `sh`.");
        assert_eq!(paragraph("1,000 runs"), "1,000 runs");
    }

    #[test]
    fn cells_escape_every_pipe_the_row_splitter_would_see() {
        assert_eq!(cell("`a|b` c"), "`a\\|b` c");
        assert_eq!(cell(&text("a\\|b")), "a\\\\\\|b");
        assert_eq!(cell(">= 5%\nx"), ">= 5% x");
        assert_eq!(cell("a\\"), "a\\");
    }
}
