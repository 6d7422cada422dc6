//! The trend of `history show`: each series' median per run (oldest first,
//! the runs named on the x axis) with its 95% interval, its noise floor
//! shaded as a band across the chart, and the change points `history
//! changes` finds marked where they fall, with their ratio. The y axis is
//! in the scaled unit of the tables, drawn around the data (said on the
//! axis: a trend is read for its steps), logarithmic where the medians span
//! more than 30x.

use super::canvas::{Anchor, Axis, Canvas, Swatch, SwatchFn, TEXT, TITLE, WIDTH, fit, legend, text_width, thinned};
use crate::model::Unit;
use crate::text::format;

/// One line of the trend.
#[derive(Clone, Debug)]
pub struct Series {
    /// Its legend entry (what sets it apart from the other lines).
    pub label: String,
    /// (run index from 0, median, interval lo, interval hi), oldest first.
    pub points: Vec<(usize, f64, f64, f64)>,
    /// Its noise floor as a band (lo, hi) of medians.
    pub band: Option<(f64, f64)>,
    pub changes: Vec<Change>,
}

/// A change point of a series.
#[derive(Clone, Debug)]
pub struct Change {
    /// The index of the last run at the old level; the change falls
    /// between it and the next run of the series.
    pub before: usize,
    pub after: usize,
    /// New level / old level.
    pub ratio: f64,
    /// Its tooltip.
    pub note: String,
}

/// The colours of the lines, distinct on white.
const COLOURS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#ff7f0e"];

