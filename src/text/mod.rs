//! text: the plain-text pieces every output shares, numbers formatted for
//! tables, markdown escaping and one table writer. It knows nothing of runs,
//! rows or comparisons, so that `report`, `compare`, `history` and the
//! commands can all use it without pointing at each other.

pub mod format;
pub mod markdown;
pub mod table;
