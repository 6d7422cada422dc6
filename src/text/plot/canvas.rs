//! The small SVG writer of the pages' charts (`forest`, `heatmap`,
//! `trend`, `reach`, `claims`): shapes and text written at the size they
//! are shown (a fixed width that fits a page 800 px wide, text of
//! [`TEXT`] px and more), every text escaped ([`escape`]) once, a long
//! label shortened with its whole text in a `<title>` (its tooltip), and
//! axes ([`Axis`]) that go logarithmic where the values span more than
//! [`LOG_SPAN`] times, with tick labels thinned so that none overlaps.
//! Pure: it returns text.

use std::fmt::Write;

use crate::text::document::html::escape;

/// The width every chart of a page is drawn at: it fits the column of a
/// page in a window 800 px wide, and is shown at that size.
pub const WIDTH: f64 = 720.0;

/// The size of tick labels, row names and legends (px, as shown).
pub const TEXT: f64 = 12.0;

/// The size of a chart's title.
pub const TITLE: f64 = 14.0;

/// Values that span more than this many times are drawn on a log axis.
pub const LOG_SPAN: f64 = 30.0;

/// The width of `s` drawn at `size` px, a little over the average of a
/// sans-serif face (digits and lower case), so that what is laid out by
/// it does not touch.
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.62
}

