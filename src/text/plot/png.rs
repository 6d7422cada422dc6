//! PNG copies of the SVG plots, rasterised with resvg (pure Rust). Text is
//! drawn with the system's fonts, loaded once per process; a machine without
//! fonts gives PNGs without text, never an error.

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use resvg::{tiny_skia, usvg};

/// Families tried, in order, for the SVG's `sans-serif` (plotters' default).
const SANS: [&str; 5] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica"];

/// The system's fonts, with `sans-serif` and `serif` bound to a family that
/// exists (fontdb's defaults name fonts a Linux machine rarely has).
fn fonts() -> Arc<usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            let present = |name: &str| db.faces().any(|f| f.families.iter().any(|(n, _)| n == name));
            let family = SANS
                .iter()
                .map(|s| s.to_string())
                .find(|s| present(s))
                .or_else(|| db.faces().find_map(|f| f.families.first().map(|(n, _)| n.clone())));
            if let Some(f) = family {
                db.set_sans_serif_family(f.clone());
                db.set_serif_family(f);
            }
            Arc::new(db)
        })
        .clone()
}

/// The PNG of an SVG document, at the SVG's own size.
pub fn png(svg: &str) -> anyhow::Result<Vec<u8>> {
    let opt = usvg::Options { fontdb: fonts(), ..usvg::Options::default() };
    let tree = usvg::Tree::from_str(&shape_opacity(svg), &opt).context("parsing the plot's SVG")?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).context("the plot has no area")?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    // On the opaque white background every pixel is opaque, so the
    // premultiplied RGBA is plain RGBA: keep RGB, with png's fast DEFLATE
    // (its default costs several times as much for a few percent in size).
    let rgb: Vec<u8> = pixmap.data().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
    let mut out = Vec::new();
    let mut enc = ::png::Encoder::new(&mut out, size.width(), size.height());
    enc.set_color(::png::ColorType::Rgb);
    enc.set_depth(::png::BitDepth::Eight);
    enc.set_compression(::png::Compression::Fast);
    let mut w = enc.write_header().context("encoding the plot as PNG")?;
    w.write_image_data(&rgb).context("encoding the plot as PNG")?;
    w.finish().context("encoding the plot as PNG")?;
    Ok(out)
}

/// The SVG with each element's `opacity` given as its fill and stroke
/// opacity: the same picture for plotters' shapes (each is filled or
/// stroked), but resvg then paints them directly instead of through a layer
/// of their own each, which made a plot's mesh lines cost most of its time.
fn shape_opacity(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len() + svg.len() / 8);
    let mut rest = svg;
    while let Some(at) = rest.find(" opacity=\"") {
        let value_start = at + " opacity=\"".len();
        let Some(len) = rest[value_start..].find('"') else { break };
        let value = &rest[value_start..value_start + len];
        out.push_str(&rest[..at]);
        out.push_str(&format!(" fill-opacity=\"{value}\" stroke-opacity=\"{value}\""));
        rest = &rest[value_start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// The PNG file name of an SVG plot file (`x.svg` -> `x.png`).
pub fn file_name(svg_file: &str) -> String {
    format!("{}.png", svg_file.strip_suffix(".svg").unwrap_or(svg_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_svg_becomes_a_png_of_its_size() {
        let svg = r##"<svg width="30" height="20" viewBox="0 0 30 20" xmlns="http://www.w3.org/2000/svg"><rect x="0" y="0" width="30" height="20" fill="#FF0000"/><text x="2" y="15" font-family="sans-serif">a &lt;b&gt;</text></svg>"##;
        let png = png(svg).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, after the 8-byte signature and 8 bytes of chunk header.
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 30);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 20);
        assert_eq!(file_name("w.x-speedup.svg"), "w.x-speedup.png");
    }

    #[test]
    fn element_opacity_becomes_fill_and_stroke_opacity() {
        let svg = r##"<line opacity="0.1" stroke="#000"/><rect opacity="0.8" fill="#f00"/>"##;
        assert_eq!(
            shape_opacity(svg),
            r##"<line fill-opacity="0.1" stroke-opacity="0.1" stroke="#000"/><rect fill-opacity="0.8" stroke-opacity="0.8" fill="#f00"/>"##
        );
    }

    #[test]
    fn a_broken_svg_is_an_error_not_a_panic() {
        assert!(png("<svg").is_err());
    }
}
