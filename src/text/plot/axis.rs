//! What every chart shares so that it reads as shown: the text sizes (at
//! least [`MIN_TEXT_PX`] as drawn; the page shows a plot at the size it was
//! drawn), a value axis in the scaled unit of the tables ([`ValueAxis`]:
//! tick labels through `text::format::scaled`, a log axis where the values
//! span more than [`LOG_SPAN`] times), x labels that never overlap
//! ([`fit_labels`]: wrapped at spaces into a slot, or rotated), and legends
//! without what every entry shares ([`shared_words`]). Pure: numbers and
//! text in, numbers and text out.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use crate::model::Unit;
use crate::text::format;

/// The font family of every chart.
pub const FONT: &str = "sans-serif";
/// The smallest text a chart draws, in pixels as drawn (and shown).
pub const MIN_TEXT_PX: u32 = 12;
/// The size of a chart's title.
pub const TITLE_PX: u32 = 16;
/// The size of tick labels, axis descriptions and legend entries.
pub const LABEL_PX: u32 = MIN_TEXT_PX;
/// The height of one line of [`LABEL_PX`] text, spacing included.
pub const LINE_PX: u32 = 15;
/// The size to give plotters for text drawn `px` pixels high: its SVG
/// backend writes `font-size` as the size given divided by 1.24.
pub fn plotters_size(px: u32) -> f64 {
    px as f64 * 1.24
}

/// Above this ratio of the largest to the smallest positive value, a value
/// axis is logarithmic: on a linear one the small values would be flat on
/// the axis.
pub const LOG_SPAN: f64 = 30.0;

/// The width of `text` at `font_px`, estimated on the wide side (sans-serif
/// averages about 0.55 em a character; digits and capitals take more).
pub fn text_px(text: &str, font_px: f64) -> f64 {
    text.chars().map(|c| if c.is_ascii_uppercase() || "mwMW%@".contains(c) { 0.85 } else { 0.62 }).sum::<f64>() * font_px
}

/// `text` cut to fit `max_px` at `font_px`, an ellipsis marking the cut.
pub fn fit_text(text: &str, max_px: f64, font_px: f64) -> String {
    if text_px(text, font_px) <= max_px {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        if text_px(&format!("{out}{c}…"), font_px) > max_px {
            break;
        }
        out.push(c);
    }
    format!("{out}…")
}

/// Each of `names` wrapped at spaces into lines no wider than `slot_px` at
/// `font_px`, at most `max_lines` each; `None` when one does not fit (a
/// word wider than the slot, or more lines than allowed): then the labels
/// must be rotated or the slot widened.
pub fn fit_labels(names: &[String], slot_px: f64, font_px: f64, max_lines: usize) -> Option<Vec<Vec<String>>> {
    names
        .iter()
        .map(|name| {
            let mut lines: Vec<String> = Vec::new();
            for word in name.split_whitespace() {
                if text_px(word, font_px) > slot_px {
                    return None;
                }
                match lines.last_mut() {
                    Some(last) if text_px(&format!("{last} {word}"), font_px) <= slot_px => {
                        last.push(' ');
                        last.push_str(word);
                    }
                    _ => lines.push(word.to_string()),
                }
            }
            (lines.len() <= max_lines).then_some(lines)
        })
        .collect()
}

/// How x labels of categories are drawn: wrapped into lines that fit their
/// slot, or rotated a quarter turn (too many or too long to wrap).
pub enum XLabels {
    /// Each category's lines, centred under it.
    Wrapped(Vec<Vec<String>>),
    /// Each category's label, read bottom to top, cut to `max_px`.
    Rotated { names: Vec<String>, max_px: f64 },
}

impl XLabels {
    /// The height the labels take below the axis, in pixels.
    pub fn height(&self) -> u32 {
        match self {
            XLabels::Wrapped(lines) => lines.iter().map(Vec::len).max().unwrap_or(1) as u32 * LINE_PX,
            XLabels::Rotated { names, max_px } => {
                names.iter().map(|n| text_px(n, LABEL_PX as f64)).fold(0.0, f64::max).min(*max_px).ceil() as u32 + 4
            }
        }
    }
}

/// The slot (pixels per category) and the labels of `names` on a chart whose
/// plotting area is wanted at least `min_slot` per category and at most
/// `max_area_px` wide: the narrowest slot from `min_slot` up in which each
/// wraps into 3 lines or fewer, else rotated labels (a slot of at least
/// 2 lines' height, cut at 200 px).
pub fn category_labels(names: &[String], min_slot: f64, max_area_px: f64) -> (f64, XLabels) {
    let n = names.len().max(1) as f64;
    let mut slot = min_slot;
    while slot * n <= max_area_px {
        if let Some(lines) = fit_labels(names, slot - 8.0, LABEL_PX as f64, 3) {
            return (slot, XLabels::Wrapped(lines));
        }
        slot += 10.0;
    }
    let slot = (max_area_px / n).max(2.0 * LINE_PX as f64);
    (slot, XLabels::Rotated { names: names.iter().map(|s| fit_text(s, 200.0, LABEL_PX as f64)).collect(), max_px: 200.0 })
}

