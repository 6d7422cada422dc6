//! The `os` IPC and scheduling workloads end to end (their peers are forked
//! processes, which only a single-threaded worker may create): every row is
//! ok (or skipped with a reason on a machine that cannot place it), and each
//! injected fault makes the rows it reaches invalid, with the verifier's
//! expected and observed values.

use serde_json::Value;

use crate::common::{FAST, Sandbox, s, text};

/// Runs `args` (FAST added) and returns the rows, checking the exit code.
fn run(args: &[&str], code: i32) -> Vec<Value> {
    let sb = Sandbox::new();
    let out = sb.run(&[args, FAST].concat());
    assert_eq!(out.status.code(), Some(code), "{}\n{}", text(&out.stdout), text(&out.stderr));
    sb.rows()
}

/// Every row of `id` is ok (with samples and the detail keys given) or
/// skipped with a reason; returns the ok rows.
fn all_ok(id: &str, extra: &[&str], keys: &[&str]) -> Vec<Value> {
    let rows = run(&[&[id], extra].concat(), 0);
    assert!(!rows.is_empty());
    let mut ok = Vec::new();
    for r in rows {
        assert_eq!(r["cell"]["workload"], id);
        match r["status"].as_str() {
            Some("ok") => {
                assert_eq!(r["verifier"]["passed"], true, "{}", r["verifier"]);
                assert_eq!(r["shape"], "primitive");
                assert!(r["measurement"]["iters_per_sample"].as_u64().unwrap() >= 1);
                assert!(r["samples"].as_array().unwrap().len() >= 3);
                for k in keys {
                    assert!(!r["details"][k].is_null(), "{}: details.{k} missing in {}", r["cell"]["row_id"], r["details"]);
                }
                ok.push(r);
            }
            Some("skipped") => assert!(!r["reason"].as_str().unwrap_or("").is_empty(), "a skip without a reason"),
            other => panic!("{}: status {other:?}: {}", r["cell"]["row_id"], r["reason"]),
        }
    }
    ok
}

/// Runs `id` with the fault: every row is invalid (or skipped) and its
/// verifier record failed; returns the invalid rows' verifier records.
fn all_invalid(id: &str, fault: &str, extra: &[&str]) -> Vec<Value> {
    let rows = run(&[&[id, "--inject-fault", fault], extra].concat(), 1);
    let mut verdicts = Vec::new();
    for r in rows {
        assert_eq!(r["cell"]["fault"], fault);
        match r["status"].as_str() {
            Some("invalid") => {
                let v = &r["verifier"];
                assert_eq!(v["passed"], false);
                assert_ne!(v["expected"], v["observed"]);
                assert!(r["reason"].as_str().unwrap().starts_with("verifier failed: expected"), "{}", r["reason"]);
                verdicts.push(v.clone());
            }
            Some("skipped") => assert!(!r["reason"].as_str().unwrap_or("").is_empty()),
            other => panic!("{}: status {other:?} under fault {fault}: {}", r["cell"]["row_id"], r["reason"]),
        }
    }
    assert!(!verdicts.is_empty(), "no row of {id} reached the fault");
    verdicts
}

#[test]
fn syscall_rows_are_ok_and_a_wrong_id_is_caught() {
    for call in ["getppid", "getpid"] {
        let ok = all_ok("os.syscall", &["-p", &format!("call={call}")], &["expected_id", "syscall_number"]);
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0]["details"]["call"], call);
        assert_eq!(ok[0]["unit"], "ns/op");
    }
    for v in all_invalid("os.syscall", "wrong-pid", &[]) {
        // The calls returned the real id; the loop compared them with a wrong one.
        let id = s(&v["expected"]).split_whitespace().nth(5).unwrap().to_string();
        assert!(s(&v["expected"]).starts_with("0 mismatches: every getppid returns"), "{v}");
        assert_eq!(s(&v["observed"]), format!("1 mismatches in 1 calls (last call returned {id})"));
    }
}

#[test]
fn yield_rows_are_ok_or_skipped_and_a_silent_peer_is_caught() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["os.yield"], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 4, "mode x placement");
    for r in &rows {
        let (mode, placement) = (s(&r["cell"]["params"]["mode"]), s(&r["cell"]["params"]["placement"]));
        if mode == "single" && placement == "cross-cpu" {
            assert_eq!(r["status"], "skipped");
            assert_eq!(r["reason"], "single-thread yield has one end; placement does not apply");
            assert_eq!(r["skip"], "by-design");
        } else if r["status"] == "ok" {
            assert_eq!(r["details"]["mode"], mode);
            assert_eq!(r["details"]["cpu_b"].is_null(), mode == "single");
        } else {
            assert_eq!(r["status"], "skipped", "{}: {}", r["cell"]["row_id"], r["reason"]);
        }
    }
    all_ok("os.yield", &["-p", "mode=pair"], &["cpu_a", "cpu_b", "placement_note", "last_sample_peer_yields_in_window"]);
    for v in all_invalid("os.yield", "lose-progress", &["-p", "mode=pair"]) {
        assert!(s(&v["observed"]).ends_with("0 yields since woken (0 inside the window)"), "{v}");
    }
}

