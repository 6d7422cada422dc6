//! report.html and the PNG plots: written by `run` and by `report --html`,
//! and opened in headless Chromium at window widths 800 and 1400
//! ([`check_page_in_chromium`], for any page proofbench writes), which
//! measures every rendered text's size (SVG text at the size the SVG is
//! shown), overlapping text boxes and horizontal overflow: skipped, with
//! the reason printed, where no Chromium is installed, and failed there
//! under `CI=true` (CI installs it).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{FAST, SMALL_PRIMES, Sandbox, bin, text};

/// The window the pages' first screen is checked in (the widest of [`WINDOWS`]).
pub const WINDOW: (u32, u32) = (1400, 900);

/// The windows every page is measured in: a narrow laptop's and a desktop's.
pub const WINDOWS: [(u32, u32); 2] = [(800, 900), WINDOW];

/// The smallest text a page may show, in CSS pixels at 100% zoom.
pub const MIN_TEXT_PX: f64 = 11.0;

/// A system label that would start a script if any text went unescaped
/// (labels may not hold '/', so the tag stays open).
const XSS: &str = "<script>alert(1)";

/// `c` run by a shell under umask 022.
fn under_umask_022(c: &Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg("umask 022 && exec \"$0\" \"$@\"").arg(c.get_program()).args(c.get_args());
    if let Some(d) = c.get_current_dir() {
        sh.current_dir(d);
    }
    sh
}

/// A file's permission bits.
fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A run of `cpu.primes` at 1 and 2 workers (median and samples plots: two
/// worker counts draw no speedup plot), labelled with a script tag, under
/// umask 022.
fn small_run() -> Sandbox {
    let sb = Sandbox::new();
    let out = under_umask_022(&sb.command(&[&["cpu.primes", "--workers", "1,2", "--label", XSS, "--quiet"], FAST, SMALL_PRIMES].concat()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sb
}

/// The SVG plot files of a run directory, sorted.
fn svg_plots(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    v.sort();
    v
}

#[test]
fn run_writes_report_html_and_a_png_beside_every_svg_plot() {
    let sb = small_run();
    let dir = sb.run_dir();
    let svgs = svg_plots(&dir);
    assert_eq!(svgs, ["cpu.primes-median.svg", "cpu.primes-samples.svg"]);
    assert_eq!(mode(&dir.join("report.html")), 0o644, "report.html under umask 022");
    for svg in &svgs {
        let png = std::fs::read(dir.join("plots").join(svg.replace(".svg", ".png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{svg}: a PNG copy");
    }
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for svg in &svgs {
        assert!(page.contains(&format!("data-plot=\"{svg}\"")), "{svg} inline in report.html");
    }
    assert_eq!(page.matches("<script").count(), 1, "the label is text, not a tag");
    assert!(page.contains("&lt;script&gt;alert(1)"));

    // `report --html -` prints the same page the run wrote; `--html` writes it
    // to DIR/report.html, `--html FILE` to FILE.
    let printed = Command::new(bin()).args(["report"]).arg(&dir).args(["--html", "-"]).output().unwrap();
    assert_eq!(printed.status.code(), Some(0), "{}", text(&printed.stderr));
    assert_eq!(text(&printed.stdout), page);
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let wrote = Command::new(bin()).arg("report").arg(&dir).arg("--html").output().unwrap();
    assert_eq!(wrote.status.code(), Some(0), "{}", text(&wrote.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("report.html")).unwrap(), page);
    let file = sb.tmp.path().join("elsewhere.html");
    let mut report = Command::new(bin());
    report.arg("report").arg(&dir).arg("--html").arg(&file);
    let wrote = under_umask_022(&report).output().unwrap();
    assert_eq!(wrote.status.code(), Some(0), "{}", text(&wrote.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), page);
    assert_eq!(mode(&file), 0o644, "report --html FILE under umask 022");
    // Into a directory that does not exist: a usage error naming the flag.
    let bad = Command::new(bin()).arg("report").arg(&dir).arg("--html").arg(sb.tmp.path().join("no/such/x.html")).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).starts_with("proofbench: error: --html "), "{}", text(&bad.stderr));
    // --html with another output is refused.
    let both = Command::new(bin()).arg("report").arg(&dir).args(["--html", "-", "--counters"]).output().unwrap();
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));
}

/// The Chromium binary, if one is installed (`PROOFBENCH_CHROMIUM` first).
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROOFBENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// Whether the tests run in CI (`CI=true`, as CI services set it), where a
/// missing Chromium fails a test instead of skipping it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Chromium, or `None` after saying why the test is skipped; under
/// `CI=true` a missing Chromium fails the test.
pub fn chromium_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(!in_ci(), "no chromium on PATH under CI=true: install the Debian package `chromium` (.ci/run does)");
        eprintln!("skipped: no chromium on PATH (install the Debian package `chromium`; .ci/run does)");
    }
    found
}

