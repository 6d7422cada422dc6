//! Planning tests on the fake sysfs topologies.

use super::*;
use std::time::Duration;

use crate::model::Profile;
use crate::model::placement::CpuClass;
use crate::model::settings::CompareFlags;
use crate::topology::fixture;
use crate::workloads::contract::ParamSpec;
use crate::workloads::registry;

fn request(selection: &[&str]) -> RunOptions {
    let mut words = vec!["--timeout", "60s"];
    words.extend_from_slice(selection);
    RunOptions::from_words(&words)
}

fn plan(req: &RunOptions, topo: &str) -> Result<Plan, PlanError> {
    plan_labelled(req, "test", topo)
}

fn plan_labelled(req: &RunOptions, label: &str, topo: &str) -> Result<Plan, PlanError> {
    build(req, label, 9, &registry::specs(), &fixture(topo))
}

fn ids(p: &Plan) -> Vec<String> {
    p.cells.iter().map(|c| c.row_id.clone()).collect()
}

#[test]
fn the_default_plan_sweeps_workers_from_the_topology() {
    let all = plan(&request(&[]), "kvm-2c").unwrap();
    assert!(all.cells.iter().all(|c| c.group != "selftest"), "the default selection hides selftests");
    assert_eq!(
        &ids(&all)[..4],
        ["000-cpu.primes-workers=1", "001-cpu.primes-workers=2", "002-cpu.checksum-workers=1", "003-cpu.checksum-workers=2"]
    );
    let p = plan(&request(&["cpu.primes", "cpu.checksum"]), "kvm-2c").unwrap();
    assert_eq!(p.cells.len(), 4);
    assert!(p.cells.iter().all(|c| c.axes == ["workers"] && c.placement.class == CpuClass::Physical && c.placement.cpus.is_none()));
    assert!(p.cells.iter().enumerate().all(|(i, c)| c.index == i && c.seed == 9 && c.label == "test"));
    let p = plan(&request(&["cpu.primes"]), "2s48c96t").unwrap();
    let classes: Vec<(usize, CpuClass)> = p.cells.iter().map(|c| (c.worker_count(), c.placement.class)).collect();
    assert_eq!(
        classes,
        [
            (1, CpuClass::Physical),
            (2, CpuClass::Physical),
            (4, CpuClass::Physical),
            (8, CpuClass::Physical),
            (16, CpuClass::Physical),
            (32, CpuClass::Physical),
            (64, CpuClass::Smt),
            (96, CpuClass::Smt)
        ]
    );
}

#[test]
fn profiles_choose_the_parameter_values() {
    let mut r = request(&["cpu.primes"]);
    r.measurement.profile = Profile::Seed;
    let p = plan(&r, "kvm-2c").unwrap();
    assert_eq!(p.cells[0].int("range").unwrap(), 3_000_000);
    r.measurement.profile = Profile::Quick;
    assert_eq!(plan(&r, "kvm-2c").unwrap().cells[0].int("range").unwrap(), 1_000_000);
    let mut r = request(&["cpu.checksum"]);
    r.measurement.profile = Profile::Seed;
    let p = plan(&r, "kvm-2c").unwrap();
    let c = &p.cells[0];
    assert_eq!((c.int("blocks").unwrap(), c.int("work_rounds").unwrap(), c.str("parent_wait").unwrap()), (262_144, 64, "join"));
    // The seed profile sweeps capOS's default size and its Amdahl row, each
    // at 1 and 2 workers on 2 CPUs; the worker count varies fastest.
    let cells: Vec<(i64, usize)> = p.cells.iter().map(|c| (c.int("blocks").unwrap(), c.worker_count())).collect();
    assert_eq!(cells, [(262_144, 1), (262_144, 2), (1_048_576, 1), (1_048_576, 2)]);
    assert_eq!(c.axes, ["blocks", "workers"]);
    // Quick and full keep one size: blocks is no axis there.
    for (profile, blocks) in [(Profile::Quick, 65_536), (Profile::Full, 1_048_576)] {
        r.measurement.profile = profile;
        let p = plan(&r, "kvm-2c").unwrap();
        assert!(p.cells.iter().all(|c| c.int("blocks").unwrap() == blocks && c.axes == ["workers"]), "{profile:?}");
        assert_eq!(p.cells.len(), 2, "{profile:?}");
    }
}

