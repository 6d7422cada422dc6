//! Command workloads from a TOML file (`--workloads`, `./proofbench.toml`):
//! they run, verify, report and compare like built-in workloads, and a bad
//! file is rejected with exit 2 before anything runs.

use std::path::{Path, PathBuf};

use crate::common::{FAST, Sandbox, bin, text};

/// The shell script standing in for a QEMU-booted guest.
fn fake_guest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/command/fake-guest.sh")
}

/// A guest that times itself: cycles read from its output, swept over 3 CPU counts.
fn guest_toml() -> String {
    format!(
        r#"
[[workload]]
id = "myos.smp-scale"
summary = "A guest kernel's own cycle count at 1, 2 and 4 CPUs"
unit = "cycles"
direction = "lower-is-better"
command = ["{}", "--smp", "{{workers}}"]
env = {{ FAKE_GUEST_FAIL = "{{fail}}" }}
metric = {{ regex = 'cycles=(\d+)', total_regex = 'total_cycles=(\d+)' }}

[workload.axes]
workers = [1, 2, 4]
fail = 0

[workload.verify]
must_match = ["benchmark: PASSED"]
must_not_match = ["FAILED|panic"]
value = {{ regex = 'selfcheck: sum=(\d+)', expected = 4950 }}
"#,
        fake_guest().display()
    )
}

/// A hyperfine-style wall-time sweep.
const SWEEP_TOML: &str = r#"
[[workload]]
id = "shell.loop"
summary = "Wall time of a shell loop of n iterations"
unit = "ns"
direction = "lower-is-better"
shell = true
command = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done; echo done=$i"
prepare = "touch prepared-{n}"
cleanup = "rm prepared-{n}"

[workload.axes]
n = [10, 100, 1000]

[workload.verify]
value = { regex = 'done=(\d+)', expected = 100, tolerance = 1000 }
"#;

fn write(sb: &Sandbox, name: &str, body: &str) -> PathBuf {
    let p = sb.tmp.path().join(name);
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn a_guest_metric_sweep_runs_verifies_reports_and_compares_unchanged() {
    let sb = Sandbox::new();
    let file = write(&sb, "guest.toml", &guest_toml());
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "myos"], FAST].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 3);
    for (r, (w, cycles)) in rows.iter().zip([(1, 1_200_000.0), (2, 600_000.0), (4, 300_000.0)]) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["unit"], "cycles");
        assert_eq!(r["cell"]["params"]["workers"], w);
        assert_eq!(r["cell"]["command"]["id"], "myos.smp-scale");
        assert_eq!(r["verifier"]["passed"], true);
        assert_eq!(r["stats"]["work"]["median"], cycles);
        assert_eq!(r["stats"]["total"]["median"], cycles + 50_000.0);
        assert!(r["details"]["output_tail"].as_str().unwrap().contains("poweroff"), "{r}");
    }
    let md = sb.report_md();
    assert!(md.contains("### myos.smp-scale") && md.contains("1.20 M cycles") && md.contains("300 k cycles"), "{md}");
    let cmp = std::process::Command::new(bin())
        .args(["compare"])
        .arg(sb.run_dir())
        .arg(sb.run_dir())
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    assert!(cmp.status.success(), "{}", text(&cmp.stderr));
    let table = text(&cmp.stdout);
    assert_eq!(table.matches("| SAME within 2% ").count(), 3, "deterministic cycles: {table}");
    let re = std::process::Command::new(bin()).arg("report").arg(sb.run_dir()).args(["--format", "markdown"]).output().unwrap();
    assert_eq!(text(&re.stdout), md, "report re-renders the stored run");
}

#[test]
fn a_wall_time_sweep_in_proofbench_toml_runs_prepare_and_cleanup() {
    let sb = Sandbox::new();
    write(&sb, "proofbench.toml", SWEEP_TOML);
    let list = std::process::Command::new(bin()).arg("list").current_dir(sb.tmp.path()).output().unwrap();
    assert!(text(&list.stdout).contains("shell.loop  [ns, lower-is-better]"), "{}", text(&list.stdout));
    let out = sb.run(&[&["shell"], FAST].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.iter().map(|r| r["cell"]["params"]["n"].as_i64().unwrap()).collect::<Vec<_>>(), [10, 100, 1000]);
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["unit"], "ns");
        assert!(r["stats"]["work"]["median"].as_f64().unwrap() > 0.0);
    }
    // Cleanup removed what prepare made, in the file's directory.
    assert!(!sb.tmp.path().join("prepared-10").exists());
    assert!(sb.report_md().contains("### shell.loop"));
}

