//! The heart of a run: rounds of trials. Round r runs the r-th trial of
//! every cell still measuring, in an order shuffled from the run's seed and
//! r (randomized multiple interleaved trials), so that drift of the machine
//! spreads over every cell instead of landing on one. The variants of a
//! cell (`--variant`) form a group whose trials run back to back, so that
//! each round pairs them in time; the order inside a group rotates from
//! round to round (each variant goes first as often as the others, within
//! one), so that what the first trial of a pair pays (the cache and page
//! state the previous cell left) falls on every variant alike. After the
//! planned trials, a row (or a group, as one) whose interval is still wider
//! than the target may get more in later rounds while the run's budget
//! allows. Each row is written the moment its last trial is decided, and
//! handed to the observers.

use std::time::Instant;

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use crate::compare::paired::{TrialSamples, pair_evidence};
use crate::evidence::{RoundRecord, Row, RowStop, RunDir};
use crate::measure::clock::utc_now_millis;
use crate::measure::interrupts::Idle;
use crate::model::{Cell, Status, TrialPlan};
use crate::stats::decide::{Decision, Design, Plan};
use crate::stats::{LEVEL, trial_interval};

use crate::process::signals;
use crate::runner::config::RunConfig;
use crate::runner::local::compose::{self, Finished, RowInput};
use crate::runner::local::trial;
use crate::runner::observe::Coming;
use crate::runner::observe::Observers;

/// What the rounds produced.
pub struct Outcome {
    /// Every row written, in the order they were decided.
    pub rows: Vec<Row>,
    pub rounds: Vec<RoundRecord>,
    /// A stop signal ended the run early.
    pub interrupted: bool,
    /// The run's idle window, the baseline of every row's interrupts.
    pub idle: Option<Idle>,
}

/// How long the runner sleeps before the first round to count what the CPUs
/// receive with nothing of the run running.
pub const IDLE_WINDOW: std::time::Duration = std::time::Duration::from_millis(250);

/// The order of a round: `cells` shuffled by a generator seeded from the
/// run's seed and the round's number.
pub fn shuffled(cells: &[usize], seed: u64, round: u32) -> Vec<usize> {
    let mut order = cells.to_vec();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ u64::from(round).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    order.shuffle(&mut rng);
    order
}

/// The cells of round `round` in the order they run, one list per group:
/// the `active` groups shuffled ([`shuffled`]), each group's cells back to
/// back (or as one lockstep set), rotated by the round plus an offset drawn
/// from the seed for that group.
#[cfg(test)]
fn round_groups_flat(groups: &[Vec<usize>], active: &[usize], seed: u64, round: u32) -> Vec<usize> {
    round_groups(groups, active, seed, round).concat()
}

pub fn round_groups(groups: &[Vec<usize>], active: &[usize], seed: u64, round: u32) -> Vec<Vec<usize>> {
    shuffled(active, seed, round)
        .into_iter()
        .map(|g| {
            let cells = &groups[g];
            let offset = Xoshiro256PlusPlus::seed_from_u64(seed ^ (g as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)).random::<u64>() as usize;
            let start = (round as usize).wrapping_add(offset) % cells.len().max(1);
            (0..cells.len()).map(|j| cells[(start + j) % cells.len()]).collect()
        })
        .collect()
}

/// A group (a cell, or a cell under every variant) still measuring after a
/// round, as the decision sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// Position in the plan's groups.
    pub cell: usize,
    /// Trials so far (all ok).
    pub trials: u32,
    /// The interval's half-width relative to the median (0 without spread,
    /// `None` when it cannot be computed).
    pub rel_half_width: Option<f64>,
    /// What one more trial is expected to cost, ms.
    pub cost_ms: f64,
    /// A group of variants: whether every candidate's comparison with the
    /// base is decided, SAME or DIFFERENT (`None` for a single cell).
    pub decided: Option<bool>,
}

