use super::*;
use crate::evidence::fake;
use crate::model::{Reading, Status, Unit};
use crate::stats::DEFAULT_NOISE;
use crate::text::document::Block;

/// A run on `host` holding `rows`.
fn host_run(host: &str, label: &str, rows: Vec<Row>) -> StoredRun {
    let mut s = fake::run(Vec::new(), rows);
    s.run.envelope.hostname = Reading::Present(host.into());
    s.run.label = label.into();
    s.run.id = format!("run-{host}-{label}");
    s.run.plan = s.rows.iter().map(|r| r.cell.clone()).collect();
    s
}

/// A row of `workload` with these trial medians.
fn row(workload: &str, medians: &[f64], unit: Unit) -> Row {
    fake::row(0, workload, &[], None, medians, unit)
}

fn fleet_of(runs: &[StoredRun]) -> Fleet {
    let named: Vec<(&str, &StoredRun)> = runs.iter().map(|r| ("dir", r)).collect();
    build(&named, DEFAULT_NOISE)
}

fn entry<'a>(f: &'a Fleet, host: &str, workload: &str) -> &'a Entry {
    f.entries.iter().find(|e| f.hosts[e.host].name == host && e.workload == workload).expect("an entry")
}

#[test]
fn an_outlier_host_is_named_first_with_its_ratio_and_interval() {
    let runs = vec![
        host_run("node1", "a", vec![row("os.syscall", &[100.0, 101.0, 99.0], Unit::NsPerOp)]),
        host_run("node2", "a", vec![row("os.syscall", &[100.0, 100.5, 99.5], Unit::NsPerOp)]),
        host_run("node17", "a", vec![row("os.syscall", &[130.0, 131.0, 132.0], Unit::NsPerOp)]),
        host_run("node4", "a", vec![row("os.syscall", &[101.0, 100.0, 102.0], Unit::NsPerOp)]),
    ];
    let f = fleet_of(&runs);
    let first = &f.entries[0];
    assert_eq!(f.hosts[first.host].name, "node17");
    assert_eq!(first.standing, Standing::Worse);
    // The fleet median is the median of the hosts' medians (100, 100, 131, 101).
    assert_eq!(first.fleet_median, Some(100.5));
    let r = first.ratio.unwrap();
    assert!((r - 131.0 / 100.5).abs() < 1e-12, "{r}");
    let [lo, hi] = first.ratio_ci95.unwrap();
    assert!(lo < r && r < hi && lo > 1.02, "{lo}..{hi}");
    let want = crate::stats::trial_interval(&[130.0, 131.0, 132.0], crate::stats::LEVEL).unwrap();
    assert!((lo - want.lo / 100.5).abs() < 1e-12 && (hi - want.hi / 100.5).abs() < 1e-12);
    let sentences: Vec<String> = f.outliers().map(|e| render::sentence(&f, e)).collect();
    assert_eq!(sentences.len(), 1, "{sentences:?}");
    assert!(sentences[0].starts_with("node17: os.syscall 1.303x the fleet median ("), "{}", sentences[0]);
    assert!(sentences[0].ends_with("): worse, beyond the 2.00% noise band (lower-is-better)"), "{}", sentences[0]);
}

#[test]
fn an_in_band_host_gets_no_sentence() {
    let runs = vec![
        host_run("a", "x", vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns)]),
        host_run("b", "x", vec![row("cpu.primes", &[100.5, 100.0, 101.0], Unit::Ns)]),
        host_run("c", "x", vec![row("cpu.primes", &[99.0, 100.0, 101.0], Unit::Ns)]),
    ];
    let f = fleet_of(&runs);
    assert_eq!(f.outliers().count(), 0);
    assert!(f.entries.iter().all(|e| e.standing == Standing::InBand), "{:?}", f.entries);
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert!(text.contains("No host lies beyond the 2.00% noise band"), "{text}");
}

