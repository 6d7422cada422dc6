//! `proofbench env`: the machine record (envelope) of this machine, as a
//! document (the terminal's table) or as JSON.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::EnvArgs;
use crate::envelope::Envelope;
use crate::report::terminal::Out;
use crate::text::document::{Align, Block, Document, Line, Table, terminal};

/// `proofbench env`.
pub fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let envelope = Envelope::collect(Path::new("/"), std::env::args().collect(), 0);
    if args.json {
        Out::new().print(&format!("{}\n", serde_json::to_string_pretty(&envelope)?))?;
    } else {
        Out::new().print(&terminal::render(&document(&envelope).blocks))?;
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