/// Runs headless Chromium on `page` in a window of `window`, with `args`,
/// to its end; returns its stdout and its log (stderr), where console
/// messages appear.
fn chromium_run(browser: &Path, page: &Path, profile: &Path, window: (u32, u32), args: &[&str]) -> (String, String) {
    let url = format!("file://{}", page.display());
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--window-size={},{}", window.0, window.1))
        .args(["--virtual-time-budget=3000"])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish rendering {url} within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (reader.join().unwrap(), err_reader.join().unwrap())
}

/// Opens `page` in headless Chromium at [`WINDOW`]; returns the DOM after
/// its scripts ran and the browser's log.
pub fn dump_dom(browser: &Path, page: &Path, profile: &Path) -> (String, String) {
    chromium_run(browser, page, profile, WINDOW, &["--dump-dom"])
}

/// The console messages in Chromium's log (the report logs nothing, so any
/// message is an error), and uncaught exceptions.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
}

/// The script the check adds to a copy of the page (the page itself has no
/// hook): once the page has loaded, it measures the page as shown and
/// writes the result as JSON into `<pre id="pb-measure">`. Measured: the
/// figures and those whose SVG was laid out with a size and text, the
/// images and those loaded, the page's scroll width with its folds closed
/// and open, where the summary table starts; then, folds open, every text
/// shown: its size on screen (an SVG text's font size times the scale the
/// SVG is shown at), and the boxes of any two texts that overlap (each box
/// clipped to the box that scrolls it, shrunk by a pixel a side so that
/// texts that touch do not count).
const MEASURE: &str = r#"<script id="pb-measure-script">window.addEventListener('load',function(){
var r={},root=document.documentElement;r.window=[window.innerWidth,window.innerHeight];
var f=document.querySelectorAll('figure');r.plots=0;r.plots_drawn=0;
f.forEach(function(x){var s=x.querySelector('svg');if(!s)return;r.plots++;if(s.getBoundingClientRect().width>0&&s.querySelector('text'))r.plots_drawn++;});
var im=[].slice.call(document.images);r.images=im.length;r.images_loaded=im.filter(function(i){return i.complete&&i.naturalWidth>0;}).length;
r.scroll_width=root.scrollWidth;
var top=-1,h=document.getElementById('summary'),t=h;while(t&&!(t.querySelector&&t.querySelector('table')))t=t.nextElementSibling;
if(h&&t)top=Math.round(t.querySelector('table').getBoundingClientRect().top+window.scrollY);r.summary_top=top;
[].slice.call(document.querySelectorAll('details:not([open])')).forEach(function(d){d.open=true;});
r.scroll_width_open=root.scrollWidth;
var clips=new Map();function clip(el){if(clips.has(el))return clips.get(el);var c=null,p=el.parentElement;
while(p&&p!==document.body){var o=getComputedStyle(p).overflowX;if(o==='auto'||o==='scroll'||o==='hidden'){c=p.getBoundingClientRect();break;}p=p.parentElement;}
clips.set(el,c);return c;}
var small=[],boxes=[],n=0,seen=new Set(),w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT),node;
while((node=w.nextNode())){var s=node.nodeValue.trim();if(!s)continue;var el=node.parentElement;
if(!el||el.closest('script,style,title,noscript,#pb-measure'))continue;var cs=getComputedStyle(el);
if(cs.visibility==='hidden'||cs.display==='none')continue;var svg=el.closest('svg'),rects;
if(svg){var te=el.closest('text');if(!te||seen.has(te))continue;seen.add(te);el=te;cs=getComputedStyle(te);rects=[te.getBoundingClientRect()];}
else{var rg=document.createRange();rg.selectNodeContents(node);rects=[].slice.call(rg.getClientRects());}
rects=rects.filter(function(b){return b.width>0&&b.height>0;});if(!rects.length)continue;n++;
var size=parseFloat(cs.fontSize);if(svg){var m=el.getScreenCTM();if(m)size*=Math.sqrt(m.a*m.a+m.b*m.b);}
var label=(svg?el.textContent:s).trim().slice(0,50);
if(size<MIN_PX-0.01)small.push(label+' ('+size.toFixed(1)+' px)');
var c=clip(el);rects.forEach(function(b){var l=b.left,tp=b.top,rt=b.right,bt=b.bottom;
if(c){l=Math.max(l,c.left);tp=Math.max(tp,c.top);rt=Math.min(rt,c.right);bt=Math.min(bt,c.bottom);}
if(rt-l>2&&bt-tp>2)boxes.push({l:l+1,t:tp+1,r:rt-1,b:bt-1,s:label});});}
r.texts=n;r.small_text=small.slice(0,40);boxes.sort(function(a,b){return a.t-b.t;});var over=[];
for(var i=0;i<boxes.length&&over.length<40;i++){var a=boxes[i];for(var j=i+1;j<boxes.length&&boxes[j].t<a.b;j++){var b=boxes[j];
if(b.l<a.r&&a.l<b.r&&b.t<a.b&&a.t<b.b&&(a.s!==b.s||Math.abs(a.l-b.l)>1)){over.push(a.s+' / '+b.s);if(over.length>=40)break;}}}
r.overlaps=over;var p=document.createElement('pre');p.id='pb-measure';p.textContent=JSON.stringify(r);document.body.appendChild(p);});</script>"#;

