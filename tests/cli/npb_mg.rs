//! `npb.mg` end to end: class S verifies on every runtime with 1 and 2
//! workers, and the injected fault makes every row invalid.

use crate::common::{Sandbox, text};

const ARGS: &[&str] = &["npb.mg", "--workers", "1,2", "--runs", "1", "--warmup", "0", "--settle", "0"];

#[test]
fn class_s_verifies_on_every_runtime_and_a_perturbed_source_is_invalid() {
    let sb = Sandbox::new();
    let out = sb.run(ARGS);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 8, "4 runtimes (team among them) x 2 worker counts");
    assert_eq!(rows.iter().filter(|r| r["cell"]["params"]["runtime"] == "team").count(), 2);
    for r in &rows {
        assert_eq!(r["status"], "ok", "{}: {}", r["cell"]["row_id"], r["reason"]);
        assert_eq!(r["verifier"]["passed"], true);
        assert_eq!(r["unit"], "Mop/s");
        assert_eq!(r["details"]["class"], "S");
        assert_eq!(r["details"]["ops"], 58 * 4 * 32 * 32 * 32);
        assert!(r["verifier"]["observed"].as_str().unwrap().starts_with("rnm2 = 5.30770700573"), "{}", r["verifier"]["observed"]);
    }

    let sb = Sandbox::new();
    let out = sb.run(&[ARGS, &["--inject-fault", "perturb-source"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = sb.rows();
    assert_eq!(rows.len(), 8);
    for r in &rows {
        assert_eq!(r["status"], "invalid", "{}", r["cell"]["row_id"]);
        assert_eq!(r["verifier"]["passed"], false);
        assert!(r["verifier"]["expected"].as_str().unwrap().contains("5.307707005734e-5"), "{}", r["verifier"]["expected"]);
    }
}

/// Every NPB kernel on every code path: the paths this CPU has (run.json's
/// `envelope.tool.code_paths`) verify and name the path they took; a path
/// it lacks is skipped saying what it lacks; `native` takes the widest; and
/// the report puts each path beside its median and notes that they differ.
#[test]
fn the_kernels_verify_on_every_code_path_this_cpu_has_and_name_it() {
    let sb = Sandbox::new();
    let args = ["npb.ep", "npb.cg", "npb.mg", "-p", "runtime=rayon", "--workers", "2", "-p", "isa=native,baseline,avx2,avx512f"];
    let out = sb.run(&[&args[..], &["--trials", "1", "--runs", "1", "--warmup", "0", "--settle", "0", "--timeout", "300s"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = sb.run_json();
    let paths: Vec<&str> = run["envelope"]["tool"]["code_paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(paths.last(), Some(&"baseline"), "{paths:?}");
    let rows = sb.rows();
    assert_eq!(rows.len(), 12, "3 kernels x 4 isa values");
    for r in &rows {
        let (id, isa) = (r["cell"]["row_id"].as_str().unwrap(), r["cell"]["params"]["isa"].as_str().unwrap());
        let want = if isa == "native" { paths[0] } else { isa };
        if paths.contains(&want) {
            assert_eq!(r["status"], "ok", "{id}: {}", r["reason"]);
            assert_eq!(r["verifier"]["passed"], true, "{id}: {}", r["verifier"]);
            assert_eq!(r["details"]["code_path"], want, "{id}");
        } else {
            assert_eq!(r["status"], "skipped", "{id}");
            let reason = r["reason"].as_str().unwrap();
            assert!(reason.starts_with(&format!("isa={isa}: this CPU lacks ")), "{id}: {reason}");
        }
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ops/s [baseline]") && stdout.contains(&format!("ops/s [{}]", paths[0])), "{stdout}");
    let md = sb.report_md();
    assert!(md.contains("the kernels took different code paths ("), "{md}");
    assert!(md.contains("Code paths: "), "{md}");
    let record = md.lines().find(|l| l.starts_with("| Code paths ")).expect("the machine record names the paths");
    assert!(record.contains(&format!("| {} (isa=native)", paths[0])), "{record}");
}
