//! History tests on synthetic runs: schema round trip, idempotent import,
//! regressions along a series, concurrent writers.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::compare::{Options, Verdict};
pub(crate) use crate::evidence::fake::fake_run;
use crate::model::Unit;

pub(crate) use crate::evidence::fake::named_row as fake_row;

/// Ten samples around `center`, spread by 0.5%.
fn around(center: f64) -> Vec<f64> {
    (0..10).map(|i| center * (1.0 + (i as f64 - 4.5) * 0.001)).collect()
}

fn noisy_row(center: f64) -> Row {
    fake_row("selftest.noisy", &[("base_us", json!(1000))], &around(center), Status::Ok, Unit::Ns)
}

#[test]
fn a_recorded_run_loads_back_whole_from_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    let failed = {
        let mut r = fake_row("cpu.primes", &[("range", json!(20000))], &[], Status::Failed, Unit::NsPerOp);
        r.cell.row_id = "001-cpu.primes".into();
        r.cell.index = 1;
        r
    };
    let (run, text) = fake_run("r1", "2026-01-01T00:00:00Z", Some("abc123"), vec![noisy_row(100.0), failed]);
    let id = store.record(&run, &text).unwrap();
    assert!(matches!(id, Recorded::New(1)), "{id:?}");
    let back = store.load(1).unwrap();
    assert_eq!(back.run, run.run);
    assert_eq!(back.rows, run.rows);
    let entries = store.runs().unwrap();
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!((e.name.as_str(), e.label.as_str(), e.commit.as_deref(), e.rows_ok, e.rows_total), ("r1", "box", Some("abc123"), 1, 2));
    assert_eq!(e.short_commit(), "abc123");
    assert!(e.machine.contains("CPUs"), "{}", e.machine);
    assert_eq!(store.workloads().unwrap(), vec!["cpu.primes".to_string(), "selftest.noisy".to_string()]);
    let rows = store.rows_of("selftest.noisy").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, 1);
    assert_eq!(rows[0].1.median(), run.rows[0].median());
    // The query columns agree with the row.
    let (median, status, n): (Option<f64>, String, i64) = store
        .conn
        .query_row("SELECT median, status, n FROM rows WHERE row_id = '000-selftest.noisy'", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!((median, status.as_str(), n), (run.rows[0].median(), "ok", 10));
    assert!(store.load(7).is_err());
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn importing_the_same_run_twice_keeps_one_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    {
        let mut rd = crate::evidence::RunDir::create_at(&dir).unwrap();
        let (run, _) = fake_run("run", "2026-01-01T00:00:00Z", None, vec![noisy_row(100.0)]);
        rd.write_run(&run.run).unwrap();
        rd.append_row(&run.rows[0]).unwrap();
    }
    let db = tmp.path().join("h.sqlite");
    let first = Store::open_writer(&db).unwrap().record_dir(&dir).unwrap();
    let second = Store::open_writer(&db).unwrap().record_dir(&dir).unwrap();
    assert_eq!(first, Recorded::New(1));
    assert_eq!(second, Recorded::Existing(1));
    let store = Store::open_writer(&db).unwrap();
    assert_eq!(store.runs().unwrap().len(), 1);
    let n: i64 = store.conn.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1);
    // Reformatting run.json does not make it another run.
    let text = std::fs::read_to_string(dir.join("run.json")).unwrap();
    let compact = serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&text).unwrap()).unwrap();
    assert_eq!(run_uid(&text).unwrap(), run_uid(&compact).unwrap());
}

#[test]
fn a_database_of_a_newer_schema_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite");
    drop(Store::open_writer(&db).unwrap());
    rusqlite::Connection::open(&db).unwrap().execute("INSERT INTO schema_version (version) VALUES (99)", []).unwrap();
    let e = Store::open_writer(&db).err().unwrap();
    assert!(format!("{e:#}").contains("newer than this proofbench reads"), "{e:#}");
    assert_eq!(format!("{e:#}").matches("h.sqlite").count(), 1, "the database is named once: {e:#}");
    assert_eq!(crate::exit_code_of(&e), 2);
    let e = Store::open_reader(&tmp.path().join("missing.sqlite")).err().unwrap();
    assert!(e.to_string().contains("--db"), "{e}");
}

fn series_of(store: &mut Writer, centers: &[f64]) -> Vec<regress::Step> {
    series_with(store, centers, |_, r| r)
}

