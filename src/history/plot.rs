//! The trend plot of `history show`: the median of each row series per run,
//! with its 95% CI, runs in time order along x (ticks `h:ID`), y from zero.
//! Rendering only: the command writes the file.

use plotters::prelude::*;

/// One line: its label and (run position from 1, median, ci lo, ci hi).
pub struct TrendLine {
    pub label: String,
    pub points: Vec<(f64, f64, f64, f64)>,
}

const SIZE: (u32, u32) = (800, 460);

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

/// An SVG of `lines` over the runs named `runs` (x = 1 is `runs[0]`).
pub fn trend_svg(title: &str, unit: &str, runs: &[String], lines: &[TrendLine]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let _ = draw(&root, title, unit, runs, lines);
        let _ = root.present();
    }
    svg
}

fn draw(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    unit: &str,
    runs: &[String],
    lines: &[TrendLine],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let x_max = runs.len() as f64 + 0.5;
    let y_max = lines.iter().flat_map(|l| &l.points).map(|p| p.1.max(p.3)).fold(0.0, f64::max).max(f64::MIN_POSITIVE) * 1.1;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(0.5..x_max, 0.0..y_max)?;
    let x_label = |v: &f64| -> String {
        if v.fract() != 0.0 {
            return String::new();
        }
        runs.get((*v as usize).wrapping_sub(1)).cloned().unwrap_or_default()
    };
    chart
        .configure_mesh()
        .x_desc("run (oldest first)")
        .y_desc(unit)
        .x_labels((runs.len() * 2 + 1).min(41))
        .x_label_formatter(&x_label)
        .y_label_formatter(&|v| crate::report::format::number(*v))
        .draw()?;
    for (i, l) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(l.points.iter().map(|p| (p.0, p.1)), color.stroke_width(2)))?
            .label(l.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(l.points.iter().map(|p| Circle::new((p.0, p.1), 3, color.filled())))?;
        chart.draw_series(l.points.iter().filter(|p| p.2 != p.3).map(|p| PathElement::new(vec![(p.0, p.2), (p.0, p.3)], color)))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_is_svg_with_its_run_ticks_and_legend() {
        let runs = vec!["h:1".to_string(), "h:2".to_string(), "h:3".to_string()];
        let lines = vec![TrendLine {
            label: "size=256".into(),
            points: vec![(1.0, 10.0, 9.0, 11.0), (2.0, 12.0, 11.0, 13.0), (3.0, 30.0, 29.0, 31.0)],
        }];
        let svg = trend_svg("alloc.x: median per run", "ns/op", &runs, &lines);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        for want in ["h:1", "h:3", "size=256", "alloc.x: median per run"] {
            assert!(svg.contains(want), "missing {want}");
        }
    }
}
