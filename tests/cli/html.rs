//! report.html and the PNG plots: written by `run` and by `report --html`,
//! and opened in headless Chromium at 1400x900 ([`check_page_in_chromium`],
//! for any page proofbench writes): skipped, with the reason printed, where
//! no Chromium is installed, and failed there under `CI=true` (CI installs
//! it).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{FAST, SMALL_PRIMES, Sandbox, bin, text};

/// The window the pages are checked in.
pub const WINDOW: (u32, u32) = (1400, 900);

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

/// Runs headless Chromium on `page` with `args` (and the window of
/// [`WINDOW`]) to its end; returns its stdout and its log (stderr), where
/// console messages appear.
fn chromium_run(browser: &Path, page: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let url = format!("file://{}", page.display());
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
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

/// Opens `page` in headless Chromium; returns the DOM after its scripts ran
/// and the browser's log.
pub fn dump_dom(browser: &Path, page: &Path, profile: &Path) -> (String, String) {
    chromium_run(browser, page, profile, &["--dump-dom"])
}

/// The console messages in Chromium's log (the report logs nothing, so any
/// message is an error), and uncaught exceptions.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
}

/// What a page showed in headless Chromium at [`WINDOW`]: what its own
/// script found once it had loaded (marked on `#plot-check`), the console
/// errors, and its first screen.
#[derive(Debug)]
pub struct PageCheck {
    /// The DOM after the scripts ran.
    pub dom: String,
    /// Console messages and uncaught exceptions.
    pub console_errors: Vec<String>,
    /// Figures on the page, and those whose SVG was drawn with a size and text.
    pub plots: usize,
    pub plots_drawn: usize,
    /// `<img>` elements, and those loaded (`complete && naturalWidth > 0`).
    pub images: usize,
    pub images_loaded: usize,
    /// The page's scroll width with its folds closed, and with them all open.
    pub scroll_width: u32,
    pub scroll_width_open: u32,
    /// The window's inner size (its height less the browser's own bars).
    pub window: (u32, u32),
    /// How far from the top the summary table starts (`None`: the page has
    /// no `#summary` heading followed by a table).
    pub summary_top: Option<u32>,
    /// The first screen's size in pixels, and how many distinct colours a
    /// sample of its pixels has, and the share of them that are not white.
    pub screenshot: (u32, u32),
    pub screenshot_colours: usize,
    pub screenshot_inked: f64,
}

impl PageCheck {
    /// Every check a page must pass: no console error, every plot drawn,
    /// every image loaded, no horizontal overflow (folds closed or open),
    /// the summary table (where there is one) on the first screen, and a
    /// first screen of the window's size that is not blank.
    pub fn assert_sound(&self) {
        assert!(self.console_errors.is_empty(), "console errors: {:?}", self.console_errors);
        assert_eq!(self.plots_drawn, self.plots, "every plot drawn");
        assert_eq!(self.images_loaded, self.images, "every image loaded");
        // The window's inner height is the window's less the browser's own bars (757 of 900 px).
        assert!(self.window.0 == WINDOW.0 && self.window.1 <= WINDOW.1, "the window's inner size: {:?}", self.window);
        assert!(
            self.scroll_width <= self.window.0,
            "the page overflows to the right: {} px in a {} px window",
            self.scroll_width,
            self.window.0
        );
        assert!(
            self.scroll_width_open <= self.window.0,
            "with its folds open, the page overflows to the right: {} px",
            self.scroll_width_open
        );
        if let Some(top) = self.summary_top {
            assert!(top < self.window.1, "the summary table starts at {top} px, below the first screen");
        }
        assert_eq!(self.screenshot, WINDOW, "the screenshot has the window's size");
        assert!(self.screenshot_colours >= 8 && self.screenshot_inked > 0.01, "the first screen is not blank: {self:?}");
    }
}

/// The value of `attr` on the `#plot-check` element of `dom`.
fn check_attr<'a>(dom: &'a str, attr: &str) -> Option<&'a str> {
    let line = dom.lines().find(|l| l.contains("id=\"plot-check\""))?;
    let at = line.find(&format!(" {attr}=\""))? + attr.len() + 3;
    line[at..].split('"').next()
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

