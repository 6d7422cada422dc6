//! compare on made-up runs: rows match by key in any order, and a run that
//! did not get to its cells says so on its side.

use serde_json::json;

use super::*;
use crate::evidence::fake;
use crate::model::Cell;

/// An ok row of `workload` with axis `n`, at plan position `index`.
fn row(index: usize, workload: &str, n: usize, medians: &[f64]) -> Row {
    fake::row(index, workload, &[("n", json!(n))], None, medians, Unit::Ns)
}

fn opts() -> Options {
    Options { threshold: 0.02, ..Options::default() }
}

fn no_floor(_: &Row) -> FloorLookup {
    Err("no history".into())
}

fn plan(rows: &[Row]) -> Vec<Cell> {
    rows.iter().map(|r| r.cell.clone()).collect()
}

#[test]
fn rows_match_by_workload_and_axes_whatever_their_order() {
    const SAME: [f64; 3] = [100.0, 101.0, 99.0];
    const SLOWER: [f64; 3] = [200.0, 202.0, 198.0];
    let base: Vec<Row> = (0..50).map(|i| row(i, "w.x", i, &SAME)).collect();
    // The candidate's rows in the other order, the even ones twice as slow,
    // and one row the base does not have.
    let mut cand: Vec<Row> = (0..50).rev().map(|i| row(i, "w.x", i, if i % 2 == 0 { &SLOWER } else { &SAME })).collect();
    cand.push(row(50, "w.y", 0, &SAME));
    let (b, c) = (fake::run(plan(&base), base), fake::run(plan(&cand), cand));
    let cmp = compare(&b, &c, "a", "b", &opts(), &no_floor);
    assert_eq!(cmp.rows.len(), 51);
    for (i, r) in cmp.rows[..50].iter().enumerate() {
        assert_eq!((r.workload.as_str(), r.axes.clone()), ("w.x", format!("n={i}")));
        assert_eq!(r.ratio, Some(if i % 2 == 0 { 2.0 } else { 1.0 }), "{r:?}");
    }
    assert_eq!((cmp.rows[50].workload.as_str(), cmp.rows[50].reason.as_str()), ("w.y", "missing in the base"));
    assert_eq!(cmp.not_run(), 0);
    assert_eq!(cmp.completion.each_ref().map(Completion::is_complete), [true, true]);
}

#[test]
fn cells_a_killed_run_planned_but_never_ran_are_not_run_on_its_side() {
    const SAME: [f64; 3] = [100.0, 101.0, 99.0];
    let cells: Vec<Row> = (0..3).map(|i| row(i, "w.x", i, &SAME)).collect();
    // Planned by the candidate only, and never run.
    let only_planned = row(3, "w.z", 0, &SAME).cell;
    let base = fake::run(plan(&cells), cells.clone());
    let cand_plan = vec![cells[0].cell.clone(), cells[1].cell.clone(), only_planned];
    let cand = fake::killed(fake::run(cand_plan, vec![cells[0].clone()]));
    let c = compare(&base, &cand, "a", "b", &opts(), &no_floor);

    let state = "incomplete: 1 of 3 cells ran";
    assert_eq!(c.completion[0].state, None);
    assert_eq!(
        c.completion[1],
        Completion { cells_planned: 3, cells_ran: 1, finished: false, interrupted: false, state: Some(state.into()) }
    );
    let got: Vec<(&str, [bool; 2], &str)> = c.rows.iter().map(|r| (r.axes.as_str(), r.not_run, r.reason.as_str())).collect();
    assert_eq!(got[0].1, [false, false]);
    assert_eq!(
        &got[1..],
        [
            ("n=1", [false, true], &*format!("not run in the candidate ({state})")),
            ("n=2", [false, false], "missing in the candidate"),
            ("n=0", [false, true], &*format!("missing in the base; not run in the candidate ({state})")),
        ]
    );
    assert_eq!(c.rows[3].workload, "w.z");
    assert_eq!(c.not_run(), 2);
    assert_eq!(
        completion_warnings(&[c]),
        [format!(
            "the candidate run is {state} (it has no finish record: it was killed, or it is still running); 2 rows could not be \
             compared"
        )]
    );

    // A run a signal ended early has its finish record, and says so.
    let mut stopped = fake::run(plan(&cells), cells[..2].to_vec());
    stopped.run.interrupted = true;
    let c = compare(&stopped, &base, "a", "b", &opts(), &no_floor);
    assert_eq!(c.completion[0].state.as_deref(), Some("interrupted: 2 of 3 cells ran"));
    assert_eq!(c.rows.iter().map(|r| r.not_run).collect::<Vec<_>>(), [[false, false], [false, false], [true, false]]);
    assert!(
        completion_warnings(&[c])[0]
            == "the base run is interrupted: 2 of 3 cells ran (a signal ended it early); 1 row could not be compared"
    );
}

