//! `npb.ep` and `npb.cg` end to end at class S (the quick profile), on every
//! runtime (the three task runtimes and team) with 1 and 2 workers: every row verifies against NPB 3.4's official
//! values, and each injected fault makes the rows invalid. One trial of one sample per row:
//! class S EP takes seconds in the debug build.

use serde_json::Value;

use crate::common::{Sandbox, text};

const ONE_SAMPLE: &[&str] = &["--trials", "1", "--runs", "1", "--warmup", "0", "--settle", "0", "--timeout", "300s"];

/// Runs `args` (ONE_SAMPLE added) and returns the rows, checking the exit code.
fn run(args: &[&str], code: i32) -> Vec<Value> {
    let sb = Sandbox::new();
    let out = sb.run(&[args, ONE_SAMPLE].concat());
    assert_eq!(out.status.code(), Some(code), "{}\n{}", text(&out.stdout), text(&out.stderr));
    sb.rows()
}

#[test]
fn class_s_verifies_on_every_runtime_with_1_and_2_workers() {
    let rows = run(&["npb.ep", "npb.cg", "--workers", "1,2"], 0);
    assert_eq!(rows.len(), 16, "2 workloads x 4 runtimes x 2 worker counts");
    for r in &rows {
        let id = r["cell"]["row_id"].as_str().unwrap();
        assert_eq!(r["status"], "ok", "{id}: {}", r["reason"]);
        assert_eq!(r["verifier"]["passed"], true, "{id}: {}", r["verifier"]);
        assert_eq!(r["shape"], "scaling");
        assert_eq!(r["cell"]["params"]["class"], "S");
        assert_eq!(r["samples"].as_array().unwrap().len(), 1);
        assert!(r["samples"][0]["value"].as_f64().unwrap() > 0.0);
        let d = &r["details"];
        match r["cell"]["workload"].as_str().unwrap() {
            "npb.ep" => {
                assert_eq!(d["gaussian_pairs"], 13_176_389, "{id}");
                assert_eq!(d["ops_per_sample"], 1u64 << 25);
                assert_eq!(r["samples"][0]["ops"], 1u64 << 25);
                assert!(d["sx_rel_error"].as_f64().unwrap() <= 1e-8 && d["sy_rel_error"].as_f64().unwrap() <= 1e-8, "{d}");
            }
            "npb.cg" => {
                assert_eq!((d["na"].as_u64(), d["nonzeros"].as_u64()), (Some(1400), Some(78_148)), "{id}");
                assert_eq!(d["ops_per_sample"], 66_654_000);
                assert!(d["zeta_rel_error"].as_f64().unwrap() <= 1e-10, "{d}");
            }
            other => panic!("unexpected workload {other}"),
        }
    }
    for runtime in ["rayon", "global-queue", "spawn", "team"] {
        assert_eq!(rows.iter().filter(|r| r["cell"]["params"]["runtime"] == runtime).count(), 4, "{runtime}");
    }
}

/// Every row of `id` with `fault` is invalid, its verifier failed with the expected
/// value quoted.
fn all_invalid(id: &str, fault: &str, extra: &[&str], expected: &str) {
    let rows = run(&[&[id, "--inject-fault", fault], extra].concat(), 1);
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["cell"]["fault"], fault);
        assert_eq!(r["status"], "invalid", "{}", r["cell"]["row_id"]);
        let v = &r["verifier"];
        assert_eq!(v["passed"], false);
        assert!(v["expected"].as_str().unwrap().contains(expected), "{v}");
        assert!(r["reason"].as_str().unwrap().starts_with("verifier failed: expected"), "{}", r["reason"]);
    }
}

#[test]
fn a_skipped_batch_makes_ep_invalid() {
    // One worker count per runtime: each EP sample takes seconds in the debug build.
    all_invalid("npb.ep", "skip-batch", &["--workers", "2"], "gaussian pairs = 13176389 exactly");
}

#[test]
fn a_perturbed_matrix_makes_cg_invalid() {
    all_invalid("npb.cg", "perturb-matrix", &["--workers", "1,2"], "zeta = 8.5971775078648e0");
}
