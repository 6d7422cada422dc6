//! model: the shared vocabulary of every stage: the profile, pinning
//! strategies and CPU classes, units and directions, row statuses, enums of
//! named values (`named_enum!`), parameters, the cell a worker measures (with the variant and the command
//! workload it may carry), readings of the machine, the run's default seed
//! and clock text, usage errors, the export formats and when output is
//! coloured.
//!
//! It depends on nothing else in the crate, so that every stage can point
//! down to it and none has to point up to another stage for a word. It
//! holds data and the small pure functions that belong to that data; it
//! never reads the machine, measures or writes files.

pub mod cell;
pub mod color;
pub mod command;
pub mod error;
pub mod export;
pub mod file_name;
pub mod isa;
pub mod names;
pub mod params;
pub mod placement;
pub mod profile;
pub mod reading;
pub mod run;
pub mod settings;
pub mod status;
pub mod unit;
pub mod variant;

pub use cell::{CELL_SCHEMA, Cell, MeasureSpec, TrialPlan};
pub use color::ColorWhen;
pub use error::{Stopped, UsageError};
pub use export::ExportFormat;
pub use names::Named;
pub(crate) use names::named_enum;
pub use params::{Params, value_text};
pub use placement::{CpuClass, PinStrategy};
pub use profile::{MIN_TRIAL_BUDGET_MS, Profile};
pub use reading::Reading;
pub use run::{DEFAULT_SEED, PerfPass};
pub use status::{SkipKind, Status};
pub use unit::{Direction, TableShape, Unit, Work};
pub use variant::{SettingKey, Variant};
