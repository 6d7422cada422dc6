//! The history database is proofbench's alone, and reading it writes
//! nothing: `--db` at another program's SQLite file (or a planted
//! `history.sqlite` symlink) is refused and the file left as it was, byte for
//! byte, with its journal mode and no side file made; the readers (`history
//! list|show|regressions`, `compare --db`, `check-claims h:N`) read a
//! database this user cannot write, one on a read-only mount, one of an older
//! schema (without migrating it) and one another connection holds a write
//! lock on.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bin, run_dirs, text};

/// A stored run (cpu.primes and os.syscall) to import: a history in one
/// command, without measuring.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runs/before-trials");

/// proofbench's `application_id` (docs/RECORD-FORMAT.md).
const APPLICATION_ID: u32 = 0x7062_6873;

/// `proofbench ARGS` in `dir`, as `user` (with runuser) or as this user.
fn pb_as(user: Option<&str>, dir: &Path, args: &[&str]) -> Output {
    let mut c = match user {
        Some(u) => {
            let mut c = Command::new("runuser");
            c.args(["-u", u, "--"]).arg(bin());
            c
        }
        None => Command::new(bin()),
    };
    c.args(args).current_dir(dir).output().expect("proofbench runs")
}

fn pb(dir: &Path, args: &[&str]) -> Output {
    pb_as(None, dir, args)
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}\nstdout: {}", text(&out.stderr), text(&out.stdout));
    text(&out.stdout)
}

/// A history database at `db` holding the fixture run as h:1.
fn history_at(db: &Path) {
    let out = pb(db.parent().unwrap(), &["history", "--db", db.to_str().unwrap(), "import", FIXTURE]);
    assert!(ok(&out).contains("h:1 imported"), "{}", text(&out.stdout));
}

/// A short run of selftest.noisy into `out` (its history beside it unless
/// `db` names one); returns its output.
fn short_run(dir: &Path, out: &str, db: Option<&Path>) -> Output {
    let mut args: Vec<String> =
        ["run", "selftest.noisy", "--include-selftest", "--runs", "3", "--warmup", "0", "--settle", "0", "-p", "base_us=200", "--out", out]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if let Some(db) = db {
        args.extend(["--db".to_string(), db.display().to_string()]);
    }
    Command::new(bin()).args(&args).current_dir(dir).output().expect("proofbench runs")
}

/// A run that could not record itself still finished its records and said why.
fn assert_kept_but_not_recorded(out: &Output, dir: &Path, why: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("proofbench: warning: the run is kept in") && stderr.contains(why), "{stderr}");
    let runs = run_dirs(dir);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(runs[0].join("run.json")).unwrap()).unwrap();
    assert!(run["finished_utc"].is_string(), "the run has its finish record");
    assert!(runs[0].join("report.md").is_file());
}

/// FNV-1a of `bytes`: what a file was, to compare with what it is.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// What a database file is: its bytes (hashed), the journal mode its header
/// says, and the side files SQLite keeps beside it.
#[derive(Debug, PartialEq)]
struct State {
    hash: u64,
    len: usize,
    journal: &'static str,
    side_files: Vec<String>,
}

fn state(db: &Path) -> State {
    let bytes = std::fs::read(db).unwrap();
    let journal = match bytes.get(18..20) {
        Some([1, 1]) => "rollback",
        Some([2, 2]) => "wal",
        _ => "not SQLite",
    };
    let side_files =
        ["-wal", "-shm", "-journal"].iter().map(|s| format!("{}{s}", db.display())).filter(|p| Path::new(p).exists()).collect();
    State { hash: fnv64(&bytes), len: bytes.len(), journal, side_files }
}

