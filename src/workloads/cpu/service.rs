//! `cpu.service`: an IPC/service-bound workload (capOS "one IPC/service-bound
//! workload"). One server, a thread or a forked process started at prepare
//! and kept across samples, answers requests on one Unix stream socket per
//! client; it does a fixed amount of hashing per request. One sample has
//! `workers` client threads send `requests` requests between them, each
//! client one at a time (send, wait for the answer, check it, send the next).

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;

use anyhow::{Context, bail};
use serde_json::json;

use super::dynamic::hash_chain;
use super::mix64;
use crate::measure::{affinity, clock};
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::process::{read_words, wait_child, write_words};

pub struct Service;

/// The fault: the server answers the first request it ever gets wrongly.
pub const FAULT: &str = "wrong-reply";

named_enum! {
    /// Where the server runs.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Server {
        /// A thread of the worker process.
        Thread = "thread",
        /// A forked process.
        Process = "process",
    }
}

impl Workload for Service {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "cpu.service",
            group: "cpu",
            summary: "Client threads send requests to one server (a thread or a process) over Unix sockets",
            measures: "scaling against a serial service: the clients' round trips (two socket writes, two reads, a poll and \
                       the wakeups) overlap with the one server's work until the server saturates (work window); client \
                       thread lifecycle on top (total window)",
            unit: Unit::Ns,
            timed_region: "the requests: from the first client sending its first request to the last client receiving its \
                           last answer (CLOCK_MONOTONIC in each client), each answer compared with the expected one as it \
                           arrives; the sockets, the server, its readiness message and the expected answers are outside (prepare)",
            total_window: Some(
                "spawn of every client thread, the requests, and the parent's join of all of them (the server is \
                                long-lived and outside both windows)",
            ),
            verifier: "every answer carries the request's id and equals the hash chain of the request's value, which the client \
                       side computed itself during prepare (never from the server): 0 mismatches",
            batched: false,
            params: vec![
                ParamSpec::int("requests", "requests per sample, split evenly among the clients", 1, 1 << 30, [2_000, 20_000, 20_000]),
                ParamSpec::int(
                    "work_rounds",
                    "hash rounds the server does per request (about 5 ns each)",
                    0,
                    1 << 24,
                    [1_000, 1_000, 1_000],
                ),
                ParamSpec::axis_of::<Server>("server", "the server: a thread of the worker process, or a forked process"),
                ParamSpec::workers("client threads, each with its own connection to the server"),
            ],
            faults: &[FAULT],
            shape: TableShape::Scaling,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let requests = cell.usize("requests")?;
        let rounds = cell.u64("work_rounds")?;
        let kind = cell.choice::<Server>("server")?;
        let clients = cell.worker_count();
        // The server runs where the worker process was allowed to, not on the
        // CPU the main thread (which it inherits its mask from) is pinned to.
        let server_cpus = cx.allowed.clone();
        let wrong = cx.fault_is(FAULT);
        let (mut conns, mut server_ends) = (Vec::with_capacity(clients), Vec::with_capacity(clients));
        for i in 0..clients {
            match UnixStream::pair() {
                Ok((c, s)) => {
                    conns.push(c);
                    server_ends.push(s);
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES | libc::ENOSYS)) => {
                    return Ok(Prepared::Skip(format!("Unix sockets are not permitted here: {e}")));
                }
                Err(e) => return Err(anyhow::Error::new(e).context(format!("creating the socket pair of client {i}"))),
            }
        }
        let expected = expected_answers(cell.seed, requests, rounds);
        let server = if kind == Server::Process {
            let close: Vec<i32> = conns.iter().map(|c| c.as_raw_fd()).collect();
            let cpus = server_cpus.clone();
            ServerEnd::Process(
                cx.fork_child(&close, move || serve(server_ends, rounds, wrong, &cpus)).context("forking the server process")?,
            )
        } else {
            let cpus = server_cpus.clone();
            ServerEnd::Thread(
                std::thread::Builder::new()
                    .name("server".into())
                    .spawn(move || serve(server_ends, rounds, wrong, &cpus))
                    .context("spawning the server thread")?,
            )
        };
        ServiceInstance::start(conns, server, kind, server_cpus, expected, rounds, (0..clients).map(|i| cell.cpu_for(i)).collect())
            .map(Prepared::ready)
    }
}

