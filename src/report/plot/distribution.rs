//! The distribution of a workload's samples: one box per ok row (quartiles
//! of the timed samples, the median marked, whiskers to the farthest timed
//! sample within 1.5 IQR of the box), every timed sample drawn as a dot beside
//! it, and the warmup samples drawn apart as crosses (kept in the record, not
//! in the statistics). The axis starts at zero, or is logarithmic where the
//! samples span more than `axis::LOG_SPAN` times.

use plotters::prelude::*;

use super::{
    Area, COLORS, DrawErr, MAX_CATEGORIES, Plot, SIZE, axis, category_axis, draw_x_labels, frame, headroom, label_font, legend, svg_of,
};
use crate::evidence::Row;
use crate::model::{Status, Unit, value_text};
use crate::stats::quantile;

/// The samples of one row, in the row's unit.
pub struct Samples {
    /// The row's name on the x axis.
    pub name: String,
    /// Timed samples (the ones the statistics use).
    pub timed: Vec<f64>,
    /// Warmup samples.
    pub warmup: Vec<f64>,
}

/// The colour of warmup samples (distinct from the timed ones).
const WARMUP: RGBColor = RGBColor(255, 127, 14);

/// The distribution figure of a workload, when an ok row has timed samples
/// (and there are at most [`MAX_CATEGORIES`] such rows).
pub fn plot(workload: &str, rows: &[&Row]) -> Option<Plot> {
    let ok: Vec<&Row> = rows.iter().copied().filter(|r| r.status == Status::Ok && r.samples.iter().any(|s| !s.warmup)).collect();
    if ok.len() > MAX_CATEGORIES {
        return None;
    }
    let first = ok.first()?;
    // Name each row by the axis values that differ between the rows (the
    // axes in the order first seen; each checked once over the rows).
    let mut axes: Vec<(&String, &serde_json::Value)> = Vec::new();
    for r in &ok {
        for (a, v) in r.cell.axes.iter().filter_map(|a| Some((a, r.cell.params.get(a)?))) {
            if !axes.iter().any(|(seen, _)| *seen == a) {
                axes.push((a, v));
            }
        }
    }
    let varying: Vec<String> =
        axes.into_iter().filter(|(a, v)| ok.iter().any(|o| o.cell.params.get(*a) != Some(*v))).map(|(a, _)| a.clone()).collect();
    let labels_differ = ok.iter().any(|r| r.cell.label != first.cell.label);
    let dists: Vec<Samples> = ok
        .iter()
        .map(|r| {
            let mut parts: Vec<String> = Vec::new();
            if labels_differ || varying.is_empty() {
                parts.push(r.cell.label.clone());
            }
            parts.extend(varying.iter().filter_map(|a| r.cell.params.get(a).map(value_text)));
            Samples {
                name: parts.join(" "),
                timed: r.samples.iter().filter(|s| !s.warmup).map(|s| s.value).collect(),
                warmup: r.samples.iter().filter(|s| s.warmup).map(|s| s.value).collect(),
            }
        })
        .collect();
    let x_desc = if varying.is_empty() { "system".to_string() } else { varying.join(", ") };
    let title = format!("{workload}: samples per row");
    let svg = chart(&title, &x_desc, first.unit.as_str(), &dists);
    Some(Plot { file: super::file_name(workload, "samples"), title, svg })
}

/// Box, dots and warmup crosses of each row, on a value axis (from zero,
/// or logarithmic over a wide span; ticks in the scaled unit `y_desc`
/// names, e.g. `ns`); the rows' names wrap under their boxes, or turn,
/// never overlapping.
pub fn chart(title: &str, x_desc: &str, y_desc: &str, dists: &[Samples]) -> String {
    let names: Vec<String> = dists.iter().map(|d| d.name.clone()).collect();
    let (slot, labels) = axis::category_labels(&names, 70.0, 2400.0);
    let width = (160.0 + dists.len() as f64 * slot).clamp(SIZE.0 as f64, 2600.0) as u32;
    svg_of((width, SIZE.1 + 40 + labels.height()), |root| draw(root, title, x_desc, y_desc, dists, &labels))
}

/// Low whisker, first quartile, median, third quartile, high whisker.
type Five = (f64, f64, f64, f64, f64);

/// Quartiles and Tukey whiskers of `xs` (not empty).
fn five(xs: &[f64]) -> Five {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let (q1, m, q3) = (quantile(&s, 0.25), quantile(&s, 0.5), quantile(&s, 0.75));
    let iqr = q3 - q1;
    let lo = s.iter().copied().find(|&x| x >= q1 - 1.5 * iqr).unwrap_or(q1);
    let hi = s.iter().rev().copied().find(|&x| x <= q3 + 1.5 * iqr).unwrap_or(q3);
    (lo, q1, m, q3, hi)
}

