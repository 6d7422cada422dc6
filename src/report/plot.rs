//! Plots of a workload's rows as SVG text: speedup and parallel efficiency
//! (speedup / workers) against workers with the ideal line, the median against workers (per-task cost for ns/op rows), bars
//! of the median with its 95% CI per value of a categorical axis (pinning
//! strategy, allocator, engine, runtime, ...; [`bars`]), and the distribution
//! of every row's samples ([`distribution`]). Speedup and efficiency are
//! drawn where a series has three worker counts or more. Axes start at
//! zero, so a small overhead is not drawn as a large one; the mesh has no
//! light lines between its labelled ones. Text is XML-escaped by plotters'
//! SVG backend, and the SVG made small by [`svg::compact`]. Rendering only: the runner writes the files (SVG, and PNG through
//! [`png`]) through the results directory.

pub mod bars;
pub mod canvas;
pub mod distribution;
pub mod forest;
pub mod heatmap;
pub mod png;
pub mod ranges;
pub mod reach;
pub mod svg;
pub mod trend;

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::evidence::Row;
use crate::model::{Direction, Status, value_text};

/// A plot of one workload: its file name under `plots/` and its SVG.
pub struct Plot {
    /// The file name under `plots/` (`<workload>-<kind>.svg`).
    pub file: String,
    /// Its title, as in the caption drawn on it (unescaped text).
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// A line of a plot: its label and (x, median, ci lo, ci hi) points.
pub struct Line {
    /// The legend's name of the line.
    pub label: String,
    /// (x, median, ci lo, ci hi), in x order.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// The series of a workload's ok rows with a `workers` axis, keyed by label
/// and the other axes (pin included).
fn series(rows: &[&Row]) -> Vec<Line> {
    let mut map: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == Status::Ok) {
        let (Some(k), Some((m, lo, hi))) = (r.cell.workers, r.median_with_bounds()) else { continue };
        let mode: Vec<String> = r.cell.axis_values().into_iter().filter(|(a, _)| a != "workers").map(|(_, v)| value_text(&v)).collect();
        let label = if mode.is_empty() { r.cell.label.clone() } else { format!("{} {}", r.cell.label, mode.join(" ")) };
        map.entry(label).or_default().push((k as f64, m, lo, hi));
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
        // Over two worker counts a speedup is one number, which the scaling
        // table and the summary give: the plots of speedup and efficiency
        // are drawn from three counts on.
        let scales = lines.iter().any(|l| l.points.len() >= 3);
        let speedups: Vec<Line> = lines
            .iter()
            .filter(|_| scales)
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
            let title = format!("{workload}: speedup over 1 worker");
            out.push(Plot {
                file: file_name(workload, "speedup"),
                svg: line_chart(&title, "workers", "speedup (x)", &speedups, Some(&ideal)),
                title,
            });
            // Efficiency: speedup per worker; the ideal is 1 at every count.
            let efficiency: Vec<Line> = speedups
                .iter()
                .map(|l| Line { label: l.label.clone(), points: l.points.iter().map(|p| (p.0, p.1 / p.0, p.1 / p.0, p.1 / p.0)).collect() })
                .collect();
            let ideal = Line { label: "ideal".into(), points: vec![(0.0, 1.0, 1.0, 1.0), (max_k, 1.0, 1.0, 1.0)] };
            let title = format!("{workload}: parallel efficiency (speedup / workers)");
            out.push(Plot {
                file: file_name(workload, "efficiency"),
                svg: line_chart(&title, "workers", "efficiency", &efficiency, Some(&ideal)),
                title,
            });
        }
        let cost_title =
            if unit.as_str() == "ns/op" { format!("{workload}: cost per operation") } else { format!("{workload}: median by workers") };
        out.push(Plot {
            file: file_name(workload, "median"),
            svg: line_chart(&cost_title, "workers", unit.as_str(), &lines, None),
            title: cost_title,
        });
    }
    out.extend(bars::plots(workload, rows));
    out.extend(distribution::plot(workload, rows));
    out
}

