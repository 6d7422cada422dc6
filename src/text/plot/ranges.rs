//! The claims of `check-claims` against what the run measured: one line
//! per claim, each on its own scale (claims differ in unit and size), the
//! claimed range shaded (an open end drawn as an arrow to the edge), the
//! measured 95% interval a black line with the median a dot (green
//! within, red outside), and the median scaled as the tables print it at
//! the right.

use super::canvas::{Anchor, Axis, Canvas, Swatch, SwatchFn, TEXT, TITLE, WIDTH, fit, legend, row_labels};
use crate::model::Unit;
use crate::text::format;

/// How a claim stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    Within,
    Outside,
    NotMeasured,
}

/// One claim checked.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    /// The claimed range (an end `None` is open).
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub median: Option<f64>,
    pub ci: Option<[f64; 2]>,
    pub unit: Option<Unit>,
    pub standing: Standing,
    /// Its tooltip.
    pub note: String,
}

const ROW: f64 = 24.0;
const LEFT: f64 = 230.0;
const PLOT_END: f64 = 580.0;
const RANGE: &str = "#c7e9c0";
/// An open end's arrow.
const OPEN: &str = "#74c476";
const WITHIN: &str = "#2ca02c";
const OUTSIDE: &str = "#d62728";

/// The chart of `checks`; `Err` with why when there is none.
pub fn chart(title: &str, checks: &[Check]) -> Result<String, String> {
    if checks.is_empty() {
        return Err("the file holds no claim".into());
    }
    let band: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.rect(x - 7.0, y - 5.0, 14.0, 10.0, RANGE, ""));
    let within: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| {
        c.line((x - 7.0, y), (x + 7.0, y), "#222222", 2.0, false);
        c.circle((x, y), 4.0, WITHIN, "none");
    });
    let outside: Swatch = Box::new(|c: &mut Canvas, x: f64, y: f64| c.circle((x, y), 4.0, OUTSIDE, "none"));
    let entries: Vec<(String, &SwatchFn)> = vec![
        ("claimed range".into(), band.as_ref()),
        ("measured median within, on its 95% interval".into(), within.as_ref()),
        ("outside".into(), outside.as_ref()),
    ];
    let legend_h = legend(&mut Canvas::new(WIDTH, 0.0), (8.0, 0.0), WIDTH - 16.0, &entries);
    let top = 8.0 + TITLE + 8.0 + legend_h + 6.0;
    let mut c = Canvas::new(WIDTH, top + checks.len() as f64 * ROW + 26.0);
    let (t, cut) = fit(title, WIDTH - 16.0, TITLE);
    c.text_styled((8.0, 8.0 + TITLE), &t, TITLE, Anchor::Start, cut.then_some(title), "font-weight=\"bold\"");
    legend(&mut c, (8.0, 8.0 + TITLE + 8.0 + TEXT), WIDTH - 16.0, &entries);
    let names = row_labels(&checks.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), LEFT - 16.0, TEXT);
    for (i, (k, name)) in checks.iter().zip(&names).enumerate() {
        let y = top + (i as f64 + 0.5) * ROW;
        c.text((LEFT - 8.0, y + TEXT * 0.35), name, TEXT, Anchor::End, Some(&k.name));
        c.group(&k.note);
        let scaled = |v: f64| k.unit.map_or_else(|| format::number(v), |u| format::scaled(v, u));
        let values: Vec<f64> =
            [k.lo, k.hi, k.median].into_iter().flatten().chain(k.ci.into_iter().flatten()).filter(|v| v.is_finite()).collect();
        if values.is_empty() {
            c.text(((LEFT + PLOT_END) / 2.0, y + TEXT * 0.35), "no range", TEXT, Anchor::Middle, None);
            c.end();
            continue;
        }
        let (lo, hi) = (values.iter().copied().fold(f64::INFINITY, f64::min), values.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        // Room beyond an open end, so that its arrow reads as open.
        let x = Axis::over(lo, hi, 0.25, (LEFT + 8.0, PLOT_END - 8.0));
        let (a, z) = (k.lo.map_or(LEFT, |v| x.at(v)), k.hi.map_or(PLOT_END, |v| x.at(v)));
        c.rect(a, y - 6.0, (z - a).max(2.0), 12.0, RANGE, "");
        if k.lo.is_none() {
            c.polygon(&[(LEFT - 2.0, y), (LEFT + 6.0, y - 6.0), (LEFT + 6.0, y + 6.0)], OPEN);
        }
        if k.hi.is_none() {
            c.polygon(&[(PLOT_END + 2.0, y), (PLOT_END - 6.0, y - 6.0), (PLOT_END - 6.0, y + 6.0)], OPEN);
        }
        match (k.standing, k.median) {
            (Standing::NotMeasured, _) | (_, None) => {
                c.text(((LEFT + PLOT_END) / 2.0, y + TEXT * 0.35), "not measured", TEXT, Anchor::Middle, None);
            }
            (s, Some(m)) => {
                if let Some([l, h]) = k.ci {
                    c.line((x.at(l), y), (x.at(h), y), "#222222", 2.0, false);
                }
                c.circle((x.at(m), y), 4.0, if s == Standing::Within { WITHIN } else { OUTSIDE }, "none");
                c.text((WIDTH - 8.0, y + TEXT * 0.35), &scaled(m), TEXT, Anchor::End, None);
            }
        }
        c.end();
    }
    let foot = top + checks.len() as f64 * ROW + 18.0;
    c.text(((LEFT + PLOT_END) / 2.0, foot), "each claim on its own scale", TEXT, Anchor::Middle, None);
    c.text((WIDTH - 8.0, foot), "median", TEXT, Anchor::End, None);
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, lo: Option<f64>, hi: Option<f64>, median: Option<f64>, standing: Standing) -> Check {
        Check {
            name: name.into(),
            lo,
            hi,
            median,
            ci: median.map(|m| [m * 0.99, m * 1.01]),
            unit: Some(Unit::OpsPerSec),
            standing,
            note: name.into(),
        }
    }

    #[test]
    fn each_claim_has_its_range_and_the_measured_interval_coloured_by_standing() {
        let checks = vec![
            check("alloc within", Some(58e6), Some(65e6), Some(61e6), Standing::Within),
            check("alloc below", Some(58e6), None, Some(40e6), Standing::Outside),
            check("absent", Some(1.0), Some(2.0), None, Standing::NotMeasured),
        ];
        let svg = chart("Claims against the run", &checks).unwrap();
        assert_eq!(svg.matches(&format!("fill=\"{RANGE}\"")).count(), 3 + 1, "three ranges and the legend's");
        assert_eq!(svg.matches(&format!("fill=\"{OPEN}\"")).count(), 1, "the open end's arrow");
        assert_eq!(svg.matches(&format!("r=\"4\" fill=\"{WITHIN}\"")).count(), 1 + 1);
        assert_eq!(svg.matches(&format!("r=\"4\" fill=\"{OUTSIDE}\"")).count(), 1 + 1);
        assert!(svg.contains(">61.00 M ops/s</text>") && svg.contains(">not measured</text>"), "scaled as the tables: {svg}");
        assert!(chart("t", &[]).is_err());
    }
}
