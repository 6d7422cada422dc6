//! The `hw` group end to end: every row ok or skipped with its reason, sizes
//! derived from the envelope and recorded, the AnonHugePages of each THP
//! region recorded, SMT rows skipped exactly when the machine has no SMT
//! siblings, and each injected fault making its rows invalid.

use serde_json::Value;

use crate::common::{FAST, Sandbox, row_name as name, text};

/// Small sizes for the workloads of `selection` (a parameter no selected
/// workload has is an error): a cell takes milliseconds in the debug build.
fn small(selection: &str) -> Vec<&'static str> {
    let mut args = Vec::new();
    let all = selection == "hw";
    if all || selection == "hw.prefetch" {
        args.extend(["-p", "hw.prefetch.bytes=4194304", "-p", "hw.prefetch.accesses=20000"]);
    }
    if all || selection == "hw.thp" {
        args.extend(["-p", "hw.thp.bytes=4194304", "-p", "hw.thp.accesses=20000"]);
    }
    if all || selection == "hw.affinity" {
        args.extend(["-p", "hw.affinity.ops=20000"]);
    }
    if all || selection == "hw.smt" {
        args.extend(["-p", "hw.smt.ops=20000"]);
    }
    args
}

/// Runs `args` (after `run`), checks the exit code, returns the rows and the run record.
fn run(args: &[&str], want_code: i32) -> (Vec<Value>, Value) {
    let sb = Sandbox::new();
    let out = sb.run(&[args, FAST].concat());
    assert_eq!(out.status.code(), Some(want_code), "{args:?}: {}", text(&out.stderr));
    (sb.rows(), sb.run_json())
}

fn id(r: &Value) -> &str {
    r["cell"]["workload"].as_str().unwrap()
}