/// Opens `page` (any page proofbench writes) in headless Chromium at
/// [`WINDOW`]: its DOM once its script ran, and a screenshot of its first
/// screen. `None` (the reason printed) where no Chromium is installed,
/// outside CI. Call [`PageCheck::assert_sound`] on the result.
pub fn check_page_in_chromium(page: &Path) -> Option<PageCheck> {
    let browser = chromium_or_skip()?;
    let scratch = tempfile::tempdir().unwrap();
    let profile = scratch.path().join("chromium-profile");
    let (dom, log) = dump_dom(&browser, page, &profile);
    let shot = scratch.path().join("screen.png");
    let (_, shot_log) = chromium_run(&browser, page, &profile, &[&format!("--screenshot={}", shot.display())]);
    let num = |attr: &str| -> u32 {
        check_attr(&dom, attr)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("#plot-check has no number {attr}; the script did not run?"))
    };
    let window = check_attr(&dom, "data-window").and_then(|w| w.split_once('x')).expect("the window's size");
    let summary_top = check_attr(&dom, "data-summary-top").and_then(|t| t.parse::<i64>().ok()).expect("the summary's top");
    let (screenshot, screenshot_colours, screenshot_inked) = png_summary(&shot);
    Some(PageCheck {
        console_errors: console_errors(&log).into_iter().chain(console_errors(&shot_log)).map(String::from).collect(),
        plots: num("data-expected") as usize,
        plots_drawn: num("data-rendered") as usize,
        images: num("data-images") as usize,
        images_loaded: num("data-images-loaded") as usize,
        scroll_width: num("data-scroll-width"),
        scroll_width_open: num("data-scroll-width-open"),
        window: (window.0.parse().unwrap(), window.1.parse().unwrap()),
        summary_top: u32::try_from(summary_top).ok(),
        screenshot,
        screenshot_colours,
        screenshot_inked,
        dom,
    })
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
    // image and no script of its own, fails them.
    let wide = sb.tmp.path().join("wide.html");
    std::fs::write(
        &wide,
        "<!DOCTYPE html><html><body><p id=\"plot-check\" data-expected=\"1\">x</p><div style=\"width:3000px\">wide</div>\
         <img src=\"nowhere.png\"><script>window.addEventListener('load',function(){var e=document.getElementById('plot-check');\
         var i=document.images[0];e.setAttribute('data-rendered','0');e.setAttribute('data-images','1');\
         e.setAttribute('data-images-loaded',String(i.complete&&i.naturalWidth>0?1:0));\
         e.setAttribute('data-scroll-width',String(document.documentElement.scrollWidth));\
         e.setAttribute('data-scroll-width-open',String(document.documentElement.scrollWidth));\
         e.setAttribute('data-window',window.innerWidth+'x'+window.innerHeight);e.setAttribute('data-summary-top','-1');});</script></body></html>",
    )
    .unwrap();
    let bad = check_page_in_chromium(&wide).expect("chromium is there");
    assert!(bad.scroll_width > WINDOW.0 && bad.images_loaded == 0 && bad.plots_drawn == 0, "{bad:?}");
    assert!(std::panic::catch_unwind(|| bad.assert_sound()).is_err(), "the checks fail on a broken page");

    let sb = small_run();
    let dir = sb.run_dir();
    let svgs = svg_plots(&dir);
    assert!(svgs.len() >= 2, "{svgs:?}");
    let check = check_page_in_chromium(&dir.join("report.html")).expect("chromium is there");
    check.assert_sound();
    let dom = &check.dom;
    assert!(dom.contains("<table>") && dom.contains("cpu.primes"), "the page rendered:\n{dom}");
    // The page's script counted every figure whose SVG was laid out with a
    // size and text; it only runs in a browser.
    let n = svgs.len();
    assert_eq!((check.plots, check.plots_drawn), (n, n), "every plot drawn");
    assert!(dom.contains(&format!("{n} of {n} plots drawn.")));
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
        assert!(html.contains("<figure class=\"chart\"") && html.contains("<svg"), "{page}: a chart:\n{html}");
        let Some(check) = check_page_in_chromium(&file) else { return };
        eprintln!("{page}: {} px wide in a {:?} window, {} plots", check.scroll_width, check.window, check.plots);
        check.assert_sound();
        assert!(check.dom.contains("<figure class=\"chart\""), "{page}: the chart in the DOM");
    }
}
