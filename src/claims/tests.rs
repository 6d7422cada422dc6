//! Claims tests: parsing (forms, suffixes, errors with line and key) and the
//! status of each claim against synthetic rows.

use serde_json::json;

use super::*;
use crate::evidence::fake::{fake_run, named_row as fake_row};
use crate::model::{Params, Unit};

const FILE: &str = r#"
# claims of a README
[[claim]]
workload = "alloc.random-mixed"
params = { size = "256", iterations = "10M" }
expect = "58M..65M"
unit = "ops/s"
note = "README table"

[[claim]]
workload = "cpu.primes"
min = "1.5K"
max = 2000

[[claim]]
workload = "cpu.checksum"
value = "2G"
tolerance = "5%"
"#;

#[test]
fn suffixes_read_as_powers_of_ten() {
    assert_eq!(parse_suffixed("58M"), Some(58e6));
    assert_eq!(parse_suffixed("1.5G"), Some(1.5e9));
    assert_eq!(parse_suffixed("10k"), Some(1e4));
    assert_eq!(parse_suffixed("10_000"), Some(1e4));
    assert_eq!(parse_suffixed("256"), Some(256.0));
    assert_eq!(parse_suffixed("lots"), None);
    assert_eq!(parse_suffixed(""), None);
}

#[test]
fn the_three_forms_of_expectation_parse_to_ranges() {
    let c = parse(FILE, "claims.toml").unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!((c[0].lo, c[0].hi, c[0].expected.as_str(), c[0].line), (Some(58e6), Some(65e6), "58M..65M", 3));
    assert_eq!(c[0].params.get("iterations").map(String::as_str), Some("10M"));
    assert_eq!(c[0].unit.as_deref(), Some("ops/s"));
    assert_eq!(c[0].note.as_deref(), Some("README table"));
    assert_eq!((c[1].lo, c[1].hi), (Some(1500.0), Some(2000.0)));
    assert_eq!((c[2].lo, c[2].hi), (Some(1.9e9), Some(2.1e9)));
    assert_eq!(c[2].expected, "2G ± 5%");
    let open = parse("[[claim]]\nworkload = \"a.b\"\nexpect = \"..10\"\n", "f").unwrap();
    assert_eq!((open[0].lo, open[0].hi), (None, Some(10.0)));
}

#[test]
fn params_match_as_text_or_as_the_same_number() {
    let params: Params = [("iterations".to_string(), json!(10_000_000)), ("mode".to_string(), json!("fast"))].into_iter().collect();
    assert!(param_matches(&params, "iterations", "10M"));
    assert!(param_matches(&params, "iterations", "10000000"));
    assert!(!param_matches(&params, "iterations", "1M"));
    assert!(param_matches(&params, "mode", "fast"));
    assert!(!param_matches(&params, "mode", "slow"));
    assert!(!param_matches(&params, "size", "256"));
}

fn error(text: &str) -> String {
    parse(text, "claims.toml").unwrap_err().to_string()
}

