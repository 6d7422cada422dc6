//! Verifiers that could not fail (issue 15): each now checks something its
//! timed work had to produce, so a fault that skips or breaks that work makes
//! its row `invalid`, with a reason naming what was wrong, while the same
//! cell without the fault is `ok`. Also: a `hugepage` THP row says when the
//! kernel gave it no huge pages, and a command workload that checks only
//! its exit code is flagged by `list` and by the report.

use serde_json::Value;

use crate::common::{FAST, Sandbox, bin, row_name as name, s, text};

/// Runs `args` (FAST added) in a fresh sandbox, its scratch directories in a
/// private `--io-dir`; checks the exit code and returns the rows and report.md.
fn run(args: &[&str], code: i32) -> (Vec<Value>, String) {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    let out = sb.run(&[args, FAST, &["--io-dir", io.path().to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(code), "{args:?}\n{}\n{}", text(&out.stdout), text(&out.stderr));
    (sb.rows(), sb.report_md())
}

/// `selection` (with `extra`) runs ok; with `--inject-fault fault` every row
/// is invalid, its reason containing each of `reasons`. Returns the ok rows.
/// Rows skipped for a reason of the machine are allowed both times, but at
/// least one row must run.
fn ok_then_invalid(selection: &[&str], fault: &str, reasons: &[&str]) -> Vec<Value> {
    let (ok, _) = run(selection, 0);
    let ran: Vec<Value> = ok.into_iter().filter(|r| r["status"] != "skipped").collect();
    assert!(!ran.is_empty(), "{selection:?}: every row was skipped");
    for r in &ran {
        assert_eq!(r["status"], "ok", "{}: {}", name(r), r["reason"]);
        assert_eq!(r["verifier"]["passed"], true, "{}", name(r));
    }
    let (bad, _) = run(&[selection, &["--inject-fault", fault]].concat(), 1);
    let mut invalid = 0;
    for r in bad.iter().filter(|r| r["status"] != "skipped") {
        assert_eq!(r["status"], "invalid", "{} under {fault}: {}", name(r), r["reason"]);
        assert_eq!(r["verifier"]["passed"], false, "{}", name(r));
        let reason = s(&r["reason"]);
        assert!(reason.starts_with("verifier failed: expected"), "{reason}");
        for want in reasons {
            assert!(reason.contains(want), "{} under {fault}: the reason lacks '{want}': {reason}", name(r));
        }
        invalid += 1;
    }
    assert_eq!(invalid, ran.len(), "{fault}: as many rows reached the fault as ran without it");
    ran
}

#[test]
fn yield_on_one_cpu_is_checked_by_its_hand_overs_and_a_skipped_yield_is_invalid() {
    let ok = ok_then_invalid(
        &["os.yield", "-p", "mode=pair", "-p", "placement=same-cpu"],
        "skip-yield",
        &["the peer ran after only", "yields (at least"],
    );
    for r in &ok {
        let d = &r["details"];
        let seen = d["last_sample_handovers_seen"].as_u64().unwrap();
        assert!(seen >= d["last_sample_yields"].as_u64().unwrap().div_ceil(2), "{d}");
        assert!(d["last_sample_context_switches"].as_u64().unwrap() >= seen, "{d}");
        assert!(d["last_sample_peer_saw"].as_u64().unwrap() >= 1, "{d}");
    }
    // The other cells cannot see the fault: they are skipped saying so, never ok.
    let (rows, _) = run(&["os.yield", "--inject-fault", "skip-yield"], 1);
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let same_cpu_pair = r["cell"]["params"]["mode"] == "pair" && r["cell"]["params"]["placement"] == "same-cpu";
        let want = if same_cpu_pair { "invalid" } else { "skipped" };
        assert_eq!(r["status"], want, "{}: {}", name(r), r["reason"]);
    }
}

#[test]
fn pipe_lifecycle_without_pipe2_is_invalid() {
    let ok = ok_then_invalid(&["os.pipe-lifecycle"], "skip-pipe2", &["0 of 1 pipe2 calls gave a pair; no pair to probe"]);
    let fds = &ok[0]["details"]["last_sample_fds"];
    assert!(fds.as_array().unwrap().iter().all(|fd| fd.as_i64().unwrap() >= 0), "{fds}");
    assert_eq!(ok[0]["details"]["last_sample_pairs_not_reused"], 0, "the next pair reuses the numbers of a closed one");
}

#[test]
fn startup_probes_must_run_on_a_new_pool_thread() {
    let ok = ok_then_invalid(
        &["rt.startup", "--runtime", "rayon,global-queue", "--workers", "1,2"],
        "probe-on-caller",
        &["probes ran on a thread other than the caller", "each from a new thread of the pool just built"],
    );
    assert_eq!(ok.len(), 4);
    for r in &ok {
        assert_eq!(r["details"]["probe_ran_on_pool_thread"], true, "{}", name(r));
    }
    // spawn has no pool: its probes run on the caller, faulted or not.
    let (rows, _) = run(&["rt.startup", "--runtime", "spawn", "--workers", "1", "--inject-fault", "probe-on-caller"], 0);
    assert_eq!(rows[0]["status"], "ok", "{}", rows[0]["reason"]);
    assert!(s(&rows[0]["verifier"]["expected"]).ends_with("each from the calling thread (spawn has no pool)"));
}

#[test]
fn parallel_for_counts_its_items_so_losing_item_0_is_invalid() {
    ok_then_invalid(
        &["rt.parallel-for", "--workers", "1,2", "-p", "items=5000", "--runtime", "rayon,global-queue"],
        "lose-item-0",
        &["observed 4999 counted, sum of (index + 1) mod 2^35 = 12502499"],
    );
}

#[test]
fn task_alloc_sees_one_task_lost_and_another_run_twice() {
    ok_then_invalid(
        &["rt.task-alloc", "--workers", "1,2", "-p", "tasks=5000", "--runtime", "rayon,global-queue"],
        "lose-and-double",
        // The count is right; the sum is short by 5000 - 1.
        &["expected 5000 counted, sum of (index + 1) mod 2^35 = 12502500", "observed 5000 counted, sum of (index + 1) mod 2^35 = 12497501"],
    );
}

#[test]
fn file_read_poisons_its_buffer_so_a_skipped_read_is_invalid() {
    ok_then_invalid(&["os.file-read"], "skip-read", &["mismatched (byte 0 read", "(the poison: not read)"]);
}

#[test]
fn stat_poisons_its_buffer_so_a_skipped_stat_is_invalid() {
    ok_then_invalid(&["os.stat"], "skip-stat", &["(last: size -1 B", "the poison, not filled by a stat"]);
}

#[test]
fn hugepage_rows_say_whether_huge_pages_were_obtained() {
    let small = ["-p", "bytes=4194304", "-p", "accesses=20000", "-p", "advice=hugepage", "-p", "access=sequential"];
    let (rows, md) = run(&[&["hw.thp"], &small[..]].concat(), 0);
    let ran: Vec<&Value> = rows.iter().filter(|r| r["status"] == "ok").collect();
    if ran.is_empty() {
        eprintln!("skipped: no THP here ({})", rows[0]["reason"]);
        return;
    }
    for r in ran {
        let d = &r["details"];
        let got = s(&d["huge_pages_obtained"]);
        assert!(["all", "partly", "none"].contains(&got), "{}: {d}", name(r));
        if got == "all" {
            assert!(d["note"].is_null(), "{d}");
        } else {
            let note = s(&d["note"]);
            assert!(note.starts_with("huge pages were"), "{note}");
            assert!(md.contains(&note[..40]), "report.md lacks the note of {}", name(r));
        }
    }
    // That the data is still checked (a page left untouched is invalid) is
    // hw::an_untouched_page_makes_thp_first_touch_rows_invalid.
}

#[test]
fn a_hugepage_row_that_got_no_huge_pages_says_so_in_its_details_and_the_report() {
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let mut c = sb.command(
        &[&["hw.thp", "-p", "bytes=4194304", "-p", "accesses=20000", "-p", "advice=hugepage", "-p", "access=sequential"][..], FAST]
            .concat(),
    );
    // SAFETY: prctl is async-signal-safe and touches only the child. THP
    // disabled for the run and its workers (inherited across fork and exec):
    // MADV_HUGEPAGE then gets base pages, as on a machine out of huge pages.
    unsafe {
        c.pre_exec(|| {
            if libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    if rows.iter().any(|r| r["status"] == "skipped") {
        eprintln!("skipped: no THP here ({})", rows[0]["reason"]);
        return;
    }
    let md = sb.report_md();
    assert_eq!(rows.len(), 2, "first-touch and access");
    for r in &rows {
        assert_eq!(r["status"], "ok", "no huge pages is a fact of the machine, not a failed check: {}", r["reason"]);
        let d = &r["details"];
        assert_eq!(d["huge_pages_obtained"], "none", "{d}");
        assert_eq!(d["anon_huge_bytes"], 0);
        let note = s(&d["note"]);
        assert!(note.starts_with("huge pages were NOT obtained: MADV_HUGEPAGE was advised, but AnonHugePages was 0"), "{note}");
        let phase = s(&r["cell"]["params"]["phase"]);
        assert!(md.contains(&format!("- phase={phase}: huge pages were NOT obtained")), "report.md lacks the note of {phase}:\n{md}");
    }
}

/// Two command workloads: one with no `[workload.verify]`, one that checks
/// its output.
const COMMANDS: &str = r#"
[[workload]]
id = "demo.unchecked"
summary = "Prints a result nobody reads"
unit = "ns"
direction = "lower-is-better"
command = ["sh", "-c", "echo sum=41"]

[[workload]]
id = "demo.checked"
summary = "Prints a result the verifier reads"
unit = "ns"
direction = "lower-is-better"
command = ["sh", "-c", "echo sum=42"]
[workload.verify]
value = { regex = 'sum=(\d+)', expected = 42 }
"#;

#[test]
fn a_command_workload_checking_only_its_exit_code_is_flagged_by_list_and_the_report() {
    let sb = Sandbox::new();
    let file = sb.tmp.path().join("demo.toml");
    std::fs::write(&file, COMMANDS).unwrap();
    let f = file.to_str().unwrap();
    let list = std::process::Command::new(bin()).args(["list", "--workloads", f]).output().unwrap();
    assert!(list.status.success(), "{}", text(&list.stderr));
    let listed = text(&list.stdout);
    let warnings: Vec<&str> = listed.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{listed}");
    assert!(warnings[0].starts_with("warning: `demo.unchecked`: only the exit code of each run is checked (expected 0), not its output"));
    assert!(warnings[0].ends_with(&format!("under `[workload.verify]` at {f}:2")), "{}", warnings[0]);
    assert!(listed.contains("verifier:     exit code 0 only: the output is not checked (from"), "{listed}");

    let out = sb.run(&[&["--workloads", f, "demo"], FAST].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(sb.rows().iter().all(|r| r["status"] == "ok"));
    let md = sb.report_md();
    let flagged: Vec<&str> = md.lines().filter(|l| l.starts_with("> warning:") && l.contains("only the exit code")).collect();
    assert_eq!(flagged.len(), 1, "{md}");
    assert!(flagged[0].starts_with("> warning: `demo.unchecked`: only the exit code of each run is checked"), "{}", flagged[0]);
}
