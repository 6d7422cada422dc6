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
    assert_eq!(rows.len(), 6, "3 runtimes x 2 worker counts");
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
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert_eq!(r["status"], "invalid", "{}", r["cell"]["row_id"]);
        assert_eq!(r["verifier"]["passed"], false);
        assert!(r["verifier"]["expected"].as_str().unwrap().contains("5.307707005734e-5"), "{}", r["verifier"]["expected"]);
    }
}