#[test]
fn a_verdict_given_before_the_rest_of_its_family_is_measured_stands_when_it_is() {
    // Ten rows of one comparison; three clearly beyond the band.
    let p = [0.001, 0.002, 0.004, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95];
    let judged = |p: &[f64], family: usize| -> Vec<(Verdict, f64)> {
        let mut rows: Vec<RowComparison> = p
            .iter()
            .map(|&p| RowComparison {
                p_value: Some(p),
                verdict: if p < 0.05 { Verdict::Regressed } else { Verdict::Unchanged },
                ..RowComparison::empty("w.x", "-".into(), 0.02)
            })
            .collect();
        control_false_discoveries_among(&mut rows, family);
        rows.iter().map(|r| (r.verdict, r.q_value.unwrap())).collect()
    };
    let end = judged(&p, 0);
    // The first four measured, of a family of ten: each q-value is at least the final one.
    let so_far = judged(&p[..4], 10);
    assert_eq!(so_far.iter().filter(|v| v.0 == Verdict::Regressed).count(), 3, "{so_far:?}");
    // Judged as a family of four, the same rows would get smaller q-values.
    assert!(judged(&p[..4], 0).iter().zip(&so_far).all(|(alone, now)| alone.1 < now.1));
    for (now, then) in so_far.iter().zip(&end) {
        assert!(now.1 >= then.1, "{so_far:?} {end:?}");
        assert!(now.0 != Verdict::Regressed || then.0 == Verdict::Regressed);
    }
    assert!(end[..3].iter().all(|v| v.0 == Verdict::Regressed), "{end:?}");
}

/// Text with markdown and HTML special characters.
const HOSTILE: &str = "<script>alert(1)</script> a|b *c* `d`";

#[test]
fn a_name_or_workload_with_markup_is_escaped_by_each_output_its_own_way() {
    const SAME: [f64; 3] = [100.0, 101.0, 99.0];
    let rows: Vec<Row> = vec![row(0, "w.x", 0, &SAME)];
    let run = fake::run(plan(&rows), rows);
    let mut c = compare(&run, &run, "a", "b", &opts(), &no_floor);
    c.base = HOSTILE.into();
    c.rows[0].workload = HOSTILE.into();
    let doc = document(&[c], &[HOSTILE.into()], &[]);
    let md = crate::text::document::markdown::render(&doc.blocks);
    assert!(!md.contains("<script"), "{md}");
    assert!(md.starts_with("> warning: &lt;script>alert(1)&lt;/script> a|b \\*c\\* \\`d\\`\n"), "{md}");
    assert!(md.contains("\nBase: &lt;script>alert(1)&lt;/script> a|b \\*c\\* \\`d\\`\n"), "{md}");
    assert!(md.contains("| &lt;script>alert(1)&lt;/script> a\\|b \\*c\\* \\`d\\` |"), "the cell cannot break its row: {md}");
    let html = crate::text::document::html::render(&doc.blocks);
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("<p>Base: &lt;script&gt;alert(1)&lt;/script&gt; a|b *c* `d`<br>"), "{html}");
    assert!(html.contains("<tr><td>&lt;script&gt;alert(1)&lt;/script&gt; a|b *c* `d`</td>"), "{html}");
    let term = crate::text::document::terminal::render(&doc.blocks);
    assert!(term.starts_with(&format!("warning: {HOSTILE}\n")), "the terminal shows it as it is: {term}");
    assert!(term.contains(&format!("\nBase: {HOSTILE}\n")) && term.contains(&format!("| {HOSTILE} |")), "{term}");
}