#[test]
fn workers_flag_oversubscription_and_pinning() {
    let mut r = request(&["cpu.primes"]);
    r.selection.workers = Some("1,4".into());
    r.selection.pin = vec![PinStrategy::Linear];
    let p = plan(&r, "kvm-2c").unwrap();
    assert_eq!(p.cells[1].placement.class, CpuClass::Oversubscribed);
    assert_eq!(p.cells[1].placement.cpus.as_deref(), Some(&[0, 1, 0, 1][..]));
    assert!(p.cells[1].placement.note.as_deref().unwrap().contains("shared"));
    r.selection.workers = None;
    r.selection.oversubscribe = true;
    assert_eq!(plan(&r, "kvm-2c").unwrap().cells.iter().map(|c| c.worker_count()).collect::<Vec<_>>(), [1, 2, 4]);
    r.selection.workers = Some("0".into());
    assert!(matches!(plan(&r, "kvm-2c"), Err(PlanError::BadWorkers { .. })));
}

#[test]
fn params_override_sweep_and_are_checked() {
    let mut r = request(&["cpu.primes", "cpu.checksum"]);
    r.selection.params = vec!["range=1000,2000".into(), "cpu.checksum.blocks=64".into()];
    r.selection.workers = Some("1".into());
    let p = plan(&r, "kvm-2c").unwrap();
    assert_eq!(ids(&p), ["000-cpu.primes-range=1000-workers=1", "001-cpu.primes-range=2000-workers=1", "002-cpu.checksum-workers=1"]);
    assert_eq!(p.cells[0].axes, ["range", "workers"]);
    assert_eq!(p.cells[2].int("blocks").unwrap(), 64);
    // A value given twice is one cell (compare would pair the copies with
    // other rows otherwise).
    r.selection.params = vec!["range=1000,1000,2000,01000".into()];
    assert_eq!(ids(&plan(&r, "kvm-2c").unwrap())[..2], ["000-cpu.primes-range=1000-workers=1", "001-cpu.primes-range=2000-workers=1"]);
    r.selection.params = vec!["range=1000,1000".into()];
    let once = plan(&r, "kvm-2c").unwrap();
    assert_eq!(once.cells.iter().filter(|c| c.workload == "cpu.primes").count(), 1);
    assert!(!once.cells[0].axes.contains(&"range".to_string()), "one value left: not an axis");

    for (bad, expect) in [
        ("range", "expected NAME=VALUE"),
        ("rang=5", "no selected workload has a parameter 'rang'"),
        ("range=-5", "outside"),
        ("parent_wait=sleep", "not one of join, spin"),
        ("cpu.primes.blocks=4", "no selected workload has a parameter 'blocks'"),
    ] {
        r.selection.params = vec![bad.into()];
        let e = plan(&r, "kvm-2c").unwrap_err().to_string();
        assert!(e.starts_with(&format!("--param {bad}")) && e.contains(expect), "{bad}: {e}");
    }
}

#[test]
fn measurement_flags_reach_every_cell() {
    let mut r = request(&["cpu.primes"]);
    r.measurement.runs = Some(7);
    r.measurement.time_budget = Some(Duration::from_millis(2500));
    r.measurement.warmup = Some(0);
    r.measurement.settle = Some(Duration::from_millis(5));
    r.measurement.ci_target = Some(0.5);
    for c in plan(&r, "kvm-2c").unwrap().cells {
        // The cell's 2.5 s budget is shared by its 3 trials.
        assert_eq!(
            (c.measure.fixed_runs, c.measure.budget_ms, c.measure.warmup, c.measure.settle_ms, c.measure.ci_target_pct),
            (Some(7), 833, 0, 5, 0.5)
        );
    }
}

