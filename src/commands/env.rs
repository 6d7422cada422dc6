//! `proofbench env`: the machine record (envelope) of this machine.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::EnvArgs;
use crate::envelope::Envelope;
use crate::report::terminal::Out;
use crate::text::table::{Align, Table};

/// `proofbench env`.
pub fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let envelope = Envelope::collect(Path::new("/"), std::env::args().collect(), 0);
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&envelope)?)
    } else {
        let mut t = Table::new(&[("Field", Align::Left), ("Value", Align::Left)]);
        for (k, v) in envelope.summary() {
            t.push(vec![k, v]);
        }
        let mut s = t.render();
        if let Some(w) = envelope.frequency_warning() {
            s.push_str(&format!("\nwarning: {w}\n"));
        }
        s.push_str("\nThe full record: proofbench env --json\n");
        s
    };
    Out::new().print(&text)?;
    Ok(ExitCode::SUCCESS)
}