#[test]
fn for_a_throughput_a_lower_ratio_is_worse() {
    let runs = vec![
        host_run("a", "x", vec![row("io.read", &[1000.0, 1001.0, 999.0], Unit::MbPerSec)]),
        host_run("b", "x", vec![row("io.read", &[1000.0, 1002.0, 998.0], Unit::MbPerSec)]),
        host_run("slow", "x", vec![row("io.read", &[700.0, 701.0, 699.0], Unit::MbPerSec)]),
        host_run("fast", "x", vec![row("io.read", &[1300.0, 1301.0, 1299.0], Unit::MbPerSec)]),
    ];
    let f = fleet_of(&runs);
    assert_eq!(entry(&f, "slow", "io.read").standing, Standing::Worse);
    assert_eq!(entry(&f, "fast", "io.read").standing, Standing::Better);
    let s = render::sentence(&f, entry(&f, "slow", "io.read"));
    assert!(s.contains(": worse, beyond the 2.00% noise band (higher-is-better)"), "{s}");
    // Both outliers first; the farther one (0.7 against 1.3) leads.
    assert_eq!(f.hosts[f.entries[0].host].name, "slow");
    assert_eq!(f.hosts[f.entries[1].host].name, "fast");
}

#[test]
fn hosts_of_different_machines_are_grouped_and_judged_within_their_group() {
    let mut other = host_run("big1", "x", vec![row("cpu.primes", &[50.0, 50.5, 49.5], Unit::Ns)]);
    other.run.envelope.cpu.model_name = Reading::Present("Other CPU 9000".into());
    let mut other2 = host_run("big2", "x", vec![row("cpu.primes", &[50.0, 50.2, 49.8], Unit::Ns)]);
    other2.run.envelope.cpu.model_name = Reading::Present("Other CPU 9000".into());
    let runs = vec![
        host_run("small1", "x", vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns)]),
        other,
        host_run("small2", "x", vec![row("cpu.primes", &[100.0, 100.5, 99.5], Unit::Ns)]),
        other2,
    ];
    let f = fleet_of(&runs);
    assert_eq!(f.groups.len(), 2);
    assert_eq!(f.groups[0].hosts, [0, 2]);
    assert_eq!(f.groups[1].hosts, [1, 3]);
    assert!(f.groups[1].title.starts_with("Other CPU 9000"), "{}", f.groups[1].title);
    assert!(f.groups[1].differs.iter().any(|d| d.starts_with("cpu.model_name")), "{:?}", f.groups[1].differs);
    // Each against its own kind's median: twice as fast is no outlier here.
    assert_eq!(f.outliers().count(), 0, "{:?}", f.entries);
    assert_eq!(entry(&f, "big1", "cpu.primes").fleet_median, Some(50.0));
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert!(text.contains("Machine 2: Other CPU 9000"), "{text}");
    assert!(text.contains("2 kinds of machine"), "{text}");
}

#[test]
fn a_failed_row_is_listed_with_its_status_and_a_missing_row_too() {
    let mut failed = row("cpu.primes", &[100.0, 101.0], Unit::Ns);
    failed.status = Status::Failed;
    failed.reason = Some("exit code 3".into());
    let runs = vec![
        host_run("a", "x", vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns), row("os.syscall", &[5.0, 5.1], Unit::NsPerOp)]),
        host_run("b", "x", vec![failed, row("os.syscall", &[5.0, 5.05], Unit::NsPerOp)]),
        host_run("c", "x", vec![row("cpu.primes", &[102.0, 103.0, 101.0], Unit::Ns)]),
    ];
    let f = fleet_of(&runs);
    assert_eq!(f.entries.len(), 6, "every host has every row");
    let b = entry(&f, "b", "cpu.primes");
    assert_eq!(b.status, "failed");
    assert_eq!(b.standing, Standing::NotOk("failed: exit code 3".into()));
    // The failed host's median is no part of the fleet median.
    assert_eq!(b.fleet_median, Some(101.0));
    assert_eq!(entry(&f, "c", "os.syscall").standing, Standing::Missing("not in this host's plan".into()));
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert!(text.contains("Not ok:") && text.contains("b: cpu.primes: failed: exit code 3"), "{text}");
    assert!(text.contains("c: os.syscall: missing"), "{text}");
}

