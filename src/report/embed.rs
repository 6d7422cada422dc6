//! Tables kept inside documents: every table of a stored run has an id
//! (`report --list-tables`), and `report --update-doc FILE.md` replaces the
//! text between `<!-- proofbench:<id> start -->` and
//! `<!-- proofbench:<id> end -->` with the current table, leaving every other
//! byte of the file as it was.

use crate::evidence::StoredRun;

use super::facts::groups;
use super::{primitive, sections};
use crate::text::document::markdown::render;

/// One table a document can embed.
pub struct DocTable {
    pub id: String,
    pub description: String,
    /// Its markdown, as report.md has it.
    pub text: String,
}

/// Every table of a stored run, in report order.
pub fn tables(stored: &StoredRun) -> Vec<DocTable> {
    let (run, rows) = (&stored.run, &stored.rows);
    let mut out = vec![DocTable {
        id: "summary".into(),
        description: "the run and machine summary".into(),
        text: render(&sections::header(run, rows)),
    }];
    let verdicts = super::variants::Verdicts::of(rows);
    for g in groups(run, rows) {
        let in_group: Vec<&crate::evidence::Row> = rows.iter().filter(|r| r.cell.group == g).collect();
        if let Some(p) = primitive::section(&in_group) {
            out.push(DocTable { id: format!("{g}.primitives"), description: format!("the {g} primitives table"), text: render(&p) });
        }
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for r in &in_group {
            if seen.insert(&r.cell.workload) {
                out.push(DocTable {
                    id: r.cell.workload.clone(),
                    description: format!("{}: prose, scaling and statistics tables", r.cell.workload),
                    text: render(&sections::workload(rows, &r.cell.workload, &verdicts)),
                });
            }
        }
        let c = sections::counters(rows, &g);
        if !c.is_empty() {
            out.push(DocTable { id: format!("{g}.counters"), description: format!("the {g} counters table"), text: render(&c) });
        }
    }
    out.push(DocTable {
        id: "not-ok".into(),
        description: "rows that are not ok, and the run totals".into(),
        text: render(&sections::footer(run, rows)),
    });
    out
}

/// Why a document cannot be updated (a usage error: exit 2).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DocError {
    #[error("line {line}: `{id}` start marker without its end marker")]
    Unclosed { id: String, line: usize },
    #[error("line {line}: `{id}` end marker without a start marker before it")]
    Unopened { id: String, line: usize },
    #[error("line {line}: `{id}` start marker inside the `{outer}` block opened on line {outer_line}")]
    Nested { id: String, line: usize, outer: String, outer_line: usize },
    #[error("line {line}: no table `{id}` in this run (see report --list-tables)")]
    Unknown { id: String, line: usize },
}

const PREFIX: &str = "<!-- proofbench:";

struct Marker {
    id: String,
    start: bool,
    /// Byte range of the marker in the text.
    at: std::ops::Range<usize>,
    line: usize,
}

fn markers(text: &str) -> Vec<Marker> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find(PREFIX) {
        let begin = from + pos;
        let Some(close) = text[begin..].find("-->") else { break };
        let end = begin + close + 3;
        let inner = text[begin + PREFIX.len()..begin + close].trim();
        let line = text[..begin].matches('\n').count() + 1;
        let (id, kind) = inner.rsplit_once(' ').unwrap_or((inner, ""));
        match kind {
            "start" | "end" => out.push(Marker { id: id.trim().to_string(), start: kind == "start", at: begin..end, line }),
            _ => {}
        }
        from = end;
    }
    out
}

/// The document with every marked block replaced by its table.
pub fn update(text: &str, tables: &[DocTable]) -> Result<String, DocError> {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut open: Option<Marker> = None;
    for m in markers(text) {
        match (&open, m.start) {
            (None, true) => {
                if !tables.iter().any(|t| t.id == m.id) {
                    return Err(DocError::Unknown { id: m.id, line: m.line });
                }
                open = Some(m);
            }
            (None, false) => return Err(DocError::Unopened { id: m.id, line: m.line }),
            (Some(o), true) => return Err(DocError::Nested { id: m.id, line: m.line, outer: o.id.clone(), outer_line: o.line }),
            (Some(o), false) if o.id != m.id => return Err(DocError::Unclosed { id: o.id.clone(), line: o.line }),
            (Some(o), false) => {
                let table = tables.iter().find(|t| t.id == o.id).map(|t| t.text.trim_end()).unwrap_or_default();
                out.push_str(&text[copied..o.at.end]);
                out.push_str("\n\n");
                out.push_str(table);
                out.push_str("\n\n");
                copied = m.at.start;
                open = None;
            }
        }
    }
    if let Some(o) = open {
        return Err(DocError::Unclosed { id: o.id, line: o.line });
    }
    out.push_str(&text[copied..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, text: &str) -> DocTable {
        DocTable { id: id.into(), description: String::new(), text: text.into() }
    }

    #[test]
    fn blocks_are_replaced_and_every_other_byte_is_kept() {
        let doc = "# Results\r\n\nIntro with <b>html</b>.\n<!-- proofbench:cpu.primes start -->\nold table\n<!-- proofbench:cpu.primes end -->\nMiddle text.\n\n<!-- proofbench:summary start --><!-- proofbench:summary end -->\ntail without newline";
        let tables = [t("cpu.primes", "| a |\n| - |\n| 1 |\n"), t("summary", "S")];
        let new = update(doc, &tables).unwrap();
        assert_eq!(
            new,
            "# Results\r\n\nIntro with <b>html</b>.\n<!-- proofbench:cpu.primes start -->\n\n| a |\n| - |\n| 1 |\n\n<!-- proofbench:cpu.primes end -->\nMiddle text.\n\n<!-- proofbench:summary start -->\n\nS\n\n<!-- proofbench:summary end -->\ntail without newline"
        );
        // Updating again with the same tables changes nothing.
        assert_eq!(update(&new, &tables).unwrap(), new);
        // A document without markers is returned as it was.
        assert_eq!(update("plain\n", &tables).unwrap(), "plain\n");
    }

    #[test]
    fn unbalanced_or_unknown_markers_are_refused_with_the_line() {
        let tables = [t("a", "A"), t("b", "B")];
        let e = |doc: &str| update(doc, &tables).unwrap_err().to_string();
        assert_eq!(e("x\n<!-- proofbench:a start -->\n"), "line 2: `a` start marker without its end marker");
        assert_eq!(e("<!-- proofbench:a end -->"), "line 1: `a` end marker without a start marker before it");
        assert_eq!(e("<!-- proofbench:a start -->\n<!-- proofbench:b end -->"), "line 1: `a` start marker without its end marker");
        assert_eq!(
            e("<!-- proofbench:a start -->\n\n<!-- proofbench:b start -->"),
            "line 3: `b` start marker inside the `a` block opened on line 1"
        );
        assert_eq!(
            e("\n\n<!-- proofbench:zz start --><!-- proofbench:zz end -->"),
            "line 3: no table `zz` in this run (see report --list-tables)"
        );
    }
}
