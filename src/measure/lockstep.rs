//! Lockstep: the two sides of a pair (two worker processes, A and B) take
//! their timed samples in alternation, a few milliseconds apart, so that
//! each sample of A has a sample of B taken in the same state of the
//! machine (docs/METHODOLOGY.md, "Lockstep pairs").
//!
//! The runner holds the token. Each side has two pipes: the runner writes
//! to a side's `go` pipe and reads its `done` pipe; the side inherits the
//! other ends, named in its environment ([`ENV`]: `GO_FD,DONE_FD`). A side
//! says [`READY`] when it reaches its timed loop (after its own settle,
//! calibration and warmup), then before each timed sample waits for a byte:
//! [`GO`] takes one sample and answers [`DONE`]; [`STOP`] (or the runner
//! gone) ends its timed loop. The runner ([`Coordinator`]) waits for every
//! side to be ready, then for each set of samples sends the token to each
//! side in turn, in an order drawn from the seed (so a pair reads `A B  B A
//! A B ...`), and waits for each answer within a timeout: a side that dies
//! or hangs ends the set with a [`Fault`] naming it, never a hang. A set of
//! variants of more than two sides works the same way.
//!
//! Only the protocol lives here (both `worker` and `runner` use it); the
//! processes are the runner's to start and stop.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;

/// The environment variable that hands a worker its ends: `GO_FD,DONE_FD`.
pub const ENV: &str = "PROOFBENCH_LOCKSTEP";
/// A side reached its timed loop.
pub const READY: u8 = b'r';
/// Take one timed sample.
pub const GO: u8 = b'g';
/// The sample is taken.
pub const DONE: u8 = b'd';
/// End the timed loop.
pub const STOP: u8 = b's';

/// Side `i`'s name in messages: A, B, C...
pub fn side_name(i: usize) -> String {
    u8::try_from(i).ok().filter(|i| *i < 26).map(|i| ((b'A' + i) as char).to_string()).unwrap_or_else(|| format!("#{}", i + 1))
}

/// A worker's end of the protocol.
#[derive(Debug)]
pub struct Baton {
    go: File,
    done: File,
}

