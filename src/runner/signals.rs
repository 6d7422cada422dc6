//! SIGINT/SIGTERM/SIGHUP handling for a run: the first signal stops the
//! current cell (its worker is killed), keeps every finished row and lets
//! the run write its report. Workers run in their own process groups, so a
//! terminal's Ctrl-C reaches only this process, which decides what to do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, OnceLock};

use super::spawn::Event;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static WAKER: Mutex<Option<Sender<Event>>> = Mutex::new(None);
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Installs the handler once per process.
pub fn install() -> anyhow::Result<()> {
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                INTERRUPTED.store(true, Ordering::SeqCst);
                if let Ok(w) = WAKER.lock()
                    && let Some(tx) = w.as_ref()
                {
                    let _ = tx.send(Event::Interrupt);
                }
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| anyhow::anyhow!("installing the SIGINT handler: {e}"))
}

/// Whether a stop signal arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Where to send the interrupt while a worker runs (`None` between cells).
pub fn set_waker(tx: Option<Sender<Event>>) {
    if let Ok(mut w) = WAKER.lock() {
        *w = tx;
    }
}
