//! `hw.smt`: a fixed amount of compute done by one thread alone on a core,
//! by two threads on the two SMT siblings of one core, and by two threads on
//! two physical cores. The CPUs come from the topology's sibling map, never
//! from an assumed numbering; without SMT siblings the rows are skipped.

use serde_json::json;

use super::HwFacts;
use super::threads::{self, Runs};
use crate::model::{Cell, Profile, named_enum};
use crate::topology::Topology;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::cpu::mix64;

pub struct Smt;

/// The fault: thread 0 starts its chains from a wrong seed.
pub const FAULT: &str = "wrong-seed";

/// The CPUs of a placement and what they are, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmtCpus {
    pub cpus: Vec<usize>,
    pub note: String,
}

named_enum! {
    /// The `placement` axis: one thread alone on a core, two SMT siblings, or two cores.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SmtPlacement {
        Alone = "alone",
        Siblings = "siblings",
        Cores = "cores",
    }
}

/// The CPUs for `placement` (`alone`, `siblings`, `cores`) from the sibling
/// map of the allowed CPUs: the first core with two allowed siblings, and for
/// `cores` the first CPU of another core. `Err(reason)` when the machine has
/// no SMT siblings (every placement: the comparison needs them) or `cores`
/// has no second core.
pub fn smt_cpus(topo: &Topology, placement: SmtPlacement) -> Result<SmtCpus, String> {
    let cores = topo.allowed_cores();
    let Some(at) = cores.iter().position(|c| c.len() >= 2) else {
        return Err("no SMT siblings: every physical core this process may use has one logical CPU".into());
    };
    let (a, b) = (cores[at][0], cores[at][1]);
    match placement {
        SmtPlacement::Alone => {
            Ok(SmtCpus { cpus: vec![a], note: format!("CPU {a} alone on its core (its sibling CPU {b} left to the system)") })
        }
        SmtPlacement::Siblings => Ok(SmtCpus { cpus: vec![a, b], note: format!("CPUs {a} and {b}: SMT siblings of one physical core") }),
        SmtPlacement::Cores => match cores.iter().enumerate().find(|(j, _)| *j != at) {
            Some((_, other)) => {
                let c = other[0];
                Ok(SmtCpus { cpus: vec![a, c], note: format!("CPUs {a} and {c}: two physical cores") })
            }
            None => Err(format!("cores needs a second physical core; this process may use only the core of CPUs {:?}", cores[at])),
        },
    }
}

impl Workload for Smt {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "hw.smt",
            group: "hw",
            summary: "The same compute on one thread alone on a core, two SMT siblings, or two physical cores",
            measures: "what a second hardware thread on the same core adds (or takes) against a second physical core: the \
                       fixed total of dependent 64-bit mixes is split over the threads, so ns per mix falls by the \
                       throughput each placement adds",
            unit: Unit::NsPerOp,
            timed_region: "the compute loop: from the first thread starting to the last one finishing (CLOCK_MONOTONIC in \
                           each thread, after a start barrier reached once every thread is pinned to its CPU); each thread \
                           advances `chains` independent chains of a 64-bit mixer (multiply, xor-shift) over its share of \
                           `ops` steps; the value is the window divided by every chain step of every thread; spawning, \
                           pinning and the reference are outside",
            total_window: Some("spawn and pinning of the threads, the start barrier, the loop and the join"),
            verifier: "each thread's final chain values equal those one thread computed from the same seeds during prepare",
            batched: false,
            params: vec![
                ParamSpec::axis_of::<SmtPlacement>(
                    "placement",
                    "alone: one thread on one CPU of a core; siblings: two threads on the two SMT siblings of that core; \
                     cores: two threads on two physical cores",
                ),
                ParamSpec::int(
                    "ops",
                    "mixer steps per chain, in all, split evenly over the threads",
                    1,
                    1 << 40,
                    [2_000_000, 50_000_000, 200_000_000],
                ),
                ParamSpec::int(
                    "chains",
                    "independent mixer chains per thread: 1 is latency-bound (SMT can fill the idle issue slots), more is \
                     throughput-bound",
                    1,
                    8,
                    [1, 1, 1],
                )
                .with_values(Profile::Full, vec![1.into(), 4.into()]),
            ],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let topo = HwFacts::live(cell.seed, &cx.allowed).topology.map_err(|e| anyhow::anyhow!("reading the topology: {e}"))?;
        let choice = match smt_cpus(&topo, cell.choice("placement")?) {
            Ok(c) => c,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        Ok(Prepared::ready(SmtInstance::new(choice, cell.u64("ops")?, cell.usize("chains")?, cell.seed, cx.fault_is(FAULT))))
    }
}

