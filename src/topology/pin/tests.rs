//! Every strategy on every fake topology (2 cores; 4 cores / 8 threads with
//! adjacent siblings; 2 sockets x 24 cores x 2 threads with six L3 domains of
//! 8 cores, siblings N and N+48), for 1, 4, 16, 32, 64 and 96 workers.

use std::collections::BTreeSet;

use super::*;
use crate::topology::fixture;

const COUNTS: [usize; 6] = [1, 4, 16, 32, 64, 96];
const TREES: [&str; 3] = ["kvm-2c", "4c8t", "2s48c96t"];

fn cpus(s: PinStrategy, t: &Topology, k: usize) -> Vec<usize> {
    assign(s, t, k).cpus.unwrap()
}

/// (socket, L3 domain, core) of a CPU.
fn place(t: &Topology, cpu: usize) -> (usize, Option<usize>, Vec<usize>) {
    let c = t.cpu(cpu).unwrap();
    (c.package, c.l3, c.siblings.clone())
}

#[test]
fn none_never_pins() {
    for name in TREES {
        for k in COUNTS {
            assert_eq!(assign(PinStrategy::None, &fixture(name), k), Assignment { cpus: None, note: None });
        }
    }
}

#[test]
fn every_strategy_uses_every_cpu_once_before_any_twice() {
    for name in TREES {
        let t = fixture(name);
        for s in PinStrategy::ALL.into_iter().filter(|s| *s != PinStrategy::None) {
            let (o, _) = order(s, &t);
            assert_eq!(o.iter().copied().collect::<BTreeSet<_>>(), t.allowed.iter().copied().collect(), "{name} {s:?}: not a permutation");
            assert_eq!(o.len(), t.allowed.len(), "{name} {s:?}");
            for k in COUNTS {
                let c = cpus(s, &t, k);
                assert_eq!(c.len(), k, "{name} {s:?} {k}");
                let distinct: BTreeSet<_> = c.iter().collect();
                assert_eq!(distinct.len(), k.min(t.allowed.len()), "{name} {s:?} {k}: a CPU was shared before all were used");
                let shared = assign(s, &t, k).note.is_some_and(|n| n.contains("shared"));
                assert_eq!(shared, k > t.allowed.len(), "{name} {s:?} {k}");
            }
        }
    }
}

#[test]
fn ninety_six_workers_on_ninety_six_cpus_use_each_cpu_once() {
    let big = fixture("2s48c96t");
    for s in PinStrategy::ALL.into_iter().filter(|s| *s != PinStrategy::None) {
        let c = cpus(s, &big, 96);
        assert_eq!(c.iter().collect::<BTreeSet<_>>().len(), 96, "{s:?}");
        assert!(assign(s, &big, 96).note.is_none(), "{s:?}: {:?}", assign(s, &big, 96).note);
    }
}

#[test]
fn linear_follows_cpu_numbers() {
    assert_eq!(cpus(PinStrategy::Linear, &fixture("4c8t"), 4), [0, 1, 2, 3]);
    assert_eq!(cpus(PinStrategy::Linear, &fixture("kvm-2c"), 4), [0, 1, 0, 1]);
}

#[test]
fn avoid_smt_uses_every_physical_core_before_any_sibling() {
    assert_eq!(cpus(PinStrategy::AvoidSmt, &fixture("4c8t"), 8), [0, 2, 4, 6, 1, 3, 5, 7]);
    let big = fixture("2s48c96t");
    assert_eq!(cpus(PinStrategy::AvoidSmt, &big, 48), (0..48).collect::<Vec<_>>());
    for k in [4, 16, 32] {
        let cores: BTreeSet<_> = cpus(PinStrategy::AvoidSmt, &big, k).into_iter().map(|x| place(&big, x).2).collect();
        assert_eq!(cores.len(), k, "{k} workers must sit on {k} distinct cores");
    }
}

#[test]
fn compact_fills_siblings_first() {
    assert_eq!(cpus(PinStrategy::Compact, &fixture("4c8t"), 4), [0, 1, 2, 3]);
    let big = fixture("2s48c96t");
    assert_eq!(cpus(PinStrategy::Compact, &big, 4), [0, 48, 1, 49]);
    let cores: BTreeSet<_> = cpus(PinStrategy::Compact, &big, 16).into_iter().map(|x| place(&big, x).2).collect();
    assert_eq!(cores.len(), 8, "16 workers on 8 cores, two threads each");
}

