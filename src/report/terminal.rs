//! Printing to stdout that survives a closed pipe (`proofbench list | head`):
//! once stdout is gone, further output is dropped instead of panicking.

use std::cell::Cell;
use std::io::{self, Write};

#[derive(Default)]
pub struct Out {
    broken: Cell<bool>,
}

impl Out {
    pub fn new() -> Out {
        Out::default()
    }

    /// Writes `text` to stdout and flushes it. Errors other than a broken
    /// pipe are returned.
    pub fn print(&self, text: &str) -> io::Result<()> {
        if self.broken.get() {
            return Ok(());
        }
        let mut out = io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.broken.set(true);
                Ok(())
            }
            other => other,
        }
    }
}
