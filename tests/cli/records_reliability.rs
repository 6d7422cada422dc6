//! The records under stress: a run imported while it is still running, a
//! run killed with SIGKILL, rows.jsonl cut or damaged, the same row twice, a
//! record of a newer schema nested in a row, a damaged history database,
//! run directories that cannot be made, a full disk (and a row it cuts), and the modes of the
//! files a run writes. Each ends with a clear record or one line naming what
//! to fix (exit 2 for bad input, 1 for a failure of the machine).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{FAST, SMALL_PRIMES, Sandbox, bin, text};

/// `proofbench ARGS` in `dir`, waited for.
fn pb(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin()).args(args).current_dir(dir).output().expect("proofbench runs")
}

/// Exit code 2 and one line on stderr starting `proofbench: error: ` and
/// holding each of `needles`; returns the line.
fn refused(out: &Output, needles: &[&str]) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}\nstdout: {}", text(&out.stdout));
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    assert!(err.starts_with("proofbench: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "'{n}' not in: {err}");
    }
    err
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}\nstdout: {}", text(&out.stderr), text(&out.stdout));
    text(&out.stdout)
}

/// A finished run of selftest.tiny (one row) in `sb.run_dir()`, recorded in
/// `<tmp>/history.sqlite`.
fn tiny_run(sb: &Sandbox) {
    let out = sb.run(&[&["selftest.tiny", "--include-selftest", "--quiet"], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A run of cpu.primes (plan position 0), selftest.crash (1), selftest.hang
/// (2) and selftest.wrong (3), one trial each, in a first round that runs
/// the hang last; returned once the hang's worker has started, with its
/// pid. The crash's and the wrong answer's rows are then written (a trial
/// that is not ok decides its row at once); cpu.primes' row would be
/// written at the end of the round.
fn run_until_the_hang(sb: &Sandbox, extra: &[&str], stderr: Stdio) -> (Child, i32) {
    let seed = (0..).find(|&s| proofbench::testing::round_order(&[0, 1, 2, 3], s, 0)[3] == 2).unwrap();
    let seed = seed.to_string();
    let args: &[&str] = &[
        "cpu.primes",
        "selftest.crash",
        "selftest.hang",
        "selftest.wrong",
        "--workers",
        "1",
        "--timeout",
        "60s",
        "--seed",
        &seed,
        "--trials",
        "1",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--settle",
        "0",
    ];
    let child = sb.command(&[args, SMALL_PRIMES, extra].concat()).stdout(Stdio::null()).stderr(stderr).spawn().unwrap();
    let hang_log = sb.run_dir().join("logs/002-selftest.hang.log");
    let t = Instant::now();
    let pid = loop {
        let log = std::fs::read_to_string(&hang_log).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.starts_with("proofbench worker pid")) {
            break line.split_whitespace().nth(3).unwrap().parse().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the hang did not start within a minute");
        std::thread::sleep(Duration::from_millis(50));
    };
    (child, pid)
}

#[test]
fn importing_a_live_run_is_refused_and_its_partial_copy_is_replaced_when_it_finishes() {
    let sb = Sandbox::new();
    let dir = sb.tmp.path();
    let db = dir.join("L.sqlite");
    let err_file = std::fs::File::create(dir.join("run.err")).unwrap();
    let (mut child, _) = run_until_the_hang(&sb, &["--db", db.to_str().unwrap()], Stdio::from(err_file));
    // The run holds its directory's lock: importing it now is refused.
    let live = pb(dir, &["history", "--db", db.to_str().unwrap(), "import", sb.run_dir().to_str().unwrap()]);
    // A copy of it as it is now (run.json not finished, two rows) is not
    // locked: it is recorded, marked incomplete.
    let copy = dir.join("copy");
    std::fs::create_dir(&copy).unwrap();
    for f in ["run.json", "rows.jsonl"] {
        std::fs::copy(sb.run_dir().join(f), copy.join(f)).unwrap();
    }
    let partial = pb(dir, &["history", "--db", db.to_str().unwrap(), "import", copy.to_str().unwrap()]);
    // SAFETY: stopping our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    refused(&live, &[sb.run_dir().to_str().unwrap(), "still running"]);
    let partial = ok(&partial);
    assert!(partial.contains("h:1 imported") && partial.contains("incomplete: 2 of 4 cells ran"), "{partial}");
    // The finished run recorded itself over the partial record: one run.
    let err = std::fs::read_to_string(dir.join("run.err")).unwrap();
    assert!(err.contains("recorded as h:1 "), "{err}");
    let list = ok(&pb(dir, &["history", "--db", db.to_str().unwrap(), "list"]));
    assert!(list.contains("\n1 run in ") && !list.contains("h:2"), "{list}");
    assert!(!list.contains("incomplete"), "the finished record replaced the partial one: {list}");
    let again = ok(&pb(dir, &["history", "--db", db.to_str().unwrap(), "import", copy.to_str().unwrap(), sb.run_dir().to_str().unwrap()]));
    assert_eq!(again.matches("h:1 already held").count(), 2, "{again}");
}

#[test]
fn a_killed_run_says_incomplete_in_its_reports_and_in_the_history() {
    let sb = Sandbox::new();
    let (mut child, worker) = run_until_the_hang(&sb, &["--no-history"], Stdio::null());
    child.kill().unwrap();
    child.wait().unwrap();
    // SAFETY: ending the hang worker's process group (the run was killed
    // before it could); an ended group is not an error here.
    unsafe { libc::kill(-worker, libc::SIGKILL) };
    assert_eq!(sb.run_json()["finished_utc"], serde_json::Value::Null);
    let claim = "incomplete: 2 of 4 cells ran";
    let md = ok(&pb(sb.tmp.path(), &["report", sb.run_dir().to_str().unwrap(), "--format", "markdown"]));
    assert!(md.matches(claim).count() >= 2, "header and footer: {md}");
    assert!(!md.contains("Every row is ok"), "{md}");
    // The cpu group has no row at all, the selftest group misses the hang.
    let cpu = md.split("\n## cpu\n").nth(1).expect("the planned group has its section");
    let cpu = cpu.split("\n## selftest\n").next().unwrap();
    assert!(cpu.contains("Not run: 1 of 1 planned cell has no row: the run has no finish record"), "{md}");
    let selftest = md.split("\n## selftest\n").nth(1).unwrap().split("\n## Reproducibility").next().unwrap();
    assert!(selftest.contains("Not run: 1 of 3 planned cells has no row"), "{selftest}");
    assert!(md.contains("| 000-cpu.primes-workers=1 | not run"), "{md}");
    let html = ok(&pb(sb.tmp.path(), &["report", sb.run_dir().to_str().unwrap(), "--html", "-"]));
    assert!(html.matches(claim).count() >= 2 && html.contains("Not run: 1 of 1 planned cell has no row"), "{html}");
    let db = sb.tmp.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let imported = ok(&pb(sb.tmp.path(), &["history", "--db", db, "import", sb.run_dir().to_str().unwrap()]));
    assert!(imported.contains("h:1 imported") && imported.contains(claim), "{imported}");
    let list = ok(&pb(sb.tmp.path(), &["history", "--db", db, "list"]));
    assert!(list.contains(claim), "{list}");
}

#[test]
fn a_row_cut_inside_a_utf8_character_is_ignored_with_a_warning() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    let rows = sb.run_dir().join("rows.jsonl");
    let mut bytes = std::fs::read(&rows).unwrap();
    // The machine died writing a second row, inside a two-byte character.
    bytes.extend_from_slice(b"{\"schema\":\"proofbench.row/2\",\"summary\":\"caf\xc3");
    std::fs::write(&rows, bytes).unwrap();
    let out = pb(sb.tmp.path(), &["report", sb.run_dir().to_str().unwrap()]);
    let md = ok(&out);
    assert!(md.contains("### selftest.tiny"), "{md}");
    let err = text(&out.stderr);
    assert!(err.contains("rows.jsonl line 2: truncated last row ignored"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_complete_row_line_that_is_not_utf8_is_an_input_error_naming_file_and_line() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    let rows = sb.run_dir().join("rows.jsonl");
    let good = std::fs::read(&rows).unwrap();
    let mut bytes = b"\xff\xfe garbage \x80\n".to_vec();
    bytes.extend_from_slice(&good);
    std::fs::write(&rows, bytes).unwrap();
    let out = pb(sb.tmp.path(), &["report", sb.run_dir().to_str().unwrap()]);
    let err = refused(&out, &["rows.jsonl line 1", "not UTF-8"]);
    assert_eq!(err.matches("rows.jsonl").count(), 1, "the file is named once: {err}");
}

#[test]
fn a_duplicated_row_line_is_refused_by_report_and_import_alike() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    let rows = sb.run_dir().join("rows.jsonl");
    let line = std::fs::read_to_string(&rows).unwrap();
    std::fs::write(&rows, format!("{line}{line}")).unwrap();
    let dir = sb.run_dir();
    let needles = ["rows.jsonl line 2", "000-selftest.tiny", "line 1"];
    refused(&pb(sb.tmp.path(), &["report", dir.to_str().unwrap()]), &needles);
    let db = sb.tmp.path().join("other.sqlite");
    let err = refused(&pb(sb.tmp.path(), &["history", "--db", db.to_str().unwrap(), "import", dir.to_str().unwrap()]), &needles);
    assert!(!err.contains("UNIQUE"), "{err}");
}

#[test]
fn a_row_whose_cell_is_of_a_newer_schema_is_refused() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    let rows = sb.run_dir().join("rows.jsonl");
    let line = std::fs::read_to_string(&rows).unwrap();
    assert!(line.contains("\"proofbench.cell/1\""), "{line}");
    std::fs::write(&rows, line.replace("\"proofbench.cell/1\"", "\"proofbench.cell/99\"")).unwrap();
    let dir = sb.run_dir();
    let needles = ["rows.jsonl line 1", "proofbench.cell/99", "newer than this proofbench reads"];
    refused(&pb(sb.tmp.path(), &["report", dir.to_str().unwrap()]), &needles);
    let db = sb.tmp.path().join("other.sqlite");
    refused(&pb(sb.tmp.path(), &["history", "--db", db.to_str().unwrap(), "import", dir.to_str().unwrap()]), &needles);
}

#[test]
fn a_damaged_value_in_the_history_names_the_database_the_run_and_the_column() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    let db = sb.tmp.path().join("history.sqlite");
    let copy = sb.tmp.path().join("rows-damaged.sqlite");
    std::fs::copy(&db, &copy).unwrap();
    let damage = |path: &Path, sql: &str| rusqlite::Connection::open(path).unwrap().execute(sql, []).unwrap();
    // run.json stored as bytes that are not UTF-8 (nor JSON).
    damage(&db, "UPDATE runs SET run_json = CAST(X'7BFF22' AS TEXT) WHERE id = 1");
    let (dbs, dir) = (db.to_str().unwrap(), sb.run_dir());
    for args in [vec!["compare", "h:1", dir.to_str().unwrap(), "--db", dbs], vec!["history", "--db", dbs, "list"]] {
        refused(&pb(sb.tmp.path(), &args), &[dbs, "h:1", "runs.run_json"]);
    }
    // A row stored as bytes that are not UTF-8.
    damage(&copy, "UPDATE rows SET row_json = CAST(X'FF' AS TEXT)");
    let copy = copy.to_str().unwrap();
    refused(&pb(sb.tmp.path(), &["history", "--db", copy, "show", "selftest.tiny"]), &[copy, "h:1", "rows.row_json", "not UTF-8"]);
    refused(&pb(sb.tmp.path(), &["compare", "h:1", dir.to_str().unwrap(), "--db", copy]), &[copy, "h:1", "rows.row_json"]);
}

#[test]
fn out_and_run_dir_that_cannot_be_directories_are_refused_naming_the_flag() {
    let sb = Sandbox::new();
    let file = sb.tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let file = file.to_str().unwrap();
    let tiny = ["run", "selftest.tiny", "--include-selftest", "--no-history", "--quiet"];
    for (flag, path) in [("--out", file), ("--run-dir", file), ("--out", "/proc/foo"), ("--run-dir", "/proc/foo")] {
        let out = pb(sb.tmp.path(), &[&tiny[..], &[flag, path]].concat());
        let err = refused(&out, &[&format!("{flag} {path}: ")]);
        assert_eq!(err.matches("os error").count(), 1, "{err}");
        assert_eq!(err.matches(path).count(), 1, "{err}");
    }
}

#[test]
fn a_full_disk_names_the_file_once_and_exits_1() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    // Writes to /dev/full fail with ENOSPC, as on a full disk; the device is
    // written into, never replaced.
    let out = pb(sb.tmp.path(), &["report", sb.run_dir().to_str().unwrap(), "--html", "/dev/full"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("proofbench: error: ") && err.contains("No space left on device"), "{err}");
    assert_eq!(err.matches("/dev/full").count(), 1, "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    let meta = std::fs::metadata("/dev/full").unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()), "/dev/full is still the device");
}

/// A file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so that the write
/// fails with EFBIG instead of killing) stands in for a full disk: the write
/// that crosses it writes part of its bytes, as a full disk does.
#[test]
fn a_row_the_disk_cannot_hold_is_not_left_half_written() {
    let sb = Sandbox::new();
    let limit: u64 = 48 * 1024;
    let args: &[&str] = &[
        "run",
        "os.syscall",
        "os.stat",
        "os.mmap",
        "os.file-read",
        "cpu.primes",
        "--workers",
        "1",
        "--max-trials",
        "3",
        "--out",
        "fs",
        "--no-history",
        "--quiet",
    ];
    let mut c = Command::new(bin());
    c.args(args).current_dir(sb.tmp.path()).stdout(Stdio::null());
    // SAFETY: signal and setrlimit are async-signal-safe and touch only the child.
    unsafe {
        c.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let out = c.output().expect("proofbench runs");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rows.jsonl") && err.contains("File too large"), "{err}");
    let dir = std::fs::read_dir(sb.tmp.path().join("fs")).unwrap().next().unwrap().unwrap().path();
    let rows = std::fs::read(dir.join("rows.jsonl")).unwrap();
    // Empty when even the first row was larger than the limit (a loaded
    // machine gives rows more samples); otherwise whole rows only.
    assert!(rows.len() as u64 <= limit, "{} bytes", rows.len());
    assert!(rows.is_empty() || rows.last() == Some(&b'\n'), "rows.jsonl ends inside a row");
    for line in rows.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<serde_json::Value>(line).expect("every line is a whole row");
    }
    // The rows written before the limit are a readable run, finished and incomplete.
    let out = pb(sb.tmp.path(), &["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert!(run["finished_utc"].is_string() && run["complete"] == false, "{run}");
    assert!(!run["not_run"].as_array().unwrap().is_empty(), "the cells without a row are named");
}

/// `proofbench ARGS` in `dir` under umask `mask`, waited for.
fn under_umask(dir: &Path, mask: libc::mode_t, args: &[&str]) -> Output {
    let mut c = Command::new(bin());
    c.args(args).current_dir(dir);
    // SAFETY: umask is async-signal-safe and touches only the child.
    unsafe {
        c.pre_exec(move || {
            libc::umask(mask);
            Ok(())
        })
    };
    c.output().expect("proofbench runs")
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o7777
}

/// Every file under `dir` (recursively), `.lock` and the directories included.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(tree(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn every_file_a_run_writes_honours_the_umask() {
    let sb = Sandbox::new();
    let run = sb.run_dir();
    let args = [&["run", "--run-dir", run.to_str().unwrap(), "selftest.tiny", "--include-selftest", "--quiet"], FAST].concat();
    let out = under_umask(sb.tmp.path(), 0o022, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let files = tree(&run);
    for want in ["run.json", "rows.jsonl", "report.md", "report.html", "raw", "plots", "logs"] {
        assert!(files.iter().any(|f| f.ends_with(want)), "no {want} in {files:?}");
    }
    for sub in ["raw", "plots", "logs"] {
        assert!(files.iter().any(|f| f.parent() == Some(&run.join(sub))), "nothing in {sub}/");
    }
    for f in files.iter().chain([&run, &sb.tmp.path().join("history.sqlite")]) {
        let want = if f.is_dir() { 0o755 } else { 0o644 };
        assert_eq!(mode(f), want, "{} is {:o}", f.display(), mode(f));
    }
    // Under another umask, another mode: the umask decides.
    let html = sb.tmp.path().join("new.html");
    let out = under_umask(sb.tmp.path(), 0o027, &["report", run.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(mode(&html), 0o640);
}

#[test]
fn report_html_over_an_existing_file_keeps_its_mode() {
    let sb = Sandbox::new();
    tiny_run(&sb);
    let html = sb.tmp.path().join("shared.html");
    std::fs::write(&html, "old").unwrap();
    std::fs::set_permissions(&html, std::fs::Permissions::from_mode(0o664)).unwrap();
    let out = under_umask(sb.tmp.path(), 0o077, &["report", sb.run_dir().to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&html).unwrap().starts_with("<!DOCTYPE html>"));
    assert_eq!(mode(&html), 0o664);
}

#[test]
fn a_stdout_that_cannot_be_written_still_leaves_a_finished_run_reported_and_recorded() {
    for extra in [&[][..], &["--quiet"][..], &["--json"][..]] {
        let sb = Sandbox::new();
        let db = sb.tmp.path().join("h.sqlite");
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
        let args = [&["selftest.tiny", "--include-selftest", "--db", db.to_str().unwrap()], extra, FAST].concat();
        let out = sb.command(&args).stdout(Stdio::from(full)).output().unwrap();
        let err = text(&out.stderr);
        // The terminal's failure is said, once the records are complete.
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains("writing to stdout: No space left on device") && err.contains("records are complete"), "{extra:?}: {err}");
        let run = sb.run_json();
        assert!(run["finished_utc"].is_string() && run["complete"] == true, "{extra:?}: {run}");
        assert!(sb.run_dir().join("report.md").is_file() && sb.run_dir().join("report.html").is_file(), "{extra:?}");
        let list = ok(&pb(sb.tmp.path(), &["history", "--db", db.to_str().unwrap(), "list"]));
        assert!(list.contains(run["id"].as_str().unwrap()), "{extra:?}: the run is in the history: {list}");
    }
}

/// The writing end of a pipe whose reading end is closed, as `| head -2`
/// leaves it once head has its lines: every write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

/// `proofbench ARGS` in `dir` with stdout and/or stderr closed; the exit
/// code, which a panic would make 101.
fn closed(dir: &Path, args: &[&str], stdout: bool, stderr: bool) -> Option<i32> {
    let mut c = Command::new(bin());
    c.args(args).current_dir(dir).stdin(Stdio::null());
    c.stdout(if stdout { closed_pipe() } else { Stdio::null() });
    c.stderr(if stderr { closed_pipe() } else { Stdio::null() });
    c.status().expect("proofbench runs").code()
}

#[test]
fn a_closed_stderr_or_stdout_panics_no_command_and_a_run_still_finishes_its_record() {
    // A run whose progress lines, rows and summary meet closed pipes, as
    // `run ... 2>&1 | head -2` and quitting `less` early leave them.
    for (stdout, stderr) in [(false, true), (true, true), (true, false)] {
        let sb = Sandbox::new();
        let db = sb.tmp.path().join("h.sqlite");
        let run_dir = sb.run_dir();
        let args = [&["run", "--run-dir", run_dir.to_str().unwrap()][..], &["os.syscall", "--db", db.to_str().unwrap()], FAST].concat();
        let code = closed(sb.tmp.path(), &args, stdout, stderr);
        let which = format!("stdout closed: {stdout}, stderr closed: {stderr}");
        // A reader that went away is no failure of the run (as `| head`
        // expects); nothing panics.
        assert_eq!(code, Some(0), "{which}");
        let run = sb.run_json();
        assert!(run["finished_utc"].is_string() && run["complete"] == true, "{which}: {run}");
        assert!(sb.run_dir().join("report.md").is_file() && sb.run_dir().join("report.html").is_file(), "{which}");
        let list = ok(&pb(sb.tmp.path(), &["history", "--db", db.to_str().unwrap(), "list"]));
        assert!(list.contains(run["id"].as_str().unwrap()), "{which}: the run is in the history: {list}");
    }

    // Every other command, its output and its errors lost alike.
    let sb = Sandbox::new();
    tiny_run(&sb);
    let (dir, db) = (sb.run_dir().display().to_string(), sb.tmp.path().join("history.sqlite").display().to_string());
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", &dir],
        vec!["report", &dir, "--export", "csv"],
        vec!["compare", &dir, &dir],
        vec!["fleet", &dir, &dir],
        vec!["history", "--db", &db, "list"],
        vec!["history", "--db", &db, "show", "selftest.tiny"],
        vec!["history", "--db", &db, "regressions"],
        vec!["check-claims", "no-such-claims.toml", &dir],
        vec!["env"],
        vec!["env", "--json"],
        vec!["list"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["slurm", "submit", "--help"],
        vec!["noise", "selftest.tiny", "--include-selftest", "--trials", "2", "--runs", "3", "--warmup", "1", "--settle", "0"],
        vec!["--help"],
        vec!["run", "no.such.workload"],
    ];
    for args in &commands {
        for (stdout, stderr) in [(true, true), (false, true), (true, false)] {
            let code = closed(sb.tmp.path(), args, stdout, stderr);
            assert!(code.is_some_and(|c| c != 101), "{args:?} (stdout closed: {stdout}, stderr closed: {stderr}): exit {code:?}");
        }
    }
}
