//! Every workload proofbench knows, in the order runs and `list` show them.
//! Adding a workload is one file in its group folder (declared with `pub mod`
//! in the group's `mod.rs`) and one line here; a test fails naming any file
//! that implements `Workload` without a line here.

use super::contract::{Workload, WorkloadSpec};
use super::{alloc, cpu, hw, io, npb, os, rt, selftest};

/// All workloads, hidden selftests included.
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(cpu::primes::Primes),
        Box::new(cpu::checksum::Checksum),
        Box::new(cpu::dynamic::Dynamic),
        Box::new(cpu::barrier::PhaseBarrier),
        Box::new(cpu::service::Service),
        Box::new(os::syscall::Syscall),
        Box::new(os::sched_yield::SchedYield),
        Box::new(os::pipe_lifecycle::PipeLifecycle),
        Box::new(os::ipc_rtt::IpcRtt),
        Box::new(os::ipc_bw::IpcBw),
        Box::new(os::futex_ctx::FutexCtx),
        Box::new(os::mmap::Mmap),
        Box::new(os::file_create::FileCreate),
        Box::new(os::file_read::FileRead),
        Box::new(os::stat::Stat),
        Box::new(os::unlink::Unlink),
        Box::new(os::readdir::Readdir),
        Box::new(os::thread_spawn::ThreadSpawn),
        Box::new(os::process_spawn::ProcessSpawn),
        Box::new(rt::fib::Fib),
        Box::new(rt::quicksort::Quicksort),
        Box::new(rt::prodcons::ProdCons),
        Box::new(rt::parallel_for::ParallelFor),
        Box::new(rt::task_alloc::TaskAlloc),
        Box::new(rt::startup::Startup),
        Box::new(npb::ep::Ep),
        Box::new(npb::cg::Cg),
        Box::new(npb::mg::NpbMg),
        Box::new(hw::affinity::Affinity),
        Box::new(hw::prefetch::Prefetch),
        Box::new(hw::smt::Smt),
        Box::new(hw::thp::Thp),
        Box::new(io::randread::RandRead),
        Box::new(io::seqwrite::SeqWrite),
        Box::new(alloc::random_mixed::RandomMixed),
        Box::new(alloc::larson::Larson),
        Box::new(alloc::xthread::XThread),
        Box::new(selftest::crash::Crash),
        Box::new(selftest::hang::Hang),
        Box::new(selftest::wrong::Wrong),
        Box::new(selftest::noisy::Noisy),
        Box::new(selftest::tiny::Tiny),
    ]
}

/// The specs of all workloads, in registry order.
pub fn specs() -> Vec<WorkloadSpec> {
    all().iter().map(|w| w.spec()).collect()
}

/// The workload with this id.
pub fn find(id: &str) -> Option<Box<dyn Workload>> {
    all().into_iter().find(|w| w.spec().id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::contract::ParamKind;

    #[test]
    fn ids_are_unique_and_prefixed_by_their_group() {
        let specs = specs();
        for (i, s) in specs.iter().enumerate() {
            assert!(s.id.starts_with(&format!("{}.", s.group)), "{}", s.id);
            assert!(specs[..i].iter().all(|o| o.id != s.id), "duplicate {}", s.id);
            assert!(!s.timed_region.is_empty() && !s.verifier.is_empty() && !s.summary.is_empty(), "{}", s.id);
        }
    }

    /// The files under `dir` (recursively).
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    #[test]
    fn every_file_that_implements_workload_is_registered() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/workloads");
        let registry = std::fs::read_to_string(root.join("registry.rs")).unwrap();
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let mut found = 0;
        for f in files {
            for line in std::fs::read_to_string(&f).unwrap().lines() {
                let Some(rest) = line.trim().strip_prefix("impl Workload for ") else { continue };
                let ty: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                // Command workloads come from a file at run time, not from the registry.
                if ty == "CommandWorkload" {
                    continue;
                }
                found += 1;
                assert!(
                    registry.contains(&format!("::{ty})")),
                    "{} implements Workload for {ty}, which registry.rs does not list",
                    f.display()
                );
            }
        }
        assert_eq!(found, all().len(), "one Workload impl per registered workload");
    }

    #[test]
    fn every_default_value_parses_as_its_own_kind() {
        for s in specs() {
            for p in &s.params {
                for profile in [crate::model::Profile::Quick, crate::model::Profile::Full, crate::model::Profile::Seed] {
                    let values = p.values(profile);
                    assert!(!values.is_empty(), "{}.{} has no {profile:?} value", s.id, p.name);
                    if p.kind != ParamKind::Workers {
                        for v in values {
                            let text = crate::model::value_text(v);
                            assert_eq!(&p.parse(&text).unwrap(), v, "{}.{}", s.id, p.name);
                        }
                    }
                }
            }
        }
    }
}
