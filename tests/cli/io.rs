//! The `io` group: random reads and sequential writes run ok through every
//! engine (or are skipped with the kernel's reason), record the sizes they
//! used and the state of the page cache, fail their verifiers when a read
//! lands one block off or a block is not written, refuse a file larger than
//! the free space before writing it, and leave nothing in `--io-dir`, even
//! when a worker is killed.

use serde_json::Value;

use crate::common::{FAST, Sandbox, leftovers, saw_scratch_file, text};

/// Small files and few reads: a cell takes milliseconds.
const SMALL_READS: &[&str] = &["-p", "io.randread.file_mib=4", "-p", "io.randread.reads=256", "-p", "io.randread.depth=4"];
const SMALL_WRITES: &[&str] = &["-p", "io.seqwrite.file_mib=2", "-p", "io.seqwrite.block_kib=256"];

/// Runs the arguments with a private `--io-dir`; checks the exit code and
/// that the scratch directories are gone; returns the rows.
fn run_io(args: &[&str], want_code: i32) -> Vec<Value> {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    let out = sb.run(&[args, &["--io-dir", io.path().to_str().unwrap()], FAST].concat());
    assert_eq!(out.status.code(), Some(want_code), "{}", text(&out.stderr));
    assert_eq!(leftovers(io.path()), Vec::<String>::new(), "the io files were left behind");
    sb.rows()
}

/// A row that may be skipped only for a reason this machine can have.
fn ok_or_explained_skip(r: &Value) -> bool {
    if r["status"] == "skipped" {
        let why = r["reason"].as_str().unwrap();
        let engine = r["cell"]["params"]["engine"].as_str().unwrap();
        assert!(
            (engine == "io_uring" && why.contains("io_uring")) || why.contains("O_DIRECT"),
            "{}: skipped for '{why}'",
            r["cell"]["row_id"]
        );
        return false;
    }
    assert_eq!(r["status"], "ok", "{}: {}", r["cell"]["row_id"], r["reason"]);
    true
}

/// Every key of `details`, nested ones by their own name.
fn detail_keys(v: &Value, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            out.push(k.clone());
            detail_keys(x, out);
        }
    }
}

#[test]
fn randread_reads_through_every_engine_and_mode_and_records_its_sizes() {
    let rows = run_io(&[&["io.randread"], SMALL_READS].concat(), 0);
    let cells: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["cell"]["params"]["mode"].as_str().unwrap().into(), r["cell"]["params"]["engine"].as_str().unwrap().into()))
        .collect();
    let want: Vec<(String, String)> =
        ["buffered", "direct"].iter().flat_map(|m| ["sync", "threadpool", "io_uring"].map(|e| (m.to_string(), e.to_string()))).collect();
    assert_eq!(cells, want, "the quick profile's axes");
    for r in rows.iter().filter(|r| ok_or_explained_skip(r)) {
        assert_eq!(r["unit"], "ops/s");
        assert_eq!(r["verifier"]["passed"], true);
        let d = &r["details"];
        assert_eq!(d["file_bytes"], 4 << 20, "the size given, recorded");
        assert_eq!(d["size_rule"], "file_mib=4 given: 4 MiB");
        assert_eq!(d["reads_per_sample"], 256);
        assert!(d["machine"]["free_bytes"].as_u64().unwrap() > 0);
        for s in r["samples"].as_array().unwrap() {
            assert_eq!(s["ops"], 256, "every read of a sample completed");
        }
        let want_flight = if r["cell"]["params"]["engine"] == "sync" { 1 } else { 4 };
        assert_eq!(d["in_flight"], want_flight);
        if d["mode"] == "buffered" {
            assert!(d["page_cache"].as_str().unwrap().starts_with("cached"));
            assert!(d["resident_pct_after_prepare"].as_f64().unwrap() > 99.0);
        } else {
            let pc = d["page_cache"].as_str().unwrap();
            assert!(pc.starts_with("bypassed: O_DIRECT") || pc.starts_with("in memory: O_DIRECT was accepted"), "{pc}");
        }
    }
}

#[test]
fn randread_sizes_its_file_from_the_machine_when_not_told() {
    let rows = run_io(&["io.randread", "-p", "mode=buffered", "-p", "engine=sync", "-p", "reads=64"], 0);
    let d = &rows[0]["details"];
    let bytes = d["file_bytes"].as_u64().unwrap();
    assert!((16 << 20..=256 << 20).contains(&bytes) && bytes.is_multiple_of(1 << 20), "{bytes}");
    let rule = d["size_rule"].as_str().unwrap();
    assert!(rule.contains("last-level cache"), "{rule}");
    if let Some(llc) = d["machine"]["llc_bytes"].as_u64() {
        let free = d["machine"]["free_bytes"].as_u64().unwrap();
        let mem = d["machine"]["mem_available_bytes"].as_u64().unwrap_or(u64::MAX);
        let want = (2 * llc).clamp(64 << 20, 256 << 20).min(free / 4).min(mem / 4);
        assert_eq!(bytes, want - want % (1 << 20), "{rule}");
    }
}

