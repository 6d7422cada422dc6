//! The search over a fake lab: each commit has a true level (the row's
//! value), a measurement calls B against A from their ratio alone.

use std::collections::BTreeSet;

use super::*;

/// Levels per commit; a ratio beyond `different` is DIFFERENT, inside
/// `same` SAME, UNKNOWN between (or always UNKNOWN for the pairs in
/// `unknown`).
struct Fake {
    levels: Vec<f64>,
    unbuildable: BTreeSet<usize>,
    unknown: Vec<(usize, usize)>,
    built: BTreeSet<usize>,
    builds: usize,
    measured: Vec<(usize, usize, u32)>,
}

impl Fake {
    fn new(n: usize, changes: &[(usize, f64)]) -> Fake {
        let mut levels = vec![1000.0; n];
        for &(at, pct) in changes {
            for l in levels.iter_mut().skip(at) {
                *l *= 1.0 + pct / 100.0;
            }
        }
        Fake { levels, unbuildable: BTreeSet::new(), unknown: Vec::new(), built: BTreeSet::new(), builds: 0, measured: Vec::new() }
    }

    /// The commits measured (in any step).
    fn commits_measured(&self) -> BTreeSet<usize> {
        self.measured.iter().flat_map(|&(a, b, _)| [a, b]).collect()
    }
}

impl Lab for Fake {
    fn build(&mut self, i: usize) -> anyhow::Result<bool> {
        if self.built.insert(i) {
            self.builds += 1;
        }
        Ok(!self.unbuildable.contains(&i))
    }

    fn measure(&mut self, _purpose: Purpose, a: usize, b: usize, attempt: u32) -> anyhow::Result<Measured> {
        assert!(!self.unbuildable.contains(&a) && !self.unbuildable.contains(&b), "measured an unbuildable commit");
        assert!(self.built.contains(&a) && self.built.contains(&b), "measured before building");
        self.measured.push((a, b, attempt));
        let r = self.levels[b] / self.levels[a];
        let call = if self.unknown.contains(&(a, b)) {
            Call::Unknown
        } else if r > 1.01 {
            Call::Worse
        } else if r < 1.0 / 1.01 {
            Call::Better
        } else if (r - 1.0).abs() < 0.004 {
            Call::Same
        } else {
            Call::Unknown
        };
        Ok(Measured { call, ratio: Some(r), ci95: Some([r * 0.99, r * 1.01]), run_dir: None, reason: String::new(), seconds: 1.0 })
    }
}

#[test]
fn one_change_is_named_after_at_most_ten_commits_and_confirmed_against_its_parent() {
    let mut lab = Fake::new(64, &[(37, 3.0)]);
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 37, parent: 36 });
    assert!(lab.commits_measured().len() <= 10, "{:?}", lab.commits_measured());
    assert_eq!(out.steps[0].purpose, Purpose::Confirm);
    let culprit = out.steps.iter().find(|s| s.purpose == Purpose::Culprit).unwrap();
    assert_eq!((culprit.a, culprit.b, culprit.result().call), (36, 37, Call::Worse));
    assert!(out.other_changes.is_empty(), "{:?}", out.other_changes);
    assert!(out.skipped.is_empty());
}

#[test]
fn a_part_of_the_range_left_unknown_is_said_as_such() {
    let mut lab = Fake::new(64, &[(20, 2.0), (37, 3.0)]);
    let out = search(64, &mut lab).unwrap();
    let Answer::Culprit { index, parent } = out.answer else { panic!("{:?}", out.answer) };
    assert!(out.undecided_ranges.is_empty(), "{:?}", out.undecided_ranges);
    // The same search with the rest of the range measured UNKNOWN.
    let rest = if index == 37 { (0, parent) } else { (index, 63) };
    let mut lab = Fake::new(64, &[(20, 2.0), (37, 3.0)]);
    lab.unknown.push(rest);
    let out = search(64, &mut lab).unwrap();
    assert!(out.other_changes.is_empty(), "{:?}", out.other_changes);
    assert_eq!(out.undecided_ranges, vec![rest]);
    // The page says it, naming the two commits.
    let commits: Vec<Commit> = (0..64).map(|i| Commit { sha: format!("{i:040}"), subject: format!("commit {i}") }).collect();
    let rec: record::Record = serde_json::from_value(serde_json::json!({
        "schema": "test", "state": "finished", "argv": [], "key": "", "repo": "r", "build": "b", "exe": "e", "mode": "env",
        "commits": commits, "builds": {}, "measured": [], "steps": [], "outcome": out, "culprit_stat": null, "error": null,
        "wall_seconds": 1.0, "sessions": 1, "built_now": 0, "measured_now": 0
    }))
    .unwrap();
    let text = crate::text::document::terminal::render(&page::document(&rec).blocks);
    let line = format!("{} against {}: UNKNOWN", commits[rest.1].short(), commits[rest.0].short());
    assert!(text.contains("Parts of the range that could not be told") && text.contains(&line), "{text}");
}

#[test]
fn an_improvement_is_followed_the_same_way() {
    let mut lab = Fake::new(64, &[(5, -4.0)]);
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 5, parent: 4 });
}

#[test]
fn two_changes_find_one_boundary_and_say_the_range_held_another() {
    let mut lab = Fake::new(64, &[(20, 2.0), (37, 3.0)]);
    let out = search(64, &mut lab).unwrap();
    let Answer::Culprit { index, .. } = out.answer else { panic!("{:?}", out.answer) };
    assert!(index == 20 || index == 37, "{index}");
    assert_eq!(out.other_changes.len(), 1, "{:?}", out.other_changes);
    assert_eq!(out.other_changes[0].call, Call::Worse);
}

