//! Input hygiene: names a shell would refuse are refused before anything
//! runs, and text from the user or a workload reaches report.md, report.html
//! and the terminal as text (escaped for markdown and HTML, control
//! characters replaced), never as markup or terminal escapes.

use std::path::PathBuf;

use crate::common::{FAST, Sandbox, text};

fn write(sb: &Sandbox, name: &str, body: &str) -> PathBuf {
    let p = sb.tmp.path().join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// A command workload whose `env` table holds `entry` (on line 7).
fn env_toml(entry: &str) -> String {
    format!(
        r#"
[[workload]]
id = "shell.env"
summary = "Wall time of true"
unit = "ns"
direction = "lower-is-better"
env = {{ {entry} }}
command = ["true"]
"#
    )
}

#[test]
fn env_names_that_a_shell_refuses_are_refused_naming_file_line_and_key() {
    for (entry, key) in [(r#""BAD=NAME" = "1""#, "BAD=NAME"), (r#""" = "1""#, "\"\""), (r#""1X" = "1""#, "1X"), (r#""A-B" = "1""#, "A-B")] {
        let sb = Sandbox::new();
        let file = write(&sb, "env.toml", &env_toml(entry));
        let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell"], FAST].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{entry}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let at = format!("proofbench: error: {}:7: key `env.", file.display());
        assert!(err.starts_with(&at), "{entry}: {err}");
        assert!(err.contains(key) && err.contains("letters, digits and '_', not starting with a digit"), "{entry}: {err}");
        assert!(!sb.run_dir().exists(), "nothing ran for {entry}");
    }
    // A good name still runs.
    let sb = Sandbox::new();
    let file = write(&sb, "env.toml", &env_toml(r#"GOOD_NAME1 = "1""#));
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell", "--no-history"], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

const LABEL: &str = "<img src=x onerror=alert(1)>";

/// Two command workloads whose texts hold markup, backticks, `|` and ESC:
/// `shell.xss` (ok; its summary holds a script tag, a backtick, a pipe and
/// a colour escape, its command backticks and a pipe, its axis values
/// markup, a pipe and a screen-clearing escape) and `shell.tail` (failed:
/// its metric's regex, which holds backticks and a pipe, never matches, so
/// its reason quotes the command, which holds `<img`, and the tail of the
/// output, which holds ESC, `<img`, backticks and a pipe).
const XSS_TOML: &str = r##"
[[workload]]
id = "shell.xss"
summary = "x <script>alert(1)</script> a`b | c \u001b[31mred\u001b[0m"
measures = "# not a heading"
unit = "ns"
direction = "lower-is-better"
shell = true
command = "echo `echo ok` | tr a-z A-Z"

[workload.axes]
look = ["<i>x</i>", "p|q", "e\u001b[2Jsc"]

[[workload]]
id = "shell.tail"
summary = "its output ends in markup"
unit = "ns"
direction = "lower-is-better"
shell = true
command = "printf 'tail \\033[31mred <img src=y onerror=alert(3)> `x` a|b\\n'"
metric = { regex = 'cycles=(\d+)|`never`' }
"##;

/// The columns of a markdown table line: its `|` that no backslash escapes.
fn columns(line: &str) -> usize {
    let mut chars = line.chars();
    let mut n = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '|' => n += 1,
            _ => {}
        }
    }
    n.saturating_sub(1)
}

/// Every table of a markdown text keeps its header's column count.
fn assert_tables_keep_their_columns(what: &str, md: &str) {
    let mut header: Option<(usize, &str)> = None;
    let mut tables = 0;
    for line in md.lines() {
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        match header {
            None => {
                header = Some((columns(line), line));
                tables += 1;
            }
            Some((n, h)) => assert_eq!(columns(line), n, "{what}: a cell broke its table:\n{h}\n{line}"),
        }
    }
    assert!(tables > 0, "{what} has no table:\n{md}");
}

/// No markup from the records: none of the label's, the summary's, the
/// axis values', the command's or its output's tags, and no ESC.
fn assert_no_raw_markup(what: &str, text: &str) {
    for tag in ["<img", "<script", "<i>", "</i>"] {
        assert!(!text.contains(tag), "{what} holds a raw {tag}:\n{text}");
    }
    assert!(!text.contains('\u{1b}'), "{what} holds an ESC:\n{text}");
}

/// `proofbench ARGS`, waited for.
fn proofbench(args: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::common::bin()).args(args).output().unwrap()
}

#[test]
fn markup_backticks_pipes_and_escapes_from_records_reach_reports_and_the_terminal_as_text() {
    let sb = Sandbox::new();
    let file = write(&sb, "xss.toml", XSS_TOML);
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell", "--label", LABEL], FAST].concat());
    assert_eq!(out.status.code(), Some(1), "shell.tail fails: {}", text(&out.stderr));
    let dir = sb.run_dir();
    let dir_arg = dir.to_str().unwrap();

    // report.md: the text escaped, every table whole, the code spans intact.
    let md = sb.report_md();
    assert_no_raw_markup("report.md", &md);
    assert_tables_keep_their_columns("report.md", &md);
    let label = md.lines().find(|l| l.starts_with("| System label ")).expect("the label's row");
    assert!(label.contains("| &lt;img src=x onerror=alert(1)> "), "the label, escaped:\n{label}");
    assert!(md.contains("x &lt;script>alert(1)&lt;/script> a\\`b | c \u{FFFD}\\[31mred\u{FFFD}\\[0m."), "the summary, escaped:\n{md}");
    assert!(md.lines().all(|l| !l.starts_with("# not")), "a summary cannot make a heading");
    assert!(
        md.contains("| look=&lt;i>x&lt;/i> ") && md.contains("| look=p\\|q ") && md.contains("| look=e\u{FFFD}\\[2Jsc "),
        "axis values:\n{md}"
    );
    assert!(md.contains("Timed region: one run of ``echo `echo ok` | tr a-z A-Z``, from spawn"), "the command's code span:\n{md}");
    let not_ok = &md[md.find("## Not ok").expect("a Not ok section")..];
    let failed = not_ok.lines().find(|l| l.starts_with("| shell.tail ")).expect("shell.tail in Not ok");
    assert!(failed.contains("no match for `` cycles=(\\d+)\\|`never` ``"), "the regex's code span, its pipe escaped:\n{failed}");
    assert!(failed.contains("printf 'tail \\033\\[31mred &lt;img src=y"), "a command holding a tag is text:\n{failed}");
    assert!(failed.contains("it ends: tail \u{FFFD}\\[31mred &lt;img src=y onerror=alert(3)> `x` a\\|b |"), "the output's tail:\n{failed}");

    // report.html: the same text, escaped exactly once.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<script").count(), 1, "only the page's own script");
    assert_no_raw_markup("report.html", &html.replacen("<script>", "", 1).replacen("</script>", "", 1));
    assert!(!html.contains("&amp;lt;") && !html.contains("&amp;gt;") && !html.contains("&amp;amp;"), "escaped twice:\n{html}");
    assert!(html.contains("<td>System label</td><td>&lt;img src=x onerror=alert(1)&gt;</td>"), "{html}");
    assert!(html.contains("x &lt;script&gt;alert(1)&lt;/script&gt; a`b | c \u{FFFD}[31mred"), "the summary as the user wrote it:\n{html}");
    assert!(html.contains("<td>look=p|q</td>") && html.contains("<td>look=&lt;i&gt;x&lt;/i&gt;</td>"), "{html}");
    assert!(html.contains("one run of <code>echo `echo ok` | tr a-z A-Z</code>"), "{html}");
    assert!(html.contains("no match for <code>cycles=(\\d+)|`never`</code>"), "{html}");

    // The terminal: what `run` printed (the group's tables and the footer on
    // stdout, progress lines naming the rows on stderr), `report DIR`
    // (report.md again), `compare`, `history`.
    for (what, bytes) in [("run's stdout", &out.stdout), ("run's stderr", &out.stderr)] {
        assert!(!bytes.contains(&0x1b), "{what} holds an ESC:\n{}", text(bytes));
    }
    // A terminal reads no markdown: values show as written, with no escape meant for another medium.
    let stdout = text(&out.stdout);
    assert!(stdout.contains("look=<i>x</i>") && stdout.contains("look=p|q"), "the terminal shows values as written:\n{stdout}");
    assert!(
        !stdout.contains("&lt;") && !stdout.contains("\\[") && !stdout.contains("\\`"),
        "an escape for markdown on the terminal:\n{stdout}"
    );
    assert!(text(&out.stderr).contains("proofbench: round 1 of "), "{}", text(&out.stderr));
    let report = proofbench(&["report", dir_arg, "--format", "markdown"]);
    assert_eq!(report.status.code(), Some(0));
    assert_eq!(text(&report.stdout), md, "report DIR --format markdown prints report.md");
    // report DIR: the terminal's view, values as written, no markdown link.
    let view = text(&proofbench(&["report", dir_arg]).stdout);
    assert!(!view.contains('\u{1b}') && view.contains("look=<i>x</i>") && !view.contains("&lt;") && !view.contains("](#"), "{view}");
    // compare and history print their documents as run does: on the
    // terminal as written; as markdown escaped, every table whole; as a page
    // escaped once.
    let compare = proofbench(&["compare", dir_arg, dir_arg]);
    assert_eq!(compare.status.code(), Some(0), "{}", text(&compare.stderr));
    let shown = text(&compare.stdout);
    assert!(!shown.contains('\u{1b}') && shown.contains("look=<i>x</i>") && shown.contains("look=p|q"), "compare: {shown}");
    assert!(!shown.contains("&lt;") && !shown.contains("\\[") && !shown.contains("\\`"), "compare: an escape for markdown:\n{shown}");
    let compare_md = proofbench(&["compare", dir_arg, dir_arg, "--format", "markdown"]);
    assert_eq!(compare_md.status.code(), Some(0), "{}", text(&compare_md.stderr));
    assert_no_raw_markup("compare --format markdown", &text(&compare_md.stdout));
    assert_tables_keep_their_columns("compare --format markdown", &text(&compare_md.stdout));
    let page = proofbench(&["compare", dir_arg, dir_arg, "--html", "-"]);
    let page = text(&page.stdout);
    assert_eq!(page.matches("<script").count(), 1, "only the page's own script");
    assert_no_raw_markup("compare --html", &page.replacen("<script>", "", 1).replacen("</script>", "", 1));
    assert!(page.contains("<td>look=&lt;i&gt;x&lt;/i&gt;</td>") && !page.contains("&amp;lt;"), "{page}");
    let db = sb.tmp.path().join("history.sqlite");
    let plot = sb.tmp.path().join("trend.svg");
    for args in [&["list"][..], &["show", "shell.xss", "--plot", plot.to_str().unwrap()]] {
        let history = proofbench(&[&["history", "--db", db.to_str().unwrap()], args].concat());
        assert_eq!(history.status.code(), Some(0), "{}", text(&history.stderr));
        assert!(!history.stdout.contains(&0x1b) && !history.stderr.contains(&0x1b), "history {args:?} printed an ESC");
        let shown = text(&history.stdout);
        assert!(!shown.contains("&lt;") && !shown.contains("\\["), "history {args:?}: an escape for markdown:\n{shown}");
    }
    let shown = text(&proofbench(&["history", "--db", db.to_str().unwrap(), "show", "shell.xss", "--plot", plot.to_str().unwrap()]).stdout);
    assert!(shown.contains("look=<i>x</i>"), "history show shows values as written:\n{shown}");
    assert_no_raw_markup("the trend plot", &std::fs::read_to_string(&plot).unwrap());

    // --update-doc copies the escaped text into the user's document.
    let doc = write(
        &sb,
        "doc.md",
        "<!-- proofbench:summary start -->\n<!-- proofbench:summary end -->\n<!-- proofbench:shell.xss start -->\n<!-- proofbench:shell.xss end -->\n<!-- proofbench:not-ok start -->\n<!-- proofbench:not-ok end -->\n",
    );
    let update = proofbench(&["report", "--update-doc", doc.to_str().unwrap(), dir_arg]);
    assert_eq!(update.status.code(), Some(0), "{}", text(&update.stderr));
    let updated = std::fs::read_to_string(&doc).unwrap();
    assert!(updated.contains("shell.tail") && updated.contains("&lt;img src=x onerror=alert(1)>"), "{updated}");
    assert!(updated.contains("one run of ``echo `echo ok` | tr a-z A-Z``"), "{updated}");
    assert_no_raw_markup("the updated document", &updated);
    assert_tables_keep_their_columns("the updated document", &updated);
}
