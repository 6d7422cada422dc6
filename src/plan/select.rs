//! Which workloads a selection names: groups, ids and globs.

use crate::workloads::contract::WorkloadSpec;

use super::PlanError;

/// The ids selected by `patterns`, in registry order, without duplicates.
///
/// An empty selection means every workload except the hidden `selftest`
/// group (unless `include_selftest`). A pattern is an id (`cpu.primes`), a
/// group (`cpu`) or a glob over ids (`cpu.*`, `*`). Globs and the empty
/// selection skip hidden workloads unless `include_selftest`; naming the
/// `selftest` group or a selftest id explicitly selects it. A pattern that
/// matches nothing is an error naming what exists.
pub fn select(specs: &[WorkloadSpec], patterns: &[String], include_selftest: bool) -> Result<Vec<String>, PlanError> {
    let visible = |s: &WorkloadSpec| include_selftest || !s.hidden();
    let mut chosen: Vec<bool> = vec![false; specs.len()];
    if patterns.is_empty() {
        for (i, s) in specs.iter().enumerate() {
            chosen[i] = visible(s);
        }
    }
    for pattern in patterns {
        let p = pattern.trim();
        let mut matched = false;
        if p.contains(['*', '?', '[']) {
            let glob = glob::Pattern::new(p).map_err(|e| PlanError::BadSelection { pattern: p.to_string(), why: e.msg.to_string() })?;
            let explicit_selftest = p.starts_with("selftest");
            for (i, s) in specs.iter().enumerate() {
                if glob.matches(s.id) && (visible(s) || explicit_selftest) {
                    chosen[i] = true;
                    matched = true;
                }
            }
        } else {
            for (i, s) in specs.iter().enumerate() {
                if s.id == p || s.group == p {
                    chosen[i] = true;
                    matched = true;
                }
            }
        }
        if !matched {
            let mut known: Vec<&str> = Vec::new();
            for s in specs.iter().filter(|s| !s.hidden()) {
                if !known.contains(&s.group) {
                    known.push(s.group);
                }
                known.push(s.id);
            }
            let hint = did_you_mean(p, &known).map(|k| format!(": did you mean {k}?")).unwrap_or_default();
            return Err(PlanError::UnknownWorkload { pattern: p.to_string(), hint, known: known.join(", ") });
        }
    }
    Ok(specs.iter().zip(chosen).filter(|(_, c)| *c).map(|(s, _)| s.id.to_string()).collect())
}

/// The name of `known` closest to `typed` when it is close enough to be
/// what was meant (a letter or two off, or swapped: Jaro-Winkler similarity
/// at least 0.9, as clap suggests subcommands); the first of equals.
pub fn did_you_mean<'k>(typed: &str, known: &[&'k str]) -> Option<&'k str> {
    let mut best: Option<(&str, f64)> = None;
    for k in known {
        let score = strsim::jaro_winkler(typed, k);
        if score >= 0.9 && best.is_none_or(|(_, b)| score > b) {
            best = Some((k, score));
        }
    }
    best.map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TableShape, Unit};

    fn spec(id: &'static str, group: &'static str) -> WorkloadSpec {
        WorkloadSpec {
            id,
            group,
            summary: "",
            measures: "",
            unit: Unit::Ns,
            timed_region: "",
            total_window: None,
            verifier: "",
            batched: false,
            params: vec![],
            faults: &[],
            shape: TableShape::Scaling,
        }
    }

    fn specs() -> Vec<WorkloadSpec> {
        vec![spec("cpu.primes", "cpu"), spec("cpu.checksum", "cpu"), spec("os.syscall", "os"), spec("selftest.crash", "selftest")]
    }

    fn sel(p: &[&str], st: bool) -> Result<Vec<String>, PlanError> {
        select(&specs(), &p.iter().map(|s| s.to_string()).collect::<Vec<_>>(), st)
    }

    #[test]
    fn empty_selection_is_everything_but_selftests() {
        assert_eq!(sel(&[], false).unwrap(), ["cpu.primes", "cpu.checksum", "os.syscall"]);
        assert_eq!(sel(&[], true).unwrap().len(), 4);
    }

    #[test]
    fn groups_ids_and_globs_select_in_registry_order() {
        assert_eq!(sel(&["cpu"], false).unwrap(), ["cpu.primes", "cpu.checksum"]);
        assert_eq!(sel(&["os.syscall", "cpu.primes"], false).unwrap(), ["cpu.primes", "os.syscall"]);
        assert_eq!(sel(&["cpu.*"], false).unwrap(), ["cpu.primes", "cpu.checksum"]);
        assert_eq!(sel(&["*"], false).unwrap().len(), 3);
        assert_eq!(sel(&["cpu", "cpu.primes"], false).unwrap().len(), 2);
    }

    #[test]
    fn selftests_are_selected_only_when_named_or_included() {
        assert_eq!(sel(&["selftest.crash"], false).unwrap(), ["selftest.crash"]);
        assert_eq!(sel(&["selftest.*"], false).unwrap(), ["selftest.crash"]);
        assert_eq!(sel(&["*"], true).unwrap().len(), 4);
    }

    #[test]
    fn unknown_names_are_an_error_listing_what_exists() {
        let e = sel(&["cpu.prime"], false).unwrap_err().to_string();
        assert!(e.contains("'cpu.prime'") && e.contains("cpu.primes") && !e.contains("selftest"), "{e}");
        assert!(sel(&["gpu.*"], false).is_err());
    }

    #[test]
    fn a_near_miss_is_told_what_was_probably_meant() {
        for (typed, meant) in [("cpu.primse", "cpu.primes"), ("cpu.prime", "cpu.primes"), ("os.sycall", "os.syscall"), ("cpus", "cpu")] {
            let e = sel(&[typed], false).unwrap_err().to_string();
            assert!(e.starts_with(&format!("unknown workload '{typed}': did you mean {meant}? (known: ")), "{e}");
        }
        // Nothing close: no guess.
        for typed in ["gpu.shaders", "network", "x"] {
            let e = sel(&[typed], false).unwrap_err().to_string();
            assert!(!e.contains("did you mean"), "{e}");
        }
        assert_eq!(did_you_mean("cpu.checksun", &["cpu.primes", "cpu.checksum"]), Some("cpu.checksum"));
        assert_eq!(did_you_mean("anything", &[]), None);
    }
}
