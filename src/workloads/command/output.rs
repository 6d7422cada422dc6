//! A command's output in bounded memory: of each stream (stdout, stderr),
//! the first [`HEAD`] bytes and the last [`TAIL`], and how many bytes it
//! had in all.
//!
//! Why the bound is enough: a command workload's regexes (its metric, its
//! verifier) look for lines a benchmark prints about itself, and a
//! benchmark prints those at its start (what it runs, how it is set up) or
//! at its end (its result, its self-check, the panic that stopped it). The
//! first MiB and the last 4 MiB of a stream hold tens of thousands of lines
//! on each side; what a program prints between them (progress, logs) is
//! counted, not kept. When something was left out, the text matched is the
//! whole lines of the first part followed by the whole lines of the last
//! part: a line cut by the bound is left out too, so that no regex reads
//! part of a line (`sum=12` of `sum=12345`) or a match spanning the gap.
//! The row's `details` say how many bytes there were and whether some were
//! left out.

/// Bytes kept from the start of a stream.
pub const HEAD: usize = 1 << 20;
/// Bytes kept from the end of a stream.
pub const TAIL: usize = 4 << 20;
/// At most this many bytes of the output's end go in a row (`output_tail`)
/// or in a reason.
pub const TAIL_BYTES: usize = 4096;
/// And at most this many lines.
pub const TAIL_LINES: usize = 20;

/// One stream, as it is read.
#[derive(Default)]
pub struct Stream {
    head: Vec<u8>,
    /// The bytes after the head; cut back to the last [`TAIL`] whenever it
    /// holds twice that.
    tail: Vec<u8>,
    total: u64,
}

impl Stream {
    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < HEAD {
            let n = (HEAD - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        self.tail.extend_from_slice(data);
        if self.tail.len() >= 2 * TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
    }

    /// Bytes the stream had in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether some of it was left out.
    pub fn cut(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// What is kept, as text (invalid UTF-8 replaced): everything when
    /// nothing was left out, else the whole lines of the head followed by
    /// the whole lines of the last [`TAIL`] bytes.
    pub fn text(&self) -> String {
        if !self.cut() {
            let mut all = self.head.clone();
            all.extend_from_slice(&self.tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = match self.head.iter().rposition(|b| *b == b'\n') {
            Some(i) => &self.head[..=i],
            None => &[][..],
        };
        let last = &self.tail[self.tail.len().saturating_sub(TAIL)..];
        let tail = match last.iter().position(|b| *b == b'\n') {
            Some(i) => &last[i + 1..],
            None => &[][..],
        };
        let mut text = String::from_utf8_lossy(head).into_owned();
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

/// The end of `text` for a row or a reason: its last [`TAIL_LINES`] lines,
/// and at most [`TAIL_BYTES`] bytes of them, cut at a character boundary.
pub fn tail_of(text: &str) -> String {
    let mut start = text.len().saturating_sub(TAIL_BYTES + 1);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let lines: Vec<&str> = text[start..].lines().collect();
    let joined = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    let mut cut = joined.len().saturating_sub(TAIL_BYTES);
    while !joined.is_char_boundary(cut) {
        cut += 1;
    }
    joined[cut..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_output_is_kept_whole() {
        let mut s = Stream::default();
        s.push(b"a=1\n");
        s.push(b"b=2");
        assert_eq!((s.text().as_str(), s.total(), s.cut()), ("a=1\nb=2", 7, false));
    }

    #[test]
    fn a_long_output_keeps_whole_lines_of_its_start_and_end_in_bounded_memory() {
        let mut s = Stream::default();
        s.push(b"start=1\n");
        let line = vec![b'x'; 1000];
        for _ in 0..20_000 {
            s.push(&line);
            s.push(b"\n");
        }
        s.push(b"sum=12345\nend\n");
        assert!(s.cut() && s.total() > 20_000_000);
        assert!(s.head.capacity() + s.tail.capacity() <= 4 * (HEAD + 2 * TAIL), "memory stays bounded");
        let t = s.text();
        assert!(t.starts_with("start=1\n") && t.ends_with("sum=12345\nend\n"));
        assert!(t.len() <= HEAD + TAIL);
        assert!(t.lines().all(|l| l.len() == 1000 || l == "start=1" || l == "sum=12345" || l == "end"), "only whole lines");
    }

    #[test]
    fn a_single_huge_line_is_left_out_entirely() {
        let mut s = Stream::default();
        s.push(&vec![b'7'; HEAD + 3 * TAIL]);
        s.push(b"\nvalue=7\n");
        assert_eq!(s.text(), "value=7\n");
    }

    #[test]
    fn the_tail_is_bounded_in_lines_and_bytes_at_a_character_boundary() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let t = tail_of(&text);
        assert_eq!(t.lines().count(), TAIL_LINES);
        assert!(t.ends_with("line 99"));
        let long = "é".repeat(10_000);
        let t = tail_of(&long);
        assert!(t.len() <= TAIL_BYTES && t.len() >= TAIL_BYTES - 1 && t.chars().all(|c| c == 'é'));
    }
}