/// [`series_of`] with each run's row (by position) changed by `change`.
fn series_with(store: &mut Writer, centers: &[f64], change: impl Fn(usize, Row) -> Row) -> Vec<regress::Step> {
    for (i, c) in centers.iter().enumerate() {
        let row = change(i, noisy_row(*c));
        let (run, text) = fake_run(&format!("r{i}"), &format!("2026-01-0{}T00:00:00Z", i + 1), Some(&format!("c{i}")), vec![row]);
        store.record(&run, &text).unwrap();
    }
    let runs = store.runs().unwrap();
    let series = regress::series(&runs, store.rows_of("selftest.noisy").unwrap(), &|_| ("m".into(), "vm".into()));
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].points.len(), centers.len());
    let opts = Options { threshold: 0.02, ..Options::default() };
    regress::steps(&series, &opts, &|_, _| Vec::new(), &|_, _| Err("no history".into()))
}

#[test]
fn a_slowed_step_of_a_series_is_flagged_and_a_steady_one_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    let steps = series_of(&mut store, &[100.0, 100.0, 150.0, 150.0]);
    let verdicts: Vec<Verdict> = steps.iter().map(|s| s.judged.verdict).collect();
    assert_eq!(verdicts, vec![Verdict::Unchanged, Verdict::Regressed, Verdict::Unchanged]);
    assert_eq!((steps[1].from.commit.as_deref(), steps[1].to.commit.as_deref()), (Some("c1"), Some("c2")));
    let text = crate::text::document::terminal::render(&regress::document(&steps, 0.02, "test").blocks);
    assert!(text.contains("3 steps: 1 DIFFERENT (1 regressed, 0 improved), 2 SAME within 2%, 0 UNKNOWN, 0 not comparable."), "{text}");
    let on = "on vm"; // the series' machine, as series_with names it
    assert!(text.contains(&format!("\n- DIFFERENT (regressed): selftest.noisy [-] box {on} from h:2 c1 to h:3 c2")), "{text}");
    let one = crate::text::document::terminal::render(&regress::document(&steps[..1], 0.02, "test").blocks);
    assert!(one.contains("\n1 step: 0 DIFFERENT (0 regressed, 0 improved), 1 SAME within 2%, 0 UNKNOWN, 0 not comparable.\n"), "{one}");
}

#[test]
fn each_step_says_different_same_or_unknown_in_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    // The same; 1.5x slower; 2% slower, an interval astride the band's edge.
    let steps = series_of(&mut store, &[100.0, 100.0, 150.0, 153.0]);
    let words: Vec<Option<crate::compare::Word>> = steps.iter().map(|s| s.judged.word).collect();
    use crate::compare::Word::{Different, Same, Unknown};
    assert_eq!(words, [Some(Same), Some(Different), Some(Unknown)]);
    let doc = regress::document(&steps, 0.02, "test");
    let outputs = [
        crate::text::document::terminal::render(&doc.blocks),
        crate::text::document::markdown::render(&doc.blocks),
        crate::text::document::html::render(&doc.blocks),
    ];
    for text in &outputs {
        assert!(text.contains("3 steps: 1 DIFFERENT (1 regressed, 0 improved), 1 SAME within 2%, 1 UNKNOWN, 0 not comparable."), "{text}");
        assert!(text.contains("SAME within 2%: the interval lies inside +-2%; UNKNOWN: neither, more trials may decide it."), "{text}");
        assert!(
            text.contains("DIFFERENT (regressed): selftest.noisy ") && text.contains("box on vm from h:2 c1 to h:3 c2: ratio 1.500"),
            "{text}"
        );
        assert!(!text.contains("REGRESSED") && !text.contains("unchanged"), "{text}");
    }
    let [term, md, html] = &outputs;
    for cell in ["SAME within 2%", "DIFFERENT (regressed)", "UNKNOWN"] {
        assert!(term.contains(&format!("| {cell} ")) && md.contains(&format!("| {cell} ")), "{cell}: {term}\n{md}");
        assert!(html.contains(&format!("<td>{cell}</td>")), "{cell}: {html}");
    }
}