#[test]
fn labels_and_selections_are_checked() {
    let r = request(&[]);
    for bad in ["", "a/b", "x|y"] {
        assert!(matches!(plan_labelled(&r, bad, "kvm-2c"), Err(PlanError::BadLabel { .. })), "{bad:?}");
    }
    assert!(matches!(plan(&request(&["nope"]), "kvm-2c"), Err(PlanError::UnknownWorkload { .. })));
    let p = plan(&request(&["selftest.wrong"]), "kvm-2c").unwrap();
    assert_eq!(ids(&p), ["000-selftest.wrong"]);
    assert!(p.cells[0].axes.is_empty() && p.cells[0].workers.is_none());
}

#[test]
fn injected_faults_reach_only_the_workloads_that_have_them() {
    let mut r = request(&["cpu.primes", "cpu.checksum", "selftest.wrong"]);
    r.selection.inject_fault = Some("no-such-fault".into());
    let e = plan(&r, "kvm-2c").unwrap_err().to_string();
    assert!(e.contains("--inject-fault no-such-fault"), "{e}");
    r.selection.inject_fault = None;
    assert!(plan(&r, "kvm-2c").unwrap().cells.iter().all(|c| c.fault.is_none() && c.scratch_dir.is_none()));
}

#[test]
fn several_pin_strategies_make_an_axis_of_worker_placing_workloads() {
    let mut r = request(&["cpu.primes", "selftest.wrong"]);
    r.selection.pin = vec![PinStrategy::Linear, PinStrategy::AvoidSmt];
    r.selection.workers = Some("1,4".into());
    let p = plan(&r, "4c8t").unwrap();
    assert_eq!(
        ids(&p),
        [
            "000-cpu.primes-pin=linear-workers=1",
            "001-cpu.primes-pin=linear-workers=4",
            "002-cpu.primes-pin=avoid-smt-workers=1",
            "003-cpu.primes-pin=avoid-smt-workers=4",
            "004-selftest.wrong"
        ]
    );
    assert_eq!(p.cells[1].placement.cpus.as_deref(), Some(&[0, 1, 2, 3][..]));
    assert_eq!(p.cells[3].placement.cpus.as_deref(), Some(&[0, 2, 4, 6][..]));
    assert_eq!(p.cells[3].axes, ["pin", "workers"]);
    assert_eq!(p.cells[4].placement.pin, PinStrategy::Linear, "a workload without workers takes the first strategy");
}

#[test]
fn compare_presets_set_the_worker_and_pin_axes() {
    let mut r = request(&["cpu.primes"]);
    r.selection.compare.compare_strategies = true;
    let p = plan(&r, "2s48c96t").unwrap();
    assert_eq!(p.cells.len(), PinStrategy::ALL.len());
    assert!(p.cells.iter().all(|c| c.workers == Some(48)), "the allowed physical cores");
    r.selection.compare = CompareFlags { compare_cores: true, ..CompareFlags::default() };
    let p = plan(&r, "4c8t").unwrap();
    assert_eq!(p.cells.iter().map(|c| c.worker_count()).collect::<Vec<_>>(), [1, 2, 4, 8]);
    assert!(p.cells.iter().all(|c| c.placement.pin == PinStrategy::Linear));
}

#[test]
fn the_runtime_flag_is_a_parameter_override() {
    let mut r = request(&["cpu.primes"]);
    r.selection.runtime = Some("rayon".into());
    let e = plan(&r, "kvm-2c").unwrap_err().to_string();
    assert!(e.contains("runtime=rayon (--runtime)") && e.contains("no selected workload has a parameter 'runtime'"), "{e}");
}

