//! text: the output layer, below every stage that prints. It holds the
//! pieces every output shares: numbers formatted for tables, markdown
//! escaping, one table writer, CSV fields ([`csv`]), the document model
//! (typed blocks and inline nodes) with its terminal, markdown and HTML
//! renderers, the terminal sink through which text reaches stdout and
//! stderr ([`out`]), and the plot primitives and the charts drawn from
//! plain data ([`plot`]). It knows nothing of runs, rows or comparisons,
//! so that `report`, `compare`, `fleet`, `history`, `claims` and the
//! commands can all use it without pointing at each other.

pub mod csv;
pub mod document;
pub mod format;
pub mod markdown;
pub mod out;
pub mod plot;
pub mod table;
