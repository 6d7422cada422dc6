//! A forest plot of ratios: one line per row, its ratio a dot on its 95%
//! interval, coloured by its verdict, the rows sorted by ratio, a line at
//! 1 and the band of SAME shaded across the chart; a row's own noise band
//! (a history step's floor), where given, shaded on its line. The pages of
//! `compare` and `history regressions` draw it ([`super::canvas`]); what
//! turns a judged row into an [`Interval`] is `compare::forest`'s, so that
//! this file knows ratios and marks, not comparisons.

use super::canvas::{Anchor, Axis, Canvas, Swatch, SwatchFn, TEXT, TITLE, WIDTH, fit, legend, row_labels, thinned};

/// How a row was judged, as its colour says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// DIFFERENT, the worse way.
    Worse,
    /// DIFFERENT, the better way.
    Better,
    Same,
    Unknown,
}

impl Mark {
    pub fn colour(self) -> &'static str {
        match self {
            Mark::Worse => "#d62728",
            Mark::Better => "#1f77b4",
            Mark::Same => "#555555",
            Mark::Unknown => "#e08a00",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mark::Worse => "DIFFERENT, worse",
            Mark::Better => "DIFFERENT, better",
            Mark::Same => "SAME",
            Mark::Unknown => "UNKNOWN",
        }
    }
}

/// One row of the plot.
#[derive(Clone, Debug)]
pub struct Interval {
    /// The row's name (shortened to fit; whole in its tooltip).
    pub name: String,
    pub ratio: f64,
    /// The ratio's 95% interval.
    pub ci: [f64; 2],
    pub mark: Mark,
    /// The row's own noise band (a fraction), shaded on its line.
    pub band: Option<f64>,
    /// Its tooltip: the figures as the table says them.
    pub note: String,
}

/// The most rows drawn: those farthest from 1 (the tables hold every one).
pub const MAX_ROWS: usize = 80;

const ROW: f64 = 18.0;
/// From how many rows the axis's figures are also drawn above them.
const LABELS_ABOVE_FROM: usize = 12;
const LEFT: f64 = 250.0;
const RIGHT: f64 = 16.0;

