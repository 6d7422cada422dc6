//! Pinning strategies: which logical CPU each worker of a cell runs on,
//! computed from the topology and the CPUs this process may use.

use crate::cli::PinStrategy;

use super::Topology;

/// The CPUs of the workers (worker i on `cpus[i % len]`) and, when the
/// strategy could not be honoured as named here, what it degenerated to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub cpus: Option<Vec<usize>>,
    pub note: Option<String>,
}

/// Assigns `workers` workers to logical CPUs by `strategy`.
pub fn assign(strategy: PinStrategy, topo: &Topology, workers: usize) -> Assignment {
    let allowed = &topo.allowed;
    let mut notes = Vec::new();
    let order: Vec<usize> = match strategy {
        PinStrategy::None => return Assignment { cpus: None, note: None },
        PinStrategy::Linear => allowed.clone(),
        PinStrategy::AvoidSmt => {
            if !topo.has_smt() {
                notes.push("no SMT siblings: same as linear".to_string());
            }
            physical_first(topo)
        }
    };
    if order.is_empty() {
        return Assignment { cpus: None, note: Some("no allowed CPUs known: not pinned".into()) };
    }
    if workers > order.len() {
        notes.push(format!("{workers} workers on {} CPUs: CPUs are shared", order.len()));
    }
    let cpus = (0..workers).map(|i| order[i % order.len()]).collect();
    Assignment { cpus: Some(cpus), note: (!notes.is_empty()).then(|| notes.join("; ")) }
}

/// Allowed logical CPUs ordered so that every physical core appears once
/// before any core appears twice: first CPU of each core, then second, ...
fn physical_first(topo: &Topology) -> Vec<usize> {
    let cores = topo.allowed_cores();
    let depth = cores.iter().map(Vec::len).max().unwrap_or(0);
    (0..depth).flat_map(|t| cores.iter().filter_map(move |c| c.get(t).copied())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    const COUNTS: [usize; 6] = [1, 4, 16, 32, 64, 96];

    fn cpus(s: PinStrategy, t: &Topology, k: usize) -> Vec<usize> {
        assign(s, t, k).cpus.unwrap()
    }

    #[test]
    fn none_never_pins() {
        for name in ["kvm-2c", "4c8t", "2s48c96t"] {
            for k in COUNTS {
                assert_eq!(assign(PinStrategy::None, &fixture(name), k), Assignment { cpus: None, note: None });
            }
        }
    }

    #[test]
    fn every_strategy_gives_each_worker_an_allowed_cpu_and_spreads_before_sharing() {
        for name in ["kvm-2c", "4c8t", "2s48c96t"] {
            let t = fixture(name);
            for s in [PinStrategy::Linear, PinStrategy::AvoidSmt] {
                for k in COUNTS {
                    let c = cpus(s, &t, k);
                    assert_eq!(c.len(), k, "{name} {s:?} {k}");
                    assert!(c.iter().all(|x| t.allowed.contains(x)), "{name} {s:?} {k}: {c:?}");
                    let distinct: std::collections::BTreeSet<_> = c.iter().collect();
                    assert_eq!(distinct.len(), k.min(t.allowed.len()), "{name} {s:?} {k}: CPUs shared before all were used");
                    let noted = assign(s, &t, k).note.is_some_and(|n| n.contains("shared"));
                    assert_eq!(noted, k > t.allowed.len(), "{name} {s:?} {k}");
                }
            }
        }
    }

    #[test]
    fn linear_follows_cpu_numbers() {
        assert_eq!(cpus(PinStrategy::Linear, &fixture("4c8t"), 4), [0, 1, 2, 3]);
        assert_eq!(cpus(PinStrategy::Linear, &fixture("kvm-2c"), 4), [0, 1, 0, 1]);
    }

    #[test]
    fn avoid_smt_uses_every_physical_core_before_any_sibling() {
        // 4c8t numbers siblings adjacently: (0,1), (2,3), ...
        assert_eq!(cpus(PinStrategy::AvoidSmt, &fixture("4c8t"), 4), [0, 2, 4, 6]);
        assert_eq!(cpus(PinStrategy::AvoidSmt, &fixture("4c8t"), 8), [0, 2, 4, 6, 1, 3, 5, 7]);
        // 2s48c96t numbers siblings N and N+48.
        let big = fixture("2s48c96t");
        assert_eq!(cpus(PinStrategy::AvoidSmt, &big, 48), (0..48).collect::<Vec<_>>());
        assert_eq!(cpus(PinStrategy::AvoidSmt, &big, 96), (0..96).collect::<Vec<_>>());
        for k in [16, 32] {
            let c = cpus(PinStrategy::AvoidSmt, &big, k);
            let cores: std::collections::BTreeSet<_> = c.iter().map(|x| big.cpu(*x).unwrap().siblings.clone()).collect();
            assert_eq!(cores.len(), k, "{k} workers must sit on {k} distinct cores");
        }
    }

    #[test]
    fn avoid_smt_says_when_there_is_no_smt() {
        let a = assign(PinStrategy::AvoidSmt, &fixture("kvm-2c"), 2);
        assert_eq!(a.cpus.unwrap(), [0, 1]);
        assert!(a.note.unwrap().contains("no SMT"));
        assert_eq!(assign(PinStrategy::AvoidSmt, &fixture("4c8t"), 2).note, None);
    }

    #[test]
    fn a_restricted_allowed_set_is_respected() {
        let t = fixture("4c8t").with_allowed(vec![2, 3, 6]);
        assert_eq!(cpus(PinStrategy::AvoidSmt, &t, 3), [2, 6, 3]);
        assert_eq!(cpus(PinStrategy::Linear, &t, 4), [2, 3, 6, 2]);
    }
}
