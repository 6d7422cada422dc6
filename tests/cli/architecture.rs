//! Architecture: the stages point down only. Every `src/**/*.rs` is read for
//! the paths it takes from other top-level modules (`use crate::x::...`,
//! `crate::x::` in code, `$crate::`, and `super::` chains that leave their
//! top-level module); the graph between top-level modules (`src/<name>/` or
//! `src/<name>.rs`, and the crate root `src/lib.rs`) must have no cycle.
//! `model` depends on nothing else in the crate, and `cli` on `model` only.
//!
//! Comments, strings and character literals are skipped, so a path named in
//! a doc comment or a message is no dependency. std only.
//!
//! docs/ARCHITECTURE.md, the map of that code, names only paths that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate root's node: items defined in `src/lib.rs` itself.
const ROOT: &str = "lib";

/// Edges between top-level modules: `from -> to -> where` (`file:line` of
/// each path that ties them).
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// `text` with comments, string literals and character literals replaced by
/// spaces (newlines kept, so that lines still count).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && ident(c[i - 1]);
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if !prev_ident && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) && {
            let start = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = c[start..].iter().take_while(|&&h| h == '#').count();
            c.get(start + hashes) == Some(&'"')
        } {
            // A raw string: r"..." or r#"..."#, b-prefixed or not.
            let start = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = c[start..].iter().take_while(|&&h| h == '#').count();
            let body = start + hashes + 1;
            let mut j = body;
            while j < c.len() && !(c[j] == '"' && c[j + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(c.len());
            c[i..end].iter().for_each(|&ch| blank(&mut out, ch));
            i = end;
        } else if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                let step = if c[i] == '\\' { 2 } else { 1 };
                c[i..(i + step).min(c.len())].iter().for_each(|&ch| blank(&mut out, ch));
                i += step;
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            let mut j = i + 1;
            if c[j] == '\\' {
                j += 2;
            } else {
                j += 1;
            }
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(c.len());
            c[i..end].iter().for_each(|&ch| blank(&mut out, ch));
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The identifier starting at byte `at` of `s` (ASCII identifiers only: the
/// crate's module names).
fn ident_at(s: &str, at: usize) -> &str {
    let rest = &s[at..];
    let end = rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).unwrap_or(rest.len());
    &rest[..end]
}

/// Skips whitespace from byte `at`.
fn skip_ws(s: &str, at: usize) -> usize {
    at + s[at..].len() - s[at..].trim_start().len()
}

/// After `crate` (or the last `super`) at byte `at`: the first segments the
/// path names, `::name` or `::{a::x, b, ...}`. Empty when no `::` follows.
fn first_segments(s: &str, at: usize) -> Vec<String> {
    let at = skip_ws(s, at);
    if !s[at..].starts_with("::") {
        return Vec::new();
    }
    let at = skip_ws(s, at + 2);
    if !s[at..].starts_with('{') {
        let name = ident_at(s, at);
        return if name.is_empty() { vec!["*".to_string()] } else { vec![name.to_string()] };
    }
    // A group: the first segment of each of its top-level entries.
    let mut out = Vec::new();
    let (mut depth, mut entry_start) = (0usize, at + 1);
    for (k, ch) in s[at..].char_indices() {
        let pos = at + k;
        match ch {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                let e = skip_ws(s, entry_start);
                let name = ident_at(s, e);
                if !s[e..pos].trim().is_empty() {
                    out.push(if name.is_empty() { "*".to_string() } else { name.to_string() });
                }
                entry_start = pos + 1;
                if ch == '}' {
                    break;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    out
}

/// Byte ranges of the inline modules of `code` (`mod name { ... }`), each
/// one more level for `super::`.
fn inline_modules(code: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let bytes = code.as_bytes();
    let mut search = 0;
    while let Some(k) = code[search..].find("mod ") {
        let at = search + k;
        search = at + 4;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let name_at = skip_ws(code, at + 4);
        let name = ident_at(code, name_at);
        let open = skip_ws(code, name_at + name.len());
        if name.is_empty() || !code[open..].starts_with('{') {
            continue;
        }
        let mut depth = 0usize;
        for (j, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        spans.push((open, open + j));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    spans
}

/// Whether byte `at` of `s` starts the word `word` (not inside a longer
/// identifier, not after `::`).
fn word_at(s: &str, at: usize, word: &str) -> bool {
    let before = s[..at].chars().next_back();
    let after = s[at + word.len()..].chars().next();
    s[at..].starts_with(word)
        && !before.is_some_and(|b| b.is_alphanumeric() || b == '_' || b == ':')
        && !after.is_some_and(|a| a.is_alphanumeric() || a == '_')
}

/// The top-level modules (and crate-root items) a file of module path
/// `module` (e.g. `["report", "plot"]`; empty for lib.rs) names, with the
/// line of each.
fn references(text: &str, module: &[String], tops: &BTreeSet<String>) -> Vec<(String, usize)> {
    let code = code_only(text);
    let spans = inline_modules(&code);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let resolve = |seg: &str| if tops.contains(seg) { seg.to_string() } else { ROOT.to_string() };
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate") {
        if word_at(&code, at, "crate") || (at > 0 && code[..at].ends_with('$')) {
            out.extend(first_segments(&code, at + 5).into_iter().map(|s| (resolve(&s), line_of(at))));
        }
    }
    for (at, _) in code.match_indices("super") {
        if !word_at(&code, at, "super") {
            continue;
        }
        // A chain `super::super::...`: how far up it goes.
        let (mut ups, mut end) = (1, at + 5);
        loop {
            let next = skip_ws(&code, end);
            let Some(rest) = code[next..].strip_prefix("::") else { break };
            let seg = skip_ws(&code, next + 2);
            let whole = code[seg + 5..].chars().next().is_none_or(|a| !(a.is_alphanumeric() || a == '_'));
            if !rest.trim_start().starts_with("super") || !whole {
                break;
            }
            ups += 1;
            end = seg + 5;
        }
        let depth = module.len() + spans.iter().filter(|(a, b)| *a < at && at < *b).count();
        if ups >= depth {
            out.extend(first_segments(&code, end).into_iter().map(|s| (resolve(&s), line_of(at))));
        }
    }
    if module.is_empty() {
        // The crate root names its modules without `crate::`.
        for top in tops {
            for (at, _) in code.match_indices(top.as_str()) {
                if word_at(&code, at, top) && code[at + top.len()..].trim_start().starts_with("::") {
                    out.push((top.clone(), line_of(at)));
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).expect("readable src").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The graph between the top-level modules of the crate whose sources are
/// in `src` (the binary's `main.rs` is left out: nothing can depend on it).
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let rel = |p: &Path| p.strip_prefix(src).expect("under src").to_path_buf();
    let top_of = |r: &Path| {
        let first = r.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
        first.strip_suffix(".rs").map(str::to_string).unwrap_or(first)
    };
    let tops: BTreeSet<String> = files.iter().map(|p| top_of(&rel(p))).filter(|t| t != "lib" && t != "main").collect();
    let mut graph = Graph::new();
    for file in &files {
        let r = rel(file);
        if r == Path::new("main.rs") {
            continue;
        }
        // The module path: src/a/b/c.rs is a::b::c, src/a/b/mod.rs is a::b.
        let mut module: Vec<String> = r.with_extension("").components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        let from = if module.is_empty() { ROOT.to_string() } else { module[0].clone() };
        let text = std::fs::read_to_string(file).expect("readable source");
        for (to, line) in references(&text, &module, &tops) {
            if to != from {
                let at = format!("src/{}:{line}", r.display());
                graph.entry(from.clone()).or_default().entry(to).or_default().push(at);
            }
        }
    }
    graph
}

/// Every cycle of `graph`: one per strongly connected component of more
/// than one node, as a path `a -> b -> ... -> a` through it (the shortest
/// back to its first node).
fn cycles<V>(graph: &BTreeMap<String, BTreeMap<String, V>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&str> = graph.iter().flat_map(|(a, to)| std::iter::once(a.as_str()).chain(to.keys().map(String::as_str))).collect();
    let next = |n: &str| -> Vec<&str> { graph.get(n).map(|to| to.keys().map(String::as_str).collect()).unwrap_or_default() };
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for m in next(n) {
                if seen.insert(m) {
                    stack.push(m);
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&str, BTreeSet<&str>> = nodes.iter().map(|&n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for &n in &nodes {
        if done.contains(n) || !reachable[n].contains(n) {
            continue;
        }
        let component: BTreeSet<&str> = nodes.iter().copied().filter(|m| reachable[n].contains(m) && reachable[m].contains(n)).collect();
        done.extend(component.iter().copied());
        // The shortest way from n back to n inside its component.
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([n]);
        'search: while let Some(a) = queue.pop_front() {
            for b in next(a).into_iter().filter(|b| component.contains(b)) {
                if b == n {
                    prev.insert(n, a);
                    break 'search;
                }
                if !prev.contains_key(b) {
                    prev.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
        let mut path = vec![n.to_string()];
        let mut at = prev[n];
        while at != n {
            path.push(at.to_string());
            at = prev[at];
        }
        path.push(n.to_string());
        path.reverse();
        out.push(path);
    }
    out
}

/// A cycle in words: each step with the first places that tie it.
fn describe(cycle: &[String], graph: &Graph) -> String {
    let steps: Vec<String> = cycle
        .windows(2)
        .map(|w| {
            let at = &graph[&w[0]][&w[1]];
            let more = if at.len() > 3 { format!(" and {} more", at.len() - 3) } else { String::new() };
            format!("  {} -> {}: {}{more}", w[0], w[1], at.iter().take(3).cloned().collect::<Vec<_>>().join(", "))
        })
        .collect();
    format!("{}\n{}", cycle.join(" -> "), steps.join("\n"))
}

fn src_graph() -> Graph {
    module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_top_level_modules_have_no_cycle() {
    let graph = src_graph();
    assert!(graph.contains_key("workloads") && graph.contains_key("runner"), "the graph was read: {:?}", graph.keys());
    let found = cycles(&graph);
    let text: Vec<String> = found.iter().map(|c| describe(c, &graph)).collect();
    assert!(found.is_empty(), "module cycles (stages must point down only):\n{}", text.join("\n"));
}

#[test]
fn model_depends_on_nothing_and_cli_on_model_only() {
    let graph = src_graph();
    let model = graph.get("model").cloned().unwrap_or_default();
    assert!(model.is_empty(), "model must depend on nothing else in the crate: {model:?}");
    let cli: Vec<&String> = graph.get("cli").map(|to| to.keys().filter(|t| *t != "model").collect()).unwrap_or_default();
    assert!(cli.is_empty(), "cli describes flags only (it may use model): it depends on {cli:?}: {:?}", graph.get("cli"));
}

#[test]
fn the_cycle_finder_finds_a_planted_cycle_and_names_it() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: Graph = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().entry(b.to_string()).or_default().push(format!("src/{a}.rs:1"));
        }
        g
    };
    let acyclic = graph(&[("cli", "model"), ("plan", "model"), ("plan", "workloads"), ("workloads", "model")]);
    assert!(cycles(&acyclic).is_empty());
    let g = graph(&[("plan", "workloads"), ("workloads", "worker"), ("worker", "plan"), ("worker", "model"), ("a", "b"), ("b", "a")]);
    let found = cycles(&g);
    assert_eq!(found, [vec!["a", "b", "a"], vec!["plan", "workloads", "worker", "plan"]]);
    let words = describe(&found[1], &g);
    assert!(words.starts_with("plan -> workloads -> worker -> plan\n"), "{words}");
    assert!(words.contains("worker -> plan: src/worker.rs:1"), "{words}");
}

#[test]
fn paths_are_read_from_code_only() {
    let tops: BTreeSet<String> = ["model", "plan", "report", "stats", "worker"].map(String::from).into();
    let text = r##"
//! Not a dependency: crate::report::x in a doc comment.
use crate::{model::Cell, plan};
use crate::stats;
fn f() -> String {
    let _ = "crate::worker::main";
    let _ = r#"crate::worker::main"#;
    let _ = '"';
    /* crate::worker /* nested */ still a comment */
    super::super::report::render()
}
mod tests {
    use super::*;
    use super::super::super::worker::x;
}
"##;
    let module = ["report".to_string(), "plot".to_string()];
    let mut found: Vec<(String, usize)> = references(text, &module, &tops);
    found.sort();
    assert_eq!(
        found,
        [
            ("model".to_string(), 3),
            ("plan".to_string(), 3),
            ("report".to_string(), 10),
            ("stats".to_string(), 4),
            ("worker".to_string(), 14)
        ]
    );
    // The crate root names its modules bare; an item of the root is the root's.
    let root = references("pub mod plan;\nfn f() { plan::build(); crate::exit_code_of(); }\n", &[], &tops);
    assert_eq!(root, [("lib".to_string(), 2), ("plan".to_string(), 2)]);
}

/// Whether `declaring` (a parent module's file) declares the module `name`
/// (`mod name;`, with any visibility or attribute before it).
fn declares(declaring: &Path, name: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(declaring) else { return false };
    code_only(&text).lines().any(|l| {
        let l = l.trim();
        l.ends_with(&format!("mod {name};")) && l.split_whitespace().rev().nth(1) == Some("mod")
    })
}

#[test]
fn every_source_file_is_declared_as_a_module() {
    // A file nobody declares is not compiled, so a forgotten `pub mod` line
    // (say, for a new workload) would otherwise go unnoticed.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut missing = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        if rel == Path::new("lib.rs") || rel == Path::new("main.rs") {
            continue;
        }
        let stem = f.file_stem().unwrap().to_str().unwrap();
        let dir = f.parent().unwrap();
        // `a/b.rs` is declared in `a/mod.rs` or `a.rs`; `a/mod.rs` in the
        // parent of `a` the same way; at the top, in lib.rs.
        let (name, parent_dir) =
            if stem == "mod" { (dir.file_name().unwrap().to_str().unwrap(), dir.parent().unwrap()) } else { (stem, dir) };
        let candidates =
            if parent_dir == src { vec![src.join("lib.rs")] } else { vec![parent_dir.join("mod.rs"), parent_dir.with_extension("rs")] };
        if !candidates.iter().any(|c| declares(c, name)) {
            missing.push(rel.display().to_string());
        }
    }
    assert!(files.len() > 100, "the walk found the sources ({})", files.len());
    assert!(missing.is_empty(), "files no module declares (add `mod NAME;` to the parent module): {missing:?}");
}

/// The paths docs/ARCHITECTURE.md names: each inline code span (outside
/// fenced blocks) whose first word starts with `src/`, `tests/`, `docs/`,
/// `scripts/` or `.ci/`, cut at its first glob or placeholder character
/// (`src/**/*.rs` names `src/`).
fn doc_paths(markdown: &str) -> Vec<String> {
    const ROOTS: [&str; 5] = ["src/", "tests/", "docs/", "scripts/", ".ci/"];
    let mut in_fence = false;
    let prose: Vec<&str> = markdown
        .lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                in_fence = !in_fence;
                return false;
            }
            !in_fence
        })
        .collect();
    let prose = prose.join("\n");
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| span.split_whitespace().next())
        .filter(|word| ROOTS.iter().any(|r| word.starts_with(r)))
        .map(|word| word.split(['*', '?', '<', '{', '[']).next().unwrap_or(word).to_string())
        .collect()
}

/// The paths of `markdown` that do not exist under `root`.
fn missing_doc_paths(markdown: &str, root: &Path) -> Vec<String> {
    let mut missing: Vec<String> = doc_paths(markdown).into_iter().filter(|p| !root.join(p).exists()).collect();
    missing.dedup();
    missing
}

#[test]
fn architecture_md_names_only_paths_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let paths = doc_paths(&doc);
    assert!(paths.len() > 30 && paths.iter().any(|p| p == "src/evidence/dir.rs"), "the paths were read: {paths:?}");
    let missing = missing_doc_paths(&doc, root);
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names paths that do not exist (update it with the code): {missing:?}");
}

#[test]
fn the_doc_path_reader_takes_code_spans_only_and_finds_a_bogus_path() {
    let text = "The runner (`src/runner/mod.rs`) and `src/no/such/file.rs`, not src/bare.rs;\n\
                a span over lines `docs/LAUNCHERS.md\n(launchers)`, a glob `src/**/*.rs`, `.ci/run`,\n\
                `cargo test` and `results/history.sqlite` are no paths here.\n\
                ```sh\nls `src/in/a/fence.rs`\n```\n`tests/cli/main.rs`\n";
    assert_eq!(doc_paths(text), ["src/runner/mod.rs", "src/no/such/file.rs", "docs/LAUNCHERS.md", "src/", ".ci/run", "tests/cli/main.rs"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(missing_doc_paths(text, root), ["src/no/such/file.rs"]);
}

/// The top-level modules of the crate in `src` (a directory or a file each;
/// not `lib.rs`, not `main.rs`).
fn top_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .expect("readable src")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|m| m != "lib" && m != "main")
        .collect()
}

/// Each module's floor in `graph`: 0 for one that uses no other, else one
/// above the highest it uses (the crate root is a module here, [`ROOT`]).
/// `Err` naming a module of a cycle.
fn floors(graph: &Graph, modules: &BTreeSet<String>) -> Result<BTreeMap<String, usize>, String> {
    fn floor(m: &str, graph: &Graph, done: &mut BTreeMap<String, usize>, path: &mut Vec<String>) -> Result<usize, String> {
        if let Some(&f) = done.get(m) {
            return Ok(f);
        }
        if path.iter().any(|p| p == m) {
            return Err(format!("{m} is on a cycle: {}", path.join(" -> ")));
        }
        path.push(m.to_string());
        let mut f = 0;
        for to in graph.get(m).map(|t| t.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            f = f.max(floor(&to, graph, done, path)? + 1);
        }
        path.pop();
        done.insert(m.to_string(), f);
        Ok(f)
    }
    let mut done = BTreeMap::new();
    for m in modules.iter().map(String::as_str).chain([ROOT]) {
        floor(m, graph, &mut done, &mut Vec::new())?;
    }
    Ok(done)
}

/// The floor table of docs/ARCHITECTURE.md (`| 3 | `envelope` |`): each
/// module named in backticks on a floor's row, the crate root where the row
/// names `src/lib.rs`.
fn floor_table(markdown: &str, modules: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let mut table = BTreeMap::new();
    for line in markdown.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(floor) = cells.get(1).and_then(|c| c.parse::<usize>().ok()) else { continue };
        let row = cells.get(2).copied().unwrap_or("");
        if row.contains("`src/lib.rs`") {
            table.insert(ROOT.to_string(), floor);
        }
        // The modules named outside parentheses (a remark may name others).
        let mut depth = 0;
        let named: String = row
            .chars()
            .filter(|&c| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0 && c != ')'
            })
            .collect();
        for span in named.split('`').skip(1).step_by(2) {
            if modules.contains(span) {
                table.insert(span.to_string(), floor);
            }
        }
    }
    table
}

/// What the map in `markdown` gets wrong about `modules` and `graph`: a
/// module without its code-map section (`### `src/x/`` or `### `src/x.rs``),
/// a module missing from the floor table or on another floor than its
/// imports put it.
fn map_errors(markdown: &str, modules: &BTreeSet<String>, graph: &Graph) -> Vec<String> {
    let mut errors = Vec::new();
    for m in modules {
        let dir = format!("### `src/{m}/`");
        let file = format!("### `src/{m}.rs`");
        if !markdown.lines().any(|l| l.starts_with(&dir) || l.starts_with(&file)) {
            errors.push(format!("{m}: no code-map section ({dir} or {file})"));
        }
    }
    let table = floor_table(markdown, modules);
    match floors(graph, modules) {
        Err(e) => errors.push(e),
        Ok(real) => {
            for (m, f) in &real {
                match table.get(m) {
                    None => errors.push(format!("{m}: not in the floor table (its imports put it on floor {f})")),
                    Some(t) if t != f => errors.push(format!("{m}: on floor {t} in the table, on floor {f} by its imports")),
                    Some(_) => {}
                }
            }
        }
    }
    errors
}

#[test]
fn every_top_level_module_has_its_code_map_section_and_its_floor_as_its_imports_give_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let modules = top_modules(&root.join("src"));
    assert!(modules.contains("runner") && modules.contains("cli") && modules.len() > 15, "{modules:?}");
    let errors = map_errors(&doc, &modules, &src_graph());
    assert!(errors.is_empty(), "docs/ARCHITECTURE.md's code map and floor table disagree with src/:\n{}", errors.join("\n"));
}

#[test]
fn the_map_check_finds_a_missing_section_a_missing_module_and_a_wrong_floor() {
    let modules: BTreeSet<String> = ["model", "stats", "report"].map(String::from).into();
    let mut graph = Graph::new();
    graph.entry("stats".into()).or_default().insert("model".into(), vec!["src/stats/mod.rs:1".into()]);
    graph.entry("report".into()).or_default().insert("stats".into(), vec!["src/report/mod.rs:1".into()]);
    graph.entry(ROOT.into()).or_default().insert("report".into(), vec!["src/lib.rs:1".into()]);
    let good = "| Floor | Modules |\n| --- | --- |\n| 0 | `model` |\n| 1 | `stats` |\n| 2 | `report` |\n| 3 | the root (`src/lib.rs`; not `stats`) |\n\
                ### `src/model/`\n### `src/stats/`\n### `src/report/`\n";
    assert_eq!(map_errors(good, &modules, &graph), Vec::<String>::new());
    let bad = good.replace("| 1 | `stats` |", "| 1 | |").replace("| 2 | `report` |", "| 1 | `report` |").replace("### `src/model/`\n", "");
    let errors = map_errors(&bad, &modules, &graph);
    assert_eq!(
        errors,
        [
            "model: no code-map section (### `src/model/` or ### `src/model.rs`)",
            "report: on floor 1 in the table, on floor 2 by its imports",
            "stats: not in the floor table (its imports put it on floor 1)",
        ],
        "{errors:?}"
    );
    graph.entry("model".into()).or_default().insert("report".into(), vec!["src/model/mod.rs:1".into()]);
    assert!(map_errors(good, &modules, &graph).iter().any(|e| e.contains("on a cycle")));
}

/// The code of the files of `module` that are built outside tests: files
/// named `tests.rs`, those declared `#[cfg(test)] mod x;` and the bodies of
/// `#[cfg(test)] mod x { .. }` are left out. `(file, code)` pairs.
fn non_test_code(src: &Path, module: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let dir = src.join(module);
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    }
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let codes: Vec<(PathBuf, String)> =
        files.into_iter().map(|f| (f.clone(), code_only(&std::fs::read_to_string(&f).expect("readable source")))).collect();
    let mut test_files = BTreeSet::new();
    for (_, code) in &codes {
        for (at, _) in code.match_indices("#[cfg(test)]") {
            let rest = code[at + "#[cfg(test)]".len()..].trim_start();
            let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
            if let Some(decl) = rest.strip_prefix("mod ") {
                let name: String = decl.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if decl[name.len()..].trim_start().starts_with(';') {
                    test_files.insert(name);
                }
            }
        }
    }
    codes
        .into_iter()
        .filter(|(f, _)| {
            let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            stem != "tests" && !test_files.contains(&stem)
        })
        .map(|(f, code)| (f.strip_prefix(src).unwrap_or(&f).display().to_string(), without_test_modules(&code)))
        .collect()
}

/// `code` without the bodies of its `#[cfg(test)] mod x { .. }`.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|a| a + from) {
        let after = at + "#[cfg(test)]".len();
        let rest = out[after..].trim_start();
        let starts_mod = rest.starts_with("mod ") || rest.starts_with("pub(crate) mod ") || rest.starts_with("pub mod ");
        let open = out[after..].find(['{', ';']).map(|o| o + after);
        match open {
            Some(o) if starts_mod && out.as_bytes()[o] == b'{' => {
                let mut depth = 0;
                let mut end = out.len();
                for (i, b) in out.bytes().enumerate().skip(o) {
                    match b {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                // Blanked with its lines kept, so that lines still count.
                let blank: String = out[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
                from = at + blank.len();
                out.replace_range(at..end, &blank);
            }
            _ => from = after,
        }
    }
    out
}

/// Where `code` uses one of `banned`: `file:line: what`.
fn uses_of(files: &[(String, String)], banned: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, code) in files {
        for (n, line) in code.lines().enumerate() {
            for b in banned {
                if line.contains(b) {
                    found.push(format!("src/{file}:{}: {b}", n + 1));
                }
            }
        }
    }
    found
}

/// What reads the clock: `model` is data and pure functions.
const CLOCK: [&str; 4] = ["SystemTime", "Instant::now", "Utc::now", "now_utc"];
/// What touches the world: `stats` computes over what it is given.
const IO: [&str; 10] =
    ["std::fs", "fs::", "File::", "std::io", "std::net", "std::process", "Command::", "println!", "eprintln!", "stdout()"];

#[test]
fn model_reads_no_clock_and_stats_does_no_io_outside_their_tests() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let model = non_test_code(&src, "model");
    let stats = non_test_code(&src, "stats");
    assert!(model.len() > 5 && stats.len() > 5, "the modules were read");
    assert!(!stats.iter().any(|(f, _)| f.ends_with("tests.rs") || f.ends_with("testdata.rs")), "test files are left out");
    let clock = uses_of(&model, &CLOCK);
    assert!(clock.is_empty(), "model reads the clock (a stage must read it and pass the value):\n{}", clock.join("\n"));
    let io = uses_of(&stats, &IO);
    assert!(io.is_empty(), "stats does I/O (it computes over what it is given):\n{}", io.join("\n"));
}

#[test]
fn the_invariant_checks_see_a_clock_and_io_outside_tests_and_not_inside() {
    let planted = "use std::time::SystemTime;\nfn f() { let t = SystemTime::now(); }\n\
                   #[cfg(test)]\nmod tests {\n    fn g() { let t = std::time::Instant::now(); std::fs::read(\"x\"); }\n}\n\
                   fn h() { println!(\"{}\", 1); }\n";
    let code = without_test_modules(&code_only(planted));
    let files = [("model/planted.rs".to_string(), code)];
    assert_eq!(uses_of(&files, &CLOCK), ["src/model/planted.rs:1: SystemTime", "src/model/planted.rs:2: SystemTime"]);
    assert_eq!(uses_of(&files, &IO), ["src/model/planted.rs:7: println!"]);
}