#[test]
fn no_change_between_good_and_bad_stops_after_one_step() {
    let mut lab = Fake::new(64, &[]);
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::NoChange { call: Call::Same });
    assert_eq!(out.steps.len(), 1);
}

#[test]
fn an_unbuildable_midpoint_is_skipped_for_its_neighbour() {
    let mut lab = Fake::new(64, &[(37, 3.0)]);
    lab.unbuildable = [31, 47].into();
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 37, parent: 36 });
    assert!(out.skipped.contains(&31), "{:?}", out.skipped);
    assert!(!lab.commits_measured().contains(&31));
}

#[test]
fn an_unbuildable_parent_leaves_the_culprit_among_two_commits() {
    let mut lab = Fake::new(64, &[(37, 3.0)]);
    lab.unbuildable = [36].into();
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Unbuildable { lo: 35, hi: 37 });
}

#[test]
fn an_unbuildable_good_or_bad_commit_is_an_error() {
    let mut lab = Fake::new(8, &[(3, 3.0)]);
    lab.unbuildable = [7].into();
    let e = search(8, &mut lab).unwrap_err();
    assert!(e.to_string().contains("--bad"), "{e}");
}

#[test]
fn an_unknown_step_is_measured_again_then_said_not_guessed() {
    // 2%: the unknown step's interval (0.99..1.01) holds the half-way point.
    let mut lab = Fake::new(64, &[(37, 2.0)]);
    lab.unknown = vec![(0, 31)];
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Undecided { lo: 0, hi: 63, at: 31 });
    assert_eq!(out.steps[1].attempts.len(), ATTEMPTS as usize);
    assert_eq!(lab.measured.iter().filter(|m| (m.0, m.1) == (0, 31)).map(|m| m.2).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn a_change_spread_over_commits_names_no_culprit() {
    // 0.6% at each of 30..40: no adjacent pair is DIFFERENT.
    let changes: Vec<(usize, f64)> = (30..40).map(|i| (i, 0.6)).collect();
    let mut lab = Fake::new(64, &changes);
    let out = search(64, &mut lab).unwrap();
    match out.answer {
        Answer::Spread { lo, hi } => assert!(lo < 40 && hi >= 30 && hi > lo + 1, "{lo}..{hi}"),
        Answer::Undecided { lo, hi, .. } => assert!(lo < 40 && hi >= 30, "{lo}..{hi}"),
        other => panic!("named {other:?}"),
    }
}

#[test]
fn a_change_the_other_way_inside_the_range_is_said() {
    let mut lab = Fake::new(64, &[(10, -2.0), (50, 5.0)]);
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 50, parent: 49 });
    assert!(!out.other_changes.is_empty());
}

#[test]
fn an_unknown_step_wholly_before_half_of_a_large_change_is_placed_on_the_good_side() {
    let mut lab = Fake::new(64, &[(37, 15.0)]);
    lab.unknown = vec![(0, 31)];
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 37, parent: 36 });
    let placed = &out.steps[1];
    assert_eq!((placed.a, placed.b, placed.result().call, placed.side), (0, 31, Call::Unknown, Some(Side::Good)));
    assert_eq!(placed.said(), "UNKNOWN, nearer good");
    assert_eq!(placed.attempts.len(), ATTEMPTS as usize, "measured again before it was placed");
    assert!(out.other_changes.is_empty(), "{:?}", out.other_changes);
}

#[test]
fn a_small_change_the_same_way_is_said_and_the_search_follows_the_large_one() {
    // 1.5% at 20 (DIFFERENT alone), 15% at 37: the search asked about
    // good..bad (16.7%) names 37, and says 20's range held another change.
    let mut lab = Fake::new(64, &[(20, 1.5), (37, 15.0)]);
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 37, parent: 36 });
    assert_eq!(out.other_changes.len(), 1, "said once, not again by good..parent: {:?}", out.other_changes);
    let small = out.other_changes.iter().find(|o| o.b >= 20 && o.a < 20).unwrap_or_else(|| panic!("{:?}", out.other_changes));
    assert_eq!(small.call, Call::Worse);
    assert!(small.note.contains("smaller change"), "{}", small.note);
    assert!(out.steps.iter().any(|s| s.side == Some(Side::Good) && s.result().call == Call::Worse), "{:?}", out.steps);
}

#[test]
fn a_step_wholly_past_half_of_the_change_is_on_the_bad_side_yet_the_culprit_needs_different() {
    // UNKNOWN at (0, 31) although 31 holds the whole change: placed nearer
    // bad, the search goes on below 31 and names 20 only after DIFFERENT
    // against its parent.
    let mut lab = Fake::new(64, &[(20, 15.0)]);
    lab.unknown = vec![(0, 31)];
    let out = search(64, &mut lab).unwrap();
    assert_eq!(out.answer, Answer::Culprit { index: 20, parent: 19 });
    assert_eq!(out.steps[1].side, Some(Side::Bad));
    // The same with the culprit's own step UNKNOWN: no culprit is named.
    let mut lab = Fake::new(64, &[(20, 15.0)]);
    lab.unknown = vec![(19, 20)];
    let out = search(64, &mut lab).unwrap();
    assert!(!matches!(out.answer, Answer::Culprit { .. }), "{:?}", out.answer);
}

#[test]
fn a_ratio_is_written_with_its_interval_and_a_missing_one_as_a_dash() {
    let mut m =
        Measured { call: Call::Worse, ratio: Some(1.0271), ci95: Some([1.0139, 1.04]), run_dir: None, reason: String::new(), seconds: 0.0 };
    assert_eq!(m.ratio_text(), "1.027 (1.014..1.040)");
    m.ci95 = None;
    assert_eq!(m.ratio_text(), "1.027");
    m.ratio = None;
    assert_eq!(m.ratio_text(), "-");
}
