//! report.html: the report.md of a run as one self-contained page (inline CSS,
//! inline SVG plots, one small inline script that counts the drawn plots; no
//! external file, font or network). The tables are the markdown ones turned
//! into HTML tables, so both reports always say the same. Every text that
//! comes from the records is HTML-escaped here; the SVG text is escaped by
//! plotters.

use crate::evidence::StoredRun;
use crate::model::Status;

use super::plot::Plot;

/// The page's style: readable tables, plots scaled to the page width.
const CSS: &str = "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}\
th,td{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}\
th{background:#f0f0f0}td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}\
blockquote{border-left:4px solid #d62728;margin:.6em 0;padding:.2em .8em;background:#fff4f4}\
code{background:#f4f4f4;padding:0 .2em}figure.plot{margin:1em 0}figure.plot svg{max-width:100%;height:auto}\
figcaption{font-size:.85em;color:#555}pre{background:#f7f7f7;padding:.5em;overflow:auto;font-size:.85em}\
section.group{border-top:2px solid #ddd;margin-top:1.5em}";

/// The script: counts the figures whose SVG was drawn with a size and marks
/// the count on `#plot-check` (a headless browser test reads it back).
const SCRIPT: &str = "(function(){var f=document.querySelectorAll('figure.plot');var n=0;\
f.forEach(function(x){var s=x.querySelector('svg');if(s&&s.getBoundingClientRect().width>0&&s.querySelector('text'))n++;});\
var e=document.getElementById('plot-check');e.setAttribute('data-rendered',String(n));\
e.textContent=n+' of '+f.length+' plots drawn.';})();";

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

/// The whole report.html of a stored run.
pub fn render(stored: &StoredRun) -> String {
    let (run, rows) = (&stored.run, &stored.rows);
    let mut body = md_to_html(&super::header(run, rows), &mut |_| None);
    let mut figures = 0;
    for group in super::groups(run, rows) {
        let mut plots: Vec<Option<Plot>> = super::group_plots(rows, &group).into_iter().map(Some).collect();
        figures += plots.len();
        let mut md = super::group_section(rows, &group);
        md.push_str(&super::not_run_note(run, rows, &group));
        md.push_str(&super::counters_section(rows, &group));
        // Each plot goes where report.md names it ("Plots: `plots/x.svg`");
        // any other follows the group's tables.
        let mut place =
            |file: &str| plots.iter_mut().find(|p| p.as_ref().is_some_and(|p| p.file == file)).and_then(Option::take).map(|p| figure(&p));
        let mut html = md_to_html(&md, &mut place);
        for p in plots.into_iter().flatten() {
            html.push_str(&figure(&p));
        }
        body.push_str(&format!("<section class=\"group\" id=\"group-{}\">\n{html}</section>\n", escape(&group)));
    }
    body.push_str(&md_to_html(&super::footer(run, rows), &mut |_| None));
    let bad: Vec<_> = rows.iter().filter(|r| r.status != Status::Ok && !r.stderr_tail.trim().is_empty()).collect();
    if !bad.is_empty() {
        body.push_str("<h2>Worker stderr of the rows not ok</h2>\n");
        for r in bad {
            body.push_str(&format!(
                "<details><summary>{} ({}): last lines of {}</summary><pre>{}</pre></details>\n",
                escape(&r.cell.display_name()),
                escape(r.status.as_str()),
                escape(&r.log),
                escape(&r.stderr_tail)
            ));
        }
    }
    body.push_str(&format!("<p id=\"plot-check\" data-expected=\"{figures}\">{figures} plots.</p>\n"));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>proofbench run {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}<script>{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&run.id)
    )
}

/// A plot as a figure: its SVG inline, its file named in the caption.
fn figure(p: &Plot) -> String {
    let svg = p.svg.trim_start_matches(|c| c != '<').trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>").trim();
    format!(
        "<figure class=\"plot\" data-plot=\"{f}\" role=\"img\" aria-label=\"{t}\">\n{svg}\n<figcaption>{t} (<code>plots/{f}</code>, also as PNG)</figcaption>\n</figure>\n",
        f = escape(&p.file),
        t = escape(&p.title)
    )
}