#[test]
fn rows_one_side_never_planned_are_counted_per_side_in_every_output_and_kept_in_the_record() {
    const SAME: [f64; 3] = [100.0, 101.0, 99.0];
    let groups = ["cpu.a", "npb.b", "os.c"];
    let full: Vec<Row> = (0..150).map(|i| row(i, groups[i % 3], i, &SAME)).collect();
    let small: Vec<Row> = full[..3].to_vec();
    let (big, little) = (fake::run(plan(&full), full), fake::run(plan(&small), small));
    let c = compare(&big, &little, "full", "small", &opts(), &no_floor);
    assert_eq!(c.rows.len(), 150, "the record keeps every row");
    assert_eq!(c.rows.iter().filter(|r| r.reason == "missing in the candidate").count(), 147);
    let doc = document(&[c], &[], &[]);
    let line = "147 rows of the base are not in the candidate (not compared): cpu, npb, os groups.";
    let outputs = [
        crate::text::document::terminal::render(&doc.blocks),
        crate::text::document::markdown::render(&doc.blocks),
        crate::text::document::html::render(&doc.blocks),
    ];
    for out in &outputs {
        assert_eq!(out.matches(line).count(), 1, "{out}");
        assert!(!out.contains("missing in the candidate"), "no row of them is listed: {out}");
        // Three trials a side spread by 1%: an interval too wide for SAME within 2%.
        assert!(out.contains("0 DIFFERENT (0 regressed, 0 improved), 0 SAME within 2%, 3 UNKNOWN, 0 not comparable."), "{out}");
    }
    assert_eq!(outputs[0].matches("| UNKNOWN ").count(), 3, "{}", outputs[0]);
    // The other way round, and one row alone: singular.
    let c = compare(&little, &big, "small", "full", &opts(), &no_floor);
    let text = crate::text::document::terminal::render(&document(&[c], &[], &[]).blocks);
    assert!(text.contains("147 rows of the candidate are not in the base (not compared): cpu, npb, os groups."), "{text}");
    let one: Vec<Row> = vec![row(0, "cpu.a", 0, &SAME), row(1, "npb.b", 1, &SAME)];
    let c = compare(&fake::run(plan(&one), one.clone()), &fake::run(plan(&one[..1]), one[..1].to_vec()), "a", "b", &opts(), &no_floor);
    let text = crate::text::document::terminal::render(&document(&[c], &[], &[]).blocks);
    assert!(text.contains("\n1 row of the base is not in the candidate (not compared): npb group.\n"), "{text}");
}

#[test]
fn a_treatment_the_rows_record_is_matched_across_whatever_the_workload() {
    // A workload no build defines: what the rows say is all there is.
    let with = |pad: i64, treatments: Option<Vec<String>>| {
        let mut r = row(0, "elsewhere.made", 1, &[100.0, 101.0, 99.0]);
        r.cell.params.insert("pad".into(), json!(pad));
        r.cell.treatments = treatments;
        r
    };
    let judged = |b: Row, c: Row| judge(&b, &c, &opts(), None, Err("no history".into()));
    let r = judged(with(0, Some(vec!["pad".into()])), with(10, Some(vec!["pad".into()])));
    assert_eq!(r.verdict, Verdict::Unchanged, "{}", r.reason);
    // Without it, a differing parameter stops the pair.
    let r = judged(with(0, Some(Vec::new())), with(10, Some(Vec::new())));
    assert_eq!(r.verdict, Verdict::NotComparable);
    assert!(r.reason.starts_with("different parameters: pad 0 vs 10"), "{}", r.reason);
}