/// After a round: which cells take another trial, and why each other one
/// stops. Below the planned trials every cell goes on; at `max`, it stops;
/// a group of variants whose comparisons are decided stops, one that is not
/// goes on whatever its width; a cell within the target stops; of the
/// rest, the widest cells (the narrowest undecided groups of variants) go
/// on first while their expected cost fits in what is left of the run
/// budget (`elapsed_ms` used so far), and the others stop for the budget.
pub fn decide(plan: &TrialPlan, standing: &[Standing], elapsed_ms: f64) -> (Vec<usize>, Vec<(usize, RowStop)>) {
    let (mut more, mut stop, mut wide) = (Vec::new(), Vec::new(), Vec::new());
    // The planned trials come first in the budget.
    let mut spent = elapsed_ms;
    for s in standing {
        if s.trials < plan.min {
            more.push(s.cell);
            spent += s.cost_ms;
        } else if s.trials >= plan.max {
            stop.push((s.cell, if plan.min == plan.max { RowStop::Fixed } else { RowStop::MaxTrials }));
        } else if s.decided == Some(true) {
            stop.push((s.cell, RowStop::Decided));
        } else if s.decided.is_none() && s.rel_half_width.is_some_and(|r| r * 100.0 <= plan.ci_target_pct) {
            stop.push((s.cell, RowStop::CiTarget));
        } else {
            wide.push(s);
        }
    }
    // A lone cell: the widest first, as the target asks. A group of
    // variants: the narrowest first, the undecided comparison one more pair
    // is most likely to decide (a comparison 30% wide will not be decided
    // by the pairs a run has left, one 2% wide may be).
    // One key for both, so that the order stays total even in a mixed list.
    let first = |s: &Standing| {
        let width = s.rel_half_width.unwrap_or(f64::INFINITY);
        if s.decided.is_some() { width } else { -width }
    };
    wide.sort_by(|a, b| first(a).total_cmp(&first(b)));
    for s in wide {
        if spent + s.cost_ms <= plan.run_budget_ms as f64 {
            spent += s.cost_ms;
            more.push(s.cell);
        } else {
            stop.push((s.cell, RowStop::RunBudget));
        }
    }
    (more, stop)
}

/// The expected cost of one more trial like the last: its process's wall
/// time with a quarter for slack.
fn cost_ms(trials: &[Finished]) -> f64 {
    trials.last().map_or(0.0, |t| t.record.process.wall_ms * 1.25)
}

/// The standing of a cell whose trials so far are all ok: the interval of
/// their medians (each trial record holds its own), as the row will have it.
fn standing(cell: usize, trials: &[Finished]) -> Standing {
    let medians: Vec<f64> = trials.iter().filter_map(|t| t.record.median).collect();
    let center = crate::stats::median(&medians);
    let rel_half_width = (medians.len() >= 2).then(|| match trial_interval(&medians, LEVEL) {
        Some(ci) if center != 0.0 => (ci.hi - ci.lo) / 2.0 / center.abs(),
        Some(_) => f64::INFINITY,
        // Every trial gave the same median: nothing to narrow.
        None => 0.0,
    });
    Standing { cell, trials: trials.len() as u32, rel_half_width, cost_ms: cost_ms(trials), decided: None }
}

/// The design the variants' comparisons of this run are decided by: its
/// trial plan, its `--equivalence`.
pub fn design(cfg: &RunConfig) -> Design {
    let equivalence = cfg.options.selection.equivalence.unwrap_or(crate::stats::decide::DEFAULT_EQUIVALENCE);
    Design::for_trials(cfg.plan.trials.min, cfg.plan.trials.max, equivalence)
}

/// Trials with their timed samples, as the pairing takes them.
fn with_samples(trials: &[Finished]) -> Vec<TrialSamples<'_>> {
    trials
        .iter()
        .map(|t| {
            let timed = crate::compare::paired::timed_by_trial(&t.report.samples).into_values().next().unwrap_or_default();
            (&t.record, timed)
        })
        .collect()
}

