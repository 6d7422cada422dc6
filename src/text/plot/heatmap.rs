//! The heat map of `fleet`: one line per row, one column per host, each
//! cell coloured by the host's ratio to the fleet median (red the worse
//! way, blue the better, white at the median; full colour at 20% off),
//! an outlier framed in black, its ratio written where the cell has room.
//! Each host's name links to its run's report where it has one.

use super::canvas::{Anchor, Canvas, Swatch, SwatchFn, TEXT, TITLE, WIDTH, fit, legend, row_labels, text_width};

/// A host: its name and the link to its report.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub href: Option<String>,
}

/// One host's row.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    /// Median / fleet median.
    pub ratio: Option<f64>,
    /// Whether a ratio above 1 is worse (lower is better).
    pub higher_is_worse: bool,
    /// Beyond the noise band.
    pub outlier: bool,
    /// Its tooltip.
    pub note: String,
}

/// The most rows drawn (those with an outlier first); the tables hold all.
pub const MAX_ROWS: usize = 150;

const ROW: f64 = 20.0;
const LEFT: f64 = 230.0;
/// How far off the median a cell is drawn in full colour.
const FULL: f64 = 0.2;

/// `a` mixed toward white by `1 - t`.
fn tint(rgb: (u8, u8, u8), t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let mix = |c: u8| (255.0 - (255.0 - f64::from(c)) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(rgb.0), mix(rgb.1), mix(rgb.2))
}

const WORSE: (u8, u8, u8) = (214, 39, 40);
const BETTER: (u8, u8, u8) = (31, 119, 180);

/// A cell's fill.
fn fill(c: &Cell) -> String {
    match c.ratio.filter(|r| *r > 0.0 && r.is_finite()) {
        None => "#f0f0f0".into(),
        Some(r) => {
            let bad = if c.higher_is_worse { r.ln() } else { -r.ln() };
            let t = bad.abs() / (1.0 + FULL).ln();
            tint(if bad > 0.0 { WORSE } else { BETTER }, t.min(1.0) * 0.9)
        }
    }
}