/// What a page showed in headless Chromium in one window.
#[derive(Debug)]
pub struct Measure {
    /// The window's inner size (its height less the browser's own bars).
    pub window: (u32, u32),
    /// The page's scroll width with its folds closed, and with them all open.
    pub scroll_width: u32,
    pub scroll_width_open: u32,
    /// How many texts were shown, those under [`MIN_TEXT_PX`] (each with
    /// its size), and the pairs of texts whose boxes overlap.
    pub texts: usize,
    pub small_text: Vec<String>,
    pub overlaps: Vec<String>,
}

/// What a page showed in headless Chromium in each of [`WINDOWS`]: what
/// the check measured once it had loaded, the console errors, and its
/// first screen at [`WINDOW`].
#[derive(Debug)]
pub struct PageCheck {
    /// The DOM at [`WINDOW`] after the page's scripts ran (without the
    /// check's own script and result).
    pub dom: String,
    /// Console messages and uncaught exceptions.
    pub console_errors: Vec<String>,
    /// Figures with an SVG on the page, and those whose SVG was drawn with a size and text.
    pub plots: usize,
    pub plots_drawn: usize,
    /// `<img>` elements, and those loaded (`complete && naturalWidth > 0`).
    pub images: usize,
    pub images_loaded: usize,
    /// At [`WINDOW`]: the page's scroll width with its folds closed, and
    /// the window's inner size ([`Measure`] has them per window).
    pub scroll_width: u32,
    pub window: (u32, u32),
    /// How far from the top the summary table starts at [`WINDOW`] (`None`:
    /// the page has no `#summary` heading followed by a table).
    pub summary_top: Option<u32>,
    /// What each window of [`WINDOWS`] showed.
    pub windows: Vec<Measure>,
    /// The first screen's size in pixels, and how many distinct colours a
    /// sample of its pixels has, and the share of them that are not white.
    pub screenshot: (u32, u32),
    pub screenshot_colours: usize,
    pub screenshot_inked: f64,
}