/// The standing of a group of variants (base first) under `plan`: it is
/// decided when every candidate's comparison with the base is SAME or
/// DIFFERENT (`stats::decide`, from the pairs as `compare` takes them), a
/// DIFFERENT with its p-value at most alpha / `family` (the comparisons of
/// the run judged together: then the adjustment across them, which never
/// raises a p-value more than `family` times, keeps it; a DIFFERENT short
/// of that takes more pairs);
/// its width is the widest 95% interval across pairs (half-width on the log
/// scale, about the relative one), which ranks the undecided for the
/// budget; the trials are the fewest any variant has, the cost that of one
/// more trial of each.
fn group_standing(group: usize, members: &[&[Finished]], plan: &Plan, family: usize) -> Standing {
    let base = with_samples(members[0]);
    let (mut widths, mut decided) = (Vec::new(), true);
    for cand in &members[1..] {
        let ev = pair_evidence(&base, &with_samples(cand));
        widths.push(crate::stats::decide::across_pairs(&ev.summaries, LEVEL).map(|c| (c.hi / c.lo).ln() / 2.0));
        decided &= match plan.decide(&ev.summaries) {
            Decision::Different { .. } if !plan.is_last(ev.summaries.len()) => {
                plan.p_different(&ev.summaries).is_some_and(|p| p * family.max(1) as f64 <= plan.design().alpha)
            }
            d => !d.more_pairs(),
        };
    }
    let rel_half_width = widths.into_iter().collect::<Option<Vec<f64>>>().map(|w| w.into_iter().fold(0.0, f64::max));
    Standing {
        cell: group,
        trials: members.iter().map(|m| m.len() as u32).min().unwrap_or(0),
        rel_half_width,
        cost_ms: members.iter().map(|m| cost_ms(m)).sum(),
        decided: Some(decided),
    }
}