#[test]
fn a_skipped_row_is_listed_apart_and_never_under_not_ok() {
    let mut skipped = row("hw.smt", &[], Unit::Ns);
    skipped.status = Status::Skipped;
    skipped.reason = Some("no SMT siblings".into());
    let runs = vec![
        host_run("a", "x", vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns), skipped.clone()]),
        host_run("b", "x", vec![row("cpu.primes", &[102.0, 103.0, 101.0], Unit::Ns), skipped]),
    ];
    let f = fleet_of(&runs);
    let e = entry(&f, "a", "hw.smt");
    assert_eq!((&e.standing, e.standing_text().as_str()), (&Standing::Skipped("no SMT siblings".into()), "skipped"));
    assert_eq!((f.skipped().count(), f.not_ok().count()), (2, 0));
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert!(!text.contains("Not ok") && !text.contains("not ok or missing"), "skips alone: no Not ok heading\n{text}");
    assert!(text.contains("; 2 skipped (not failures)"), "{text}");
    assert!(text.contains("Skipped (not failures):") && text.contains("hw.smt: no SMT siblings (every host)"), "{text}");
    // On the page the heat map comes before the lists, after the counts.
    let page = page(&f, &[None, None]);
    let chart = page.blocks.iter().position(|b| matches!(b, Block::Chart(_))).expect("a chart");
    let list = page.blocks.iter().position(|b| matches!(b, Block::Compact(_))).expect("the skips");
    assert!(chart < list, "{chart} {list}");
}

#[test]
fn hosts_that_share_a_hostname_are_named_apart_and_the_fleet_says_so() {
    let runs = vec![
        host_run("box", "h1", vec![row("cpu.primes", &[100.0, 101.0], Unit::Ns)]),
        host_run("box", "h2", vec![row("cpu.primes", &[100.0, 101.0], Unit::Ns)]),
        host_run("box", "h2", vec![row("cpu.primes", &[100.0, 101.0], Unit::Ns)]),
        host_run("other", "h1", vec![row("cpu.primes", &[100.0, 101.0], Unit::Ns)]),
    ];
    let f = fleet_of(&runs);
    let names: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
    // Two runs share a label too: the run ids set them apart... which the
    // fake makes equal, so the second is numbered.
    assert_eq!(names, ["box/run-box-h1", "box/run-box-h2", "box/run-box-h2#2", "other"]);
    assert_eq!(f.naming.len(), 1);
    assert!(f.naming[0].contains("share the hostname box"), "{:?}", f.naming);
}

#[test]
fn one_trial_gives_no_interval_and_no_verdict() {
    let runs = vec![
        host_run("a", "x", vec![row("cpu.primes", &[100.0], Unit::Ns)]),
        host_run("b", "x", vec![row("cpu.primes", &[200.0], Unit::Ns)]),
    ];
    let f = fleet_of(&runs);
    assert!(f.entries.iter().all(|e| matches!(e.standing, Standing::NoInterval(_))), "{:?}", f.entries);
    let csv = export(&f, crate::model::ExportFormat::Csv).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.lines().nth(1).unwrap().starts_with("a,a,dir,1,cpu.primes,-,ok,ns,"), "{csv}");
}

#[test]
fn a_host_measured_with_other_parameters_is_listed_apart_and_out_of_the_fleet_median() {
    let with = |range: i64, medians: &[f64]| {
        let mut r = row("cpu.primes", medians, Unit::Ns);
        r.cell.params.insert("range".into(), serde_json::json!(range));
        r
    };
    let runs = vec![
        host_run("a", "x", vec![with(1000, &[100.0, 101.0, 99.0])]),
        host_run("b", "x", vec![with(1000, &[102.0, 103.0, 101.0])]),
        host_run("big", "x", vec![with(5000, &[500.0, 501.0, 499.0])]),
    ];
    let f = fleet_of(&runs);
    assert_eq!(entry(&f, "big", "cpu.primes").standing, Standing::Differs("range 1000 vs 5000".into()));
    assert_eq!(entry(&f, "a", "cpu.primes").fleet_median, Some(101.0));
    assert_eq!(f.outliers().count(), 0, "{:?}", f.entries);
}

