//! The HTML renderer: the body of report.html. Every text node is
//! HTML-escaped ([`escape`]) exactly once, a code span is a `<code>`, a link
//! an `<a>` to a fragment of the page, a heading has its [`slug`] as its id
//! (numbered as GitHub numbers repeated ones), a table sits in a box that
//! scrolls on its own when it is wider than the page, the figures of a
//! workload form a row of their SVGs inline, each shown at the size it was
//! drawn (text XML-escaped by plotters), each with its caption linking its
//! files, a group is a `<section>` and a fold a `<details>`. A document
//! with a glossary (a level-2 heading [`GLOSSARY`], then a level-3 heading
//! per term and a paragraph of its meaning) gets each table column of a
//! term's name a tooltip (its meaning) and a link to it. Nothing else makes
//! a tag.

use std::collections::HashSet;

use super::{Block, Chart, Figure, Inline, Line, Table, one_line, plain, slug};
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
    body(blocks).html
}

/// The heading of a document's glossary: what its columns mean.
pub const GLOSSARY: &str = "What the columns mean";

/// Marks a column title in a table's header until the glossary is known:
/// control characters never reach the output otherwise ([`escape`]
/// replaces them).
const HELP_ATTR: char = '\u{1}';
const HELP_LINK: char = '\u{2}';

/// A rendered body and its outline.
pub struct Body {
    /// The HTML of the blocks.
    pub html: String,
    /// The sections a reader can jump to, in order: each level-2 heading
    /// and each group at the top level, as (text, id).
    pub outline: Vec<(String, String)>,
}

/// `blocks` as HTML with the outline of their top level.
pub fn body(blocks: &[Block]) -> Body {
    let mut r = Renderer::default();
    let html = r.blocks(blocks);
    let html = r.resolve_help(&html);
    Body { html, outline: r.outline }
}

/// The ids given so far (so that each is given once) and the outline.
#[derive(Default)]
struct Renderer {
    ids: HashSet<String>,
    outline: Vec<(String, String)>,
    depth: usize,
    /// Inside the glossary: the term whose meaning comes next.
    glossary: Option<Option<(String, String)>>,
    /// Each term of the glossary: its id and meaning.
    terms: std::collections::HashMap<String, (String, String)>,
}

impl Renderer {
    /// A new id for `slug`: the slug itself the first time, then `slug-1`,
    /// `slug-2`, ... (GitHub's rule); `None` for an empty slug.
    fn id(&mut self, slug: String) -> Option<String> {
        if slug.is_empty() {
            return None;
        }
        let (mut id, mut n) = (slug.clone(), 0);
        while self.ids.contains(&id) {
            n += 1;
            id = format!("{slug}-{n}");
        }
        self.ids.insert(id.clone());
        Some(id)
    }

    fn blocks(&mut self, blocks: &[Block]) -> String {
        blocks.iter().map(|b| self.block(b)).collect()
    }

    /// `html` with each column title marked in a table's header given its
    /// glossary term's tooltip and link, or nothing where it has no term.
    fn resolve_help(&self, html: &str) -> String {
        let mut out = String::with_capacity(html.len());
        let mut rest = html;
        while let Some(at) = rest.find([HELP_ATTR, HELP_LINK]) {
            out.push_str(&rest[..at]);
            let mark = rest[at..].chars().next().expect("a mark");
            let body = &rest[at + mark.len_utf8()..];
            let Some(end) = body.find(mark) else { break };
            let title = &body[..end];
            if let Some((id, meaning)) = self.terms.get(title) {
                out.push_str(&match mark {
                    HELP_ATTR => format!(" title=\"{}\"", escape(meaning)),
                    // A no-break space: the mark stays beside its title.
                    _ => format!("\u{a0}<a class=\"help\" href=\"#{}\" aria-label=\"what {} means\">?</a>", escape(id), escape(title)),
                });
            }
            rest = &body[end + mark.len_utf8()..];
        }
        out.push_str(rest);
        out
    }

    fn nested(&mut self, blocks: &[Block]) -> String {
        self.depth += 1;
        let html = self.blocks(blocks);
        self.depth -= 1;
        html
    }

