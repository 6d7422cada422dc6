//! `os.ipc-rtt`: one operation is one round trip of a small message: the
//! measuring end writes it, the peer reads it and writes it back, the
//! measuring end reads the echo. The peer is a forked process over a pair of
//! pipes (`perf bench sched pipe`), a forked process over a Unix stream
//! socketpair, or a thread of the same process over pipes
//! (`perf bench sched pipe -T`); or, as the rvOS `ipc round-trip` row did
//! (send + receive on a channel pair inside one process), `loopback`: the
//! measuring thread writes the message into a pipe and reads it back itself,
//! with no peer and no context switch.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;

use anyhow::Context;
use serde_json::json;

use super::fs_common::skip_or_fail;
use super::{PairPlacement, await_ready, pin_and_announce, pin_pair, placement_param};
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::process::wait_child;

pub struct IpcRtt;

/// The fault: the peer flips a bit of the first message it echoes.
pub const FAULT: &str = "corrupt-echo";

named_enum! {
    /// How the message travels, and who echoes it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Transport {
        /// A forked process, two pipes.
        Pipe = "pipe",
        /// A forked process, a Unix stream socketpair.
        Unix = "unix",
        /// A thread, two pipes.
        Thread = "thread",
        /// No peer: one pipe, written and read back by the measuring thread.
        Loopback = "loopback",
    }
}

impl Workload for IpcRtt {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.ipc-rtt",
            group: "os",
            summary: "Round trip of a small message to an echoing peer (process over pipes or a socketpair, or a thread)",
            measures: "the latency of kernel IPC: two writes, two reads and the wakeups between the two ends; on one CPU \
                       also two context switches per round trip",
            unit: Unit::NsPerOp,
            timed_region: "a loop of `iters` round trips: write the message (its first 8 bytes a sequence number), read the \
                           echo in full, compare the echoed sequence number with the one sent (a mismatch counter); creating the \
                           channels, forking or spawning the peer, pinning and its readiness message are outside (prepare)",
            total_window: None,
            verifier: "every echo carried the sequence number that was sent (numbers come from the measuring end's own \
                       counter): 0 mismatches",
            batched: true,
            params: vec![
                ParamSpec::axis_of::<Transport>(
                    "transport",
                    "pipe: forked process, two pipes; unix: forked process, socketpair(AF_UNIX, SOCK_STREAM); thread: a thread, two pipes; \
                     loopback: no peer, one pipe written and read back by the measuring thread (the channel's cost without a second party)",
                ),
                ParamSpec::int("bytes", "message size in bytes (at most PIPE_BUF, so every write is atomic)", 8, 4096, [8, 8, 8]),
                placement_param(),
            ],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let transport = cell.choice::<Transport>("transport")?;
        let bytes = cell.usize("bytes")?;
        if transport == Transport::Loopback {
            return prepare_loopback(cell, cx, bytes);
        }
        let pair = match pin_pair(cell, cx, "measuring end")? {
            Ok(p) => p,
            Err(reason) => return Ok(Prepared::Skip(reason)),
        };
        let corrupt = cx.fault_is(FAULT);
        let channels = match Channels::open(transport) {
            Ok(c) => c,
            Err(e) => return skip_or_fail(&format!("opening {transport} channels"), e),
        };
        let Channels { tx, mut rx, peer_rx, peer_tx } = channels;
        let cpu_b = Some(pair.b);
        let peer = if transport == Transport::Thread {
            let h = std::thread::Builder::new()
                .name("echo-peer".into())
                .spawn(move || echo(cpu_b, peer_rx, peer_tx, bytes, corrupt))
                .context("spawning the echo thread")?;
            PeerEnd::Thread(h)
        } else {
            let close = [tx.as_raw_fd(), rx.as_raw_fd()];
            PeerEnd::Process(
                cx.fork_child(&close, move || echo(cpu_b, peer_rx, peer_tx, bytes, corrupt)).context("forking the echo process")?,
            )
        };
        let mut inst = RttInstance {
            tx: Some(tx),
            rx: None,
            peer: Some(peer),
            transport,
            bytes,
            cpus: (pair.a, pair.b),
            note: pair.note,
            seq: 0,
            buf: vec![0xA5; bytes],
            rbuf: vec![0; bytes],
            round_trips: 0,
        };
        // On an error the instance is dropped, which ends the peer.
        await_ready(&mut rx, "the echo peer", Some(pair.b))?;
        inst.rx = Some(rx);
        Ok(Prepared::ready(inst))
    }
}

