//! `os.ipc-bw`: one operation is one message of `size` bytes written to a
//! pipe and read in full by a forked receiver: a one-way stream measured in
//! MB/s (rvOS `ipc throughput 1KB`: 1000-byte messages).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};

use anyhow::Context;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::{await_ready, pin_and_announce, pin_pair, placement_param};
use crate::model::Cell;
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::process::{read_words, wait_child, write_words};

pub struct IpcBw;

/// The fault: the receiver flips a byte of the first message it receives.
pub const FAULT: &str = "corrupt-byte";

/// Distinct messages sent in turn (so a lost or repeated message changes the checksum).
const DISTINCT: usize = 8;

impl Workload for IpcBw {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "os.ipc-bw",
            group: "os",
            summary: "One-way stream of fixed-size messages over a pipe to a forked receiver",
            measures: "IPC bandwidth for message-sized transfers: the copy into and out of the pipe buffer plus the wakeups \
                       of a reader that takes one message per read",
            unit: Unit::MbPerSec,
            timed_region: "`iters` writes of one `size`-byte message each, then the read of the receiver's 16-byte \
                           acknowledgement (its checksum and byte count), which it sends after reading and checksumming the \
                           last message: the window ends when every byte has been delivered. The 8-byte header announcing the \
                           message count and the sender's reference checksum are outside",
            total_window: None,
            verifier: "the receiver's byte count and wrapping sum of the messages' 64-bit words equal the sender's, computed \
                       outside the window from the messages it sent (random contents drawn at prepare)",
            batched: true,
            params: vec![ParamSpec::int("size", "message size in bytes", 1, 1 << 20, [1024, 1024, 1000]), placement_param()],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let size = cell.usize("size")?;
        let pair = match pin_pair(cell, cx, "sender")? {
            Ok(p) => p,
            Err(reason) => return Ok(Prepared::Skip(reason)),
        };
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(cell.seed);
        let msgs: Vec<Vec<u8>> = (0..DISTINCT)
            .map(|_| {
                let mut m = vec![0u8; size];
                for c in m.chunks_mut(8) {
                    c.copy_from_slice(&rng.next_u64().to_le_bytes()[..c.len()]);
                }
                m
            })
            .collect();
        let pipes = io::pipe().and_then(|d| io::pipe().map(|a| (d, a)));
        let ((data_r, data_w), (ack_r, ack_w)) = match pipes {
            Ok(p) => p,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOSYS | libc::EACCES)) => {
                return Ok(Prepared::Skip(format!("pipes are not permitted here: {e}")));
            }
            Err(e) => return Err(anyhow::Error::new(e).context("creating the pipes")),
        };
        let file = |fd: OwnedFd| File::from(fd);
        let (tx, mut ack, rx, ack_tx) = (file(data_w.into()), file(ack_r.into()), file(data_r.into()), file(ack_w.into()));
        let (cpu_b, corrupt) = (pair.b, cx.fault_is(FAULT));
        let pid = cx
            .fork_child(&[tx.as_raw_fd(), ack.as_raw_fd()], move || receive(Some(cpu_b), rx, ack_tx, size, corrupt))
            .context("forking the receiver")?;
        // SAFETY: F_GETPIPE_SZ only reads the pipe's capacity.
        let capacity = unsafe { libc::fcntl(tx.as_raw_fd(), libc::F_GETPIPE_SZ) };
        let mut inst = BwInstance {
            tx: Some(tx),
            ack: None,
            pid: Some(pid),
            sums: msgs.iter().map(|m| message_sum(m)).collect(),
            msgs,
            size,
            sent: 0,
            cpus: (pair.a, pair.b),
            note: pair.note,
            capacity,
        };
        // On an error the instance is dropped, which ends the receiver.
        await_ready(&mut ack, "the receiver", Some(pair.b))?;
        inst.ack = Some(ack);
        Ok(Prepared::ready(inst))
    }
}

/// The wrapping sum of a message's little-endian 64-bit words, the last one
/// zero-padded: any single changed byte changes it.
fn message_sum(m: &[u8]) -> u64 {
    let mut words = m.chunks_exact(8);
    let mut sum = 0u64;
    for w in &mut words {
        sum = sum.wrapping_add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        sum = sum.wrapping_add(u64::from_le_bytes(last));
    }
    sum
}

/// The receiver: pins itself, says it is ready (0, or the errno of pinning),
/// then per round reads a message count, reads that many messages one read
/// at a time and acknowledges with `[checksum, bytes]`. Ends at end of file
/// or on a write error (EPIPE once the sender has gone).
fn receive(cpu: Option<usize>, mut rx: File, mut ack: File, size: usize, corrupt: bool) -> i32 {
    if !pin_and_announce(cpu, &mut ack) {
        return 3;
    }
    let mut buf = vec![0u8; size];
    let mut corrupt = corrupt;
    loop {
        let Ok([count]) = read_words::<1>(&mut rx) else { return 0 };
        let (mut sum, mut bytes) = (0u64, 0u64);
        for _ in 0..count {
            if rx.read_exact(&mut buf).is_err() {
                return 0;
            }
            if corrupt {
                buf[size / 2] ^= 0x40;
                corrupt = false;
            }
            sum = sum.wrapping_add(message_sum(&buf));
            bytes += size as u64;
        }
        if write_words(&mut ack, [sum, bytes]).is_err() {
            return 0;
        }
    }
}

/// What one sample sent and what the receiver acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    messages: u64,
    expected: (u64, u64),
    received: (u64, u64),
}

