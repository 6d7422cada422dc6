//! When the terminal output is coloured (`run --color`, `noise --color`);
//! the colours themselves are the terminal renderer's.

/// When to colour what is printed on stdout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// When stdout is a terminal, `NO_COLOR` is unset or empty and `TERM`
    /// is not `dumb`.
    #[default]
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}
