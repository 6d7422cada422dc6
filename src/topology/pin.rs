//! Pinning strategies: which logical CPU each worker of a cell runs on,
//! computed from the topology and the CPUs this process may use.
//!
//! Every strategy is an order of the allowed CPUs; worker i runs on
//! `order[i % len]`, so no CPU takes a second worker before every CPU has one.
//! A strategy that cannot be honoured as named here (no SMT, one L3 domain,
//! more workers than CPUs) still gives an order and says what it degenerated to.

use crate::model::PinStrategy;

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
    if strategy == PinStrategy::None {
        return Assignment { cpus: None, note: None };
    }
    let (order, mut notes) = order(strategy, topo);
    if order.is_empty() {
        return Assignment { cpus: None, note: Some("no allowed CPUs known: not pinned".into()) };
    }
    if workers > order.len() {
        notes.push(format!("{workers} workers on {} CPUs: CPUs are shared", order.len()));
    }
    let cpus = (0..workers).map(|i| order[i % order.len()]).collect();
    Assignment { cpus: Some(cpus), note: (!notes.is_empty()).then(|| notes.join("; ")) }
}

/// The strategy's order of the allowed CPUs, and notes on what it
/// degenerated to here.
pub fn order(strategy: PinStrategy, topo: &Topology) -> (Vec<usize>, Vec<String>) {
    let mut notes = Vec::new();
    let no_smt = !topo.allowed_cores().iter().any(|c| c.len() > 1);
    let domains = domains(topo);
    let one_domain = domains.len() <= 1;
    let one_socket = domains.iter().all(|d| d.package == domains[0].package);
    let order = match strategy {
        PinStrategy::None => Vec::new(),
        PinStrategy::Linear => topo.allowed.clone(),
        PinStrategy::AvoidSmt => {
            if no_smt {
                notes.push("no SMT siblings: same as linear".to_string());
            }
            physical_first(&topo.allowed_cores())
        }
        PinStrategy::Compact => {
            if no_smt {
                notes.push("no SMT siblings: same as linear".to_string());
            }
            topo.allowed_cores().concat()
        }
        PinStrategy::Scatter => {
            if one_domain && one_socket {
                notes.push("one L3 domain on one socket: same as avoid-smt".to_string());
            }
            scatter(&domains)
        }
        PinStrategy::L3Isolate => {
            if one_domain {
                notes.push("one L3 domain: same as avoid-smt".to_string());
            }
            // Physical cores domain by domain, then SMT siblings domain by domain.
            let depth = domains.iter().flat_map(|d| &d.cores).map(Vec::len).max().unwrap_or(0);
            (0..depth).flat_map(|t| domains.iter().flat_map(move |d| d.cores.iter().filter_map(move |c| c.get(t).copied()))).collect()
        }
        PinStrategy::TieredSpillover => {
            if one_domain {
                notes.push("one L3 domain: same as avoid-smt".to_string());
            }
            // One domain's physical cores, then its siblings, then the next domain.
            domains.iter().flat_map(|d| physical_first(&d.cores)).collect()
        }
    };
    (order, notes)
}

/// Logical CPUs ordered so that every core appears once before any core
/// appears twice: first CPU of each core, then second, ...
fn physical_first(cores: &[Vec<usize>]) -> Vec<usize> {
    let depth = cores.iter().map(Vec::len).max().unwrap_or(0);
    (0..depth).flat_map(|t| cores.iter().filter_map(move |c| c.get(t).copied())).collect()
}

/// The allowed cores of one L3 domain (of one socket when there is no L3).
struct Domain {
    package: usize,
    /// Cores in the order of `Topology::cores`, each its allowed CPUs.
    cores: Vec<Vec<usize>>,
}

/// The allowed cores grouped by L3 domain (by socket when there is no L3),
/// domains ordered by socket then by their lowest CPU.
fn domains(topo: &Topology) -> Vec<Domain> {
    let mut keyed: Vec<((usize, usize), Domain)> = Vec::new();
    for core in topo.allowed_cores() {
        let cpu = topo.cpu(core[0]);
        let package = cpu.map_or(0, |c| c.package);
        let key = (package, cpu.and_then(|c| c.l3).unwrap_or(usize::MAX));
        match keyed.iter_mut().find(|(k, _)| *k == key) {
            Some((_, d)) => d.cores.push(core),
            None => keyed.push((key, Domain { package, cores: vec![core] })),
        }
    }
    keyed.sort_by_key(|(k, d)| (k.0, d.cores[0][0]));
    keyed.into_iter().map(|(_, d)| d).collect()
}

/// Round robin over the domains, alternating sockets (s0d0, s1d0, s0d1, ...):
/// each round takes the next core's first CPU from every domain; SMT siblings
/// only after every core has a worker.
fn scatter(domains: &[Domain]) -> Vec<usize> {
    let mut sockets: Vec<(usize, Vec<&Domain>)> = Vec::new();
    for d in domains {
        match sockets.iter_mut().find(|(p, _)| *p == d.package) {
            Some((_, ds)) => ds.push(d),
            None => sockets.push((d.package, vec![d])),
        }
    }
    let rounds = sockets.iter().map(|(_, ds)| ds.len()).max().unwrap_or(0);
    let interleaved: Vec<&Domain> = (0..rounds).flat_map(|r| sockets.iter().filter_map(move |(_, ds)| ds.get(r).copied())).collect();
    let depth = domains.iter().flat_map(|d| &d.cores).map(Vec::len).max().unwrap_or(0);
    let most_cores = domains.iter().map(|d| d.cores.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for t in 0..depth {
        for k in 0..most_cores {
            out.extend(interleaved.iter().filter_map(|d| d.cores.get(k).and_then(|c| c.get(t)).copied()));
        }
    }
    out
}

#[cfg(test)]
mod tests;