/// The chart of `series` over `runs` (their names, oldest first); `Err`
/// with why when no series has a point.
pub fn chart(title: &str, unit: Unit, runs: &[String], series: &[Series]) -> Result<String, String> {
    let series: Vec<&Series> = series.iter().filter(|s| !s.points.is_empty()).collect();
    if series.is_empty() || runs.is_empty() {
        return Err("no run has an ok row".into());
    }
    let values = series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2, p.3]).chain(s.band.iter().flat_map(|b| [b.0, b.1])));
    let values: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);

    let mut entries: Vec<(String, Swatch)> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let f: Swatch = Box::new(move |c: &mut Canvas, x: f64, y: f64| {
            c.line((x - 7.0, y), (x + 7.0, y), colour, 2.0, false);
            c.circle((x, y), 3.0, colour, "none");
        });
        entries.push((fit(&s.label, 260.0, TEXT).0, f));
    }
    if series.iter().any(|s| s.band.is_some()) {
        let f: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.rect(x - 7.0, y - 6.0, 14.0, 12.0, "#1f77b4", "fill-opacity=\"0.12\""));
        entries.push(("noise floor".into(), f));
    }
    if series.iter().any(|s| !s.changes.is_empty()) {
        let f: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.line((x, y - 7.0), (x, y + 7.0), "#333333", 1.5, true));
        entries.push(("change point (new / old level)".into(), f));
    }
    let entries: Vec<(String, &SwatchFn)> = entries.iter().map(|(t, f)| (t.clone(), f.as_ref() as _)).collect();
    let legend_h = legend(&mut Canvas::new(WIDTH, 0.0), (8.0, 0.0), WIDTH - 16.0, &entries);

    let top = 8.0 + TITLE + 8.0 + legend_h + 4.0 + TEXT + 6.0;
    let plot_h = 260.0;
    let bottom = top + plot_h;
    let height = bottom + 12.0 + 2.0 * TEXT + 14.0;
    // The y axis first (its labels set the left margin), then the x axis.
    let y0 = Axis::over(lo, hi, 0.08, (bottom, top));
    let y_label = |v: f64| format::scaled(v, unit);
    let y_ticks = thinned(&y0, y0.ticks(5), &y_label, Some(TEXT));
    let left = 16.0 + y_ticks.iter().map(|(_, l)| text_width(l, TEXT)).fold(40.0, f64::max);
    let right = WIDTH - 16.0;
    let x = Axis { lo: -0.5, hi: runs.len() as f64 - 0.5, log: false, from: left, to: right };
    let y = y0;

    let mut c = Canvas::new(WIDTH, height);
    let (t, cut) = fit(title, WIDTH - 16.0, TITLE);
    c.text_styled((8.0, 8.0 + TITLE), &t, TITLE, Anchor::Start, cut.then_some(title), "font-weight=\"bold\"");
    legend(&mut c, (8.0, 8.0 + TITLE + 8.0 + TEXT), WIDTH - 16.0, &entries);

    for (v, l) in &y_ticks {
        let py = y.at(*v);
        c.line((left, py), (right, py), "#eeeeee", 1.0, false);
        c.text((left - 6.0, py + TEXT * 0.35), l, TEXT, Anchor::End, None);
    }
    let run_ticks: Vec<f64> = (0..runs.len()).map(|i| i as f64).collect();
    let name = |v: f64| runs.get(v.round() as usize).cloned().unwrap_or_default();
    for (v, l) in thinned(&x, run_ticks, &name, None) {
        let px = x.at(v);
        c.line((px, bottom), (px, bottom + 4.0), "#555555", 1.0, false);
        c.text((px, bottom + 6.0 + TEXT), &l, TEXT, Anchor::Middle, None);
    }
    c.line((left, bottom), (right, bottom), "#555555", 1.0, false);
    c.line((left, top), (left, bottom), "#555555", 1.0, false);
    c.text(((left + right) / 2.0, bottom + 12.0 + 2.0 * TEXT), "run (oldest first)", TEXT, Anchor::Middle, None);
    let scale = if y.log { "log scale" } else { "axis not from zero" };
    c.text((left, top - 8.0), &format!("median ({scale})"), TEXT, Anchor::Start, None);

    for (i, s) in series.iter().enumerate() {
        if let Some((a, b)) = s.band {
            let colour = COLOURS[i % COLOURS.len()];
            c.rect(left, y.at(b), right - left, y.at(a) - y.at(b), colour, "fill-opacity=\"0.12\"");
        }
    }
    // Change points: a dashed line between the two runs, its ratio above
    // the plot where that does not overlap another's.
    let mut taken: Vec<(f64, f64)> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        for ch in &s.changes {
            let px = (x.at(ch.before as f64) + x.at(ch.after as f64)) / 2.0;
            c.group(&ch.note);
            c.line((px, top), (px, bottom), colour, 1.5, true);
            let label = format!("×{}", super::forest::ratio_text(ch.ratio));
            let w = text_width(&label, TEXT);
            let (a, b) = ((px - w / 2.0).max(left), (px + w / 2.0).min(right));
            if taken.iter().all(|&(p, q)| b + 4.0 < p || a > q + 4.0) {
                taken.push((a, b));
                c.text(((a + b) / 2.0, top + TEXT + 2.0), &label, TEXT, Anchor::Middle, None);
            }
            c.end();
        }
    }
    // Lines at one run are set a little apart, so that their whiskers do
    // not hide each other.
    let step = ((x.at(1.0) - x.at(0.0)) / (series.len() as f64 + 1.0)).min(4.0);
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let dodge = (i as f64 - (series.len() as f64 - 1.0) / 2.0) * step;
        let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (x.at(p.0 as f64) + dodge, y.at(p.1))).collect();
        c.polyline(&pts, colour, 2.0);
        for p in &s.points {
            let px = x.at(p.0 as f64) + dodge;
            c.group(&format!(
                "{}: {} {} (95% interval {}..{})",
                runs.get(p.0).map_or("", String::as_str),
                s.label,
                format::scaled(p.1, unit),
                format::scaled(p.2, unit),
                format::scaled(p.3, unit)
            ));
            if p.2 < p.3 {
                c.line((px, y.at(p.2)), (px, y.at(p.3)), colour, 1.0, false);
            }
            c.circle((px, y.at(p.1)), 3.0, colour, "none");
            c.end();
        }
    }
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("h:{i}")).collect()
    }

    #[test]
    fn a_trend_has_its_points_band_and_change_points_in_the_tables_unit() {
        let s = Series {
            label: "workers=1".into(),
            points: (0..6).map(|i| (i, if i < 3 { 1.0e6 } else { 1.2e6 }, 0.98e6, 1.25e6)).collect(),
            band: Some((0.99e6, 1.01e6)),
            changes: vec![Change { before: 2, after: 3, ratio: 1.2, note: "h:3 -> h:4: regressed".into() }],
        };
        let svg = chart("cpu.primes: median per run", Unit::Ns, &runs(6), &[s]).unwrap();
        assert_eq!(svg.matches("<circle").count(), 6 + 1, "a dot per run, one in the legend:\n{svg}");
        assert!(svg.contains("fill-opacity=\"0.12\""), "the floor's band");
        assert!(svg.contains("stroke-dasharray") && svg.contains(">×1.2</text>"), "the change point and its ratio:\n{svg}");
        assert!(svg.contains(" ms</text>") && !svg.contains("000,000"), "ticks in ms, not raw ns:\n{svg}");
        assert!(svg.contains(">h:1</text>") && svg.contains("axis not from zero"));
    }

    #[test]
    fn medians_a_thousandfold_apart_get_a_log_axis_and_many_runs_fewer_labels() {
        let s = Series {
            label: "a".into(),
            points: (0..60).map(|i| (i, 10f64.powf(i as f64 / 20.0), 1.0, 1000.0)).collect(),
            band: None,
            changes: vec![],
        };
        let svg = chart("t", Unit::Ns, &runs(60), &[s]).unwrap();
        assert!(svg.contains("log scale"), "{svg}");
        let labels = (1..=60).filter(|i| svg.contains(&format!(">h:{i}</text>"))).count();
        assert!((5..60).contains(&labels), "run names thinned so that none overlaps: {labels}");
        assert!(chart("t", Unit::Ns, &runs(2), &[]).is_err());
    }
}
