//! report.html, and the page of any other document: one self-contained page (inline CSS,
//! inline SVG plots, one small inline script that counts the drawn plots; no
//! external file, font or network). The page's body is the report's
//! document rendered by the HTML renderer (`document::html`), each plot drawn
//! where the document places its figure, followed by the last lines of the
//! worker's stderr of every row that is not ok. Every text that comes from
//! the records is HTML-escaped there; the SVG text is escaped by plotters.

use crate::evidence::{Row, StoredRun};
use crate::text::document::Document;
use crate::text::document::html::escape;

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

/// The whole report.html of a stored run.
pub fn render(stored: &StoredRun) -> String {
    page(super::sections::document(stored), &stored.rows)
}

/// report.html of the report `doc` of `rows`: the document, then the worker
/// stderr of the rows that are not ok, folded.
pub fn page(mut doc: Document, rows: &[Row]) -> String {
    doc.blocks.extend(super::sections::worker_stderr(rows));
    html(&doc)
}

/// Any document as one self-contained page (what `run`, `report`,
/// `compare`, `noise`, `check-claims` and `history` write with `--html`).
pub fn html(doc: &Document) -> String {
    let figures = doc.figures();
    let body = crate::text::document::html::render(&doc.blocks);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}<p id=\"plot-check\" data-expected=\"{figures}\">{figures} plots.</p>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&doc.title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Row;
    use crate::model::{CpuClass, Status, Unit};
    use crate::report::tests::fake_row;

    const XSS: &str = "<script>alert(1)</script>";

    /// A stored run of `rows` on the `kvm-2c` fixture machine, its label a
    /// script tag.
    fn stored(rows: Vec<Row>) -> StoredRun {
        let mut s = crate::evidence::fake::run(Vec::new(), rows);
        s.run.label = XSS.into();
        s.run.envelope = crate::envelope::Envelope::collect(&crate::topology::fixture_root("kvm-2c"), vec!["proofbench".into()], 1);
        s
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
        assert!(page.contains("<h2>w</h2>") && page.contains("<h3>w.x</h3>") && page.contains("<h2>Not ok</h2>"));
        for external in ["src=", "href=", "@import", "url("] {
            assert!(!page.contains(external), "no external resource ({external})");
        }
    }

    #[test]
    fn each_plot_is_drawn_under_its_own_workload_whatever_its_name() {
        // A workload id holding a backtick: its plots' paths need a longer
        // code fence in report.md, and are figures all the same here.
        let rows: Vec<Row> = ["w.x", "w.`y`"]
            .into_iter()
            .flat_map(|w| {
                [1, 2].map(|k| {
                    let mut r = fake_row(k, CpuClass::Physical, &[100.0 / k as f64, 101.0 / k as f64], None, Status::Ok, Unit::Ns);
                    r.cell.workload = w.into();
                    r
                })
            })
            .collect();
        let page = render(&stored(rows));
        let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{page}"));
        let (x, y) = (at("<h3>w.x</h3>"), at("<h3>w.`y`</h3>"));
        assert!(x < at("data-plot=\"w.x-median.svg\"") && at("data-plot=\"w.x-median.svg\"") < y, "w.x's plots before w.`y`'s section");
        assert!(y < at("data-plot=\"w.`y`-median.svg\"") && at("data-plot=\"w.`y`-median.svg\"") < at("<h3>Run-to-run variance</h3>"));
        assert_eq!(page.matches("<figure").count(), 8);
        assert!(page.contains("data-expected=\"8\""));
        assert!(page.contains("<code>plots/w.`y`-median.svg</code>"), "the caption names the file");
    }
}
