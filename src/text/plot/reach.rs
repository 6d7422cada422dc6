//! What each row of a `noise` run can see: one line per row, a dot at the
//! smallest change an A/B run like it can call DIFFERENT (its Sees), a ring
//! at the spread of its pairs' log ratios, on a percent axis (logarithmic
//! where they span more than 30x) with the 2%, 5% and 10% changes marked:
//! a row whose dot lies left of a line can see that change.

use super::canvas::{Anchor, Axis, Canvas, Swatch, SwatchFn, TEXT, TITLE, WIDTH, fit, legend, row_labels, thinned};
use crate::text::format;

/// One row: its name, the smallest change it can see and its spread
/// (fractions).
#[derive(Clone, Debug)]
pub struct Reach {
    pub name: String,
    pub sees: Option<f64>,
    pub spread: Option<f64>,
}

/// The most rows drawn (those that see least first: the tables hold all).
pub const MAX_ROWS: usize = 100;

const ROW: f64 = 16.0;
const LEFT: f64 = 250.0;
const SEES: &str = "#1f77b4";
const SPREAD: &str = "#888888";

/// The chart of `rows`, the changes of `marks` (fractions) drawn as lines;
/// `Err` with why when no row has a Sees.
pub fn chart(title: &str, rows: &[Reach], marks: &[f64]) -> Result<String, String> {
    let mut rows: Vec<&Reach> = rows.iter().filter(|r| r.sees.is_some_and(|s| s > 0.0 && s.is_finite())).collect();
    if rows.is_empty() {
        return Err("no row was compared (a row needs pairs of trials in two rounds)".into());
    }
    let all = rows.len();
    rows.sort_by(|a, b| b.sees.unwrap_or(0.0).total_cmp(&a.sees.unwrap_or(0.0)));
    rows.truncate(MAX_ROWS);
    let title = if all > rows.len() { format!("{title} (the {} that see least of {all})", rows.len()) } else { title.to_string() };
    let values = rows.iter().flat_map(|r| [r.sees, r.spread]).flatten().filter(|v| *v > 0.0 && v.is_finite()).chain(marks.iter().copied());
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    let x = Axis::over(lo, hi, 0.05, (LEFT, WIDTH - 20.0));

    let dot: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.circle((x, y), 4.0, SEES, "none"));
    let ring: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.circle((x, y), 3.5, "none", SPREAD));
    let entries: Vec<(String, &SwatchFn)> =
        vec![("smallest change it can see (Sees)".into(), dot.as_ref()), ("spread of its pairs' log ratios".into(), ring.as_ref())];
    let legend_h = legend(&mut Canvas::new(WIDTH, 0.0), (8.0, 0.0), WIDTH - 16.0, &entries);
    let top = 8.0 + TITLE + 8.0 + legend_h + TEXT + 8.0;
    let bottom = top + rows.len() as f64 * ROW;
    let mut c = Canvas::new(WIDTH, bottom + 14.0 + 2.0 * TEXT + 12.0);
    let (t, cut) = fit(&title, WIDTH - 16.0, TITLE);
    c.text_styled((8.0, 8.0 + TITLE), &t, TITLE, Anchor::Start, cut.then_some(title.as_str()), "font-weight=\"bold\"");
    legend(&mut c, (8.0, 8.0 + TITLE + 8.0 + TEXT), WIDTH - 16.0, &entries);

    for (v, l) in thinned(&x, x.ticks(6), &|v| format::band(v), None) {
        let px = x.at(v);
        c.line((px, top), (px, bottom), "#eeeeee", 1.0, false);
        c.text((px, bottom + 6.0 + TEXT), &l, TEXT, Anchor::Middle, None);
    }
    for m in marks {
        let px = x.at(*m);
        c.line((px, top - 4.0), (px, bottom), "#d62728", 1.0, true);
        c.text((px, top - 6.0), &format::band(*m), TEXT, Anchor::Middle, None);
    }
    c.line((LEFT, bottom), (WIDTH - 20.0, bottom), "#555555", 1.0, false);
    let desc = format!("change, % of the median{}", if x.log { " (log scale)" } else { "" });
    c.text(((LEFT + WIDTH - 20.0) / 2.0, bottom + 12.0 + 2.0 * TEXT), &desc, TEXT, Anchor::Middle, None);
    let names = row_labels(&rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), LEFT - 16.0, TEXT);
    for (i, (r, name)) in rows.iter().zip(&names).enumerate() {
        let y = top + (i as f64 + 0.5) * ROW;
        c.text((LEFT - 8.0, y + TEXT * 0.35), name, TEXT, Anchor::End, Some(&r.name));
        let sees = r.sees.unwrap_or(0.0);
        let spread = r.spread.map_or_else(|| "n/a".to_string(), format::percent);
        c.group(&format!("{}: sees a change of {} or more; spread {spread}", r.name, format::percent(sees)));
        if let Some(s) = r.spread.filter(|s| *s > 0.0) {
            c.line((x.at(s), y), (x.at(sees), y), "#cccccc", 1.0, false);
            c.circle((x.at(s), y), 3.5, "none", SPREAD);
        }
        c.circle((x.at(sees), y), 4.0, SEES, "none");
        c.end();
    }
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dot_per_row_at_what_it_sees_with_the_change_lines_in_percent() {
        let rows = vec![
            Reach { name: "a".into(), sees: Some(0.01), spread: Some(0.004) },
            Reach { name: "b".into(), sees: Some(0.08), spread: Some(0.03) },
            Reach { name: "c".into(), sees: None, spread: None },
        ];
        let svg = chart("What each row can see", &rows, &[0.02, 0.05, 0.10]).unwrap();
        assert_eq!(svg.matches(&format!("r=\"4\" fill=\"{SEES}\"")).count(), 2 + 1, "a dot per compared row, one in the legend");
        assert_eq!(svg.matches("stroke-dasharray").count(), 3, "the 2/5/10% lines");
        assert!(svg.contains(">2%</text>") && svg.contains(">10%</text>"), "{svg}");
        let at = |s: &str| svg.find(&format!(">{s}</text>")).unwrap();
        assert!(at("b") < at("a"), "the row that sees least first");
        assert!(chart("t", &rows[2..], &[0.02]).is_err());
    }
}