#[test]
fn a_step_regressed_from_disturbed_trials_says_so_and_the_gate_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    // The third run's trials were disturbed: other processes took 80% of their CPUs.
    let busy = |i: usize, r: Row| if i == 2 { crate::evidence::fake::disturbed(r, 0.8) } else { r };
    let steps = series_with(&mut store, &[100.0, 100.0, 150.0], busy);
    assert_eq!((steps[1].judged.verdict, steps[1].judged.disturbed_verdict), (Verdict::Regressed, true));
    let text = crate::text::document::terminal::render(&regress::document(&steps, 0.02, "test").blocks);
    assert!(text.contains("| DIFFERENT (regressed, disturbed) |"), "{text}");
    assert!(
        text.contains(
            "2 steps: 1 DIFFERENT (1 regressed (1 from disturbed trials), 0 improved), 1 SAME within 2%, 0 UNKNOWN, 0 not comparable; \
             other processes took the disturbed trials' CPUs"
        ),
        "{text}"
    );
    let on = "on vm"; // the series' machine, as series_with names it
    assert!(text.contains(&format!("- DIFFERENT (regressed, disturbed): selftest.noisy [-] box {on} from h:2 c1 to h:3 c2")), "{text}");
    assert_eq!(crate::compare::gate(steps.iter().map(|s| &s.judged), &crate::compare::Gate::default()).0, crate::compare::EXIT_DISTURBED);
}

#[test]
fn a_system_label_with_markup_is_escaped_by_each_output_its_own_way() {
    const HOSTILE: &str = "<script>alert(1)</script> a|b *c* `d`";
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    let mut steps = series_of(&mut store, &[100.0, 150.0]);
    steps[0].label = HOSTILE.into();
    steps[0].judged.axes = HOSTILE.into();
    let doc = regress::document(&steps, 0.02, "test");
    let md = crate::text::document::markdown::render(&doc.blocks);
    assert!(!md.contains("<script"), "{md}");
    assert!(md.contains("| &lt;script>alert(1)&lt;/script> a\\|b \\*c\\* \\`d\\` |"), "the cell cannot break its row: {md}");
    assert!(
        md.contains("- DIFFERENT (regressed): selftest.noisy \\[&lt;script>alert(1)&lt;/script> a|b \\*c\\* \\`d\\`] &lt;script>"),
        "{md}"
    );
    let html = crate::text::document::html::render(&doc.blocks);
    assert!(!html.contains("<script"), "{html}");
    assert!(
        html.contains("<li>DIFFERENT (regressed): selftest.noisy [&lt;script&gt;alert(1)&lt;/script&gt; a|b *c* `d`] &lt;script&gt;"),
        "{html}"
    );
    let term = crate::text::document::terminal::render(&doc.blocks);
    let on = "on vm"; // the series' machine, as series_with names it
    assert!(term.contains(&format!("- DIFFERENT (regressed): selftest.noisy [{HOSTILE}] {HOSTILE} {on} from h:1 c0 to h:2 c1")), "{term}");
}

#[test]
fn a_step_between_machines_is_not_comparable_and_failed_rows_leave_the_series() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    let (run, text) = fake_run(
        "bad",
        "2026-01-05T00:00:00Z",
        None,
        vec![{
            let mut r = noisy_row(900.0);
            r.status = Status::Invalid;
            r
        }],
    );
    store.record(&run, &text).unwrap();
    for (i, c) in [100.0, 300.0].iter().enumerate() {
        let (run, text) = fake_run(&format!("r{i}"), &format!("2026-01-0{}T00:00:00Z", i + 1), None, vec![noisy_row(*c)]);
        store.record(&run, &text).unwrap();
    }
    let runs = store.runs().unwrap();
    // Each run on a machine of its own: two series of one point, no step.
    let apart = regress::series(&runs, store.rows_of("selftest.noisy").unwrap(), &|id| (id.to_string(), format!("m{id}")));
    assert_eq!(apart.len(), 2);
    assert!(regress::steps(&apart, &Options::default(), &|_, _| Vec::new(), &|_, _| Err("no history".into())).is_empty());
    // Spanning machines (--across-machines): one series.
    let series = regress::series(&runs, store.rows_of("selftest.noisy").unwrap(), &|_| (String::new(), String::new()));
    assert_eq!(series[0].points.len(), 2, "the invalid row is not a point");
    let opts = Options { threshold: 0.02, ..Options::default() };
    let steps = regress::steps(&series, &opts, &|_, _| vec!["hostname (a vs b)".into()], &|_, _| Err("no history".into()));
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].judged.verdict, Verdict::NotComparable);
    assert!(steps[0].judged.reason.contains("different machine"), "{}", steps[0].judged.reason);
    let across =
        regress::steps(&series, &Options { across_machines: true, ..opts.clone() }, &|_, _| vec!["hostname (a vs b)".into()], &|_, _| {
            Err("no history".into())
        });
    assert_eq!(across[0].judged.verdict, Verdict::Regressed);
}