/// The heat map of `cells` (one line per row of `rows`, one cell per host
/// of `hosts`); `band` is the noise band (a fraction). `Err` with why when
/// there is nothing to draw.
pub fn chart(title: &str, hosts: &[Host], rows: &[String], cells: &[Vec<Cell>], band: f64) -> Result<String, String> {
    if hosts.is_empty() || rows.is_empty() {
        return Err("no host has a row".into());
    }
    if cells.iter().flatten().all(|c| c.ratio.is_none()) {
        return Err("no host's row has a ratio to the fleet median".into());
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let title = if rows.len() > MAX_ROWS {
        order.sort_by_key(|&i| !cells[i].iter().any(|c| c.outlier));
        order.truncate(MAX_ROWS);
        order.sort_unstable();
        format!("{title} ({MAX_ROWS} of {} rows, those with an outlier first)", rows.len())
    } else {
        title.to_string()
    };
    let cell_w = ((WIDTH - 16.0 - LEFT) / hosts.len() as f64).clamp(16.0, 80.0);
    let width = (LEFT + cell_w * hosts.len() as f64 + 16.0).max(WIDTH);
    let value_fits = text_width("0.00", TEXT) + 6.0 <= cell_w;

    let swatch = |fill: String, frame: bool| -> Swatch {
        Box::new(move |c: &mut Canvas, x: f64, y: f64| {
            let frame = if frame { "stroke=\"#000\" stroke-width=\"2\"" } else { "stroke=\"#ccc\"" };
            c.rect(x - 6.0, y - 6.0, 12.0, 12.0, &fill, frame);
        })
    };
    let off = format!("{:.0}%", FULL * 100.0);
    let entries: Vec<(String, Swatch)> = vec![
        (format!("worse than the fleet median (full at {off})"), swatch(tint(WORSE, 0.9), false)),
        ("better".into(), swatch(tint(BETTER, 0.9), false)),
        (format!("outlier (beyond the {} band)", crate::text::format::percent(band)), swatch("#ffffff".into(), true)),
        ("no ratio".into(), swatch("#f0f0f0".into(), false)),
    ];
    let entries: Vec<(String, &SwatchFn)> = entries.iter().map(|(t, f)| (t.clone(), f.as_ref() as _)).collect();
    let legend_h = legend(&mut Canvas::new(WIDTH, 0.0), (8.0, 0.0), WIDTH - 16.0, &entries);

    // Host names: across where each fits its column, else turned a quarter
    // (reading upward), so that each stays within its column: a slant
    // would lay its box over the next one's.
    let longest = hosts.iter().map(|h| text_width(&h.name, TEXT)).fold(0.0, f64::max);
    let slanted = longest + 4.0 > cell_w;
    let name_px = if slanted { longest.min(150.0) } else { cell_w - 4.0 };
    let header = if slanted { name_px + 10.0 } else { TEXT + 8.0 };
    let top = 8.0 + TITLE + 8.0 + legend_h + header;
    let height = top + ROW * order.len() as f64 + 10.0;

    let mut c = Canvas::new(width, height);
    let (t, cut) = fit(&title, WIDTH - 16.0, TITLE);
    c.text_styled((8.0, 8.0 + TITLE), &t, TITLE, Anchor::Start, cut.then_some(title.as_str()), "font-weight=\"bold\"");
    legend(&mut c, (8.0, 8.0 + TITLE + 8.0 + TEXT), WIDTH - 16.0, &entries);
    for (j, h) in hosts.iter().enumerate() {
        let x = LEFT + (j as f64 + 0.5) * cell_w;
        let (name, _) = fit(&h.name, name_px, TEXT);
        let tip = match &h.href {
            Some(_) => format!("{}: its run's report", h.name),
            None => h.name.clone(),
        };
        if let Some(href) = &h.href {
            c.link(href);
        }
        let fill = if h.href.is_some() { "fill=\"#1a5fb4\" text-decoration=\"underline\"" } else { "" };
        if slanted {
            // Read upward, starting just over its column's middle (turned
            // a quarter back, the text's start is its lowest point).
            let (bx, by) = (x + TEXT * 0.35, top - 4.0);
            c.text_styled((bx, by), &name, TEXT, Anchor::Start, Some(&tip), &format!("transform=\"rotate(-90 {bx:.1} {by:.1})\" {fill}"));
        } else {
            c.text_styled((x, top - 6.0), &name, TEXT, Anchor::Middle, Some(&tip), fill);
        }
        if h.href.is_some() {
            c.end_link();
        }
    }
    let names = row_labels(&order.iter().map(|&i| rows[i].as_str()).collect::<Vec<_>>(), LEFT - 14.0, TEXT);
    for (k, (&i, name)) in order.iter().zip(&names).enumerate() {
        let y = top + k as f64 * ROW;
        c.text((LEFT - 8.0, y + ROW / 2.0 + TEXT * 0.35), name, TEXT, Anchor::End, Some(&rows[i]));
        for (j, cell) in cells[i].iter().enumerate().take(hosts.len()) {
            let x = LEFT + j as f64 * cell_w;
            c.group(&cell.note);
            c.rect(x + 1.0, y + 1.0, cell_w - 2.0, ROW - 2.0, &fill(cell), "");
            if cell.outlier {
                c.rect(x + 2.0, y + 2.0, cell_w - 4.0, ROW - 4.0, "none", "stroke=\"#000\" stroke-width=\"2\"");
            }
            if let (true, Some(r)) = (value_fits, cell.ratio) {
                let weight = if cell.outlier { "font-weight=\"bold\"" } else { "" };
                c.text_styled((x + cell_w / 2.0, y + ROW / 2.0 + TEXT * 0.35), &format!("{r:.2}"), TEXT, Anchor::Middle, None, weight);
            }
            c.end();
        }
    }
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(r: f64, outlier: bool) -> Cell {
        Cell { ratio: Some(r), higher_is_worse: true, outlier, note: format!("{r}") }
    }

    #[test]
    fn a_cell_per_host_and_row_outliers_framed_and_hosts_linked_to_their_reports() {
        let hosts = vec![
            Host { name: "node1".into(), href: Some("../node1/report.html".into()) },
            Host { name: "node2".into(), href: None },
            Host { name: "node3".into(), href: Some("a b/report.html".into()) },
        ];
        let rows = vec!["os.syscall".to_string(), "cpu.primes workers=2".to_string()];
        let cells =
            vec![vec![cell(1.0, false), cell(1.31, true), cell(0.99, false)], vec![cell(0.7, true), cell(1.0, false), Cell::default()]];
        let svg = chart("x fleet", &hosts, &rows, &cells, 0.02).unwrap();
        assert_eq!(svg.matches("<g><title>").count(), 6, "a cell per host and row");
        assert_eq!(svg.matches("stroke=\"#000\" stroke-width=\"2\"").count(), 2 + 1, "two outliers framed, and the legend's frame");
        assert!(svg.contains("<a href=\"../node1/report.html\">") && svg.contains("<a href=\"a b/report.html\">"), "{svg}");
        assert_eq!(svg.matches("<a href").count(), 2, "only hosts with a report are linked");
        assert!(svg.contains(">1.31</text>"), "the ratio in its cell: {svg}");
        // Worse (1.31, lower is better) is red, better (0.7) blue, each in full.
        assert!(svg.contains(&format!("fill=\"{}\"", tint(WORSE, 0.9))) && svg.contains(&format!("fill=\"{}\"", tint(BETTER, 0.9))));
        assert_eq!(fill(&cell(1.31, true)), tint(WORSE, 0.9));
        assert_eq!(fill(&cell(0.7, true)), tint(BETTER, 0.9));
        assert_eq!(fill(&Cell { higher_is_worse: false, ..cell(1.31, true) }), tint(BETTER, 0.9), "higher is better: 1.31 is better");
    }

    #[test]
    fn nothing_to_draw_says_why_and_long_host_names_are_slanted() {
        assert!(chart("t", &[], &[], &[], 0.02).is_err());
        let hosts: Vec<Host> = (0..12).map(|i| Host { name: format!("compute-node-{i:03}.cluster"), href: None }).collect();
        let cells = vec![(0..12).map(|_| cell(1.0, false)).collect()];
        let svg = chart("t", &hosts, &["r".to_string()], &cells, 0.02).unwrap();
        assert_eq!(svg.matches("rotate(-90").count(), 12, "{svg}");
        let none = vec![vec![Cell::default(); 12]];
        assert!(chart("t", &hosts, &["r".to_string()], &none, 0.02).is_err());
    }
}
