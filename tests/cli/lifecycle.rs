//! What a run leaves behind, and what it holds while it runs: a killed
//! parent takes its workers, their children and a command's background
//! processes with it; a command's background and `setsid` children never
//! outlive the sample, nor hold it up; a command's output is kept in bounded
//! memory; a scratch directory that cannot be made costs only the rows that
//! need files; scratch directories are private, unpredictable, and the next
//! run removes the ones a dead run left (and nothing else).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{FAST, Sandbox, bin, leftovers, row, text};

/// A live process as `/proc/PID/stat` shows it.
struct Proc {
    pid: i32,
    ppid: i32,
    session: i32,
}

/// Every process but zombies (a zombie runs nothing; its parent may not
/// have reaped it yet).
fn processes() -> Vec<Proc> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The command name may hold spaces and parentheses: the fields start after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 4 || f[0] == "Z" || f[0] == "X" {
            continue;
        }
        out.push(Proc { pid, ppid: f[1].parse().unwrap(), session: f[3].parse().unwrap() });
    }
    out
}

/// The live processes of session `sid`.
fn session_members(sid: i32) -> Vec<i32> {
    processes().into_iter().filter(|p| p.session == sid).map(|p| p.pid).collect()
}

/// The live processes whose environment holds `PB_MARK=<mark>` (what a
/// command workload's `env` gives the command and everything it starts).
fn marked(mark: &str) -> Vec<i32> {
    let want = format!("PB_MARK={mark}");
    processes()
        .into_iter()
        .filter(|p| std::fs::read(format!("/proc/{}/environ", p.pid)).is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes())))
        .map(|p| p.pid)
        .collect()
}

/// Kills `pids` (what a test found left behind, so that a failing test
/// does not leave them running) and returns them.
fn reap(pids: Vec<i32>) -> Vec<i32> {
    for &p in &pids {
        // SAFETY: sending a signal; no memory is involved.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    pids
}

/// A mark no other test or run uses.
fn unique_mark(sb: &Sandbox) -> String {
    sb.tmp.path().file_name().unwrap().to_string_lossy().into_owned()
}

/// `proofbench run ARGS` in a session of its own (its pid is the session's
/// id), output discarded.
fn start_in_own_session(sb: &Sandbox, args: &[&str]) -> Child {
    let mut c = sb.command(args);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; the closure touches no memory of the parent.
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    c.spawn().expect("proofbench starts")
}

/// Starts `args` in a session of its own, waits until `ready` holds for
/// the processes of the session (at most 60 s), kills the parent with
/// SIGKILL, waits a second, and returns what is left of the session.
fn kill_parent_when(sb: &Sandbox, args: &[&str], ready: impl Fn(&[Proc], i32) -> bool) -> Vec<i32> {
    let mut child = start_in_own_session(sb, args);
    let sid = child.id() as i32;
    let t = Instant::now();
    loop {
        let procs: Vec<Proc> = processes().into_iter().filter(|p| p.session == sid).collect();
        if ready(&procs, sid) {
            break;
        }
        if t.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            reap(session_members(sid));
            panic!("the run never reached the state to kill it in");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    reap(session_members(sid))
}

/// How deep `pid` is below `root` (1: a child), if it is below it.
fn depth(procs: &[Proc], root: i32, pid: i32) -> Option<usize> {
    let mut at = pid;
    for d in 1..16 {
        let p = procs.iter().find(|p| p.pid == at)?;
        if p.ppid == root {
            return Some(d);
        }
        at = p.ppid;
    }
    None
}

fn write(sb: &Sandbox, name: &str, body: &str) -> PathBuf {
    let p = sb.tmp.path().join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// A command workload file: one shell command, its processes marked with
/// `PB_MARK=mark`.
fn shell_workload(sb: &Sandbox, mark: &str, command: &str, extra: &str) -> PathBuf {
    let body = format!(
        r#"
[[workload]]
id = "life.cmd"
summary = "A shell command"
unit = "ns"
direction = "lower-is-better"
shell = true
command = '''{command}'''
env = {{ PB_MARK = "{mark}" }}
{extra}
"#
    );
    write(sb, "life.toml", &body)
}

#[test]
fn a_parent_killed_with_sigkill_leaves_no_process_of_its_session_after_a_second() {
    // Worker processes forked by the workload (cpu.primes at 2 workers).
    let sb = Sandbox::new();
    let args = ["cpu.primes", "--workers", "2", "-p", "range=3000000", "--trials", "1", "--runs", "1000", "--timeout", "120s"];
    let left =
        kill_parent_when(&sb, &args, |procs, sid| procs.iter().filter(|p| depth(procs, sid, p.pid).is_some_and(|d| d >= 2)).count() >= 2);
    assert_eq!(left, Vec::<i32>::new(), "cpu.primes: processes of the killed run's session are still alive");

    // A command, its background child and its foreground one.
    let sb = Sandbox::new();
    let mark = unique_mark(&sb);
    let file = shell_workload(&sb, &mark, "sleep 1001 & sleep 1002; echo x", "");
    let args = ["--workloads", file.to_str().unwrap(), "life", "--trials", "1", "--runs", "3", "--timeout", "120s"];
    let m = mark.clone();
    let left = kill_parent_when(&sb, &args, move |_, _| marked(&m).len() >= 3);
    assert_eq!(left, Vec::<i32>::new(), "a command: processes of the killed run's session are still alive");
    assert_eq!(reap(marked(&mark)), Vec::<i32>::new(), "the command's processes outlived the run");
}

#[test]
fn a_background_child_holding_the_output_open_does_not_hold_up_the_sample_and_is_killed() {
    let sb = Sandbox::new();
    let mark = unique_mark(&sb);
    let file = shell_workload(&sb, &mark, "sleep 1001 & echo x", "[workload.verify]\nmust_match = ['x']");
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "life", "--timeout", "20s"], FAST].concat());
    let left = reap(marked(&mark));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = row(&sb.rows(), "life.cmd").clone();
    assert_eq!(r["status"], "ok", "{r}");
    let said = r["details"]["left_running"].as_str().unwrap_or_default();
    // The background job: `sleep (pid N)`, or `sh (pid N)` when it was killed before its exec.
    assert!(said.starts_with("killed what the command left running") && said.contains(" (pid "), "the row says what was killed: {r}");
    assert_eq!(left, Vec::<i32>::new(), "the background child outlived the run");
}