    fn block(&mut self, b: &Block) -> String {
        match b {
            Block::Heading { level, text } => {
                let id = self.id(slug(&plain(text)));
                match level {
                    2 => self.glossary = (plain(text).trim() == GLOSSARY).then_some(None),
                    3 if self.glossary.is_some() => {
                        self.glossary = Some(id.clone().map(|id| (plain(text).trim().to_string(), id)));
                    }
                    _ => {}
                }
                if let (2, 0, Some(id)) = (level, self.depth, &id) {
                    self.outline.push((plain(text).trim().to_string(), id.clone()));
                }
                let id = id.map_or_else(String::new, |id| format!(" id=\"{}\"", escape(&id)));
                format!("<h{level}{id}>{}</h{level}>\n", line(text).trim())
            }
            Block::Group { name, blocks } => {
                let id = self.id(format!("group-{}", slug(name))).unwrap_or_default();
                if self.depth == 0 {
                    self.outline.push((name.clone(), id.clone()));
                }
                format!("<section class=\"group\" id=\"{}\">\n{}</section>\n", escape(&id), self.nested(blocks))
            }
            Block::Compact(blocks) => self.blocks(blocks),
            Block::Table(t) => table(t, true),
            Block::Paragraph(lines) if matches!(self.glossary, Some(Some(_))) => {
                if let Some(Some((term, id))) = self.glossary.replace(None) {
                    self.terms.insert(term, (id, lines.iter().map(plain).collect::<Vec<_>>().join(" ")));
                }
                block(b)
            }
            Block::Fold { summary, blocks } => {
                format!("<details class=\"fold\"><summary>{}</summary>\n{}</details>\n", line(summary), self.nested(blocks))
            }
            other => block(other),
        }
    }
}

/// A block that holds no heading.
fn block(b: &Block) -> String {
    match b {
        Block::Paragraph(lines) => format!("<p>{}</p>\n", lines.iter().map(line).collect::<Vec<_>>().join("<br>\n")),
        Block::List(items) if items.is_empty() => String::new(),
        Block::List(items) => {
            let items: Vec<String> = items.iter().map(|l| format!("<li>{}</li>", line(l))).collect();
            format!("<ul>{}</ul>\n", items.join("\n"))
        }
        Block::Warning(text) => format!("<blockquote>warning: {}</blockquote>\n", line(text)),
        Block::Table(t) => table(t, false),
        Block::Figures(figures) if figures.is_empty() => String::new(),
        Block::Figures(figures) => format!("<div class=\"plots\">\n{}</div>\n", figures.iter().map(figure).collect::<String>()),
        Block::Chart(c) => chart(c),
        Block::Details { summary, text } => {
            format!("<details><summary>{}</summary><pre>{}</pre></details>\n", line(summary), escape(text))
        }
        Block::Heading { .. } | Block::Group { .. } | Block::Compact(_) | Block::Fold { .. } => render(std::slice::from_ref(b)),
    }
}

fn inline(i: &Inline) -> String {
    match i {
        Inline::Text(s) => escape(&one_line(s)),
        Inline::Toned(tone, s) => format!("<span class=\"tone-{}\">{}</span>", tone.as_str(), escape(&one_line(s))),
        Inline::Code(c) => format!("<code>{}</code>", escape(&one_line(&c.text))),
        Inline::Link { text, href } if href.starts_with('#') => format!("<a href=\"{}\">{}</a>", escape(href), escape(&one_line(text))),
        Inline::Link { text, href } if super::is_run_file(href) => format!("<a href=\"{}\">{}</a>", escape(href), escape(&one_line(text))),
        Inline::Link { text, .. } => escape(&one_line(text)),
    }
}

/// A line's nodes as HTML.
pub fn line(l: &Line) -> String {
    l.0.iter().map(inline).collect()
}

/// A right-aligned cell of several nodes: each node kept on one line
/// (`class="nw"`), the blanks between them left free to break.
fn figures(l: &Line) -> String {
    let mut out = String::new();
    for i in &l.0 {
        let html = inline(i);
        let core = html.trim_matches(' ');
        if core.is_empty() {
            out.push(' ');
            continue;
        }
        let lead = if html.starts_with(' ') { " " } else { "" };
        let trail = if html.ends_with(' ') { " " } else { "" };
        out.push_str(&format!("{lead}<span class=\"nw\">{core}</span>{trail}"));
    }
    out.trim().to_string()
}