/// The big-endian 32-bit field of a SQLite header at `offset` (60:
/// user_version, 68: application_id).
fn header_field(db: &Path, offset: usize) -> u32 {
    let bytes = std::fs::read(db).unwrap();
    u32::from_be_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

/// Another program's SQLite database at `path`, made by `sql`.
fn sqlite_of_another_program(path: &Path, sql: &str) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(sql).unwrap();
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The uid of `nobody` (65534 on Linux distributions).
const NOBODY: u32 = 65534;

#[test]
fn another_programs_sqlite_file_given_as_db_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cases = [
        ("rollback.sqlite", "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('a');"),
        ("clash.sqlite", "CREATE TABLE runs (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO runs (note) VALUES ('mine');"),
        ("wal.sqlite", "PRAGMA journal_mode=WAL; CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x');"),
        ("tagged.sqlite", "PRAGMA application_id = 1234;"),
    ];
    let mut files: Vec<PathBuf> = Vec::new();
    for (name, sql) in cases {
        sqlite_of_another_program(&dir.join(name), sql);
        files.push(dir.join(name));
    }
    std::fs::write(dir.join("notes.txt"), "not a database\n").unwrap();
    files.push(dir.join("notes.txt"));
    assert_eq!(state(&dir.join("wal.sqlite")).journal, "wal");
    assert_eq!(state(&dir.join("rollback.sqlite")).journal, "rollback");
    for db in &files {
        let before = state(db);
        assert!(before.side_files.is_empty(), "{before:?}");
        for args in [&["import", FIXTURE][..], &["list"], &["regressions"], &["changes"]] {
            let out = pb(dir, &[&["history", "--db", db.to_str().unwrap()][..], args].concat());
            let e = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{} {args:?}: {e}", db.display());
            assert!(e.starts_with("proofbench: error: ") && e.lines().count() == 1, "{e}");
            assert!(e.contains(&db.display().to_string()) && e.contains("not a proofbench history database"), "{e}");
            assert_eq!(state(db), before, "{} {args:?} changed it", db.display());
        }
        let out = pb(dir, &["compare", "h:1", "h:1", "--db", db.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert_eq!(state(db), before);
    }
    // A run told to record into one finishes its records and says why it did not.
    let db = dir.join("clash.sqlite");
    let before = state(&db);
    let out = short_run(dir, "out", Some(&db));
    assert_kept_but_not_recorded(&out, &dir.join("out"), "not a proofbench history database");
    assert_eq!(state(&db), before);
}

#[test]
fn a_planted_history_symlink_is_not_followed_into_someone_elses_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A link to another program's database, where the run records by default.
    let victim = dir.join("victim.sqlite");
    sqlite_of_another_program(
        &victim,
        "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT); INSERT INTO accounts (owner) VALUES ('x');",
    );
    let before = state(&victim);
    std::fs::create_dir(dir.join("results")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("results/history.sqlite")).unwrap();
    assert_kept_but_not_recorded(&short_run(dir, "results", None), &dir.join("results"), "not a proofbench history database");
    assert_eq!(state(&victim), before);

    if !is_root() {
        println!("skipped: links owned by another user need root to make (lchown)");
        return;
    }
    // Links another user planted, to a proofbench database and to nothing:
    // neither is followed.
    let theirs = dir.join("theirs.sqlite");
    history_at(&theirs);
    let before = state(&theirs);
    for (out, target) in [("planted", theirs.clone()), ("dangling", dir.join("made-through-a-link.sqlite"))] {
        std::fs::create_dir(dir.join(out)).unwrap();
        let link = dir.join(out).join("history.sqlite");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
        assert_kept_but_not_recorded(&short_run(dir, out, None), &dir.join(out), "a symbolic link owned by another user");
    }
    assert_eq!(state(&theirs), before);
    assert!(!dir.join("made-through-a-link.sqlite").exists(), "a dangling planted link made its target");
}

#[test]
fn a_database_made_before_proofbench_marked_its_own_is_read_as_it_is_and_marked_by_a_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = dir.join("h.sqlite");
    history_at(&db);
    // What a proofbench before application_id left: no id, no user_version.
    sqlite_of_another_program(&db, "PRAGMA application_id = 0; PRAGMA user_version = 0;");
    assert_eq!(header_field(&db, 68), 0);
    let bytes = std::fs::read(&db).unwrap();
    let list = ok(&pb(dir, &["history", "--db", db.to_str().unwrap(), "list"]));
    assert!(list.contains("\nh:1 ") && list.contains("\n1 run in "), "{list}");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "a reader wrote to the database");
    let again = ok(&pb(dir, &["history", "--db", db.to_str().unwrap(), "import", FIXTURE]));
    assert!(again.contains("h:1 already held"), "{again}");
    assert_eq!(header_field(&db, 68), APPLICATION_ID, "the writer marks the database as proofbench's");
    assert_eq!(header_field(&db, 60), 2, "user_version is the schema version");

    // An empty file is a new database.
    let empty = dir.join("empty.sqlite");
    std::fs::write(&empty, "").unwrap();
    assert!(ok(&pb(dir, &["history", "--db", empty.to_str().unwrap(), "list"])).contains("0 runs in"));
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "a reader wrote to the database");
    ok(&pb(dir, &["history", "--db", empty.to_str().unwrap(), "import", FIXTURE]));
    assert_eq!(header_field(&empty, 68), APPLICATION_ID);
}

#[test]
fn a_database_of_an_older_schema_is_read_without_being_migrated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = dir.join("h.sqlite");
    history_at(&db);
    sqlite_of_another_program(
        &db,
        "DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (1); PRAGMA application_id = 0; PRAGMA user_version = 0;",
    );
    let bytes = std::fs::read(&db).unwrap();
    let out = pb(dir, &["history", "--db", db.to_str().unwrap(), "list"]);
    let list = ok(&out);
    assert!(list.contains("\nh:1 ") && list.contains("\n1 run in "), "{list}");
    assert!(text(&out.stderr).contains("schema version 1"), "the reader says the database is of an older schema: {}", text(&out.stderr));
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "the reader migrated the database");
    ok(&pb(dir, &["history", "--db", db.to_str().unwrap(), "import", FIXTURE]));
    assert_eq!(header_field(&db, 60), 2, "a writer migrates it");
}