#[test]
fn two_writers_with_their_own_connections_lose_no_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite");
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut store = Store::open_writer(&db).unwrap();
                for i in 0..25 {
                    let (run, text) = fake_run(&format!("w{w}-{i}"), "2026-01-01T00:00:00Z", None, vec![noisy_row(100.0 + i as f64)]);
                    assert!(matches!(store.record(&run, &text).unwrap(), Recorded::New(_)));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = Store::open_writer(&db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert_eq!(store.runs().unwrap().len(), 50);
    let n: i64 = store.conn.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 50);
    let mode: String = store.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_trend_is_svg_with_its_run_ticks_and_legend() {
    use crate::text::plot::trend::{Series, chart};
    let runs = vec!["h:1".to_string(), "h:2".to_string(), "h:3".to_string()];
    let lines = vec![Series {
        label: "size=256".into(),
        points: vec![(0, 10.0, 9.0, 11.0), (1, 12.0, 11.0, 13.0), (2, 30.0, 29.0, 31.0)],
        band: Some((8.0, 12.0)),
        changes: Vec::new(),
    }];
    let svg = chart("alloc.x: median per run", crate::model::Unit::NsPerOp, &runs, &lines).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    for want in ["h:1", "h:3", "size=256", "alloc.x: median per run", " ns/op</text>"] {
        assert!(svg.contains(want), "missing {want}");
    }
    assert!(!svg.contains("h:4"), "only the runs given are ticked");
}

/// `run` as it was while it ran: no finish record, only its first `rows` rows.
fn before_it_finished(run: &(StoredRun, String), rows: usize) -> (StoredRun, String) {
    let mut partial = run.0.clone();
    partial.run.finished_utc = None;
    partial.run.complete = false;
    partial.run.counts = None;
    partial.rows.truncate(rows);
    let text = serde_json::to_string_pretty(&partial.run).unwrap();
    (partial, text)
}

fn two_rows() -> Vec<Row> {
    let mut second = noisy_row(200.0);
    second.cell.row_id = "001-selftest.noisy".into();
    second.cell.index = 1;
    vec![noisy_row(100.0), second]
}

#[test]
fn a_run_recorded_before_it_finished_is_replaced_by_its_finished_record() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    let finished = fake_run("r", "2026-01-01T00:00:00Z", Some("c"), two_rows());
    let partial = before_it_finished(&finished, 1);
    assert_eq!(run_uid(&partial.1).unwrap(), run_uid(&finished.1).unwrap(), "one run, before and after");
    assert_eq!(store.record(&partial.0, &partial.1).unwrap(), Recorded::New(1));
    let e = &store.runs().unwrap()[0];
    assert_eq!((e.finished, e.state().as_deref()), (false, Some("incomplete: 1 of 2 cells ran")));
    assert_eq!(store.record(&finished.0, &finished.1).unwrap(), Recorded::Replaced(1));
    // The finished record is never replaced by the partial one again.
    assert_eq!(store.record(&partial.0, &partial.1).unwrap(), Recorded::Existing(1));
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].id, runs[0].rows_total, runs[0].state()), (1, 2, None));
    assert_eq!(store.load(1).unwrap().run, finished.0.run);
    let n: i64 = store.conn.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 2);
    // Another run with the same name that started at another time is another run.
    let other = fake_run("r", "2026-01-02T00:00:00Z", Some("c"), two_rows());
    assert_eq!(store.record(&other.0, &other.1).unwrap(), Recorded::New(2));
}

#[test]
fn a_version_1_database_is_brought_to_version_2_and_a_run_held_twice_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite");
    let finished = fake_run("r", "2026-01-01T00:00:00Z", Some("c"), two_rows());
    let partial = before_it_finished(&finished, 1);
    let other = fake_run("o", "2026-01-03T00:00:00Z", Some("c"), vec![noisy_row(100.0)]);
    {
        // What version 1 held after a live import: the run before it finished
        // (h:1) and after (h:2), each under a hash of its whole run.json.
        let mut store = Store::open_writer(&db).unwrap();
        for (i, (run, text)) in [&partial, &finished, &other].into_iter().enumerate() {
            store.record(run, text).unwrap();
            store.conn.execute("UPDATE runs SET uid = ?1 WHERE uid = ?2", params![format!("{i:016x}"), run_uid(text).unwrap()]).unwrap();
        }
        store
            .conn
            .execute_batch(
                "DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (1); PRAGMA user_version = 0; PRAGMA application_id = 0;",
            )
            .unwrap();
        assert_eq!(store.runs().unwrap().len(), 3);
    }
    let store = Store::open_writer(&db).unwrap();
    let version: i64 = store.conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let runs = store.runs().unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![1, 3], "the run is held once, under its first id");
    assert_eq!(store.load(1).unwrap().run, finished.0.run, "as finished");
    assert_eq!(store.load(1).unwrap().rows, finished.0.rows);
    assert_eq!(store.load(3).unwrap().run, other.0.run);
    let n: i64 = store.conn.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 3);
    let uid: String = store.conn.query_row("SELECT uid FROM runs WHERE id = 1", [], |r| r.get(0)).unwrap();
    assert_eq!(uid, run_uid(&finished.1).unwrap());
    assert_eq!(store.integrity_check().unwrap(), "ok");
    drop(store);
    // Recording the run again now finds it.
    let mut store = Store::open_writer(&db).unwrap();
    assert_eq!(store.record(&finished.0, &finished.1).unwrap(), Recorded::Existing(1));
}