/// `loopback`: one pipe, both ends held by the measuring thread.
fn prepare_loopback(cell: &Cell, cx: &PrepareContext, bytes: usize) -> anyhow::Result<Prepared> {
    if cell.choice::<PairPlacement>("placement")? != PairPlacement::SameCpu {
        return Ok(Prepared::NotApplicable("loopback has one end; placement does not apply".into()));
    }
    let pair = match pin_pair(cell, cx, "measuring thread")? {
        Ok(p) => p,
        Err(reason) => return Ok(Prepared::Skip(reason)),
    };
    let (r, w) = match io::pipe() {
        Ok(p) => p,
        Err(e) => return skip_or_fail("creating the loopback pipe", e),
    };
    let mut tx = File::from(OwnedFd::from(w));
    if cx.fault_is(FAULT) {
        // A stale message ahead of the first one: every read returns the
        // message sent one round trip earlier.
        tx.write_all(&vec![0x5A; bytes]).context("writing the stale message")?;
    }
    Ok(Prepared::ready(RttInstance {
        tx: Some(tx),
        rx: Some(File::from(OwnedFd::from(r))),
        peer: None,
        transport: Transport::Loopback,
        bytes,
        cpus: (pair.a, pair.a),
        note: format!("one thread on CPU {}, no peer", pair.a),
        seq: 0,
        buf: vec![0xA5; bytes],
        rbuf: vec![0; bytes],
        round_trips: 0,
    }))
}

/// The two directions, as seen by the measuring end and by the peer.
struct Channels {
    tx: File,
    rx: File,
    peer_rx: File,
    peer_tx: File,
}

impl Channels {
    fn open(transport: Transport) -> io::Result<Channels> {
        let file = |fd: OwnedFd| File::from(fd);
        if transport == Transport::Unix {
            let (a, b) = UnixStream::pair()?;
            let (a, b) = (file(a.into()), file(b.into()));
            Ok(Channels { rx: a.try_clone()?, tx: a, peer_rx: b.try_clone()?, peer_tx: b })
        } else {
            let (req_r, req_w) = io::pipe()?;
            let (resp_r, resp_w) = io::pipe()?;
            Ok(Channels { tx: file(req_w.into()), rx: file(resp_r.into()), peer_rx: file(req_r.into()), peer_tx: file(resp_w.into()) })
        }
    }
}

/// The peer: pins itself, says it is ready (0, or the errno of pinning),
/// then echoes every message until end of file or a write error (EPIPE when
/// the measuring end has gone). Returns its exit code.
fn echo(cpu: Option<usize>, mut rx: File, mut tx: File, bytes: usize, corrupt: bool) -> i32 {
    if !pin_and_announce(cpu, &mut tx) {
        return 3;
    }
    let mut buf = vec![0u8; bytes];
    let mut corrupt = corrupt;
    loop {
        if rx.read_exact(&mut buf).is_err() {
            return 0;
        }
        if corrupt {
            buf[0] ^= 0x01;
            corrupt = false;
        }
        if tx.write_all(&buf).is_err() {
            return 0;
        }
    }
}

enum PeerEnd {
    Process(libc::pid_t),
    Thread(JoinHandle<i32>),
}

/// What one sample saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    round_trips: u64,
    /// Echoes that carried another sequence number: (sent, echoed).
    mismatches: Mismatches<(u64, u64)>,
}

struct RttInstance {
    tx: Option<File>,
    rx: Option<File>,
    peer: Option<PeerEnd>,
    transport: Transport,
    bytes: usize,
    cpus: (usize, usize),
    note: String,
    /// The last sequence number sent.
    seq: u64,
    buf: Vec<u8>,
    rbuf: Vec<u8>,
    round_trips: u64,
}

impl Instance for RttInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let (Some(tx), Some(rx)) = (self.tx.as_mut(), self.rx.as_mut()) else { anyhow::bail!("the channels are closed") };
        let (buf, rbuf) = (&mut self.buf, &mut self.rbuf);
        let mut seq = self.seq;
        let mut mismatches = Mismatches::new();
        timer.start();
        for _ in 0..iters {
            seq += 1;
            buf[..8].copy_from_slice(&seq.to_le_bytes());
            tx.write_all(buf).context("sending a message")?;
            rx.read_exact(rbuf).context("reading the echo")?;
            mismatches.expect(seq, u64::from_le_bytes(rbuf[..8].try_into().expect("8 bytes")));
        }
        timer.stop();
        self.seq = seq;
        self.round_trips += iters;
        Ok((Work::ops(iters), Outcome { round_trips: iters, mismatches }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = "0 mismatches: every echo carries the sequence number sent".to_string();
        let observed = l.mismatches.reason(l.round_trips, "round trips", |(sent, got)| format!("sent {sent}, echoed {got}"));
        Check { passed: l.mismatches.is_empty(), expected, observed }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        let peer = match &self.peer {
            Some(PeerEnd::Process(pid)) => format!("forked process {pid}"),
            Some(PeerEnd::Thread(_)) => "thread".to_string(),
            None => "none (loopback)".to_string(),
        };
        json!({
            "transport": self.transport,
            "message_bytes": self.bytes,
            "peer": peer,
            "cpu_a": self.cpus.0,
            "cpu_b": self.cpus.1,
            "placement_note": self.note,
            "round_trips_total": self.round_trips,
            "last_sample_mismatches": last.map(|l| l.mismatches.count),
        })
    }
}