#[test]
fn a_verifier_failure_gives_an_invalid_row_naming_what_did_not_match() {
    let sb = Sandbox::new();
    let file = write(&sb, "guest.toml", &guest_toml());
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "myos", "-p", "workers=2", "-p", "fail=1"], FAST].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 1);
    let reason = rows[0]["reason"].as_str().unwrap();
    assert_eq!(rows[0]["status"], "invalid");
    assert!(reason.contains("no match for `benchmark: PASSED`") && reason.contains("read 4951"), "{reason}");
    assert!(sb.report_md().contains("| myos.smp-scale | invalid"));
}

#[test]
fn a_metric_that_is_missing_fails_the_row_with_the_regex_named() {
    let sb = Sandbox::new();
    let file = write(&sb, "guest.toml", &guest_toml().replace(r"cycles=(\d+)', total", r"instructions=(\d+)', total"));
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "myos", "-p", "workers=1"], FAST].concat());
    assert_eq!(out.status.code(), Some(1));
    let r = &sb.rows()[0];
    assert_eq!(r["status"], "failed");
    assert!(r["reason"].as_str().unwrap().contains("no match for `instructions=(\\d+)`"), "{r}");
}

/// Each bad file: the message it must give (after `FILE:LINE: `).
#[test]
fn bad_files_exit_2_naming_the_place_and_run_nothing() {
    let cases: [(&str, &str, &str); 3] = [
        ("unit = \"ns\"", "unit = \"ns\"\nrepeat = 3", "unknown field `repeat`"),
        ("'done=(\\d+)'", "'done=(\\d+'", "key `verify.value.regex`: the regex does not compile"),
        ("-lt {n} ]", "-lt {count} ]", "key `command`: placeholder `{count}` is not an axis (axes: n)"),
    ];
    for (old, new, message) in cases {
        let sb = Sandbox::new();
        assert!(SWEEP_TOML.contains(old), "{old}");
        let file = write(&sb, "bad.toml", &SWEEP_TOML.replace(old, new));
        let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell"], FAST].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with(&format!("proofbench: error: {}:", file.display())) && err.contains(message), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!sb.run_dir().exists(), "nothing ran for {message}");
    }
}

#[test]
fn a_missing_program_or_a_built_in_group_exits_2_before_anything_runs() {
    let sb = Sandbox::new();
    let missing = write(&sb, "missing.toml", &guest_toml().replace("fake-guest.sh", "no-such-guest.sh"));
    let out = sb.run(&["--workloads", missing.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("missing.toml:") && err.contains("key `command`: program") && err.contains("not an executable file"), "{err}");
    let clash = write(&sb, "clash.toml", &guest_toml().replace("myos.smp-scale", "cpu.guest"));
    let out = sb.run(&["--workloads", clash.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("key `id`: 'cpu.guest' clashes with the built-in group 'cpu'"));
    assert!(!sb.run_dir().exists());
}

#[test]
fn a_240_character_axis_value_runs_to_a_finished_record_with_bounded_file_names() {
    let sb = Sandbox::new();
    let long = "x".repeat(240);
    let toml = format!(
        r#"
[[workload]]
id = "shell.long"
summary = "An axis value longer than a file name may be"
unit = "ns"
direction = "lower-is-better"
shell = true
command = "echo {{arg}} >/dev/null; echo done=1"

[workload.axes]
arg = ["{long}a", "{long}b"]

[workload.verify]
must_match = ["done=1"]
"#
    );
    let file = write(&sb, "long.toml", &toml);
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell.long"], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    // The records keep the whole value; the file names are bounded and apart.
    assert_eq!(rows[0]["cell"]["params"]["arg"], format!("{long}a"));
    assert_ne!(rows[0]["cell"]["row_id"], rows[1]["cell"]["row_id"]);
    for r in &rows {
        let log = sb.run_dir().join(r["log"].as_str().unwrap());
        assert!(log.is_file(), "{}", log.display());
        assert!(log.file_name().unwrap().len() <= 255);
    }
    assert!(sb.run_json()["finished_utc"].is_string());
}
