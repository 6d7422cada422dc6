//! SIGINT/SIGTERM/SIGHUP handling for a run: the first signal stops the
//! current cell (its worker is killed), keeps every finished row and lets
//! the run write its report. Workers run in their own process groups, so a
//! terminal's Ctrl-C reaches only this process, which decides what to do.
//!
//! It knows nothing of what waits for a signal: whoever waits (the worker
//! loop of `spawn`) registers a waker, a function to call when one arrives.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// What a stop signal calls to wake whoever waits (`spawn`'s worker loop).
pub type Waker = Box<dyn Fn() + Send>;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The wakers of the threads waiting now, by thread (a lockstep set's
/// workers are waited for by one thread each).
static WAKER: Mutex<Vec<(std::thread::ThreadId, Waker)>> = Mutex::new(Vec::new());
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Installs the handler once per process.
pub fn install() -> anyhow::Result<()> {
    INSTALLED
        .get_or_init(|| ctrlc::set_handler(stop).map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| anyhow::anyhow!("installing the SIGINT handler: {e}"))
}

/// Stops the run as a stop signal does: what the handler calls, and what
/// a launched run calls when the launching side closes its stdin or its
/// stream cannot be written.
pub fn stop() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    if let Ok(w) = WAKER.lock() {
        for (_, wake) in w.iter() {
            wake();
        }
    }
}

/// Whether a stop signal arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// What to call on a stop signal while this thread waits for a worker
/// (`None` when it no longer waits). Each thread has its own.
pub fn set_waker(wake: Option<Waker>) {
    let me = std::thread::current().id();
    if let Ok(mut w) = WAKER.lock() {
        w.retain(|(t, _)| *t != me);
        if let Some(wake) = wake {
            w.push((me, wake));
        }
    }
}