#[test]
fn pipe_lifecycle_rows_are_ok_and_a_leaked_descriptor_is_caught() {
    all_ok("os.pipe-lifecycle", &[], &["last_sample_fds"]);
    for v in all_invalid("os.pipe-lifecycle", "leak-fd", &[]) {
        assert!(s(&v["expected"]).contains("EBADF"), "{v}");
        assert!(s(&v["observed"]).starts_with("1 of 1 pipe2 calls gave a pair; last pair ["), "{v}");
        assert!(s(&v["observed"]).contains("is still open"), "{v}");
    }
}

#[test]
fn ipc_round_trips_are_ok_on_every_transport_and_a_corrupted_echo_is_caught() {
    let ok = all_ok("os.ipc-rtt", &[], &["cpu_a", "cpu_b", "placement_note", "peer", "round_trips_total"]);
    let transports: Vec<&str> = ok.iter().map(|r| s(&r["details"]["transport"])).collect();
    for t in ["pipe", "unix", "thread", "loopback"] {
        assert!(transports.contains(&t), "no ok {t} row: {transports:?}");
    }
    for r in &ok {
        let forked = s(&r["details"]["peer"]).starts_with("forked process");
        let transport = s(&r["details"]["transport"]);
        assert_eq!(forked, transport == "pipe" || transport == "unix", "{}", r["details"]);
        if transport == "loopback" {
            assert_eq!(r["details"]["peer"], "none (loopback)");
        }
        if r["cell"]["params"]["placement"] == "same-cpu" {
            assert_eq!(r["details"]["cpu_a"], r["details"]["cpu_b"]);
        } else {
            assert_ne!(r["details"]["cpu_a"], r["details"]["cpu_b"]);
        }
    }
    all_ok("os.ipc-rtt", &["-p", "bytes=1000", "-p", "transport=unix", "-p", "placement=same-cpu"], &["message_bytes"]);
    let verdicts = all_invalid("os.ipc-rtt", "corrupt-echo", &[]);
    assert!(verdicts.len() >= 4, "one invalid row per transport at least");
    for v in verdicts {
        assert_eq!(v["expected"], "0 mismatches: every echo carries the sequence number sent");
        // A peer flips a bit of its first echo; loopback reads a stale message first.
        let observed = s(&v["observed"]);
        assert!(
            observed == "1 mismatches in 1 round trips (first: sent 1, echoed 0)"
                || observed.starts_with("1 mismatches in 1 round trips (first: sent 1, echoed 6510615555426900570)"),
            "{v}"
        );
    }
}

#[test]
fn ipc_bandwidth_rows_are_ok_in_mb_per_s_and_a_corrupted_byte_is_caught() {
    for r in all_ok("os.ipc-bw", &[], &["cpu_a", "cpu_b", "placement_note", "receiver_pid", "pipe_capacity_bytes"]) {
        assert_eq!(r["unit"], "MB/s");
        assert_eq!(r["details"]["message_bytes"], 1024);
        for smp in r["samples"].as_array().unwrap() {
            assert_eq!(smp["bytes"].as_u64().unwrap(), 1024 * smp["ops"].as_u64().unwrap());
        }
    }
    all_ok("os.ipc-bw", &["-p", "size=1000", "-p", "placement=same-cpu"], &["message_bytes"]);
    for v in all_invalid("os.ipc-bw", "corrupt-byte", &[]) {
        assert!(s(&v["expected"]).ends_with("over 1024 bytes (sender, 1 messages)"), "{v}");
        assert!(s(&v["observed"]).ends_with("over 1024 bytes (receiver)"), "{v}");
    }
}

#[test]
fn futex_hand_offs_are_ok_and_a_skipped_step_is_caught() {
    for r in all_ok("os.futex-ctx", &[], &["cpu_a", "cpu_b", "placement_note", "handoffs_total"]) {
        assert_eq!(r["unit"], "ns/op");
    }
    for v in all_invalid("os.futex-ctx", "skip-step", &[]) {
        assert_eq!(v["expected"], "0 mismatches on both sides; the counter advances by 2");
        assert_eq!(
            v["observed"],
            "1 mismatches (measuring thread), 0 (peer); the counter advanced by 3 in 1 hand-offs; first: expected 2, woke to 3"
        );
    }
}

#[test]
fn a_fault_of_one_workload_leaves_the_others_ok() {
    let rows = run(&["os.syscall", "os.pipe-lifecycle", "--inject-fault", "leak-fd"], 1);
    let status = |id: &str| rows.iter().find(|r| r["cell"]["workload"] == id).map(|r| r["status"].clone()).unwrap();
    assert_eq!(status("os.syscall"), "ok");
    assert_eq!(status("os.pipe-lifecycle"), "invalid");
}