/// A table, its right-aligned columns marked `class="r"`; a cell's
/// leading and trailing blanks are dropped, as in a markdown table, and a
/// long one is shortened as in markdown. With `help`, each column title is
/// marked for [`Renderer::resolve_help`] (a tooltip and a link where the
/// glossary has the term).
fn table(t: &Table, help: bool) -> String {
    let class = |i: usize| if t.columns.get(i).is_some_and(|c| c.1 == Align::Right) { " class=\"r\"" } else { "" };
    let mut out = String::from("<div class=\"table\"><table>\n<thead><tr>");
    for (i, (title, _)) in t.columns.iter().enumerate() {
        let text = escape(&one_line(title)).trim().to_string();
        let term = one_line(title).trim().to_string();
        if help && !term.contains([HELP_ATTR, HELP_LINK]) {
            out.push_str(&format!("<th{}{HELP_ATTR}{term}{HELP_ATTR}>{text}{HELP_LINK}{term}{HELP_LINK}</th>", class(i)));
        } else {
            out.push_str(&format!("<th{}>{text}</th>", class(i)));
        }
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let c = c.shortened(MAX_CELL_CHARS);
            if !class(i).is_empty() && c.0.len() > 1 {
                // A figure and its note (`99.76 M ops/s [avx512f]`): each whole, the cell free to break between them.
                out.push_str(&format!("<td class=\"r w\">{}</td>", figures(&c)));
            } else {
                out.push_str(&format!("<td{}>{}</td>", class(i), line(&c).trim()));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

/// How wide (in the SVG's pixels) a plot may be and still take one cell of
/// the grid; a wider one (the samples of many rows) takes two.
const WIDE_PLOT: u32 = 1000;

/// The `width` the `<svg>` element of `svg` declares.
fn svg_width(svg: &str) -> Option<u32> {
    let tag = &svg[svg.find("<svg")?..];
    let tag = &tag[..tag.find('>')?];
    let at = tag.find(" width=\"")? + " width=\"".len();
    tag[at..].split('"').next()?.parse().ok()
}

/// A plot as a figure: its SVG inline, its files linked in the caption
/// (where its path is a file of the run directory, `document::is_run_file`).
fn figure(f: &Figure) -> String {
    let svg = f.svg.trim_start_matches(|c| c != '<').trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>").trim();
    let class = if svg_width(svg).is_some_and(|w| w > WIDE_PLOT) { "plot wide" } else { "plot" };
    let png = format!("{}.png", f.path.strip_suffix(".svg").unwrap_or(&f.path));
    let files = if super::is_run_file(&f.path) {
        format!("<a href=\"{p}\"><code>{p}</code></a>, also as <a href=\"{png}\">PNG</a>", p = escape(&f.path), png = escape(&png))
    } else {
        format!("<code>{}</code>, also as PNG", escape(&f.path))
    };
    format!(
        "<figure class=\"{class}\" data-plot=\"{file}\" role=\"img\" aria-label=\"{t}\">\n{svg}\n<figcaption>{t} ({files})</figcaption>\n</figure>\n",
        file = escape(f.file_name()),
        t = escape(&f.caption)
    )
}

/// A page's chart: its SVG inline at the size it was drawn (a box that
/// scrolls on its own should it be wider than the page), its caption
/// under it; or, without one, a line saying why.
fn chart(c: &Chart) -> String {
    match &c.svg {
        Ok(svg) => format!(
            "<figure class=\"chart\" style=\"margin:.8em 0;max-width:100%;overflow-x:auto\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            svg.trim(),
            escape(&c.caption)
        ),
        Err(why) => format!("<p class=\"chart-none\">{}: no chart, {}.</p>\n", escape(&c.caption), escape(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::document::{Align, Table, Tone};

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
    fn a_figure_with_its_note_keeps_each_whole_and_may_break_between_them() {
        let mut t = Table::new(&[("Row", Align::Left), ("Median", Align::Right)]);
        t.push_row(vec![Line::from("w.x"), Line::from("99.76 M ops/s").text(" ").toned(Tone::Dim, "[avx512f]")]);
        t.push_row(vec![Line::from("w.y"), Line::from("1.030x ").toned(Tone::Bad, "DIFFERENT (regressed)")]);
        t.push_row(vec![Line::from("w.z"), Line::from("5 ns")]);
        let html = render(&[Block::Table(t)]);
        assert!(
            html.contains(
                "<td class=\"r w\"><span class=\"nw\">99.76 M ops/s</span> <span class=\"nw\"><span class=\"tone-dim\">[avx512f]</span></span></td>"
            ),
            "{html}"
        );
        assert!(html.contains("<td class=\"r w\"><span class=\"nw\">1.030x</span> <span class=\"nw\"><span class=\"tone-bad\">"), "{html}");
        assert!(html.contains("<td class=\"r\">5 ns</td>"), "one figure alone stays in a cell that never breaks: {html}");
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
            "<h1 id=\"title-x\">Title &lt;x&gt;</h1>\n\
             <div class=\"table\"><table>\n<thead><tr><th>Row</th><th class=\"r\">Median</th></tr></thead>\n<tbody>\n\
             <tr><td>a|b</td><td class=\"r\">&lt;img src=x onerror=alert(1)&gt;</td></tr>\n\
             <tr><td><code>5</code></td><td class=\"r\">ns</td></tr>\n</tbody>\n</table></div>\n\
             <blockquote>warning: &lt;b&gt;</blockquote>\n\
             <p>Unit: <code>ns</code>.<br>\nsecond line</p>\n\
             <ul><li>one</li>\n<li>two &lt;i&gt;</li></ul>\n\
             <section class=\"group\" id=\"group-gx\">\n<p>in</p>\n</section>\n\
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
            render(&[Block::Figures(vec![f.clone()])]),
            "<div class=\"plots\">\n<figure class=\"plot\" data-plot=\"w&lt;1&gt;-median.svg\" role=\"img\" aria-label=\"w&lt;1&gt;: median\">\n\
             <svg><text>x</text></svg>\n<figcaption>w&lt;1&gt;: median (<code>plots/w&lt;1&gt;-median.svg</code>, also as PNG)</figcaption>\n</figure>\n</div>\n"
        );
        // A plot wider than a cell of the grid takes two.
        let wide = Figure { svg: "<svg width=\"1200\" height=\"480\"><text>x</text></svg>".into(), ..f };
        assert!(render(&[Block::Figures(vec![wide])]).contains("<figure class=\"plot wide\""));
        assert_eq!(render(&[Block::Figures(Vec::new())]), "");
    }

    #[test]
    fn a_link_is_an_anchor_to_a_fragment_with_its_text_and_href_escaped() {
        let l = Line::new().link("w\"<b>", "w\" onclick=\"x<");
        assert_eq!(line(&l), "<a href=\"#w&quot; onclick=&quot;x&lt;\">w&quot;&lt;b&gt;</a>");
        // Only a fragment makes a link: any other href leaves the text alone.
        let out = Line(vec![Inline::Link { text: "x<".into(), href: "javascript:alert(1)".into() }]);
        assert_eq!(line(&out), "x&lt;");
    }

    #[test]
    fn a_file_link_is_an_anchor_only_inside_the_run_directory() {
        let l = Line::new().file_link("flame <graph>", "profiles/000-x=1/flame.svg");
        assert_eq!(line(&l), "<a href=\"profiles/000-x=1/flame.svg\">flame &lt;graph&gt;</a>");
        for bad in ["../x.svg", "/etc/passwd", "javascript:alert(1)", "a\"b/c", ""] {
            assert_eq!(line(&Line::new().file_link("t", bad)), "t", "{bad}");
        }
    }

    #[test]
    fn headings_get_their_slug_as_id_once_and_the_top_level_an_outline() {
        let b = body(&[
            Block::heading(2, "Not ok"),
            Block::heading(2, Line::from("w.x ").code("<y>")),
            Block::Group { name: "cpu".into(), blocks: vec![Block::heading(2, "cpu"), Block::heading(3, "Not ok")] },
            Block::Fold { summary: Line::from("more <b>"), blocks: vec![Block::heading(2, "Not ok"), Block::heading(2, "")] },
        ]);
        assert_eq!(
            b.html,
            "<h2 id=\"not-ok\">Not ok</h2>\n<h2 id=\"wx-y\">w.x <code>&lt;y&gt;</code></h2>\n\
             <section class=\"group\" id=\"group-cpu\">\n<h2 id=\"cpu\">cpu</h2>\n<h3 id=\"not-ok-1\">Not ok</h3>\n</section>\n\
             <details class=\"fold\"><summary>more &lt;b&gt;</summary>\n<h2 id=\"not-ok-2\">Not ok</h2>\n<h2></h2>\n</details>\n"
        );
        let outline: Vec<(&str, &str)> = b.outline.iter().map(|(t, i)| (t.as_str(), i.as_str())).collect();
        assert_eq!(outline, [("Not ok", "not-ok"), ("w.x <y>", "wx-y"), ("cpu", "group-cpu")]);
    }
}