/// The request values and the answers the server must give, computed on
/// the client side: request r carries `mix64(seed ^ r)`.
fn expected_answers(seed: u64, requests: usize, rounds: u64) -> Vec<(u64, u64)> {
    (0..requests as u64)
        .map(|r| {
            let x = mix64(seed ^ r.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            (x, hash_chain(x, rounds))
        })
        .collect()
}

/// The server: sets its affinity, says it is ready on the first connection
/// (0, or the errno of setting the affinity), then answers `[id, x]` with
/// `[id, hash_chain(x, rounds)]` on any connection that has a request, until
/// every connection has closed. Returns its exit code.
fn serve(conns: Vec<UnixStream>, rounds: u64, mut wrong: bool, cpus: &[usize]) -> i32 {
    let ready = match affinity::set_current_thread(cpus) {
        Err(e) if !cpus.is_empty() => e.raw_os_error().unwrap_or(libc::EINVAL) as u64,
        _ => 0,
    };
    let Some(mut first) = conns.first() else { return 0 };
    if write_words(&mut first, [ready]).is_err() || ready != 0 {
        return 3;
    }
    let mut fds: Vec<libc::pollfd> = conns.iter().map(|c| libc::pollfd { fd: c.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let mut open = fds.len();
    while open > 0 {
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structures; the
        // kernel writes only their `revents`. Closed entries have fd -1, which
        // poll ignores.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return 4;
        }
        for (pfd, mut conn) in fds.iter_mut().zip(&conns) {
            if pfd.fd < 0 || pfd.revents == 0 {
                continue;
            }
            let answered = read_words::<2>(&mut conn).and_then(|[id, x]| {
                let mut answer = hash_chain(x, rounds);
                if wrong {
                    answer ^= 1;
                    wrong = false;
                }
                write_words(&mut conn, [id, answer])
            });
            if answered.is_err() {
                pfd.fd = -1; // the client side closed (end of file) or broke
                open -= 1;
            }
        }
    }
    0
}

enum ServerEnd {
    Process(libc::pid_t),
    Thread(JoinHandle<i32>),
}

/// What one client measured in a sample.
#[derive(Clone, Copy, Debug, Default)]
struct ClientRun {
    start: u64,
    end: u64,
    /// Wrong answers: (request id, expected answer, id answered, answer).
    mismatches: Mismatches<(u64, u64, u64, u64)>,
}

/// One client's requests `lo..hi` on its connection, one at a time.
fn client(mut conn: &UnixStream, expected: &[(u64, u64)], lo: usize) -> io::Result<ClientRun> {
    let mut run = ClientRun { start: clock::now_ns(), ..ClientRun::default() };
    for (off, &(x, want)) in expected.iter().enumerate() {
        let id = (lo + off) as u64;
        write_words(&mut conn, [id, x])?;
        let [got_id, got] = read_words::<2>(&mut conn)?;
        if got_id != id || got != want {
            run.mismatches.record(|| (id, want, got_id, got));
        }
    }
    run.end = clock::now_ns();
    Ok(run)
}

/// What the clients saw in one sample.
struct Outcome {
    client_ns: Vec<u64>,
    /// The clients' wrong answers, in client order.
    mismatches: Mismatches<(u64, u64, u64, u64)>,
}

struct ServiceInstance {
    /// The clients' ends, one per client thread.
    conns: Vec<UnixStream>,
    server: Option<ServerEnd>,
    kind: Server,
    server_cpus: Vec<usize>,
    expected: Vec<(u64, u64)>,
    rounds: u64,
    cpus: Vec<Option<usize>>,
}

impl ServiceInstance {
    /// Waits for the server's readiness message.
    fn start(
        conns: Vec<UnixStream>,
        server: ServerEnd,
        kind: Server,
        server_cpus: Vec<usize>,
        expected: Vec<(u64, u64)>,
        rounds: u64,
        cpus: Vec<Option<usize>>,
    ) -> anyhow::Result<ServiceInstance> {
        let inst = ServiceInstance { conns, server: Some(server), kind, server_cpus, expected, rounds, cpus };
        let mut first = inst.conns.first().context("no client")?;
        let [ready] = read_words::<1>(&mut first).context("the server ended before it was ready")?;
        if ready != 0 {
            bail!("the server cannot set its CPU affinity to {:?}: {}", inst.server_cpus, io::Error::from_raw_os_error(ready as i32));
        }
        Ok(inst)
    }

    /// Client i's share of the requests.
    fn share(&self, i: usize) -> (usize, usize) {
        let (n, k) = (self.expected.len(), self.conns.len());
        (n * i / k, n * (i + 1) / k)
    }
}

impl Instance for ServiceInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        let k = self.conns.len();
        let t0 = clock::now_ns();
        let results: Vec<anyhow::Result<ClientRun>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..k)
                .map(|i| {
                    let (lo, hi) = self.share(i);
                    let (conn, expected, cpu) = (&self.conns[i], &self.expected[lo..hi], self.cpus[i]);
                    std::thread::Builder::new()
                        .name(format!("client-{i}"))
                        .spawn_scoped(s, move || {
                            if let Some(c) = cpu {
                                affinity::pin_current_thread(c).with_context(|| format!("pinning client {i} to CPU {c}"))?;
                            }
                            client(conn, expected, lo).with_context(|| format!("client {i}: talking to the server (did it die?)"))
                        })
                        .with_context(|| format!("spawning client {i}"))
                })
                .collect::<anyhow::Result<_>>()?;
            Ok::<_, anyhow::Error>(
                handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))?).collect(),
            )
        })?;
        let t1 = clock::now_ns();
        let (mut first_start, mut last_end) = (u64::MAX, 0u64);
        let mut last = Outcome { client_ns: Vec::with_capacity(k), mismatches: Mismatches::new() };
        for r in results {
            let run = r?;
            first_start = first_start.min(run.start);
            last_end = last_end.max(run.end);
            last.client_ns.push(run.end - run.start);
            last.mismatches.merge(run.mismatches);
        }
        timer.record_work(last_end.saturating_sub(first_start));
        timer.record_total(t1 - t0);
        Ok((Work::ops(self.expected.len() as u64), last))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let expected = format!("0 mismatches in {} requests: every answer is the hash chain of its request", self.expected.len());
        let observed = l.mismatches.reason(self.expected.len() as u64, "requests", |(id, want, got_id, got)| {
            format!("request {id}, expected {want:#018x}, answer to {got_id}: {got:#018x}")
        });
        Check { passed: l.mismatches.is_empty(), expected, observed }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        let server = match &self.server {
            Some(ServerEnd::Process(pid)) => format!("forked process {pid}"),
            Some(ServerEnd::Thread(_)) => "thread".to_string(),
            None => "stopped".to_string(),
        };
        json!({
            "server": server,
            "server_kind": self.kind,
            "server_cpus": self.server_cpus,
            "transport": "socketpair(AF_UNIX, SOCK_STREAM), one per client; the server polls them all",
            "work_rounds": self.rounds,
            "requests_per_client": (0..self.conns.len()).map(|i| { let (lo, hi) = self.share(i); hi - lo }).collect::<Vec<_>>(),
            "last_sample_client_ns": last.map(|l| l.client_ns.clone()),
            "last_sample_mismatches": last.map(|l| l.mismatches.count),
        })
    }
}

