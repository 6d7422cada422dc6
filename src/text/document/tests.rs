//! The document model: how a record's text splits into nodes, what the
//! builders make, and one document through every renderer.

use super::*;

fn text(s: &str) -> Inline {
    Inline::Text(s.into())
}

fn code(text: &str, written: &str) -> Inline {
    Inline::Code(Code { text: text.into(), written: Some(written.into()) })
}

#[test]
fn a_records_text_splits_into_text_and_code_spans_where_commonmark_sees_them() {
    assert_eq!(Line::new().marked("a loop of `iters` calls <b>").0, [text("a loop of "), code("iters", "`iters`"), text(" calls <b>")]);
    // A fence of two holds a backtick; one space is stripped from each padded end.
    assert_eq!(Line::new().marked("run `` echo `date` ``").0, [text("run "), code("echo `date`", "`` echo `date` ``")]);
    assert_eq!(Line::new().marked("``a``").0, [code("a", "``a``")]);
    assert_eq!(Line::new().marked("`  `").0, [code("  ", "`  `")]);
    assert_eq!(Line::new().marked("`a\nb`").0, [code("a b", "`a\nb`")]);
    // A lone run of backticks is text, and so is a span that holds a tag.
    assert_eq!(Line::new().marked("a`b").0, [text("a"), text("`"), text("b")]);
    assert_eq!(Line::new().marked("`<img src=x>` ok").0, [text("`<img src=x>`"), text(" ok")]);
    assert_eq!(Line::new().marked("`a <` b").0, [text("`a <`"), text(" b")], "a `<` at the end could open one");
    assert_eq!(Line::new().marked("`a < b`").0, [code("a < b", "`a < b`")]);
    // A run of two is not closed by a run of one.
    assert_eq!(Line::new().marked("``a`b").0, [text("``"), text("a"), text("`"), text("b")]);
    assert!(Line::new().marked("").0.is_empty());
}

#[test]
fn lines_tables_and_figures_are_built_as_said() {
    let l = Line::from("a").code("b").text(" [");
    assert_eq!(l.0, [text("a"), Inline::Code(Code { text: "b".into(), written: None }), text(" [")]);
    let mut t = Table::new(&[("Row", Align::Left), ("n", Align::Right)]);
    assert!(t.is_empty());
    t.push(vec!["x".into(), "1".into()]);
    t.push_row(vec![Line::new().marked("`y`"), Line::from("2")]);
    assert_eq!(t.rows.len(), 2);
    assert_eq!(t.rows[0][0], Line::from("x"));
    let f = Figure { path: "plots/w.x-median.svg".into(), caption: "w.x: median".into(), svg: "<svg/>".into() };
    assert_eq!(f.file_name(), "w.x-median.svg");
    let doc = Document {
        title: "t".into(),
        blocks: vec![
            Block::Figures(vec![f.clone()]),
            Block::Group { name: "g".into(), blocks: vec![Block::Compact(vec![Block::Figures(vec![f.clone(), f])])] },
        ],
    };
    assert_eq!(doc.figures(), 3);
}

/// A document holding hostile text in every kind of node.
fn hostile() -> Vec<Block> {
    const H: &str = "<img src=x onerror=alert(1)> a`b | c \u{1b}[31mred";
    let mut t = Table::new(&[("Row", Align::Left), ("Reason", Align::Left)]);
    t.push_row(vec![Line::from(H), Line::new().marked("no match for `` a|`b` `` and `<img>`: \u{1b}[2J")]);
    vec![
        Block::heading(2, H),
        Block::Warning(Line::new().marked(H)),
        Block::Paragraph(vec![Line::new().marked("# `x` <script>").text("."), Line::from(H)]),
        Block::List(vec![Line::from(H).text(" [").text(H).text("]")]),
        Block::Table(t),
        Block::Group { name: H.into(), blocks: vec![Block::paragraph(H)] },
        Block::Fold { summary: Line::from(H), blocks: vec![Block::paragraph(Line::new().link(H, &format!("{H}\" onmouseover=\"x")))] },
        Block::Details { summary: Line::from(H), text: format!("{H}\n```\n") },
    ]
}

