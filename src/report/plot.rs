//! Plots of a workload's rows as SVG text: speedup against workers with the
//! ideal line, the median against workers (per-task cost for ns/op rows), and
//! the median per pinning strategy with its 95% CI. Axes start at zero, so a
//! small overhead is not drawn as a large one. Rendering only: the runner
//! writes the files through the results directory.

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::evidence::{Row, Status};
use crate::plan::value_text;
use crate::workloads::contract::Direction;

/// A plot of one workload: its file name under `plots/` and its SVG.
pub struct Plot {
    pub file: String,
    pub svg: String,
}

/// A line of a plot: its label and (x, median, ci lo, ci hi) points.
struct Line {
    label: String,
    points: Vec<(f64, f64, f64, f64)>,
}

/// The series of a workload's ok rows with a `workers` axis, keyed by label
/// and the other axes (pin included).
fn series(rows: &[&Row]) -> Vec<Line> {
    let mut map: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == Status::Ok) {
        let (Some(k), Some(st)) = (r.cell.workers, &r.stats) else { continue };
        let mode: Vec<String> = r.cell.axis_values().into_iter().filter(|(a, _)| a != "workers").map(|(_, v)| value_text(&v)).collect();
        let label = if mode.is_empty() { r.cell.label.clone() } else { format!("{} {}", r.cell.label, mode.join(" ")) };
        map.entry(label).or_default().push((k as f64, st.work.median, st.work.ci95.lo, st.work.ci95.hi));
    }
    map.into_iter()
        .map(|(label, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line { label, points }
        })
        .filter(|l| l.points.len() >= 2)
        .collect()
}

/// Every plot the rows of one workload give (none when they do not scale
/// over workers or strategies).
pub fn plots(workload: &str, rows: &[&Row]) -> Vec<Plot> {
    let mut out = Vec::new();
    let Some(first) = rows.iter().find(|r| r.status == Status::Ok) else { return out };
    let (unit, dir) = (first.unit, first.direction);
    let lines = series(rows);
    if !lines.is_empty() {
        let speedups: Vec<Line> = lines
            .iter()
            .filter_map(|l| {
                let base = l.points.iter().find(|p| p.0 == 1.0)?;
                let points = l
                    .points
                    .iter()
                    .map(|p| {
                        let s = match dir {
                            Direction::LowerIsBetter => base.1 / p.1,
                            Direction::HigherIsBetter => p.1 / base.1,
                        };
                        (p.0, s, s, s)
                    })
                    .collect();
                Some(Line { label: l.label.clone(), points })
            })
            .collect();
        if !speedups.is_empty() {
            let max_k = speedups.iter().flat_map(|l| &l.points).map(|p| p.0).fold(1.0, f64::max);
            let ideal = Line { label: "ideal".into(), points: vec![(0.0, 0.0, 0.0, 0.0), (max_k, max_k, max_k, max_k)] };
            out.push(Plot {
                file: format!("{workload}-speedup.svg"),
                svg: line_chart(&format!("{workload}: speedup over 1 worker"), "workers", "speedup (x)", &speedups, Some(&ideal)),
            });
        }
        let cost_title =
            if unit.as_str() == "ns/op" { format!("{workload}: cost per operation") } else { format!("{workload}: median by workers") };
        out.push(Plot { file: format!("{workload}-median.svg"), svg: line_chart(&cost_title, "workers", unit.as_str(), &lines, None) });
    }
    if let Some(svg) = strategies_chart(workload, rows) {
        out.push(Plot { file: format!("{workload}-strategies.svg"), svg });
    }
    out
}

const SIZE: (u32, u32) = (720, 440);

/// Distinct colours that read on white (no yellow).
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(255, 127, 14),
];

/// How the x axis reads.
enum XAxis<'a> {
    /// Worker counts: integer ticks only.
    Workers,
    /// Categories at 1, 2, ...: their names as ticks, points not joined.
    Categories(&'a [String]),
}

/// Lines with points and CI whiskers on zero-based axes.
fn line_chart(title: &str, x_desc: &str, y_desc: &str, lines: &[Line], ideal: Option<&Line>) -> String {
    chart(title, x_desc, y_desc, lines, ideal, XAxis::Workers)
}