/// `s` cut to fit `px` at `size` (an ellipsis at its end), and whether it
/// was cut.
pub fn fit(s: &str, px: f64, size: f64) -> (String, bool) {
    let max = ((px / (size * 0.62)).floor() as usize).max(2);
    if s.chars().count() <= max {
        return (s.to_string(), false);
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    (out, true)
}

/// The rows' names (`workload name=value, ...` or `workload name=value
/// ...`) of one chart, shown in `px` at `size`, in one form: whole where
/// every name fits; else every one without its axes' names
/// (`npb.cg global-queue 2`, as the run tables print a workload's rows),
/// and one still too long with its workload cut (`alloc.random… 1000000
/// system`: the values, what tells rows apart, stay) or, where the values
/// alone do not fit, cut in its middle. Two names that would still read
/// the same keep their ends instead. The whole name goes in each label's
/// tooltip.
pub fn row_labels<S: AsRef<str>>(names: &[S], px: f64, size: f64) -> Vec<String> {
    let max = ((px / (size * 0.62)).floor() as usize).max(5);
    let count = |s: &str| s.chars().count();
    if names.iter().all(|n| count(n.as_ref()) <= max) {
        return names.iter().map(|n| n.as_ref().to_string()).collect();
    }
    let short: Vec<String> = names
        .iter()
        .map(|n| {
            n.as_ref()
                .split_whitespace()
                .map(|t| {
                    let t = t.trim_end_matches(',');
                    t.split_once('=').map_or(t, |(_, v)| v)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let cut = |s: &str| -> String {
        let n = count(s);
        if n <= max {
            return s.to_string();
        }
        let chars: Vec<char> = s.chars().collect();
        // The workload cut at its end, the values whole, where they leave it 4 characters.
        if let Some(sp) = s.find(' ') {
            let values = count(&s[sp..]);
            if values + 5 <= max {
                return format!("{}…{}", chars[..max - values - 1].iter().collect::<String>(), &s[sp..]);
            }
        }
        let head = (max - 1) / 2;
        let tail = max - 1 - head;
        format!("{}…{}", chars[..head].iter().collect::<String>(), chars[n - tail..].iter().collect::<String>())
    };
    let mut labels: Vec<String> = short.iter().map(|s| cut(s)).collect();
    // Labels that read the same for rows that are not: each keeps its end.
    let same: Vec<usize> = (0..labels.len())
        .filter(|&i| (0..labels.len()).any(|j| j != i && labels[j] == labels[i] && names[j].as_ref() != names[i].as_ref()))
        .collect();
    for i in same {
        // Short forms alike (`w a=1`, `w b=1`) tell apart only by the whole name.
        let own = if count(&short[i]) <= max { names[i].as_ref() } else { short[i].as_str() };
        let chars: Vec<char> = own.chars().collect();
        labels[i] = if chars.len() <= max {
            own.to_string()
        } else {
            format!("…{}", chars[chars.len() - (max - 1)..].iter().collect::<String>())
        };
    }
    labels
}

/// How a text is placed.
#[derive(Clone, Copy)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being drawn.
pub struct Canvas {
    width: f64,
    height: f64,
    body: String,
}

/// A number as an SVG coordinate: one decimal at most.
fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() { format!("{}", r as i64) } else { format!("{r:.1}") }
}

impl Canvas {
    pub fn new(width: f64, height: f64) -> Canvas {
        Canvas { width, height, body: String::new() }
    }

    /// A rectangle; `attrs` are further attributes (`stroke="#000"`).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, attrs: &str) {
        let _ = writeln!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"{}{attrs}/>",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            if attrs.is_empty() { "" } else { " " }
        );
    }

    /// A line of `width` px; dashed where `dash`.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64, dash: bool) {
        let dash = if dash { " stroke-dasharray=\"4 3\"" } else { "" };
        let _ = writeln!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"{dash}/>",
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            n(width)
        );
    }

    /// A circle filled with `fill` (`none` for a ring of `stroke`).
    pub fn circle(&mut self, (cx, cy): (f64, f64), r: f64, fill: &str, stroke: &str) {
        let _ = writeln!(self.body, "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{fill}\" stroke=\"{stroke}\"/>", n(cx), n(cy), n(r));
    }

    /// A line through `points`, not filled.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{},{}", n(*x), n(*y))).collect();
        let _ =
            writeln!(self.body, "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{}\"/>", pts.join(" "), n(width));
    }

    /// A closed shape through `points`, filled.
    pub fn polygon(&mut self, points: &[(f64, f64)], fill: &str) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{},{}", n(*x), n(*y))).collect();
        let _ = writeln!(self.body, "<polygon points=\"{}\" fill=\"{fill}\"/>", pts.join(" "));
    }

    /// Text at `size` px; `title`, where given, is its tooltip (the whole
    /// of a shortened label).
    pub fn text(&mut self, (x, y): (f64, f64), s: &str, size: f64, anchor: Anchor, title: Option<&str>) {
        self.text_styled((x, y), s, size, anchor, title, "");
    }

    /// [`Canvas::text`] with further attributes (`font-weight="bold"`,
    /// `transform="rotate(-45 10 20)"`).
    pub fn text_styled(&mut self, (x, y): (f64, f64), s: &str, size: f64, anchor: Anchor, title: Option<&str>, attrs: &str) {
        let title = title.map_or_else(String::new, |t| format!("<title>{}</title>", escape(t)));
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{}{attrs}>{title}{}</text>",
            n(x),
            n(y),
            n(size),
            anchor.as_str(),
            if attrs.is_empty() { "" } else { " " },
            escape(s)
        );
    }

    /// Opens a group whose tooltip is `title` (every shape drawn until
    /// [`Canvas::end`] shows it).
    pub fn group(&mut self, title: &str) {
        let _ = writeln!(self.body, "<g><title>{}</title>", escape(title));
    }

    /// Opens a link to `href` (escaped), around what is drawn until [`Canvas::end_link`].
    pub fn link(&mut self, href: &str) {
        let _ = writeln!(self.body, "<a href=\"{}\">", escape(href));
    }

    pub fn end_link(&mut self) {
        self.body.push_str("</a>\n");
    }

    /// Closes the group [`Canvas::group`] opened.
    pub fn end(&mut self) {
        self.body.push_str("</g>\n");
    }

    /// The SVG document, drawn at its size (its `width` and `height` in
    /// px, its `viewBox` the same), text in the page's sans-serif face.
    pub fn finish(self) -> String {
        let (w, h) = (n(self.width), n(self.height.ceil()));
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             font-family=\"sans-serif\" fill=\"#222\">\n<rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>\n{}</svg>\n",
            self.body
        )
    }
}

/// An axis: values from `lo` to `hi` laid on pixels `from` to `to`,
/// logarithmic or linear.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub from: f64,
    pub to: f64,
}

impl Axis {
    /// An axis over values `lo..=hi` (padded by `pad` of the span at each
    /// end), logarithmic where they are all above zero and span more than
    /// [`LOG_SPAN`] times.
    pub fn over(lo: f64, hi: f64, pad: f64, (from, to): (f64, f64)) -> Axis {
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        let log = lo > 0.0 && hi / lo > LOG_SPAN;
        let (lo, hi) = if log {
            let (a, b) = (lo.ln(), hi.ln());
            let p = (b - a) * pad;
            ((a - p).exp(), (b + p).exp())
        } else {
            let span = hi - lo;
            let p = if span > 0.0 { span * pad } else { lo.abs().max(1e-12) * 0.05 };
            (lo - p, hi + p)
        };
        Axis { lo, hi, log, from, to }
    }