/// The file name under `plots/` of a workload's plot of `kind`:
/// `<workload>-<kind>.svg`, the workload's id kept to the characters and
/// length of a file name (`model::file_name::bounded`), so that no id,
/// whoever made it (a command workload's name, a launched side's stream),
/// names a file elsewhere.
pub fn file_name(workload: &str, kind: &str) -> String {
    format!("{}-{kind}.svg", crate::model::file_name::bounded(workload, crate::model::file_name::MAX_NAME_PART))
}

const SIZE: (u32, u32) = (720, 440);

/// The most categories (rows, or values of an axis) a plot draws along its
/// x axis: at the widest chart that leaves a few pixels each, and the SVG
/// of 100,000 rows' boxes would take hundreds of MB to show nothing. A
/// workload with more draws no such plot; its tables hold every row.
pub const MAX_CATEGORIES: usize = 500;

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

/// The SVG of a drawing of `size` pixels; a drawing error leaves what was
/// drawn so far (plotters only fails on its backend, here a string).
/// plotters escapes `<` and `&` in text but not control characters, which
/// XML forbids (an ESC in an axis value would make the file unreadable and
/// reach report.html raw): each becomes U+FFFD.
fn svg_of(size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> Result<(), DrawErr>) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let _ = root.fill(&WHITE).and_then(|_| draw(&root));
        let _ = root.present();
    }
    let mut svg = svg::compact(&svg);
    let forbidden = |c: char| c.is_control() && !matches!(c, '\n' | '\t' | '\r');
    if svg.contains(forbidden) {
        svg = svg.chars().map(|c| if forbidden(c) { '\u{FFFD}' } else { c }).collect();
    }
    svg
}

/// The drawing area of an SVG plot.
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
/// A drawing error of the SVG backend.
type DrawErr = DrawingAreaErrorKind<std::io::Error>;

/// An x axis of `n` categories drawn at x = 1, 2, ..., n, ticked there only.
struct CategoryAxis {
    range: plotters::coord::types::RangedCoordf64,
    n: usize,
}

impl Ranged for CategoryAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (1..=self.n).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// Categories drawn at x = 1, 2, ... with their names as the only ticks.
fn category_axis(n: usize) -> CategoryAxis {
    CategoryAxis { range: (0.5..n as f64 + 0.5).into(), n }
}

/// The name of category `v` (1-based) for the tick at `v`.
fn category_name(names: &[String], v: f64) -> String {
    let i = v.round() as usize;
    if (v - i as f64).abs() > 1e-9 || i == 0 { String::new() } else { names.get(i - 1).cloned().unwrap_or_default() }
}

/// Lines with points and CI whiskers on zero-based axes; x is the worker count.
fn line_chart(title: &str, x_desc: &str, y_desc: &str, lines: &[Line], ideal: Option<&Line>) -> String {
    svg_of(SIZE, |root| draw_lines(root, title, x_desc, y_desc, lines, ideal, None))
}

/// The top of a zero-based y axis over data reaching `data_max`, with room
/// above the data for a legend of `entries` lines, so that the legend (drawn
/// in the upper right by [`legend`]) never covers a point, bar or whisker.
fn y_top(data_max: f64, entries: usize) -> f64 {
    // The plotting area is about 340 of the 440 pixels; a legend line takes
    // about 19, its frame and margin about 25.
    let legend = ((entries * 19 + 25) as f64 / 340.0).min(0.6);
    data_max.max(f64::MIN_POSITIVE) * 1.05 / (1.0 - legend)
}

/// A chart on `root` with the caption, margins and label areas every plot
/// here shares.
fn frame<'a, 'b, DB: DrawingBackend>(root: &'a DrawingArea<DB, plotters::coord::Shift>, title: &str) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 18)).margin(12).x_label_area_size(40).y_label_area_size(90);
    b
}

/// The legend, in the upper right, in the room [`y_top`] left above the data.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.8)).border_style(BLACK).draw()
}

/// The x axis of a trend: the runs by name, and each line's band.
struct Trend<'a> {
    runs: &'a [String],
    bands: &'a [Option<(f64, f64)>],
}

