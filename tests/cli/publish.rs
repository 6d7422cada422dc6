//! Publishing a stored run: tables kept inside documents (`report
//! --update-doc`, `--list-tables`) and the exports (`--export`).

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{FAST, SMALL_PRIMES, Sandbox, bin, text};

fn report(sb: &Sandbox, flags: &[&str]) -> Output {
    Command::new(bin()).arg("report").args(flags).arg(sb.run_dir()).output().unwrap()
}

fn small_run() -> Sandbox {
    let sb = Sandbox::new();
    let out = sb.run(&[&["cpu.primes", "os.syscall", "--workers", "1,2"], FAST, SMALL_PRIMES].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sb
}

#[test]
fn update_doc_round_trips_a_document_with_two_marked_tables() {
    let sb = small_run();
    let ids = text(&report(&sb, &["--list-tables"]).stdout);
    let listed: Vec<&str> = ids.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    for id in ["summary", "cpu.primes", "os.primitives", "os.syscall", "cpu.counters", "not-ok"] {
        assert!(listed.contains(&id), "{id} not in {listed:?}");
    }

    let before = "# Our results\n\nSome prose, kept as written.\r\n\n<!-- proofbench:cpu.primes start -->\nstale\n<!-- proofbench:cpu.primes end -->\n\nMore prose between.\n\n<!-- proofbench:os.primitives start -->\n<!-- proofbench:os.primitives end -->\nThe end, no newline";
    let doc = sb.tmp.path().join("RESULTS.md");
    std::fs::write(&doc, before).unwrap();
    let out = report(&sb, &["--update-doc", doc.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&doc).unwrap();
    assert!(!after.contains("stale"));
    assert!(after.contains("| 1-to-2 speedup |") && after.contains("### cpu.primes"), "{after}");
    assert!(after.contains("syscall"), "{after}");
    // Outside the blocks, every byte is the same.
    let outside = |s: &str| -> String {
        let mut keep = String::new();
        let mut inside = false;
        for line in s.split_inclusive('\n') {
            if line.contains("end -->") {
                inside = false;
            }
            if !inside {
                keep.push_str(line);
            }
            if line.contains("start -->") {
                inside = true;
            }
        }
        keep
    };
    assert_eq!(outside(&after), outside(before));
    // A second update is a no-op.
    let out = report(&sb, &["--update-doc", doc.to_str().unwrap()]);
    assert!(text(&out.stderr).contains("already current"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), after);

    // An unbalanced marker: exit 2, the file untouched.
    let broken = format!("{after}\n<!-- proofbench:summary start -->\n");
    std::fs::write(&doc, &broken).unwrap();
    let out = report(&sb, &["--update-doc", doc.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("start marker without its end marker"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), broken);
}

#[test]
fn exports_carry_every_row_in_each_format() {
    let sb = small_run();
    let rows = sb.rows();

    let json: Value = serde_json::from_slice(&report(&sb, &["--export", "json"]).stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), rows.len());
    let first = &json[0];
    assert_eq!(first["median"], rows[0]["stats"]["headline"]["median"]);
    assert_eq!(first["trials"], rows[0]["stats"]["headline"]["trials"]);
    assert_eq!(first["unit"], "ns");

    let csv = text(&report(&sb, &["--export", "csv"]).stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), rows.len() + 1);
    assert!(lines[0].starts_with("row_id,workload,group,axes,params,status,unit,direction,median,"));
    assert!(lines.iter().skip(1).all(|l| l.contains(",ok,")), "{csv}");
    // The direction spelled as the JSON spells it.
    assert!(lines.iter().skip(1).all(|l| l.contains(&format!(",{},", first["direction"].as_str().unwrap()))), "{csv}");
    assert!(!csv.contains("lower is better"), "{csv}");

    let md = text(&report(&sb, &["--export", "markdown"]).stdout);
    assert_eq!(md.lines().filter(|l| l.starts_with("| cpu.primes")).count(), 2, "{md}");
    // Medians scaled as the run's tables print them (`57.97 ms`), never raw (`57,966,919 ns`).
    for l in md.lines().filter(|l| l.starts_with("| cpu.primes")) {
        let median = l.split('|').nth(4).unwrap().trim();
        let (figure, unit) = median.split_once(' ').unwrap();
        assert!(!figure.contains(',') && ["ns", "µs", "ms", "s"].contains(&unit), "{median} in {md}");
    }

    let bmf: Value = serde_json::from_slice(&report(&sb, &["--export", "bmf"]).stdout).unwrap();
    let m = &bmf["cpu.primes (workers=2)"]["latency"];
    assert_eq!(m["value"], json[1]["median"], "{bmf}");
    assert!(m["lower_value"].as_f64().unwrap() <= m["value"].as_f64().unwrap());
    assert!(m["upper_value"].as_f64().unwrap() >= m["value"].as_f64().unwrap());
}
