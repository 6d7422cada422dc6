//! Plots of a workload's rows as SVG text: speedup and parallel efficiency
//! (speedup / workers) against workers with the ideal line, the median
//! against workers (per-task cost for ns/op rows), bars of the median with
//! its 95% CI per value of a categorical axis (pinning strategy, allocator,
//! engine, runtime, ...; [`bars`]), and the distribution of every row's
//! samples ([`distribution`]). Speedup and efficiency are drawn where a
//! series has three worker counts or more. Every chart is drawn to be read
//! at the size it is drawn (report.html shows it so): text of at least
//! [`axis::MIN_TEXT_PX`], the value axis in the tables' scaled unit, from
//! zero (a small overhead is not drawn as a large one) or logarithmic where
//! the values span more than [`axis::LOG_SPAN`] times, x labels wrapped or
//! turned so that none overlaps the next, and legends without what every
//! entry shares (said once in the title); [`axis`] (in the output layer,
//! `text::plot`) holds these pieces for any chart. The mesh has no light
//! lines between its labelled ones. Text is XML-escaped by plotters' SVG
//! backend, and the SVG made small by [`svg::compact`]. Rendering only: the
//! runner writes the files (SVG, and PNG through
//! [`crate::text::plot::png`]) through the results directory. These charts
//! stay in `report`: they are drawn from a run's rows (`evidence::Row`);
//! the plain-data charts and their pieces are `text::plot`'s.

pub mod bars;
pub mod distribution;

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::evidence::Row;
use crate::model::{Direction, Status, Unit, value_text};
use crate::text::plot::{axis, svg};

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
                svg: line_chart(&title, "workers", "speedup (x)", None, &speedups, Some(&ideal)),
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
                svg: line_chart(&title, "workers", "efficiency", None, &efficiency, Some(&ideal)),
                title,
            });
        }
        let cost_title =
            if unit.as_str() == "ns/op" { format!("{workload}: cost per operation") } else { format!("{workload}: median by workers") };
        out.push(Plot {
            file: file_name(workload, "median"),
            svg: line_chart(&cost_title, "workers", "median", Some(unit), &lines, None),
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

/// The size of a chart: two fit side by side in the page's widest column
/// (1,288 px) and one in a window 800 px wide, shown at the size drawn.
const SIZE: (u32, u32) = (620, 420);

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

/// Lines with points and CI whiskers on a value axis ([`axis::ValueAxis`]:
/// from zero, or logarithmic over a wide span); x is the worker count.
/// `unit` labels the ticks in the tables' scaled unit (`None`: a ratio).
fn line_chart(title: &str, x_desc: &str, y_desc: &str, unit: Option<Unit>, lines: &[Line], ideal: Option<&Line>) -> String {
    svg_of(SIZE, |root| draw_lines(root, title, x_desc, y_desc, unit, lines, ideal))
}

/// The share of a plotting area of `plot_h` pixels to keep free above the
/// data for a legend of `entries` lines (drawn in the upper right by
/// [`legend`]), so that it never covers a point, bar or whisker.
fn headroom(entries: usize, plot_h: f64) -> f64 {
    ((entries * (axis::LINE_PX as usize + 5) + 25) as f64 / plot_h).min(0.6)
}

/// The width of the y label area for `y`'s tick labels and its description.
fn y_label_area(y: &axis::ValueAxis) -> u32 {
    let widest = y.ticks().iter().map(|&t| axis::text_px(&y.label(t), axis::LABEL_PX as f64)).fold(0.0, f64::max);
    widest.ceil() as u32 + 12 + axis::LINE_PX + 8
}

/// The smaller size of a title too long for [`axis::TITLE_PX`].
const SMALL_TITLE_PX: u32 = axis::LABEL_PX + 1;

/// The size of `title` on a chart `width` wide: [`axis::TITLE_PX`] where it
/// fits, else [`SMALL_TITLE_PX`].
fn title_px(title: &str, width: u32) -> u32 {
    if axis::text_px(title, axis::TITLE_PX as f64) <= width as f64 - 24.0 { axis::TITLE_PX } else { SMALL_TITLE_PX }
}

/// `title`, with `shared` (what every legend entry holds) said once after
/// it, cut (where even [`SMALL_TITLE_PX`] is too large) to fit a chart
/// `width` wide.
fn title_text(title: &str, shared: &str, width: u32) -> String {
    let full = if shared.is_empty() { title.to_string() } else { format!("{title} ({shared})") };
    axis::fit_text(&full, width as f64 - 24.0, SMALL_TITLE_PX as f64)
}

/// A chart on `root` with the caption, margins and label areas every plot
/// here shares: the title at [`axis::TITLE_PX`] (smaller where it would not
/// fit), `x_area` pixels of x labels.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_area: u32,
    y: &axis::ValueAxis,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    let px = title_px(title, root.dim_in_pixel().0);
    b.caption(title, (axis::FONT, axis::plotters_size(px))).margin(12).x_label_area_size(x_area).y_label_area_size(y_label_area(y));
    b
}

/// The text style of tick labels, axis descriptions and legend entries.
fn label_font() -> TextStyle<'static> {
    TextStyle::from((axis::FONT, axis::plotters_size(axis::LABEL_PX)).into_font())
}

