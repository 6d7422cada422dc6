//! The file, memory, thread and process workloads of the `os` group: each
//! runs ok, each injected fault makes its row invalid with the verifier's
//! expected and observed values, and the cells' scratch directories are gone
//! after the run, even when a worker is killed by the timeout.

use serde_json::Value;

use crate::common::{FAST, Sandbox, leftovers, saw_scratch_file, text};

/// Runs `id` (with `extra` arguments) with its scratch directories in a
/// private `--io-dir`; returns its rows and checks the scratch is gone.
fn run_rows(id: &str, extra: &[&str], want_code: i32) -> Vec<Value> {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    let io_dir = io.path().to_str().unwrap();
    let out = sb.run(&[&[id, "--io-dir", io_dir], FAST, extra].concat());
    assert_eq!(out.status.code(), Some(want_code), "{id}: {}", text(&out.stderr));
    assert_eq!(leftovers(io.path()), Vec::<String>::new(), "{id} left its scratch directory behind");
    let rows: Vec<Value> = sb.rows().into_iter().filter(|r| r["cell"]["workload"] == id).collect();
    assert!(!rows.is_empty(), "{id} has no row");
    rows
}

/// `id` runs ok (every row, details with `keys`), then with `fault` every row
/// is invalid with the verifier's `expected` and `observed` (substrings).
/// Returns the ok rows.
fn ok_then_invalid(id: &str, keys: &[&str], fault: &str, expected: &str, observed: &str) -> Vec<Value> {
    let ok = run_rows(id, &[], 0);
    for r in &ok {
        assert_eq!(r["status"], "ok", "{id}: {}", r["reason"]);
        assert_eq!(r["verifier"]["passed"], true);
        assert_eq!(r["unit"], "ns/op");
        assert!(r["measurement"]["iters_per_sample"].as_u64().unwrap() >= 1);
        for s in r["samples"].as_array().unwrap() {
            assert_eq!(s["ops"], s["iters"], "{id}: one operation per iteration");
        }
        for k in keys {
            assert!(!r["details"][k].is_null(), "{id}: details has no {k}: {}", r["details"]);
        }
    }
    for r in run_rows(id, &["--inject-fault", fault], 1) {
        assert_eq!(r["status"], "invalid", "{id} with {fault}: {}", r["reason"]);
        let v = &r["verifier"];
        assert_eq!(v["passed"], false);
        let (e, o) = (v["expected"].as_str().unwrap(), v["observed"].as_str().unwrap());
        assert!(e.contains(expected), "{id}: expected '{e}' lacks '{expected}'");
        assert!(o.contains(observed), "{id}: observed '{o}' lacks '{observed}'");
    }
    ok
}

#[test]
fn mmap_touches_every_page_and_a_skipped_page_is_invalid() {
    ok_then_invalid(
        "os.mmap",
        &["size", "page_size", "pages_per_map"],
        "skip-page",
        "0 mismatched of 1 pages read back",
        "1 mismatched of 1 pages read back",
    );
}

#[test]
fn file_create_reads_back_every_file_and_a_short_write_is_invalid() {
    ok_then_invalid(
        "os.file-create",
        &["filesystem", "bytes"],
        "short-write",
        "1 files of 64 B with the bytes written",
        "1 of 1 files read back wrong; first: f0000000 is 63 B, expected 64 B",
    );
}

#[test]
fn file_read_returns_the_bytes_written_and_a_corrupt_file_is_invalid() {
    ok_then_invalid(
        "os.file-read",
        &["filesystem", "bytes"],
        "corrupt-file",
        "1 reads of the 64 B recorded at prepare",
        "1 reads, 1 mismatched (byte 0 read",
    );
}

#[test]
fn stat_sees_the_recorded_size_and_a_grown_file_is_invalid() {
    ok_then_invalid(
        "os.stat",
        &["filesystem", "file_bytes", "inode"],
        "grow-file",
        "of size 64 B, inode ",
        "1 mismatched (last: size 65 B, inode ",
    );
}

#[test]
fn unlink_deletes_every_file_and_a_skipped_unlink_is_invalid() {
    ok_then_invalid(
        "os.unlink",
        &["filesystem", "file_bytes"],
        "skip-unlink",
        "0 of 1 files left, entries 1 -> 0",
        "1 of 1 files left (first: u0000000), entries 1 -> 1",
    );
}

#[test]
fn readdir_lists_10_and_30_entries_and_an_extra_entry_is_invalid() {
    let rows = ok_then_invalid(
        "os.readdir",
        &["filesystem", "entries"],
        "extra-entry",
        "entries prepare created, 0 mismatched",
        "1 mismatched (last: ", // 11 or 31 entries
    );
    let invalid = run_rows("os.readdir", &["--inject-fault", "extra-entry"], 1);
    let observed: Vec<&str> = invalid.iter().map(|r| r["verifier"]["observed"].as_str().unwrap()).collect();
    assert_eq!(
        observed,
        [
            "1 listings, 1 mismatched (last: 11 entries; extra: extra-entry; missing: none)",
            "1 listings, 1 mismatched (last: 31 entries; extra: extra-entry; missing: none)"
        ]
    );
    let entries: Vec<u64> = rows.iter().map(|r| r["cell"]["params"]["entries"].as_u64().unwrap()).collect();
    assert_eq!(entries, [10, 30], "the quick profile's axis");
    for r in &rows {
        assert_eq!(r["details"]["entries"], r["cell"]["params"]["entries"]);
    }
}

#[test]
fn thread_spawn_joins_every_thread_and_a_wrong_return_is_invalid() {
    ok_then_invalid(
        "os.thread-spawn",
        &[],
        "wrong-return",
        "1 threads joined, 0 returned a wrong value",
        "1 threads joined, 1 returned a wrong value",
    );
}

#[test]
fn process_spawn_children_print_their_token_and_a_wrong_token_is_invalid() {
    ok_then_invalid(
        "os.process-spawn",
        &["child_argv", "child_exe_bytes"],
        "wrong-token",
        "1 children exited 0 and printed their token",
        "1 children, 1 mismatched; first: child 0 (exit status: 0) printed",
    );
}

#[test]
fn scratch_directories_are_removed_after_a_worker_is_killed_by_the_timeout() {
    let sb = Sandbox::new();
    let io = tempfile::tempdir().unwrap();
    // Endless sampling: the worker is killed by the timeout while its files exist.
    let args = ["os.readdir", "-p", "entries=10", "--runs", "100000", "--settle", "0", "--timeout", "2s"];
    let seen = saw_scratch_file(&sb, &args, io.path(), "readdir/e000009");
    assert!(seen, "the worker's files were never seen in the scratch directory");
    let rows = sb.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "timeout");
    assert_eq!(leftovers(io.path()), Vec::<String>::new(), "the killed worker's scratch directory is left behind");
}