impl PageCheck {
    /// Every check a page must pass: no console error, every plot drawn,
    /// every image loaded; in each window of [`WINDOWS`], no text under
    /// [`MIN_TEXT_PX`], no two texts overlapping, and no horizontal
    /// overflow (folds closed or open); the summary table (where there is
    /// one) on the first screen, and a first screen of the window's size
    /// that is not blank.
    pub fn assert_sound(&self) {
        assert!(self.console_errors.is_empty(), "console errors: {:?}", self.console_errors);
        assert_eq!(self.plots_drawn, self.plots, "every plot drawn");
        assert_eq!(self.images_loaded, self.images, "every image loaded");
        for m in &self.windows {
            assert!(m.texts > 0, "no text measured at {:?}: did the check run?", m.window);
            assert!(m.small_text.is_empty(), "text under {MIN_TEXT_PX} px at {:?}: {:?}", m.window, m.small_text);
            assert!(m.overlaps.is_empty(), "overlapping text at {:?}: {:?}", m.window, m.overlaps);
            assert!(m.scroll_width <= m.window.0, "the page overflows to the right: {} px in a {:?} window", m.scroll_width, m.window);
            assert!(
                m.scroll_width_open <= m.window.0,
                "with its folds open, the page overflows to the right: {} px in a {:?} window",
                m.scroll_width_open,
                m.window
            );
        }
        // The window's inner height is the window's less the browser's own bars (757 of 900 px).
        assert!(self.window.0 == WINDOW.0 && self.window.1 <= WINDOW.1, "the window's inner size: {:?}", self.window);
        if let Some(top) = self.summary_top {
            assert!(top < self.window.1, "the summary table starts at {top} px, below the first screen");
        }
        assert_eq!(self.screenshot, WINDOW, "the screenshot has the window's size");
        assert!(self.screenshot_colours >= 8 && self.screenshot_inked > 0.01, "the first screen is not blank: {self:?}");
    }
}

/// The size of a PNG, the distinct colours of a sample of its pixels, and
/// the share of the sample that is not white.
fn png_summary(file: &Path) -> ((u32, u32), usize, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(file).expect("a screenshot")));
    let mut reader = decoder.read_info().expect("the screenshot is a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a frame size")];
    let info = reader.next_frame(&mut buf).expect("the screenshot decodes");
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "an 8-bit screenshot");
    let channels = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    let (mut sampled, mut inked) = (0usize, 0usize);
    for y in (0..info.height as usize).step_by(3) {
        let row = &buf[y * info.line_size..(y + 1) * info.line_size];
        for px in row.chunks_exact(channels).step_by(3) {
            let rgb = [px[0], px.get(1).copied().unwrap_or(px[0]), px.get(2).copied().unwrap_or(px[0])];
            colours.insert(rgb);
            sampled += 1;
            inked += usize::from(rgb != [255, 255, 255]);
        }
    }
    ((info.width, info.height), colours.len(), inked as f64 / sampled.max(1) as f64)
}

/// The JSON the check's script wrote into `dom`, and `dom` without the
/// check's script and result.
fn measured(dom: &str) -> (serde_json::Value, String) {
    let start = dom.find("<pre id=\"pb-measure\">").expect("the check's result: its script did not run?");
    let body = &dom[start + "<pre id=\"pb-measure\">".len()..];
    let end = body.find("</pre>").expect("the result's end");
    let json = body[..end].replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\u{a0}").replace("&amp;", "&");
    let value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("the check's result is not JSON ({e}): {json}"));
    let mut page = format!("{}{}", &dom[..start], &body[end + "</pre>".len()..]);
    if let Some(s) = page.find("<script id=\"pb-measure-script\">") {
        let e = page[s..].find("</script>").map_or(page.len(), |e| s + e + "</script>".len());
        page.replace_range(s..e, "");
    }
    (value, page)
}