/// Runs the rounds of a planned run, writing each row into `dir` as it is
/// decided.
pub fn execute(cfg: &RunConfig, dir: &mut RunDir, obs: &mut Observers) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let n = cfg.plan.cells.len();
    // Checked when the run was configured (`--equivalence`).
    let plan = Plan::new(design(cfg)).map_err(|e| anyhow::anyhow!("the variants' decision: {e}"))?;
    let family = crate::compare::paired::planned_comparisons(&cfg.plan.cells);
    let mut runs: Vec<Vec<Finished>> = (0..n).map(|_| Vec::new()).collect();
    // Cells whose row is written.
    let mut written = vec![false; n];
    let mut active: Vec<usize> = (0..cfg.plan.groups.len()).collect();
    let idle = if signals::interrupted() { None } else { Idle::take(IDLE_WINDOW) };
    let mut out = Outcome { rows: Vec::new(), rounds: Vec::new(), interrupted: false, idle };
    let mut round = 0u32;
    while !active.is_empty() && !out.interrupted {
        let units = round_groups(&cfg.plan.groups, &active, cfg.seed, round);
        let order: Vec<usize> = units.iter().flatten().copied().collect();
        obs.round_started(round, &Coming::at(round, order.len(), cfg.plan.trials.min, cfg.plan.trials.max));
        let mut record = RoundRecord {
            index: round,
            order: order.iter().map(|&i| cfg.plan.cells[i].index).collect(),
            started_utc: utc_now_millis(),
            finished_utc: None,
        };
        for unit in &units {
            if signals::interrupted() {
                out.interrupted = true;
                break;
            }
            // The variants of a cell as one lockstep set (`--lockstep`), or each cell in turn.
            let done: Vec<(usize, Finished)> = if cfg.options.selection.lockstep && unit.len() >= 2 {
                let cells: Vec<&Cell> = unit.iter().map(|&i| &cfg.plan.cells[i]).collect();
                let trials: Vec<u32> = unit.iter().map(|&i| runs[i].len() as u32).collect();
                for (c, &t) in cells.iter().zip(&trials) {
                    obs.trial_started(c, t, round);
                }
                let Some(done) = trial::run_set(cfg, dir, &cells, &trials, round)? else {
                    out.interrupted = true;
                    break;
                };
                unit.iter().copied().zip(done).collect()
            } else {
                let mut done = Vec::new();
                for &i in unit {
                    if signals::interrupted() {
                        out.interrupted = true;
                        break;
                    }
                    let cell = &cfg.plan.cells[i];
                    obs.trial_started(cell, runs[i].len() as u32, round);
                    let Some(d) = trial::run(cfg, dir, cell, runs[i].len() as u32, round)? else {
                        out.interrupted = true;
                        break;
                    };
                    done.push((i, d));
                }
                done
            };
            for (i, d) in done {
                obs.trial_finished(&cfg.plan.cells[i], &d.record);
                let ok = d.record.status == Status::Ok;
                runs[i].push(d);
                if !ok {
                    // A failed, invalid, timed-out or skipped trial decides the row.
                    finish(cfg, dir, obs, &mut out, i, std::mem::take(&mut runs[i]), RowStop::NotOk)?;
                    written[i] = true;
                }
            }
            if out.interrupted {
                break;
            }
        }
        record.finished_utc = Some(utc_now_millis());
        out.rounds.push(record);
        round += 1;
        if out.interrupted {
            break;
        }
        // A group one of whose variants is decided stops as a whole: its
        // rounds could no longer pair them.
        let (mut still, mut broken) = (Vec::new(), Vec::new());
        for &g in &active {
            if cfg.plan.groups[g].iter().any(|&i| written[i]) { broken.push(g) } else { still.push(g) }
        }
        for g in broken {
            for &i in &cfg.plan.groups[g] {
                if !written[i] {
                    finish(cfg, dir, obs, &mut out, i, std::mem::take(&mut runs[i]), RowStop::VariantNotOk)?;
                    written[i] = true;
                }
            }
        }
        let standings: Vec<Standing> = still
            .iter()
            .map(|&g| match cfg.plan.groups[g].as_slice() {
                [i] => Standing { cell: g, ..standing(*i, &runs[*i]) },
                members => group_standing(g, &members.iter().map(|&i| runs[i].as_slice()).collect::<Vec<_>>(), &plan, family),
            })
            .collect();
        let (more, stops) = decide(&cfg.plan.trials, &standings, started.elapsed().as_secs_f64() * 1e3);
        for (g, why) in stops {
            for &i in &cfg.plan.groups[g] {
                finish(cfg, dir, obs, &mut out, i, std::mem::take(&mut runs[i]), why)?;
                written[i] = true;
            }
        }
        active = more;
    }
    // After a stop signal: every finished trial is kept (cells that ran in
    // the last round before the signal, and those that did not yet).
    for g in active {
        for &i in &cfg.plan.groups[g] {
            if !written[i] && !runs[i].is_empty() {
                finish(cfg, dir, obs, &mut out, i, std::mem::take(&mut runs[i]), RowStop::Interrupted)?;
            }
        }
    }
    Ok(out)
}