impl Baton {
    /// The gate named by `value` (the [`ENV`] variable's value), taking
    /// ownership of its two descriptors. An error names what is wrong with
    /// the value; descriptors that are not open are refused.
    pub fn from_value(value: &str) -> io::Result<Baton> {
        let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{ENV}={value:?}: {why}"));
        let (go, done) = value.split_once(',').ok_or_else(|| bad("expected GO_FD,DONE_FD"))?;
        let fd = |s: &str| -> io::Result<RawFd> {
            let fd: RawFd = s.trim().parse().map_err(|_| bad("not a descriptor number"))?;
            // SAFETY: F_GETFD only reads the descriptor's flags.
            if fd < 3 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
                return Err(bad(&format!("descriptor {fd} is not open (or is a standard one)")));
            }
            Ok(fd)
        };
        let (go, done) = (fd(go)?, fd(done)?);
        if go == done {
            return Err(bad("the two descriptors are the same"));
        }
        for f in [go, done] {
            // Processes the workload starts must not hold the ends.
            // SAFETY: setting a flag on an open descriptor (checked above).
            unsafe { libc::fcntl(f, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // SAFETY: both descriptors are open (checked above), distinct, and
        // handed to this process for this use alone.
        Ok(unsafe { Baton { go: File::from_raw_fd(go), done: File::from_raw_fd(done) } })
    }

    /// The gate of this process's environment, if it has one.
    pub fn from_env() -> io::Result<Option<Baton>> {
        match std::env::var(ENV) {
            Ok(v) => Baton::from_value(&v).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The gate over two descriptors already owned (the tests' sides).
    #[cfg(test)]
    pub fn from_fds(go: OwnedFd, done: OwnedFd) -> Baton {
        Baton { go: File::from(go), done: File::from(done) }
    }

    /// Says the side reached its timed loop.
    pub fn ready(&mut self) -> io::Result<()> {
        self.done.write_all(&[READY])
    }

    /// Waits for the token: `true` to take one sample, `false` when the
    /// runner ends the loop (or is gone).
    pub fn wait(&mut self) -> io::Result<bool> {
        let mut b = [0u8];
        loop {
            match self.go.read(&mut b) {
                Ok(0) => return Ok(false),
                Ok(_) if b[0] == GO => return Ok(true),
                Ok(_) if b[0] == STOP => return Ok(false),
                Ok(_) => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected lockstep byte {:?}", b[0] as char))),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands the token back after a sample.
    pub fn done(&mut self) -> io::Result<()> {
        self.done.write_all(&[DONE])
    }
}

/// The runner's end of one side.
#[derive(Debug)]
pub struct Side {
    go: File,
    done: File,
}

/// The ends a side's process inherits: pass their numbers in [`ENV`]
/// ([`ChildEnds::env_value`]) and keep them open across `exec` (they are
/// created without close-on-exec); the runner drops its copies once the
/// process is started.
#[derive(Debug)]
pub struct ChildEnds {
    pub go: OwnedFd,
    pub done: OwnedFd,
}

impl ChildEnds {
    /// `GO_FD,DONE_FD` for [`ENV`].
    pub fn env_value(&self) -> String {
        format!("{},{}", self.go.as_raw_fd(), self.done.as_raw_fd())
    }

    /// Makes `command`'s process keep these ends across `exec` and name
    /// them in [`ENV`]. The runner drops its copies once the process has
    /// started.
    pub fn inherit(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fds = [self.go.as_raw_fd(), self.done.as_raw_fd()];
        command.env(ENV, self.env_value());
        // SAFETY: the closure calls fcntl only (async-signal-safe), on two
        // descriptors open in the parent and so in the child.
        unsafe {
            command.pre_exec(move || {
                for fd in fds {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

/// A pipe, `(read, write)`, the read end close-on-exec when `cloexec_read`
/// and the write end when `cloexec_write`.
fn pipe(cloexec_read: bool, cloexec_write: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe just opened both; nothing else owns them.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for (fd, on) in [(&r, cloexec_read), (&w, cloexec_write)] {
        if on {
            // SAFETY: setting a flag on a descriptor this function owns.
            if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok((r, w))
}

/// A side's pipes: the runner's end and the ends its process inherits.
/// Every end is close-on-exec: only the process given them with
/// [`ChildEnds::inherit`] keeps them, so that no other process (the other
/// side's, above all) holds a side's ends open after it dies.
pub fn channel() -> io::Result<(Side, ChildEnds)> {
    let (go_r, go_w) = pipe(true, true)?;
    let (done_r, done_w) = pipe(true, true)?;
    Ok((Side { go: File::from(go_w), done: File::from(done_r) }, ChildEnds { go: go_r, done: done_w }))
}

/// Why a pair ended before its last sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The side closed its end: its process ended.
    Died { side: usize, pair: Option<u32> },
    /// The side did not answer within the timeout.
    Hung { side: usize, pair: Option<u32>, waited: Duration },
    /// The side answered something the protocol does not know.
    Garbled { side: usize, byte: u8 },
    /// The runner was asked to stop.
    Stopped,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let when = |pair: &Option<u32>| match pair {
            None => "before its first timed sample".to_string(),
            Some(p) => format!("at sample set {}", p + 1),
        };
        match self {
            Fault::Died { side, pair } => write!(f, "side {} of the lockstep set ended {}", side_name(*side), when(pair)),
            Fault::Hung { side, pair, waited } => {
                write!(f, "side {} of the lockstep set did not answer for {:.1} s {}", side_name(*side), waited.as_secs_f64(), when(pair))
            }
            Fault::Garbled { side, byte } => write!(f, "side {} of the lockstep set sent {:?}", side_name(*side), *byte as char),
            Fault::Stopped => write!(f, "the lockstep set was stopped"),
        }
    }
}

impl std::error::Error for Fault {}

impl Fault {
    /// The side at fault (`None`: a stop request).
    pub fn side(&self) -> Option<usize> {
        match self {
            Fault::Died { side, .. } | Fault::Hung { side, .. } | Fault::Garbled { side, .. } => Some(*side),
            Fault::Stopped => None,
        }
    }
}

/// What the runner did: the order of the sides in each set of samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// For each set taken, the sides in the order they sampled (0 = A).
    pub order: Vec<Vec<u8>>,
}

/// How many sets of samples a lockstep trial takes, as a lone trial takes
/// samples (`worker::stopping`): at least `min`, or as many sets as fit in
/// `budget` when fewer do (at least one: a trial of long samples is one
/// set); then more while one more set of the last one's length fits in
/// `budget` since the first; at most `max`. A zero `budget` takes exactly
/// `min` (`--runs N`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    pub min: u32,
    pub max: u32,
    pub budget: Duration,
}

/// The runner's end of a lockstep set (two sides: a pair).
#[derive(Debug)]
pub struct Coordinator {
    sides: Vec<Side>,
    /// How long a side may take to answer (to take one sample).
    pub timeout: Duration,
    /// How long a side may take to become ready (its prepare, calibration and warmup).
    pub ready_timeout: Duration,
}

/// Waits until `f` can be read or `timeout` passes, checking `stop` every
/// 100 ms. `Ok(true)` when readable (or closed), `Ok(false)` on timeout.
fn readable(f: &File, timeout: Duration, stop: &dyn Fn() -> bool) -> io::Result<bool> {
    let start = Instant::now();
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Ok(false);
        }
        let mut p = libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = left.min(Duration::from_millis(100)).as_millis().max(1) as libc::c_int;
        // SAFETY: one valid pollfd, for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n > 0 {
            return Ok(true);
        }
        if stop() {
            return Ok(false);
        }
    }
}

impl Coordinator {
    /// The coordinator of `sides`, A first.
    pub fn new(sides: Vec<Side>, timeout: Duration, ready_timeout: Duration) -> Coordinator {
        Coordinator { sides, timeout, ready_timeout }
    }

    /// One byte from side `s` within `timeout`.
    fn answer(&mut self, s: usize, pair: Option<u32>, timeout: Duration, want: u8, stop: &dyn Fn() -> bool) -> Result<(), Fault> {
        let start = Instant::now();
        let died = Fault::Died { side: s, pair };
        match readable(&self.sides[s].done, timeout, stop) {
            Ok(true) => {}
            Ok(false) if stop() => return Err(Fault::Stopped),
            Ok(false) => return Err(Fault::Hung { side: s, pair, waited: start.elapsed() }),
            Err(_) => return Err(died),
        }
        let mut b = [0u8];
        match self.sides[s].done.read(&mut b) {
            Ok(0) | Err(_) => Err(died),
            Ok(_) if b[0] == want => Ok(()),
            Ok(_) => Err(Fault::Garbled { side: s, byte: b[0] }),
        }
    }

    /// Hands side `s` one byte.
    fn send(&mut self, s: usize, pair: Option<u32>, byte: u8) -> Result<(), Fault> {
        self.sides[s].go.write_all(&[byte]).map_err(|_| Fault::Died { side: s, pair })
    }

    /// Takes sets of samples as `pace` says: waits for every side to be
    /// ready, then has each set's sides sample one after another, in an
    /// order shuffled from `seed` (each side first about as often as the
    /// others), and ends every side's loop. `stop` is polled while waiting
    /// (a stop request ends the set with [`Fault::Stopped`]). On a fault
    /// the other sides are told to stop too.
    pub fn run(&mut self, pace: Pace, seed: u64, stop: &dyn Fn() -> bool) -> Result<Schedule, Fault> {
        let out = self.sets(pace, seed, stop);
        // Every loop ends, whatever happened (a dead side's pipe refuses: fine).
        for side in &mut self.sides {
            let _ = side.go.write_all(&[STOP]);
        }
        out
    }

    fn sets(&mut self, pace: Pace, seed: u64, stop: &dyn Fn() -> bool) -> Result<Schedule, Fault> {
        for s in 0..self.sides.len() {
            self.answer(s, None, self.ready_timeout, READY, stop)?;
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6C6F_636B_7374_6570);
        let mut order = Vec::new();
        let start = Instant::now();
        let mut last = Duration::ZERO;
        for p in 0..pace.max {
            if pace.budget.is_zero() && p >= pace.min {
                break;
            }
            if p > 0 && !pace.budget.is_zero() {
                let fit = u32::try_from(pace.budget.as_nanos() / last.as_nanos().max(1)).unwrap_or(u32::MAX);
                if p >= pace.min.min(fit).max(1) && start.elapsed() + last > pace.budget {
                    break;
                }
            }
            let set_start = Instant::now();
            if stop() {
                return Err(Fault::Stopped);
            }
            let mut set: Vec<u8> = (0..self.sides.len() as u8).collect();
            set.shuffle(&mut rng);
            for &s in &set {
                self.send(s as usize, Some(p), GO)?;
                self.answer(s as usize, Some(p), self.timeout, DONE, stop)?;
            }
            order.push(set);
            last = set_start.elapsed();
        }
        Ok(Schedule { order })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// How a simulated side behaves.
    #[derive(Clone, Copy)]
    enum Behaviour {
        Honest,
        /// Ends (drops its ends) when asked for this pair's sample.
        DiesAt(u32),
        /// Stops answering at this pair's sample.
        HangsAt(u32),
        /// Takes this many milliseconds per sample.
        Slow(u64),
    }

    /// A side in a thread: records `(side, pair)` in `log` for each sample.
    fn side(ends: ChildEnds, who: usize, b: Behaviour, log: Arc<Mutex<Vec<usize>>>) -> std::thread::JoinHandle<u32> {
        std::thread::spawn(move || {
            let mut g = Baton::from_fds(ends.go, ends.done);
            g.ready().unwrap();
            let mut n = 0;
            while g.wait().unwrap_or(false) {
                match b {
                    Behaviour::DiesAt(p) if p == n => return n,
                    Behaviour::HangsAt(p) if p == n => {
                        std::thread::sleep(Duration::from_millis(600));
                        return n;
                    }
                    Behaviour::Slow(ms) => std::thread::sleep(Duration::from_millis(ms)),
                    _ => {}
                }
                log.lock().unwrap().push(who);
                n += 1;
                if g.done().is_err() {
                    break;
                }
            }
            n
        })
    }

    fn pair(a: Behaviour, b: Behaviour, pairs: u32) -> (Result<Schedule, Fault>, Vec<usize>, [u32; 2], Duration) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (sa, ea) = channel().unwrap();
        let (sb, eb) = channel().unwrap();
        let ta = side(ea, 0, a, log.clone());
        let tb = side(eb, 1, b, log.clone());
        let mut c = Coordinator::new(vec![sa, sb], Duration::from_millis(200), Duration::from_secs(5));
        let start = Instant::now();
        let out = c.run(Pace { min: pairs, max: pairs, budget: Duration::ZERO }, 7, &|| false);
        let took = start.elapsed();
        drop(c);
        let n = [ta.join().unwrap(), tb.join().unwrap()];
        let log = log.lock().unwrap().clone();
        (out, log, n, took)
    }

    #[test]
    fn each_pair_takes_one_sample_of_each_side_in_the_drawn_order() {
        let (out, log, n, _) = pair(Behaviour::Honest, Behaviour::Honest, 200);
        let s = out.unwrap();
        assert_eq!((s.order.len(), n), (200, [200, 200]));
        // The log is exactly the schedule: each set's sides in its order.
        let want: Vec<usize> = s.order.iter().flatten().map(|&i| i as usize).collect();
        assert_eq!(log, want);
        // Each side goes first about half the time, and not in a fixed pattern.
        let a_first = s.order.iter().filter(|o| o[0] == 0).count();
        assert!((70..=130).contains(&a_first), "A first in {a_first} of 200 pairs");
        assert!(s.order.windows(2).any(|w| w[0] == w[1]) && s.order.windows(2).any(|w| w[0] != w[1]));
        // The same seed draws the same order.
        assert_eq!(pair(Behaviour::Honest, Behaviour::Honest, 200).0.unwrap(), s);
    }

    #[test]
    fn the_pace_takes_the_minimum_then_sets_until_the_budget_and_never_beyond_the_maximum() {
        let run = |pace: Pace| run_with(pace, Behaviour::Honest);
        assert_eq!(run(Pace { min: 5, max: 50, budget: Duration::ZERO }), 5);
        assert_eq!(run(Pace { min: 5, max: 40, budget: Duration::from_secs(60) }), 40);
        // Sets of 2 x 40 ms against a budget of 100 ms: one fits, so one is
        // taken (a lone trial of such samples takes one), not the minimum 5;
        // against 500 ms, the minimum 5 and no more (a sixth would overrun).
        let slow = |budget_ms| run_with(Pace { min: 5, max: 50, budget: Duration::from_millis(budget_ms) }, Behaviour::Slow(40));
        assert_eq!(slow(100), 1);
        let n = slow(500);
        assert!((5..=6).contains(&n), "{n} sets");
    }

    /// How many sets two sides behaving as `b` take under `pace`.
    fn run_with(pace: Pace, b: Behaviour) -> u32 {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (sa, ea) = channel().unwrap();
        let (sb, eb) = channel().unwrap();
        let (ta, tb) = (side(ea, 0, b, log.clone()), side(eb, 1, b, log));
        let mut c = Coordinator::new(vec![sa, sb], Duration::from_secs(5), Duration::from_secs(5));
        let s = c.run(pace, 1, &|| false).unwrap();
        drop(c);
        ta.join().unwrap();
        tb.join().unwrap();
        s.order.len() as u32
    }

    #[test]
    fn a_side_that_dies_mid_pair_ends_the_pair_at_once_naming_it() {
        let (out, _, n, took) = pair(Behaviour::Honest, Behaviour::DiesAt(5), 50);
        assert_eq!(out, Err(Fault::Died { side: 1, pair: Some(5) }));
        assert!(took < Duration::from_millis(150), "took {took:?}: a death is seen at once, not at the timeout");
        // The other side was told to stop and its loop ended.
        assert!(n[0] == 5 || n[0] == 6, "A took {} samples", n[0]);
        assert_eq!(out.unwrap_err().to_string(), "side B of the lockstep set ended at sample set 6");
    }

    #[test]
    fn a_side_that_hangs_ends_the_pair_at_the_timeout_naming_it() {
        let (out, _, _, took) = pair(Behaviour::HangsAt(3), Behaviour::Honest, 50);
        match out {
            Err(Fault::Hung { side: 0, pair: Some(3), waited }) => assert!(waited >= Duration::from_millis(200)),
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_millis(550), "took {took:?}: the timeout bounds the wait");
    }

    #[test]
    fn a_side_that_never_gets_ready_or_a_stop_request_ends_the_wait() {
        let (sa, ea) = channel().unwrap();
        let (sb, _eb) = channel().unwrap();
        let _ta = side(ea, 0, Behaviour::Honest, Arc::new(Mutex::new(Vec::new())));
        let pace = Pace { min: 5, max: 5, budget: Duration::ZERO };
        let mut c = Coordinator::new(vec![sa, sb], Duration::from_millis(100), Duration::from_millis(300));
        assert!(matches!(c.run(pace, 1, &|| false), Err(Fault::Hung { side: 1, pair: None, .. })));
        let (sa, _ea) = channel().unwrap();
        let (sb, _eb) = channel().unwrap();
        let mut c = Coordinator::new(vec![sa, sb], Duration::from_secs(60), Duration::from_secs(60));
        let start = Instant::now();
        assert_eq!(c.run(pace, 1, &|| true), Err(Fault::Stopped));
        assert!(start.elapsed() < Duration::from_millis(500));
    }

    #[test]
    fn a_gate_refuses_what_its_environment_value_cannot_mean() {
        for v in ["", "3", "a,b", "0,1", "-1,5", "900,901"] {
            assert!(Baton::from_value(v).is_err(), "{v:?}");
        }
        let (_side, ends) = channel().unwrap();
        let fd = ends.go.as_raw_fd();
        assert!(Baton::from_value(&format!("{fd},{fd}")).is_err());
        let value = ends.env_value();
        // The value names the two inherited ends; the gate takes them over.
        let ChildEnds { go, done } = ends;
        let (go, done) = (go.into_raw_fd(), done.into_raw_fd());
        let g = Baton::from_value(&value).unwrap();
        assert_eq!((g.go.as_raw_fd(), g.done.as_raw_fd()), (go, done));
    }

    use std::os::fd::IntoRawFd;
}
