//! The formats `report --export` writes a stored run's rows in (the
//! renderers are in `report::export`).

/// An export format (`report --export`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
    Markdown,
    /// Bencher Metric Format JSON.
    Bmf,
}