/// Makes the row of cell `i` from its trials, writes it and tells the observers.
fn finish(
    cfg: &RunConfig,
    dir: &mut RunDir,
    obs: &mut Observers,
    out: &mut Outcome,
    i: usize,
    trials: Vec<Finished>,
    stop: RowStop,
) -> anyhow::Result<()> {
    let cell = &cfg.plan.cells[i];
    let mut row = compose::row(RowInput { cell, spec: cfg.spec(cell), trials, planned: cfg.plan.trials.min, stop });
    row.design = cell.variant.is_some().then(|| design(cfg));
    if let (Some(idle), Some(irq)) = (&out.idle, row.counters.as_mut().and_then(|c| c.interrupts.as_mut())) {
        irq.baseline_ns = idle.window_ns;
        irq.baseline = Some(idle.counts(&irq.cpus));
    }
    let rows = &mut out.rows;
    // The profiling pass: after the row's trials, outside its samples.
    row.profile = crate::runner::perf::pass(cfg, dir, &row);
    if !row.samples.is_empty() {
        row.raw = Some(dir.write_raw(&row)?);
    }
    dir.append_row(&row)?;
    rows.push(row);
    obs.row_finished(rows.last().expect("just pushed"), dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(min: u32, max: u32, budget_ms: u64) -> TrialPlan {
        TrialPlan { min, max, run_budget_ms: budget_ms, ci_target_pct: 2.0 }
    }

    fn st(cell: usize, trials: u32, rel: f64, cost: f64) -> Standing {
        Standing { cell, trials, rel_half_width: Some(rel), cost_ms: cost, decided: None }
    }

    #[test]
    fn every_round_is_a_permutation_that_depends_on_seed_and_round() {
        let cells: Vec<usize> = (0..40).collect();
        let a = shuffled(&cells, 7, 0);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, cells);
        assert_eq!(a, shuffled(&cells, 7, 0), "the same seed and round repeat");
        assert_ne!(a, shuffled(&cells, 7, 1), "each round has its own order");
        assert_ne!(a, shuffled(&cells, 8, 0), "each seed has its own order");
        assert_ne!(a, cells, "the plan order is shuffled");
    }

    #[test]
    fn variants_of_a_cell_run_back_to_back_and_each_goes_first_in_turn() {
        let groups = vec![vec![0, 1], vec![2, 3], vec![4]];
        let mut first_of_group0 = Vec::new();
        for round in 0..6 {
            let order = round_groups_flat(&groups, &[0, 1, 2], 11, round);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4], "every cell once a round");
            for g in &groups[..2] {
                let at = order.iter().position(|c| g.contains(c)).unwrap();
                assert!(g.contains(&order[at + 1]), "round {round}: the variants of {g:?} are adjacent in {order:?}");
            }
            first_of_group0.push(order[order.iter().position(|c| *c < 2).unwrap()]);
        }
        assert!(first_of_group0.windows(2).all(|w| w[0] != w[1]), "the first variant alternates: {first_of_group0:?}");
        assert_eq!(round_groups_flat(&groups, &[1], 11, 0).len(), 2, "only the active groups");
    }

    #[test]
    fn a_group_stands_on_its_widest_paired_interval() {
        let fin = |round: u32, median: f64| Finished {
            record: crate::evidence::TrialRecord {
                round,
                median: Some(median),
                process: crate::evidence::ProcessRecord { wall_ms: 100.0, ..Default::default() },
                ..crate::evidence::TrialRecord::from_report(
                    round,
                    round,
                    Status::Ok,
                    None,
                    Default::default(),
                    &crate::evidence::WorkerReport::new(Status::Ok, None),
                )
            },
            report: crate::evidence::WorkerReport::new(Status::Ok, None),
            log_rel: String::new(),
            stderr_tail: String::new(),
        };
        let base = [fin(0, 100.0), fin(1, 120.0), fin(2, 90.0)];
        // The machine's level moved 30% between rounds; the ratio stayed 1.10 +- 0.5%:
        // the paired half-width t(0.975, 2) f(3) s / sqrt(3) is 1.13% (scipy), where
        // either side's own spread is over 10%.
        let cand = [fin(0, 110.0), fin(1, 132.5), fin(2, 98.6)];
        let plan = Plan::new(Design::default()).unwrap();
        let s = group_standing(4, &[&base, &cand], &plan, 1);
        assert_eq!((s.cell, s.trials), (4, 3));
        assert!(s.rel_half_width.unwrap() < 0.012, "paired: {s:?}");
        assert!((s.cost_ms - 250.0).abs() < 1e-9, "one more trial of each: {s:?}");
        // 10% slower, every round: DIFFERENT at the first look, so decided.
        assert_eq!(s.decided, Some(true), "{s:?}");
        let one = group_standing(0, &[&base[..1], &cand[..1]], &plan, 1);
        assert_eq!((one.rel_half_width, one.decided), (None, Some(false)), "one pair: no interval, not decided");
        // A ratio that wanders 1.00..1.04 at 3 pairs is neither yet.
        let wander = [fin(0, 100.0), fin(1, 124.8), fin(2, 90.9)];
        assert_eq!(group_standing(1, &[&base, &wander], &plan, 1).decided, Some(false));
        // Among 1,000 comparisons of the run, that DIFFERENT at the first
        // look would not survive the adjustment across them: more pairs.
        assert_eq!(group_standing(4, &[&base, &cand], &plan, 1000).decided, Some(false));
    }

    #[test]
    fn a_decided_group_stops_and_an_undecided_one_goes_on_however_narrow() {
        let group = |cell, decided, rel| Standing { decided: Some(decided), ..st(cell, 3, rel, 10.0) };
        let (more, stop) = decide(&plan(3, 10, 10_000), &[group(0, true, 0.5), group(1, false, 0.001), st(2, 3, 0.001, 10.0)], 0.0);
        assert_eq!(more, vec![1], "undecided, though within the 2% target");
        assert_eq!(stop, vec![(0, RowStop::Decided), (2, RowStop::CiTarget)]);
        let (more, stop) = decide(&plan(3, 10, 10), &[group(1, false, 0.001)], 5.0);
        assert_eq!((more, stop), (vec![], vec![(1, RowStop::RunBudget)]), "the budget ends an undecided group: UNKNOWN");
        let (_, stop) = decide(&plan(3, 10, 10_000), &[Standing { trials: 10, ..group(1, false, 0.5) }], 0.0);
        assert_eq!(stop, vec![(1, RowStop::MaxTrials)]);
        // Room for two of three undecided groups: the narrowest go on, the
        // widest (30%: the pairs left will not decide it) stops for the budget.
        let groups = [group(3, false, 0.30), group(4, false, 0.02), group(5, false, 0.05)];
        let (more, stop) = decide(&plan(3, 10, 1_000), &groups, 985.0);
        assert_eq!((more, stop), (vec![4], vec![(5, RowStop::RunBudget), (3, RowStop::RunBudget)]));
        let (more, stop) = decide(&plan(3, 10, 1_000), &groups, 975.0);
        assert_eq!((more, stop), (vec![4, 5], vec![(3, RowStop::RunBudget)]));
        // A list holding both keeps one order: lone cells widest first, then groups narrowest first.
        let mixed = [group(6, false, 0.02), st(7, 3, 0.10, 10.0), group(8, false, 0.01), st(9, 3, 0.30, 10.0)];
        assert_eq!(decide(&plan(3, 10, 10_000), &mixed, 0.0).0, vec![9, 7, 8, 6]);
    }

    #[test]
    fn planned_trials_always_run_and_the_maximum_stops() {
        let (more, stop) = decide(&plan(3, 6, 0), &[st(0, 2, 0.5, 1e9), st(1, 6, 0.5, 1.0)], 1e12);
        assert_eq!(more, vec![0], "below the planned trials even an exhausted budget runs them");
        assert_eq!(stop, vec![(1, RowStop::MaxTrials)]);
        let (_, stop) = decide(&plan(4, 4, 0), &[st(2, 4, 0.5, 1.0)], 0.0);
        assert_eq!(stop, vec![(2, RowStop::Fixed)], "--trials N alone is exact");
    }

    #[test]
    fn narrow_rows_stop_and_the_widest_get_the_budget() {
        let rows = [st(0, 3, 0.01, 10.0), st(1, 3, 0.05, 60.0), st(2, 3, 0.20, 60.0), st(3, 3, 0.10, 60.0)];
        // 1,000 ms of budget, 880 used: room for two trials of 60 ms.
        let (more, stop) = decide(&plan(3, 6, 1_000), &rows, 880.0);
        assert_eq!(more, vec![2, 3], "the widest relative to the target first");
        assert_eq!(stop, vec![(0, RowStop::CiTarget), (1, RowStop::RunBudget)]);
        let unknown = Standing { rel_half_width: None, ..st(4, 3, 0.0, 1.0) };
        assert_eq!(decide(&plan(3, 6, 10_000), &[unknown], 0.0).0, vec![4], "an interval that cannot be computed is not narrow");
    }
}
