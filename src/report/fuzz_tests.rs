//! Fuzz-style tests: the table writer, the markdown and HTML renderers and
//! the record readers fed long, empty and odd values (control characters,
//! markup, pipes, backslashes, backticks, NUL, right-to-left and combining
//! marks, 120 KB values). None may panic; tables stay tables, long cells
//! are shortened, HTML never carries a tag from a value.

use proptest::prelude::*;

use super::tests::fake_row;
use crate::evidence::read::parse_row;
use crate::evidence::{Row, read_run};
use crate::model::placement::CpuClass;
use crate::model::{Status, Unit};
use crate::text::document::{self, Block, Line};
use crate::text::table::{Align, Cell, Grid, MAX_CELL_CHARS};

/// Pieces that odd values are made of.
const PIECES: &[&str] = &[
    "",
    " ",
    "|",
    "\\",
    "\\|",
    "`",
    "``",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "&lt;",
    "&",
    "[l](u)",
    "# heading",
    "- item",
    "1. one",
    "\n",
    "\r\n",
    "\t",
    "\u{0}",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{202e}",
    "e\u{301}",
    "日本語",
    "😀",
    "{\"a\":1}",
    "x=1,y=2",
    "--",
];

/// An odd value: up to 12 pieces, or one very long value.
fn odd_value() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::collection::vec(prop::sample::select(PIECES), 0..12).prop_map(|p| p.concat()),
        2 => any::<String>(),
        1 => (prop::sample::select(PIECES), 1_000usize..120_000).prop_map(|(p, n)| format!("{p}{}", "v".repeat(n))),
    ]
}

/// Whether the pipe at byte `i` of `line` is a column separator (not
/// escaped: an even number of backslashes before it).
fn separator_at(line: &str, i: usize) -> bool {
    line[..i].bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 0
}

/// The number of column separators of a table line.
fn separators(line: &str) -> usize {
    line.match_indices('|').filter(|(i, _)| separator_at(line, *i)).count()
}

