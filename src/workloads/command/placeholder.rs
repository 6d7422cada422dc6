//! `{name}` placeholders in a command workload's arguments, environment and
//! directory. `{{` and `}}` are literal braces; `${...}` is left alone, so a
//! shell script's own `${VAR}` is not taken for a placeholder.

use std::collections::BTreeMap;

/// The placeholder names in `text`, in order (with repeats).
pub fn names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    walk(text, |piece| {
        if let Piece::Name(n) = piece {
            out.push(n.to_string());
        }
    });
    out
}

/// `text` with every placeholder replaced by its value; a name without a
/// value is kept as written (validation rejects those before any run).
pub fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    walk(text, |piece| match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Name(n) => match values.get(n) {
            Some(v) => out.push_str(v),
            None => {
                out.push('{');
                out.push_str(n);
                out.push('}');
            }
        },
    });
    out
}

enum Piece<'a> {
    Text(&'a str),
    Name(&'a str),
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn walk<'a>(text: &'a str, mut f: impl FnMut(Piece<'a>)) {
    let bytes = text.as_bytes();
    let (mut i, mut start) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let escaped = (b == b'{' || b == b'}') && bytes.get(i + 1) == Some(&b);
        if escaped {
            f(Piece::Text(&text[start..=i]));
            i += 2;
            start = i;
            continue;
        }
        if b == b'{'
            && (i == 0 || bytes[i - 1] != b'$')
            && let Some(len) = text[i + 1..].find('}')
            && is_name(&text[i + 1..i + 1 + len])
        {
            f(Piece::Text(&text[start..i]));
            f(Piece::Name(&text[i + 1..i + 1 + len]));
            i += len + 2;
            start = i;
            continue;
        }
        i += 1;
    }
    f(Piece::Text(&text[start..]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_skip_escapes_and_shell_expansions() {
        assert_eq!(names("--smp {workers} -m {mem_mb}M"), ["workers", "mem_mb"]);
        assert_eq!(names("echo ${HOME} {{literal}} {n}"), ["n"]);
        assert!(names("{not a name} {} {1x}").is_empty());
    }

    #[test]
    fn substitution_replaces_known_names_and_unescapes_braces() {
        let v: BTreeMap<String, String> = [("n".to_string(), "4".to_string())].into();
        assert_eq!(substitute("x{n}y {{n}} ${n} {m}", &v), "x4y {n} ${n} {m}");
    }
}
