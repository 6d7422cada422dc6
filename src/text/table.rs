//! One table writer: markdown pipe tables padded to column width, so the same
//! text reads well on a terminal and renders as markdown.

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table of text cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table { headers: columns.iter().map(|c| c.0.to_string()).collect(), align: columns.iter().map(|c| c.1).collect(), rows: Vec::new() }
    }

    /// A table whose headers are computed (e.g. one column per worker count).
    pub fn with_headers(headers: Vec<(String, Align)>) -> Table {
        Table { align: headers.iter().map(|h| h.1).collect(), headers: headers.into_iter().map(|h| h.0).collect(), rows: Vec::new() }
    }

    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Markdown, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let headers: Vec<String> = self.headers.iter().map(|h| cell(h)).collect();
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| r.iter().map(|c| cell(c)).collect()).collect();
        let widths: Vec<usize> = (0..headers.len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([headers[i].chars().count(), 3]).max().unwrap_or(3))
            .collect();
        let line = |cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| match self.align[i] {
                    Align::Left => format!("{c:<w$}", w = widths[i]),
                    Align::Right => format!("{c:>w$}", w = widths[i]),
                })
                .collect();
            format!("| {} |\n", parts.join(" | "))
        };
        let mut out = line(&headers);
        let seps: Vec<String> = widths
            .iter()
            .zip(&self.align)
            .map(|(w, a)| match a {
                Align::Left => "-".repeat(*w),
                Align::Right => format!("{}:", "-".repeat(w - 1)),
            })
            .collect();
        out.push_str(&format!("| {} |\n", seps.join(" | ")));
        for r in &rows {
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
}
