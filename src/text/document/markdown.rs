//! The markdown renderer: report.md, the tables `--update-doc` writes and
//! `report --counters`. Text is escaped by `text::markdown` (`text` for
//! text, `code` for proofbench's code spans; a record's own spans are kept
//! as written), tables are laid out by `text::table`, and no line of a
//! paragraph can open a block. Blocks are separated by a blank line.

use crate::text::markdown as md;
use crate::text::table::{Cell, Grid, MAX_CELL_CHARS};

use super::{Block, Inline, Line, Table};

/// `blocks` as markdown, a blank line between them.
pub fn render(blocks: &[Block]) -> String {
    blocks.iter().filter(super::in_text).map(block).collect::<Vec<_>>().join("\n")
}

/// One block, ending in a newline (nothing for an empty compact run).
fn block(b: &Block) -> String {
    match b {
        Block::Heading { level, text } => format!("{} {}\n", "#".repeat(usize::from(*level)), line(text)),
        Block::Paragraph(lines) => lines.iter().map(|l| format!("{}\n", paragraph_line(l))).collect(),
        Block::List(items) => items.iter().map(|l| format!("- {}\n", line(l))).collect(),
        Block::Warning(text) => format!("> warning: {}\n", line(text)),
        Block::Table(t) => table(t),
        Block::Figures(figures) => {
            let paths: Vec<String> = figures.iter().map(|f| md::code(&f.path)).collect();
            format!("Plots: {}.\n", paths.join(", "))
        }
        Block::Chart(_) => String::new(),
        Block::Group { blocks, .. } | Block::Fold { blocks, .. } => render(blocks),
        Block::Compact(blocks) => blocks.iter().map(block).collect(),
        Block::Details { summary, text } => {
            let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            let body: String = text.chars().map(|c| if c != '\n' && c != '\t' && c.is_control() { '\u{FFFD}' } else { c }).collect();
            format!("{}\n\n{fence}\n{}\n{fence}\n", paragraph_line(summary), body.trim_end_matches('\n'))
        }
    }
}

/// One inline node.
fn inline(i: &Inline) -> String {
    match i {
        Inline::Text(s) | Inline::Toned(_, s) => md::text(s),
        Inline::Code(c) => match &c.written {
            // A record's span, kept as `text::markdown::inline` keeps it.
            Some(w) => md::inline(w),
            None => md::code(&c.text),
        },
        Inline::Link { text, href } if href.starts_with('#') => format!("[{}]({})", link_text(text), destination(href)),
        Inline::Link { text, href } if super::is_run_file(href) => {
            let path: Vec<String> = href.split('/').map(destination).collect();
            format!("[{}]({})", link_text(text), path.join("/"))
        }
        Inline::Link { text, .. } => md::text(text),
    }
}

/// A link's text: markdown text (no `[` can open a nested link) with every
/// `]` escaped too, so that none closes the link early.
fn link_text(s: &str) -> String {
    md::text(s).replace(']', "\\]")
}

/// A link's destination with every byte but ASCII letters, digits and
/// `#-._~` percent-encoded: no space, parenthesis, `<` or quote can end it.
fn destination(href: &str) -> String {
    crate::text::format::percent_encoded(href.as_bytes(), b"#")
}

/// A line's nodes, each escaped on its own.
pub fn line(l: &Line) -> String {
    l.0.iter().map(inline).collect()
}

/// A line of a paragraph: its first node written as `text::markdown::paragraph`
/// writes the start of a line, so that it opens no heading, list, quote,
/// table or ordered item.
fn paragraph_line(l: &Line) -> String {
    let mut nodes = l.0.iter();
    let Some(first) = nodes.next() else { return String::new() };
    let mut out = block_safe(inline(first));
    out.extend(nodes.map(inline));
    out
}

/// `md` (markdown at the start of a line) with a first character that would
/// open a block escaped: `text::markdown::paragraph`'s rule.
fn block_safe(md: String) -> String {
    if md.chars().next().is_some_and(|c| "#-+*=_~|>".contains(c)) {
        return format!("\\{md}");
    }
    // `12.` or `12)`: an ordered list item.
    let digits = md.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) && md[digits..].starts_with(['.', ')']) {
        return format!("{}\\{}", &md[..digits], &md[digits..]);
    }
    md
}