#[test]
fn whose_a_database_is_follows_its_application_id_user_version_and_tables() {
    use access::{APPLICATION_ID, Identity, identity};
    let names = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let legacy = names(&["schema_version", "runs", "sqlite_sequence", "rows"]);
    assert_eq!(identity(0, 0, &[], 0), Identity::Empty);
    assert_eq!(identity(i64::from(APPLICATION_ID), 0, &[], 0), Identity::Ours);
    assert_eq!(identity(i64::from(APPLICATION_ID), 2, &names(&["runs", "mine"]), 2), Identity::Ours, "marked: its own tables may be added");
    assert_eq!(identity(0, 0, &legacy, 6), Identity::Ours, "a proofbench database from before the mark");
    let foreign = |id, version, tables: &[&str], objects| match identity(id, version, &names(tables), objects) {
        Identity::Foreign(why) => why,
        other => panic!("{tables:?}: {other:?}"),
    };
    assert!(foreign(1234, 0, &[], 1).contains("application_id is 0x000004d2"));
    assert!(foreign(0, 7, &[], 0).contains("user_version is 7"));
    assert!(foreign(0, 0, &["runs"], 1).contains("lacks proofbench's tables schema_version, rows"));
    assert!(foreign(0, 0, &["schema_version", "runs", "rows", "customers"], 4).contains("does not make: customers"));
    assert!(foreign(0, 0, &[], 1).contains("lacks"), "a schema of views alone is not empty");
}

#[test]
fn a_reader_makes_side_files_only_where_the_database_owner_can_use_them() {
    use access::{ReadMode, read_mode};
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite");
    std::fs::write(&db, "").unwrap();
    assert_eq!(read_mode(&db, 1000, 1000).unwrap(), ReadMode::Shared { then_immutable: true }, "the owner");
    assert_eq!(read_mode(&db, 1000, 0).unwrap(), ReadMode::Shared { then_immutable: true }, "root: SQLite gives them the owner's uid");
    assert_eq!(read_mode(&db, 1000, 1001).unwrap(), ReadMode::Immutable, "another user makes nothing");
    std::fs::write(tmp.path().join("h.sqlite-wal"), "").unwrap();
    let e = read_mode(&db, 1000, 1001).unwrap_err();
    assert!(e.to_string().contains("h.sqlite-wal") && e.to_string().contains("a writer must open"), "{e}");
    assert_eq!(crate::exit_code_of(&e), 2);
    assert_eq!(read_mode(&db, 1000, 1000).unwrap(), ReadMode::Shared { then_immutable: false }, "a log is read through");
    std::fs::write(tmp.path().join("h.sqlite-shm"), "").unwrap();
    assert_eq!(read_mode(&db, 1000, 1001).unwrap(), ReadMode::Shared { then_immutable: false });
}

#[test]
fn a_database_whose_name_reads_like_uri_parameters_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h ?mode=rwc&immutable=0#%41.sqlite");
    let (run, text) = fake_run("r1", "2026-01-01T00:00:00Z", None, vec![noisy_row(100.0)]);
    Store::open_writer(&db).unwrap().record(&run, &text).unwrap();
    let store = Store::open_reader(&db).unwrap();
    assert_eq!(store.runs().unwrap().len(), 1);
    let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| n.to_string_lossy().starts_with("h ?mode=rwc&immutable=0#%41.sqlite")), "{names:?}");
}

