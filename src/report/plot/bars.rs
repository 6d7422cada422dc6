//! Bars of the median with its 95% CI whisker per value of a categorical axis
//! (pinning strategy, allocator, engine, runtime, pattern, ...): the rows of
//! one bar group share every other axis, so the bars differ in that axis
//! alone. One chart per categorical axis that has at least two values for
//! some group; the `pin` axis keeps its file name `<workload>-strategies.svg`.

use std::collections::{BTreeMap, HashMap};

use plotters::prelude::*;

use super::{
    Area, COLORS, DrawErr, MAX_CATEGORIES, Plot, SIZE, axis, category_axis, draw_x_labels, frame, headroom, label_font, legend, svg_of,
    title_text,
};
use crate::evidence::Row;
use crate::model::{Status, Unit, value_text};

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

/// Grouped bars on a value axis (from zero, or logarithmic over a wide
/// span; ticks in the scaled unit `y_desc` names, e.g. `ns/op`): per
/// category, one bar per series, each with its CI whisker. The legend
/// leaves out what every series shares (said once in the title); the
/// categories' names wrap under their bars, or turn, never overlapping.
pub fn chart(title: &str, x_desc: &str, y_desc: &str, categories: &[String], series: &[Bars]) -> String {
    let min_slot = (series.len().max(1) * 36).max(60) as f64;
    let (slot, labels) = axis::category_labels(categories, min_slot, 2400.0);
    let width = (160.0 + categories.len() as f64 * slot).clamp(SIZE.0 as f64, 2600.0) as u32;
    svg_of((width, SIZE.1 + labels.height()), |root| draw(root, title, x_desc, y_desc, categories, series, &labels))
}

fn draw(
    root: &Area<'_>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[Bars],
    labels: &axis::XLabels,
) -> Result<(), DrawErr> {
    let unit = Unit::from_name(y_desc);
    let (shared, names) = axis::shared_words(&series.iter().map(|s| s.label.clone()).collect::<Vec<_>>());
    let (w, h) = root.dim_in_pixel();
    let x_area = 20 + axis::LINE_PX + labels.height();
    let room = headroom(series.len() + 1, h as f64 - x_area as f64 - 60.0);
    let y =
        axis::ValueAxis::for_values(series.iter().flat_map(|s| &s.bars).flat_map(|b| axis::interval_for_axis(b.1, b.2, b.3)), unit, room);
    let title = title_text(title, &shared, w);
    let mut chart = frame(root, &title, x_area, &y).build_cartesian_2d(category_axis(categories.len()), y.clone())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .label_style(label_font())
        .axis_desc_style(label_font())
        .x_desc(x_desc)
        .y_desc(y.desc(if unit.is_some() { "median" } else { y_desc }))
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|c| y.label(*c))
        .draw()?;
    let at: Vec<(i32, i32)> = (1..=categories.len()).map(|i| chart.backend_coord(&(i as f64, y.bottom()))).collect();
    draw_x_labels(root, labels, &at)?;
    let width = 0.8 / series.len().max(1) as f64;
    let base = y.bottom();
    for (j, (s, name)) in series.iter().zip(&names).enumerate() {
        let color = COLORS[j % COLORS.len()];
        let left = move |i: usize| i as f64 + 1.0 - 0.4 + j as f64 * width;
        chart
            .draw_series(s.bars.iter().map(|&(i, m, _, _)| {
                Rectangle::new([(left(i) + width * 0.08, base), (left(i) + width * 0.92, y.pos(m))], color.mix(0.8).filled())
            }))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.mix(0.8).filled()));
        let cap = width * 0.2;
        chart.draw_series(s.bars.iter().filter(|b| b.2 != b.3).flat_map(|&(i, _, lo, hi)| {
            let c = left(i) + width / 2.0;
            let (lo, hi) = (y.pos(lo), y.pos(hi));
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