/// The words every one of two or more `labels` holds (space-separated, in
/// the order of the first label), and each label without them: what a
/// legend shows once (in the title) and what it shows per entry. A label
/// left empty keeps its whole text. With fewer than two labels nothing is
/// shared.
pub fn shared_words(labels: &[String]) -> (String, Vec<String>) {
    if labels.len() < 2 {
        return (String::new(), labels.to_vec());
    }
    let words = |l: &String| l.split_whitespace().map(str::to_string).collect::<Vec<String>>();
    let shared: Vec<String> =
        words(&labels[0]).into_iter().filter(|w| labels[1..].iter().all(|l| l.split_whitespace().any(|x| x == w))).collect();
    let rest = labels
        .iter()
        .map(|l| {
            let kept: Vec<String> = words(l).into_iter().filter(|w| !shared.contains(w)).collect();
            if kept.is_empty() { l.clone() } else { kept.join(" ") }
        })
        .collect();
    (shared.join(" "), rest)
}

/// The ends of an interval around `center` as an axis should count them:
/// each kept within 10 times the center, so that one wide interval (a
/// disturbed row's) does not squash every figure into a corner; its whisker
/// runs to the chart's edge ([`ValueAxis::pos`]).
pub fn interval_for_axis(center: f64, lo: f64, hi: f64) -> [f64; 3] {
    if center > 0.0 { [center, lo.max(center / 10.0), hi.min(center * 10.0)] } else { [center, lo, hi] }
}

/// A value axis (the y axis of every chart here): linear from zero, or
/// logarithmic (base 10) where the positive values span more than
/// [`LOG_SPAN`] times. Charts draw in the axis's coordinates: [`pos`]
/// of each value; its ticks are labelled in the scaled unit of the tables
/// (`format::scaled`: `50.00 ms`, not `50,000,000`), or as plain numbers
/// for a ratio (no unit).
///
/// [`pos`]: ValueAxis::pos
#[derive(Clone, Debug)]
pub struct ValueAxis {
    log: bool,
    lo: f64,
    hi: f64,
    unit: Option<Unit>,
    ticks: Vec<f64>,
}

impl ValueAxis {
    /// The axis for `values` (the data drawn: medians, interval ends,
    /// samples) in `unit`, with the share `headroom` (0 to 0.6) of its height
    /// left free above the data (for a legend).
    pub fn for_values(values: impl IntoIterator<Item = f64>, unit: Option<Unit>, headroom: f64) -> ValueAxis {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let max = values.iter().copied().fold(0.0, f64::max);
        let min_pos = values.iter().copied().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min);
        let log = values.iter().all(|&v| v > 0.0) && max / min_pos > LOG_SPAN;
        let room = 1.0 / (1.0 - headroom.clamp(0.0, 0.6));
        if log {
            let lo = min_pos.log10().floor();
            let hi = lo + (max.log10() - lo + 0.05) * room;
            // Every decade (with 2 and 5 times it over fewer than three), or
            // every second, third, ... one: at most 8 ticks.
            let few = hi - lo < 3.0;
            let every = (((hi - lo) / 8.0).ceil() as usize).max(1);
            let mut ticks: Vec<f64> = Vec::new();
            for d in ((lo as i32)..=(hi.floor() as i32)).step_by(every) {
                for m in if few { &[1.0, 2.0, 5.0][..] } else { &[1.0][..] } {
                    let t = (m * 10f64.powi(d)).log10();
                    if t >= lo && t <= hi {
                        ticks.push(t);
                    }
                }
            }
            ValueAxis { log, lo, hi, unit, ticks }
        } else {
            let hi = (max.max(f64::MIN_POSITIVE) * 1.05 * room).max(1e-12);
            // A step of 1, 2 or 5 times a power of ten giving 4 to 8 ticks.
            let rough = hi / 6.0;
            let p = 10f64.powf(rough.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| hi / s <= 8.0).unwrap_or(10.0 * p);
            let ticks = (0..).map(|i| i as f64 * step).take_while(|t| *t <= hi).take(20).collect();
            ValueAxis { log, lo: 0.0, hi, unit, ticks }
        }
    }

    /// Whether the axis is logarithmic.
    pub fn is_log(&self) -> bool {
        self.log
    }

    /// The coordinate of value `v`, kept on the axis: a value below its
    /// bottom (at or under zero on a log axis) sits on the bottom, one above
    /// its top on the top (a whisker reaching out of the chart ends at its
    /// edge).
    pub fn pos(&self, v: f64) -> f64 {
        let c = if self.log { if v > 0.0 { v.log10() } else { self.lo } } else { v };
        c.clamp(self.lo, self.hi)
    }

    /// The coordinate of the axis's bottom (where a bar starts).
    pub fn bottom(&self) -> f64 {
        self.lo
    }

    /// The value at coordinate `c`.
    pub fn value(&self, c: f64) -> f64 {
        if self.log { 10f64.powf(c) } else { c }
    }

    /// The label of the tick at coordinate `c`: the value in its scaled unit.
    pub fn label(&self, c: f64) -> String {
        let v = self.value(c);
        // A linear tick a rounding error away from zero is zero.
        let v = if !self.log && v.abs() < 1e-9 * self.hi.abs() { 0.0 } else { v };
        match self.unit {
            Some(u) => format::scaled(v, u),
            None => format::number(v),
        }
    }

    /// A description of the axis: `what`, with `(log scale)` when it is one.
    pub fn desc(&self, what: &str) -> String {
        if self.is_log() { format!("{what} (log scale)") } else { what.to_string() }
    }

    /// The coordinates of the ticks.
    pub fn ticks(&self) -> &[f64] {
        &self.ticks
    }
}