#[test]
fn a_service_prepare_starts_serves_every_sample_and_is_killed_when_the_workload_ends() {
    let sb = Sandbox::new();
    let mark = unique_mark(&sb);
    let extra = "prepare = 'sleep 1004 >/dev/null 2>&1 & echo $! > service.pid'";
    let file = shell_workload(&sb, &mark, "kill -0 $(cat service.pid)", extra);
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "life", "--timeout", "20s"], FAST].concat());
    let left = reap(marked(&mark));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = row(&sb.rows(), "life.cmd").clone();
    assert_eq!(r["status"], "ok", "the service was up for every sample: {r}");
    assert!(r["details"]["left_running"].is_null(), "a sample killed nothing: {r}");
    assert_eq!(left, Vec::<i32>::new(), "the service outlived the run");
}

#[test]
fn a_setsid_child_of_a_command_does_not_outlive_the_sample() {
    let sb = Sandbox::new();
    let mark = unique_mark(&sb);
    let file = shell_workload(&sb, &mark, "setsid sleep 1003 >/dev/null 2>&1 </dev/null & echo x", "");
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "life", "--timeout", "20s"], FAST].concat());
    let left = reap(marked(&mark));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(row(&sb.rows(), "life.cmd")["status"], "ok");
    assert_eq!(left, Vec::<i32>::new(), "the setsid child outlived the run");
}