#[test]
fn scatter_spreads_over_sockets_and_l3_domains() {
    let big = fixture("2s48c96t");
    let first_two: Vec<usize> = cpus(PinStrategy::Scatter, &big, 2).into_iter().map(|x| place(&big, x).0).collect();
    assert_eq!(first_two, [0, 1], "two workers on two sockets");
    let domains: BTreeSet<_> = cpus(PinStrategy::Scatter, &big, 6).into_iter().map(|x| place(&big, x).1).collect();
    assert_eq!(domains.len(), 6, "six workers on six L3 domains");
    for k in [16, 32, 48] {
        let c = cpus(PinStrategy::Scatter, &big, k);
        let cores: BTreeSet<_> = c.iter().map(|x| place(&big, *x).2).collect();
        assert_eq!(cores.len(), k, "{k}: physical cores first");
        let per_socket = c.iter().filter(|x| place(&big, **x).0 == 0).count();
        assert_eq!(per_socket, k / 2, "{k}: balanced over the sockets");
    }
    let a = assign(PinStrategy::Scatter, &fixture("4c8t"), 4);
    assert_eq!(a.cpus.unwrap(), [0, 2, 4, 6]);
    assert!(a.note.unwrap().contains("one L3 domain on one socket"));
}

#[test]
fn l3_isolate_stays_in_one_domain_while_it_has_a_free_core() {
    let big = fixture("2s48c96t");
    for k in [1, 4, 8] {
        let c = cpus(PinStrategy::L3Isolate, &big, k);
        assert!(c.iter().all(|x| place(&big, *x).1 == place(&big, 0).1), "{k}: {c:?} left the first domain");
        assert_eq!(c.iter().map(|x| place(&big, *x).2).collect::<BTreeSet<_>>().len(), k, "{k}: distinct cores");
    }
    // 16 workers: the first two domains' physical cores, no sibling yet.
    let c = cpus(PinStrategy::L3Isolate, &big, 16);
    assert_eq!(c.iter().map(|x| place(&big, *x).1).collect::<BTreeSet<_>>().len(), 2);
    assert!(c.iter().all(|x| *x < 48), "no SMT sibling before every core is used: {c:?}");
}

#[test]
fn tiered_spillover_fills_a_domain_with_its_siblings_before_the_next() {
    let big = fixture("2s48c96t");
    let c = cpus(PinStrategy::TieredSpillover, &big, 16);
    assert!(c.iter().all(|x| place(&big, *x).1 == place(&big, 0).1), "16 workers fit one domain with siblings: {c:?}");
    assert_eq!(&c[..8], &(0..8).collect::<Vec<_>>()[..], "physical cores first");
    assert_eq!(&c[8..], &(48..56).collect::<Vec<_>>()[..], "then their siblings");
    let c = cpus(PinStrategy::TieredSpillover, &big, 32);
    assert_eq!(c.iter().map(|x| place(&big, *x).1).collect::<BTreeSet<_>>().len(), 2, "then the next domain");
}

#[test]
fn degenerate_cases_say_what_they_became() {
    let two = fixture("kvm-2c");
    for (s, want) in [
        (PinStrategy::AvoidSmt, "no SMT siblings"),
        (PinStrategy::Compact, "no SMT siblings"),
        (PinStrategy::Scatter, "one L3 domain on one socket"),
        (PinStrategy::L3Isolate, "one L3 domain"),
        (PinStrategy::TieredSpillover, "one L3 domain"),
    ] {
        let a = assign(s, &two, 2);
        assert_eq!(a.cpus.as_deref(), Some(&[0, 1][..]), "{s:?}");
        assert!(a.note.as_deref().is_some_and(|n| n.contains(want)), "{s:?}: {:?}", a.note);
    }
    assert_eq!(assign(PinStrategy::Linear, &two, 2).note, None);
}

#[test]
fn a_restricted_allowed_set_is_respected() {
    let t = fixture("4c8t").with_allowed(vec![2, 3, 6]);
    assert_eq!(cpus(PinStrategy::AvoidSmt, &t, 3), [2, 6, 3]);
    assert_eq!(cpus(PinStrategy::Linear, &t, 4), [2, 3, 6, 2]);
    assert_eq!(cpus(PinStrategy::Compact, &t, 3), [2, 3, 6]);
    let big = fixture("2s48c96t").with_allowed((24..48).collect());
    let c = cpus(PinStrategy::Scatter, &big, 3);
    assert!(c.iter().all(|x| (24..48).contains(x)), "{c:?}");
    assert_eq!(c.iter().map(|x| place(&big, *x).1).collect::<BTreeSet<_>>().len(), 3, "three domains of socket 1");
}