fn chart(title: &str, x_desc: &str, y_desc: &str, lines: &[Line], ideal: Option<&Line>, x: XAxis<'_>) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = draw_lines(&root, title, x_desc, y_desc, lines, ideal, &x);
        let _ = root.present();
    }
    svg
}

fn draw_lines(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    ideal: Option<&Line>,
    x: &XAxis<'_>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let all = lines.iter().chain(ideal).flat_map(|l| &l.points);
    let x_max = match x {
        XAxis::Workers => all.clone().map(|p| p.0).fold(1.0, f64::max) * 1.05,
        XAxis::Categories(names) => names.len() as f64 + 0.5,
    };
    let y_max = all.map(|p| p.3.max(p.1)).fold(0.0, f64::max).max(f64::MIN_POSITIVE) * 1.1;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    let x_label = |v: &f64| -> String {
        if v.fract() != 0.0 {
            return String::new();
        }
        match x {
            XAxis::Workers => format!("{v:.0}"),
            XAxis::Categories(names) => names.get((*v as usize).wrapping_sub(1)).cloned().unwrap_or_default(),
        }
    };
    let x_ticks = match x {
        XAxis::Workers => (x_max.ceil() as usize + 1).min(17),
        XAxis::Categories(names) => names.len() * 2 + 2,
    };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(x_ticks)
        .x_label_formatter(&x_label)
        .y_label_formatter(&|v| super::format::number(*v))
        .draw()?;
    let joined = matches!(x, XAxis::Workers);
    if let Some(ideal) = ideal {
        chart
            .draw_series(LineSeries::new(ideal.points.iter().map(|p| (p.0, p.1)), BLACK.mix(0.4).stroke_width(1)))?
            .label("ideal")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    }
    for (i, l) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let series = if joined { l.points.iter().map(|p| (p.0, p.1)).collect() } else { Vec::new() };
        chart
            .draw_series(LineSeries::new(series, color.stroke_width(2)))?
            .label(l.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(l.points.iter().map(|p| Circle::new((p.0, p.1), 3, color.filled())))?;
        chart.draw_series(l.points.iter().filter(|p| p.2 != p.3).map(|p| PathElement::new(vec![(p.0, p.2), (p.0, p.3)], color)))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    Ok(())
}

/// The median per pinning strategy, with its CI, when the rows have a `pin`
/// axis with more than one strategy: one chart per worker count and mode.
fn strategies_chart(workload: &str, rows: &[&Row]) -> Option<String> {
    let ok: Vec<&&Row> = rows.iter().filter(|r| r.status == Status::Ok && r.cell.axes.iter().any(|a| a == "pin")).collect();
    let strategies: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in &ok {
            let s = r.cell.placement.pin.as_str().to_string();
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v
    };
    if strategies.len() < 2 {
        return None;
    }
    // One line per (label, other axes, workers): x = strategy index.
    let mut map: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in &ok {
        let Some(st) = &r.stats else { continue };
        let mode: Vec<String> =
            r.cell.axis_values().into_iter().filter(|(a, _)| a != "pin").map(|(a, v)| format!("{a}={}", value_text(&v))).collect();
        let x = strategies.iter().position(|s| s == r.cell.placement.pin.as_str()).unwrap_or(0) as f64 + 1.0;
        map.entry(format!("{} {}", r.cell.label, mode.join(" "))).or_default().push((x, st.work.median, st.work.ci95.lo, st.work.ci95.hi));
    }
    let lines: Vec<Line> = map.into_iter().map(|(label, points)| Line { label, points }).collect();
    let unit = ok[0].unit.as_str();
    Some(chart(&format!("{workload}: median by pinning strategy"), "pinning strategy", unit, &lines, None, XAxis::Categories(&strategies)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_labels_and_zero_based_axes() {
        let lines = vec![Line { label: "box <rayon>".into(), points: vec![(1.0, 100.0, 95.0, 105.0), (2.0, 52.0, 50.0, 55.0)] }];
        let svg = line_chart("t: x", "workers", "ns", &lines, None);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(svg.contains("box &lt;rayon&gt;"), "labels are escaped");
        assert!(svg.contains(">\n0\n<") || svg.contains(">0<") || svg.contains(">\n0.0\n<"), "the y axis starts at zero");
    }
}