#[test]
fn a_read_one_block_off_makes_every_randread_row_invalid() {
    let rows = run_io(&[&["io.randread", "--inject-fault", "off-by-one-block"], SMALL_READS].concat(), 1);
    assert_eq!(rows.len(), 6);
    for r in rows.iter().filter(|r| r["status"] != "skipped") {
        assert_eq!(r["status"], "invalid", "{}: {}", r["cell"]["row_id"], r["reason"]);
        let v = &r["verifier"];
        assert_eq!(v["expected"], "256 reads of 4096 B, each block carrying the offset it was read from: 0 mismatched, 0 short");
        let o = v["observed"].as_str().unwrap();
        assert!(o.starts_with("256 reads, 1 mismatched, 0 short (first: read 0 of offset "), "{o}");
    }
}

#[test]
fn seqwrite_times_writes_and_fsync_apart_and_reads_every_page_back() {
    let rows = run_io(&[&["io.seqwrite"], SMALL_WRITES].concat(), 0);
    let cells: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", r["cell"]["params"]["engine"].as_str().unwrap(), r["cell"]["params"]["timed"].as_str().unwrap()))
        .collect();
    assert_eq!(cells, ["sync writes", "sync fsync", "io_uring writes", "io_uring fsync"]);
    for r in rows.iter().filter(|r| ok_or_explained_skip(r)) {
        assert_eq!(r["unit"], "MB/s");
        assert_eq!(r["details"]["file_bytes"], 2 << 20);
        assert_eq!(r["details"]["blocks"], 8);
        let fsync_row = r["cell"]["params"]["timed"] == "fsync";
        for s in r["samples"].as_array().unwrap() {
            assert_eq!(s["bytes"], 2 << 20);
            assert_eq!(s["ops"], if fsync_row { 1 } else { 8 });
            assert!(s["total_ns"].as_u64().unwrap() >= s["work_ns"].as_u64().unwrap(), "the total window holds both");
        }
        let o = r["verifier"]["observed"].as_str().unwrap();
        assert_eq!(o, "2097152 B read back: 512 pages, 0 mismatched");
        assert!(r["details"]["last_sample_fsync_ns"].as_u64().is_some() && r["details"]["last_sample_write_ns"].as_u64().is_some());
    }
}

#[test]
fn a_block_left_unwritten_makes_every_seqwrite_row_invalid() {
    let rows = run_io(&[&["io.seqwrite", "--inject-fault", "skip-block"], SMALL_WRITES].concat(), 1);
    for r in rows.iter().filter(|r| r["status"] != "skipped") {
        assert_eq!(r["status"], "invalid", "{}: {}", r["cell"]["row_id"], r["reason"]);
        let v = &r["verifier"];
        assert!(
            v["expected"].as_str().unwrap().contains("512 pages of 4096 B, each with its offset and generation 1"),
            "{}",
            v["expected"]
        );
        // Block 4 of 8 (256 KiB each) kept the bytes written at prepare.
        assert_eq!(
            v["observed"],
            "2097152 B read back: 512 pages, 64 mismatched (first: page at offset 1048576 carried offset 1048576 and generation 0)"
        );
    }
}

#[test]
fn an_io_cell_larger_than_the_free_space_is_skipped_before_it_writes() {
    let huge = "file_mib=1000000000000";
    let rows = run_io(&["io.randread", "io.seqwrite", "-p", huge, "-p", "io.randread.engine=sync", "-p", "io.seqwrite.engine=sync"], 0);
    assert_eq!(rows.len(), 2 + 2);
    for r in &rows {
        assert_eq!(r["status"], "skipped", "{}", r["cell"]["row_id"]);
        let why = r["reason"].as_str().unwrap();
        assert!(why.starts_with("not enough free space: the file needs 1000000000000 MiB plus 64 MiB headroom on "), "{why}");
        assert!(why.ends_with("(statvfs f_bavail); refused before writing anything"), "{why}");
    }
}

#[test]
fn io_scratch_files_are_removed_after_a_worker_is_killed() {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    let args = [
        "io.randread",
        "-p",
        "engine=sync",
        "-p",
        "mode=buffered",
        "-p",
        "file_mib=4",
        "-p",
        "reads=64",
        "--runs",
        "100000",
        "--timeout",
        "3s",
    ];
    let seen = saw_scratch_file(&sb, &[&args[..], &["--settle", "0"]].concat(), io.path(), "randread/data");
    assert!(seen, "the worker's file was never seen in the scratch directory");
    assert_eq!(sb.rows()[0]["status"], "timeout");
    assert_eq!(leftovers(io.path()), Vec::<String>::new(), "the killed worker's file is left behind");
}

#[test]
fn record_format_md_names_every_io_detail() {
    let mut rows = run_io(&[&["io.randread", "-p", "engine=io_uring", "-p", "mode=direct"], SMALL_READS].concat(), 0);
    rows.extend(run_io(&[&["io.seqwrite", "-p", "engine=sync", "-p", "timed=fsync"], SMALL_WRITES].concat(), 0));
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/RECORD-FORMAT.md")).unwrap();
    let io_part = &doc[doc.find("- `io.randread`").expect("an io.randread entry")..];
    let mut keys = Vec::new();
    for r in rows.iter().filter(|r| r["status"] == "ok") {
        detail_keys(&r["details"], &mut keys);
    }
    assert!(!keys.is_empty(), "no ok io row to check");
    let missing: Vec<&String> = keys.iter().filter(|k| !io_part.contains(&format!("`{k}`"))).collect();
    assert!(missing.is_empty(), "docs/RECORD-FORMAT.md's io entries do not name {missing:?}");
}
