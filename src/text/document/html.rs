//! The HTML renderer: the body of report.html. Every text node is
//! HTML-escaped ([`escape`]) exactly once, a code span is a `<code>`, a
//! figure its SVG inline (text XML-escaped by plotters) with its caption,
//! a group a `<section>`. Nothing else makes a tag.

use super::{Block, Figure, Inline, Line, Table, one_line};
use crate::text::table::{Align, MAX_CELL_CHARS};

/// Escapes text for HTML element content and attribute values; control
/// characters (not allowed in HTML text) become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `blocks` as HTML, one element per block.
pub fn render(blocks: &[Block]) -> String {
    blocks.iter().map(block).collect()
}

fn block(b: &Block) -> String {
    match b {
        Block::Heading { level, text } => format!("<h{level}>{}</h{level}>\n", line(text).trim()),
        Block::Paragraph(lines) => format!("<p>{}</p>\n", lines.iter().map(line).collect::<Vec<_>>().join("<br>\n")),
        Block::List(items) if items.is_empty() => String::new(),
        Block::List(items) => {
            let items: Vec<String> = items.iter().map(|l| format!("<li>{}</li>", line(l))).collect();
            format!("<ul>{}</ul>\n", items.join("\n"))
        }
        Block::Warning(text) => format!("<blockquote>warning: {}</blockquote>\n", line(text)),
        Block::Table(t) => table(t),
        Block::Figures(figures) => figures.iter().map(figure).collect(),
        Block::Group { name, blocks } => format!("<section class=\"group\" id=\"group-{}\">\n{}</section>\n", escape(name), render(blocks)),
        Block::Compact(blocks) => render(blocks),
        Block::Details { summary, text } => {
            format!("<details><summary>{}</summary><pre>{}</pre></details>\n", line(summary), escape(text))
        }
    }
}

fn inline(i: &Inline) -> String {
    match i {
        Inline::Text(s) => escape(&one_line(s)),
        Inline::Toned(tone, s) => format!("<span class=\"tone-{}\">{}</span>", tone.as_str(), escape(&one_line(s))),
        Inline::Code(c) => format!("<code>{}</code>", escape(&one_line(&c.text))),
    }
}

/// A line's nodes as HTML.
pub fn line(l: &Line) -> String {
    l.0.iter().map(inline).collect()
}

/// A table, its right-aligned columns marked `class="r"`; a cell's
/// leading and trailing blanks are dropped, as in a markdown table, and a
/// long one is shortened as in markdown.
fn table(t: &Table) -> String {
    let class = |i: usize| if t.columns.get(i).is_some_and(|c| c.1 == Align::Right) { " class=\"r\"" } else { "" };
    let mut out = String::from("<table>\n<thead><tr>");
    for (i, (title, _)) in t.columns.iter().enumerate() {
        out.push_str(&format!("<th{}>{}</th>", class(i), escape(&one_line(title)).trim()));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            out.push_str(&format!("<td{}>{}</td>", class(i), line(&c.shortened(MAX_CELL_CHARS)).trim()));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// A plot as a figure: its SVG inline, its file named in the caption.
fn figure(f: &Figure) -> String {
    let svg = f.svg.trim_start_matches(|c| c != '<').trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>").trim();
    format!(
        "<figure class=\"plot\" data-plot=\"{file}\" role=\"img\" aria-label=\"{t}\">\n{svg}\n<figcaption>{t} (<code>{path}</code>, also as PNG)</figcaption>\n</figure>\n",
        file = escape(f.file_name()),
        path = escape(&f.path),
        t = escape(&f.caption)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::document::{Align, Table};

    const IMG: &str = "<img src=x onerror=alert(1)>";

    #[test]
    fn escape_leaves_no_tag_and_no_control_character() {
        assert_eq!(escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(escape("a&b \"c\" 'd'\u{1}\u{1b}"), "a&amp;b &quot;c&quot; &#39;d&#39;\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn every_inline_node_is_escaped_once_and_code_is_a_code_element() {
        let l = Line::new().text(IMG).text(" &lt; a`b | c\u{1b}[31m\nx").text(" [").code("echo `date` <x>").marked(" and `a|b` or `<img>`");
        assert_eq!(
            line(&l),
            "&lt;img src=x onerror=alert(1)&gt; &amp;lt; a`b | c\u{FFFD}[31m x [<code>echo `date` &lt;x&gt;</code> and <code>a|b</code> or `&lt;img&gt;`"
        );
        // A record's span shows what CommonMark shows: one space stripped from each padded end.
        assert_eq!(line(&Line::new().marked("run `` `x` `` now")), "run <code>`x`</code> now");
    }

    #[test]
    fn blocks_become_their_elements() {
        let mut t = Table::new(&[("Row", Align::Left), ("Median", Align::Right)]);
        t.push(vec![" a|b ".into(), IMG.into()]);
        t.push_row(vec![Line::new().code("5"), Line::from("ns")]);
        let html = render(&[
            Block::heading(1, "Title <x>"),
            Block::Table(t),
            Block::Warning(Line::from("<b>")),
            Block::Paragraph(vec![Line::new().text("Unit: ").code("ns").text("."), Line::from("second line")]),
            Block::List(vec![Line::from("one"), Line::from("two <i>")]),
            Block::Group { name: "g\"x".into(), blocks: vec![Block::paragraph("in")] },
            Block::Compact(vec![Block::paragraph("lead"), Block::List(Vec::new())]),
            Block::Details { summary: Line::from("w (failed)"), text: "a <b>\n\u{1b}[2J".into() },
        ]);
        assert_eq!(
            html,
            "<h1>Title &lt;x&gt;</h1>\n\
             <table>\n<thead><tr><th>Row</th><th class=\"r\">Median</th></tr></thead>\n<tbody>\n\
             <tr><td>a|b</td><td class=\"r\">&lt;img src=x onerror=alert(1)&gt;</td></tr>\n\
             <tr><td><code>5</code></td><td class=\"r\">ns</td></tr>\n</tbody>\n</table>\n\
             <blockquote>warning: &lt;b&gt;</blockquote>\n\
             <p>Unit: <code>ns</code>.<br>\nsecond line</p>\n\
             <ul><li>one</li>\n<li>two &lt;i&gt;</li></ul>\n\
             <section class=\"group\" id=\"group-g&quot;x\">\n<p>in</p>\n</section>\n\
             <p>lead</p>\n\
             <details><summary>w (failed)</summary><pre>a &lt;b&gt;\n\u{FFFD}[2J</pre></details>\n"
        );
    }

    #[test]
    fn a_figure_is_its_svg_inline_with_its_caption() {
        let f = Figure {
            path: "plots/w<1>-median.svg".into(),
            caption: "w<1>: median".into(),
            svg: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg><text>x</text></svg>\n".into(),
        };
        assert_eq!(
            render(&[Block::Figures(vec![f])]),
            "<figure class=\"plot\" data-plot=\"w&lt;1&gt;-median.svg\" role=\"img\" aria-label=\"w&lt;1&gt;: median\">\n\
             <svg><text>x</text></svg>\n<figcaption>w&lt;1&gt;: median (<code>plots/w&lt;1&gt;-median.svg</code>, also as PNG)</figcaption>\n</figure>\n"
        );
    }
}