    /// The pixel of `v`, kept within the axis.
    pub fn at(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(f64::MIN_POSITIVE).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        let f = if f.is_finite() { f.clamp(0.0, 1.0) } else { 0.5 };
        self.from + f * (self.to - self.from)
    }

    /// Round values within the axis to tick, about `want` of them: 1, 2, 5
    /// times a power of ten (powers of ten alone on a log axis of more than
    /// two decades).
    pub fn ticks(&self, want: usize) -> Vec<f64> {
        let inside = |v: &f64| *v >= self.lo * (1.0 - 1e-9) - 1e-300 && *v <= self.hi * (1.0 + 1e-9) + 1e-300;
        if self.log {
            let (a, b) = (self.lo.log10().floor() as i32, self.hi.log10().ceil() as i32);
            let steps: &[f64] = if b - a > 2 { &[1.0] } else { &[1.0, 2.0, 5.0] };
            let mut out: Vec<f64> = (a..=b).flat_map(|e| steps.iter().map(move |s| s * 10f64.powi(e))).filter(inside).collect();
            if out.len() < 2 {
                // A span of less than a decade around no round value: its ends.
                out = vec![self.lo, self.hi];
            }
            return out;
        }
        let raw = (self.hi - self.lo) / want.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
        let first = (self.lo / step).ceil() as i64;
        let last = (self.hi / step).floor() as i64;
        (first..=last).map(|i| i as f64 * step).collect()
    }
}

/// The ticks of `ticks` whose labels (`label` of each, drawn at [`TEXT`]
/// px along the axis `axis`) do not overlap: every k-th, for the smallest
/// k that leaves a gap between neighbours. `across` is how much room a
/// label takes along the axis when the labels are not side by side (a
/// vertical axis: the text's height), `None` for its width.
pub fn thinned(axis: &Axis, ticks: Vec<f64>, label: &dyn Fn(f64) -> String, across: Option<f64>) -> Vec<(f64, String)> {
    let labelled: Vec<(f64, String)> = ticks.into_iter().map(|t| (t, label(t))).collect();
    let room = |s: &str| across.unwrap_or_else(|| text_width(s, TEXT)) + 6.0;
    for k in 1..=labelled.len().max(1) {
        let kept: Vec<&(f64, String)> = labelled.iter().step_by(k).collect();
        let fits = kept.windows(2).all(|w| {
            let gap = (axis.at(w[1].0) - axis.at(w[0].0)).abs();
            gap >= (room(&w[0].1) + room(&w[1].1)) / 2.0
        });
        if fits {
            return kept.into_iter().cloned().collect();
        }
    }
    labelled.into_iter().take(1).collect()
}

/// Draws a legend entry's swatch centred at (x, y).
pub type SwatchFn = dyn Fn(&mut Canvas, f64, f64);
/// A swatch as a legend's entries hold it.
pub type Swatch = Box<SwatchFn>;

