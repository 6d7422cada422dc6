//! `proofbench env`: the machine record (envelope) of this machine, as a
//! document (the terminal's table) or as JSON.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::EnvArgs;
use crate::envelope::Envelope;
use crate::text::document::{Align, Block, Document, Line, Table, terminal};
use crate::text::out::Out;

/// The widest `env` prints, however wide the terminal.
const MAX_WIDTH: usize = 120;

/// `proofbench env`.
pub fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let envelope = Envelope::collect(Path::new("/"), std::env::args().collect(), 0);
    if args.json {
        Out::new().print(&format!("{}\n", serde_json::to_string_pretty(&envelope)?))?;
    } else {
        let style = super::stdout_style();
        // A long value (the CPU flags) wraps within 120 columns at most.
        let style = terminal::Style { width: style.width.map(|w| w.min(MAX_WIDTH)), ..style };
        Out::new().print_styled(&terminal::render_styled(&document(&envelope).blocks, style))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The machine record as a person reads it: its summary table, the
/// frequency warning, and where the full record is.
fn document(envelope: &Envelope) -> Document {
    let mut t = Table::new(&[("Field", Align::Left), ("Value", Align::Left)]);
    for (k, v) in envelope.summary() {
        t.push(vec![k, v]);
    }
    let mut blocks = vec![Block::Table(t)];
    if let Some(w) = envelope.frequency_warning() {
        blocks.push(Block::Warning(Line::from(w)));
    }
    blocks.push(Block::paragraph(Line::from("The full record: ").code("proofbench env --json")));
    Document { title: "proofbench env".into(), blocks }
}