/// The plot of `rows` (those with a ratio and an interval above zero),
/// with the band of SAME (`equivalence`, a fraction) shaded; `Err` with
/// why when no row can be drawn. `x_desc` names the ratio
/// (`candidate / base`).
pub fn chart(title: &str, x_desc: &str, rows: &[Interval], equivalence: Option<f64>) -> Result<String, String> {
    let mut rows: Vec<&Interval> = rows
        .iter()
        .filter(|r| r.ratio > 0.0 && r.ci[0] > 0.0 && r.ci[1] >= r.ci[0] && r.ratio.is_finite() && r.ci[1].is_finite())
        .collect();
    if rows.is_empty() {
        return Err("no row has a ratio with an interval".into());
    }
    let all = rows.len();
    if rows.len() > MAX_ROWS {
        rows.sort_by(|a, b| b.ratio.ln().abs().total_cmp(&a.ratio.ln().abs()));
        rows.truncate(MAX_ROWS);
    }
    rows.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let title = if all > rows.len() { format!("{title} (the {} rows farthest from 1 of {all})", rows.len()) } else { title.to_string() };

    // The axis holds every ratio and band, and the intervals to at most
    // twice as far (a row of two trials can have an interval of 1000x,
    // which would flatten every other): an interval beyond ends in an arrow.
    let mut lo = rows.iter().map(|r| r.ratio).fold(1.0, f64::min);
    let mut hi = rows.iter().map(|r| r.ratio).fold(1.0, f64::max);
    for b in rows.iter().filter_map(|r| r.band).chain(equivalence) {
        lo = lo.min(1.0 / (1.0 + b));
        hi = hi.max(1.0 + b);
    }
    let lo = rows.iter().map(|r| r.ci[0]).fold(lo, f64::min).max(lo / 2.0);
    let hi = rows.iter().map(|r| r.ci[1]).fold(hi, f64::max).min(hi * 2.0);
    let x = Axis::over(lo, hi, 0.04, (LEFT, WIDTH - RIGHT));

    // Title, then the legend of the marks present, then the rows.
    let mut marks: Vec<(Mark, usize)> = Vec::new();
    for m in [Mark::Worse, Mark::Better, Mark::Same, Mark::Unknown] {
        let k = rows.iter().filter(|r| r.mark == m).count();
        if k > 0 {
            marks.push((m, k));
        }
    }
    let mut entries: Vec<(String, Swatch)> = marks
        .iter()
        .map(|&(m, k)| {
            let f: Swatch = Box::new(move |c: &mut Canvas, x: f64, y: f64| {
                c.line((x - 6.0, y), (x + 6.0, y), m.colour(), 2.0, false);
                c.circle((x, y), 3.5, m.colour(), "none");
            });
            (format!("{} ({k})", m.name()), f)
        })
        .collect();
    if let Some(e) = equivalence {
        let f: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.rect(x - 6.0, y - 6.0, 12.0, 12.0, "#dde8f3", ""));
        entries.push((format!("SAME band (±{})", crate::text::format::band(e)), f));
    }
    if rows.iter().any(|r| r.band.is_some()) {
        let f: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.rect(x - 6.0, y - 5.0, 12.0, 10.0, "#e4e4e4", ""));
        entries.push(("the row's noise band".into(), f));
    }
    let entries: Vec<(String, &SwatchFn)> = entries.iter().map(|(t, f)| (t.clone(), f.as_ref() as _)).collect();

    // The legend's height, laid out once on a scratch canvas.
    let legend_h = legend(&mut Canvas::new(WIDTH, 0.0), (8.0, 0.0), WIDTH - 16.0, &entries);
    // A tall plot repeats its axis's figures above its rows, so that the
    // first screen can be read without scrolling to the axis.
    let labels_above = rows.len() > LABELS_ABOVE_FROM;
    let top = 8.0 + TITLE + 8.0 + legend_h + 6.0 + if labels_above { TEXT + 8.0 } else { 0.0 };
    let plot_h = rows.len() as f64 * ROW;
    let height = top + plot_h + 50.0;
    let mut c = Canvas::new(WIDTH, height);
    let (title_shown, cut) = fit(&title, WIDTH - 16.0, TITLE);
    c.text_styled((8.0, 8.0 + TITLE), &title_shown, TITLE, Anchor::Start, cut.then_some(title.as_str()), "font-weight=\"bold\"");
    legend(&mut c, (8.0, 8.0 + TITLE + 8.0 + TEXT), WIDTH - 16.0, &entries);

    let bottom = top + plot_h;
    if let Some(e) = equivalence {
        let (a, b) = (x.at(1.0 / (1.0 + e)), x.at(1.0 + e));
        c.rect(a, top, b - a, plot_h, "#dde8f3", "");
    }
    // The x axis: ticks in the ratio's own figures.
    let ticks = thinned(&x, x.ticks(6), &ratio_text, None);
    for (t, label) in &ticks {
        let px = x.at(*t);
        c.line((px, top), (px, bottom), "#eeeeee", 1.0, false);
        c.line((px, bottom), (px, bottom + 4.0), "#555555", 1.0, false);
        c.text((px, bottom + 6.0 + TEXT), label, TEXT, Anchor::Middle, None);
        if labels_above {
            c.line((px, top - 4.0), (px, top), "#555555", 1.0, false);
            c.text((px, top - 6.0), label, TEXT, Anchor::Middle, None);
        }
    }
    c.line((LEFT, bottom), (WIDTH - RIGHT, bottom), "#555555", 1.0, false);
    let desc = format!("{x_desc}{}", if x.log { " (log scale)" } else { "" });
    c.text(((LEFT + WIDTH - RIGHT) / 2.0, bottom + 12.0 + 2.0 * TEXT), &desc, TEXT, Anchor::Middle, None);
    c.line((x.at(1.0), top), (x.at(1.0), bottom), "#333333", 1.0, false);

    let names = row_labels(&rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), LEFT - 16.0, TEXT);
    for (i, (r, name)) in rows.iter().zip(&names).enumerate() {
        let y = top + (i as f64 + 0.5) * ROW;
        c.text((LEFT - 8.0, y + TEXT * 0.35), name, TEXT, Anchor::End, Some(&r.name));
        c.group(&r.note);
        if let Some(b) = r.band {
            let (a, z) = (x.at(1.0 / (1.0 + b)), x.at(1.0 + b));
            c.rect(a, y - ROW / 2.0 + 3.0, z - a, ROW - 6.0, "#e4e4e4", "");
        }
        let colour = r.mark.colour();
        let (a, z) = (x.at(r.ci[0]), x.at(r.ci[1]));
        c.line((a, y), (z, y), colour, 2.0, false);
        if r.ci[0] < x.lo {
            c.polygon(&[(a - 2.0, y), (a + 5.0, y - 4.0), (a + 5.0, y + 4.0)], colour);
        }
        if r.ci[1] > x.hi {
            c.polygon(&[(z + 2.0, y), (z - 5.0, y - 4.0), (z - 5.0, y + 4.0)], colour);
        }
        c.circle((x.at(r.ratio), y), 3.5, colour, "none");
        c.end();
    }
    Ok(c.finish())
}