/// Opens `page` (any page proofbench writes) in headless Chromium in each
/// window of [`WINDOWS`], a copy of it beside it (so that its relative
/// links resolve) with the check's script added ([`MEASURE`]), and takes a
/// screenshot of its first screen at [`WINDOW`]. `None` (the reason
/// printed) where no Chromium is installed, outside CI. Call
/// [`PageCheck::assert_sound`] on the result.
pub fn check_page_in_chromium(page: &Path) -> Option<PageCheck> {
    let browser = chromium_or_skip()?;
    let scratch = tempfile::tempdir().unwrap();
    let profile = scratch.path().join("chromium-profile");
    let html = std::fs::read_to_string(page).expect("the page");
    let script = MEASURE.replace("MIN_PX", &MIN_TEXT_PX.to_string());
    let with_check = match html.rfind("</body>") {
        Some(at) => format!("{}{script}{}", &html[..at], &html[at..]),
        None => format!("{html}{script}"),
    };
    let name = page.file_name().expect("a page file").to_string_lossy();
    let copy = page.with_file_name(format!(".{name}.measured.html"));
    std::fs::write(&copy, with_check).unwrap();
    let mut logs = Vec::new();
    let mut windows = Vec::new();
    let mut wide: Option<(serde_json::Value, String)> = None;
    for window in WINDOWS {
        let (dom, log) = chromium_run(&browser, &copy, &profile, window, &["--dump-dom"]);
        logs.push(log);
        let (m, dom) = measured(&dom);
        let num = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("no number {k} in {m}")) as u32;
        let strings =
            |k: &str| -> Vec<String> { m[k].as_array().expect(k).iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect() };
        windows.push(Measure {
            window: (m["window"][0].as_u64().unwrap() as u32, m["window"][1].as_u64().unwrap() as u32),
            scroll_width: num("scroll_width"),
            scroll_width_open: num("scroll_width_open"),
            texts: num("texts") as usize,
            small_text: strings("small_text"),
            overlaps: strings("overlaps"),
        });
        if window == WINDOW {
            wide = Some((m, dom));
        }
    }
    let _ = std::fs::remove_file(&copy);
    let shot = scratch.path().join("screen.png");
    let (_, shot_log) = chromium_run(&browser, page, &profile, WINDOW, &[&format!("--screenshot={}", shot.display())]);
    logs.push(shot_log);
    let (m, dom) = wide.expect("the widest window is measured");
    let num = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("no number {k} in {m}")) as u32;
    let last = windows.last().expect("a window");
    let (screenshot, screenshot_colours, screenshot_inked) = png_summary(&shot);
    Some(PageCheck {
        console_errors: logs.iter().flat_map(|l| console_errors(l)).map(String::from).collect(),
        plots: num("plots") as usize,
        plots_drawn: num("plots_drawn") as usize,
        images: num("images") as usize,
        images_loaded: num("images_loaded") as usize,
        scroll_width: last.scroll_width,
        window: last.window,
        summary_top: m["summary_top"].as_i64().and_then(|t| u32::try_from(t).ok()),
        screenshot,
        screenshot_colours,
        screenshot_inked,
        windows,
        dom,
    })
}

/// The pages `PROOFBENCH_PAGES` names (separated by `:`), checked as the
/// tests check the pages of their small runs: what `scripts/pages.sh` runs
/// on the pages of real runs. Each page's figures per window are printed;
/// every page that fails is named before the test fails.
#[test]
#[ignore = "checks the pages PROOFBENCH_PAGES names (scripts/pages.sh runs it)"]
fn the_pages_proofbench_pages_names_pass_the_chromium_checks() {
    let pages = std::env::var("PROOFBENCH_PAGES").expect("PROOFBENCH_PAGES: the pages to check, separated by ':'");
    let mut failed = Vec::new();
    for page in pages.split(':').filter(|p| !p.is_empty()) {
        let check = check_page_in_chromium(Path::new(page)).expect("Chromium runs");
        for m in &check.windows {
            println!(
                "{page}: window {}x{}: {} texts, {} under {MIN_TEXT_PX} px, {} overlapping, {} px wide ({} with folds open); {} of {} plots drawn",
                m.window.0,
                m.window.1,
                m.texts,
                m.small_text.len(),
                m.overlaps.len(),
                m.scroll_width,
                m.scroll_width_open,
                check.plots_drawn,
                check.plots
            );
        }
        if let Err(e) = std::panic::catch_unwind(|| check.assert_sound()) {
            let why = e.downcast_ref::<String>().cloned().unwrap_or_default();
            println!("{page}: FAILED: {why}");
            failed.push(page.to_string());
        }
    }
    assert!(failed.is_empty(), "pages that failed: {failed:?}");
}

