//! Bars of the median with its 95% CI whisker per value of a categorical axis
//! (pinning strategy, allocator, engine, runtime, pattern, ...): the rows of
//! one bar group share every other axis, so the bars differ in that axis
//! alone. One chart per categorical axis that has at least two values for
//! some group; the `pin` axis keeps its file name `<workload>-strategies.svg`.

use std::collections::{BTreeMap, HashMap};

use plotters::prelude::*;

use super::{Area, COLORS, DrawErr, MAX_CATEGORIES, Plot, SIZE, category_axis, category_name, frame, legend, svg_of, y_top};
use crate::evidence::Row;
use crate::model::{Status, value_text};

/// A series of bars: its legend label and (category index, median, CI lo,
/// CI hi) per category it has.
pub struct Bars {
    /// The legend entry (system label and the other axes).
    pub label: String,
    /// One bar per category the series has a row for.
    pub bars: Vec<(usize, f64, f64, f64)>,
}

/// The value of `axis` in a row as text (the pinning strategy as placed for `pin`).
fn axis_value(r: &Row, axis: &str) -> Option<String> {
    if axis == "pin" {
        return Some(r.cell.placement.pin.as_str().to_string());
    }
    r.cell.params.get(axis).map(value_text)
}

/// Whether an axis is categorical in these rows: every value is text.
fn is_categorical(rows: &[&Row], axis: &str) -> bool {
    axis == "pin" || rows.iter().filter_map(|r| r.cell.params.get(axis)).all(|v| v.is_string())
}

/// One chart per categorical axis of the workload's ok rows (of at most
/// [`MAX_CATEGORIES`] values).
pub fn plots(workload: &str, rows: &[&Row]) -> Vec<Plot> {
    let ok: Vec<&Row> = rows.iter().copied().filter(|r| r.status == Status::Ok && r.stats.is_some()).collect();
    let mut axes: Vec<&str> = Vec::new();
    for r in &ok {
        for a in &r.cell.axes {
            if a != "workers" && !axes.contains(&a.as_str()) {
                axes.push(a);
            }
        }
    }
    let mut out = Vec::new();
    for axis in axes {
        let with: Vec<&Row> = ok.iter().copied().filter(|r| r.cell.axes.iter().any(|a| a == axis)).collect();
        if !is_categorical(&with, axis) {
            continue;
        }
        let mut categories: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut groups: BTreeMap<String, Vec<(usize, f64, f64, f64)>> = BTreeMap::new();
        for r in &with {
            let (Some(v), Some((m, lo, hi))) = (axis_value(r, axis), r.median_with_bounds()) else { continue };
            let i = *index.entry(v).or_insert_with_key(|v| {
                categories.push(v.clone());
                categories.len() - 1
            });
            let others: Vec<String> =
                r.cell.axis_values().into_iter().filter(|(a, _)| a != axis).map(|(a, v)| format!("{a}={}", value_text(&v))).collect();
            let key = if others.is_empty() { r.cell.label.clone() } else { format!("{} {}", r.cell.label, others.join(" ")) };
            groups.entry(key).or_default().push((i, m, lo, hi));
        }
        if categories.len() < 2 || categories.len() > MAX_CATEGORIES || groups.values().all(|g| g.len() < 2) {
            continue;
        }
        let series: Vec<Bars> = groups.into_iter().map(|(label, bars)| Bars { label, bars }).collect();
        let (file, title, x_desc) = if axis == "pin" {
            (super::file_name(workload, "strategies"), format!("{workload}: median by pinning strategy"), "pinning strategy".to_string())
        } else {
            (super::file_name(workload, &format!("by-{}", file_part(axis))), format!("{workload}: median by {axis}"), axis.to_string())
        };
        let svg = chart(&title, &x_desc, with[0].unit.as_str(), &categories, &series);
        out.push(Plot { file, title, svg });
    }
    out
}

/// An axis name as a piece of a file name.
fn file_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}

/// Grouped bars on a zero-based axis: per category, one bar per series, each
/// with its CI whisker.
pub fn chart(title: &str, x_desc: &str, y_desc: &str, categories: &[String], series: &[Bars]) -> String {
    let width = (160 + categories.len() * series.len().max(1) * 36).clamp(SIZE.0 as usize, 1600) as u32;
    svg_of((width, SIZE.1), |root| draw(root, title, x_desc, y_desc, categories, series))
}

fn draw(root: &Area<'_>, title: &str, x_desc: &str, y_desc: &str, categories: &[String], series: &[Bars]) -> Result<(), DrawErr> {
    let data_max = series.iter().flat_map(|s| &s.bars).map(|b| b.1.max(b.3)).fold(0.0, f64::max);
    let y_max = y_top(data_max, series.len() + 1);
    let mut chart = frame(root, title).build_cartesian_2d(category_axis(categories.len()), 0.0..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| category_name(categories, *v))
        .y_label_formatter(&|v| crate::text::format::number(*v))
        .draw()?;
    let width = 0.8 / series.len().max(1) as f64;
    for (j, s) in series.iter().enumerate() {
        let color = COLORS[j % COLORS.len()];
        let left = move |i: usize| i as f64 + 1.0 - 0.4 + j as f64 * width;
        chart
            .draw_series(s.bars.iter().map(|&(i, m, _, _)| {
                Rectangle::new([(left(i) + width * 0.08, 0.0), (left(i) + width * 0.92, m)], color.mix(0.8).filled())
            }))?
            .label(s.label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.mix(0.8).filled()));
        let cap = width * 0.2;
        chart.draw_series(s.bars.iter().filter(|b| b.2 != b.3).flat_map(|&(i, _, lo, hi)| {
            let c = left(i) + width / 2.0;
            [
                PathElement::new(vec![(c, lo), (c, hi)], BLACK.stroke_width(1)),
                PathElement::new(vec![(c - cap, lo), (c + cap, lo)], BLACK.stroke_width(1)),
                PathElement::new(vec![(c - cap, hi), (c + cap, hi)], BLACK.stroke_width(1)),
            ]
        }))?;
    }
    chart
        .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
        .label("95% CI of the median")
        .legend(|(x, y)| PathElement::new(vec![(x + 8, y - 6), (x + 8, y + 6)], BLACK.stroke_width(1)));
    legend(&mut chart)
}
