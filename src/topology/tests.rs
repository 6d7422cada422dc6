//! Tests of topology reading against the fixture trees (see `fake.rs`).

use std::fs;
use std::path::Path;

use super::*;

fn load(name: &str) -> Topology {
    super::fixture(name)
}

/// (level, kind, size in bytes, instances) of each cache.
fn cache_summary(t: &Topology) -> Vec<(u8, &str, u64, usize)> {
    t.caches.iter().map(|c| (c.level, c.kind.as_str(), c.size_bytes, c.instances)).collect()
}

#[test]
fn kvm_2c_is_two_cores_without_smt() {
    let t = load("kvm-2c");
    assert_eq!(t.logical_cpus(), 2);
    assert_eq!(t.physical_cores(), 2);
    assert_eq!(t.sockets(), 1);
    assert!(!t.has_smt());
    assert_eq!(t.cores(), vec![vec![0], vec![1]]);
    assert_eq!(t.cpu(1).unwrap().siblings, vec![1]);
    assert_eq!(t.cpu(1).unwrap().core_id, 1);
    assert_eq!(t.l3_domains, vec![vec![0, 1]]);
    assert_eq!(t.numa_nodes, vec![(0, vec![0, 1])]);
    assert_eq!(t.allowed, vec![0, 1]);
    assert_eq!(
        cache_summary(&t),
        vec![(1, "Data", 48 << 10, 2), (1, "Instruction", 32 << 10, 2), (2, "Unified", 2048 << 10, 2), (3, "Unified", 107_520 << 10, 1),]
    );
    assert_eq!(t.caches[0].line_bytes, Some(64));
    let c0 = t.cpu(0).unwrap();
    assert_eq!((c0.package, c0.die, c0.l3, c0.node), (0, 0, Some(0), Some(0)));
    let one = t.with_allowed(vec![1]);
    assert_eq!(one.allowed_logical(), 1);
    assert_eq!(one.allowed_physical_cores(), 1);
}

#[test]
fn four_cores_eight_threads_with_adjacent_siblings() {
    let t = load("4c8t");
    assert_eq!(t.logical_cpus(), 8);
    assert_eq!(t.physical_cores(), 4);
    assert_eq!(t.sockets(), 1);
    assert!(t.has_smt());
    assert_eq!(t.cpu(2).unwrap().siblings, vec![2, 3]);
    assert_eq!(t.cpu(3).unwrap().siblings, vec![2, 3]);
    assert_eq!(t.cores(), vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
    assert_eq!(t.l3_domains, vec![(0..8).collect::<Vec<_>>()]);
    assert!(t.cpus.iter().all(|c| c.l3 == Some(0) && c.node == Some(0)));
    assert_eq!(t.numa_nodes, vec![(0, (0..8).collect())]);
    assert_eq!(
        cache_summary(&t),
        vec![(1, "Data", 32 << 10, 4), (1, "Instruction", 32 << 10, 4), (2, "Unified", 256 << 10, 4), (3, "Unified", 8 << 20, 1),]
    );
    // Both threads of core 0 and one thread of core 2: 3 logical CPUs, 2 physical cores.
    let t = t.with_allowed(vec![0, 1, 4]);
    assert_eq!(t.allowed_logical(), 3);
    assert_eq!(t.allowed_physical_cores(), 2);
}

#[test]
fn two_sockets_forty_eight_cores_ninety_six_threads() {
    let t = load("2s48c96t");
    assert_eq!(t.logical_cpus(), 96);
    assert_eq!(t.physical_cores(), 48);
    assert_eq!(t.sockets(), 2);
    assert!(t.has_smt());
    assert_eq!(t.cpu(5).unwrap().siblings, vec![5, 53]);
    assert_eq!(t.cpu(53).unwrap().siblings, vec![5, 53]);
    assert_eq!(t.cpu(24).unwrap().package, 1);
    assert_eq!(t.cpu(72).unwrap().package, 1);
    assert_eq!(t.cpu(71).unwrap().package, 0);
    // Xeon core ids are not contiguous: core 6 of a socket has core_id 8.
    assert_eq!(t.cpu(6).unwrap().core_id, 8);
    let cores = t.cores();
    assert_eq!(cores[0], vec![0, 48]);
    assert_eq!(cores[24], vec![24, 72]);
    assert_eq!(cores[47], vec![47, 95]);
    assert_eq!(t.l3_domains.len(), 6);
    let first: Vec<usize> = (0..8).chain(48..56).collect();
    assert_eq!(t.l3_domains[0], first);
    assert_eq!(cpulist::format(&t.l3_domains[3]), "24-31,72-79");
    assert_eq!(t.cpu(77).unwrap().l3, Some(3));
    assert_eq!(t.numa_nodes.len(), 2);
    assert_eq!(cpulist::format(&t.numa_nodes[0].1), "0-23,48-71");
    assert_eq!(cpulist::format(&t.numa_nodes[1].1), "24-47,72-95");
    assert_eq!(t.cpu(30).unwrap().node, Some(1));
    assert_eq!(
        cache_summary(&t),
        vec![(1, "Data", 32 << 10, 48), (1, "Instruction", 32 << 10, 48), (2, "Unified", 1 << 20, 48), (3, "Unified", 12 << 20, 6),]
    );
    // Logical CPUs 0-3 and their siblings 48-51, plus cpu 30 alone: 5 cores.
    let t = t.with_allowed(cpulist::parse("0-3,48-51,30").unwrap());
    assert_eq!(t.allowed_logical(), 9);
    assert_eq!(t.allowed_physical_cores(), 5);
}

#[test]
fn with_allowed_keeps_only_online_cpus_sorted() {
    let t = load("4c8t").with_allowed(vec![9, 3, 3, 1, 100]);
    assert_eq!(t.allowed, vec![1, 3]);
    assert_eq!(t.allowed_physical_cores(), 2);
}

#[test]
fn serde_round_trip() {
    let t = load("2s48c96t");
    let json = serde_json::to_string(&t).unwrap();
    let back: Topology = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t);
}

