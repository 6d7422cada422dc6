//! The cell and what it carries live in `model` (`crate::model::cell`); this
//! path is kept for code written before it.

pub use crate::model::cell::{CELL_SCHEMA, Cell, MeasureSpec, TrialPlan};
pub use crate::model::params::value_text;
pub use crate::model::placement::{CpuClass, Placement};
pub use crate::model::profile::ProfileDefaults;
