//! `proofbench fleet`: three tiny runs as three hosts (one machine, told
//! apart by their labels), in every output; what is not a fleet is refused.
//! Also what the records alone must carry: compare of rows whose workload
//! no build knows, and `history import` of a whole set.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{bin, html_page, row_name, rows_of, text, umask_022};

/// A tiny run of os.syscall labelled `label` into `dir`.
fn tiny_run(dir: &Path, label: &str) {
    let out = Command::new(bin())
        .args(["run", "os.syscall", "--profile", "quick", "--trials", "3", "--runs", "3", "--warmup", "1", "--settle", "0"])
        .args(["--label", label, "--no-history", "--run-dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A results directory holding runs `h1`, `h2`, `h3`.
fn three_hosts() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    for h in ["h1", "h2", "h3"] {
        tiny_run(&results.join(h), h);
    }
    (tmp, results)
}

fn fleet(args: &[&Path], flags: &[&str]) -> Output {
    Command::new(bin()).arg("fleet").args(args).args(flags).output().unwrap()
}

/// The one line of a refusal, exit 2.
fn refused(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}{}", text(&out.stdout), text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn a_fleet_of_three_runs_names_every_host_and_row_in_every_output() {
    let (tmp, results) = three_hosts();
    let out = fleet(&[&results], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Fleet of 3 hosts"), "{stdout}");
    assert!(stdout.contains("3 runs share the hostname"), "{stdout}");
    let rows = rows_of(&results.join("h1"));
    assert!(!rows.is_empty());
    for h in ["h1", "h2", "h3"] {
        assert!(stdout.contains(&format!("/{h} ")), "host {h}: {stdout}");
    }
    for r in &rows {
        let cell = &r["cell"];
        let axes: Vec<String> = cell["axes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{}={}", a.as_str().unwrap(), cell["params"][a.as_str().unwrap()]).replace('"', ""))
            .collect();
        let name = [vec![cell["workload"].as_str().unwrap().to_string()], axes].concat().join(" ");
        assert!(stdout.lines().any(|l| l.starts_with(&format!("{name} "))), "{}: {name}: {stdout}", row_name(r));
    }
    // The count line comes before the table.
    let count = stdout.find("host rows beyond the 2.00% noise band").expect("the count line");
    assert!(count < stdout.find("\nRow ").expect("the table"), "{stdout}");

    // The same runs named one by one.
    let dirs: Vec<PathBuf> = ["h1", "h2", "h3"].iter().map(|h| results.join(h)).collect();
    let one_by_one = fleet(&dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>(), &[]);
    assert_eq!(one_by_one.status.code(), Some(0), "{}", text(&one_by_one.stderr));
    assert!(text(&one_by_one.stdout).contains("Fleet of 3 hosts"));
    // The same runs named again (a trailing slash, a link, one of them
    // alone) count once each, and the repeats are said.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&results, &link).unwrap();
    let twice = fleet(&[&results, &results.join(""), &link, &results.join("h1")], &[]);
    assert_eq!(twice.status.code(), Some(0), "{}", text(&twice.stderr));
    assert!(text(&twice.stdout).contains("Fleet of 3 hosts"), "{}", text(&twice.stdout));
    assert_eq!(text(&twice.stderr).matches("is named twice; it counts once").count(), 7, "{}", text(&twice.stderr));

    // --export csv: a header and one line per host and row.
    let out = fleet(&[&results], &["--export", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("host,hostname,run,machine,workload,axes,status,"), "{csv}");
    assert_eq!(lines.len(), 1 + 3 * rows.len(), "{csv}");
    assert!(lines[1..].iter().all(|l| l.contains(",os.syscall,")), "{csv}");
    // --export json: the same entries.
    let out = fleet(&[&results], &["--export", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v.as_array().unwrap().len(), 3 * rows.len());
    assert!(v[0]["ratio"].as_f64().is_some_and(|r| r > 0.0), "{v}");

    // --html FILE: a page naming every host, and the text still printed.
    let page = tmp.path().join("fleet.html");
    let out = umask_022(Command::new(bin()).arg("fleet").arg(&results).arg("--html").arg(&page)).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = html_page(&page);
    for h in ["h1", "h2", "h3"] {
        assert!(html.contains(&format!("/{h}</td>")), "{h}: {html}");
    }
    assert!(text(&out.stdout).contains("Fleet of 3 hosts"));
    // The heat map, each host's name a link to its report, relative to the page.
    assert_eq!(html.matches("<svg").count(), 1, "{html}");
    assert!(html.contains("Each host against the fleet median"), "{html}");
    for h in ["h1", "h2", "h3"] {
        assert!(html.contains(&format!("<a href=\"results/{h}/report.html\">")), "{h}: {html}");
        assert!(tmp.path().join(format!("results/{h}/report.html")).is_file());
    }
    // --markdown: a markdown table.
    let out = fleet(&[&results], &["--markdown"]);
    assert!(text(&out.stdout).contains("| Row"), "{}", text(&out.stdout));
    // The terminal's output is not the markdown: aligned columns, no pipes.
    let terminal = text(&fleet(&[&results], &[]).stdout);
    assert!(!terminal.contains("| Row") && terminal.contains("\nRow "), "{terminal}");
}

#[test]
fn what_is_not_a_fleet_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("results").join("h1");
    tiny_run(&one, "h1");
    let err = refused(&fleet(&[&one], &[]));
    assert!(err.contains("at least two hosts") && err.contains("1 found"), "{err}");
    // A results directory holding one run is one host too.
    let err = refused(&fleet(&[&tmp.path().join("results")], &[]));
    assert!(err.contains("at least two hosts"), "{err}");
    // A directory that is not a run and holds none, a path that is not there.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = refused(&fleet(&[&one, &empty], &[]));
    assert!(err.contains(&format!("{}: not a run directory", empty.display())), "{err}");
    let gone = tmp.path().join("gone");
    let err = refused(&fleet(&[&one, &gone], &[]));
    assert!(err.contains(&format!("{}: not a run directory", gone.display())), "{err}");
    // An --html FILE that cannot be written is refused before anything.
    let err = refused(&fleet(&[&one, &one], &["--html", tmp.path().join("no/such/dir.html").to_str().unwrap()]));
    assert!(err.contains("--html"), "{err}");
}

/// Replaces `from` by `to` in the file `path` (which must hold it).
fn edit(path: &Path, from: &str, to: &str) {
    let t = std::fs::read_to_string(path).unwrap();
    assert!(t.contains(from), "{}: no {from}", path.display());
    std::fs::write(path, t.replace(from, to)).unwrap();
}

/// A copy of the run directory `from` at `to` (its records only).
fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["run.json", "rows.jsonl"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

#[test]
fn compare_reads_treatments_from_the_record_for_a_workload_this_build_lacks() {
    let tmp = tempfile::tempdir().unwrap();
    let made = tmp.path().join("made");
    tiny_run(&made, "a");
    let rows = std::fs::read_to_string(made.join("rows.jsonl")).unwrap();
    assert!(rows.contains(r#""treatments":["pad_pct"]"#), "the planner records the treatments: {rows}");
    // Two runs of a workload no build defines, one with the treatment set.
    let (base, cand) = (tmp.path().join("base"), tmp.path().join("cand"));
    for d in [&base, &cand] {
        copy_run(&made, d);
        edit(&d.join("rows.jsonl"), r#""workload":"os.syscall""#, r#""workload":"elsewhere.syscall""#);
        edit(&d.join("run.json"), r#""workload": "os.syscall""#, r#""workload": "elsewhere.syscall""#);
    }
    edit(&cand.join("rows.jsonl"), r#""pad_pct":0"#, r#""pad_pct":10"#);
    let verdict = |b: &Path, c: &Path| {
        let out = Command::new(bin()).arg("compare").arg(b).arg(c).args(["--format", "json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["rows"][0]["verdict"].as_str().unwrap().to_string(), v["rows"][0]["reason"].as_str().unwrap().to_string())
    };
    let (v, why) = verdict(&base, &cand);
    assert_ne!(v, "not_comparable", "{why}");
    // The record is what says it: without the list, the pair is stopped.
    for d in [&base, &cand] {
        edit(&d.join("rows.jsonl"), r#""treatments":["pad_pct"]"#, r#""treatments":[]"#);
    }
    let (v, why) = verdict(&base, &cand);
    assert_eq!(v, "not_comparable");
    assert!(why.starts_with("different parameters: pad_pct 0 vs 10"), "{why}");
}

fn history(db: &Path, args: &[&Path]) -> Output {
    Command::new(bin()).arg("history").arg("--db").arg(db).arg("import").args(args).output().unwrap()
}

#[test]
fn history_import_takes_a_results_directory_in_one_transaction() {
    let (tmp, results) = three_hosts();
    let db = tmp.path().join("history.sqlite");
    // A set with a damaged run records none of it.
    let broken = tmp.path().join("broken");
    copy_run(&results.join("h1"), &broken);
    std::fs::write(broken.join("run.json"), "{").unwrap();
    let out = history(&db, &[&results, &broken]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let list = Command::new(bin()).arg("history").arg("--db").arg(&db).arg("list").output().unwrap();
    assert!(!text(&list.stdout).contains("h:1"), "nothing recorded: {}", text(&list.stdout));
    // The whole set, then again: held already.
    let out = history(&db, &[&results]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    for (i, h) in ["h1", "h2", "h3"].iter().enumerate() {
        assert!(said.contains(&format!("h:{} imported {}", i + 1, results.join(h).display())), "{said}");
    }
    let again = text(&history(&db, &[&results]).stdout);
    assert_eq!(again.matches("already held").count(), 3, "{again}");
    let list = Command::new(bin()).arg("history").arg("--db").arg(&db).arg("list").output().unwrap();
    assert!(text(&list.stdout).contains("3 runs in"), "{}", text(&list.stdout));
}
