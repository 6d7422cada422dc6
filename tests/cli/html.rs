//! report.html and the PNG plots: written by `run` and by `report --html`,
//! and opened in headless Chromium (skipped, with the reason printed, where
//! no Chromium is installed; CI installs it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{FAST, SMALL_PRIMES, Sandbox, bin, text};

/// A system label that would start a script if any text went unescaped
/// (labels may not hold '/', so the tag stays open).
const XSS: &str = "<script>alert(1)";

/// A run of `cpu.primes` at 1 and 2 workers (speedup, efficiency, median
/// and samples plots), labelled with a script tag.
fn small_run() -> Sandbox {
    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "--workers", "1,2", "--label", XSS, "--quiet"], FAST, SMALL_PRIMES].concat());
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
    assert_eq!(svgs, ["cpu.primes-efficiency.svg", "cpu.primes-median.svg", "cpu.primes-samples.svg", "cpu.primes-speedup.svg"]);
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
    let wrote = Command::new(bin()).arg("report").arg(&dir).arg("--html").arg(&file).output().unwrap();
    assert_eq!(wrote.status.code(), Some(0), "{}", text(&wrote.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), page);
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

/// Opens `page` in headless Chromium; returns the DOM after its scripts ran
/// and the browser's log (stderr), where console messages appear.
fn dump_dom(browser: &Path, page: &Path, profile: &Path) -> (String, String) {
    let url = format!("file://{}", page.display());
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0"])
        .args(["--virtual-time-budget=3000", "--dump-dom"])
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

/// The console messages in Chromium's log (the report logs nothing, so any
/// message is an error), and uncaught exceptions.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
}

#[test]
fn report_html_opens_in_headless_chromium_with_every_plot_drawn_and_no_console_error() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: no chromium on PATH (install the Debian package `chromium`; .ci/run does)");
        return;
    };
    let sb = Sandbox::new();
    let profile = sb.tmp.path().join("chromium-profile");

    // The detection can fail: a page with a deliberate error is caught.
    let broken = sb.tmp.path().join("broken.html");
    std::fs::write(&broken, "<!DOCTYPE html><html><body><p>x</p><script>notDefinedAnywhere();</script></body></html>").unwrap();
    let (_, log) = dump_dom(&browser, &broken, &profile);
    let errors = console_errors(&log);
    assert!(errors.iter().any(|l| l.contains("notDefinedAnywhere")), "a deliberate error is detected; log:\n{log}");

    let sb = small_run();
    let dir = sb.run_dir();
    let svgs = svg_plots(&dir);
    assert!(svgs.len() >= 3, "{svgs:?}");
    let (dom, log) = dump_dom(&browser, &dir.join("report.html"), &profile);
    assert!(console_errors(&log).is_empty(), "console errors: {:?}", console_errors(&log));
    assert!(dom.contains("<table>") && dom.contains("cpu.primes"), "the page rendered:\n{dom}");
    // The page's script counted every figure whose SVG was laid out with a
    // size and text; it only runs in a browser.
    let n = svgs.len();
    assert!(
        dom.contains(&format!("data-expected=\"{n}\" data-rendered=\"{n}\"")) && dom.contains(&format!("{n} of {n} plots drawn.")),
        "every plot drawn:\n{}",
        dom.lines().find(|l| l.contains("plot-check")).unwrap_or("no plot-check line")
    );
    for svg in &svgs {
        assert!(dom.contains(&format!("data-plot=\"{svg}\"")), "{svg} in the DOM");
    }
    // The script-tag label stayed text: the browser shows it escaped and
    // made no element of it.
    assert!(dom.contains("&lt;script&gt;alert(1)"), "the label is shown as text");
    assert_eq!(dom.matches("<script").count(), 1, "only the page's own script element");
}