#[test]
fn report_html_opens_in_headless_chromium_with_every_plot_drawn_and_no_console_error() {
    let Some(browser) = chromium_or_skip() else { return };
    let sb = Sandbox::new();
    let profile = sb.tmp.path().join("chromium-profile");

    // The detection can fail: a page with a deliberate error is caught.
    let broken = sb.tmp.path().join("broken.html");
    std::fs::write(&broken, "<!DOCTYPE html><html><body><p>x</p><script>notDefinedAnywhere();</script></body></html>").unwrap();
    let (_, log) = dump_dom(&browser, &broken, &profile);
    let errors = console_errors(&log);
    assert!(errors.iter().any(|l| l.contains("notDefinedAnywhere")), "a deliberate error is detected; log:\n{log}");

    // So can the page checks: a page wider than the window, with a broken
    // image and a figure whose SVG has no size, fails them.
    let wide = sb.tmp.path().join("wide.html");
    std::fs::write(
        &wide,
        "<!DOCTYPE html><html><body><figure><svg width=\"0\" height=\"0\"></svg></figure><div style=\"width:3000px\">wide</div>\
         <img src=\"nowhere.png\"></body></html>",
    )
    .unwrap();
    let bad = check_page_in_chromium(&wide).expect("chromium is there");
    assert!(bad.scroll_width > WINDOW.0 && bad.images_loaded == 0 && bad.plots == 1 && bad.plots_drawn == 0, "{bad:?}");
    assert!(std::panic::catch_unwind(|| bad.assert_sound()).is_err(), "the checks fail on a broken page");
    assert!(!wide.with_file_name(".wide.html.measured.html").exists(), "the check's copy is removed");
    // A page with 8 px text (in HTML and in an SVG drawn 720 px wide shown
    // 420 px wide), and one whose labels overlap, fail them too.
    let small = sb.tmp.path().join("small.html");
    std::fs::write(
        &small,
        "<!DOCTYPE html><html><body><p style=\"font-size:8px\">tiny text</p><p>readable</p>\
         <svg width=\"420\" height=\"257\" viewBox=\"0 0 720 440\"><text x=\"10\" y=\"40\" font-size=\"12\">shrunk tick</text></svg></body></html>",
    )
    .unwrap();
    let bad = check_page_in_chromium(&small).expect("chromium is there");
    for m in &bad.windows {
        assert!(m.small_text.iter().any(|t| t.starts_with("tiny text (8.0 px)")), "{m:?}");
        assert!(m.small_text.iter().any(|t| t.starts_with("shrunk tick (7.")), "12 px drawn at 420/720: {m:?}");
        assert!(!m.small_text.iter().any(|t| t.starts_with("readable")), "{m:?}");
    }
    assert!(std::panic::catch_unwind(|| bad.assert_sound()).is_err(), "small text fails the checks");
    let overlap = sb.tmp.path().join("overlap.html");
    std::fs::write(
        &overlap,
        "<!DOCTYPE html><html><body><p>fine</p><svg width=\"400\" height=\"100\"><text x=\"10\" y=\"50\" font-size=\"14\">per-item global-queue 1</text>\
         <text x=\"60\" y=\"52\" font-size=\"14\">per-item global-queue 2</text><text x=\"10\" y=\"90\" font-size=\"14\">apart</text></svg></body></html>",
    )
    .unwrap();
    let bad = check_page_in_chromium(&overlap).expect("chromium is there");
    for m in &bad.windows {
        assert_eq!(m.overlaps, ["per-item global-queue 1 / per-item global-queue 2"], "{m:?}");
        assert!(m.small_text.is_empty(), "{m:?}");
    }
    assert!(std::panic::catch_unwind(|| bad.assert_sound()).is_err(), "overlapping labels fail the checks");

    let sb = small_run();
    let dir = sb.run_dir();
    let svgs = svg_plots(&dir);
    assert!(svgs.len() >= 2, "{svgs:?}");
    let check = check_page_in_chromium(&dir.join("report.html")).expect("chromium is there");
    check.assert_sound();
    let dom = &check.dom;
    assert!(dom.contains("<table>") && dom.contains("cpu.primes"), "the page rendered:\n{dom}");
    // The check counted every figure whose SVG was laid out with a size and
    // text, in a browser.
    let n = svgs.len();
    assert_eq!((check.plots, check.plots_drawn), (n, n), "every plot drawn");
    assert!(!dom.contains("plots drawn") && !dom.contains("plot-check"), "no test hook on the page");
    assert_eq!(check.windows.len(), WINDOWS.len());
    for svg in &svgs {
        assert!(dom.contains(&format!("data-plot=\"{svg}\"")), "{svg} in the DOM");
    }
    assert!(check.summary_top.is_some(), "the report has a summary table");
    // The script-tag label stayed text: the browser shows it escaped and
    // made no element of it.
    assert!(dom.contains("&lt;script&gt;alert(1)"), "the label is shown as text");
    assert_eq!(dom.matches("<script").count(), 1, "only the page's own script element");
}