/// Whether the machine the run described has SMT siblings in the CPUs it may use.
fn has_smt(run: &Value) -> bool {
    let allowed: Vec<u64> = run["envelope"]["cpu_limits"]["allowed"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    run["envelope"]["cpu"]["smt_siblings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|core| core.as_array().unwrap().iter().filter(|c| allowed.contains(&c.as_u64().unwrap())).count() > 1)
}

/// The details each workload must record.
fn detail_keys(workload: &str) -> &'static [&'static str] {
    match workload {
        "hw.affinity" => &["threads", "ops_per_thread", "counter_layout", "allowed_cpus", "last_sample_thread_cpus"],
        "hw.prefetch" => &["bytes", "size_source", "lines", "line_bytes", "accesses_per_sample", "order", "backing_after_prepare"],
        "hw.smt" => &["cpus", "placement_note", "steps_per_thread", "chains"],
        "hw.thp" => &["bytes", "size_source", "phase", "advice", "anon_huge_bytes", "backing_last_sample", "thp_enabled"],
        other => panic!("unexpected workload {other}"),
    }
}

#[test]
fn every_hw_row_is_ok_or_skipped_with_its_reason_and_records_its_sizes() {
    let (rows, run) = run(&[&["hw"], small("hw").as_slice()].concat(), 0);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/RECORD-FORMAT.md")).unwrap();
    let smt = has_smt(&run);
    // 8 affinity (2 x 2 x worker counts) at least 1 worker count; 3 prefetch; 3 smt; 8 thp.
    for w in ["hw.prefetch", "hw.smt"] {
        assert_eq!(rows.iter().filter(|r| id(r) == w).count(), 3, "{w}");
    }
    assert_eq!(rows.iter().filter(|r| id(r) == "hw.thp").count(), 8);
    assert!(rows.iter().filter(|r| id(r) == "hw.affinity").count() >= 4);
    for r in &rows {
        match r["status"].as_str() {
            Some("ok") => {}
            Some("skipped") => {
                let why = r["reason"].as_str().unwrap_or("");
                assert!(!why.is_empty(), "{}: a skip without a reason", name(r));
                if id(r) == "hw.smt" {
                    assert!(!smt && why.starts_with("no SMT siblings"), "{}: {why}", name(r));
                }
                continue;
            }
            other => panic!("{}: status {other:?}: {}", name(r), r["reason"]),
        }
        assert!(id(r) != "hw.smt" || smt, "{}: ran without SMT siblings", name(r));
        assert_eq!(r["verifier"]["passed"], true, "{}", r["verifier"]);
        for k in detail_keys(id(r)) {
            assert!(!r["details"][k].is_null(), "{}: details.{k} missing in {}", name(r), r["details"]);
        }
        for k in r["details"].as_object().unwrap().keys() {
            assert!(doc.contains(&format!("`{k}`")), "docs/RECORD-FORMAT.md does not name {}'s detail `{k}`", id(r));
        }
        match id(r) {
            "hw.prefetch" | "hw.thp" => {
                assert_eq!(r["details"]["bytes"], 4 << 20, "{}", name(r));
                assert!(r["details"]["size_source"].as_str().unwrap().contains("--param"));
            }
            _ => {}
        }
        if id(r) == "hw.thp" {
            let huge = r["details"]["anon_huge_bytes"].as_u64().unwrap();
            if r["cell"]["params"]["advice"] == "nohugepage" {
                assert_eq!(huge, 0, "{}: MADV_NOHUGEPAGE got huge pages", name(r));
            }
            assert!(huge <= 4 << 20, "{}: {huge} huge bytes in a 4 MiB region", name(r));
        }
    }
}

#[test]
fn the_prefetch_array_is_twice_the_last_level_cache_of_the_envelope() {
    let (rows, run) = run(&["hw.prefetch", "-p", "pattern=sequential", "-p", "accesses=20000"], 0);
    let r = &rows[0];
    if r["status"] == "skipped" {
        // Too little memory, or no cache sizes: the reason says which.
        let why = r["reason"].as_str().unwrap();
        assert!(why.contains("MemAvailable") || why.contains("no cache sizes"), "{why}");
        return;
    }
    assert_eq!(r["status"], "ok", "{}", r["reason"]);
    let caches = run["envelope"]["cpu"]["caches"].as_array().unwrap();
    let llc = caches
        .iter()
        .filter(|c| c["kind"] != "Instruction")
        .max_by_key(|c| (c["level"].as_u64().unwrap(), c["size_bytes"].as_u64().unwrap()))
        .unwrap();
    let d = &r["details"];
    assert_eq!(d["llc_bytes"], llc["size_bytes"]);
    let want = 2 * llc["size_bytes"].as_u64().unwrap();
    let got = d["bytes"].as_u64().unwrap();
    assert!(got >= want && got - want < 2 << 20, "{got} bytes for 2 x {want}");
    assert!(d["size_source"].as_str().unwrap().starts_with("2 x L"), "{d}");
    assert_eq!(d["lines"].as_u64().unwrap() * d["line_bytes"].as_u64().unwrap(), got);
}

/// Runs `selection` with `fault`: every row that ran is invalid with the
/// verifier's observation, except those `unaffected` says the fault misses.
fn fault_makes_rows_invalid(selection: &str, fault: &str, observed: &str, unaffected: impl Fn(&Value) -> bool) {
    let (rows, _) = run(&[&[selection, "--inject-fault", fault], small(selection).as_slice()].concat(), 1);
    let mut invalid = 0;
    for r in &rows {
        match r["status"].as_str() {
            Some("skipped") => continue,
            Some("ok") => assert!(unaffected(r), "{}: ok despite {fault}", name(r)),
            Some("invalid") => {
                invalid += 1;
                assert_eq!(r["verifier"]["passed"], false);
                let o = r["verifier"]["observed"].as_str().unwrap();
                assert!(o.contains(observed), "{}: observed '{o}' lacks '{observed}'", name(r));
            }
            other => panic!("{}: status {other:?}: {}", name(r), r["reason"]),
        }
    }
    assert!(invalid > 0, "{selection} with {fault}: no invalid row");
}

#[test]
fn a_dropped_increment_makes_affinity_rows_invalid() {
    fault_makes_rows_invalid("hw.affinity", "drop-increment", "counter", |_| false);
}

#[test]
fn a_skipped_line_makes_prefetch_and_thp_access_rows_invalid() {
    fault_makes_rows_invalid("hw.prefetch", "skip-line", "ranks summing to", |_| false);
    fault_makes_rows_invalid("hw.thp", "skip-line", "ranks summing to", |r| r["cell"]["params"]["phase"] == "first-touch");
}

#[test]
fn an_untouched_page_makes_thp_first_touch_rows_invalid() {
    fault_makes_rows_invalid("hw.thp", "skip-page", "1 mismatches", |r| r["cell"]["params"]["phase"] == "access");
}

#[test]
fn smt_rows_are_invalid_with_a_wrong_seed_or_skipped_without_siblings() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["hw.smt", "--inject-fault", "wrong-seed"], small("hw.smt").as_slice(), FAST].concat());
    let (rows, run) = (sb.rows(), sb.run_json());
    let want = if has_smt(&run) { ("invalid", 1) } else { ("skipped", 0) };
    assert_eq!(out.status.code(), Some(want.1), "{}", text(&out.stderr));
    for r in &rows {
        assert_eq!(r["status"], want.0, "{}: {}", name(r), r["reason"]);
        if want.0 == "invalid" {
            assert!(r["verifier"]["observed"].as_str().unwrap().contains("differ"));
        } else {
            assert!(r["reason"].as_str().unwrap().starts_with("no SMT siblings"));
        }
    }
}