impl Ranged for ValueAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        let f = if span > 0.0 { (value - self.lo) / span } else { 0.0 };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_spanning_1000x_get_a_log_axis_with_scaled_decade_ticks() {
        let axis = ValueAxis::for_values([0.3, 5.0, 369.0], Some(Unit::NsPerOp), 0.0);
        assert!(axis.is_log());
        let labels: Vec<String> = axis.ticks().iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["0.100 ns/op", "1.00 ns/op", "10.00 ns/op", "100 ns/op"]);
        // Far above its smallest values, a log axis still labels them as they are.
        let tall = ValueAxis::for_values([0.5, 1e9], Some(Unit::Ns), 0.6);
        assert!(tall.ticks().iter().all(|&t| tall.label(t) != "0 ns"), "{:?}", tall.ticks());
        assert!(axis.pos(0.3) > axis.bottom() && axis.pos(369.0) < axis.range().end);
        // 20x: linear from zero.
        let lin = ValueAxis::for_values([5.0, 100.0], Some(Unit::Ns), 0.0);
        assert!(!lin.is_log() && lin.bottom() == 0.0);
        // An interval reaching 1e-20 neither makes 20 decades of ticks nor flattens the bars.
        let values = [100.0, 120.0, 1e-20, 200.0].into_iter().chain(interval_for_axis(100.0, 1e-20, 5e4));
        let wide = ValueAxis::for_values(values, Some(Unit::NsPerOp), 0.0);
        assert!(wide.ticks().len() <= 9, "{:?}", wide.ticks());
        let wide = ValueAxis::for_values(interval_for_axis(100.0, 1e-20, 5e4), Some(Unit::NsPerOp), 0.0);
        assert_eq!(wide.bottom(), 1.0, "a decade below the tenth of the median");
        assert_eq!(wide.pos(1e-20), wide.bottom());
    }

    #[test]
    fn a_linear_axis_labels_its_ticks_in_the_tables_unit() {
        let axis = ValueAxis::for_values([52_970_000.0, 60_000_000.0], Some(Unit::Ns), 0.0);
        let labels: Vec<String> = axis.ticks().iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels.first().map(String::as_str), Some("0 ns"));
        assert!(labels.contains(&"50.00 ms".to_string()), "{labels:?}");
        assert!(labels.iter().all(|l| !l.contains(",000")), "{labels:?}");
        let ratio = ValueAxis::for_values([1.0, 1.9], None, 0.0);
        assert!(ratio.ticks().iter().map(|&t| ratio.label(t)).any(|l| l == "1.00"));
    }

    #[test]
    fn long_labels_wrap_into_their_slot_or_turn() {
        let names = vec!["per-item global-queue 1".to_string(), "per-item global-queue 2".to_string()];
        let lines = fit_labels(&names, 110.0, 12.0, 3).unwrap();
        assert_eq!(lines[0], ["per-item", "global-queue 1"]);
        for l in lines.iter().flatten() {
            assert!(text_px(l, 12.0) <= 110.0, "{l}");
        }
        assert!(fit_labels(&names, 40.0, 12.0, 3).is_none(), "global-queue is wider than 40 px");
        let (slot, labels) = category_labels(&names, 60.0, 1000.0);
        assert!(slot >= 90.0 && matches!(labels, XLabels::Wrapped(_)));
        let many: Vec<String> = (0..300).map(|i| format!("a-rather-long-row-name-{i}")).collect();
        assert!(matches!(category_labels(&many, 60.0, 2000.0).1, XLabels::Rotated { .. }));
    }

    #[test]
    fn shared_words_are_said_once() {
        let labels = vec!["vm-1 runtime=rayon workers=1".to_string(), "vm-1 runtime=spawn workers=1".to_string()];
        let (shared, rest) = shared_words(&labels);
        assert_eq!(shared, "vm-1 workers=1");
        assert_eq!(rest, ["runtime=rayon", "runtime=spawn"]);
        assert_eq!(shared_words(&labels[..1]), (String::new(), labels[..1].to_vec()));
    }
}