#[test]
fn the_first_screen_names_at_most_twenty_outliers() {
    let mut runs: Vec<StoredRun> =
        (0..30).map(|i| host_run(&format!("ok{i}"), "x", vec![row("cpu.primes", &[100.0, 100.5, 99.5], Unit::Ns)])).collect();
    runs.extend((0..25).map(|i| {
        host_run(&format!("slow{i}"), "x", vec![row("cpu.primes", &[200.0 + i as f64, 201.0 + i as f64, 199.0 + i as f64], Unit::Ns)])
    }));
    let f = fleet_of(&runs);
    assert_eq!(f.outliers().count(), 25);
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert_eq!(text.matches("the fleet median (").count(), render::SENTENCES, "{text}");
    assert!(text.contains("... and 5 more outliers (see the tables)"), "{text}");
    // The farthest first: slow24.
    assert!(text.find("slow24: cpu.primes").unwrap() < text.find("slow23: cpu.primes").unwrap(), "{text}");
}

/// Issue 32, item 3: 16 hosts at once, every one busy; no row of them is
/// called plainly "in band" or an outlier, and each host's run says busy.
#[test]
fn busy_hosts_are_not_called_in_band_plainly() {
    let mut runs: Vec<StoredRun> = (0..4)
        .map(|i| {
            let mut s = host_run(
                &format!("h{i}"),
                "x",
                vec![crate::evidence::fake::disturbed(row("cpu.primes", &[800.0 + i as f64, 801.0, 802.0], Unit::Ns), 0.98)],
            );
            s.run.interference = Some(crate::evidence::fake::busy(0.98));
            s
        })
        .collect();
    assert!(runs[0].rows[0].disturbed_trials() > 0, "the fake row has trials to disturb");
    runs.push(host_run("quiet", "x", vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns)]));
    let f = fleet_of(&runs);
    let h0 = entry(&f, "h0", "cpu.primes");
    assert_eq!(h0.standing, Standing::InBand);
    assert_eq!(h0.standing_text(), "in band, from disturbed trials");
    assert!(h0.disturbed.as_deref().unwrap().contains("others took 98% of their CPUs"), "{:?}", h0.disturbed);
    assert!(f.hosts[h0.host].state.as_deref().unwrap().contains("busy: others took 98% of its CPUs"), "{:?}", f.hosts[h0.host].state);
    assert_eq!(f.hosts.iter().find(|h| h.name == "quiet").unwrap().state, None);
    let quiet = entry(&f, "quiet", "cpu.primes");
    assert_eq!(quiet.standing, Standing::Better);
    assert_eq!(quiet.standing_text(), "better");
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert!(!text.lines().any(|l| l.contains("h0") && l.trim_end().ends_with("in band")), "{text}");
    assert!(text.contains("4 from disturbed trials"), "{text}");
    assert!(text.contains("4 of 5 hosts did not run whole on a quiet machine"), "{text}");
    let csv = export(&f, crate::model::ExportFormat::Csv).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",disturbed,cut,run_state,submission"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&export(&f, crate::model::ExportFormat::Json).unwrap()).unwrap();
    let h0 = json.as_array().unwrap().iter().find(|e| e["host"] == "h0").unwrap();
    assert_eq!(h0["standing_text"], "in band, from disturbed trials");
}

