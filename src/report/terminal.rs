//! Printing to the terminal: the one place text reaches stdout ([`Out`])
//! and stderr ([`to_stderr`]) from proofbench's own process. Stdout survives
//! a closed pipe (`proofbench list | head`): once it is gone, further output
//! is dropped instead of panicking. Neither passes a control character other
//! than newline and tab (ESC, the rest of C0, DEL, C1): a record's text (a
//! summary, a reason, a label, an axis value, a command's output) could hold
//! a terminal escape that recolours, retitles or rewrites the user's
//! terminal; each becomes U+FFFD, so what was there still shows.

use std::borrow::Cow;
use std::cell::Cell;
use std::io::{self, Write};

/// Whether `c` may reach a terminal as it is.
fn printable(c: char) -> bool {
    c == '\n' || c == '\t' || !c.is_control()
}

/// `text` with every control character but newline and tab replaced by
/// U+FFFD (borrowed when there is none).
pub fn clean(text: &str) -> Cow<'_, str> {
    if text.chars().all(printable) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if printable(c) { c } else { '\u{FFFD}' }).collect())
}

/// Writes `text`, [`clean`]ed, to stderr: the warnings, errors and
/// progress lines that name a row, a label or a path. A failed write is
/// ignored: there is nowhere left to report it.
pub fn to_stderr(text: &str) {
    let _ = io::stderr().lock().write_all(clean(text).as_bytes());
}

/// The first error a deferring [`Out`] met writing stdout, kept for the
/// end of the run.
static DEFERRED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

#[derive(Default)]
pub struct Out {
    broken: Cell<bool>,
    /// Keep a write error for [`deferred_error`] instead of returning it.
    defer: bool,
}

impl Out {
    pub fn new() -> Out {
        Out::default()
    }

    /// Stdout for a run's output: a write error (a full disk behind `>`)
    /// must not stop the run before its records are finished, so it is kept
    /// for [`deferred_error`], which the run reports at its end, and this
    /// `Out` prints nothing more.
    pub fn deferring() -> Out {
        Out { broken: Cell::new(false), defer: true }
    }

    /// Writes `text`, [`clean`]ed, to stdout and flushes it. Errors other
    /// than a broken pipe are returned (kept, when deferring).
    pub fn print(&self, text: &str) -> io::Result<()> {
        if self.broken.get() {
            return Ok(());
        }
        let mut out = io::stdout().lock();
        match out.write_all(clean(text).as_bytes()).and_then(|_| out.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.broken.set(true);
                Ok(())
            }
            Err(e) if self.defer => {
                self.broken.set(true);
                DEFERRED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| e.to_string());
                Ok(())
            }
            other => other,
        }
    }
}

/// The first stdout write error a deferring [`Out`] kept, taken.
pub fn deferred_error() -> Option<String> {
    DEFERRED.lock().unwrap_or_else(|p| p.into_inner()).take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_replaces_every_control_but_newline_and_tab() {
        assert!(matches!(clean("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            clean("\u{1b}[31mred\u{1b}[0m\r\u{7}\u{7f}\u{9b}2J\u{0}"),
            "\u{FFFD}[31mred\u{FFFD}[0m\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}2J\u{FFFD}"
        );
        assert_eq!(clean("é ✓ 漢"), "é ✓ 漢");
    }
}