/// A tick's ratio: `1.05`, `0.98`, `0.01`, `1,000`.
pub fn ratio_text(v: f64) -> String {
    if v >= 100.0 {
        crate::text::format::number(v)
    } else if v >= 0.001 {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, ratio: f64, mark: Mark) -> Interval {
        Interval { name: name.into(), ratio, ci: [ratio * 0.98, ratio * 1.02], mark, band: None, note: format!("{name}: {ratio}") }
    }

    #[test]
    fn one_interval_per_row_coloured_by_verdict_sorted_by_ratio() {
        let rows = vec![
            row("a.same", 1.0, Mark::Same),
            row("b.worse", 1.3, Mark::Worse),
            row("c.better", 0.7, Mark::Better),
            row("d.unknown", 1.05, Mark::Unknown),
        ];
        let svg = chart("compare", "candidate / base", &rows, Some(0.02)).unwrap();
        // One line and one dot per row, each in its verdict's colour.
        for m in [Mark::Worse, Mark::Better, Mark::Same, Mark::Unknown] {
            let dots = svg.matches(&format!("r=\"3.5\" fill=\"{}\"", m.colour())).count();
            assert_eq!(dots, 2, "{m:?}: the row's dot and the legend's:\n{svg}");
        }
        // Sorted by ratio, largest first.
        let at = |s: &str| svg.find(&format!(">{s}</text>")).unwrap_or_else(|| panic!("{s} in\n{svg}"));
        assert!(at("b.worse") < at("d.unknown") && at("d.unknown") < at("a.same") && at("a.same") < at("c.better"));
        assert!(svg.contains("SAME band (±2%)"), "{svg}");
        assert!(!svg.contains("log scale"), "a span under 30x is linear");
        assert!(svg.contains("width=\"720\""));
    }

    #[test]
    fn a_tall_plot_has_its_axis_figures_above_its_rows_too() {
        let few: Vec<_> = (0..LABELS_ABOVE_FROM).map(|i| row(&format!("w.{i}"), 1.0 + i as f64 / 100.0, Mark::Unknown)).collect();
        let many: Vec<_> = (0..40).map(|i| row(&format!("w.{i}"), 1.0 + i as f64 / 100.0, Mark::Unknown)).collect();
        let ticks = |svg: &str| svg.matches(">1.1</text>").count();
        let (short, tall) = (chart("t", "x", &few, None).unwrap(), chart("t", "x", &many, None).unwrap());
        assert!(ticks(&short) <= 1, "{short}");
        assert_eq!(ticks(&tall), 2, "the same figure below and above: {tall}");
    }

    #[test]
    fn a_thousandfold_span_is_drawn_on_a_log_axis() {
        let rows = vec![row("a", 0.01, Mark::Better), row("b", 10.0, Mark::Worse)];
        let svg = chart("t", "candidate / base", &rows, None).unwrap();
        assert!(svg.contains("candidate / base (log scale)"), "{svg}");
        assert!(svg.contains(">0.01</text>") && svg.contains(">10</text>"), "decade ticks:\n{svg}");
    }

    #[test]
    fn an_interval_far_wider_than_the_ratios_is_cut_with_an_arrow() {
        let mut wide = row("wide", 0.8, Mark::Unknown);
        wide.ci = [0.001, 600.0];
        let svg = chart("t", "x", &[row("a", 1.0, Mark::Same), wide], Some(0.02)).unwrap();
        assert_eq!(svg.matches("<polygon").count(), 2, "{svg}");
        assert!(!svg.contains("log scale"), "the axis spans the ratios, not the 600,000x interval");
    }

    #[test]
    fn nothing_to_draw_says_why_and_long_names_keep_their_whole_text_in_a_tooltip() {
        assert!(chart("t", "x", &[], None).is_err());
        let long = "os.syscall-with-a-very-long-name workers=1, mode=something-rather-long-indeed";
        let svg = chart("t", "x", &[row(long, 1.0, Mark::Same)], None).unwrap();
        assert!(svg.contains(&format!("<title>{long}</title>")) && svg.contains('…'), "{svg}");
    }

    #[test]
    fn only_the_rows_farthest_from_one_are_drawn_past_the_limit() {
        let rows: Vec<Interval> = (0..MAX_ROWS + 20).map(|i| row(&format!("r{i}"), 1.0 + i as f64 / 1000.0, Mark::Same)).collect();
        let svg = chart("t", "x", &rows, None).unwrap();
        assert_eq!(svg.matches("<g><title>").count(), MAX_ROWS);
        assert!(svg.contains(&format!("the {MAX_ROWS} rows farthest from 1 of {}", MAX_ROWS + 20)));
        assert!(!svg.contains(">r0</text>") && svg.contains(&format!(">r{}</text>", MAX_ROWS + 19)));
    }
}