impl Drop for ServiceInstance {
    fn drop(&mut self) {
        // End of file on every connection: the server's loop ends.
        self.conns.clear();
        match self.server.take() {
            Some(ServerEnd::Process(pid)) => {
                if let Err(e) = wait_child(pid) {
                    eprintln!("cpu.service: waiting for the server process {pid}: {e}");
                }
            }
            Some(ServerEnd::Thread(h)) => {
                let _ = h.join();
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread server (unit tests run in many threads, so no fork here).
    fn instance(clients: usize, requests: usize, wrong: bool) -> ServiceInstance {
        let (conns, ends): (Vec<_>, Vec<_>) = (0..clients).map(|_| UnixStream::pair().unwrap()).unzip();
        let h = std::thread::spawn(move || serve(ends, 50, wrong, &[]));
        let expected = expected_answers(3, requests, 50);
        ServiceInstance::start(conns, ServerEnd::Thread(h), Server::Thread, vec![], expected, 50, vec![None; clients]).unwrap()
    }

    #[test]
    fn one_and_two_clients_get_every_answer_right_with_both_windows() {
        for (clients, requests) in [(1, 100), (2, 100), (3, 7), (2, 1)] {
            let mut inst = instance(clients, requests, false);
            let mut last = None;
            for _ in 0..2 {
                let mut t = Timer::new();
                let (w, l) = inst.sample(1, &mut t).unwrap();
                assert_eq!(w, Work::ops(requests as u64));
                let v = inst.verify(&l);
                assert!(v.passed, "{clients} clients: {v:?}");
                let (work, total) = (t.work_ns().unwrap(), t.total_ns().unwrap());
                assert!(work <= total, "work {work} > total {total}");
                last = Some(l);
            }
            let d = inst.details(last.as_ref());
            assert_eq!(d["server"], "thread");
            assert_eq!(d["requests_per_client"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>(), requests as u64);
            assert_eq!(d["last_sample_client_ns"].as_array().unwrap().len(), clients);
        }
    }

    #[test]
    fn a_wrong_reply_fails_the_verifier_once() {
        let mut inst = instance(2, 10, true);
        let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&l);
        assert!(!v.passed && v.observed.starts_with("1 mismatches in 10 requests (first: request"), "{v:?}");
        let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify(&l).passed, "only the first answer is wrong");
    }

    #[test]
    fn answers_to_other_requests_fail_the_verifier() {
        let mut inst = instance(1, 10, false);
        let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify(&l).passed);
        // The client expects answers for other values than it sends.
        let (a, b) = (inst.expected[2].1, inst.expected[3].1);
        (inst.expected[2].1, inst.expected[3].1) = (b, a);
        let (_, l) = inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify(&l);
        assert!(!v.passed && v.observed.starts_with("2 mismatches"), "{v:?}");
        assert!(!inst.verify(&Outcome { client_ns: vec![1], mismatches: Mismatches { count: 1, first: Some((0, 1, 0, 2)) } }).passed);
    }

    #[test]
    fn a_server_that_ends_fails_the_sample_instead_of_hanging() {
        let mut inst = instance(2, 10, false);
        let Some(ServerEnd::Thread(h)) = inst.server.take() else { unreachable!() };
        for c in &inst.conns {
            c.shutdown(std::net::Shutdown::Write).unwrap();
        }
        assert_eq!(h.join().unwrap(), 0);
        assert!(inst.sample(1, &mut Timer::new()).is_err());
    }

    #[test]
    fn answers_depend_on_the_value_and_the_rounds() {
        let a = expected_answers(1, 4, 10);
        assert_eq!(a, expected_answers(1, 4, 10));
        assert_ne!(a, expected_answers(1, 4, 11));
        assert!(a.iter().all(|&(x, y)| y == hash_chain(x, 10) && x != y));
        assert_ne!(a[0].0, a[1].0);
    }
}
