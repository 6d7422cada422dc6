//! The terminal renderer: what `run` prints as each group ends and at the
//! end. A terminal shows the markdown as it is (the tables are padded to be
//! read as text), so this is the markdown rendering with every control
//! character but newline and tab replaced by U+FFFD (`report::terminal::clean`):
//! no text from a record can reach the terminal as an escape sequence.

use super::Block;

/// `blocks` for the terminal.
pub fn render(blocks: &[Block]) -> String {
    crate::report::terminal::clean(&super::markdown::render(blocks)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::{Code, Inline, Line};

    #[test]
    fn no_control_character_reaches_the_terminal() {
        // Even from a node markdown would keep as written.
        let written = Inline::Code(Code { text: "x".into(), written: Some("`\u{1b}[2J`".into()) });
        let blocks = [
            Block::heading(3, Line::from("w\u{1b}]0;title\u{7}")),
            Block::paragraph(Line(vec![written]).text("<img src=x onerror=alert(1)> `a|b`\u{9b}31m")),
            Block::Details { summary: Line::from("s"), text: "tail \u{1b}[31mred\u{0}\n".into() },
        ];
        let text = render(&blocks);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{text:?}");
        assert_eq!(
            text,
            "### w\u{FFFD}]0;title\u{FFFD}\n\n`\u{FFFD}[2J`&lt;img src=x onerror=alert(1)> \\`a|b\\`\u{FFFD}31m\n\ns\n\n```\ntail \u{FFFD}[31mred\u{FFFD}\n```\n"
        );
    }
}