/// Issue 32, item 8: a host whose connection dropped is missing rows for
/// that reason, its table rows print the fleet median with its unit and
/// sit with their workload's other hosts; a run a time limit stopped is
/// said to be cut.
#[test]
fn a_dropped_connection_and_a_time_limit_are_said_and_missing_rows_keep_their_unit() {
    let rows = |host: &str| {
        let mut s = host_run(
            host,
            "x",
            vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns), {
                let mut r = row("os.syscall", &[5.0, 5.1, 5.05], Unit::NsPerOp);
                r.cell.index = 1;
                r.cell.row_id = "001-os.syscall".into();
                r
            }],
        );
        s.run.plan = s.rows.iter().map(|r| r.cell.clone()).collect();
        s
    };
    let mut dropped = rows("c");
    dropped.rows.truncate(1);
    dropped.run.complete = false;
    dropped.run.not_run = vec!["001-os.syscall".into()];
    dropped.run.launcher = Some(fake::launcher("c", None));
    let mut stopped = rows("d");
    stopped.rows.truncate(1);
    stopped.run.complete = false;
    stopped.run.interrupted = true;
    stopped.run.not_run = vec!["001-os.syscall".into()];
    let f = fleet_of(&[rows("a"), rows("b"), dropped, stopped]);
    let c = entry(&f, "c", "os.syscall");
    assert_eq!(c.standing, Standing::Missing("the connection dropped before this row arrived".into()));
    assert!(f.hosts[c.host].state.as_deref().unwrap().starts_with("cut: the connection dropped: 1 of 2 cells arrived"));
    let d = entry(&f, "d", "os.syscall");
    assert_eq!(d.standing, Standing::Missing("the run was stopped (Ctrl-C, or a time limit) before this row".into()));
    assert!(f.hosts[d.host].state.as_deref().unwrap().starts_with("cut: a signal"), "{:?}", f.hosts[d.host].state);
    let text = crate::text::document::terminal::render(&document(&f).blocks);
    assert!(!text.contains("not in this host's run"), "{text}");
    // The missing rows print the fleet median in its unit, and each
    // workload's hosts are together in the table.
    let syscall: Vec<usize> = text.lines().enumerate().filter(|(_, l)| l.contains("| os.syscall")).map(|(i, _)| i).collect();
    assert_eq!(syscall.len(), 4, "{text}");
    assert_eq!(syscall[3] - syscall[0], 3, "os.syscall's hosts sit together: {text}");
    for i in &syscall {
        let line = text.lines().nth(*i).unwrap();
        assert_eq!(line.matches(" ns").count(), 2 - usize::from(line.contains("missing")), "median and fleet median in ns: {line}");
    }
}

/// Issue 32, item 7: a fleet says which submission its hosts' runs belong
/// to (a `--hosts` invocation's or a Slurm one's), and when they mix.
#[test]
fn the_fleet_names_the_submission_its_hosts_share_and_says_when_they_mix() {
    let text = |runs: &[StoredRun]| crate::text::document::terminal::render(&render::document(&fleet_of(runs)).blocks);
    let of = |host: &str, submission: Option<&str>| {
        let mut r = host_run(host, "x", vec![row("cpu.primes", &[100.0, 101.0, 99.0], Unit::Ns)]);
        r.run.envelope.slurm = None;
        r.run.launcher = Some(fake::launcher(host, submission));
        r
    };
    let one = "hosts 20260101T000000Z-k3x9qa";
    let same = [of("a", Some(one)), of("b", Some(one)), of("c", Some(one))];
    let f = fleet_of(&same);
    assert!(f.hosts.iter().all(|h| h.submission.as_deref() == Some(one)));
    let t = text(&same);
    assert!(t.contains(&format!("3 hosts of submission {one}.")), "{t}");
    assert!(!t.contains("mix"), "{t}");
    let json: serde_json::Value = serde_json::from_str(&render::export(&f, crate::model::ExportFormat::Json).unwrap()).unwrap();
    assert_eq!(json[0]["submission"], one);

    // Another invocation's host, a Slurm node and a run of none.
    let mut slurm = of("d", None);
    slurm.run.launcher = None;
    slurm.run.envelope.slurm =
        crate::envelope::SlurmFacts::from_vars(|k| (k == "SLURM_ARRAY_JOB_ID" || k == "SLURM_JOB_ID").then(|| "7".into()));
    let mixed = [of("a", Some(one)), of("b", Some("hosts 20260101T000001Z-zzzzzz")), slurm, of("e", None), of("f", Some(one))];
    let t = text(&mixed);
    assert!(t.contains("warning: the runs mix 3 submissions and runs of none: they were not all made together"), "{t}");
    assert!(t.contains(&format!("2 hosts of submission {one}: a, f")), "{t}");
    assert!(t.contains("1 host of submission hosts 20260101T000001Z-zzzzzz: b"), "{t}");
    assert!(t.contains("1 host of submission slurm array 7: d"), "{t}");
    assert!(t.contains("1 host of no submission: e"), "{t}");
    let t = text(&[of("a", Some(one)), of("b", None)]);
    assert!(t.contains("the runs mix one submission with runs of none"), "{t}");
    // Runs of no submission: nothing said.
    let t = text(&[of("a", None), of("b", None)]);
    assert!(!t.contains("submission"), "{t}");
}
