//! Tests of the trend `history show` prints ([`super::trend`]) and its page
//! ([`super::render`]), on histories written to a temporary database.

use serde_json::json;

use super::tests::{fake_row, fake_run};
use super::trend::{Filters, trend};
use super::*;
use crate::model::Unit;

/// Ten samples around `center`, spread by 0.5%.
fn around(center: f64) -> Vec<f64> {
    (0..10).map(|i| center * (1.0 + (i as f64 - 4.5) * 0.001)).collect()
}

/// A row of selftest.noisy with the axis `size`.
fn sized_row(size: i64, center: f64) -> Row {
    let mut r = fake_row("selftest.noisy", &[("size", json!(size))], &around(center), Status::Ok, Unit::Ns);
    r.cell.axes = vec!["size".into()];
    r.cell.row_id = format!("{size:03}-selftest.noisy");
    r.cell.index = size as usize;
    r
}

/// A history of one run per entry of `runs`, each holding its rows.
fn history(dir: &std::path::Path, runs: Vec<Vec<Row>>) -> Store {
    let path = dir.join("h.sqlite");
    let mut store = Store::open_writer(&path).unwrap();
    for (i, rows) in runs.into_iter().enumerate() {
        let (run, text) = fake_run(&format!("r{i}"), &format!("2026-01-{:02}T00:00:00Z", i + 1), Some(&format!("c{i}")), rows);
        store.record(&run, &text).unwrap();
    }
    drop(store);
    Store::open_reader(&path).unwrap()
}

fn no_filters() -> Filters {
    Filters::parse(&[]).unwrap()
}

#[test]
fn a_trend_has_one_line_per_axes_with_a_point_per_run_holding_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        history(tmp.path(), vec![vec![sized_row(1, 100.0), sized_row(2, 200.0)], vec![sized_row(1, 101.0)], vec![sized_row(2, 199.0)]]);
    let t = trend(&store, "selftest.noisy", &no_filters()).unwrap();
    assert_eq!(t.ticks, [1, 2, 3]);
    assert_eq!(t.rows.len(), 4);
    let lines: Vec<(&str, Vec<usize>)> = t.lines.iter().map(|l| (l.label.as_str(), l.points.iter().map(|p| p.0).collect())).collect();
    assert_eq!(lines, [("size=1", vec![0, 1]), ("size=2", vec![0, 2])]);
    assert!((t.lines[1].points[1].1 - 199.0).abs() < 1.0, "{:?}", t.lines[1].points);
    // Filtered: only size=2's rows and runs; the title names the filter.
    let only = Filters::parse(&["size=2".into()]).unwrap();
    let t = trend(&store, "selftest.noisy", &only).unwrap();
    assert_eq!(t.ticks, [1, 3]);
    assert_eq!(t.lines.len(), 1);
    assert_eq!(t.lines[0].points.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(render::document(&t, render::chart(&t)).title, "selftest.noisy (size=2): median per run");
}

#[test]
fn a_level_shift_is_a_change_point_on_its_line_between_the_runs_around_it() {
    let tmp = tempfile::tempdir().unwrap();
    let centers = [100.0, 100.0, 100.0, 100.0, 150.0, 150.0, 150.0, 150.0];
    let store = history(tmp.path(), centers.iter().map(|c| vec![sized_row(1, *c)]).collect());
    let t = trend(&store, "selftest.noisy", &no_filters()).unwrap();
    assert_eq!(t.lines.len(), 1);
    let marks: Vec<(usize, usize, &str)> = t.lines[0].changes.iter().map(|m| (m.before, m.after, m.point.verdict)).collect();
    assert_eq!(marks, [(3, 4, "regressed")]);
    let doc = render::document(&t, render::chart(&t));
    let caption =
        doc.blocks.iter().find_map(|b| if let crate::text::document::Block::Chart(c) = b { Some(c.caption.clone()) } else { None });
    assert!(caption.unwrap().contains("the 1 change point history changes finds dashed"));
    assert!(render::chart(&t).unwrap().contains("change point: regressed from h:4 to h:5"));
    // A steady history has none.
    let tmp = tempfile::tempdir().unwrap();
    let store = history(tmp.path(), (0..6).map(|_| vec![sized_row(1, 100.0)]).collect());
    assert!(trend(&store, "selftest.noisy", &no_filters()).unwrap().lines[0].changes.is_empty());
}

#[test]
fn a_line_without_a_floor_has_no_band_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let store = history(tmp.path(), vec![vec![sized_row(1, 100.0)], vec![sized_row(1, 100.0)]]);
    let t = trend(&store, "selftest.noisy", &no_filters()).unwrap();
    let line = &t.lines[0];
    assert_eq!(line.band.is_some(), line.floor.is_ok(), "{:?}", line.floor.as_ref().err());
    if let Ok(f) = &line.floor {
        let (lo, hi) = line.band.unwrap();
        assert!(lo < 100.0 && hi > 100.0 && (hi / 100.0 - 1.0 - f.value).abs() < 0.01, "{lo} {hi} {}", f.value);
    }
}

#[test]
fn a_workload_not_held_or_rows_no_filter_passes_are_usage_errors_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let store = history(tmp.path(), vec![vec![sized_row(1, 100.0)]]);
    let e = trend(&store, "selftest", &no_filters()).err().unwrap();
    assert!(e.to_string().contains("'selftest' is not a workload id held in") && e.to_string().contains("selftest.noisy"), "{e}");
    assert_eq!(crate::exit_code_of(&e), 2);
    let e = trend(&store, "cpu.primes", &no_filters()).err().unwrap();
    assert!(e.to_string().contains("no rows of 'cpu.primes'"), "{e}");
    let e = trend(&store, "selftest.noisy", &Filters::parse(&["size= 7".into()]).unwrap()).err().unwrap();
    assert_eq!(e.to_string(), "no rows of selftest.noisy match --params size= 7");
    let e = Filters::parse(&["size".into()]).err().unwrap();
    assert_eq!(e.to_string(), "--params size: expected NAME=VALUE");
}