#[test]
fn a_verdict_from_disturbed_trials_is_said_so_in_every_output_and_the_gate_exits_3() {
    const SAME: [f64; 3] = [100.0, 101.0, 99.0];
    const SLOWER: [f64; 3] = [200.0, 202.0, 198.0];
    // Row 0 regressed from clean trials, row 1 from disturbed ones.
    let base = vec![row(0, "w.x", 0, &SAME), row(1, "w.x", 1, &SAME)];
    let cand = vec![row(0, "w.x", 0, &SLOWER), fake::disturbed(row(1, "w.x", 1, &SLOWER), 0.8)];
    let (b, c) = (fake::run(plan(&base), base.clone()), fake::run(plan(&cand), cand));
    let cmp = compare(&b, &c, "a", "b", &opts(), &no_floor);
    assert_eq!(
        cmp.rows.iter().map(|r| (r.verdict, r.disturbed_verdict)).collect::<Vec<_>>(),
        [(Verdict::Regressed, false), (Verdict::Regressed, true)]
    );
    assert_eq!(cmp.rows[1].word_text(), "DIFFERENT (regressed, disturbed)");
    let counted = "2 DIFFERENT (2 regressed (1 from disturbed trials), 0 improved)";
    assert!(words_text(&cmp.rows).starts_with(counted), "{}", words_text(&cmp.rows));
    let json = serde_json::to_value(&cmp).unwrap();
    assert_eq!(json["rows"][1]["disturbed_verdict"], true);
    for text in [
        crate::text::document::terminal::render(&document(std::slice::from_ref(&cmp), &[], &[]).blocks),
        crate::text::document::markdown::render(&document(std::slice::from_ref(&cmp), &[], &[]).blocks),
        crate::text::document::html::render(&document(std::slice::from_ref(&cmp), &[], &[]).blocks),
    ] {
        assert!(text.contains("DIFFERENT (regressed, disturbed)") && text.contains(counted), "{text}");
    }
    // A clean regression fails the gate with 1, the disturbed one said beside it.
    let (code, why) = gate(&cmp.rows, &Gate::default());
    assert_eq!((code, why.as_deref()), (1, Some("2 rows regressed (1 of them from disturbed trials, accepted)")));

    // Only the disturbed one: exit 3, unless accepted.
    let only = vec![row(0, "w.x", 0, &SAME), fake::disturbed(row(1, "w.x", 1, &SLOWER), 0.8)];
    let c = fake::run(plan(&only), only);
    let cmp = compare(&b, &c, "a", "b", &opts(), &no_floor);
    let (code, why) = gate(&cmp.rows, &Gate::default());
    assert_eq!(code, EXIT_DISTURBED);
    assert!(why.unwrap().contains("every one from disturbed trials or a busy machine"));
    assert_eq!(gate(&cmp.rows, &Gate { accept_disturbed: true, ..Gate::default() }).0, 1);
    assert_eq!(gate(&[], &Gate::default()), (0, None));
}

#[test]
fn two_runs_on_a_busy_machine_are_said_busy_and_their_verdicts_marked() {
    const SAME: [f64; 3] = [100.0, 101.0, 99.0];
    const SLOWER: [f64; 3] = [200.0, 202.0, 198.0];
    let base = vec![row(0, "w.x", 0, &SAME)];
    let cand = vec![row(0, "w.x", 0, &SLOWER)];
    let (mut b, mut c) = (fake::run(plan(&base), base), fake::run(plan(&cand), cand));
    b.run.interference = Some(fake::busy(0.8));
    c.run.interference = Some(fake::busy(0.8));
    let cmp = compare(&b, &c, "a", "b", &opts(), &no_floor);
    // Both busy: said (it was said only when the two differed), and the
    // verdict, from trials not themselves marked, is marked by the runs'.
    let said = cmp.interference.clone().expect("the load is said");
    assert!(said.starts_with("both runs were made on a busy machine (base run others took 80%"), "{said}");
    assert!(cmp.rows[0].disturbed_verdict && cmp.rows[0].verdict == Verdict::Regressed);
    assert_eq!(gate(&cmp.rows, &Gate::default()).0, EXIT_DISTURBED);
    // Quiet runs: nothing said, nothing marked.
    b.run.interference = None;
    c.run.interference = None;
    let quiet = compare(&b, &c, "a", "b", &opts(), &no_floor);
    assert!(quiet.interference.is_none() && !quiet.rows[0].disturbed_verdict);
    assert_eq!(gate(&quiet.rows, &Gate::default()).0, 1);
}

