//! text: the pieces every output shares: numbers formatted for tables,
//! markdown escaping, one table writer, and the document model (typed
//! blocks and inline nodes) with its terminal, markdown and HTML renderers. It knows nothing of runs,
//! rows or comparisons, so that `report`, `compare`, `history` and the
//! commands can all use it without pointing at each other.

pub mod document;
pub mod format;
pub mod markdown;
pub mod table;