/// Puts back the modes a test took away, so the temporary directory can go.
struct Modes(Vec<(PathBuf, u32)>);

impl Drop for Modes {
    fn drop(&mut self) {
        for (p, mode) in &self.0 {
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(*mode));
        }
    }
}

#[test]
fn every_reader_reads_a_history_this_user_cannot_write() {
    // As root, file modes do not stop this user: the readers run as nobody.
    let user = match (is_root(), Path::new("/usr/sbin/runuser").exists() || Path::new("/sbin/runuser").exists()) {
        (true, true) => Some("nobody"),
        (true, false) => {
            println!("skipped: running as root without runuser, so no user here lacks write access");
            return;
        }
        (false, _) => None,
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let others = dir.join("others");
    std::fs::create_dir(&others).unwrap();
    let db = others.join("history.sqlite");
    history_at(&db);
    let claims = dir.join("claims.toml");
    std::fs::write(&claims, "[[claim]]\nworkload = \"cpu.primes\"\nmin = 1\n").unwrap();
    let plots = dir.join("plots");
    std::fs::create_dir(&plots).unwrap();
    let _modes = Modes(vec![(others.clone(), 0o755), (dir.to_path_buf(), 0o700)]);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&others, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&plots, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = state(&db);
    let d = db.to_str().unwrap();
    let plot = plots.join("trend.svg");
    let readers: [Vec<&str>; 7] = [
        vec!["history", "--db", d, "list"],
        vec!["history", "--db", d, "show", "cpu.primes", "--plot", plot.to_str().unwrap()],
        vec!["history", "--db", d, "show", "cpu.primes"],
        vec!["history", "--db", d, "regressions"],
        vec!["compare", "h:1", "h:1", "--db", d],
        vec!["check-claims", claims.to_str().unwrap(), "h:1", "--db", d],
        vec!["history", "--db", d, "changes"],
    ];
    for args in &readers {
        let out = pb_as(user, dir, args);
        assert!(!ok(&out).trim().is_empty(), "{args:?} printed nothing");
        assert_eq!(state(&db), before, "{args:?}");
    }
    assert!(plot.is_file(), "the plot asked for is written");
    // Without --plot no plot is written anywhere (beside the database or
    // in the current directory), and none is missed.
    let out = pb_as(user, dir, &readers[2]);
    assert!(!text(&out.stderr).contains("plot"), "{}", text(&out.stderr));
    let held: Vec<String> = std::fs::read_dir(&others).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(held, vec!["history.sqlite".to_string()], "a reader made files beside the database");
}

/// Unmounts a filesystem a test mounted.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_history_on_a_read_only_mount_is_read() {
    if !is_root() {
        println!("skipped: mounting a read-only filesystem needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=16m", "proofbench-test"]).arg(&mnt).stderr(Stdio::null()).status();
    if !mounted.is_ok_and(|s| s.success()) {
        println!("skipped: this machine does not let the test mount a tmpfs");
        return;
    }
    let _mounted = Mounted(mnt.clone());
    let db = mnt.join("history.sqlite");
    history_at(&db);
    assert!(Command::new("mount").args(["-o", "remount,ro"]).arg(&mnt).status().unwrap().success());
    let d = db.to_str().unwrap();
    assert!(ok(&pb(dir, &["history", "--db", d, "list"])).contains("\n1 run in "));
    assert!(ok(&pb(dir, &["compare", "h:1", "h:1", "--db", d])).contains("cpu.primes"));
}

#[test]
fn history_list_reads_while_another_connection_holds_the_write_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = dir.join("h.sqlite");
    history_at(&db);
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE; INSERT INTO schema_version (version) VALUES (1000);").unwrap();
    let mut list = Command::new(bin())
        .args(["history", "--db", db.to_str().unwrap(), "list"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Not a timing: a reader that waited for the lock would wait out the
    // 60 s busy timeout; half of it is the bound.
    let t = Instant::now();
    while list.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if list.try_wait().unwrap().is_none() {
        list.kill().unwrap();
        list.wait().unwrap();
        panic!("history list waited for another connection's write lock");
    }
    let out = list.wait_with_output().unwrap();
    let stdout = ok(&out);
    assert!(stdout.contains("\nh:1 ") && stdout.contains("\n1 run in "), "{stdout}");
    assert!(!text(&out.stderr).contains("locked"), "{}", text(&out.stderr));
    writer.execute_batch("ROLLBACK").unwrap();
}