#[test]
fn the_allocator_flag_sets_the_allocator_axis() {
    let mut r = request(&["alloc.random-mixed"]);
    let p = plan(&r, "kvm-2c").unwrap();
    let allocs: Vec<&str> = p.cells.iter().map(|c| c.str("allocator").unwrap()).collect();
    assert_eq!(allocs, ["system", "mimalloc", "jemalloc", "system", "mimalloc", "jemalloc"], "every built-in allocator by default");
    assert!(p.cells.iter().all(|c| c.axes == ["iterations", "allocator"]));
    r.selection.allocator = Some("system,preload:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2".into());
    let p = plan(&r, "kvm-2c").unwrap();
    assert_eq!(
        ids(&p)[..2],
        [
            "000-alloc.random-mixed-iterations=100000-allocator=system",
            "001-alloc.random-mixed-iterations=100000-allocator=preload__usr_lib_x86_64-linux-gnu_libjemalloc.so.2"
        ]
    );
    assert_eq!(p.cells[1].str("allocator").unwrap(), "preload:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    r.selection.allocator = Some("tcmalloc".into());
    let e = plan(&r, "kvm-2c").unwrap_err().to_string();
    assert!(e.contains("allocator=tcmalloc (--allocator)") && e.contains("system, mimalloc, jemalloc, preload:<...>"), "{e}");
    let mut r = request(&["cpu.primes"]);
    r.selection.allocator = Some("system".into());
    let e = plan(&r, "kvm-2c").unwrap_err().to_string();
    assert!(e.contains("no selected workload has a parameter 'allocator'"), "{e}");
}

#[test]
fn variants_plan_every_cell_under_each_variant_base_first_with_its_values() {
    let mut req = request(&["cpu.primes"]);
    req.selection.variants = vec!["a=param=range=1000000".into(), "b=param=range=1050000,env=X=1".into()];
    req.selection.base = Some("b".into());
    let p = plan(&req, "kvm-2c").unwrap();
    assert_eq!(
        ids(&p),
        [
            "000-cpu.primes-variant=b-workers=1",
            "001-cpu.primes-variant=a-workers=1",
            "002-cpu.primes-variant=b-workers=2",
            "003-cpu.primes-variant=a-workers=2"
        ]
    );
    assert_eq!(p.groups, [vec![0, 1], vec![2, 3]], "a cell's variants form a group, the base first");
    let ranges: Vec<i64> = p.cells.iter().map(|c| c.int("range").unwrap()).collect();
    assert_eq!(ranges, [1_050_000, 1_000_000, 1_050_000, 1_000_000]);
    assert!(p.cells.iter().all(|c| c.axes == ["variant", "workers"] && c.variant.is_some()));
    assert!(p.cells[0].variant.as_ref().unwrap().base && !p.cells[1].variant.as_ref().unwrap().base);
    assert_eq!(p.trials.min, 3, "paired rounds: the profile's paired trials, the decided verdicts' first look");
    assert_eq!(p.trials.run_budget_ms, 2 * 150_000, "the run budget for each variant");
    assert_eq!(p.trials.max, 10, "adjacent trials: the profile's most");
    // In lockstep a comparison may take up to 30 pairs to be decided, unless told.
    req.selection.lockstep = true;
    assert_eq!(plan(&req, "kvm-2c").unwrap().trials.max, LOCKSTEP_MAX_PAIRS);
    req.measurement.max_trials = Some(12);
    assert_eq!(plan(&req, "kvm-2c").unwrap().trials.max, 12);
    // Without variants: one cell per group, the plain trials.
    let plain = plan(&request(&["cpu.primes"]), "kvm-2c").unwrap();
    assert_eq!((plain.groups, plain.trials.min), (vec![vec![0], vec![1]], 3));
}

#[test]
fn a_parameter_one_variant_sweeps_and_another_fixes_is_refused() {
    let mut req = request(&["alloc.random-mixed"]);
    req.selection.variants = vec!["je=allocator=jemalloc".into(), "all=".into()];
    let e = plan(&req, "kvm-2c").unwrap_err().to_string();
    assert!(e.starts_with("--variant all: its cells do not line up with those of the base 'je'"), "{e}");
    req.selection.variants = vec!["sys=allocator=system".into(), "je=allocator=jemalloc".into()];
    let p = plan(&req, "kvm-2c").unwrap();
    assert!(p.cells.iter().all(|c| !c.axes.contains(&"allocator".to_string())), "one allocator per variant");
    req.selection.variants = vec!["sys=allocator=nosuch".into(), "je=allocator=jemalloc".into()];
    let e = plan(&req, "kvm-2c").unwrap_err().to_string();
    assert!(e.starts_with("--variant sys=allocator=nosuch: param=allocator=nosuch: "), "{e}");
}

/// A made-up workload: the plan's rules tested on specs that do not change
/// when a real workload's defaults do.
fn fake(id: &'static str, params: Vec<ParamSpec>, faults: &'static [&'static str]) -> WorkloadSpec {
    use crate::model::{TableShape, Unit};
    WorkloadSpec {
        id,
        group: id.split('.').next().unwrap(),
        summary: "made up",
        measures: "nothing",
        unit: Unit::NsPerOp,
        timed_region: "none",
        total_window: None,
        verifier: "none",
        batched: false,
        params,
        faults,
        shape: TableShape::Primitive,
    }
}

fn fake_specs() -> Vec<WorkloadSpec> {
    vec![
        fake(
            "g.a",
            vec![
                ParamSpec::int("size", "", 1, 100, [2, 50, 7]),
                ParamSpec::choice("mode", "", &["x", "y"], ["x", "x", "y"]).with_values(Profile::Full, vec!["x".into(), "y".into()]),
            ],
            &["break"],
        ),
        fake("g.b", vec![ParamSpec::int("size", "", 1, 9, [3, 3, 3]), ParamSpec::workers("threads")], &["break"]),
        fake("h.c", vec![], &[]),
    ]
}

#[test]
fn fake_specs_plan_in_registry_order_with_the_profile_s_values_and_axes() {
    let topo = fixture("kvm-2c");
    let mut r = request(&["g", "h.c"]);
    let p = build(&r, "t", 1, &fake_specs(), &topo).unwrap();
    assert_eq!(ids(&p), ["000-g.a", "001-g.b-workers=1", "002-g.b-workers=2", "003-h.c"]);
    assert_eq!(p.cells[0].int("size").unwrap(), 2);
    assert!(p.cells[0].axes.is_empty() && p.cells[3].axes.is_empty());
    assert_eq!(p.cells[1].axes, ["workers"]);
    // A profile with two values of a parameter makes it an axis; the last
    // parameter varies fastest.
    r.measurement.profile = Profile::Full;
    let p = build(&r, "t", 1, &fake_specs(), &topo).unwrap();
    assert_eq!(&ids(&p)[..2], ["000-g.a-mode=x", "001-g.a-mode=y"]);
    assert_eq!(p.cells[0].int("size").unwrap(), 50);
    // Overrides: a bare name reaches every selected workload that has it,
    // a qualified one only its workload; bounds are each spec's own.
    r.measurement.profile = Profile::Quick;
    r.selection.params = vec!["size=4,5".into(), "g.b.size=9".into()];
    let p = build(&r, "t", 1, &fake_specs(), &topo).unwrap();
    assert_eq!(&ids(&p)[..3], ["000-g.a-size=4", "001-g.a-size=5", "002-g.b-workers=1"]);
    assert_eq!(p.cells[2].int("size").unwrap(), 9);
    r.selection.params = vec!["size=50".into()];
    let e = build(&r, "t", 1, &fake_specs(), &topo).unwrap_err().to_string();
    assert!(e.contains("outside 1..=9"), "{e}");
}

#[test]
fn fake_specs_take_faults_and_refuse_what_none_of_them_has() {
    let topo = fixture("kvm-2c");
    let mut r = request(&["g.a", "h.c"]);
    r.selection.inject_fault = Some("break".into());
    let p = build(&r, "t", 1, &fake_specs(), &topo).unwrap();
    // The fault reaches the workload that has it, not the one without.
    let faults: Vec<(&str, Option<&str>)> = p.cells.iter().map(|c| (c.workload.as_str(), c.fault.as_deref())).collect();
    assert_eq!(faults, [("g.a", Some("break")), ("h.c", None)]);
    r.selection.inject_fault = Some("melt".into());
    assert!(matches!(build(&r, "t", 1, &fake_specs(), &topo), Err(PlanError::BadFault { .. })));
    let r = request(&["nothing.here"]);
    assert!(matches!(build(&r, "t", 1, &fake_specs(), &topo), Err(PlanError::UnknownWorkload { .. })));
}