#[test]
fn a_command_printing_tens_of_megabytes_is_matched_in_bounded_memory_with_a_short_tail() {
    let sb = Sandbox::new();
    let mark = unique_mark(&sb);
    // 48 MB on one line, then the result lines.
    let cmd = r"head -c 48000000 /dev/zero | tr '\0' a; echo; echo value=7; echo done";
    let file = shell_workload(
        &sb,
        &mark,
        cmd,
        "metric = { regex = 'value=(\\d+)' }\n[workload.verify]\nmust_match = ['(?m)^done$']\nmust_not_match = ['panic']",
    );
    let file_text = std::fs::read_to_string(&file).unwrap().replace("unit = \"ns\"", "unit = \"cycles\"");
    std::fs::write(&file, file_text).unwrap();
    let out = sb.run(&["--workloads", file.to_str().unwrap(), "life", "--trials", "1", "--runs", "1", "--warmup", "0", "--settle", "0"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = row(&sb.rows(), "life.cmd").clone();
    assert_eq!(r["status"], "ok", "{}", r["reason"]);
    assert_eq!(r["stats"]["work"]["median"], 7.0);
    let tail = r["details"]["output_tail"].as_str().unwrap();
    assert!(tail.len() <= 4096 && tail.ends_with("value=7\ndone"), "a tail of at most 4 KiB: {} bytes", tail.len());
    let line = std::fs::metadata(sb.run_dir().join("rows.jsonl")).unwrap().len();
    assert!(line < 256 * 1024, "rows.jsonl holds {line} bytes");
    let rss_kib = r["trials"][0]["process"]["rusage"]["max_rss_kib"].as_u64().unwrap();
    assert!(rss_kib < 40 * 1024, "the worker's peak resident set was {rss_kib} KiB for 48 MB of output");
}

#[test]
fn a_path_override_that_hides_sh_names_sh_and_that_path() {
    let sb = Sandbox::new();
    let mark = unique_mark(&sb);
    let file = shell_workload(&sb, &mark, "echo hello", "");
    let text_ = std::fs::read_to_string(&file).unwrap().replace("PB_MARK =", "PATH = \"/no/such/bin\", PB_MARK =");
    std::fs::write(&file, text_).unwrap();
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "life"], FAST].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r = row(&sb.rows(), "life.cmd").clone();
    let reason = r["reason"].as_str().unwrap();
    assert_eq!(r["status"], "failed");
    assert!(reason.contains("`sh`") && reason.contains("PATH=/no/such/bin"), "{reason}");
}

/// A directory in which this process cannot create anything: a private
/// directory made read-only, or, when this process may write there anyway
/// (root), `/sys`, where nobody can.
fn unwritable_dir() -> (Option<tempfile::TempDir>, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::create_dir(tmp.path().join("probe")).is_err() {
        let p = tmp.path().to_path_buf();
        return (Some(tmp), p);
    }
    (None, PathBuf::from("/sys"))
}

