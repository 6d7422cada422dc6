//! Flame graphs of a `perf record -g` profile, with no dependency: `perf
//! script`'s text folded into one line per distinct call stack
//! ([`collapse`], the shape of FlameGraph's `stackcollapse-perf.pl`), and
//! the folded stacks drawn as one self-contained SVG ([`svg`], the shape of
//! `flamegraph.pl`: the root at the bottom, each frame as wide as the
//! samples under it, callees above their callers, siblings in name order,
//! every frame's name, samples and share in its tooltip).
//!
//! Written here rather than taken from the `inferno` crate, which does both
//! steps, because `inferno` is licensed CDDL-1.0 and this crate depends only
//! on MIT or Apache-2.0 code.
//!
//! The parser never fails on what it does not understand: a line that is
//! neither a sample's header nor a frame is ignored. Names are escaped (the
//! report's HTML escape) and control characters dropped, so that no symbol can
//! break the SVG.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use crate::text::document::html::escape;

/// Distinct call stacks and how many samples each had.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Folded {
    /// `comm;outermost;...;innermost` to samples.
    pub stacks: BTreeMap<String, u64>,
}

impl Folded {
    /// Samples in all.
    pub fn samples(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// The folded text: one `stack count` line per stack.
    pub fn text(&self) -> String {
        self.stacks.iter().map(|(s, n)| format!("{s} {n}\n")).collect()
    }
}

/// The most distinct stacks kept: past it, a stack adds to the samples of
/// `[more stacks]` under its command (a bound on memory, never reached by a
/// trial's profile).
pub const MAX_STACKS: usize = 200_000;

/// The longest line read: a longer one is cut (a frame's name is then cut).
const MAX_LINE: usize = 64 * 1024;

/// Folds `perf script` output (a header line per sample, then its frames
/// innermost first, one per indented line, then a blank line).
pub fn collapse(mut input: impl BufRead) -> std::io::Result<Folded> {
    let mut folded = Folded::default();
    let mut comm: Option<String> = None;
    let mut frames: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = read_line(&mut input, &mut buf)?;
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            flush(&mut folded, &mut comm, &mut frames);
        } else if line.starts_with([' ', '\t']) {
            if comm.is_some() {
                // A run of frames perf could not name (code without frame
                // pointers walked by guess) is one frame, not a tower of
                // them that would dwarf the graph.
                let name = frame_name(line.trim());
                if !(name == "[unknown]" && frames.last().is_some_and(|f| f == "[unknown]")) {
                    frames.push(name);
                }
            }
        } else if !line.starts_with('#') {
            flush(&mut folded, &mut comm, &mut frames);
            comm = Some(comm_of(line));
        }
    }
    flush(&mut folded, &mut comm, &mut frames);
    Ok(folded)
}

/// Reads one line (at most [`MAX_LINE`] bytes of it kept) into `buf`;
/// returns the bytes read, 0 at the end.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = MAX_LINE.saturating_sub(buf.len()).min(take);
        buf.extend_from_slice(&chunk[..room]);
        input.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

fn flush(folded: &mut Folded, comm: &mut Option<String>, frames: &mut Vec<String>) {
    let Some(c) = comm.take() else { return };
    let mut stack = c.clone();
    for f in frames.iter().rev() {
        stack.push(';');
        stack.push_str(f);
    }
    frames.clear();
    let key = if folded.stacks.len() >= MAX_STACKS && !folded.stacks.contains_key(&stack) { format!("{c};[more stacks]") } else { stack };
    *folded.stacks.entry(key).or_insert(0) += 1;
}

/// A name as a folded stack may hold it: no `;`, no control characters,
/// never empty.
fn clean(s: &str) -> String {
    let s: String = s.chars().filter(|c| !c.is_control()).map(|c| if c == ';' { ':' } else { c }).collect();
    let s = s.trim().to_string();
    if s.is_empty() { "[unknown]".into() } else { s }
}

/// The command of a sample's header line: the words before the first that
/// is a pid (`1234`) or a pid/tid (`1234/1235`).
fn comm_of(header: &str) -> String {
    let words: Vec<&str> = header.split_whitespace().collect();
    let is_pid = |w: &str| !w.is_empty() && w.split('/').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let end = words.iter().position(|w| is_pid(w)).unwrap_or(words.len().min(1));
    clean(&words[..end.max(1).min(words.len())].join(" "))
}

