//! Reading `sys/devices/system/{cpu,node}` under a root directory into a [`Topology`].
//!
//! Only reads files; never writes, never follows anything outside `root` except through
//! symlinks the tree itself holds. Errors name the file; nothing here panics on bad input.

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::{Cache, Cpu, Topology, TopologyError, cpulist};

/// Reads a whole file as text (lossily, sysfs is ASCII) and trims surrounding whitespace.
fn read(path: &Path) -> Result<String, TopologyError> {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .map_err(|source| TopologyError::Io { path: path.to_path_buf(), source })
}

/// Like [`read`], but a missing file is `None`.
fn read_optional(path: &Path) -> Result<Option<String>, TopologyError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TopologyError::Io { path: path.to_path_buf(), source }),
    }
}

fn parse_error(path: &Path, text: &str, why: impl Into<String>) -> TopologyError {
    TopologyError::Parse { path: path.to_path_buf(), text: text.to_string(), why: why.into() }
}

fn list_of(path: &Path, text: &str) -> Result<Vec<usize>, TopologyError> {
    cpulist::parse(text).map_err(|why| parse_error(path, text, why))
}

fn read_list(path: &Path) -> Result<Vec<usize>, TopologyError> {
    let text = read(path)?;
    list_of(path, &text)
}

/// An id file that the kernel may set to -1 for "unknown" (package, die): -1 becomes 0.
fn id_of(path: &Path, text: &str) -> Result<usize, TopologyError> {
    match text.parse::<i64>() {
        Ok(-1) => Ok(0),
        Ok(v) if v >= 0 => usize::try_from(v).map_err(|_| parse_error(path, text, "too large")),
        _ => Err(parse_error(path, text, "not a non-negative integer")),
    }
}

fn unsigned(path: &Path, text: &str) -> Result<u64, TopologyError> {
    text.parse::<u64>().map_err(|_| parse_error(path, text, "not a non-negative integer"))
}

/// Cache `size` as sysfs writes it: "32K", "1024K", "32768K"; "M"/"G" and bare bytes accepted.
fn cache_size(path: &Path, text: &str) -> Result<u64, TopologyError> {
    let (digits, unit) = match text.char_indices().find(|(_, ch)| !ch.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let factor = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return Err(parse_error(path, text, "size unit is not K, M or G")),
    };
    let n: u64 = digits.parse().map_err(|_| parse_error(path, text, "size is not a number"))?;
    n.checked_mul(factor).ok_or_else(|| parse_error(path, text, "size overflows"))
}