/// A fixed spread of the dots of a box, so that equal values stay visible
/// and the same samples always give the same picture.
fn jitter(k: usize) -> f64 {
    ((k as f64 * 0.618_033_988_7).fract() - 0.5) * 0.16
}

fn draw(root: &Area<'_>, title: &str, x_desc: &str, y_desc: &str, dists: &[Samples], labels: &axis::XLabels) -> Result<(), DrawErr> {
    let unit = Unit::from_name(y_desc);
    let (_, h) = root.dim_in_pixel();
    let x_area = 20 + axis::LINE_PX + labels.height();
    let room = headroom(4, h as f64 - x_area as f64 - 60.0);
    let y = axis::ValueAxis::for_values(dists.iter().flat_map(|d| d.timed.iter().chain(&d.warmup)).copied(), unit, room);
    let mut chart = frame(root, title, x_area, &y).build_cartesian_2d(category_axis(dists.len()), y.clone())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .label_style(label_font())
        .axis_desc_style(label_font())
        .x_desc(x_desc)
        .y_desc(y.desc(if unit.is_some() { "sample" } else { y_desc }))
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|c| y.label(*c))
        .draw()?;
    let at: Vec<(i32, i32)> = (1..=dists.len()).map(|i| chart.backend_coord(&(i as f64, y.bottom()))).collect();
    draw_x_labels(root, labels, &at)?;
    let color = COLORS[0];
    let boxes: Vec<(f64, Five)> = dists
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.timed.is_empty())
        .map(|(i, d)| {
            let (lo, q1, m, q3, hi) = five(&d.timed);
            (i as f64 + 1.0, (y.pos(lo), y.pos(q1), y.pos(m), y.pos(q3), y.pos(hi)))
        })
        .collect();
    let half = 0.2;
    chart
        .draw_series(
            boxes.iter().map(|&(x, (_, q1, _, q3, _))| Rectangle::new([(x - half, q1), (x + half, q3)], color.mix(0.15).filled())),
        )?
        .label("timed samples: box = quartiles, whiskers to 1.5 IQR")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.mix(0.3).filled()));
    chart
        .draw_series(boxes.iter().map(|&(x, (_, q1, _, q3, _))| Rectangle::new([(x - half, q1), (x + half, q3)], color.stroke_width(1))))?;
    chart
        .draw_series(boxes.iter().map(|&(x, (_, _, m, _, _))| PathElement::new(vec![(x - half, m), (x + half, m)], BLACK.stroke_width(2))))?
        .label("median")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.stroke_width(2)));
    chart.draw_series(boxes.iter().flat_map(|&(x, (lo, q1, _, q3, hi))| {
        [
            PathElement::new(vec![(x, q3), (x, hi)], color.stroke_width(1)),
            PathElement::new(vec![(x, q1), (x, lo)], color.stroke_width(1)),
            PathElement::new(vec![(x - half / 2.0, hi), (x + half / 2.0, hi)], color.stroke_width(1)),
            PathElement::new(vec![(x - half / 2.0, lo), (x + half / 2.0, lo)], color.stroke_width(1)),
        ]
    }))?;
    let dots = dists
        .iter()
        .enumerate()
        .flat_map(|(i, d)| d.timed.iter().enumerate().map(move |(k, &v)| (i as f64 + 1.0 + jitter(k), v)))
        .map(|(x, v)| (x, y.pos(v)));
    chart
        .draw_series(dots.map(|p| Circle::new(p, 2, color.mix(0.7).filled())))?
        .label("timed sample")
        .legend(move |(x, y)| Circle::new((x + 8, y), 3, color.mix(0.7).filled()));
    let warm = dists
        .iter()
        .enumerate()
        .flat_map(|(i, d)| d.warmup.iter().enumerate().map(move |(k, &v)| (i as f64 + 1.0 + half + 0.1 + jitter(k) / 4.0, v)))
        .map(|(x, v)| (x, y.pos(v)));
    chart
        .draw_series(warm.map(|p| Cross::new(p, 4, WARMUP.stroke_width(2))))?
        .label("warmup sample (kept, not in the statistics)")
        .legend(|(x, y)| Cross::new((x + 8, y), 4, WARMUP.stroke_width(2)));
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_numbers_fence_an_outlier_out_of_the_whiskers() {
        let (lo, q1, m, q3, hi) = five(&[10.0, 11.0, 12.0, 13.0, 100.0]);
        assert_eq!((q1, m, q3), (11.0, 12.0, 13.0));
        assert_eq!(lo, 10.0);
        assert_eq!(hi, 13.0, "100 lies beyond q3 + 1.5 IQR = 16");
    }
}