/// Lines over worker counts (`trend` = None) or over named runs.
fn draw_lines(
    root: &Area<'_>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    ideal: Option<&Line>,
    trend: Option<Trend<'_>>,
) -> Result<(), DrawErr> {
    let runs = trend.as_ref().map(|t| t.runs);
    let bands = trend.as_ref().map_or(&[][..], |t| t.bands);
    let all = lines.iter().chain(ideal).flat_map(|l| &l.points);
    let band_max = bands.iter().flatten().map(|b| b.1).fold(0.0, f64::max);
    let data_max = all.clone().map(|p| p.3.max(p.1)).fold(band_max, f64::max);
    let y_max = y_top(data_max, lines.len() + usize::from(ideal.is_some()));
    let (x_min, x_max) = match runs {
        None => (0.0, all.map(|p| p.0).fold(1.0, f64::max) * 1.05),
        Some(runs) => (0.5, runs.len() as f64 + 0.5),
    };
    let mut chart = frame(root, title).build_cartesian_2d(x_min..x_max, 0.0..y_max)?;
    let x_label = |v: &f64| -> String {
        match runs {
            _ if v.fract() != 0.0 => String::new(),
            None => format!("{v:.0}"),
            Some(runs) => runs.get((*v as usize).wrapping_sub(1)).cloned().unwrap_or_default(),
        }
    };
    let ticks = match runs {
        None => (x_max.ceil() as usize + 1).min(17),
        Some(runs) => (runs.len() * 2 + 1).min(41),
    };
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(ticks)
        .x_label_formatter(&x_label)
        .y_label_formatter(&|v| crate::text::format::number(*v))
        .draw()?;
    if let Some(ideal) = ideal {
        chart
            .draw_series(LineSeries::new(ideal.points.iter().map(|p| (p.0, p.1)), BLACK.mix(0.4).stroke_width(1)))?
            .label("ideal")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    }
    for (i, band) in bands.iter().enumerate() {
        if let Some((lo, hi)) = band {
            let color = COLORS[i % COLORS.len()];
            chart.draw_series(std::iter::once(Rectangle::new([(x_min, *lo), (x_max, *hi)], color.mix(0.12).filled())))?;
        }
    }
    for (i, l) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(l.points.iter().map(|p| (p.0, p.1)), color.stroke_width(2)))?
            .label(l.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(l.points.iter().map(|p| Circle::new((p.0, p.1), 3, color.filled())))?;
        chart.draw_series(l.points.iter().filter(|p| p.2 != p.3).map(|p| PathElement::new(vec![(p.0, p.2), (p.0, p.3)], color)))?;
    }
    legend(&mut chart)
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

    #[test]
    fn control_characters_in_labels_never_reach_the_svg() {
        let lines = vec![Line { label: "box \u{1b}[31mred\u{7}".into(), points: vec![(1.0, 100.0, 95.0, 105.0)] }];
        let svg = line_chart("t: \u{1b}]0;title", "workers", "ns", &lines, None);
        assert!(!svg.contains(|c: char| c.is_control() && c != '\n'), "{svg:?}");
        assert!(svg.contains("box \u{FFFD}[31mred\u{FFFD}"), "{svg}");
        assert!(png::png(&svg).is_ok(), "the SVG parses");
    }

    /// Rows of `w.x` at 1 and 2 workers under two allocators (a categorical axis).
    fn allocator_rows() -> Vec<Row> {
        use crate::model::CpuClass;
        use crate::model::Unit;
        use crate::report::tests::fake_row;
        let mut rows = Vec::new();
        for (alloc, base) in [("system", 100.0), ("<script>alert(1)</script>", 80.0)] {
            for k in [1usize, 2] {
                let v = base / k as f64;
                let mut r = fake_row(k, CpuClass::Physical, &[v, v * 1.01, v * 0.99], None, Status::Ok, Unit::Ns);
                r.cell.axes = vec!["allocator".into(), "workers".into()];
                r.cell.params.insert("allocator".into(), serde_json::json!(alloc));
                r.samples.insert(0, crate::evidence::SampleRecord { warmup: true, value: v * 3.0, ..r.samples[0].clone() });
                rows.push(r);
            }
        }
        rows
    }

    #[test]
    fn a_categorical_axis_gets_bars_with_ci_whiskers_and_escaped_names() {
        let rows = allocator_rows();
        let refs: Vec<&Row> = rows.iter().collect();
        let plots = plots("w.x", &refs);
        let files: Vec<&str> = plots.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(files, ["w.x-median.svg", "w.x-by-allocator.svg", "w.x-samples.svg"], "two worker counts: no speedup plot");
        // A workload id that is not a file name gives one all the same.
        for bad in ["../../tmp/x/PWN_WL", "/etc/passwd", "a/b"] {
            let name = file_name(bad, "samples");
            assert!(!name.contains('/') && crate::model::file_name::is_plain(&name), "{bad}: {name}");
        }
        let bars = &plots[1];
        assert_eq!(bars.title, "w.x: median by allocator");
        assert!(bars.svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !bars.svg.contains("<script"), "{}", bars.svg);
        assert!(bars.svg.contains("95% CI of the median") && bars.svg.contains("box workers=2"), "{}", bars.svg);
        // Four bars (2 series x 2 allocators) as filled rects, besides the legend's.
        assert!(bars.svg.matches("<rect").count() >= 4 + 2, "{}", bars.svg);
        // One allocator only: no bars.
        let one: Vec<&Row> = rows.iter().filter(|r| r.cell.params["allocator"] == "system").collect();
        assert!(super::plots("w.x", &one).iter().all(|p| !p.file.contains("by-allocator")));
    }

    #[test]
    fn speedup_and_efficiency_are_drawn_from_three_worker_counts_on() {
        use crate::model::{CpuClass, Unit};
        use crate::report::tests::fake_row;
        let rows: Vec<Row> =
            [1usize, 2, 4].iter().map(|&k| fake_row(k, CpuClass::Physical, &[100.0 / k as f64], None, Status::Ok, Unit::Ns)).collect();
        let refs: Vec<&Row> = rows.iter().collect();
        let files: Vec<String> = plots("w.x", &refs).into_iter().map(|p| p.file).collect();
        assert_eq!(files, ["w.x-speedup.svg", "w.x-efficiency.svg", "w.x-median.svg", "w.x-samples.svg"]);
        let two: Vec<&Row> = rows.iter().take(2).collect();
        let files: Vec<String> = plots("w.x", &two).into_iter().map(|p| p.file).collect();
        assert_eq!(files, ["w.x-median.svg", "w.x-samples.svg"]);
    }

    #[test]
    fn the_distribution_plot_has_one_box_per_row_and_marks_warmup_samples() {
        let rows = allocator_rows();
        let refs: Vec<&Row> = rows.iter().collect();
        let plots = plots("w.x", &refs);
        let dist = plots.iter().find(|p| p.file == "w.x-samples.svg").expect("a samples plot");
        assert!(dist.svg.contains("warmup sample (kept, not in the statistics)"), "{}", dist.svg);
        assert!(dist.svg.contains("workers, allocator") || dist.svg.contains("allocator, workers"), "the x axis names the varying axes");
        // The timed dots: 4 rows x 3 samples in one path of round dots, plus the legend's one.
        assert_eq!(dist.svg.matches("h0").count(), 12, "{}", dist.svg);
        assert_eq!(dist.svg.matches("<circle").count(), 1, "{}", dist.svg);
        // Warmup crosses are drawn as paths apart from the dots; without warmup samples there are none.
        let no_warmup: Vec<Row> = rows
            .iter()
            .cloned()
            .map(|mut r| {
                r.samples.retain(|s| !s.warmup);
                r
            })
            .collect();
        let refs: Vec<&Row> = no_warmup.iter().collect();
        let plain = distribution::plot("w.x", &refs).unwrap();
        assert!(plain.svg.matches('M').count() < dist.svg.matches('M').count());
        // Rows that are not ok have no box.
        let bad: Vec<Row> = rows
            .iter()
            .cloned()
            .map(|mut r| {
                r.status = Status::Invalid;
                r
            })
            .collect();
        let refs: Vec<&Row> = bad.iter().collect();
        assert!(distribution::plot("w.x", &refs).is_none());
    }
}