/// Inline markdown of the report as HTML: `code spans` (CommonMark: a run
/// of backticks up to the next run of the same length), backslash escapes
/// and the entities `text::markdown` writes, each decoded once and the
/// result HTML-escaped; so `&lt;` in report.md shows as `<`, never as
/// `&lt;`, and never becomes a tag.
fn inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1).is_some_and(char::is_ascii_punctuation) => {
                out.push_str(&escape(&chars[i + 1].to_string()));
                i += 2;
            }
            '`' => {
                let run = chars[i..].iter().take_while(|&&c| c == '`').count();
                match closing_run(&chars, i + run, run) {
                    Some(end) => {
                        let content: String = chars[i + run..end].iter().collect();
                        // CommonMark strips one space from each end of a padded span.
                        let content = match content.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
                            Some(inner) if !content.trim().is_empty() => inner.to_string(),
                            _ => content,
                        };
                        out.push_str(&format!("<code>{}</code>", escape(&content)));
                        i = end + run;
                    }
                    None => {
                        out.push_str(&"`".repeat(run));
                        i += run;
                    }
                }
            }
            '&' => match entity(&chars[i..]) {
                Some((c, len)) => {
                    out.push_str(&escape(&c.to_string()));
                    i += len;
                }
                None => {
                    out.push_str("&amp;");
                    i += 1;
                }
            },
            c => {
                out.push_str(&escape(&c.to_string()));
                i += 1;
            }
        }
    }
    out
}

/// Where the first run of exactly `run` backticks at or after `from` starts.
fn closing_run(chars: &[char], from: usize, run: usize) -> Option<usize> {
    let mut k = from;
    while k < chars.len() {
        let n = chars[k..].iter().take_while(|&&c| c == '`').count();
        match n {
            0 => k += 1,
            n if n == run => return Some(k),
            n => k += n,
        }
    }
    None
}

/// The character of an entity at the start of `chars` (`&lt;`, `&#39;`,
/// `&#x1F;`...) and its length.
fn entity(chars: &[char]) -> Option<(char, usize)> {
    let end = chars.iter().take(12).position(|&c| c == ';')?;
    let name: String = chars[1..end].iter().collect();
    let c = match name.as_str() {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        "apos" => '\'',
        n => {
            let code = n
                .strip_prefix("#x")
                .or_else(|| n.strip_prefix("#X"))
                .map_or_else(|| n.strip_prefix('#').and_then(|d| d.parse::<u32>().ok()), |h| u32::from_str_radix(h, 16).ok())?;
            char::from_u32(code).filter(|&c| c != '\0')?
        }
    };
    Some((c, end + 1))
}

/// The cells of a markdown table line (`| a | b\|c |`), split as GFM
/// splits them: a backslash and the character after it are one (so `\\|`
/// is a backslash and a break), `\|` is a `|` inside the cell.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = match inner.strip_suffix('|') {
        Some(s) if !ends_escaped(s) => s,
        _ => inner,
    };
    let mut out = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        let cell = out.last_mut().expect("one cell");
        match c {
            '\\' => match chars.next() {
                Some('|') => cell.push('|'),
                Some(n) => {
                    cell.push('\\');
                    cell.push(n);
                }
                None => cell.push('\\'),
            },
            '|' => out.push(String::new()),
            c => cell.push(c),
        }
    }
    out.iter().map(|c| c.trim().to_string()).collect()
}