/// A frame line's name: `ADDR SYMBOL+0xOFF (DSO)` gives `SYMBOL`, an
/// unknown symbol the DSO's file name in brackets, a kernel frame `_[k]`
/// after its name.
fn frame_name(line: &str) -> String {
    let rest = line.split_once(char::is_whitespace).map_or("", |(_, r)| r.trim());
    let (sym, dso) = match rest.rfind(" (") {
        Some(i) if rest.ends_with(')') => (&rest[..i], &rest[i + 2..rest.len() - 1]),
        _ => (rest, ""),
    };
    let sym = match sym.rfind("+0x") {
        Some(i) if sym[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => &sym[..i],
        _ => sym,
    };
    let kernel = dso.contains("kernel.kallsyms") || dso.starts_with("[kernel");
    let name = if sym.is_empty() || sym == "[unknown]" {
        let file = dso.rsplit('/').next().unwrap_or(dso);
        if file.is_empty() || file == "[unknown]" { "[unknown]".to_string() } else { format!("[{file}]") }
    } else {
        sym.to_string()
    };
    let name = clean(&name);
    if kernel && !name.ends_with("_[k]") { format!("{name}_[k]") } else { name }
}

/// A node of the call tree.
#[derive(Default)]
struct Node {
    samples: u64,
    children: BTreeMap<String, Node>,
}

fn tree(folded: &Folded) -> Node {
    let mut root = Node::default();
    for (stack, &n) in &folded.stacks {
        root.samples += n;
        let mut at = &mut root;
        for frame in stack.split(';') {
            at = at.children.entry(frame.to_string()).or_default();
            at.samples += n;
        }
    }
    root
}

fn depth(node: &Node) -> usize {
    node.children.values().map(|c| 1 + depth(c)).max().unwrap_or(0)
}

/// The SVG's width, px.
const WIDTH: f64 = 1200.0;
/// One frame's height, px.
const FRAME: f64 = 16.0;
/// Left and right margins, px.
const PAD: f64 = 10.0;
/// Above the frames: the title and a line of explanation, px.
const TOP: f64 = 50.0;
/// Below them: the hint line, px.
const BOTTOM: f64 = 24.0;
/// Frames narrower than this are not drawn, px.
const MIN_WIDTH: f64 = 0.1;
/// The width of one character of the frames' text, about, px.
const CHAR: f64 = 6.6;

/// A warm colour from the name (the same name, the same colour).
fn colour(name: &str) -> String {
    let h = crate::model::file_name::fnv64(name.as_bytes());
    let (a, b) = ((h & 0xff) as f64 / 255.0, ((h >> 8) & 0xff) as f64 / 255.0);
    if name.ends_with("_[k]") {
        // Kernel frames: orange.
        format!("rgb({},{},{})", 220 + (a * 35.0) as u8, 120 + (b * 60.0) as u8, 40)
    } else {
        format!("rgb({},{},{})", 205 + (a * 50.0) as u8, (b * 180.0) as u8, (a * 55.0) as u8)
    }
}

/// The folded stacks drawn as a flame graph, one self-contained SVG
/// (`title` above it).
pub fn svg(folded: &Folded, title: &str) -> String {
    let root = tree(folded);
    let levels = depth(&root).max(1);
    let height = TOP + levels as f64 * FRAME + BOTTOM;
    let mut out = String::new();
    let _ = write!(
        out,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{WIDTH}\" \
         height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\">\n<style>text{{font-family:Verdana,'DejaVu Sans',sans-serif;font-size:12px;fill:#000}}\
         .t{{font-size:17px}}.s{{fill:#555}}rect{{stroke:#fff;stroke-width:0.5}}g:hover rect{{stroke:#000}}</style>\n\
         <rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#fafaf5\" style=\"stroke:none\"/>\n\
         <text class=\"t\" x=\"{}\" y=\"24\" text-anchor=\"middle\">{}</text>\n",
        WIDTH / 2.0,
        escape(title)
    );
    let total = root.samples;
    let _ = writeln!(
        out,
        "<text class=\"s\" x=\"{}\" y=\"42\" text-anchor=\"middle\">{total} samples; a frame's width is its share of them, callers below callees</text>",
        WIDTH / 2.0,
    );
    if total == 0 {
        let _ = writeln!(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no samples were recorded</text>", WIDTH / 2.0, TOP + FRAME);
    } else {
        let scale = (WIDTH - 2.0 * PAD) / total as f64;
        draw(&mut out, &root, PAD, height - BOTTOM, scale, total);
    }
    let _ = writeln!(out, "<text class=\"s\" x=\"{PAD}\" y=\"{}\">hover a frame for its name, samples and share</text>", height - 7.0);
    out.push_str("</svg>\n");
    out
}

/// Draws `node`'s children from `x`, their bottom edge at `bottom`.
fn draw(out: &mut String, node: &Node, mut x: f64, bottom: f64, scale: f64, total: u64) {
    for (name, child) in &node.children {
        let w = child.samples as f64 * scale;
        if w >= MIN_WIDTH {
            let y = bottom - FRAME;
            let pct = child.samples as f64 * 100.0 / total as f64;
            let samples = if child.samples == 1 { "1 sample".to_string() } else { format!("{} samples", child.samples) };
            let _ = write!(
                out,
                "<g><title>{} ({samples}, {pct:.2}%)</title><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{:.1}\" fill=\"{}\" rx=\"2\"/>",
                escape(name),
                FRAME - 1.0,
                colour(name)
            );
            let fits = ((w - 6.0) / CHAR).floor();
            if fits >= 3.0 {
                let fits = fits as usize;
                let shown: String = if name.chars().count() <= fits {
                    name.clone()
                } else {
                    name.chars().take(fits.saturating_sub(2)).collect::<String>() + ".."
                };
                let _ = write!(out, "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>", x + 3.0, y + FRAME - 4.5, escape(&shown));
            }
            out.push_str("</g>\n");
            draw(out, child, x, y, scale, total);
        }
        x += w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
proofbench 4321 32134.219157:     250000 cpu-clock:ppp: 
\t    1462a primes::sieve+0xa (/usr/bin/proofbench)
\t    1500 proofbench::worker::main+0x10 (/usr/bin/proofbench)
\t       0 [unknown] ([unknown])

proofbench 4321/4322 32134.219405:     250000 cpu-clock:ppp: 
\tffffffff816043e5 __anon_vma_prepare+0x5 ([kernel.kallsyms])
\t    1462a primes::sieve+0xb (/usr/bin/proofbench)
\t    1500 proofbench::worker::main+0x10 (/usr/bin/proofbench)
\t       0 [unknown] ([unknown])

my comm 77 1.0: 1 cpu-clock:
\t  77 [unknown] (/lib/x86_64-linux-gnu/libc.so.6)
\t  78 a;b<c>+0x1 (/x)

proofbench 4321 32134.3: 250000 cpu-clock:ppp: 
\t    1462a primes::sieve+0xa (/usr/bin/proofbench)
\t       0 [unknown] ([unknown])
\t       0 [unknown] ([unknown])
\t       0 [unknown] ([unknown])
\t    1500 proofbench::worker::main+0x10 (/usr/bin/proofbench)
\t       0 [unknown] ([unknown])
";

    #[test]
    fn perf_script_folds_into_one_line_per_stack_outermost_first() {
        let f = collapse(SCRIPT.as_bytes()).unwrap();
        assert_eq!(
            f.text(),
            "my comm;a:b<c>;[libc.so.6] 1\n\
             proofbench;[unknown];proofbench::worker::main;[unknown];primes::sieve 1\n\
             proofbench;[unknown];proofbench::worker::main;primes::sieve 1\n\
             proofbench;[unknown];proofbench::worker::main;primes::sieve;__anon_vma_prepare_[k] 1\n"
        );
        // Three unnamed frames in a row were one.
        assert_eq!(f.samples(), 4);
        assert_eq!(collapse("garbage\n\tno frame\n".as_bytes()).unwrap().samples(), 1, "a header alone is a sample");
        assert_eq!(collapse("".as_bytes()).unwrap().samples(), 0);
    }

    #[test]
    fn the_svg_draws_every_frame_escaped_with_its_share() {
        let f = collapse(SCRIPT.as_bytes()).unwrap();
        let svg = svg(&f, "001-cpu.primes <perf record>");
        assert!(svg.starts_with("<?xml") && svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("001-cpu.primes &lt;perf record&gt;"));
        assert!(svg.contains("<title>a:b&lt;c&gt; (1 sample, 25.00%)</title>"), "{svg}");
        assert!(svg.contains("<title>proofbench (3 samples, 75.00%)</title>"), "{svg}");
        // Every node of the call tree: my comm, a:b<c>, [libc.so.6]; proofbench,
        // [unknown], main, sieve, the kernel frame above sieve, and main's
        // unnamed callee with its sieve.
        assert_eq!(svg.matches("<g><title>").count(), 10);
        assert!(!svg.contains("a;b<c>"), "nothing unescaped");
        let empty = super::svg(&Folded::default(), "t");
        assert!(empty.contains("no samples were recorded") && empty.contains("</svg>"));
    }

    #[test]
    fn a_very_long_line_is_cut_not_kept() {
        let long = format!("c 1 1: x\n\t 1 {}+0x1 (/x)\n", "y".repeat(200_000));
        let f = collapse(long.as_bytes()).unwrap();
        let key = f.stacks.keys().next().unwrap();
        assert!(key.len() <= MAX_LINE + 8, "{}", key.len());
    }
}