/// The legend, in the upper right, in the room [`headroom`] left above the data.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(label_font())
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

/// Draws category labels on `root`: `at[i]` is the pixel under category i
/// on the x axis; wrapped lines centred under it, or rotated labels ending
/// under it.
fn draw_x_labels(root: &Area<'_>, labels: &axis::XLabels, at: &[(i32, i32)]) -> Result<(), DrawErr> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let font = label_font();
    match labels {
        axis::XLabels::Wrapped(lines) => {
            for (ls, &(x, y)) in lines.iter().zip(at) {
                for (k, l) in ls.iter().enumerate() {
                    let style = font.clone().pos(Pos::new(HPos::Center, VPos::Top));
                    root.draw(&Text::new(l.clone(), (x, y + 6 + k as i32 * axis::LINE_PX as i32), style))?;
                }
            }
        }
        axis::XLabels::Rotated { names, .. } => {
            for (n, &(x, y)) in names.iter().zip(at) {
                let style = font.clone().transform(FontTransform::Rotate270).pos(Pos::new(HPos::Right, VPos::Center));
                root.draw(&Text::new(n.clone(), (x, y + 6), style))?;
            }
        }
    }
    Ok(())
}

/// Lines over worker counts.
fn draw_lines(
    root: &Area<'_>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    unit: Option<Unit>,
    lines: &[Line],
    ideal: Option<&Line>,
) -> Result<(), DrawErr> {
    let (shared, names) = axis::shared_words(&lines.iter().map(|l| l.label.clone()).collect::<Vec<_>>());
    let data = lines.iter().chain(ideal).flat_map(|l| &l.points).flat_map(|p| axis::interval_for_axis(p.1, p.2, p.3));
    let (w, h) = root.dim_in_pixel();
    let x_area = 20 + axis::LINE_PX + axis::LINE_PX;
    let room = headroom(lines.len() + usize::from(ideal.is_some()), h as f64 - x_area as f64 - 60.0);
    let y = axis::ValueAxis::for_values(data, unit, room);
    let all = lines.iter().chain(ideal).flat_map(|l| &l.points);
    let (x_min, x_max) = (0.0, all.map(|p| p.0).fold(1.0, f64::max) * 1.05);
    let title = title_text(title, &shared, w);
    let mut chart = frame(root, &title, x_area, &y).build_cartesian_2d(x_min..x_max, y.clone())?;
    let ticks = (x_max.ceil() as usize + 1).min(17);
    chart
        .configure_mesh()
        .max_light_lines(0)
        .label_style(label_font())
        .axis_desc_style(label_font())
        .x_desc(x_desc)
        .y_desc(y.desc(y_desc))
        .x_labels(ticks)
        .x_label_formatter(&|v: &f64| if v.fract() != 0.0 { String::new() } else { format!("{v:.0}") })
        .y_label_formatter(&|c| y.label(*c))
        .draw()?;
    if let Some(ideal) = ideal {
        chart
            .draw_series(LineSeries::new(ideal.points.iter().map(|p| (p.0, y.pos(p.1))), BLACK.mix(0.4).stroke_width(1)))?
            .label("ideal")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    }
    for (i, (l, name)) in lines.iter().zip(&names).enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(l.points.iter().map(|p| (p.0, y.pos(p.1))), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(l.points.iter().map(|p| Circle::new((p.0, y.pos(p.1)), 3, color.filled())))?;
        chart.draw_series(
            l.points.iter().filter(|p| p.2 != p.3).map(|p| PathElement::new(vec![(p.0, y.pos(p.2)), (p.0, y.pos(p.3))], color)),
        )?;
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_labels_and_zero_based_axes() {
        let lines = vec![Line { label: "box <rayon>".into(), points: vec![(1.0, 100.0, 95.0, 105.0), (2.0, 52.0, 50.0, 55.0)] }];
        let svg = line_chart("t: x", "workers", "median", Some(Unit::Ns), &lines, None);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(svg.contains("box &lt;rayon&gt;"), "labels are escaped");
        assert!(svg.contains(">0 ns<"), "the y axis starts at zero, in the unit: {svg}");
    }

    /// The font sizes of an SVG's texts.
    fn font_sizes(svg: &str) -> Vec<f64> {
        svg.split("font-size=\"").skip(1).map(|t| t[..t.find('"').unwrap()].parse().unwrap()).collect()
    }

    /// The texts of an SVG.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text").skip(1).map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim().to_string()).collect()
    }

    #[test]
    fn every_chart_draws_text_of_at_least_12_px_in_the_tables_scaled_unit() {
        use crate::model::{CpuClass, Unit};
        use crate::report::tests::fake_row;
        // 52.97 ms and 60 ms: ticks in ms, not 60,000,000.
        let rows: Vec<Row> = [1usize, 2, 4]
            .iter()
            .map(|&k| fake_row(k, CpuClass::Physical, &[52_970_000.0 + k as f64 * 2e6], None, Status::Ok, Unit::Ns))
            .collect();
        let refs: Vec<&Row> = rows.iter().collect();
        let mut plots = plots("w.x", &refs);
        plots.extend(bars::plots("w.x", &allocator_rows().iter().collect::<Vec<_>>()));
        assert!(plots.len() >= 4);
        for p in &plots {
            let sizes = font_sizes(&p.svg);
            assert!(!sizes.is_empty() && sizes.iter().all(|&s| s >= axis::MIN_TEXT_PX as f64 - 0.05), "{}: {sizes:?}", p.file);
            assert!(!texts(&p.svg).iter().any(|t| t.contains(",000,000")), "{}: raw units in {:?}", p.file, texts(&p.svg));
        }
        let median = plots.iter().find(|p| p.file == "w.x-median.svg").unwrap();
        assert!(texts(&median.svg).iter().any(|t| t.ends_with(" ms")), "ticks in ms: {:?}", texts(&median.svg));
    }

    #[test]
    fn a_plot_of_values_spanning_1000x_gets_a_log_axis() {
        let lines = vec![
            Line { label: "vm chunked".into(), points: vec![(1.0, 0.3, 0.29, 0.31), (2.0, 0.35, 0.3, 0.4)] },
            Line { label: "vm per-item".into(), points: vec![(1.0, 369.0, 360.0, 380.0), (2.0, 300.0, 290.0, 310.0)] },
        ];
        let svg = line_chart("t: cost", "workers", "median", Some(Unit::NsPerOp), &lines, None);
        let t = texts(&svg);
        assert!(t.iter().any(|x| x == "median (log scale)"), "{t:?}");
        for tick in ["0.100 ns/op", "1.00 ns/op", "10.00 ns/op", "100 ns/op"] {
            assert!(t.iter().any(|x| x == tick), "{tick} in {t:?}");
        }
        // The shared word is said once, in the title.
        assert!(t.iter().any(|x| x == "t: cost (vm)") && t.iter().any(|x| x == "chunked") && !t.iter().any(|x| x == "vm chunked"), "{t:?}");
        // Values within 30x: a linear axis from zero.
        let svg = line_chart("t: cost", "workers", "median", Some(Unit::NsPerOp), &lines[1..], None);
        assert!(texts(&svg).iter().any(|x| x == "0 ns/op") && !svg.contains("log scale"), "{svg}");
    }

    #[test]
    fn two_long_x_labels_do_not_overlap() {
        let names = ["per-item global-queue 1".to_string(), "per-item global-queue 2".to_string()];
        let dists: Vec<distribution::Samples> =
            names.iter().map(|n| distribution::Samples { name: n.clone(), timed: vec![10.0, 11.0], warmup: vec![] }).collect();
        let svg = distribution::chart("t: samples", "mode, runtime, workers", "ns", &dists);
        // Each label's lines: the texts below the plot, each no wider than its slot.
        let placed: Vec<(f64, f64, String)> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                let attr = |a: &str| -> Option<f64> { t[t.find(&format!(" {a}=\""))? + a.len() + 3..].split('"').next()?.parse().ok() };
                let text = t[t.find('>')? + 1..t.find("</text>")?].trim().to_string();
                Some((attr("x")?, attr("y")?, text))
            })
            .filter(|(_, _, t)| names.iter().any(|n| n.split_whitespace().any(|w| t.contains(w))))
            .collect();
        assert!(placed.len() >= 4, "both labels wrapped: {placed:?}");
        for (i, a) in placed.iter().enumerate() {
            for b in &placed[i + 1..] {
                let (wa, wb) = (axis::text_px(&a.2, 12.0), axis::text_px(&b.2, 12.0));
                let apart_x = (a.0 - b.0).abs() >= (wa + wb) / 2.0;
                let apart_y = (a.1 - b.1).abs() >= 12.0;
                assert!(apart_x || apart_y, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn control_characters_in_labels_never_reach_the_svg() {
        let lines = vec![Line { label: "box \u{1b}[31mred\u{7}".into(), points: vec![(1.0, 100.0, 95.0, 105.0)] }];
        let svg = line_chart("t: \u{1b}]0;title", "workers", "median", Some(Unit::Ns), &lines, None);
        assert!(!svg.contains(|c: char| c.is_control() && c != '\n'), "{svg:?}");
        assert!(svg.contains("box \u{FFFD}[31mred\u{FFFD}"), "{svg}");
        assert!(crate::text::plot::png::png(&svg).is_ok(), "the SVG parses");
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
        assert!(bars.svg.contains("95% CI of the median") && bars.svg.contains(">workers=2<"), "{}", bars.svg);
        // The system label every series shares is said once, in the title, not in each legend entry.
        assert!(bars.svg.contains("w.x: median by allocator (box)") && !bars.svg.contains("box workers=2"), "{}", bars.svg);
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
        // The crosses' strokes (the warmup colour): the legend's only, without warmup samples.
        let crosses =
            |svg: &str| -> usize { svg.lines().filter(|l| l.contains("stroke=\"#FF7F0E\"")).map(|l| l.matches('M').count()).sum() };
        assert!(crosses(&plain.svg) < crosses(&dist.svg), "{}", dist.svg);
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
