//! report.html, and the page of any other document: one self-contained page (inline CSS,
//! inline SVG plots shown at the size they were drawn, one small inline
//! script that opens the folds for printing; no external file, font or
//! network, and nothing on the page for a test: a test measures the page
//! itself). The page's body is a bar of links to its sections,
//! then the report's document rendered by the HTML renderer
//! (`document::html`), each workload's plots drawn in a grid where the
//! document places its figures, followed by the last lines of the worker's
//! stderr of every row that is not ok. Every text that comes from the
//! records is HTML-escaped there; the SVG text is escaped by plotters.

use crate::evidence::{Row, StoredRun};
use crate::text::document::Document;
use crate::text::document::html::escape;

/// The page's style: a bar of links to the sections that stays at the top,
/// tables that fit the page (a table wider than the page scrolls in its own
/// box), plots side by side at the size they were drawn (so that their
/// text is as large as drawn; a plot wider than the window scrolls in its
/// own box), column titles with a link to their meaning, folds for the
/// records a reader opens when wanted, and a print
/// style (no bar, folds opened by the script, no plot or table row cut
/// across pages, each group on a new page).
const CSS: &str = "*{box-sizing:border-box}\
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1320px;padding:0 1em 1.5em;color:#222;line-height:1.35}\
nav{position:sticky;top:0;z-index:1;background:#fff;border-bottom:1px solid #ddd;padding:.35em 0;font-size:.9em;display:flex;flex-wrap:wrap;gap:.15em 1em}\
a{color:#1f4e9a}nav a{text-decoration:none}h1{font-size:1.6em;margin:.5em 0 .3em;overflow-wrap:anywhere}\
h2,h3,section{scroll-margin-top:2.6em}h2,h3{overflow-wrap:anywhere}\
div.table{max-width:100%;overflow-x:auto}table{border-collapse:collapse;margin:.6em 0;font-size:.88em}\
th,td{border:1px solid #ccc;padding:.15em .45em;vertical-align:top;overflow-wrap:break-word}\
th{background:#f0f0f0}td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}td.r{white-space:nowrap}td.r.w{white-space:normal}.nw{white-space:nowrap}\
details.fold{margin:.6em 0}details.fold>summary{cursor:pointer;color:#444}details.fold table{font-size:.8em}\
blockquote{border-left:4px solid #d62728;margin:.6em 0;padding:.2em .8em;background:#fff4f4}\
code,pre{font-family:monospace,monospace}code{background:#f4f4f4;padding:0 .2em;overflow-wrap:anywhere}\
div.plots{display:flex;flex-wrap:wrap;gap:.8em 1em;margin:.8em 0}\
figure.plot{margin:0;max-width:100%;overflow-x:auto}\
figure.plot svg{display:block;max-width:none;height:auto;border:1px solid #eee}\
figcaption{font-size:.8em;color:#555;overflow-wrap:anywhere;width:0;min-width:100%}\
a.help{text-decoration:none;font-weight:normal}pre{background:#f7f7f7;padding:.5em;overflow:auto;font-size:.85em}\
section.group{border-top:2px solid #ddd;margin-top:1.5em}\
.tone-good{color:#1a7f37}.tone-bad{color:#c62828;font-weight:600}.tone-warn{color:#9a6700}.tone-dim{color:#777}\
@media print{nav,a.help{display:none}body{max-width:none;padding:0}div.table{overflow:visible}\
figure.plot{break-inside:avoid}tr{break-inside:avoid}\
h2,h3{break-after:avoid}section.group{break-before:page}a{color:inherit;text-decoration:none}}";