/// The final values of up to 8 chains, on the stack: the kernel runs inside
/// the work window, where nothing may allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Chains {
    values: [u64; 8],
    len: usize,
}

impl std::ops::Deref for Chains {
    type Target = [u64];

    fn deref(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

/// `steps` steps of `C` independent chains from `seed`.
#[inline(never)]
fn chains<const C: usize>(seed: u64, steps: u64) -> Chains {
    let mut x: [u64; C] = std::array::from_fn(|c| seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for _ in 0..steps {
        for v in &mut x {
            *v = mix64(*v);
        }
    }
    let mut values = [0; 8];
    values[..C].copy_from_slice(&x);
    Chains { values, len: C }
}

/// The kernel with a run-time chain count (1..=8).
fn kernel(seed: u64, steps: u64, n: usize) -> Chains {
    match n {
        1 => chains::<1>(seed, steps),
        2 => chains::<2>(seed, steps),
        3 => chains::<3>(seed, steps),
        4 => chains::<4>(seed, steps),
        5 => chains::<5>(seed, steps),
        6 => chains::<6>(seed, steps),
        7 => chains::<7>(seed, steps),
        _ => chains::<8>(seed, steps),
    }
}

struct SmtInstance {
    choice: SmtCpus,
    shares: Vec<u64>,
    chains: usize,
    seeds: Vec<u64>,
    reference: Vec<Chains>,
    wrong_seed: bool,
}

impl SmtInstance {
    fn new(choice: SmtCpus, ops: u64, chains: usize, seed: u64, wrong_seed: bool) -> SmtInstance {
        let k = choice.cpus.len() as u64;
        let shares: Vec<u64> = (0..k).map(|i| ops * (i + 1) / k - ops * i / k).collect();
        let seeds: Vec<u64> = (0..k).map(|i| mix64(seed ^ i)).collect();
        let chains = chains.clamp(1, 8);
        let reference = seeds.iter().zip(&shares).map(|(&s, &n)| kernel(s, n, chains)).collect();
        SmtInstance { choice, shares, chains, seeds, reference, wrong_seed }
    }
}

impl Instance for SmtInstance {
    /// The threads' runs and chain values.
    type Outcome = Runs<Chains>;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Runs<Chains>)> {
        let sets: Vec<Vec<usize>> = self.choice.cpus.iter().map(|&c| vec![c]).collect();
        let (seeds, shares, n, wrong) = (&self.seeds, &self.shares, self.chains, self.wrong_seed);
        let runs = threads::run(&sets, |i| kernel(if wrong && i == 0 { seeds[i] ^ 1 } else { seeds[i] }, shares[i], n))?;
        timer.record_work(runs.work_ns());
        timer.record_total(runs.total_ns);
        Ok((Work::ops(self.shares.iter().sum::<u64>() * self.chains as u64), runs))
    }

    fn verify(&mut self, runs: &Runs<Chains>) -> Check {
        let expected = format!("{} threads' chain values as computed in prepare", self.reference.len());
        let wrong: Vec<usize> = runs.threads.iter().enumerate().filter(|(i, t)| t.result != self.reference[*i]).map(|(i, _)| i).collect();
        let observed = if wrong.is_empty() { "the same values".to_string() } else { format!("threads {wrong:?} differ") };
        Check { passed: wrong.is_empty(), expected, observed }
    }

    fn details(&self, last: Option<&Runs<Chains>>) -> serde_json::Value {
        json!({
            "cpus": self.choice.cpus,
            "placement_note": self.choice.note,
            "threads": self.shares.len(),
            "steps_per_thread": self.shares,
            "chains": self.chains,
            "last_sample_thread_ns": last.map(|r| r.threads.iter().map(|t| t.end_ns - t.start_ns).collect::<Vec<_>>()),
            "last_sample_thread_cpus": last.map(|r| r.threads.iter().map(|t| [t.cpu_start, t.cpu_end]).collect::<Vec<_>>()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    fn cpus(topo: &str, placement: &str) -> Vec<usize> {
        smt_cpus(&fixture(topo), placement.parse().unwrap()).unwrap().cpus
    }

    #[test]
    fn siblings_come_from_the_sibling_map() {
        // 4c8t numbers siblings adjacently (0+1); 2s48c96t Intel-style (0+48).
        assert_eq!(cpus("4c8t", "alone"), vec![0]);
        assert_eq!(cpus("4c8t", "siblings"), vec![0, 1]);
        assert_eq!(cpus("4c8t", "cores"), vec![0, 2]);
        assert_eq!(cpus("2s48c96t", "alone"), vec![0]);
        assert_eq!(cpus("2s48c96t", "siblings"), vec![0, 48]);
        assert_eq!(cpus("2s48c96t", "cores"), vec![0, 1]);
        for t in ["4c8t", "2s48c96t"] {
            let topo = fixture(t);
            let s = cpus(t, "siblings");
            assert_eq!(topo.cpu(s[0]).unwrap().siblings, topo.cpu(s[1]).unwrap().siblings, "{t}: one core");
            let c = cpus(t, "cores");
            assert!(!topo.cpu(c[0]).unwrap().siblings.contains(&c[1]), "{t}: two cores");
        }
    }

    #[test]
    fn without_siblings_every_placement_is_skipped() {
        for p in SmtPlacement::ALL {
            assert_eq!(
                smt_cpus(&fixture("kvm-2c"), p).unwrap_err(),
                "no SMT siblings: every physical core this process may use has one logical CPU"
            );
        }
        // Siblings allowed, but a single core: no `cores` placement.
        let one_core = fixture("4c8t").with_allowed(vec![2, 3]);
        assert_eq!(smt_cpus(&one_core, SmtPlacement::Siblings).unwrap().cpus, vec![2, 3]);
        assert!(smt_cpus(&one_core, SmtPlacement::Cores).unwrap_err().contains("second physical core"));
        // A restricted set where the first core has one CPU left: the first full core is used.
        assert_eq!(smt_cpus(&fixture("2s48c96t").with_allowed(vec![0, 5, 53]), SmtPlacement::Siblings).unwrap().cpus, vec![5, 53]);
    }

    /// An instance on the CPUs this process may use (unpinned threads would
    /// do as well: the verifier does not depend on placement).
    fn here(threads: usize, wrong: bool) -> SmtInstance {
        let allowed = crate::measure::affinity::current_thread().unwrap();
        let cpus = (0..threads).map(|i| allowed[i % allowed.len()]).collect();
        SmtInstance::new(SmtCpus { cpus, note: "test".into() }, 10_001, 2, 7, wrong)
    }

    #[test]
    fn results_match_the_reference_and_a_wrong_seed_does_not() {
        for threads in [1, 2] {
            let mut inst = here(threads, false);
            let (w, runs) = inst.sample(1, &mut Timer::new()).unwrap();
            assert_eq!(w, Work::ops(10_001 * 2));
            let v = inst.verify(&runs);
            assert!(v.passed, "{v:?}");
            assert_eq!(inst.details(Some(&runs))["steps_per_thread"].as_array().unwrap().len(), threads);
        }
        let mut bad = here(2, true);
        let (_, runs) = bad.sample(1, &mut Timer::new()).unwrap();
        assert_eq!(bad.verify(&runs).observed, "threads [0] differ");
    }

    #[test]
    fn chain_counts_change_the_kernel_not_its_determinism() {
        assert_eq!(kernel(3, 100, 1), kernel(3, 100, 1));
        assert_eq!(kernel(3, 100, 4).len(), 4);
        assert_eq!(kernel(3, 100, 4)[0], kernel(3, 100, 1)[0], "chain 0 is the same chain");
    }
}
