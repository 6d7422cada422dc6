//! The terminal renderer: what `run` prints as each group ends and at its
//! end. A terminal reads no markdown, so nothing is escaped for it (an axis
//! value `[-]` shows as `[-]`, a reason's `<worker report>` as it is); the
//! layout is report.md's (headings, lists, padded tables, code spans in
//! backticks), with line breaks inside a value shown as spaces. Control
//! characters are `report::terminal`'s to replace as it prints.

use crate::text::table::{Cell, MAX_CELL_CHARS, Table as TextTable};

use super::{Block, Inline, Line, Table, one_line};

/// `blocks` as plain text, a blank line between them.
pub fn render(blocks: &[Block]) -> String {
    blocks.iter().map(block).collect::<Vec<_>>().join("\n")
}

fn block(b: &Block) -> String {
    match b {
        Block::Heading { level, text } => format!("{} {}\n", "#".repeat(usize::from(*level)), line(text)),
        Block::Paragraph(lines) => lines.iter().map(|l| format!("{}\n", line(l))).collect(),
        Block::List(items) => items.iter().map(|l| format!("- {}\n", line(l))).collect(),
        Block::Warning(text) => format!("warning: {}\n", line(text)),
        Block::Table(t) => table(t),
        Block::Figures(figures) => {
            let paths: Vec<&str> = figures.iter().map(|f| f.path.as_str()).collect();
            format!("Plots: {}.\n", paths.join(", "))
        }
        Block::Group { blocks, .. } | Block::Fold { blocks, .. } => render(blocks),
        Block::Compact(blocks) => blocks.iter().map(block).collect(),
        Block::Details { summary, text } => {
            let body: String = text.trim_end_matches('\n').lines().map(|l| format!("    {l}\n")).collect();
            format!("{}\n\n{body}", line(summary))
        }
    }
}

/// A line's nodes as they read: text as it is, code in backticks.
pub fn line(l: &Line) -> String {
    l.0.iter()
        .map(|i| match i {
            Inline::Text(s) | Inline::Toned(_, s) | Inline::Link { text: s, .. } => one_line(s),
            Inline::Code(c) => format!("`{}`", one_line(&c.text)),
        })
        .collect()
}

/// A table padded to its columns' widths, long cells shortened.
fn table(t: &Table) -> String {
    let mut out = TextTable::with_headers(t.columns.clone());
    for row in &t.rows {
        out.push_cells(row.iter().map(|c| Cell::Plain(line(&c.shortened(MAX_CELL_CHARS)))).collect());
    }
    out.render()
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
}