#[test]
fn a_malformed_file_names_the_file_line_and_key() {
    let e = error("[[claim]]\nworkload = \"a.b\"\nexpcet = \"1..2\"\n");
    assert!(e.starts_with("claims.toml line 3"), "{e}");
    assert!(e.contains("expcet"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\nexpect = \"1..lots\"\n");
    assert!(e.starts_with("claims.toml line 3"), "{e}");
    assert!(e.contains("expect") && e.contains("'lots' is not a number"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\nexpect = \"9..2\"\n");
    assert!(e.contains("low end is above the high end"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\nmin = 1\n[[claim]]\nworkload = \"c.d\"\nexpect = \"1..2\"\nmin = 1\n");
    assert!(e.starts_with("claims.toml line 4: claim for c.d: give one expectation"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\n");
    assert!(e.contains("line 1") && e.contains("no expectation"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\nvalue = 3\n");
    assert!(e.contains("'value' and 'tolerance' go together"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\nvalue = 3\ntolerance = \"lots%\"\n");
    assert!(e.starts_with("claims.toml line 4") && e.contains("tolerance"), "{e}");
    let e = error("[[claim]]\nworkload = \"a.b\"\nexpect = \"1..2\"\nunit = \"furlongs\"\n");
    assert!(e.contains("unit 'furlongs'") && e.contains("Mop/s, cycles"), "{e}");
    // Every unit a row can have is a unit a claim can name (a command
    // workload's `cycles` was refused).
    assert!(parse("[[claim]]\nworkload = \"g.w\"\nexpect = \"1..2\"\nunit = \"cycles\"\n", "claims.toml").is_ok());
    let e = error("[[claim]\n");
    assert!(e.starts_with("claims.toml line 1"), "{e}");
    let e = error("[[claim]]\nexpect = \"1..2\"\n");
    assert!(e.contains("workload"), "{e}");
}

#[test]
fn each_claim_gets_within_above_below_or_not_measured() {
    let row = |w: &str, size: i64, center: f64, status: Status| {
        let values: Vec<f64> = (0..5).map(|i| center + i as f64).collect();
        let mut r = fake_row(w, &[("size", json!(size))], &values, status, Unit::OpsPerSec);
        r.cell.row_id = format!("{w}-{size}");
        r
    };
    let (run, _) = fake_run(
        "r",
        "2026-01-01T00:00:00Z",
        None,
        vec![
            row("a.x", 256, 60e6, Status::Ok),
            row("a.x", 512, 70e6, Status::Ok),
            row("a.x", 1024, 50e6, Status::Ok),
            row("a.y", 1, 10.0, Status::Failed),
        ],
    );
    let text = r#"
[[claim]]
workload = "a.x"
params = { size = 256 }
expect = "58M..65M"
[[claim]]
workload = "a.x"
params = { size = "512" }
expect = "58M..65M"
[[claim]]
workload = "a.x"
params = { size = "1K" }
expect = "58M..65M"
[[claim]]
workload = "a.x"
params = { size = "1024" }
expect = "58M.."
[[claim]]
workload = "a.y"
min = 1
[[claim]]
workload = "a.z"
min = 1
[[claim]]
workload = "a.x"
params = { size = 256 }
min = 1
unit = "ns/op"
[[claim]]
workload = "a.x"
max = "100M"
"#;
    let claims = parse(text, "f").unwrap();
    let checked = check_run(&claims, &run);
    let statuses: Vec<ClaimStatus> = checked.iter().map(|c| c.status).collect();
    use ClaimStatus::*;
    // The last claim names no size: it matches all three rows of a.x.
    assert_eq!(statuses, vec![Within, Above, NotMeasured, Below, NotMeasured, NotMeasured, NotMeasured, Within, Within, Within]);
    assert!(checked[2].why.as_deref().unwrap().contains("no row"), "1K is 1000, not 1024");
    assert_eq!(checked[4].why.as_deref(), Some("row failed"));
    assert!(checked[6].why.as_deref().unwrap().contains("claim in ns/op"));
    let table = crate::text::document::terminal::render(&document(&checked, "run-dir", "f").blocks);
    assert!(table.contains("10 claims checked: 4 within, 1 above, 1 below, 4 not measured."), "{table}");
    assert!(table.contains("| a.x size=256 "), "{table}");
    // Scaled as the run's tables print ops/s, the unit said once.
    assert!(table.contains("| 58.00..65.00 M ops/s |") && table.contains("| 60.00 M ops/s |"), "{table}");
    assert!(table.contains("| 60.00..60.00 M ops/s |") && !table.contains("60,000,00"), "{table}");
    assert!(table.contains("not measured (row failed)"), "{table}");
}

#[test]
fn a_claims_file_name_or_note_with_markup_is_escaped_by_each_output_its_own_way() {
    const HOSTILE: &str = "<script>alert(1)</script> a|b *c* `d`";
    let mut claims = parse("[[claim]]\nworkload = \"a.x\"\nmin = 1\n", "f").unwrap();
    claims[0].note = Some(HOSTILE.into());
    let run = crate::evidence::fake::run(Vec::new(), Vec::new());
    let doc = document(&check_run(&claims, &run), "run", HOSTILE);
    let md = crate::text::document::markdown::render(&doc.blocks);
    assert!(!md.contains("<script"), "{md}");
    assert!(md.contains("\nClaims: &lt;script>alert(1)&lt;/script> a|b \\*c\\* \\`d\\`\n"), "{md}");
    assert!(md.contains(" &lt;script>alert(1)&lt;/script> a\\|b \\*c\\* \\`d\\` |"), "the note's cell: {md}");
    assert!(md.contains("1 claim checked: 0 within"), "{md}");
    let html = crate::text::document::html::render(&doc.blocks);
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("<p>Claims: &lt;script&gt;alert(1)&lt;/script&gt; a|b *c* `d`<br>"), "{html}");
    assert!(html.contains("<td>&lt;script&gt;alert(1)&lt;/script&gt; a|b *c* `d`</td></tr>"), "{html}");
    let term = crate::text::document::terminal::render(&doc.blocks);
    assert!(term.contains(&format!("\nClaims: {HOSTILE}\n")) && term.contains(&format!(" {HOSTILE} |")), "{term}");
}

#[test]
fn values_with_units_read_in_the_units_base_and_match_only_rows_of_their_kind() {
    for (text, v, kind) in [
        ("50ms", 50e6, Some(Kind::Time)),
        ("2.38 µs/op", 2380.0, Some(Kind::Time)),
        ("2.5us", 2500.0, Some(Kind::Time)),
        ("1.2 s", 1.2e9, Some(Kind::Time)),
        ("173 ns/op", 173.0, Some(Kind::Time)),
        ("76 M ops/s", 76e6, Some(Kind::Rate)),
        ("76Mops/s", 76e6, Some(Kind::Rate)),
        ("1.24 GB/s", 1240.0, Some(Kind::Bandwidth)),
        ("14,404", 14404.0, None),
        ("4 Gop/s", 4000.0, Some(Kind::Mops)),
        ("58M", 58e6, None),
        ("3m", 3e6, None),
    ] {
        match quantity(text) {
            Some((x, k)) => assert!(((x - v).abs() <= 1e-9 * v.abs()) && k == kind, "{text}: {x} {k:?}"),
            None => assert!(v.is_nan(), "{text} did not parse"),
        }
    }
    for bad in ["50 parsecs", "ms", "fast", "5 ms/s"] {
        assert_eq!(quantity(bad), None, "{bad}");
    }
    let claims = parse(
        "[[claim]]\nworkload = \"a.x\"\nexpect = \"50ms..56ms\"\n[[claim]]\nworkload = \"a.x\"\nvalue = \"53 ms\"\ntolerance = \"5%\"\n",
        "f",
    )
    .unwrap();
    assert_eq!((claims[0].lo, claims[0].hi, claims[0].kind), (Some(50e6), Some(56e6), Some(Kind::Time)));
    assert_eq!(claims[1].kind, Some(Kind::Time));
    let mixed = parse("[[claim]]\nworkload = \"a.x\"\nexpect = \"50ms..60M ops/s\"\n", "f").unwrap_err().to_string();
    assert!(mixed.contains("different kinds"), "{mixed}");
    let mixed = parse("[[claim]]\nworkload = \"a.x\"\nmin = \"50ms\"\nmax = \"1 GB/s\"\n", "f").unwrap_err().to_string();
    assert!(mixed.contains("different kinds"), "{mixed}");

    let row = |unit: Unit, center: f64| {
        let values: Vec<f64> = (0..5).map(|i| center * (1.0 + 0.001 * i as f64)).collect();
        fake_row("a.x", &[("size", json!(1))], &values, Status::Ok, unit)
    };
    let (time_run, _) = fake_run("r", "2026-01-01T00:00:00Z", None, vec![row(Unit::Ns, 53e6)]);
    let checked = check_run(&claims, &time_run);
    assert_eq!(checked.iter().map(|c| c.status).collect::<Vec<_>>(), [ClaimStatus::Within, ClaimStatus::Within]);
    let table = crate::text::document::terminal::render(&document(&checked, "run-dir", "f").blocks);
    assert!(table.lines().any(|l| l.contains("| 50.00..56.00 ms |") && l.contains("  53.") && !l.contains("53,")), "{table}");
    // A Mop/s row prints as ops/s (14.40 G ops/s): a claim written so matches it.
    let npb = parse("[[claim]]\nworkload = \"a.x\"\nexpect = \"14 G ops/s..15 G ops/s\"\n", "f").unwrap();
    let (mops_run, _) = fake_run("r", "2026-01-01T00:00:00Z", None, vec![row(Unit::MopsPerSec, 14_404.0)]);
    let checked = check_run(&npb, &mops_run);
    assert_eq!(checked[0].status, ClaimStatus::Within, "{:?}", checked[0].why);
    let table = crate::text::document::terminal::render(&document(&checked, "run-dir", "f").blocks);
    assert!(table.contains("| 14.00..15.00 G ops/s |") && table.contains(" 14.4") && table.contains(" G ops/s"), "{table}");
    // So does one of plain numbers with `unit = "ops/s"`, and `unit = "Mop/s"`
    // reads its numbers in Mop/s.
    for (unit, expect, status) in [
        ("ops/s", "14G..15G", ClaimStatus::Within),
        ("ops/s", "15G..16G", ClaimStatus::Below),
        ("Mop/s", "14000..15000", ClaimStatus::Within),
    ] {
        let c = parse(&format!("[[claim]]\nworkload = \"a.x\"\nunit = \"{unit}\"\nexpect = \"{expect}\"\n"), "f").unwrap();
        let checked = check_run(&c, &mops_run);
        assert_eq!(checked[0].status, status, "{unit} {expect}: {:?}", checked[0].why);
    }
    let (rate_run, _) = fake_run("r", "2026-01-01T00:00:00Z", None, vec![row(Unit::OpsPerSec, 53e6)]);
    let checked = check_run(&claims, &rate_run);
    assert_eq!(checked[0].status, ClaimStatus::NotMeasured);
    assert!(checked[0].why.as_deref().unwrap().contains("the claim a time"), "{:?}", checked[0].why);
}