#[test]
fn a_foreign_database_whose_tables_are_still_in_its_log_is_refused_without_folding_the_log_in() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("theirs.sqlite");
    let wal = tmp.path().join("theirs.sqlite-wal");
    {
        // Another program that left its last transactions in its log.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE accounts (id INTEGER PRIMARY KEY); INSERT INTO accounts DEFAULT VALUES;")
            .unwrap();
        c.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).unwrap();
    }
    let hash = |p: &Path| crate::model::file_name::fnv64(&std::fs::read(p).unwrap());
    assert!(std::fs::metadata(&wal).unwrap().len() > 0, "the table is in the log");
    let (file, log) = (hash(&db), hash(&wal));
    for e in [Store::open_writer(&db).err().unwrap(), Store::open_reader(&db).err().unwrap()] {
        assert!(e.to_string().contains("not a proofbench history database (it holds tables proofbench does not make: accounts)"), "{e}");
        assert_eq!(crate::exit_code_of(&e), 2);
        assert_eq!(hash(&db), file, "the database file changed");
        assert_eq!(hash(&wal), log, "the log changed");
    }
}

/// A run of `center` on Slurm node `node` of the host `vm` (the test
/// cluster's three nodes share a host), in the job array `array`.
fn node_run(name: &str, started: &str, node: &str, array: &str, center: f64) -> (StoredRun, String) {
    let (mut run, _) = fake_run(name, started, Some("c1"), vec![noisy_row(center)]);
    run.run.envelope.hostname = crate::model::Reading::Present("vm".into());
    run.run.envelope.slurm = crate::envelope::SlurmFacts::from_vars(|k| match k {
        "SLURM_JOB_ID" => Some(format!("{name}-job")),
        "SLURMD_NODENAME" => Some(node.to_string()),
        "SLURM_ARRAY_JOB_ID" => Some(array.to_string()),
        _ => None,
    });
    let text = serde_json::to_string_pretty(&run.run).unwrap();
    (run, text)
}

#[test]
fn a_fleets_nodes_are_separate_series_not_successive_runs_of_one_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open_writer(&tmp.path().join("h.sqlite")).unwrap();
    // Two submissions of three nodes each; the nodes differ by far more
    // than noise (n2 is 50% slower, n3 twice as slow), each node steady.
    let mut day = 1;
    for array in ["7", "8"] {
        for (node, center) in [("n1", 100.0), ("n2", 150.0), ("n3", 200.0)] {
            let (run, text) = node_run(&format!("{node}-{array}"), &format!("2026-01-0{day}T00:00:00Z"), node, array, center);
            store.record(&run, &text).unwrap();
            day += 1;
        }
    }
    let runs = store.runs().unwrap();
    let envelopes: Vec<crate::envelope::Envelope> = runs.iter().map(|r| store.envelope(r.id).unwrap()).collect();
    assert_eq!(envelopes[0].slurm.as_ref().and_then(|s| s.submission()).as_deref(), Some("slurm array 7"));
    assert_eq!(envelopes[1].slurm.as_ref().and_then(|s| s.submission()).as_deref(), Some("slurm array 7"));
    assert_eq!(envelopes[3].slurm.as_ref().and_then(|s| s.submission()).as_deref(), Some("slurm array 8"));
    assert_eq!(envelopes[0].machine_differences(&envelopes[1]), ["slurm.node (n1 vs n2)"], "the node is part of the machine");
    assert!(envelopes[0].machine_differences(&envelopes[3]).is_empty(), "n1 in both submissions is one machine");
    assert_eq!(envelopes[1].machine_short_name(), "vm/n2");
    let machine = |id: i64| {
        let e = store.envelope(id).unwrap();
        (e.machine_key(), e.machine_short_name())
    };
    let series = regress::series(&runs, store.rows_of("selftest.noisy").unwrap(), &machine);
    let machines: Vec<&str> = series.iter().map(|s| s.machine.as_str()).collect();
    assert_eq!(series.len(), 3, "one series per node: {machines:?}");
    let steps = regress::steps(
        &series,
        &Options { threshold: 0.02, ..Options::default() },
        &|a, b| store.envelope(a).unwrap().machine_differences(&store.envelope(b).unwrap()),
        &|_, _| Err("no history".into()),
    );
    let pairs: Vec<(i64, i64, Verdict)> = steps.iter().map(|s| (s.from.id, s.to.id, s.judged.verdict)).collect();
    assert_eq!(pairs, [(1, 4, Verdict::Unchanged), (2, 5, Verdict::Unchanged), (3, 6, Verdict::Unchanged)], "each node against itself");
}