/// A pipe table padded to its columns' widths (`text::table`), every cell
/// made safe inside it and shortened to `text::table::MAX_CELL_CHARS`.
fn table(t: &Table) -> String {
    let mut out = Grid::with_headers(t.columns.clone());
    for row in &t.rows {
        out.push_cells(row.iter().map(|c| Cell::md(line(&c.shortened(MAX_CELL_CHARS)))).collect());
    }
    out.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::document::{Align, Code, Figure};

    const HOSTILE: &str = "<img src=x onerror=alert(1)> a`b | c \u{1b}[31mred & &lt; [l](u) \\";

    #[test]
    fn text_is_escaped_by_text_markdown_and_each_node_on_its_own() {
        let l = Line::new().text(HOSTILE).text("x");
        assert_eq!(line(&l), format!("{}x", md::text(HOSTILE)));
        assert_eq!(line(&l), "&lt;img src=x onerror=alert(1)> a\\`b | c \u{FFFD}\\[31mred & &amp;lt; \\[l](u) \\\\x");
        // A value ending in `<` is closed off before the next node.
        assert_eq!(line(&Line::new().text("a <").text("img")), "a &lt;img");
        // A `[` of proofbench's own wording is escaped like any text: an axis
        // value after it cannot close it into a link.
        assert_eq!(line(&Line::new().text("w [").text("a](u)").text("]")), "w \\[a](u)]");
    }

    #[test]
    fn code_spans_fence_values_and_keep_a_records_spans_as_written() {
        assert_eq!(line(&Line::new().code("plots/a.svg")), "`plots/a.svg`");
        assert_eq!(line(&Line::new().code("echo `date` | x")), "``echo `date` | x``");
        assert_eq!(line(&Line::new().code("`a`")), "`` `a` ``");
        let kept = Inline::Code(Code { text: "a".into(), written: Some("``a``".into()) });
        assert_eq!(inline(&kept), "``a``");
        let esc = Inline::Code(Code { text: "x".into(), written: Some("`x\n\u{1b}`".into()) });
        assert_eq!(inline(&esc), "`x \u{FFFD}`");
    }

    #[test]
    fn a_records_marked_text_renders_as_text_markdown_inline_writes_it() {
        for s in [
            "a loop of `iters` calls <b>",
            "one run of `` echo `date` ``, then",
            "`a < b && c` and [x]",
            "a`b",
            "`<img>` ok",
            "x\n# y `a\nb`",
            "a\\`b`",
            "a ``x`` b ` y ` c `<img>` d a`b e \\ f & g <",
            "no match for `` cycles=(\\d+)|`never` ``: it ends: tail \u{1b}[31mred <img src=y> `x` a|b\n",
            "x `` a` `` y <`q`\n``  ``",
            "`unclosed ``also",
            "",
            HOSTILE,
        ] {
            assert_eq!(line(&Line::new().marked(s)), md::inline(s), "{s:?}");
            let trimmed = s.trim_start();
            assert_eq!(paragraph_line(&Line::new().marked(trimmed)), md::paragraph(s), "{s:?}");
        }
    }

    #[test]
    fn no_paragraph_line_opens_a_block() {
        for s in ["# title", "  - item", "+ item", "12. item", "3) item", "> quote", "| a | b |", "```rust", "<div>", "1,000 runs"] {
            let l = Line::new().marked(s.trim_start()).text(".");
            assert_eq!(paragraph_line(&l), format!("{}.", md::paragraph(s)), "{s:?}");
        }
        assert_eq!(render(&[Block::Paragraph(vec![Line::from("- a"), Line::from("> b")])]), "\\- a\n\\> b\n");
    }

    #[test]
    fn blocks_are_separated_by_a_blank_line_except_in_a_compact_run() {
        let mut t = Table::new(&[("Row", Align::Left), ("Median", Align::Right)]);
        t.push(vec!["a|b".into(), "5 ns".into()]);
        t.push_row(vec![Line::new().marked("`x|y`"), Line::from("<b>")]);
        let blocks = vec![
            Block::heading(2, Line::from("g <x>")),
            Block::Warning(Line::new().marked("busy `now`")),
            Block::Table(t),
            Block::Figures(vec![Figure { path: "plots/w-a.svg".into(), caption: "c".into(), svg: String::new() }; 2]),
            Block::Compact(vec![Block::paragraph("lead:"), Block::List(vec![Line::from("one"), Line::from("two")])]),
            Block::Compact(Vec::new()),
            Block::Group { name: "g".into(), blocks: vec![Block::paragraph("in"), Block::paragraph("side")] },
        ];
        assert_eq!(
            render(&blocks),
            "## g &lt;x>\n\n> warning: busy `now`\n\n| Row    | Median |\n| ------ | -----: |\n| a\\|b   |   5 ns |\n| `x\\|y` | &lt;b> |\n\n\
             Plots: `plots/w-a.svg`, `plots/w-a.svg`.\n\nlead:\n- one\n- two\n\n\nin\n\nside\n"
        );
    }

    #[test]
    fn details_are_a_fenced_block_longer_than_any_backticks_inside() {
        let d = Block::Details { summary: Line::from("w (failed): last lines"), text: "a ```` b\n\u{1b}[2J\n".into() };
        assert_eq!(render(&[d]), "w (failed): last lines\n\n`````\na ```` b\n\u{FFFD}[2J\n`````\n");
    }

    #[test]
    fn a_link_escapes_its_text_and_percent_encodes_its_fragment() {
        let l = Line::new().link("a [b] `c` <img>", "x\" (y)<z>");
        assert_eq!(line(&l), "[a \\[b\\] \\`c\\` &lt;img>](#x%22%20%28y%29%3Cz%3E)");
        // Only a fragment makes a link: any other href leaves the text alone.
        let out = Line(vec![Inline::Link { text: "[x](y)".into(), href: "javascript:alert(1)".into() }]);
        assert_eq!(line(&out), "\\[x](y)");
        // In a table cell, the link's pipes are escaped like any.
        let mut t = Table::new(&[("Row", Align::Left)]);
        t.push_row(vec![Line::new().link("a|b", "ab")]);
        assert_eq!(render(&[Block::Table(t)]), "| Row         |\n| ----------- |\n| [a\\|b](#ab) |\n");
    }

    #[test]
    fn a_file_link_stays_in_the_run_directory() {
        let l = Line::new().file_link("flame graph", "profiles/000-cpu.primes-workers=1/flame.svg");
        assert_eq!(line(&l), "[flame graph](profiles/000-cpu.primes-workers%3D1/flame.svg)");
        for bad in ["../x.svg", "/etc/passwd", "profiles/../../x", "https://x.example/a", "a b/c", "profiles//x"] {
            assert_eq!(line(&Line::new().file_link("t", bad)), "t", "{bad}");
        }
    }

    #[test]
    fn a_fold_is_its_blocks_without_its_summary() {
        let f = Block::Fold { summary: Line::from("Statistics"), blocks: vec![Block::paragraph("a"), Block::paragraph("b")] };
        assert_eq!(render(&[Block::paragraph("x"), f]), "x\n\na\n\nb\n");
        assert_eq!(Block::fold("s", Vec::new()), None);
    }
}