#[test]
fn hostile_text_is_escaped_by_each_output_its_own_way() {
    let blocks = hostile();
    // Markdown: no tag, no ESC, no broken table, no block opened by a line.
    let md = markdown::render(&blocks);
    let (text, fenced) = md.split_once("\n````\n").expect("the details' text is fenced");
    for bad in ["<img", "<script", "\u{1b}"] {
        assert!(!text.contains(bad), "{bad} in markdown:\n{md}");
    }
    assert_eq!(fenced, "<img src=x onerror=alert(1)> a`b | c \u{FFFD}[31mred\n```\n````\n", "a code block shows its text as it is");
    assert!(md.contains("## &lt;img src=x onerror=alert(1)> a\\`b | c \u{FFFD}\\[31mred\n"), "{md}");
    assert!(md.contains("\n\\# `x` &lt;script>.\n"), "{md}");
    assert!(md.contains("| &lt;img src=x onerror=alert(1)> a\\`b \\| c \u{FFFD}\\[31mred | no match for `` a\\|`b` `` and \\`&lt;img>\\`: \u{FFFD}\\[2J |"), "{md}");
    // HTML: every text escaped once; the only tags are the renderer's.
    let html = html::render(&blocks);
    assert!(!html.contains("<img") && !html.contains("<script") && !html.contains('\u{1b}'), "{html}");
    assert!(!html.contains("&amp;lt;") && !html.contains("\\`"), "escaped once, with no markdown escape:\n{html}");
    assert!(
        html.contains("<h2 id=\"img-srcx-onerroralert1-ab--c-31mred\">&lt;img src=x onerror=alert(1)&gt; a`b | c \u{FFFD}[31mred</h2>"),
        "{html}"
    );
    assert!(html.contains("<td>no match for <code>a|`b`</code> and `&lt;img&gt;`: \u{FFFD}[2J</td>"), "{html}");
    assert!(html.contains("<p># <code>x</code> &lt;script&gt;.<br>\n"), "{html}");
    assert!(html.contains("<section class=\"group\" id=\"group-img-srcx-onerroralert1-ab--c-31mred\">"), "{html}");
    // A link's text and fragment are escaped like any text: no quote ends the attribute.
    assert!(
        html.contains(
            "<details class=\"fold\"><summary>&lt;img src=x onerror=alert(1)&gt; a`b | c \u{FFFD}[31mred</summary>\n<p><a href=\"#&lt;img src=x \
             onerror=alert(1)&gt; a`b | c \u{FFFD}[31mred&quot; onmouseover=&quot;x\">&lt;img src=x onerror=alert(1)&gt; a`b | c \u{FFFD}[31mred</a></p>\n</details>"
        ),
        "{html}"
    );
    assert!(
        md.contains("\n[&lt;img src=x onerror=alert(1)> a\\`b | c \u{FFFD}\\[31mred](#%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E%20a%60b%20%7C%20c%20%1B%5B31mred%22%20onmouseover%3D%22x)\n"),
        "a fold is its blocks in markdown, a link's destination percent-encoded:\n{md}"
    );
    let term = terminal::render(&blocks);
    assert!(term.contains("\n<img src=x onerror=alert(1)> a`b | c \u{FFFD}[31mred\n"), "the terminal shows a link's text, cleaned: {term}");
    // The terminal prints the markdown: it holds no control character but
    // the newline (and printing cleans whatever else would come).
    assert!(!md.chars().any(|c| c.is_control() && c != '\n'), "{md:?}");
}

#[test]
fn a_slug_is_githubs_anchor_of_a_heading() {
    assert_eq!(slug("cpu.primes"), "cpuprimes");
    assert_eq!(slug("Not ok"), "not-ok");
    assert_eq!(slug(" Run-to-run variance "), "run-to-run-variance");
    assert_eq!(slug("w.\"x\" <y>_Z"), "wx-y_z");
    assert_eq!(slug("Größe 2"), "größe-2");
    assert_eq!(slug("<>\"'&"), "");
    assert_eq!(plain(&Line::from("a ").code("`b`").link("c", "d")), "a `b`c");
}

#[test]
fn a_chart_is_drawn_inline_in_html_and_left_out_of_markdown_and_the_terminal() {
    let with = vec![
        Block::paragraph("before"),
        Block::Chart(Chart { caption: "ratios <all>".into(), svg: Ok("<svg width=\"720\"><text>x</text></svg>".into()) }),
        Block::Compact(vec![Block::Chart(Chart { caption: "none".into(), svg: Err("no row has an interval".into()) })]),
        Block::paragraph("after"),
    ];
    let without = vec![Block::paragraph("before"), Block::Compact(Vec::new()), Block::paragraph("after")];
    let page = html::render(&with);
    assert!(page.contains("<figure class=\"chart\"") && page.contains("<svg width=\"720\"><text>x</text></svg>"), "{page}");
    assert!(page.contains("<figcaption>ratios &lt;all&gt;</figcaption>"), "the caption is escaped: {page}");
    assert!(page.contains("<p class=\"chart-none\">none: no chart, no row has an interval.</p>"), "why there is none: {page}");
    assert_eq!(markdown::render(&with), markdown::render(&without), "no line, no blank line in markdown");
    assert_eq!(terminal::render(&with), terminal::render(&without), "nor on the terminal");
    assert!(!markdown::render(&with).contains("svg"));
}
