//! The `os` group: what the kernel charges for each primitive (the rvOS
//! micro-benchmark suite, measured as lmbench and perf bench do). Every
//! workload is batched: one sample runs a calibrated number of operations.

pub mod file_create;
pub mod file_read;
pub mod fs_common;
pub mod futex_ctx;
pub mod ipc_bw;
pub mod ipc_rtt;
pub mod mmap;
pub mod pipe_lifecycle;
pub mod process_spawn;
pub mod readdir;
pub mod sched_yield;
pub mod stat;
pub mod syscall;
pub mod thread_spawn;
pub mod unlink;

use std::io::{Read, Write};
use std::thread::JoinHandle;

use anyhow::Context;

use crate::measure::affinity;
use crate::model::{Cell, named_enum};
use crate::topology::Topology;
use crate::workloads::contract::{ParamSpec, PrepareContext};
use crate::workloads::process::{read_words, write_words};

named_enum! {
    /// Where the two ends of a paired workload run.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum PairPlacement {
        /// Both ends on one logical CPU.
        SameCpu = "same-cpu",
        /// Two CPUs, of different physical cores when there are two.
        CrossCpu = "cross-cpu",
    }
}

/// The placement axis of workloads with two ends (round trips, hand-offs,
/// context switches): both ends on one logical CPU, or on two CPUs of
/// different physical cores. The two differ by an order of magnitude on many
/// machines, so every such row records which it used.
pub fn placement_param() -> ParamSpec {
    ParamSpec::axis_of::<PairPlacement>(
        "placement",
        "both ends on one logical CPU, or on two CPUs (of different physical cores when there are two)",
    )
}

/// The logical CPUs of the two ends of a paired workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPair {
    pub a: usize,
    pub b: usize,
    /// What the pair is, in words, for the row's details.
    pub note: String,
}

/// The CPUs for the cell's `placement`, chosen among the CPUs the worker was
/// allowed when it started; `Err(reason)` when the placement is impossible
/// here (the row is then skipped with that reason).
pub fn cpu_pair(cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Result<CpuPair, String>> {
    let topo = Topology::live().context("reading the CPU topology")?.with_allowed(cx.allowed.clone());
    Ok(choose_pair(&topo, cell.choice("placement")?))
}

/// The prologue of every workload with two ends: picks the cell's CPU pair
/// ([`cpu_pair`]) and pins the calling thread, the measuring end (`end`
/// names it in errors), to the pair's first CPU. `Ok(Err(reason))` when the
/// placement is impossible here.
pub fn pin_pair(cell: &Cell, cx: &PrepareContext, end: &str) -> anyhow::Result<Result<CpuPair, String>> {
    let pair = match cpu_pair(cell, cx)? {
        Ok(p) => p,
        Err(reason) => return Ok(Err(reason)),
    };
    affinity::pin_current_thread(pair.a).with_context(|| format!("pinning the {end} to CPU {}", pair.a))?;
    Ok(Ok(pair))
}

/// The error of a peer that did not become ready: it could not pin itself
/// (`pin_error`), or it ended first.
fn not_ready(peer: &str, cpu: Option<usize>, pin_error: Option<std::io::Error>) -> anyhow::Error {
    match (pin_error, cpu) {
        (Some(e), Some(c)) => anyhow::anyhow!("{peer} cannot pin itself to CPU {c}: {e}"),
        (Some(e), None) => anyhow::anyhow!("{peer} cannot pin itself: {e}"),
        (None, _) => anyhow::anyhow!("{peer} ended before it was ready"),
    }
}

/// Spawns the peer thread `name`, which pins itself to `cpu` (when given)
/// and then runs `body`, and waits until it is placed: the ready handshake of
/// the workloads whose peer is a thread. Fails, naming the peer thread, when
/// it cannot pin itself (`body` then never runs) or ends before saying so.
pub fn spawn_pinned_peer(name: &str, cpu: Option<usize>, body: impl FnOnce() + Send + 'static) -> anyhow::Result<JoinHandle<()>> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let pinned = cpu.map_or(Ok(()), affinity::pin_current_thread);
            let ok = pinned.is_ok();
            let _ = ready_tx.send(pinned);
            if ok {
                body();
            }
        })
        .context("spawning the peer thread")?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => Err(not_ready("the peer thread", cpu, Some(e))),
        Err(_) => Err(not_ready("the peer thread", cpu, None)),
    }
}