#[test]
fn an_unwritable_io_dir_skips_only_the_rows_that_need_files_and_the_run_finishes() {
    let (_keep, dir) = unwritable_dir();
    let sb = Sandbox::new();
    let out = sb.run(&[&["os.syscall", "os.stat", "--io-dir", dir.to_str().unwrap()], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(row(&rows, "os.syscall")["status"], "ok");
    let stat = row(&rows, "os.stat");
    let reason = stat["reason"].as_str().unwrap();
    assert_eq!(stat["status"], "skipped", "{stat}");
    assert!(reason.contains(&format!("--io-dir {}", dir.display())), "the reason names the directory: {reason}");
    let run = sb.run_json();
    assert!(run["finished_utc"].is_string() && run["complete"] == true, "{run}");
}

#[test]
fn a_missing_tmpdir_is_named_as_tmpdir_and_skips_only_the_rows_that_need_files() {
    let sb = Sandbox::new();
    let missing = sb.tmp.path().join("no-such-tmp");
    let out = sb.command(&[&["os.syscall", "os.stat"], FAST].concat()).env("TMPDIR", &missing).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let blamed = format!("--io-dir {}", missing.display());
    assert!(!err.contains(&blamed) && err.contains(&format!("TMPDIR={}", missing.display())), "a TMPDIR problem is named as one: {err}");
    let rows = sb.rows();
    assert_eq!(row(&rows, "os.syscall")["status"], "ok");
    let reason = row(&rows, "os.stat")["reason"].as_str().unwrap().to_string();
    assert!(reason.contains(&format!("TMPDIR={}", missing.display())), "{reason}");
}

#[test]
fn a_leftover_directory_with_the_run_s_own_scratch_name_does_not_stop_it() {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = ["run", "--run-dir"].iter().map(|s| s.to_string()).collect();
    args.push(sb.run_dir().display().to_string());
    args.extend(["os.syscall", "--io-dir", io.path().to_str().unwrap()].iter().map(|s| s.to_string()));
    args.extend(FAST.iter().map(|s| s.to_string()));
    // The name the run's first scratch directory had: made before the run, under its pid.
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"dir="$1"; shift; mkdir "$dir/proofbench-$$-000-os.syscall-t0" && exec "$@""#)
        .arg("sh")
        .arg(io.path())
        .arg(bin())
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(sb.rows().iter().all(|r| r["status"] == "ok"));
    let left = leftovers(io.path());
    assert_eq!(left.len(), 1, "only the planted directory remains: {left:?}");
    assert!(left[0].ends_with("-000-os.syscall-t0"), "{left:?}");
}

#[test]
fn scratch_directories_are_private_and_their_names_unpredictable() {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    let mut child = sb
        .command(&["selftest.hang", "--include-selftest", "--trials", "1", "--timeout", "3s", "--io-dir", io.path().to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let prefix = format!("proofbench-{}-000-selftest.hang-t0", child.id());
    let mut seen = None;
    while child.try_wait().unwrap().is_none() {
        if let Some(name) = leftovers(io.path()).into_iter().next() {
            let mode = std::fs::symlink_metadata(io.path().join(&name)).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
            seen = Some((name, mode));
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.wait();
    let (name, mode) = seen.expect("the scratch directory was seen");
    assert!(name.starts_with(&prefix) && name.len() >= prefix.len() + 7, "a random part after the row's name: {name}");
    assert_eq!(mode, 0o700, "{name}");
}

/// A pid no process has: a child's, once it has been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// Starts a run of a hanging cell with its scratch directories under `io`,
/// waits for its scratch directory and kills the run with SIGKILL: what a
/// killed run leaves. Returns the directory's name.
fn scratch_of_a_killed_run(io: &std::path::Path) -> String {
    let sb = Sandbox::new();
    let io_arg = io.to_str().unwrap();
    let args = ["selftest.hang", "--include-selftest", "--trials", "1", "--timeout", "60s", "--io-dir", io_arg, "--no-history"];
    let mut child = sb.command(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let prefix = format!("proofbench-{}-", child.id());
    let t = Instant::now();
    let name = loop {
        let found = leftovers(io).into_iter().find(|n| n.starts_with(&prefix) && io.join(n).join(".proofbench-scratch").is_file());
        if let Some(n) = found {
            break n;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the run made no scratch directory");
        std::thread::sleep(Duration::from_millis(10));
    };
    let runner = child.id() as i32;
    child.kill().unwrap();
    child.wait().unwrap();
    // Its worker dies with it; once no process of the run is left, none holds the directory.
    let t = Instant::now();
    while processes().iter().any(|p| p.ppid == runner) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    name
}

#[test]
fn the_next_run_removes_the_scratch_directories_of_dead_runs_and_nothing_else() {
    let io = tempfile::tempdir().unwrap();
    let make = |name: &str| {
        let d = io.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(d.join("notes.txt"), b"x").unwrap();
        name.to_string()
    };
    let dead = dead_pid();
    let kept = [
        // A user's directories whose names look like a scratch directory's.
        make("proofbench-2024-results"),
        make("proofbench-4000000-my-build"),
        make(&format!("proofbench-{dead}-000-os.stat-t0-ab3de9xk2m1q")),
        make(&format!("proofbench-{dead}-003-io.randread-t2")),
        make(&format!("proofbench{dead}-000-os.stat-t0")),
        make(&format!("other-{dead}-000-os.stat-t0")),
    ];
    // A file with a scratch directory's name.
    std::fs::write(io.path().join(format!("proofbench-{dead}-001-os.stat-t0")), b"x").unwrap();
    // A killed run's directory that a live run in another pid namespace holds (its lock).
    let locked = scratch_of_a_killed_run(io.path());
    let held = std::fs::File::open(io.path().join(&locked)).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let stale = scratch_of_a_killed_run(io.path());
    assert!(leftovers(io.path()).contains(&stale), "a killed run leaves its scratch directory");
    let sb = Sandbox::new();
    let out = sb.run(&[&["os.file-create", "--io-dir", io.path().to_str().unwrap()], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let mut left = leftovers(io.path());
    left.sort();
    assert!(!left.contains(&stale), "{stale} (a dead run's) was left: {left:?}");
    let note = format!(
        "proofbench: note: cleaned up {}, the scratch directory of an earlier run that is no longer running",
        io.path().join(&stale).display()
    );
    assert!(err.contains(&note), "{err}");
    for k in &kept {
        assert!(left.contains(k) && io.path().join(k).join("notes.txt").is_file(), "{k} was removed or emptied: {left:?}");
        assert!(!err.contains(&format!("cleaned up {}", io.path().join(k).display())), "{err}");
    }
    assert!(left.contains(&format!("proofbench-{dead}-001-os.stat-t0")), "a file was removed: {left:?}");
    assert!(left.contains(&locked), "a directory a live run holds was removed: {left:?}");
    // Only the one with a scratch directory's whole name and no marker is named.
    assert!(err.contains("left alone 1 directory named like a scratch directory but without a proofbench marker"), "{err}");
    assert!(err.contains("-000-os.stat-t0-ab3de9xk2m1q"), "{err}");
    drop(held);
    std::fs::remove_dir_all(io.path().join(&locked)).unwrap();
}