#[test]
fn the_held_count_is_set_beside_what_runs_differing_only_as_their_trials_do_would_give() {
    // Row 0: each interval holds the other's median. Row 1: the candidate
    // moved far outside both intervals. Row 2 has 7 trials in the base.
    let base = vec![
        row(0, "w.x", 0, &[100.0, 101.0, 99.0]),
        row(1, "w.x", 1, &[100.0, 101.0, 99.0]),
        row(2, "w.x", 2, &[100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]),
    ];
    let cand =
        vec![row(0, "w.x", 0, &[100.5, 99.5, 100.0]), row(1, "w.x", 1, &[150.0, 151.0, 149.0]), row(2, "w.x", 2, &[100.1, 99.9, 100.0])];
    let c = compare(&fake::run(plan(&base), base.clone()), &fake::run(plan(&cand), cand.clone()), "a", "b", &opts(), &no_floor);
    let (held, checked, expected) = c.held();
    assert_eq!((held, checked), (4, 6), "{:?}", c.rows.iter().map(|r| r.holds_other).collect::<Vec<_>>());
    let e = |a, b| stats::expected_hold(a, b, LEVEL).unwrap();
    let want = 4.0 * e(3, 3) + e(7, 3) + e(3, 7);
    assert!((expected - want).abs() < 1e-9, "{expected} against {want}");
    // The printed line carries both figures, and not the 95% no run's own interval promises.
    let text = crate::text::document::markdown::render(&document(std::slice::from_ref(&c), &[], &[]).blocks);
    assert!(text.contains("held the other's median 4 times of 6 (67%)"), "{text}");
    assert!(text.contains(&format!("about {:.0}% of the time", 100.0 * want / 6.0)), "{text}");
    assert!(!text.contains("about 95%"), "{text}");
}

/// The terminal, markdown and HTML documents of `cs`.
fn outputs(cs: &[Comparison]) -> [String; 3] {
    let doc = document(cs, &[], &[]);
    [
        crate::text::document::terminal::render(&doc.blocks),
        crate::text::document::markdown::render(&doc.blocks),
        crate::text::document::html::render(&doc.blocks),
    ]
}

/// `n` trials around `center`, 0.1% apart.
fn tight(center: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| center * (1.0 + (i as f64 - n as f64 / 2.0) * 0.001)).collect()
}

#[test]
fn every_output_of_two_runs_says_each_row_s_word_and_the_json_carries_it() {
    let failed = Row { status: crate::model::Status::Failed, ..row(3, "w.x", 3, &tight(100.0, 10)) };
    let base = vec![
        row(0, "w.x", 0, &tight(100.0, 10)),
        row(1, "w.x", 1, &tight(100.0, 10)),
        row(2, "w.x", 2, &[100.0, 101.0, 99.0]),
        row(3, "w.x", 3, &tight(100.0, 10)),
    ];
    // 1.5x slower; the same; three trials spread by 1% (an interval too wide for either); failed.
    let cand =
        vec![row(0, "w.x", 0, &tight(150.0, 10)), row(1, "w.x", 1, &tight(100.0, 10)), row(2, "w.x", 2, &[100.0, 101.0, 99.0]), failed];
    let (b, c) = (fake::run(plan(&base), base), fake::run(plan(&cand), cand));
    let cmp = compare(&b, &c, "a", "b", &opts(), &no_floor);
    let words: Vec<Option<Word>> = cmp.rows.iter().map(|r| r.word).collect();
    assert_eq!(words, [Some(Word::Different), Some(Word::Same), Some(Word::Unknown), None]);
    let meaning = "DIFFERENT (regressed or improved): the whole 95% interval lies beyond the band; SAME within 2%: the interval \
                   lies inside +-2%; UNKNOWN: neither, more trials may decide it.";
    let counts = "1 DIFFERENT (1 regressed, 0 improved), 1 SAME within 2%, 1 UNKNOWN, 1 not comparable.";
    let [term, md, html] = outputs(std::slice::from_ref(&cmp));
    for text in [&term, &md, &html] {
        assert!(text.contains(meaning) && text.contains(counts), "{text}");
        assert_eq!(text.matches(meaning).count(), 1, "said once: {text}");
    }
    for cell in ["DIFFERENT (regressed)", "SAME within 2%", "UNKNOWN", "not comparable (base ok, candidate failed)"] {
        let cell = cell.split(" (base").next().unwrap();
        assert!(term.contains(&format!("| {cell} ")) && md.contains(&format!("| {cell} ")), "{cell}: {term}\n{md}");
        assert!(html.contains(&format!("<td>{cell}</td>")), "{cell}: {html}");
    }
    let json = serde_json::to_value(&cmp).unwrap();
    let words: Vec<&serde_json::Value> = (0..4).map(|i| &json["rows"][i]["word"]).collect();
    assert_eq!(words, [&json!("DIFFERENT"), &json!("SAME"), &json!("UNKNOWN"), &serde_json::Value::Null]);
    assert_eq!(
        (&json["rows"][0]["verdict"], &json["rows"][1]["verdict"]),
        (&json!("regressed"), &json!("unchanged")),
        "beside the verdict"
    );

    // --equivalence 5%: the band is said where SAME is.
    let cmp = compare(&b, &c, "a", "b", &Options { equivalence: Some(0.05), ..opts() }, &no_floor);
    for text in outputs(std::slice::from_ref(&cmp)) {
        assert!(text.contains("SAME within 5%: the interval lies inside +-5%") && text.contains("SAME within 5%, "), "{text}");
    }
}

