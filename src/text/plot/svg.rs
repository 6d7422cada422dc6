//! The SVG of a plot made small: plotters writes one element per shape,
//! each with its whole style (a samples plot of a few hundred dots and a
//! mesh took 40 KB); here a run of shapes of one style becomes one group
//! that holds the style once (`<g fill=.. stroke=..>`), lines and polylines
//! of one style one path, dots drawn twice at the same pixel one dot, and
//! attributes that say the default (`opacity="1"`, `stroke-width="1"`) go.
//! An element's `opacity` becomes its fill and stroke opacity (the same
//! picture for a shape that is filled or stroked, and what a group passes
//! down to each shape, not to the group as a whole). The picture is
//! otherwise the same; text is kept as plotters escaped it.

/// An element's attributes that place it (kept on each element); all
/// others are its style (shared by a group).
const PLACE: [&str; 14] = ["x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height", "points", "transform", "dy"];

/// One element of plotters' output.
struct Element<'a> {
    /// The element's name (`circle`, `line`, ...).
    tag: &'a str,
    /// Its style, in the order written.
    style: Vec<(&'a str, String)>,
    /// Its placement, in the order written.
    place: Vec<(&'a str, &'a str)>,
    /// A text's content, trimmed (`None` for an empty element).
    content: Option<&'a str>,
}

impl Element<'_> {
    /// The element as a path segment (`M x y L x y ...`): a line or a
    /// polyline, which one path of their style may draw with others.
    fn segment(&self) -> Option<String> {
        let at = |name: &str| self.place.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        match self.tag {
            "line" if self.place.len() == 4 => Some(format!("M{} {}L{} {}", at("x1")?, at("y1")?, at("x2")?, at("y2")?)),
            "polyline" if self.place.len() == 1 => {
                let points: Vec<String> = at("points")?.split_whitespace().map(|p| p.replace(',', " ")).collect();
                (!points.is_empty()).then(|| format!("M{}", points.join("L")))
            }
            _ => None,
        }
    }

    /// The element with its placement only (its style on its group).
    fn bare(&self) -> String {
        let place: String = self.place.iter().map(|(n, v)| format!(" {n}=\"{v}\"")).collect();
        match self.content {
            Some(c) => format!("<{}{place}>{c}</{}>", self.tag, self.tag),
            None => format!("<{}{place}/>", self.tag),
        }
    }
}

/// `svg` (plotters' output) made small; what it cannot read is kept as it is.
pub fn compact(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len() / 3);
    let mut items: Vec<Result<Element<'_>, &str>> = Vec::new();
    let mut rest = svg.trim_start();
    while !rest.is_empty() {
        let end = if rest.starts_with("<text") { rest.find("</text>").map(|e| e + "</text>".len()) } else { rest.find('>').map(|e| e + 1) };
        let Some(end) = end else {
            items.push(Err(rest));
            break;
        };
        let raw = &rest[..end];
        items.push(parse(raw).ok_or(raw));
        rest = rest[end..].trim_start();
    }
    let mut i = 0;
    while i < items.len() {
        let Ok(first) = &items[i] else {
            out.push_str(items[i].as_ref().err().expect("not an element"));
            out.push('\n');
            i += 1;
            continue;
        };
        let path = first.segment().is_some();
        let same = |e: &Element<'_>| e.style == first.style && (e.segment().is_some() == path) && (path || e.tag == first.tag);
        let run: Vec<&Element<'_>> = items[i..].iter().map_while(|e| e.as_ref().ok().filter(|e| same(e))).collect();
        i += run.len();
        let mut style: Vec<(&str, String)> = first.style.clone();
        if let Some((dots, dot_style)) = dots(&run) {
            let attrs: String = dot_style.iter().map(|(n, v)| format!(" {n}=\"{v}\"")).collect();
            out.push_str(&format!("<path{attrs} d=\"{dots}\"/>\n"));
            continue;
        }
        let children: Vec<String> = if path {
            if !style.iter().any(|(n, _)| *n == "fill") {
                style.push(("fill", "none".into()));
            }
            vec![format!("<path d=\"{}\"/>", run.iter().filter_map(|e| e.segment()).collect::<String>())]
        } else {
            let mut seen = std::collections::HashSet::new();
            run.iter().map(|e| e.bare()).filter(|b| first.tag != "circle" || seen.insert(b.clone())).collect()
        };
        let attrs: String = style.iter().map(|(n, v)| format!(" {n}=\"{v}\"")).collect();
        if let [one] = &children[..] {
            // One element: its style on it, no group.
            let tag_end = one.find([' ', '/', '>']).unwrap_or(one.len());
            out.push_str(&format!("{}{attrs}{}", &one[..tag_end], &one[tag_end..]));
        } else {
            out.push_str(&format!("<g{attrs}>{}</g>", children.concat()));
        }
        out.push('\n');
    }
    out
}

