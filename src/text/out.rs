//! Printing to the terminal: the one place text reaches stdout ([`Out`])
//! and stderr ([`to_stderr`]) from proofbench's own process. Stdout survives
//! a closed pipe (`proofbench list | head`): once it is gone, further output
//! is dropped instead of panicking. Neither passes a control character other
//! than newline and tab (ESC, the rest of C0, DEL, C1): a record's text (a
//! summary, a reason, a label, an axis value, a command's output) could hold
//! a terminal escape that recolours, retitles or rewrites the user's
//! terminal; each becomes U+FFFD, so what was there still shows. Colour
//! is added only by the terminal renderer, after it cleaned each piece of
//! text ([`Styled`]), and printed by [`Out::print_styled`], which cleans
//! nothing again. It is part of the output layer (`text`), so that every
//! stage that prints (the runner, history, bisect, the commands) does so
//! without using `report`.

use std::cell::Cell;
use std::io::{self, IsTerminal, Write};

pub use crate::model::ColorWhen;
pub use crate::text::document::terminal::{Style, Styled, clean};

/// The style of stdout under `when`: colour for `always`; for `auto`,
/// colour when `stdout_is_terminal`, `no_color` (the value of `NO_COLOR`)
/// is absent or empty, and `term` (the value of `TERM`) is not `dumb`.
/// Tables fit [`DEFAULT_WIDTH`] columns.
pub fn style_for(when: ColorWhen, stdout_is_terminal: bool, no_color: Option<&str>, term: Option<&str>) -> Style {
    let color = match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => stdout_is_terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb"),
    };
    Style { color, width: Some(DEFAULT_WIDTH) }
}

/// The width tables fit when the terminal's is unknown (a pipe, a file).
pub const DEFAULT_WIDTH: usize = 100;

/// The width tables fit: `columns` (the value of `COLUMNS`) when it is a
/// number of at least 20, else the terminal's (`tty`), else
/// [`DEFAULT_WIDTH`].
pub fn width_for(columns: Option<&str>, tty: Option<usize>) -> usize {
    columns.and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c >= 20).or(tty.filter(|&c| c >= 20)).unwrap_or(DEFAULT_WIDTH)
}

/// [`style_for`] this process's stdout and environment, tables fitting
/// [`width_for`] its terminal.
pub fn stdout_style(when: ColorWhen) -> Style {
    let var = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
    let tty = terminal_size::terminal_size_of(io::stdout()).map(|(w, _)| usize::from(w.0));
    let style = style_for(when, io::stdout().is_terminal(), var("NO_COLOR").as_deref(), var("TERM").as_deref());
    Style { width: Some(width_for(var("COLUMNS").as_deref(), tty)), ..style }
}

/// Writes `text`, [`clean`]ed, to stderr (on a terminal, its lines
/// wrapped within its width): the warnings, errors and
/// progress lines that name a row, a label or a path; with the run's
/// progress bar cleared first and redrawn after ([`around_bar`]). A failed
/// write is ignored: there is nowhere left to report it.
pub fn to_stderr(text: &str) {
    // On a terminal, long lines wrap at their spaces within its width.
    let width = io::stderr().is_terminal().then(|| terminal_size::terminal_size_of(io::stderr())).flatten();
    let text = match width {
        Some((w, _)) => crate::text::document::terminal::wrap_prose(&clean(text), usize::from(w.0).max(20)),
        None => clean(text).into_owned(),
    };
    around_bar(|| {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    });
}

/// The progress bar on stderr while a run has one up.
static BAR: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

thread_local! {
    /// Whether this thread is inside [`around_bar`] already (the bar's
    /// suspension is not reentrant).
    static CLEARED: Cell<bool> = const { Cell::new(false) };
}

/// Registers the run's progress bar (none when it is taken down): what is
/// printed meanwhile clears it first.
pub fn set_bar(bar: Option<indicatif::ProgressBar>) {
    *BAR.lock().unwrap_or_else(|p| p.into_inner()) = bar;
}

/// Runs `f` (which prints) with the progress bar cleared, then redraws the
/// bar: no frame is left above what `f` printed.
pub fn around_bar<R>(f: impl FnOnce() -> R) -> R {
    let bar = BAR.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match bar {
        Some(b) if !CLEARED.get() => {
            CLEARED.set(true);
            let r = b.suspend(f);
            CLEARED.set(false);
            r
        }
        _ => f(),
    }
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
        self.write(clean(text).as_bytes())
    }

    /// Writes text the terminal renderer made (cleaned piece by piece, its
    /// colour codes its own) as it is, and flushes it.
    pub fn print_styled(&self, text: &Styled) -> io::Result<()> {
        self.write(text.as_str().as_bytes())
    }

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        if self.broken.get() {
            return Ok(());
        }
        let mut out = io::stdout().lock();
        match out.write_all(bytes).and_then(|_| out.flush()) {
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
    use std::borrow::Cow;

    #[test]
    fn colour_is_on_when_asked_or_when_a_terminal_allows_it() {
        let on = |when, tty, no_color, term| style_for(when, tty, no_color, term).color;
        assert!(on(ColorWhen::Always, false, Some("1"), Some("dumb")));
        assert!(!on(ColorWhen::Never, true, None, None));
        assert!(on(ColorWhen::Auto, true, None, Some("xterm")));
        assert!(on(ColorWhen::Auto, true, Some(""), None), "an empty NO_COLOR is no request");
        assert!(!on(ColorWhen::Auto, true, Some("1"), None), "NO_COLOR");
        assert!(!on(ColorWhen::Auto, false, None, None), "a pipe or a file");
        assert!(!on(ColorWhen::Auto, true, None, Some("dumb")));
    }

    #[test]
    fn tables_fit_columns_else_the_terminal_else_100() {
        assert_eq!(width_for(Some("80"), Some(200)), 80);
        assert_eq!(width_for(None, Some(132)), 132);
        assert_eq!(width_for(Some("wide"), None), DEFAULT_WIDTH);
        assert_eq!(width_for(Some("3"), None), DEFAULT_WIDTH, "too narrow to be meant");
        assert_eq!(width_for(None, None), 100);
    }

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
