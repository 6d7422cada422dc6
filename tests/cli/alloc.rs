//! The allocator workloads: ok on every built-in allocator with the library
//! recorded, invalid when a block is corrupted on purpose, an allocator
//! library preloaded into the worker alone, and a library that cannot be
//! preloaded refused before the run starts.

use std::path::Path;

use serde_json::Value;

use crate::common::{FAST, Sandbox, text};

/// Small sizes for `alloc.random-mixed` (two iteration counts, so that the
/// cold-start table has a shortest and a longest run).
const SMALL_MIXED: &[&str] = &["-p", "iterations=5000,20000"];
/// Small sizes for `alloc.larson`.
const SMALL_LARSON: &[&str] = &["-p", "duration_ms=20", "-p", "blocks_per_thread=200", "-p", "rounds=5"];
/// Small sizes for `alloc.xthread`.
const SMALL_XTHREAD: &[&str] = &["-p", "blocks=3000"];

fn details<'a>(r: &'a Value, key: &str) -> &'a Value {
    let v = &r["details"][key];
    assert!(!v.is_null(), "{} has no details.{key}: {}", r["cell"]["row_id"], r["details"]);
    v
}

#[test]
fn every_alloc_workload_is_ok_on_every_built_in_allocator() {
    let sb = Sandbox::new();
    let out = sb.run(&[&["alloc", "--workers", "1,2"], FAST, SMALL_MIXED, SMALL_LARSON, SMALL_XTHREAD].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    // random-mixed 2 x 3, larson 2 x 3, xthread 3.
    assert_eq!(rows.len(), 15);
    for r in &rows {
        assert_eq!(r["status"], "ok", "{}: {}", r["cell"]["row_id"], r["reason"]);
        assert_eq!(r["unit"], "ops/s");
        let name = r["cell"]["params"]["allocator"].as_str().unwrap();
        assert_eq!(details(r, "allocator"), name);
        details(r, "allocator_version");
        let lib = details(r, "allocator_library").as_str().unwrap();
        let provider = details(r, "malloc_provider").as_str().unwrap();
        assert!(provider.contains("libc"), "no preload: malloc is the C library's, not {provider}");
        match name {
            "system" => assert_eq!(lib, provider),
            "mimalloc" | "jemalloc" => assert!(lib.starts_with("built in"), "{lib}"),
            other => panic!("unexpected allocator {other}"),
        }
    }
    let by = |w: &str| rows.iter().filter(|r| r["cell"]["workload"] == w).collect::<Vec<_>>();
    for r in by("alloc.random-mixed") {
        let live = details(r, "expected_live_blocks").as_u64().unwrap();
        assert_eq!(live, 256, "5,000 draws visit every one of 256 slots");
        let n = r["cell"]["params"]["iterations"].as_u64().unwrap();
        assert!(r["samples"].as_array().unwrap().iter().all(|s| s["ops"] == n), "one op per iteration");
    }
    for r in by("alloc.larson") {
        assert_eq!(details(r, "chains"), &r["cell"]["workers"]);
        let threads = details(r, "last_sample_threads").as_array().unwrap();
        assert!(threads.iter().all(|t| t.as_u64().unwrap() >= 1), "{threads:?}");
    }
    for r in by("alloc.xthread") {
        assert_eq!(details(r, "producers"), 1);
        assert!(r["samples"].as_array().unwrap().iter().all(|s| s["total_ns"].as_u64() >= s["work_ns"].as_u64()));
    }
    let md = sb.report_md();
    for want in [
        "pool the timed samples of every trial (ops/s;",
        "Allocator vs system",
        "| jemalloc  |",
        "Cold start vs steady state",
        "| 5,000 iterations |",
        "### Run-to-run variance",
    ] {
        assert!(md.contains(want), "report.md lacks {want}:\n{md}");
    }
}

#[test]
fn a_corrupted_block_makes_every_alloc_row_invalid() {
    let sb = Sandbox::new();
    let out = sb.run(
        &[
            &["alloc", "--workers", "1", "--allocator", "system,jemalloc", "--inject-fault", "corrupt-block"],
            FAST,
            SMALL_MIXED,
            SMALL_LARSON,
            SMALL_XTHREAD,
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 8);
    for r in &rows {
        assert_eq!(r["status"], "invalid", "{}: {}", r["cell"]["row_id"], r["reason"]);
        let v = &r["verifier"];
        assert_eq!(v["passed"], false);
        assert!(v["expected"].as_str().unwrap().starts_with("0 damaged"), "{}", v["expected"]);
        assert!(v["observed"].as_str().unwrap().starts_with("1 damaged (first: block"), "{}", v["observed"]);
        assert_eq!(v["checked_samples"], 1, "the first sample already fails");
    }
    assert!(sb.report_md().contains("verifier failed: expected 0 damaged"));
}

/// An allocator library from the distribution, if one is installed
/// (`apt-get install libjemalloc2` or `libtcmalloc-minimal4`).
fn installed_allocator_library() -> Option<String> {
    let dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"];
    let names = ["libjemalloc.so.2", "libtcmalloc_minimal.so.4"];
    dirs.iter().flat_map(|d| names.iter().map(move |n| Path::new(d).join(n))).find(|p| p.is_file()).map(|p| p.display().to_string())
}

#[test]
fn a_preloaded_allocator_library_replaces_malloc_in_the_worker_only() {
    let Some(lib) = installed_allocator_library() else {
        eprintln!("skipped: no libjemalloc.so.2 or libtcmalloc_minimal.so.4 installed (apt-get install libjemalloc2)");
        return;
    };
    let sb = Sandbox::new();
    let allocators = format!("system,preload:{lib}");
    let out = sb.run(&[&["alloc.random-mixed", "alloc.xthread", "--allocator", &allocators], FAST, SMALL_MIXED, SMALL_XTHREAD].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 6);
    let file = Path::new(&lib).file_name().unwrap().to_str().unwrap();
    for r in &rows {
        assert_eq!(r["status"], "ok", "{}: {}", r["cell"]["row_id"], r["reason"]);
        let provider = details(r, "malloc_provider").as_str().unwrap();
        if r["cell"]["params"]["allocator"] == "system" {
            assert!(provider.contains("libc"), "LD_PRELOAD reached a system row: {provider}");
            assert!(r["details"]["preload_mapped"].is_null());
        } else {
            assert!(provider.ends_with(file), "malloc bound to {provider}, not {lib}");
            assert_eq!(details(r, "allocator_library").as_str().unwrap(), provider);
            let mapped = details(r, "preload_mapped").as_array().unwrap();
            assert!(!mapped.is_empty(), "the library is not in the worker's maps");
        }
    }
    // The same verifier, with the same expectations, for both allocators.
    for w in ["alloc.random-mixed", "alloc.xthread"] {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["cell"]["workload"] == w).collect();
        let key = |r: &Value| (r["cell"]["params"]["iterations"].clone(), r["verifier"]["expected"].clone());
        let sys: Vec<_> = mine.iter().filter(|r| r["cell"]["params"]["allocator"] == "system").map(|r| key(r)).collect();
        let pre: Vec<_> = mine.iter().filter(|r| r["cell"]["params"]["allocator"] != "system").map(|r| key(r)).collect();
        assert_eq!(sys, pre, "{w}");
    }
}

#[test]
fn a_library_that_cannot_replace_malloc_is_refused_before_the_run_starts() {
    for (lib, why) in [
        ("/nonexistent/libnothing.so", "does not exist"),
        ("libnot-a-library-anywhere.so.1", "does not load"),
        ("libm.so.6", "malloc stays bound to"),
    ] {
        let sb = Sandbox::new();
        let out = sb.run(&["alloc.random-mixed", "--allocator", &format!("preload:{lib}")]);
        assert_eq!(out.status.code(), Some(2), "{lib}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains(&format!("--allocator preload:{lib}: ")) && err.contains(why), "{lib}: {err}");
        assert!(!sb.run_dir().exists(), "{lib}: no run directory for a refused run");
    }
}