/// Filled dots of one size and no stroke (a samples plot's) as one path
/// of zero-length strokes with round caps: each a dot of the same size and
/// colour in a third of the bytes (where dots overlap, the path is painted
/// once, so an overlap is not drawn darker). `None` for any other run.
fn dots(run: &[&Element<'_>]) -> Option<(String, Vec<(&'static str, String)>)> {
    let first = run.first()?;
    let r = first.place.iter().find(|(n, _)| *n == "r")?.1;
    let fill = first.style.iter().find(|(n, _)| *n == "fill")?.1.clone();
    let plain = |e: &&Element<'_>| {
        e.tag == "circle" && e.place.len() == 3 && e.place.iter().any(|(n, v)| *n == "r" && *v == r) && e.content.is_none()
    };
    let stroke = first.style.iter().find(|(n, _)| *n == "stroke").map(|(_, v)| v.as_str());
    let known = first.style.iter().all(|(n, _)| matches!(*n, "fill" | "stroke" | "fill-opacity" | "stroke-opacity"));
    if run.len() < 2 || !run.iter().all(plain) || fill == "none" || !matches!(stroke, None | Some("none")) || !known {
        return None;
    }
    let width = 2.0 * r.parse::<f64>().ok()?;
    let mut style: Vec<(&'static str, String)> =
        vec![("fill", "none".into()), ("stroke", fill), ("stroke-width", format!("{width}")), ("stroke-linecap", "round".into())];
    if let Some((_, o)) = first.style.iter().find(|(n, _)| *n == "fill-opacity") {
        style.push(("stroke-opacity", o.clone()));
    }
    let mut seen = std::collections::HashSet::new();
    let mut d = String::new();
    for e in run {
        let at = |name: &str| e.place.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let (x, y) = (at("cx")?, at("cy")?);
        if seen.insert((x, y)) {
            d.push_str(&format!("M{x} {y}h0"));
        }
    }
    Some((d, style))
}

/// An element written by plotters (`<tag a="v" .../>` or `<text ...>content</text>`),
/// its style made small; `None` for the root, a closing tag or anything else.
fn parse(raw: &str) -> Option<Element<'_>> {
    let (open, content) = match raw.strip_suffix("/>") {
        Some(open) => (open, None),
        None => {
            let body = raw.strip_suffix("</text>")?;
            let gt = body.find('>')?;
            (&body[..gt], Some(body[gt + 1..].trim()))
        }
    };
    let open = open.strip_prefix('<')?;
    let tag_end = open.find(char::is_whitespace).unwrap_or(open.len());
    let tag = &open[..tag_end];
    if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphabetic()) || tag == "svg" {
        return None;
    }
    let mut element = Element { tag, style: Vec::new(), place: Vec::new(), content };
    let mut attrs = open[tag_end..].trim();
    while !attrs.is_empty() {
        let eq = attrs.find("=\"")?;
        let name = attrs[..eq].trim();
        let value_len = attrs[eq + 2..].find('"')?;
        let value = &attrs[eq + 2..eq + 2 + value_len];
        attrs = attrs[eq + 2 + value_len + 1..].trim_start();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        if PLACE.contains(&name) {
            element.place.push((name, value));
            continue;
        }
        match (name, value) {
            ("opacity" | "stroke-width", "1") => {}
            ("opacity", v) => {
                element.style.push(("fill-opacity", v.to_string()));
                element.style.push(("stroke-opacity", v.to_string()));
            }
            ("font-size", v) => {
                element.style.push((name, v.parse::<f64>().map_or_else(|_| v.to_string(), |s| format!("{}", (s * 10.0).round() / 10.0))))
            }
            _ => element.style.push((name, value.to_string())),
        }
    }
    Some(element)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_of_one_style_share_a_group_and_lines_one_path() {
        let svg = "<svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" xmlns=\"http://www.w3.org/2000/svg\">\n\
            <rect x=\"0\" y=\"0\" width=\"10\" height=\"10\" opacity=\"1\" fill=\"#FFFFFF\" stroke=\"none\"/>\n\
            <line opacity=\"0.2\" stroke=\"#000000\" stroke-width=\"1\" x1=\"1\" y1=\"2\" x2=\"9\" y2=\"2\"/>\n\
            <line opacity=\"0.2\" stroke=\"#000000\" stroke-width=\"1\" x1=\"1\" y1=\"5\" x2=\"9\" y2=\"5\"/>\n\
            <polyline fill=\"none\" opacity=\"1\" stroke=\"#000000\" stroke-width=\"2\" points=\"1,1 2,2 3,1 \"/>\n\
            <circle cx=\"3\" cy=\"4\" r=\"2\" opacity=\"0.7\" fill=\"#1F77B4\" stroke=\"none\" stroke-width=\"1\"/>\n\
            <circle cx=\"3\" cy=\"4\" r=\"2\" opacity=\"0.7\" fill=\"#1F77B4\" stroke=\"none\" stroke-width=\"1\"/>\n\
            <circle cx=\"5\" cy=\"4\" r=\"2\" opacity=\"0.7\" fill=\"#1F77B4\" stroke=\"none\" stroke-width=\"1\"/>\n\
            <text x=\"5\" y=\"1\" dy=\"0.76em\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"14.516129032258064\" opacity=\"1\" fill=\"#000000\">\n\
            a &lt;b&gt;\n</text>\n</svg>\n";
        assert_eq!(
            compact(svg),
            "<svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" xmlns=\"http://www.w3.org/2000/svg\">\n\
             <rect fill=\"#FFFFFF\" stroke=\"none\" x=\"0\" y=\"0\" width=\"10\" height=\"10\"/>\n\
             <path fill-opacity=\"0.2\" stroke-opacity=\"0.2\" stroke=\"#000000\" fill=\"none\" d=\"M1 2L9 2M1 5L9 5\"/>\n\
             <path fill=\"none\" stroke=\"#000000\" stroke-width=\"2\" d=\"M1 1L2 2L3 1\"/>\n\
             <path fill=\"none\" stroke=\"#1F77B4\" stroke-width=\"4\" stroke-linecap=\"round\" stroke-opacity=\"0.7\" d=\"M3 4h0M5 4h0\"/>\n\
             <text text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"14.5\" fill=\"#000000\" x=\"5\" y=\"1\" dy=\"0.76em\">a &lt;b&gt;</text>\n\
             </svg>\n"
        );
    }

    #[test]
    fn what_it_cannot_read_is_kept() {
        assert_eq!(compact("<svg><foo a=b/><line x1=\"1\"/></svg>"), "<svg>\n<foo a=b/>\n<line x1=\"1\"/>\n</svg>\n");
    }
}