struct BwInstance {
    tx: Option<File>,
    ack: Option<File>,
    pid: Option<libc::pid_t>,
    msgs: Vec<Vec<u8>>,
    /// `message_sum` of each message.
    sums: Vec<u64>,
    size: usize,
    /// Messages sent so far: the next one is `msgs[sent % DISTINCT]`.
    sent: u64,
    cpus: (usize, usize),
    note: String,
    capacity: libc::c_int,
}

impl BwInstance {
    /// The checksum and byte count of `n` messages starting at message `from`.
    fn reference(&self, from: u64, n: u64) -> (u64, u64) {
        let k = self.sums.len() as u64;
        let sum = (from..from + n).fold(0u64, |s, i| s.wrapping_add(self.sums[(i % k) as usize]));
        (sum, n * self.size as u64)
    }
}

impl Instance for BwInstance {
    type Outcome = Outcome;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let expected = self.reference(self.sent, iters);
        let (Some(tx), Some(ack)) = (self.tx.as_mut(), self.ack.as_mut()) else { anyhow::bail!("the pipes are closed") };
        write_words(tx, [iters]).context("announcing the message count")?;
        let k = self.msgs.len();
        let mut next = (self.sent % k as u64) as usize;
        timer.start();
        for _ in 0..iters {
            tx.write_all(&self.msgs[next]).context("sending a message")?;
            next = if next + 1 == k { 0 } else { next + 1 };
        }
        let [sum, bytes] = read_words::<2>(ack).context("reading the receiver's acknowledgement")?;
        timer.stop();
        self.sent += iters;
        Ok((Work { ops: iters, bytes: iters * self.size as u64 }, Outcome { messages: iters, expected, received: (sum, bytes) }))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let show = |(sum, bytes): (u64, u64)| format!("checksum {sum:#018x} over {bytes} bytes");
        Check {
            passed: l.received == l.expected,
            expected: format!("{} (sender, {} messages)", show(l.expected), l.messages),
            observed: format!("{} (receiver)", show(l.received)),
        }
    }

    fn details(&self, _: Option<&Outcome>) -> serde_json::Value {
        json!({
            "message_bytes": self.size,
            "distinct_messages": self.msgs.len(),
            "pipe_capacity_bytes": self.capacity,
            "receiver_pid": self.pid,
            "cpu_a": self.cpus.0,
            "cpu_b": self.cpus.1,
            "placement_note": self.note,
            "messages_total": self.sent,
        })
    }
}

impl Drop for BwInstance {
    fn drop(&mut self) {
        // End of file for the receiver's reads, EPIPE for its writes: it ends.
        self.tx = None;
        self.ack = None;
        if let Some(pid) = self.pid.take()
            && let Err(e) = wait_child(pid)
        {
            eprintln!("os.ipc-bw: waiting for the receiver {pid}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiving thread (unit tests run in many threads, so no fork here).
    fn instance(size: usize, corrupt: bool) -> (BwInstance, std::thread::JoinHandle<i32>) {
        let (rx, tx) = io::pipe().unwrap();
        let (mut ack, ack_tx) = io::pipe().unwrap();
        let h = std::thread::spawn(move || receive(None, File::from(OwnedFd::from(rx)), File::from(OwnedFd::from(ack_tx)), size, corrupt));
        assert_eq!(read_words::<1>(&mut ack).unwrap(), [0]);
        let msgs: Vec<Vec<u8>> = (0..DISTINCT).map(|i| (0..size).map(|j| (i * 31 + j * 7) as u8).collect()).collect();
        let inst = BwInstance {
            tx: Some(File::from(OwnedFd::from(tx))),
            ack: Some(File::from(OwnedFd::from(ack))),
            pid: None,
            sums: msgs.iter().map(|m| message_sum(m)).collect(),
            msgs,
            size,
            sent: 0,
            cpus: (0, 0),
            note: String::new(),
            capacity: 0,
        };
        (inst, h)
    }

    #[test]
    fn every_byte_arrives_and_is_counted() {
        for size in [1, 1000, 1024, 70_000] {
            let (mut inst, h) = instance(size, false);
            for iters in [1, 3, 20] {
                let (w, out) = inst.sample(iters, &mut Timer::new()).unwrap();
                assert_eq!(w, Work { ops: iters, bytes: iters * size as u64 });
                let v = inst.verify(&out);
                assert!(v.passed, "size {size}: {v:?}");
            }
            assert_eq!(inst.sent, 24);
            drop(inst);
            assert_eq!(h.join().unwrap(), 0);
        }
    }

    #[test]
    fn the_verifier_fails_on_a_corrupted_byte_or_a_lost_message() {
        let (mut inst, _h) = instance(1000, true);
        let (_, out) = inst.sample(4, &mut Timer::new()).unwrap();
        let v = inst.verify(&out);
        assert!(!v.passed, "{v:?}");
        assert!(v.observed.ends_with("over 4000 bytes (receiver)"), "{}", v.observed);
        let (sum, bytes) = inst.reference(0, 3);
        let lost = Outcome { messages: 4, expected: inst.reference(0, 4), received: (sum, bytes) };
        assert!(!inst.verify(&lost).passed);
    }

    #[test]
    fn the_checksum_sees_every_byte_and_the_reference_wraps_around_the_messages() {
        let m: Vec<u8> = (0..13).collect();
        for i in 0..m.len() {
            let mut c = m.clone();
            c[i] ^= 0x80;
            assert_ne!(message_sum(&c), message_sum(&m), "byte {i}");
        }
        let (inst, _h) = instance(16, false);
        let (all, bytes) = inst.reference(5, DISTINCT as u64 * 2);
        assert_eq!(all, inst.sums.iter().fold(0u64, |s, x| s.wrapping_add(x.wrapping_mul(2))));
        assert_eq!(bytes, 16 * 2 * DISTINCT as u64);
    }
}