/// Entries of `dir` named `<prefix><number>`, as (number, path), sorted. A missing `dir` is
/// an empty list.
fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<(usize, PathBuf)>, TopologyError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(TopologyError::Io { path: dir.to_path_buf(), source });
        }
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| TopologyError::Io { path: dir.to_path_buf(), source })?;
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if let Ok(n) = rest.parse::<usize>() {
            found.push((n, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// One `cache/indexN` directory of one CPU.
struct RawCache {
    level: u8,
    kind: String,
    size_bytes: u64,
    line_bytes: Option<u64>,
    shared: Vec<usize>,
}

fn read_caches(cpu_dir: &Path) -> Result<Vec<RawCache>, TopologyError> {
    let mut caches = Vec::new();
    for (_, dir) in numbered_entries(&cpu_dir.join("cache"), "index")? {
        // Some platforms (and some hypervisors) publish an index without a size; such an
        // entry says nothing usable about capacity, so it is left out rather than guessed.
        let size_path = dir.join("size");
        let Some(size_text) = read_optional(&size_path)? else {
            continue;
        };
        let size_bytes = cache_size(&size_path, &size_text)?;
        let level_path = dir.join("level");
        let level_text = read(&level_path)?;
        let level = level_text.parse::<u8>().map_err(|_| parse_error(&level_path, &level_text, "level is not a small integer"))?;
        let kind = read(&dir.join("type"))?;
        let line_path = dir.join("coherency_line_size");
        let line_bytes = match read_optional(&line_path)? {
            Some(text) => Some(unsigned(&line_path, &text)?),
            None => None,
        };
        let shared = read_list(&dir.join("shared_cpu_list"))?;
        caches.push(RawCache { level, kind, size_bytes, line_bytes, shared });
    }
    Ok(caches)
}

fn kind_order(kind: &str) -> u8 {
    match kind {
        "Data" => 0,
        "Instruction" => 1,
        "Unified" => 2,
        _ => 3,
    }
}

/// Reads the topology under `root`; `allowed` is all online CPUs.
pub(super) fn load(root: &Path) -> Result<Topology, TopologyError> {
    let cpu_base = root.join("sys/devices/system/cpu");
    let online_path = cpu_base.join("online");
    let online = read_list(&online_path)?;
    if online.is_empty() {
        return Err(TopologyError::NoCpus { path: online_path });
    }

    let mut cpus = Vec::with_capacity(online.len());
    let mut raw_caches = Vec::new();
    for &id in &online {
        let cpu_dir = cpu_base.join(format!("cpu{id}"));
        let topo = cpu_dir.join("topology");
        let package_path = topo.join("physical_package_id");
        let package = id_of(&package_path, &read(&package_path)?)?;
        let die_path = topo.join("die_id");
        let die = match read_optional(&die_path)? {
            Some(text) => id_of(&die_path, &text)?,
            None => 0,
        };
        let core_path = topo.join("core_id");
        let core_text = read(&core_path)?;
        let core_id = usize::try_from(unsigned(&core_path, &core_text)?).map_err(|_| parse_error(&core_path, &core_text, "too large"))?;
        let mut siblings = None;
        for name in ["core_cpus_list", "thread_siblings_list"] {
            let path = topo.join(name);
            if let Some(text) = read_optional(&path)? {
                siblings = Some(list_of(&path, &text)?);
                break;
            }
        }
        raw_caches.push((id, read_caches(&cpu_dir)?));
        cpus.push((Cpu { id, package, die, core_id, siblings: Vec::new(), l3: None, node: None }, siblings));
    }

    // Fallback for missing sibling lists: online CPUs with the same (package, die, core_id).
    let mut by_core: BTreeMap<(usize, usize, usize), Vec<usize>> = BTreeMap::new();
    for (cpu, _) in &cpus {
        by_core.entry((cpu.package, cpu.die, cpu.core_id)).or_default().push(cpu.id);
    }
    let mut cpus: Vec<Cpu> = cpus
        .into_iter()
        .map(|(mut cpu, siblings)| {
            cpu.siblings =
                siblings.unwrap_or_else(|| by_core.get(&(cpu.package, cpu.die, cpu.core_id)).cloned().unwrap_or_else(|| vec![cpu.id]));
            cpu
        })
        .collect();

    let caches = aggregate_caches(&raw_caches);
    let l3_domains: Vec<Vec<usize>> = raw_caches
        .iter()
        .flat_map(|(_, list)| list.iter())
        .filter(|c| c.level == 3)
        .map(|c| c.shared.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let numa_nodes = read_nodes(root)?;
    for cpu in &mut cpus {
        cpu.l3 = l3_domains.iter().position(|d| d.contains(&cpu.id));
        cpu.node = numa_nodes.iter().find(|(_, list)| list.contains(&cpu.id)).map(|(node, _)| *node);
    }

    Ok(Topology { cpus, allowed: online, l3_domains, numa_nodes, caches })
}

fn aggregate_caches(raw: &[(usize, Vec<RawCache>)]) -> Vec<Cache> {
    type Key = (u8, u8, String, u64);
    let mut groups: BTreeMap<Key, (Option<u64>, BTreeSet<Vec<usize>>)> = BTreeMap::new();
    for (_, list) in raw {
        for c in list {
            let key = (c.level, kind_order(&c.kind), c.kind.clone(), c.size_bytes);
            let entry = groups.entry(key).or_insert_with(|| (c.line_bytes, BTreeSet::new()));
            entry.1.insert(c.shared.clone());
        }
    }
    groups
        .into_iter()
        .map(|((level, _, kind, size_bytes), (line_bytes, shared))| Cache {
            level,
            kind,
            size_bytes,
            line_bytes,
            instances: shared.len(),
            shared_cpus: shared.into_iter().collect(),
        })
        .collect()
}

fn read_nodes(root: &Path) -> Result<Vec<(usize, Vec<usize>)>, TopologyError> {
    let mut nodes = Vec::new();
    for (id, dir) in numbered_entries(&root.join("sys/devices/system/node"), "node")? {
        nodes.push((id, read_list(&dir.join("cpulist"))?));
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_in_sysfs_units() {
        let p = Path::new("size");
        assert_eq!(cache_size(p, "32K").unwrap(), 32 * 1024);
        assert_eq!(cache_size(p, "107520K").unwrap(), 107_520 * 1024);
        assert_eq!(cache_size(p, "2M").unwrap(), 2 << 20);
        assert_eq!(cache_size(p, "512").unwrap(), 512);
        assert!(cache_size(p, "32KB").is_err());
        assert!(cache_size(p, "K").is_err());
    }

    #[test]
    fn package_minus_one_is_zero_other_negatives_are_errors() {
        let p = Path::new("physical_package_id");
        assert_eq!(id_of(p, "-1").unwrap(), 0);
        assert_eq!(id_of(p, "3").unwrap(), 3);
        assert!(id_of(p, "-2").is_err());
        assert!(id_of(p, "x").is_err());
    }
}