impl Drop for RttInstance {
    fn drop(&mut self) {
        // End of file for the peer's reads, EPIPE for its writes: it ends.
        self.tx = None;
        self.rx = None;
        match self.peer.take() {
            Some(PeerEnd::Process(pid)) => {
                if let Err(e) = wait_child(pid) {
                    eprintln!("os.ipc-rtt: waiting for the echo process {pid}: {e}");
                }
            }
            Some(PeerEnd::Thread(h)) => {
                let _ = h.join();
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::process::read_words;

    /// A thread peer (unit tests run in many threads, so no fork here).
    fn instance(transport: Transport, bytes: usize, corrupt: bool) -> RttInstance {
        let Channels { tx, mut rx, peer_rx, peer_tx } = Channels::open(transport).unwrap();
        let h = std::thread::spawn(move || echo(None, peer_rx, peer_tx, bytes, corrupt));
        assert_eq!(read_words::<1>(&mut rx).unwrap(), [0]);
        RttInstance {
            tx: Some(tx),
            rx: Some(rx),
            peer: Some(PeerEnd::Thread(h)),
            transport,
            bytes,
            cpus: (0, 0),
            note: String::new(),
            seq: 0,
            buf: vec![0; bytes],
            rbuf: vec![0; bytes],
            round_trips: 0,
        }
    }

    #[test]
    fn echoes_over_pipes_and_sockets_pass() {
        for (transport, bytes) in [(Transport::Thread, 8), (Transport::Unix, 8), (Transport::Thread, 1000), (Transport::Unix, 4096)] {
            let mut inst = instance(transport, bytes, false);
            for iters in [1, 200] {
                let (w, out) = inst.sample(iters, &mut Timer::new()).unwrap();
                assert_eq!(w, Work::ops(iters));
                let v = inst.verify(&out);
                assert!(v.passed, "{transport} {bytes}: {v:?}");
            }
            assert_eq!(inst.round_trips, 201);
        }
    }

    #[test]
    fn loopback_reads_back_what_it_wrote_and_a_stale_message_is_caught() {
        let (r, w) = io::pipe().unwrap();
        let mut inst = instance(Transport::Thread, 8, false);
        // Replace the channels with one pipe and no peer, as prepare_loopback does.
        drop(inst.tx.take());
        drop(inst.rx.take());
        let _ = inst.peer.take().map(|p| if let PeerEnd::Thread(h) = p { h.join().unwrap() } else { 0 });
        inst.tx = Some(File::from(OwnedFd::from(w)));
        inst.rx = Some(File::from(OwnedFd::from(r)));
        let (_, out) = inst.sample(100, &mut Timer::new()).unwrap();
        assert!(inst.verify(&out).passed);
        inst.tx.as_mut().unwrap().write_all(&[0x5A; 8]).unwrap();
        let (_, out) = inst.sample(3, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed && v.observed.starts_with("3 mismatches in 3 round trips"), "{v:?}");
    }

    #[test]
    fn the_verifier_fails_on_a_corrupted_echo() {
        let mut inst = instance(Transport::Thread, 8, true);
        let (_, out) = inst.sample(5, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed);
        assert_eq!(v.observed, "1 mismatches in 5 round trips (first: sent 1, echoed 0)");
        let (_, out) = inst.sample(5, &mut Timer::new()).unwrap();
        assert!(inst.verify(&out).passed, "only the first echo is corrupted");
        assert!(!inst.verify(&Outcome { round_trips: 3, mismatches: Mismatches { count: 2, first: Some((4, 5)) } }).passed);
    }

    #[test]
    fn a_peer_that_ends_fails_the_sample_instead_of_hanging() {
        let mut inst = instance(Transport::Unix, 8, false);
        let Some(PeerEnd::Thread(h)) = inst.peer.take() else { unreachable!() };
        // End of file for the peer's reads: its echo loop ends and closes its end.
        // SAFETY: shutting down the writing half of a socket this test owns.
        assert_eq!(unsafe { libc::shutdown(inst.tx.as_ref().unwrap().as_raw_fd(), libc::SHUT_WR) }, 0);
        assert_eq!(h.join().unwrap(), 0);
        assert!(inst.sample(1, &mut Timer::new()).is_err());
    }
}
