//! `run --launcher`: the same plan through a command prefix. A wrapper
//! launcher gives the same rows as a local run; the envelope, the planning
//! topology and the workers come from the launched side (another hostname,
//! another CPU set, another user or network namespace); a crash or hang
//! through a launcher gets the local statuses; bad launchers are refused
//! before anything is written; `--hosts` stores one run per host.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{FAST, FAST_TRIALS, SMALL_PRIMES, Sandbox, bin, row, rows_of, run_dirs, text};

/// A launcher script in a directory every user may read: it appends one
/// line per invocation to `log` (its uid, network namespace, allowed CPUs
/// and arguments) and execs its arguments. With `host`, its first argument
/// is a host name, logged and dropped.
struct Wrapper {
    dir: tempfile::TempDir,
}

impl Wrapper {
    fn new(host: bool) -> Wrapper {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let take_host = if host { "host=\"$1\"; shift\n" } else { "host=-\n" };
        let script = format!(
            "#!/bin/sh\n{take_host}cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)\n\
             echo \"host=$host uid=$(id -u) net=$(readlink /proc/$$/ns/net) cpus=$cpus :: $*\" >> {log}\nexec \"$@\"\n",
            log = dir.path().join("log").display()
        );
        let w = Wrapper { dir };
        std::fs::write(w.script(), script).unwrap();
        std::fs::set_permissions(w.script(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(w.log_path(), "").unwrap();
        // Writable by a launched side that runs as another user.
        std::fs::set_permissions(w.log_path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        w
    }

    fn script(&self) -> PathBuf {
        self.dir.path().join("launch.sh")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    fn path(&self) -> String {
        self.script().display().to_string()
    }

    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.log_path()).unwrap().lines().map(str::to_string).collect()
    }

    /// The log lines of one subcommand (`env --json`, `worker`...).
    fn calls(&self, what: &str) -> Vec<String> {
        self.log().into_iter().filter(|l| l.ends_with(&format!(" {what}"))).collect()
    }
}

/// This process's network namespace, as the wrapper logs it.
fn own_net() -> String {
    std::fs::read_link("/proc/self/ns/net").unwrap().display().to_string()
}

/// This process's allowed CPUs, as /proc/self/status lists them.
fn own_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string()
}

/// This process's user id.
fn nix_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// Whether `cmd` runs and exits 0 here (a capability probe for a skip).
fn works(cmd: &[&str]) -> bool {
    Command::new(cmd[0]).args(&cmd[1..]).output().is_ok_and(|o| o.status.success())
}

/// (row id, status) of every row.
fn ids_and_statuses(rows: &[Value]) -> Vec<(String, String)> {
    rows.iter().map(|r| (r["cell"]["row_id"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string())).collect()
}

const TINY: &[&str] = &["selftest.tiny", "cpu.primes", "--include-selftest", "--workers", "1,2"];

#[test]
fn a_wrapper_launcher_gives_the_rows_of_a_local_run_and_records_the_launcher() {
    let local = Sandbox::new();
    let out = local.run(&[TINY, FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let w = Wrapper::new(false);
    let sb = Sandbox::new();
    let out = sb.run(&[TINY, FAST, SMALL_PRIMES, &["--launcher", &w.path()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(ids_and_statuses(&rows), ids_and_statuses(&local.rows()));
    assert!(rows.iter().all(|r| r["status"] == "ok"));

    // Two processes through the wrapper, whatever the plan: the envelope
    // probe, and the launched side that runs every trial of every cell.
    let exe = bin().display().to_string();
    let here = format!("host=- uid={} net={} cpus={}", nix_uid(), own_net(), own_cpus());
    assert_eq!(w.log(), [format!("{here} :: {exe} env --json"), format!("{here} :: {exe} remote-run")], "{:#?}", w.log());
    assert!(rows.len() * FAST_TRIALS > 2, "the plan has more trials than the launcher had calls");

    let run = sb.run_json();
    assert_eq!(run["launcher"]["template"], w.path());
    assert_eq!(run["launcher"]["prefix"], serde_json::json!([w.path()]));
    assert_eq!(run["launcher"]["remote_exe"], exe);
    assert!(run["launcher"]["host"].is_null());
    assert!(run["envelope"]["load_avg_after"].is_array(), "read on the launched side: {}", run["envelope"]["load_avg_after"]);
    assert_eq!(run["complete"], true);
    assert!(local.run_json().get("launcher").is_none(), "a local run has no launcher record");
    assert!(text(&out.stderr).contains(&format!("through `{}`", w.path())), "{}", text(&out.stderr));
}

#[test]
fn the_envelope_is_the_launched_sides_hostname() {
    let unshare = if works(&["unshare", "--uts", "true"]) {
        "unshare --uts"
    } else if works(&["unshare", "-r", "-u", "true"]) {
        "unshare -r -u"
    } else {
        eprintln!("skipped: neither `unshare --uts` nor `unshare -r -u` works here (no UTS namespaces for this user)");
        return;
    };
    let launcher = format!("{unshare} sh -c 'hostname pb-launched-side && exec \"$@\"' sh");
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("results");
    let out = Command::new(bin())
        .args([&["run", "--out", out_dir.to_str().unwrap(), "--launcher", &launcher], TINY, FAST, SMALL_PRIMES].concat())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dirs = run_dirs(&out_dir);
    assert_eq!(dirs.len(), 1);
    let name = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains("-pb-launched-side-"), "the directory is named after the launched host: {name}");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(dirs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(run["envelope"]["hostname"], "pb-launched-side");
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(run["launcher"]["launched_from"], here.trim());
    // The run's own command line, not the probe's.
    assert!(run["envelope"]["command_line"].as_array().unwrap().iter().any(|a| a == "--launcher"));
    assert!(rows_of(&dirs[0]).iter().all(|r| r["status"] == "ok"));
}

/// The allowed CPUs of this test process, from /proc/self/status.
fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    list.split(',')
        .flat_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
        })
        .collect()
}

#[test]
fn under_taskset_the_plan_and_the_workers_use_the_launched_cpu_set() {
    if !works(&["taskset", "-c", "0", "true"]) && !works(&["taskset", "--version"]) {
        eprintln!("skipped: taskset is not installed");
        return;
    }
    // The last CPU this process may use: pinning to it proves the plan came
    // from the launched side (a local plan of two workers would pin to 0 and 1).
    let cpu = *allowed_cpus().last().unwrap();
    let w = Wrapper::new(false);
    let sb = Sandbox::new();
    let launcher = format!("taskset -c {cpu} {}", w.path());
    let out = sb.run(&[&["cpu.primes", "--workers", "auto", "--pin", "linear", "--launcher", &launcher], FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = sb.run_json();
    assert_eq!(run["envelope"]["cpu_limits"]["allowed"], serde_json::json!([cpu]));
    let rows = sb.rows();
    assert_eq!(rows.len(), 1, "one allowed CPU on the launched side: one worker count");
    let r = row(&rows, "cpu.primes");
    assert_eq!(r["status"], "ok", "{}", r["reason"]);
    assert_eq!(r["cell"]["workers"], 1);
    assert_eq!(r["cell"]["placement"]["cpus"], serde_json::json!([cpu]));
    // The launched side ran under the CPU set, and so did every trial's worker.
    let launched = w.calls("remote-run");
    assert_eq!(launched.len(), 1, "{:#?}", w.log());
    assert!(launched[0].contains(&format!(" cpus={cpu} ")), "{launched:#?}");
    for t in r["trials"].as_array().unwrap() {
        assert_eq!(t["facts"]["allowed_cpus"], serde_json::json!([cpu]), "{t}");
    }
}

#[test]
fn a_launched_side_in_another_network_namespace_or_user_runs_the_rows() {
    let own_net = std::fs::read_link("/proc/self/ns/net").unwrap().display().to_string();
    let w = Wrapper::new(false);
    let exe = bin().display().to_string();
    let setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
    let mut tried = 0;
    if works(&["unshare", "-n", "true"]) || works(&["unshare", "-r", "-n", "true"]) {
        tried += 1;
        let unshare = if works(&["unshare", "-n", "true"]) { "unshare -n" } else { "unshare -r -n" };
        let sb = Sandbox::new();
        let out = sb.run(&[TINY, FAST, SMALL_PRIMES, &["--launcher", &format!("{unshare} {}", w.path())]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(sb.rows().iter().all(|r| r["status"] == "ok"));
        let launched = w.calls("remote-run");
        assert_eq!(launched.len(), 1, "{:#?}", w.log());
        assert!(launched.iter().all(|l| l.contains(" net=net:") && !l.contains(&format!(" net={own_net} "))), "{launched:#?}");
    } else {
        eprintln!("skipped the network namespace: `unshare -n` does not work here");
    }
    if works(&[&setpriv[..], &[&exe, "--version"]].concat()) {
        tried += 1;
        let w = Wrapper::new(false);
        // The scratch directories are made by the launched user, in a
        // directory that user may write.
        let io = tempfile::tempdir().unwrap();
        std::fs::set_permissions(io.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let sb = Sandbox::new();
        let launcher = format!("{} {}", setpriv.join(" "), w.path());
        let args = ["selftest.tiny", "os.readdir", "--include-selftest", "-p", "entries=10", "--io-dir", io.path().to_str().unwrap()];
        let out = sb.run(&[&args[..], FAST, &["--launcher", &launcher]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rows = sb.rows();
        assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:#?}");
        assert_eq!(w.calls("remote-run").len(), 1, "{:#?}", w.log());
        assert!(w.log().iter().all(|l| l.contains(" uid=65534 ")), "{:#?}", w.log());
        assert_eq!(std::fs::read_dir(io.path()).unwrap().count(), 0, "a scratch directory was left behind");
    } else {
        eprintln!("skipped the other user: `setpriv --reuid=65534` cannot run {exe} here (not root, or the binary is not readable)");
    }
    if tried == 0 {
        eprintln!("skipped: no network namespace and no other user available");
    }
}

#[test]
fn a_crash_and_a_hang_through_a_launcher_get_the_local_statuses() {
    let args: &[&str] = &["selftest.crash", "selftest.hang", "cpu.primes", "--workers", "1", "--timeout", "2s"];
    let local = Sandbox::new();
    let out = local.run(&[args, FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let w = Wrapper::new(false);
    let sb = Sandbox::new();
    let out = sb.run(&[args, FAST, SMALL_PRIMES, &["--launcher", &w.path()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let (rows, local_rows) = (sb.rows(), local.rows());
    assert_eq!(ids_and_statuses(&rows), ids_and_statuses(&local_rows));
    let crash = row(&rows, "selftest.crash");
    assert_eq!(crash["status"], "failed");
    assert_eq!(crash["process"]["signal_name"], "SIGSEGV");
    let hang = row(&rows, "selftest.hang");
    assert_eq!(hang["status"], "timeout");
    assert_eq!(hang["process"]["signal_name"], row(&local_rows, "selftest.hang")["process"]["signal_name"]);
    assert_eq!(row(&rows, "cpu.primes")["status"], "ok");
    // Every trial ran on the launched side, which started once.
    assert_eq!(w.calls("remote-run").len(), 1, "{:#?}", w.log());
    assert_eq!(row(&rows, "cpu.primes")["trials"].as_array().unwrap().len(), FAST_TRIALS);
}

#[test]
fn a_launcher_that_cannot_start_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("results");
    let run = |extra: &[&str]| {
        Command::new(bin())
            .args([&["run", "selftest.tiny", "--include-selftest", "--out", out_dir.to_str().unwrap()], extra].concat())
            .output()
            .unwrap()
    };
    let out = run(&["--launcher", "no-such-launcher-program --flag"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("proofbench: error: --launcher 'no-such-launcher-program --flag': cannot start 'no-such-launcher-program'"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let w = Wrapper::new(false);
    let out = run(&["--launcher", &w.path(), "--remote-exe", "/no/such/proofbench"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("--launcher '{}'", w.path())) && err.contains("--remote-exe"), "{err}");

    let out = run(&["--launcher", "echo"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did not print a proofbench envelope"), "{}", text(&out.stderr));

    for (extra, says) in [
        (&["--launcher", "ssh a", "--hosts", "a,b"][..], "--hosts needs {host} in --launcher"),
        (&["--launcher", "ssh {host}"][..], "give the hosts with --hosts"),
        (&["--hosts", "a,b"][..], "--hosts needs --launcher"),
        (&["--launcher", "ssh 'a"][..], "unbalanced quotes"),
    ] {
        let out = run(extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(text(&out.stderr).contains(says), "{extra:?}: {}", text(&out.stderr));
    }
    assert!(!out_dir.exists(), "a refused run wrote {}", out_dir.display());
    assert!(w.calls("remote-run").is_empty(), "nothing may run: {:#?}", w.log());
}

#[test]
fn a_launched_proofbench_of_another_version_is_refused() {
    // A "remote" proofbench that reports another version of itself.
    let w = Wrapper::new(false);
    let fake = w.dir.path().join("other-version");
    let real = bin().display().to_string();
    let ours = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    std::fs::write(&fake, format!("#!/bin/sh\n'{real}' \"$@\" | sed 's/{ours}/\"version\": \"999.0.0\"/'\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sb = Sandbox::new();
    let out = sb.run(&["selftest.tiny", "--include-selftest", "--launcher", &w.path(), "--remote-exe", fake.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("--remote-exe") && err.contains("999.0.0") && err.contains(env!("CARGO_PKG_VERSION")), "{err}");
    assert!(!sb.run_dir().exists());
    assert!(w.calls("remote-run").is_empty());
}

#[test]
fn a_preload_library_is_checked_through_the_launcher() {
    let w = Wrapper::new(false);
    for (lib, why) in [("libnot-a-library-anywhere.so.1", "it does not load"), ("libm.so.6", "malloc stays bound to")] {
        let sb = Sandbox::new();
        let out = sb.run(&["alloc.random-mixed", "--allocator", &format!("preload:{lib}"), "--launcher", &w.path()]);
        assert_eq!(out.status.code(), Some(2), "{lib}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        // The launched side checks the library where the workers would run, and refuses.
        assert!(err.contains("the launched side refused the run"), "{lib}: {err}");
        assert!(err.contains(&format!("--allocator preload:{lib}: ")) && err.contains(why), "{lib}: {err}");
        assert!(!sb.run_dir().exists(), "{lib}: no run directory for a refused run");
    }

    // A variant's env=LD_PRELOAD= is tried the same way, and needs only to load.
    let lib = "libnot-a-library-anywhere.so.1";
    let sb = Sandbox::new();
    let out = sb.run(&[
        "selftest.tiny",
        "--include-selftest",
        "--variant",
        "a=",
        "--variant",
        &format!("b=env=LD_PRELOAD={lib}"),
        "--launcher",
        &w.path(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("--variant b=env=LD_PRELOAD={lib}: it does not load")), "{err}");
    assert!(err.contains("the launched side refused the run"), "{err}");
    assert!(!sb.run_dir().exists());

    // A library that does replace malloc reaches the launched worker through its argv.
    let dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"];
    let Some(lib) = dirs.iter().map(|d| Path::new(d).join("libjemalloc.so.2")).find(|p| p.is_file()) else {
        eprintln!("skipped the preloaded run: no libjemalloc.so.2 installed (apt-get install libjemalloc2)");
        return;
    };
    let lib = lib.display().to_string();
    let sb = Sandbox::new();
    let allocators = format!("system,preload:{lib}");
    let out =
        sb.run(&[&["alloc.random-mixed", "--allocator", &allocators, "-p", "iterations=5000", "--launcher", &w.path()], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for r in sb.rows() {
        assert_eq!(r["status"], "ok", "{}", r["reason"]);
        let provider = r["details"]["malloc_provider"].as_str().unwrap();
        let preloaded = r["cell"]["params"]["allocator"] != "system";
        assert_eq!(provider.ends_with("libjemalloc.so.2"), preloaded, "{}: malloc from {provider}", r["cell"]["row_id"]);
    }
}

#[test]
fn hosts_run_the_plan_once_per_host_into_directories_labelled_by_host() {
    let w = Wrapper::new(true);
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("results");
    let launcher = format!("{} {{host}}", w.path());
    let out = Command::new(bin())
        .args(
            [
                &[
                    "run",
                    "selftest.tiny",
                    "--include-selftest",
                    "--out",
                    out_dir.to_str().unwrap(),
                    "--launcher",
                    &launcher,
                    "--hosts",
                    "h1,h2",
                ],
                FAST,
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Runs by host:"), "{stdout}");
    for host in ["h1", "h2"] {
        let line = stdout.lines().find(|l| l.trim_start().starts_with(&format!("{host} "))).unwrap_or_else(|| panic!("{stdout}"));
        let dir = Path::new(line.split_whitespace().last().unwrap());
        let run: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["label"], host);
        assert_eq!(run["launcher"]["host"], host);
        assert_eq!(run["launcher"]["prefix"], serde_json::json!([w.path(), host]));
        assert!(rows_of(dir).iter().all(|r| r["status"] == "ok" && r["cell"]["label"] == host));
        // This host's run went through its own launcher: a probe and one launched side.
        let mine: Vec<String> = w.log().into_iter().filter(|l| l.starts_with(&format!("host={host} "))).collect();
        assert_eq!(mine.len(), 2, "{mine:#?}");
    }
    assert_eq!(run_dirs(&out_dir).len(), 2);
    assert_eq!(w.calls("remote-run").len(), 2);

    // --label prefixes the host.
    let out = Command::new(bin())
        .args(
            [&["run", "selftest.tiny", "--include-selftest", "--out", out_dir.to_str().unwrap(), "--label", "base"], FAST]
                .concat()
                .into_iter()
                .chain(["--launcher", &launcher, "--hosts", "h3"]),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_dir(&out_dir).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().ends_with("-base-h3")));
}

/// Issue 32, item 7: the runs of one `--hosts` invocation carry one
/// submission id, named on the launching side (what a launched side says
/// of it is not read); another invocation carries another; `fleet` says
/// which its hosts share, and when they mix.
#[test]
fn every_hosts_run_of_one_invocation_carries_its_submission_and_another_invocation_another() {
    let dir = tempfile::tempdir().unwrap();
    let script = host_forger(dir.path());
    let invoke = |out: &str| {
        let o = Command::new(bin())
            .arg("run")
            .args(["selftest.tiny", "--include-selftest"])
            .args(FAST)
            .args(["--no-history", "--out"])
            .arg(dir.path().join(out))
            .args(["--launcher", &format!("{} {{host}}", script.display()), "--hosts", "h1,h2"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let dirs = run_dirs(&dir.path().join(out));
        assert_eq!(dirs.len(), 2, "{dirs:?}");
        let ids: Vec<String> = dirs
            .iter()
            .map(|d| {
                let run: Value = serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
                run["launcher"]["submission"].as_str().unwrap_or_else(|| panic!("no submission: {}", run["launcher"])).to_string()
            })
            .collect();
        assert_eq!(ids[0], ids[1], "both hosts' runs carry the invocation's id");
        let said = text(&o.stdout);
        assert!(said.contains(&format!("Submission: {} (every host's run carries it)", ids[0])), "{said}");
        let report = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
        let line = report.lines().find(|l| l.starts_with("| Submission ")).unwrap_or_else(|| panic!("the report says it:\n{report}"));
        assert!(line.contains(&format!("| {} ", ids[0])), "{line}");
        ids[0].clone()
    };
    let first = invoke("one");
    // `hosts 20260101T000000Z-k3x9qa`: the start here, and a random tag.
    let (stamp, tag) = first.strip_prefix("hosts ").and_then(|s| s.split_once('-')).unwrap_or_else(|| panic!("{first}"));
    assert!(stamp.len() == 16 && stamp.as_bytes()[8] == b'T' && stamp.ends_with('Z'), "{first}");
    assert!(tag.len() == 6 && tag.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{first}");

    // h2's launched side now claims a submission of its own in its start.
    let honest = std::fs::read_to_string(dir.path().join("honest-h2.jsonl")).unwrap();
    let mut events: Vec<Value> = honest.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events[0]["event"], "start");
    events[0]["run"]["launcher"] = serde_json::json!({
        "template": "x {host}", "host": "h2", "prefix": ["x", "h2"], "remote_exe": "pb", "launched_from": "h2",
        "submission": "hosts FORGED"
    });
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    std::fs::write(dir.path().join("forged-h2.jsonl"), lines.join("\n") + "\n").unwrap();
    let second = invoke("two");
    assert_ne!(second, first, "another invocation, another id");

    let fleet = |dirs: &[&str]| {
        let o = Command::new(bin()).arg("fleet").args(dirs.iter().map(|d| dir.path().join(d))).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let one = fleet(&["one"]);
    assert!(one.contains(&format!("2 hosts of submission {first}.")), "{one}");
    let both = fleet(&["one", "two"]);
    assert!(both.contains("the runs mix 2 submissions"), "{both}");
    assert!(
        both.contains(&format!("2 hosts of submission {first}: ")) && both.contains(&format!("2 hosts of submission {second}: ")),
        "{both}"
    );
}

#[test]
fn a_launched_side_killed_mid_run_keeps_the_rows_that_arrived_and_names_the_cells_that_did_not() {
    // `timeout -s KILL 4` kills the launched side as a dropped connection
    // would end it: its stream stops in the middle of the run.
    let sb = Sandbox::new();
    let args = ["selftest.tiny", "cpu.primes", "--include-selftest", "--workers", "1,2", "-p", "range=20000", "--runs", "3"];
    let out =
        sb.run(&[&args[..], &["--trials", "400", "--time-budget", "20s", "--settle", "0", "--launcher", "timeout -s KILL 4"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("the run was cut short") && err.contains("rows arrived and are kept"), "{err}");
    let run = sb.run_json();
    assert_eq!(run["complete"], false);
    let not_run: Vec<&str> = run["not_run"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let rows = sb.rows();
    assert_eq!(rows.len() + not_run.len(), 3, "every cell has its row or is named: {not_run:?}");
    assert!(!not_run.is_empty(), "400 trials of three cells cannot end in 4 s");
    // What arrived is whole: its raw samples and its log are here.
    for r in &rows {
        let id = r["cell"]["row_id"].as_str().unwrap();
        assert!(sb.run_dir().join(format!("logs/{id}.log")).is_file(), "{id}");
    }
    assert!(sb.run_dir().join("report.md").is_file(), "the report is written from what arrived");
    // Nothing of the launched side is left running (its workers die with it).
    let ours = format!("{}", bin().display());
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| {
            c.starts_with(&ours) && (c.contains(" remote-run") || c.contains(" worker")) && c.contains(&sb.tmp.path().display().to_string())
        })
        .collect();
    assert!(left.is_empty(), "{left:#?}");
}

#[test]
fn a_typo_in_a_run_flag_costs_no_launcher_call() {
    let w = Wrapper::new(true);
    let launcher = format!("{} {{host}}", w.path());
    for (typo, says) in [
        (&["-p", "rnage=5"][..], "--param rnage=5"),
        (&["--workers", "1,x"][..], "--workers 1,x"),
        (&["--variant", "a=nosuch=1"][..], "--variant a=nosuch=1"),
        (&["--max-parallel", "0"][..], "--max-parallel"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out_dir = tmp.path().join("results");
        let out = Command::new(bin())
            .args(
                [&["run", "cpu.primes", "--out", out_dir.to_str().unwrap(), "--launcher", &launcher, "--hosts", "h1,h2"][..], typo]
                    .concat(),
            )
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{typo:?}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains(says) || err.contains(&says.replace(' ', "=")), "{typo:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(w.log().is_empty(), "{typo:?} reached a host: {:#?}", w.log());
        assert!(!out_dir.exists());
    }
}

#[test]
fn a_launched_side_that_floods_its_stderr_is_drained_and_shown_only_in_part() {
    // 8 MiB on stderr before the launched side starts: far more than a pipe
    // holds and than is passed on (1 MiB); the run must not stall on it.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("loud.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncase \"$*\" in *' remote-run') head -c 8388608 /dev/zero | tr '\\0' 'x' | fold -w 1000 >&2;; esac\nexec \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sb = Sandbox::new();
    let started = std::time::Instant::now();
    let out = sb.run(&[
        "selftest.tiny",
        "--include-selftest",
        "--trials",
        "2",
        "--runs",
        "3",
        "--settle",
        "0",
        "--launcher",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr).chars().take(400).collect::<String>());
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the run stalled: {:?}", started.elapsed());
    assert!(out.stderr.len() < (2 << 20), "passed on {} bytes of the launched side's stderr", out.stderr.len());
    assert!(out.stderr.len() > (1 << 20) - 4096, "the first MiB is passed on: {} bytes", out.stderr.len());
    assert!(sb.rows().iter().all(|r| r["status"] == "ok"));
}

/// A launcher that passes the probe through and, for the run itself,
/// either records the honest stream of the launched side (`honest.jsonl`)
/// or, when `forged.jsonl` exists, sends that instead: a launched side
/// that lies.
struct Forger {
    dir: tempfile::TempDir,
}

impl Forger {
    fn new() -> Forger {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let script = format!(
            "#!/bin/sh\nif [ \"$2\" = remote-run ]; then\n  if [ -f {d}/forged.jsonl ]; then exec cat {d}/forged.jsonl; fi\n  \
             \"$@\" | tee {d}/honest.jsonl\n  exit 0\nfi\nexec \"$@\"\n"
        );
        let f = Forger { dir };
        std::fs::write(f.script(), script).unwrap();
        std::fs::set_permissions(f.script(), std::fs::Permissions::from_mode(0o755)).unwrap();
        f
    }

    fn script(&self) -> PathBuf {
        self.dir.path().join("forge.sh")
    }

    /// The honest stream's events.
    fn honest(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("honest.jsonl")).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// Sends `events` from now on.
    fn forge(&self, events: &[Value]) {
        let lines: Vec<String> = events.iter().map(|e| e.to_string()).collect();
        std::fs::write(self.dir.path().join("forged.jsonl"), lines.join("\n") + "\n").unwrap();
    }

    /// `run TINY --out OUT --launcher forge.sh`.
    fn run(&self, out: &Path) -> std::process::Output {
        Command::new(bin())
            .arg("run")
            .args([TINY, FAST, SMALL_PRIMES].concat())
            .args(["--no-history", "--out"])
            .arg(out)
            .arg("--launcher")
            .arg(self.script())
            .output()
            .unwrap()
    }
}

/// Every path under `root`.
fn every_path(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(every_path(&e.path()));
        }
        out.push(e.path());
    }
    out
}

#[test]
fn a_launched_side_that_lies_writes_nothing_outside_out_and_its_claims_give_way_to_its_rows() {
    let f = Forger::new();
    let tmp = tempfile::tempdir().unwrap();
    let (out, elsewhere) = (tmp.path().join("out"), tmp.path().join("x"));
    std::fs::create_dir_all(&elsewhere).unwrap();
    let honest_run = f.run(&out);
    assert_eq!(honest_run.status.code(), Some(0), "{}", text(&honest_run.stderr));
    let events = f.honest();
    assert_eq!(events.iter().filter(|e| e["event"] == "row").count(), 3);
    let (start, end) = (events[0].clone(), events.last().unwrap().clone());
    assert_eq!((start["event"].as_str(), end["event"].as_str()), (Some("start"), Some("end")));
    let rows: Vec<Value> = events.iter().filter(|e| e["event"] == "row").cloned().collect();
    let is_new = |before: &[PathBuf], p: &Path| !before.contains(&p.to_path_buf());

    // A start time that is a path, absolute or relative: refused, nothing written.
    for stamp in [elsewhere.join("PWN_ABS").display().to_string(), "../../x/PWN_REL".into()] {
        let mut s = start.clone();
        s["run"]["envelope"]["started_utc"] = Value::from(stamp.clone());
        f.forge(&[s, end.clone()]);
        let before = every_path(tmp.path());
        let o = f.run(&out);
        assert_eq!(o.status.code(), Some(1), "{stamp}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("is not a UTC timestamp"), "{}", text(&o.stderr));
        let new: Vec<PathBuf> = every_path(tmp.path()).into_iter().filter(|p| is_new(&before, p)).collect();
        assert!(new.is_empty(), "{stamp}: wrote {new:?}");
    }

    // A workload that is a path, in the plan and in the rows: refused.
    let mut s = start.clone();
    let evil = format!("../../{}/PWN_WL", elsewhere.display());
    s["run"]["plan"][0]["workload"] = Value::from(evil.clone());
    let mut r = rows[0].clone();
    r["row"]["cell"]["workload"] = Value::from(evil);
    std::fs::write(elsewhere.join("PWN_WL-samples.svg"), "keep").unwrap();
    f.forge(&[s, r, end.clone()]);
    let o = f.run(&out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("its plan is not the one this run makes for its machine"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(elsewhere.join("PWN_WL-samples.svg")).unwrap(), "keep");
    assert_eq!(every_path(&elsewhere).len(), 1);

    // An end right after the start that claims three ok rows and another
    // plan: the run is cut, with no row and every cell not run.
    let mut e = end.clone();
    e["run"]["complete"] = Value::from(true);
    e["run"]["counts"] = serde_json::json!({"ok": 3, "invalid": 0, "failed": 0, "timeout": 0, "skipped": 0});
    e["run"]["plan"] = serde_json::json!([]);
    f.forge(&[start.clone(), e.clone()]);
    let before: Vec<PathBuf> = run_dirs(&out);
    let o = f.run(&out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("it ended the run having sent 0 of 3 rows"), "{}", text(&o.stderr));
    let dir = run_dirs(&out).into_iter().find(|d| !before.contains(d)).expect("a run directory");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], false);
    assert_eq!(run["counts"]["ok"], 0);
    assert_eq!(run["not_run"].as_array().unwrap().len(), 3);
    assert_eq!(run["plan"].as_array().unwrap().len(), 3, "this side's plan");
    assert!(rows_of(&dir).is_empty());

    // Three failed rows and an end that claims three ok: the rows decide (exit 1).
    let failed: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r["row"]["status"] = Value::from("failed");
            for t in r["row"]["trials"].as_array_mut().unwrap() {
                t["status"] = Value::from("failed");
            }
            r
        })
        .collect();
    f.forge(&[vec![start.clone()], failed, vec![e]].concat());
    let before: Vec<PathBuf> = run_dirs(&out);
    let o = f.run(&out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let dir = run_dirs(&out).into_iter().find(|d| !before.contains(d)).expect("a run directory");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!((run["counts"]["ok"].as_u64(), run["counts"]["failed"].as_u64()), (Some(0), Some(3)), "{}", run["counts"]);
    assert_eq!(run["complete"], true, "every row arrived");

    // A row whose status its trials contradict (ok, with a failed trial) cuts the stream.
    let mut liar = rows[0].clone();
    liar["row"]["trials"][0]["status"] = Value::from("failed");
    f.forge(&[start.clone(), liar, end.clone()]);
    let o = f.run(&out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("where its trial 1 is failed"), "{}", text(&o.stderr));
    // Nothing was written outside --out by any of them.
    assert_eq!(every_path(&elsewhere).len(), 1);
    assert!(every_path(tmp.path()).iter().all(|p| p.starts_with(&out) || p.starts_with(&elsewhere)), "{:#?}", every_path(tmp.path()));
}

#[test]
fn a_host_that_would_be_a_launcher_option_is_refused_before_any_contact() {
    let w = Wrapper::new(true);
    let tmp = tempfile::tempdir().unwrap();
    let launcher = format!("{} {{host}}", w.path());
    for bad in ["-oProxyCommand=touch${IFS}PWN", "a/b", "a|b"] {
        let out = Command::new(bin())
            .args(["run", "selftest.tiny", "--include-selftest", "--launcher", &launcher, &format!("--hosts={bad}")])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--hosts") && err.contains("is not a host name"), "{err}");
        assert!(w.log().is_empty(), "{bad}: the launcher was called: {:?}", w.log());
        assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none(), "{bad}: something was written");
    }
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

#[test]
fn a_stop_signal_during_the_probe_ends_it_at_once_with_exit_130_and_nothing_left_running() {
    // A probe that hangs, with a child of its own: the launcher's first
    // argument (a host or `-`) is dropped, and each probe writes its
    // shell's pid and its child's.
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = dir.path().join("hang.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nshift\ncase \"$*\" in *' env --json') sleep 300 & echo \"$$ $!\" >> {}; wait; exit 0;; esac\nexec \"$@\"\n",
            pids.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (signal, hosts) in [(libc::SIGINT, None), (libc::SIGTERM, None), (libc::SIGINT, Some("h1,h2")), (libc::SIGTERM, Some("h1,h2"))] {
        let _ = std::fs::remove_file(&pids);
        let out = dir.path().join("out");
        let mut c = Command::new(bin());
        c.args(["run", "selftest.tiny", "--include-selftest", "--no-history", "--out"]).arg(&out);
        match hosts {
            Some(h) => c.args(["--launcher", &format!("{} {{host}}", script.display()), "--hosts", h]),
            None => c.args(["--launcher", &format!("{} -", script.display())]),
        };
        let mut child = c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let probes = if hosts.is_some() { 2 } else { 1 };
        let waited = std::time::Instant::now();
        let started: Vec<i32> = loop {
            let text = std::fs::read_to_string(&pids).unwrap_or_default();
            let pids: Vec<i32> = text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
            if pids.len() == 2 * probes {
                break pids;
            }
            assert!(waited.elapsed() < std::time::Duration::from_secs(30), "the probes did not start: {text:?}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // SAFETY: signalling the proofbench this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let stopped = std::time::Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if stopped.elapsed() > std::time::Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("signal {signal} {hosts:?}: proofbench did not end within 20 s of it");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let took = stopped.elapsed();
        let output = child.wait_with_output().unwrap();
        let err = text(&output.stderr);
        assert_eq!(status.code(), Some(130), "signal {signal} {hosts:?}: {err}");
        assert!(took < std::time::Duration::from_secs(5), "signal {signal} {hosts:?}: ended {took:?} after it");
        let left: Vec<i32> = started.iter().copied().filter(|p| alive(*p)).collect();
        for p in &left {
            // SAFETY: ending what this test's launcher left, by the pids it wrote.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        assert!(left.is_empty(), "signal {signal} {hosts:?}: the probes' processes {left:?} were left running");
        match hosts {
            None => {
                assert!(err.starts_with("proofbench: stopped: --launcher ") && err.contains("stopped while probing"), "{err}");
                assert_eq!(err.lines().count(), 1, "{err}");
            }
            Some(_) => {
                let said = text(&output.stdout);
                assert_eq!(said.lines().filter(|l| l.contains("stopped while probing")).count(), 2, "{said}{err}");
            }
        }
        assert!(!out.exists(), "signal {signal} {hosts:?}: {} was made", out.display());
    }
}

/// A `{host}` launcher that passes the probe through and, for the run,
/// sends `forged-HOST.jsonl` when it exists, else the launched side's
/// honest stream, recorded in `honest-HOST.jsonl`.
fn host_forger(dir: &Path) -> PathBuf {
    let d = dir.display();
    let script = dir.join("forge.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nhost=$1; shift\nif [ \"$2\" = remote-run ]; then\n  if [ -f {d}/forged-$host.jsonl ]; then exec cat \
             {d}/forged-$host.jsonl; fi\n  \"$@\" | tee {d}/honest-$host.jsonl\n  exit 0\nfi\nexec \"$@\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Marks the machine of a stream's end, and every trial of its rows,
/// busy (others took 98% of the CPUs) or quiet.
fn set_busy(events: &mut [Value], busy: bool) {
    let share = if busy { 0.98 } else { 0.0 };
    let mut machine = events.last().unwrap()["run"]["interference"].clone();
    assert!(machine.is_object(), "the end has the machine's interference: {machine}");
    machine["disturbed"] = Value::from(busy);
    machine["others_share"] = Value::from(share);
    for e in events.iter_mut() {
        match e["event"].as_str() {
            Some("end") => e["run"]["interference"] = machine.clone(),
            Some("row") => {
                for t in e["row"]["trials"].as_array_mut().unwrap() {
                    if t["facts"].is_object() {
                        t["facts"]["interference"] = machine.clone();
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_hosts_summary_says_which_runs_were_busy_disturbed_cut_or_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let script = host_forger(dir.path());
    let out = dir.path().join("out");
    let hosts = ["h1", "h2", "h3", "h4"];
    let run = || {
        Command::new(bin())
            .arg("run")
            .args([TINY, FAST, SMALL_PRIMES].concat())
            .args(["--no-history", "--out"])
            .arg(&out)
            .args(["--launcher", &format!("{} {{host}}", script.display()), "--hosts", &hosts.join(",")])
            .output()
            .unwrap()
    };
    let honest = run();
    assert_eq!(honest.status.code(), Some(0), "{}", text(&honest.stderr));
    let stream = |host: &str| -> Vec<Value> {
        let text = std::fs::read_to_string(dir.path().join(format!("honest-{host}.jsonl"))).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let forge = |host: &str, events: &[Value]| {
        let lines: Vec<String> = events.iter().map(Value::to_string).collect();
        std::fs::write(dir.path().join(format!("forged-{host}.jsonl")), lines.join("\n") + "\n").unwrap();
    };
    let last_row = |events: &[Value]| events.iter().rposition(|e| e["event"] == "row").unwrap();
    // h1: busy all along, every trial disturbed.
    let mut e = stream("h1");
    set_busy(&mut e, true);
    forge("h1", &e);
    // h2: cut after its second row (no third row, no end).
    let mut e = stream("h2");
    set_busy(&mut e, false);
    e.truncate(last_row(&e));
    forge("h2", &e);
    // h3: stopped on its side after two rows.
    let mut e = stream("h3");
    set_busy(&mut e, false);
    e.remove(last_row(&e));
    let end = e.len() - 1;
    e[end]["run"]["interrupted"] = Value::from(true);
    forge("h3", &e);
    // h4: quiet and whole.
    let mut e = stream("h4");
    set_busy(&mut e, false);
    forge("h4", &e);

    let o = run();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    let line =
        |host: &str| said.lines().find(|l| l.trim_start().starts_with(&format!("{host} "))).unwrap_or_else(|| panic!("{said}")).to_string();
    assert!(line("h1").contains("busy: others took 98% of CPUs") && line("h1").contains("3 rows have disturbed trials"), "{said}");
    assert!(line("h2").contains("cut short: 2 of 3 cells ran (the stream ended before the run's end"), "{said}");
    assert!(line("h3").contains("interrupted: 2 of 3 cells ran"), "{said}");
    for word in ["busy", "disturbed", "cut short", "interrupted"] {
        assert!(!line("h4").contains(word), "{said}");
        assert!(!line("h2").contains("disturbed") && !line("h3").contains("busy"), "{said}");
    }
}

#[test]
fn a_full_disk_during_a_hosts_run_loses_no_received_row_and_names_every_run_directory() {
    // The launching side writes into a tmpfs of its own mount namespace,
    // which the launcher fills once the host's second row has been sent.
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !works(&["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m pbcheck /mnt"]) {
        assert!(!ci, "unshare -m and a tmpfs mount are needed (root), and CI=true");
        eprintln!("skipped: `unshare -m` with a tmpfs mount does not work here (not root?)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, copy) = (dir.path().join("out"), dir.path().join("copy"));
    std::fs::create_dir_all(&out).unwrap();
    let script = dir.path().join("fill.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nshift\nif [ \"$2\" != remote-run ]; then exec \"$@\"; fi\n\"$@\" | {{ n=0; while IFS= read -r l; do printf '%s\\n' \"$l\"; \
             case \"$l\" in '{{\"event\":\"row\"'*) n=$((n+1)); if [ $n = 2 ]; then sleep 1; cat /dev/zero > {out}/fill 2>/dev/null; fi;; \
             esac; done; }}\n",
            out = out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // In the namespace: the tmpfs, the run, its exit code and summary, a
    // copy of what it wrote for this test to read.
    let inside = "mount -t tmpfs -o size=8m pbfull \"$1\" || exit 99; out=$1 copy=$2; shift 2; \"$@\" > \"$copy.stdout\" 2> \
                  \"$copy.stderr\"; echo $? > \"$copy.code\"; rm -f \"$out/fill\"; cp -a \"$out\" \"$copy\"";
    let status = Command::new("unshare")
        .args(["-m", "sh", "-c", inside, "sh"])
        .arg(&out)
        .arg(&copy)
        .arg(bin())
        .args(["run", "selftest.tiny", "cpu.primes", "--include-selftest", "--workers", "1,2"])
        .args([FAST, SMALL_PRIMES].concat())
        .args(["--no-history", "--out"])
        .arg(&out)
        .args(["--launcher", &format!("{} {{host}}", script.display()), "--hosts", "h1,h2", "--max-parallel", "1"])
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", copy.display())).unwrap();
    let (said, err) = (read("stdout"), read("stderr"));
    assert_eq!(read("code").trim(), "1", "{said}{err}");
    let dirs = run_dirs(&copy);
    assert!(!dirs.is_empty(), "{said}{err}");
    for d in &dirs {
        // Every run directory made is named in the summary, whatever became of its host.
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        assert!(said.lines().any(|l| l.ends_with(&format!("/{name}"))), "{name} is not in the summary:\n{said}{err}");
    }
    // h1: two rows written before the disk filled, the third not received.
    let h1 = dirs.iter().find(|d| d.to_string_lossy().ends_with("-h1")).expect("h1's run directory");
    let rows = rows_of(h1);
    assert_eq!(rows.len(), 2, "{said}{err}");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(h1.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], false);
    if !run["finished_utc"].is_null() {
        // A record the full disk let this side finish names the row it lost.
        assert_eq!(run["not_run"].as_array().unwrap().len(), 1, "{run}");
    }
    let logs = std::fs::read_dir(h1.join("logs")).unwrap().count();
    assert_eq!(logs, 2, "only the rows written have logs");
}