#[test]
fn every_output_of_a_run_s_variants_says_each_row_s_word_and_what_different_means_there() {
    let (a, v) = (fake::variant("a", true), fake::variant("b", false));
    let base = [100.0, 120.0, 90.0, 105.0];
    let times = |k: f64| base.map(|x| x * k);
    let vrow = |i: usize, n: usize, variant: &crate::model::Variant, medians: &[f64]| {
        fake::row(i, "w.x", &[("n", json!(n))], Some(variant), medians, Unit::Ns)
    };
    let rows = vec![
        vrow(0, 0, &a, &base),
        vrow(1, 0, &v, &times(1.03)),
        vrow(2, 1, &a, &base),
        // Within 0.2% either way (no spread at all would decide on the point).
        vrow(3, 1, &v, &[100.2, 119.8, 90.1, 104.9]),
        vrow(4, 2, &a, &base),
        // Rounds 10% apart either way: neither.
        vrow(5, 2, &v, &[110.0, 108.0, 99.0, 94.5]),
        vrow(6, 3, &a, &base),
        Row { status: crate::model::Status::Failed, ..vrow(7, 3, &v, &base) },
    ];
    let cs = paired::compare(&rows, "run", &opts());
    let words: Vec<Option<Word>> = cs[0].rows.iter().map(|r| r.word).collect();
    assert_eq!(words, [Some(Word::Different), Some(Word::Same), Some(Word::Unknown), None], "{:#?}", cs[0].rows);
    let [term, md, html] = outputs(&cs);
    for text in [&term, &md, &html] {
        assert!(text.contains("DIFFERENT (regressed or improved): the interval excludes 1, however small the change"), "{text}");
        assert!(text.contains("1 DIFFERENT (1 regressed, 0 improved), 1 SAME within 2%, 1 UNKNOWN, 1 not comparable."), "{text}");
        assert!(!text.contains("Noise threshold"), "no noise band for variants of one run: {text}");
    }
    for cell in ["DIFFERENT (regressed)", "SAME within 2%", "UNKNOWN", "not comparable"] {
        assert!(term.contains(&format!("| {cell} ")) && md.contains(&format!("| {cell} ")), "{cell}: {term}\n{md}");
        assert!(html.contains(&format!("<td>{cell}</td>")), "{cell}: {html}");
    }
    assert!(term.contains("| none ") && !term.contains("0.00% noise"), "{term}");
    let json = serde_json::to_value(&cs).unwrap();
    let words: Vec<&serde_json::Value> = (0..4).map(|i| &json[0]["rows"][i]["word"]).collect();
    assert_eq!(words, [&json!("DIFFERENT"), &json!("SAME"), &json!("UNKNOWN"), &serde_json::Value::Null]);
}