/// A line of inline nodes: text and code of odd values.
fn odd_line() -> impl Strategy<Value = Line> {
    prop::collection::vec((any::<bool>(), odd_value()), 0..4)
        .prop_map(|nodes| nodes.into_iter().fold(Line::new(), |l, (code, v)| if code { l.code(v) } else { l.text(v).marked("a `span` b") }))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_table_writer_keeps_one_row_per_line_and_shortens_long_cells(
        headers in prop::collection::vec(odd_value(), 1..4),
        rows in prop::collection::vec(prop::collection::vec(odd_value(), 4), 0..4),
    ) {
        let mut t = Grid::with_headers(headers.iter().map(|h| (h.clone(), Align::Right)).collect());
        for r in &rows {
            t.push_cells(r.iter().take(headers.len()).map(|c| Cell::from(c.as_str())).collect());
        }
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        prop_assert_eq!(lines.len(), rows.len() + 2, "one line per row, the header and its rule");
        for l in &lines {
            prop_assert_eq!(separators(l), headers.len() + 1, "{}", l);
            // No cell is wider than a shortened value escaped (at most 5 characters a character: `&amp;`).
            prop_assert!(l.chars().count() <= headers.len() * (5 * MAX_CELL_CHARS + 40) + 4);
        }
    }

    #[test]
    fn the_markdown_and_html_renderers_show_odd_values_as_text(
        lines in prop::collection::vec(odd_line(), 1..4),
        name in odd_value(),
        details in odd_value(),
    ) {
        let mut table = document::Table::new(&[("A", Align::Left), ("B", Align::Right)]);
        for l in &lines {
            table.push_row(vec![l.clone(), Line::from(name.clone())]);
        }
        let blocks = vec![
            Block::heading(2, lines[0].clone()),
            Block::Paragraph(lines.clone()),
            Block::List(lines.clone()),
            Block::Warning(lines[0].clone()),
            Block::Table(table),
            Block::Group { name: name.clone(), blocks: vec![Block::paragraph(name.clone())] },
            Block::Fold { summary: lines[0].clone(), blocks: vec![Block::paragraph(Line::new().link(name.clone(), &name))] },
            Block::Details { summary: lines[0].clone(), text: details.clone() },
        ];
        let md = document::markdown::render(&blocks);
        let html = document::html::render(&blocks);
        for tag in ["<script", "<img", "\u{0}", "\u{1b}"] {
            prop_assert!(!html.contains(tag), "{} in the HTML", tag.escape_debug());
        }
        // (A code span may hold `<img`: markdown shows it as code.)
        prop_assert!(!md.contains('\u{1b}') && !md.contains('\u{0}'), "an escape sequence or NUL in the markdown");
        // The lines that look like a table's, outside the details' fenced
        // text (which may hold any line, `| ` included).
        let before_details = document::markdown::render(&blocks[..blocks.len() - 1]);
        let table_lines: Vec<&str> = before_details.lines().filter(|l| l.starts_with("| ")).collect();
        prop_assert_eq!(table_lines.len(), lines.len() + 2);
        for l in table_lines {
            prop_assert_eq!(separators(l), 3, "{}", l);
        }
    }

    #[test]
    fn the_record_readers_and_the_report_take_rows_with_odd_values(
        label in odd_value(),
        reason in odd_value(),
        axis in odd_value(),
        tail in odd_value(),
    ) {
        let mut bad = fake_row(2, CpuClass::Physical, &[10.0, 11.0], None, Status::Failed, Unit::Ns);
        bad.cell.label = label.clone();
        bad.reason = Some(reason.clone());
        bad.stderr_tail = tail;
        bad.summary = label;
        bad.cell.params.insert("workers".into(), serde_json::json!(axis.clone()));
        bad.cell.row_id = format!("001-w.x-{axis}");
        let ok = fake_row(1, CpuClass::Physical, &[10.0, 11.0], None, Status::Ok, Unit::Ns);
        let rows = vec![ok, bad];
        let tmp = tempfile::tempdir().unwrap();
        let (stored, run_json) = crate::evidence::fake::fake_run("odd", "2026-01-01T00:00:00Z", None, rows.clone());
        std::fs::write(tmp.path().join("run.json"), run_json).unwrap();
        let jsonl: String = stored.rows.iter().map(|r| format!("{}\n", serde_json::to_string(r).unwrap())).collect();
        std::fs::write(tmp.path().join("rows.jsonl"), &jsonl).unwrap();
        let read = read_run(tmp.path()).unwrap();
        prop_assert_eq!(read.rows.len(), 2);
        prop_assert_eq!(read.rows[1].reason.as_deref(), Some(reason.as_str()), "the records keep the whole value");
        let (md, html) = super::render_md_and_html(&read);
        // The page's own script, and no other.
        prop_assert!(!md.is_empty() && html.matches("<script").count() == 1 && !html.contains("<img"));
        // A long reason is shortened in the tables that show it.
        for l in md.lines().filter(|l| l.starts_with("| ")) {
            prop_assert!(l.chars().count() < 20 * (5 * MAX_CELL_CHARS + 40), "{} characters", l.chars().count());
        }
    }

    #[test]
    fn the_row_reader_refuses_damaged_records_without_panicking(
        cut in 0usize..4000,
        junk in odd_value(),
    ) {
        let row: Row = fake_row(1, CpuClass::Physical, &[10.0, 11.0], None, Status::Ok, Unit::Ns);
        let text = serde_json::to_string(&row).unwrap();
        let at = text.char_indices().map(|(i, _)| i).take_while(|i| *i <= cut).last().unwrap_or(0);
        let path = std::path::Path::new("rows.jsonl");
        for damaged in [&text[..at], &format!("{}{junk}", &text[..at]), junk.as_str(), &format!("{}{}", "[".repeat(10_000), junk)] {
            let _ = parse_row(damaged, path, Some(1));
        }
        prop_assert!(parse_row(&text, path, Some(1)).is_ok());
    }
}