#[test]
fn live_machine_reads() {
    let t = Topology::live().unwrap();
    assert!(t.logical_cpus() >= 1);
    assert!(t.physical_cores() >= 1);
    assert!(t.allowed_logical() >= 1);
    assert!(t.allowed.iter().all(|c| t.cpu(*c).is_some()));
}

/// Writes a minimal two-CPU tree; `tweak` then breaks it.
fn small_tree(tweak: impl FnOnce(&Path)) -> (tempfile::TempDir, Result<Topology, TopologyError>) {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("sys/devices/system/cpu");
    fs::create_dir_all(&cpu).unwrap();
    fs::write(cpu.join("online"), "0-1\n").unwrap();
    for id in 0..2 {
        let topo = cpu.join(format!("cpu{id}/topology"));
        fs::create_dir_all(&topo).unwrap();
        fs::write(topo.join("physical_package_id"), "0\n").unwrap();
        fs::write(topo.join("core_id"), format!("{id}\n")).unwrap();
        let cache = cpu.join(format!("cpu{id}/cache/index0"));
        fs::create_dir_all(&cache).unwrap();
        fs::write(cache.join("level"), "2\n").unwrap();
        fs::write(cache.join("type"), "Unified\n").unwrap();
        fs::write(cache.join("size"), "1024K\n").unwrap();
        fs::write(cache.join("shared_cpu_list"), format!("{id}\n")).unwrap();
    }
    tweak(dir.path());
    let result = Topology::from_root(dir.path());
    (dir, result)
}

fn error_of(tweak: impl FnOnce(&Path)) -> String {
    let (_dir, result) = small_tree(tweak);
    result.expect_err("malformed tree was accepted").to_string()
}

#[test]
fn minimal_tree_without_siblings_nodes_or_die_falls_back() {
    let (_dir, t) = small_tree(|_| {});
    let t = t.unwrap();
    // No sibling lists: each (package, die, core_id) is a core; no die_id means die 0.
    assert_eq!(t.cores(), vec![vec![0], vec![1]]);
    assert_eq!(t.cpu(1).unwrap().die, 0);
    assert!(t.numa_nodes.is_empty());
    assert!(t.l3_domains.is_empty());
    assert_eq!(t.cpu(0).unwrap().l3, None);
    assert_eq!(cache_summary(&t), vec![(2, "Unified", 1 << 20, 2)]);
    assert_eq!(t.caches[0].line_bytes, None);
}

#[test]
fn missing_sibling_lists_group_by_core_id() {
    let (_dir, t) = small_tree(|root| {
        let cpu = root.join("sys/devices/system/cpu");
        fs::write(cpu.join("cpu1/topology/core_id"), "0\n").unwrap();
    });
    let t = t.unwrap();
    assert_eq!(t.cores(), vec![vec![0, 1]]);
    assert!(t.has_smt());
    assert_eq!(t.cpu(0).unwrap().siblings, vec![0, 1]);
}

#[test]
fn errors_name_the_file() {
    let e = error_of(|root| {
        fs::write(root.join("sys/devices/system/cpu/online"), "0-x\n").unwrap();
    });
    assert!(e.contains("sys/devices/system/cpu/online"), "{e}");
    assert!(e.contains("0-x"), "{e}");

    let e = error_of(|root| {
        fs::remove_file(root.join("sys/devices/system/cpu/cpu1/topology/core_id")).unwrap();
    });
    assert!(e.contains("cpu1/topology/core_id"), "{e}");

    let e = error_of(|root| {
        let p = root.join("sys/devices/system/cpu/cpu0/topology/physical_package_id");
        fs::write(p, "zero\n").unwrap();
    });
    assert!(e.contains("cpu0/topology/physical_package_id"), "{e}");

    let e = error_of(|root| {
        let p = root.join("sys/devices/system/cpu/cpu1/cache/index0/size");
        fs::write(p, "12Q\n").unwrap();
    });
    assert!(e.contains("cpu1/cache/index0/size"), "{e}");

    let e = error_of(|root| {
        let node = root.join("sys/devices/system/node/node0");
        fs::create_dir_all(&node).unwrap();
        fs::write(node.join("cpulist"), "1-0\n").unwrap();
    });
    assert!(e.contains("node/node0/cpulist"), "{e}");

    let e = error_of(|root| {
        fs::write(root.join("sys/devices/system/cpu/online"), "\n").unwrap();
    });
    assert!(e.contains("no online CPUs") && e.contains("cpu/online"), "{e}");
}

#[test]
fn an_empty_root_is_an_error_naming_online() {
    let dir = tempfile::tempdir().unwrap();
    let e = Topology::from_root(dir.path()).unwrap_err();
    assert!(matches!(e, TopologyError::Io { .. }));
    assert!(e.to_string().contains("sys/devices/system/cpu/online"));
}