/// The pages the other commands write with `--html FILE` (`compare`,
/// `fleet`, `history show`, `history regressions`, `check-claims`, `noise`)
/// each hold a chart, and pass the checks report.html passes, and are 0644
/// under umask 022.
#[test]
fn the_pages_of_compare_history_and_noise_pass_the_same_chromium_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pb = |args: &[&str]| {
        let out = crate::common::umask_022(Command::new(bin()).args(args).current_dir(dir)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    };
    for commit in ["aaaaaaa111", "bbbbbbb222"] {
        pb(&[&["run", "cpu.primes", "--workers", "1,2", "--commit", commit, "--label", XSS, "--quiet"], FAST, SMALL_PRIMES].concat());
    }
    let runs = crate::common::run_dirs(&dir.join("results"));
    assert_eq!(runs.len(), 2, "{runs:?}");
    let (a, b) = (runs[0].to_str().unwrap(), runs[1].to_str().unwrap());
    std::fs::write(dir.join("claims.toml"), "[[claim]]\nworkload = \"cpu.primes\"\nexpect = \"1us..10s\"\n").unwrap();
    pb(&["compare", a, b, "--html", "compare.html"]);
    pb(&["fleet", a, b, "--html", "fleet.html"]);
    pb(&["history", "show", "cpu.primes", "--html", "show.html"]);
    pb(&["history", "regressions", "--html", "regressions.html"]);
    pb(&["check-claims", "claims.toml", b, "--html", "claims.html"]);
    pb(&[&["noise", "cpu.primes", "--workers", "1", "--quiet", "--no-history", "--html", "noise.html"], FAST, SMALL_PRIMES].concat());
    for page in ["compare.html", "fleet.html", "show.html", "regressions.html", "claims.html", "noise.html"] {
        let file = dir.join(page);
        let html = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("cpu.primes"), "{page}:\n{html}");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o644, "{page}");
        assert!(!html.contains("<script>alert(1)"), "{page}: the label is text, never a tag");
        // The noise page's chart needs rows compared, which rounds left out
        // on a busy machine may prevent: then the page says why in the
        // chart's place, and says the machine was busy.
        let busy_noise = page == "noise.html" && html.contains("class=\"chart-none\"") && html.contains("was busy");
        assert!(busy_noise || (html.contains("<figure class=\"chart\"") && html.contains("<svg")), "{page}: a chart:\n{html}");
        let Some(check) = check_page_in_chromium(&file) else { return };
        eprintln!("{page}: {} px wide in a {:?} window, {} plots", check.scroll_width, check.window, check.plots);
        check.assert_sound();
        assert!(busy_noise || check.dom.contains("<figure class=\"chart\""), "{page}: the chart in the DOM");
    }
}