/// The peer's half of the ready handshake over a stream (a pipe, a socket):
/// pins the calling thread to `cpu` (when given) and writes one word, 0 or
/// the errno of pinning. Returns whether the peer may go on.
pub fn pin_and_announce(cpu: Option<usize>, tx: &mut impl Write) -> bool {
    let ready = match cpu.map(affinity::pin_current_thread) {
        Some(Err(e)) => e.raw_os_error().unwrap_or(libc::EINVAL) as u64,
        _ => 0,
    };
    write_words(tx, [ready]).is_ok() && ready == 0
}

/// The measuring end's half: reads the peer's word ([`pin_and_announce`]);
/// an error names `peer` and says why it is not ready.
pub fn await_ready(rx: &mut impl Read, peer: &str, cpu: Option<usize>) -> anyhow::Result<()> {
    match read_words::<1>(rx) {
        Ok([0]) => Ok(()),
        Ok([errno]) => Err(not_ready(peer, cpu, Some(std::io::Error::from_raw_os_error(errno as i32)))),
        Err(_) => Err(not_ready(peer, cpu, None)),
    }
}

/// `cpu_pair` on a given topology.
pub fn choose_pair(topo: &Topology, placement: PairPlacement) -> Result<CpuPair, String> {
    let cores = topo.allowed_cores();
    let Some(first) = cores.first().map(|c| c[0]) else { return Err("this process may use no CPU the topology lists".into()) };
    match placement {
        PairPlacement::SameCpu => Ok(CpuPair { a: first, b: first, note: format!("both ends on CPU {first}") }),
        PairPlacement::CrossCpu => {
            if let Some(second) = cores.get(1).map(|c| c[0]) {
                Ok(CpuPair { a: first, b: second, note: format!("CPUs {first} and {second}, different physical cores") })
            } else if let Some(&sibling) = cores[0].get(1) {
                Ok(CpuPair {
                    a: first,
                    b: sibling,
                    note: format!("CPUs {first} and {sibling}, SMT siblings of one core (no second core allowed)"),
                })
            } else {
                Err(format!("cross-cpu needs two CPUs; this process may use only CPU {first}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    #[test]
    fn pairs_use_different_physical_cores_when_they_can() {
        assert_eq!(choose_pair(&fixture("kvm-2c"), PairPlacement::CrossCpu).map(|p| (p.a, p.b)), Ok((0, 1)));
        assert_eq!(choose_pair(&fixture("kvm-2c"), PairPlacement::SameCpu).map(|p| (p.a, p.b)), Ok((0, 0)));
        // 4c8t: 0 and 1 are siblings; the second core starts at 2.
        assert_eq!(choose_pair(&fixture("4c8t"), PairPlacement::CrossCpu).map(|p| (p.a, p.b)), Ok((0, 2)));
        assert_eq!(choose_pair(&fixture("2s48c96t"), PairPlacement::CrossCpu).map(|p| (p.a, p.b)), Ok((0, 1)));
    }

    #[test]
    fn peers_say_whether_they_are_ready() {
        let (mut rx, mut tx) = std::io::pipe().unwrap();
        assert!(pin_and_announce(None, &mut tx));
        assert!(await_ready(&mut rx, "the echo peer", Some(3)).is_ok());
        write_words(&mut tx, [libc::EINVAL as u64]).unwrap();
        let e = await_ready(&mut rx, "the echo peer", Some(3)).unwrap_err().to_string();
        assert!(e.starts_with("the echo peer cannot pin itself to CPU 3: "), "{e}");
        drop(tx);
        assert_eq!(await_ready(&mut rx, "the receiver", None).unwrap_err().to_string(), "the receiver ended before it was ready");
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = ran.clone();
        spawn_pinned_peer("test-peer", None, move || r.store(true, std::sync::atomic::Ordering::SeqCst)).unwrap().join().unwrap();
        assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
        let e = spawn_pinned_peer("test-peer", Some(usize::MAX / 2), || panic!("must not run")).unwrap_err().to_string();
        assert!(e.starts_with("the peer thread cannot pin itself to CPU "), "{e}");
    }

    #[test]
    fn restricted_sets_fall_back_to_siblings_or_skip() {
        let siblings = choose_pair(&fixture("4c8t").with_allowed(vec![2, 3]), PairPlacement::CrossCpu).unwrap();
        assert_eq!((siblings.a, siblings.b), (2, 3));
        assert!(siblings.note.contains("SMT siblings"));
        let one = choose_pair(&fixture("4c8t").with_allowed(vec![5]), PairPlacement::CrossCpu).unwrap_err();
        assert!(one.contains("only CPU 5"), "{one}");
        assert_eq!(choose_pair(&fixture("4c8t").with_allowed(vec![5]), PairPlacement::SameCpu).map(|p| p.a), Ok(5));
    }
}
