//! plot: the charts every page draws, as SVG text, and their pieces. The
//! pieces: [`canvas`] (a small SVG writer with fitted text, legends and a
//! linear or logarithmic axis), [`axis`] (the value axis, labels and sizes
//! of the plotters charts of `report::plot`), [`svg`] (makes an SVG small)
//! and [`png`] (a PNG copy of an SVG). The charts, each from plain data:
//! [`forest`] (ratios on their intervals: `compare`, `history
//! regressions`), [`heatmap`] (hosts by rows: `fleet`), [`trend`] (a row's
//! median over runs: `history show`), [`reach`] (how far a run can see:
//! the variants' section of the report) and [`ranges`] (claimed ranges
//! against the measured value: `check-claims`). What turns a stage's own
//! types into a chart's input stays with that stage (e.g.
//! `compare::forest`), so that every stage uses this module and none
//! imports another for drawing.

pub mod axis;
pub mod canvas;
pub mod forest;
pub mod heatmap;
pub mod png;
pub mod ranges;
pub mod reach;
pub mod svg;
pub mod trend;