/// A legend laid out in lines across `width` from `x`, at `y`: each entry a
/// swatch drawn by `swatch` (at its left, centred on the text's middle) and
/// its text. Returns the height it took.
pub fn legend(c: &mut Canvas, (x, y): (f64, f64), width: f64, entries: &[(String, &SwatchFn)]) -> f64 {
    let (mut cx, mut cy) = (x, y);
    let line = TEXT + 6.0;
    for (text, swatch) in entries {
        let w = 18.0 + text_width(text, TEXT) + 14.0;
        if cx > x && cx + w > x + width {
            cx = x;
            cy += line;
        }
        swatch(c, cx + 6.0, cy - TEXT * 0.35);
        c.text((cx + 16.0, cy), text, TEXT, Anchor::Start, None);
        cx += w;
    }
    cy - y + line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_over_a_thousandfold_span_is_logarithmic_with_decade_ticks() {
        let a = Axis::over(1.0, 1000.0, 0.0, (0.0, 300.0));
        assert!(a.log);
        assert_eq!(a.ticks(5), vec![1.0, 10.0, 100.0, 1000.0]);
        assert!((a.at(10.0) - 100.0).abs() < 1e-6, "a decade is a third of the axis");
        let l = Axis::over(0.95, 1.10, 0.0, (0.0, 300.0));
        assert!(!l.log, "a span of 1.16x is linear");
        assert_eq!(l.ticks(4).len(), 4, "{:?}", l.ticks(4));
        assert!(l.ticks(4).iter().all(|t| (t * 20.0 - (t * 20.0).round()).abs() < 1e-9), "{:?}", l.ticks(4));
    }

    #[test]
    fn tick_labels_are_thinned_until_none_overlaps() {
        let a = Axis::over(0.0, 100.0, 0.0, (0.0, 100.0));
        let ticks: Vec<f64> = (0..=100).step_by(5).map(f64::from).collect();
        let kept = thinned(&a, ticks, &|v| format!("{v:.0} ms"), None);
        assert!((2..21).contains(&kept.len()), "{kept:?}");
        for w in kept.windows(2) {
            assert!(a.at(w[1].0) - a.at(w[0].0) >= text_width(&w[0].1, TEXT) + 6.0, "{kept:?}");
        }
    }

    #[test]
    fn long_row_names_drop_their_axes_names_then_their_workloads_end_and_rows_stay_apart() {
        let px = 28.0 * TEXT * 0.62;
        assert_eq!(row_labels(&["os.syscall", "cpu.primes workers=1"], px, TEXT), ["os.syscall", "cpu.primes workers=1"]);
        let names = [
            "os.syscall",
            "npb.cg runtime=global-queue, workers=1",
            "npb.cg runtime=global-queue, workers=2",
            "alloc.larson workers=1 allocator=system",
            "alloc.random-mixed iterations=1000000 allocator=jemalloc",
            "alloc.random-mixed iterations=100000 allocator=jemalloc",
            "rt.parallel-for mode=per-item, runtime=global-queue, workers=2",
            "hw.thp advice=nohugepage access=sequential phase=first-touch",
            "hw.thp advice=nohugepage access=random phase=first-touch",
        ];
        let labels = row_labels(&names, px, TEXT);
        // One form for the chart: every row without its axes' names.
        assert_eq!(labels[..4], ["os.syscall", "npb.cg global-queue 1", "npb.cg global-queue 2", "alloc.larson 1 system"]);
        // The values stay whole; the workload gives way.
        assert_eq!(labels[4], "alloc.rand… 1000000 jemalloc");
        assert_eq!(labels[5], "alloc.rando… 100000 jemalloc");
        assert!(labels[6].starts_with("rt.parallel") && labels[6].ends_with("queue 2") && labels[6].contains('…'), "{labels:?}");
        for l in &labels {
            assert!(text_width(l, TEXT) <= px + 1e-9, "{l}");
        }
        for (i, a) in labels.iter().enumerate() {
            assert!(labels[i + 1..].iter().all(|b| b != a), "{a} twice: {labels:?}");
        }
        // Names whose cut forms read the same keep their ends.
        let twins =
            ["alloc.random-mixed-a iterations=1000000 allocator=jemalloc", "alloc.random-mixed-b iterations=1000000 allocator=jemalloc"];
        let l = row_labels(&twins, px, TEXT);
        assert!(l[0] != l[1] && l[0].starts_with('…') && l[0].ends_with("-a 1000000 jemalloc"), "{l:?}");
        assert!(text_width(&l[0], TEXT) <= px + 1e-9, "{l:?}");
        // Rows whose values read the same under other axes' names, in a chart that must shorten.
        let alike = ["w.x mode=a", "w.x kind=a", "rt.parallel-for mode=per-item, runtime=global-queue, workers=2"];
        let l = row_labels(&alike, px, TEXT);
        assert_eq!(l[..2], ["w.x mode=a", "w.x kind=a"], "{l:?}");
    }

    #[test]
    fn text_is_escaped_and_a_long_label_shortened_with_its_whole_text_as_tooltip() {
        let mut c = Canvas::new(100.0, 20.0);
        let name = "a <very> long row name & more, more and more";
        let (shown, cut) = fit(name, 100.0, TEXT);
        assert!(cut && shown.ends_with('…') && text_width(&shown, TEXT) <= 100.0, "{shown}");
        c.text((0.0, 10.0), &shown, TEXT, Anchor::Start, Some(name));
        let svg = c.finish();
        assert!(svg.contains("<title>a &lt;very&gt; long row name &amp; more, more and more</title>"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.contains("width=\"100\" height=\"20\" viewBox=\"0 0 100 20\""), "{svg}");
    }
}