/// The script: the folds open for printing, and close again after.
const SCRIPT: &str = "(function(){\
var shut=[];window.addEventListener('beforeprint',function(){shut=[].slice.call(document.querySelectorAll('details:not([open])'));\
shut.forEach(function(d){d.open=true;});});window.addEventListener('afterprint',function(){shut.forEach(function(d){d.open=false;});shut=[];});})();";

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
/// `compare`, `noise`, `check-claims` and `history` write with `--html`):
/// a bar of links to its sections (its level-2 headings and groups) when it
/// has two or more, then the document.
pub fn html(doc: &Document) -> String {
    let body = crate::text::document::html::body(&doc.blocks);
    let nav = if body.outline.len() < 2 {
        String::new()
    } else {
        let links: Vec<String> =
            body.outline.iter().map(|(text, id)| format!("<a href=\"#{}\">{}</a>", escape(id), escape(text))).collect();
        format!("<nav>{}</nav>\n", links.join(""))
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{nav}{}\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&doc.title),
        body.html
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
        let rows: Vec<Row> = [1, 2, 4]
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
        assert!(!page.contains("plot-check") && !page.contains("plots drawn"), "no test hook on the page");
        assert!(page.contains("<h2 id=\"w\">w</h2>") && page.contains("<h3 id=\"wx\">w.x</h3>"));
        assert!(!page.contains("Not ok"), "every row is ok: no Not ok heading");
        assert!(page.contains("Every row is ok; no trial was disturbed"), "the read-first block says so");
        for external in ["src=", "@import", "url("] {
            assert!(!page.contains(external), "no external resource ({external})");
        }
        // Every link is to a place on the page, and every place exists, or
        // to a plot's file in the run directory.
        for href in page.split("href=\"").skip(1).map(|h| &h[..h.find('"').unwrap()]) {
            if let Some(file) = href.strip_prefix("plots/") {
                assert!(crate::model::file_name::is_plain(file) && (file.ends_with(".svg") || file.ends_with(".png")), "{href}");
                continue;
            }
            let id = href.strip_prefix('#').unwrap_or_else(|| panic!("{href}: a link out of the page"));
            assert!(page.contains(&format!(" id=\"{id}\"")), "{href} leads nowhere");
        }
    }

    #[test]
    fn the_page_opens_with_the_answer_and_folds_the_records() {
        let mut rows: Vec<Row> = [1, 2]
            .into_iter()
            .map(|k| fake_row(k, CpuClass::Physical, &[100.0 / k as f64, 101.0 / k as f64], None, Status::Ok, Unit::Ns))
            .collect();
        rows.push(fake_row(4, CpuClass::Physical, &[30.0], None, Status::Failed, Unit::Ns));
        let page = render(&stored(rows));
        let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{page}"));
        // The bar of links first, then the title, the counts, the rows not
        // ok, the summary whose rows link to their workload, then the groups.
        assert!(
            at(
                "<nav><a href=\"#read-this-first\">Read this first</a><a href=\"#not-ok\">Not ok</a><a href=\"#summary\">Summary</a><a href=\"#group-w\">w</a>"
            ) < at("<h1")
        );
        assert!(at("<h1") < at("Rows: <span class=\"tone-good\">2 ok</span>"));
        assert!(
            at("Rows: ") < at("<details class=\"fold\"><summary>The run and the machine (&lt;script&gt;alert(1)&lt;/script&gt;)</summary>")
        );
        assert!(at("<summary>The run and the machine") < at("<td>System label</td>"), "the machine record is folded");
        assert!(at("<td>System label</td>") < at("<h2 id=\"read-this-first\">"));
        assert!(at("<h2 id=\"read-this-first\">") < at("1 row is not ok: <a href=\"#not-ok\">Not ok</a>"));
        assert!(at("1 row is not ok") < at("<h2 id=\"not-ok\">") && at("<h2 id=\"not-ok\">") < at("<h2 id=\"summary\">"));
        // Each column title has its meaning as a tooltip and a link to it.
        assert!(page.contains("<th class=\"r\" title=\"The smallest change compare"), "{page}");
        assert!(page.contains("Sees\u{a0}<a class=\"help\" href=\"#sees\""), "{page}");
        assert!(at("<h2 id=\"what-the-columns-mean\">") < at("<h3 id=\"sees\">Sees</h3>"));
        assert!(at("<h2 id=\"summary\">") < at("<td><a href=\"#wx\">w.x workers=1</a></td>"));
        assert!(at("<a href=\"#wx\">w.x workers=2</a>") < at("<section class=\"group\" id=\"group-w\">"));
        assert!(at("<section class=\"group\" id=\"group-w\">") < at("<h3 id=\"wx\">w.x</h3>"));
        assert!(at("<h3 id=\"wx\">") < at("<div class=\"plots\">"), "the plots in a grid");
        assert!(at("<summary>Trials, spread and sensitivity of each row</summary>") < at("<summary>Statistics of the samples</summary>"));
        assert!(at("<h2 id=\"run-totals\">") > at("<section class=\"group\""), "the rest of the footer after the groups");
        assert_eq!(page.matches("<h2 id=\"not-ok\">").count(), 1, "the rows not ok once");
        assert!(page.contains("@media print{nav"), "a print style");
        assert!(page.contains("'beforeprint'"), "the folds open to print");
    }

    #[test]
    fn skips_alone_get_no_not_ok_heading_and_the_caveats_come_first() {
        let mut rows: Vec<Row> = [1, 2]
            .into_iter()
            .map(|k| fake_row(k, CpuClass::Physical, &[100.0 / k as f64, 101.0 / k as f64], None, Status::Ok, Unit::Ns))
            .collect();
        rows[1].disagreement = Some("trials disagree: likely cause: their threads ran on different CPUs".into());
        let mut skipped = fake_row(4, CpuClass::Physical, &[30.0], None, Status::Skipped, Unit::Ns);
        skipped.reason = Some("no SMT siblings on this machine".into());
        rows.push(skipped);
        let page = render(&stored(rows));
        let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{page}"));
        assert!(!page.contains("id=\"not-ok\""), "a skip is not a failure: no Not ok heading");
        assert!(at("<h2 id=\"read-this-first\">") < at("1 row has <a href=\"#trials-disagree\">trials that disagree</a>"));
        assert!(at("1 row has <a href") < at("their threads ran on different CPUs"), "the row's cause, folded under its line");
        assert!(at("1 cell was skipped on this machine (not failures).") < at("no SMT siblings on this machine"));
        assert!(at("<h2 id=\"read-this-first\">") < at("<h2 id=\"skipped-on-this-machine\">"));
        // The skips, counted and named on top, listed under the summary: the summary stays on the first screen.
        assert!(at("<h2 id=\"summary\">") < at("<h2 id=\"skipped-on-this-machine\">"));
        assert!(at("<h2 id=\"skipped-on-this-machine\">") < at("<section class=\"group\""));
        assert!(at("<h2 id=\"summary\">") < at("<h3 id=\"trials-disagree\">Trials disagree</h3>"), "the meanings at the end");
        for href in page.split("href=\"#").skip(1).map(|h| &h[..h.find('"').unwrap()]) {
            assert!(page.contains(&format!(" id=\"{href}\"")), "#{href} leads nowhere");
        }
    }

    #[test]
    fn each_plot_is_drawn_under_its_own_workload_whatever_its_name() {
        // A workload id holding a backtick: its plots' files are named with
        // the id kept to file-name characters, and are figures all the same here.
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
        let (x, y) = (at("<h3 id=\"wx\">w.x</h3>"), at("<h3 id=\"wy\">w.`y`</h3>"));
        assert!(x < at("data-plot=\"w.x-median.svg\"") && at("data-plot=\"w.x-median.svg\"") < y, "w.x's plots before w.`y`'s section");
        assert!(
            y < at("data-plot=\"w._y_-median.svg\"")
                && at("data-plot=\"w._y_-median.svg\"") < at("<h3 id=\"run-to-run-variance\">Run-to-run variance</h3>")
        );
        assert_eq!(page.matches("<figure").count(), 4, "two worker counts: the median and samples plots");
        assert!(page.contains("<a href=\"#wy\">w.`y` workers=2</a>"), "the summary links each row to its workload");
        assert!(
            page.contains("<a href=\"plots/w._y_-median.svg\"><code>plots/w._y_-median.svg</code></a>, also as <a href=\"plots/w._y_-median.png\">PNG</a>"),
            "the caption links the files"
        );
    }
}
