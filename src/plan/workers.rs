//! Worker counts: `auto` from the topology, explicit lists, and how each count
//! relates to the machine (physical cores, SMT, oversubscribed).

use crate::topology::Topology;

use super::PlanError;
use crate::model::CpuClass;

/// The user's `--workers` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkersSpec {
    /// 1, 2, 4, ... up to the allowed logical CPUs (and that count itself).
    Auto,
    List(Vec<usize>),
}

impl WorkersSpec {
    pub fn parse(text: &str) -> Result<WorkersSpec, PlanError> {
        let t = text.trim();
        if t == "auto" {
            return Ok(WorkersSpec::Auto);
        }
        let mut counts = Vec::new();
        for part in t.split(',') {
            let n: usize = part.trim().parse().map_err(|_| PlanError::BadWorkers {
                text: text.to_string(),
                why: format!("'{}' is not a positive integer", part.trim()),
            })?;
            if n == 0 || n > 4096 {
                return Err(PlanError::BadWorkers { text: text.to_string(), why: format!("{n} is outside 1..=4096") });
            }
            if !counts.contains(&n) {
                counts.push(n);
            }
        }
        counts.sort_unstable();
        Ok(WorkersSpec::List(counts))
    }

    /// The counts to run. `oversubscribe` adds twice the logical CPU count.
    pub fn counts(&self, topo: &Topology, oversubscribe: bool) -> Vec<usize> {
        let logical = topo.allowed_logical().max(1);
        let mut counts = match self {
            WorkersSpec::List(l) => l.clone(),
            WorkersSpec::Auto => {
                let mut v = Vec::new();
                let mut k = 1;
                while k <= logical {
                    v.push(k);
                    k *= 2;
                }
                if *v.last().unwrap() != logical {
                    v.push(logical);
                }
                v
            }
        };
        if oversubscribe && !counts.iter().any(|&k| k > logical) {
            counts.push(logical * 2);
        }
        counts
    }
}

/// Whether `workers` fit on physical cores, need SMT siblings, or exceed the
/// logical CPUs this process may use.
pub fn classify(workers: usize, topo: &Topology) -> CpuClass {
    if workers <= topo.allowed_physical_cores().max(1) {
        CpuClass::Physical
    } else if workers <= topo.allowed_logical().max(1) {
        CpuClass::Smt
    } else {
        CpuClass::Oversubscribed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    #[test]
    fn auto_doubles_up_to_the_logical_cpus_and_ends_there() {
        assert_eq!(WorkersSpec::Auto.counts(&fixture("kvm-2c"), false), [1, 2]);
        assert_eq!(WorkersSpec::Auto.counts(&fixture("4c8t"), false), [1, 2, 4, 8]);
        assert_eq!(WorkersSpec::Auto.counts(&fixture("2s48c96t"), false), [1, 2, 4, 8, 16, 32, 64, 96]);
        // A restricted allowed set (taskset, cgroup) ends the list at its size.
        assert_eq!(WorkersSpec::Auto.counts(&fixture("4c8t").with_allowed(vec![0, 1, 2, 3, 4, 5]), false), [1, 2, 4, 6]);
        assert_eq!(WorkersSpec::Auto.counts(&fixture("4c8t").with_allowed(vec![3]), false), [1]);
    }

    #[test]
    fn oversubscribe_adds_twice_the_logical_count() {
        assert_eq!(WorkersSpec::Auto.counts(&fixture("kvm-2c"), true), [1, 2, 4]);
        assert_eq!(WorkersSpec::parse("1,8").unwrap().counts(&fixture("kvm-2c"), true), [1, 8]);
    }

    #[test]
    fn counts_are_classified_against_cores_and_threads() {
        let t = fixture("4c8t");
        assert_eq!(classify(4, &t), CpuClass::Physical);
        assert_eq!(classify(8, &t), CpuClass::Smt);
        assert_eq!(classify(9, &t), CpuClass::Oversubscribed);
        let big = fixture("2s48c96t");
        assert_eq!(classify(48, &big), CpuClass::Physical);
        assert_eq!(classify(64, &big), CpuClass::Smt);
        assert_eq!(classify(96, &big), CpuClass::Smt);
        assert_eq!(classify(128, &big), CpuClass::Oversubscribed);
        let two = fixture("kvm-2c");
        assert_eq!(classify(2, &two), CpuClass::Physical);
        assert_eq!(classify(4, &two), CpuClass::Oversubscribed);
        // Restricting the allowed set (taskset, cgroup) changes the classes:
        // 0 and 1 are SMT siblings on the 4c8t tree.
        let narrowed = fixture("4c8t").with_allowed(vec![0, 1]);
        assert_eq!(classify(1, &narrowed), CpuClass::Physical);
        assert_eq!(classify(2, &narrowed), CpuClass::Smt);
    }

    #[test]
    fn explicit_lists_are_sorted_deduplicated_and_checked() {
        assert_eq!(WorkersSpec::parse("4,1,2,2").unwrap(), WorkersSpec::List(vec![1, 2, 4]));
        assert!(WorkersSpec::parse("0").is_err());
        assert!(WorkersSpec::parse("1,two").unwrap_err().to_string().contains("'two'"));
    }
}