/// Whether `s` ends in a backslash that escapes what follows (an odd run).
fn ends_escaped(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// A markdown pipe table (header, separator, rows) as an HTML table.
fn table(lines: &[&str]) -> String {
    let right: Vec<bool> = lines.get(1).map(|l| cells(l).iter().map(|c| c.ends_with(':')).collect()).unwrap_or_default();
    let class = |i: usize| if right.get(i).copied().unwrap_or(false) { " class=\"r\"" } else { "" };
    let mut out = String::from("<table>\n<thead><tr>");
    for (i, h) in cells(lines[0]).iter().enumerate() {
        out.push_str(&format!("<th{}>{}</th>", class(i), inline(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for l in lines.iter().skip(2) {
        out.push_str("<tr>");
        for (i, c) in cells(l).iter().enumerate() {
            out.push_str(&format!("<td{}>{}</td>", class(i), inline(c)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// The markdown the report writes (headings, pipe tables, `>` notes, `-`
/// items, paragraphs with `code`) as HTML. A paragraph `Plots: ...` is
/// replaced by the figures `figure` gives for the files it names.
fn md_to_html(md: &str, figure: &mut dyn FnMut(&str) -> Option<String>) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = String::new();
    let mut para: Vec<&str> = Vec::new();
    let flush = |para: &mut Vec<&str>, out: &mut String, figure: &mut dyn FnMut(&str) -> Option<String>| {
        if para.is_empty() {
            return;
        }
        let text = para.join("\n");
        para.clear();
        if let Some(list) = text.strip_prefix("Plots: ") {
            let files: Vec<&str> = list.split('`').skip(1).step_by(2).filter_map(|f| f.strip_prefix("plots/")).collect();
            let figs: Vec<Option<String>> = files.iter().map(|f| figure(f)).collect();
            if !files.is_empty() && figs.iter().all(Option::is_some) {
                out.extend(figs.into_iter().flatten());
                return;
            }
        }
        let html: Vec<String> = text.lines().map(inline).collect();
        out.push_str(&format!("<p>{}</p>\n", html.join("<br>\n")));
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let level = line.chars().take_while(|c| *c == '#').count();
        if line.trim().is_empty() {
            flush(&mut para, &mut out, figure);
        } else if (1..=6).contains(&level) && line[level..].starts_with(' ') {
            flush(&mut para, &mut out, figure);
            out.push_str(&format!("<h{level}>{}</h{level}>\n", inline(line[level..].trim())));
        } else if line.starts_with('|') {
            flush(&mut para, &mut out, figure);
            let start = i;
            while i + 1 < lines.len() && lines[i + 1].starts_with('|') {
                i += 1;
            }
            out.push_str(&table(&lines[start..=i]));
        } else if let Some(q) = line.strip_prefix("> ") {
            flush(&mut para, &mut out, figure);
            out.push_str(&format!("<blockquote>{}</blockquote>\n", inline(q)));
        } else if let Some(item) = line.strip_prefix("- ") {
            flush(&mut para, &mut out, figure);
            out.push_str(&format!("<ul><li>{}</li></ul>\n", inline(item)));
        } else {
            para.push(line);
        }
        i += 1;
    }
    flush(&mut para, &mut out, figure);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{RUN_SCHEMA, Row, RunRecord};
    use crate::model::CpuClass;
    use crate::model::Unit;
    use crate::report::tests::fake_row;

    const XSS: &str = "<script>alert(1)</script>";

    /// A stored run of `rows`, its label a script tag.
    fn stored(rows: Vec<Row>) -> StoredRun {
        let options = serde_json::from_value(serde_json::json!({
            "selection": ["w"], "profile": "quick", "oversubscribe": false, "pin": [],
            "timeout_ms": 1000, "params": [], "include_selftest": false
        }))
        .unwrap();
        let run = RunRecord {
            schema: RUN_SCHEMA.into(),
            id: "run-1".into(),
            label: XSS.into(),
            commit: None,
            profile: crate::model::Profile::Quick,
            seed: 1,
            options,
            envelope: crate::envelope::Envelope::collect(&crate::topology::fixture_root("kvm-2c"), vec!["proofbench".into()], 1),
            plan: Vec::new(),
            started_utc: "2026-01-01T00:00:00Z".into(),
            finished_utc: None,
            wall_s: None,
            cpu: None,
            interrupted: false,
            complete: true,
            counts: None,
            not_run: Vec::new(),
            launcher: None,
            trials: None,
            rounds: Vec::new(),
            interference: None,
            kind: Default::default(),
            variants: Vec::new(),
        };
        StoredRun { dir: std::path::PathBuf::new(), run, rows, warnings: Vec::new() }
    }

    #[test]
    fn a_script_in_a_label_reason_or_stderr_is_text_never_a_tag() {
        let mut rows: Vec<Row> = [1, 2]
            .into_iter()
            .map(|k| {
                let mut r = fake_row(k, CpuClass::Physical, &[100.0 / k as f64, 101.0 / k as f64], None, Status::Ok, Unit::Ns);
                r.cell.label = XSS.into();
                r
            })
            .collect();
        let mut bad = fake_row(4, CpuClass::Physical, &[30.0], None, Status::Invalid, Unit::Ns);
        bad.reason = Some(format!("verifier said {XSS}"));
        bad.stderr_tail = "<img src=x onerror=alert(2)>".into();
        rows.push(bad);
        let page = render(&stored(rows));
        assert_eq!(page.matches("<script").count(), 1, "only the page's own script: {page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("&lt;img src=x onerror=alert(2)&gt;"), "stderr is shown escaped");
        assert!(page.contains("<td>verifier said &lt;script&gt;alert(1)&lt;/script&gt;</td>"), "the reason in the failure list");
        assert!(page.contains("<td>System label</td><td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"), "the header");
        assert!(page.contains("<td>invalid</td>"), "the failure list has the status");
    }

    #[test]
    fn the_page_is_self_contained_with_every_plot_inline() {
        let rows: Vec<Row> = [1, 2]
            .into_iter()
            .map(|k| fake_row(k, CpuClass::Physical, &[100.0 / k as f64, 101.0 / k as f64], None, Status::Ok, Unit::Ns))
            .collect();
        let page = render(&stored(rows));
        assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
        for f in ["w.x-speedup.svg", "w.x-efficiency.svg", "w.x-median.svg", "w.x-samples.svg"] {
            assert!(page.contains(&format!("<figure class=\"plot\" data-plot=\"{f}\"")), "{f} inline");
        }
        assert_eq!(page.matches("<figure").count(), 4);
        assert_eq!(page.matches("<svg").count(), 4);
        assert!(page.contains("data-expected=\"4\""));
        assert!(!page.contains("Plots: "), "the plots list became the figures");
        assert!(page.contains("<h2>w</h2>") && page.contains("<h3>w.x</h3>") && page.contains("<h2>Not ok</h2>"));
        for external in ["src=", "href=", "@import", "url("] {
            assert!(!page.contains(external), "no external resource ({external})");
        }
    }

    #[test]
    fn escape_leaves_no_tag_and_no_control_character() {
        assert_eq!(escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(escape("a&b \"c\" 'd'\u{1}"), "a&amp;b &quot;c&quot; &#39;d&#39;\u{FFFD}");
    }

    #[test]
    fn markdown_tables_headings_notes_and_code_become_html() {
        let md = "# Title <x>\n\n| Row | Median |\n| --- | -----: |\n| a\\|b | `5` ns |\n\n> warning: <b>\nUnit: `ns`.\nsecond line\n";
        let html = md_to_html(md, &mut |_| None);
        assert!(html.contains("<h1>Title &lt;x&gt;</h1>"), "{html}");
        assert!(html.contains("<th>Row</th><th class=\"r\">Median</th>"), "{html}");
        assert!(html.contains("<td>a|b</td><td class=\"r\"><code>5</code> ns</td>"), "{html}");
        assert!(html.contains("<blockquote>warning: &lt;b&gt;</blockquote>"), "{html}");
        assert!(html.contains("<p>Unit: <code>ns</code>.<br>\nsecond line</p>"), "{html}");
    }

    #[test]
    fn markdown_escapes_are_decoded_exactly_once() {
        use crate::text::markdown;
        let label = "<img src=x onerror=alert(1)> & &lt; a\\|b `c` [d]";
        let md =
            format!("{}\n\n| Field | Value |\n| --- | --- |\n| l | {} |\n", markdown::text(label), markdown::cell(&markdown::text(label)));
        let html = md_to_html(&md, &mut |_| None);
        let shown = "&lt;img src=x onerror=alert(1)&gt; &amp; &amp;lt; a\\|b `c` [d]";
        assert!(html.contains(&format!("<p>{shown}</p>")), "{html}");
        assert!(html.contains(&format!("<td>l</td><td>{shown}</td>")), "one cell, the text as given: {html}");
        // Code spans of any fence; a lone backtick is text.
        let html = md_to_html(&format!("run {} or {}, a ` b", markdown::code("echo `date` <x>"), markdown::code("a|b")), &mut |_| None);
        assert!(html.contains("run <code>echo `date` &lt;x&gt;</code> or <code>a|b</code>, a ` b"), "{html}");
        // Ordinary text is written as it is and shown as it is.
        let plain = "C:\\dir, n <= 5 & x > 1";
        assert_eq!(markdown::text(plain), plain);
        assert!(md_to_html(plain, &mut |_| None).contains("<p>C:\\dir, n &lt;= 5 &amp; x &gt; 1</p>"));
        // Entities the markdown did not write stay text.
        assert!(md_to_html("&nbsp; &#60; &#x3c;", &mut |_| None).contains("&amp;nbsp; &lt; &lt;"));
    }

    #[test]
    fn a_plots_paragraph_becomes_its_figures() {
        let md = "Plots: `plots/a.svg`, `plots/b.svg`.\n";
        let html = md_to_html(md, &mut |f| Some(format!("<figure>{f}</figure>")));
        assert_eq!(html, "<figure>a.svg</figure><figure>b.svg</figure>");
        let kept = md_to_html(md, &mut |_| None);
        assert!(kept.starts_with("<p>Plots: "), "{kept}");
    }
}
