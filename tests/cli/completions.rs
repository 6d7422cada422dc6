//! `completions` and `man`: the shell completion scripts and manual pages
//! generated from the clap definitions. The bash script is sourced in a real
//! `bash` and asked to complete; the pages are rendered by `man -l` where
//! man-db is installed (skipped, with the reason printed, where it is not;
//! under `CI=true` a missing tool fails the test instead, and .ci/run
//! installs man-db).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, missing, on_path, text};

/// The shells `proofbench completions` knows.
const SHELLS: &[&str] = &["bash", "zsh", "fish", "elvish", "powershell"];

/// The internal subcommands and flags, hidden from `--help`: no script or
/// page may name them.
const HIDDEN: &[&str] = &["worker", "noop", "malloc-provider", "inject-fault"];

fn proofbench(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("proofbench runs")
}

/// Stdout of `proofbench ARGS`, which must exit 0.
fn stdout_of(args: &[&str]) -> String {
    let out = proofbench(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The visible subcommands as `proofbench --help` lists them (without
/// `help`): what the scripts and pages must name, read from the help text
/// rather than from the code that generates them.
fn subcommands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let listed = help.lines().skip_while(|l| *l != "Commands:").skip(1).take_while(|l| !l.is_empty());
    let names: Vec<String> = listed
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 10 && names.iter().any(|n| n == "run") && names.iter().any(|n| n == "man"), "{names:?} from:\n{help}");
    names
}

/// Every `--flag` that `proofbench SUBCOMMAND --help` lists.
fn long_flags(subcommand: &str) -> BTreeSet<String> {
    let help = stdout_of(&[subcommand, "--help"]);
    // Flag lines are indented 2 or 6 columns; descriptions (which may
    // mention a flag at the start of a wrapped line) 10.
    help.lines()
        .filter(|l| l.len() - l.trim_start().len() <= 6)
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| l.split([' ', ',', '=', '<']).filter(|w| w.starts_with("--") && w.len() > 2).map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// Whether `text` holds `word` as a whole word (`worker` in `opts="...
/// worker ..."` or `proofbench,worker)`, not in `--workers`).
fn names_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        before && text[at + word.len()..].chars().next().is_none_or(|c| !part(c))
    })
}

/// The bash completion script, written into `dir`.
fn bash_script(dir: &Path) -> PathBuf {
    let path = dir.join("proofbench.bash");
    std::fs::write(&path, stdout_of(&["completions", "bash"])).unwrap();
    path
}

/// `bash --norc --noprofile -c CODE bash SCRIPT ARGS...`: CODE sources
/// SCRIPT (`$1`) first; must exit 0. Returns stdout.
fn bash(script: &Path, code: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &format!("source \"$1\" || exit 9; shift; {code}"), "bash"])
        .arg(script)
        .args(args)
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(0), "bash: {code}\n{}{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

/// The completion function `complete -p proofbench` registered.
fn completion_function(script: &Path) -> String {
    let spec = bash(script, "complete -p proofbench", &[]);
    assert!(spec.trim_end().ends_with(" proofbench"), "{spec}");
    let words: Vec<&str> = spec.split_whitespace().collect();
    let f = words.iter().position(|w| *w == "-F").map(|i| words[i + 1]);
    f.unwrap_or_else(|| panic!("no completion function (-F) registered: {spec}")).to_owned()
}

/// What bash offers for the command line `words`, whose last word is the
/// one being completed (`""` for a new word): the registered function
/// called as bash calls it, with COMP_WORDS, COMP_CWORD and COMP_LINE set.
fn complete(script: &Path, function: &str, words: &[&str]) -> Vec<String> {
    let code = format!(
        "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; COMP_POINT=${{#COMP_LINE}}; \
         {function} \"$1\" \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    bash(script, &code, words).lines().filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

#[test]
fn the_bash_script_registers_a_completion_and_completes_commands_flags_and_values() {
    if on_path("bash").is_none() {
        return missing("bash", "apt-get install bash");
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = bash_script(tmp.path());
    let f = completion_function(&script);

    assert_eq!(complete(&script, &f, &["proofbench", "r"]), ["run", "report"]);
    assert_eq!(complete(&script, &f, &["proofbench", "ru"]), ["run"]);
    let offered = complete(&script, &f, &["proofbench", ""]);
    for sub in subcommands() {
        assert!(offered.contains(&sub), "`proofbench <TAB>` does not offer {sub}: {offered:?}");
    }
    for hidden in HIDDEN {
        assert!(!offered.iter().any(|o| o == hidden), "`proofbench <TAB>` offers the internal {hidden}: {offered:?}");
    }
    let mut shells: Vec<String> =
        complete(&script, &f, &["proofbench", "completions", ""]).into_iter().filter(|w| !w.starts_with('-')).collect();
    shells.sort();
    let mut expected = SHELLS.to_vec();
    expected.sort();
    assert_eq!(shells, expected);
    assert_eq!(complete(&script, &f, &["proofbench", "run", "--profile", ""]), ["quick", "full", "seed"]);
    assert_eq!(complete(&script, &f, &["proofbench", "history", "reg"]), ["regressions"]);
    // Workload names: groups and ids, for run, noise and list.
    for sub in ["run", "noise", "list"] {
        assert_eq!(complete(&script, &f, &["proofbench", sub, "cpu.pr"]), ["cpu.primes"], "{sub}");
        let offered = complete(&script, &f, &["proofbench", sub, "o"]);
        assert!(offered.contains(&"os".to_string()) && offered.contains(&"os.syscall".to_string()), "{sub}: {offered:?}");
    }
    assert!(complete(&script, &f, &["proofbench", "run", "selftest"]).is_empty(), "hidden workloads are not offered");

    // Every flag of `run --help` (the script is built from a copy of the
    // definitions without the hidden ones: none may be lost on the way).
    for sub in ["run", "compare", "report"] {
        let offered: BTreeSet<String> = complete(&script, &f, &["proofbench", sub, "--"]).into_iter().collect();
        assert_eq!(offered, long_flags(sub), "`proofbench {sub} --<TAB>` against `proofbench {sub} --help`");
    }
}

#[test]
fn every_shell_gets_a_script_naming_the_subcommands_and_nothing_hidden() {
    let subs = subcommands();
    for shell in SHELLS {
        let script = stdout_of(&["completions", shell]);
        for sub in &subs {
            assert!(script.contains(sub.as_str()), "{shell}: {sub} not in the script");
        }
        assert!(script.contains("--fail-on-regression"), "{shell}: the flags of run are missing");
        // The hidden commands' about texts all start "Internal:" (bash's
        // script has no descriptions, only names; zsh's descriptions mention
        // the worker process, so names alone cannot tell there).
        assert!(!script.contains("--inject-fault"), "{shell}: the hidden --inject-fault is in the script");
        if *shell == "bash" {
            for hidden in HIDDEN {
                assert!(!names_word(&script, hidden), "{shell}: the internal {hidden} is in the script");
            }
        } else {
            assert!(script.contains("Print the machine record"), "{shell}: no descriptions");
            assert!(!script.contains("Internal:"), "{shell}: an internal command is in the script");
        }
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error_of_one_line_naming_it() {
    let out = proofbench(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'tcsh'") && err.starts_with("proofbench: error:"), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(proofbench(&["completions"]).status.code(), Some(2), "no shell");
}

#[test]
fn man_prints_roff_naming_every_subcommand() {
    let page = stdout_of(&["man"]);
    assert!(page.lines().any(|l| l.starts_with(".TH proofbench 1")), "no roff title line:\n{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS", ".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES"] {
        assert!(page.lines().any(|l| l == section || l.replace('"', "") == section.replace('"', "")), "{section} missing:\n{page}");
    }
    // Every exit code README.md names, and what the tool reads.
    for needle in ["\n0\n", "\n1\n", "\n2\n", "\n3\n", "\n4\n", "\n130\n", "NO_COLOR", "TMPDIR", "PROOFBENCH_PERF"] {
        assert!(page.contains(needle), "{needle:?} not in the page:\n{page}");
    }
    for sub in subcommands() {
        // roff escapes '-' as '\-'.
        let entry = format!("proofbench\\-{}(1)", sub.replace('-', "\\-"));
        assert!(page.lines().any(|l| l == entry), "{entry} not in the page:\n{page}");
    }
    for hidden in HIDDEN.iter().chain(&["help"]) {
        assert!(!page.contains(&format!("proofbench\\-{}", hidden.replace('-', "\\-"))), "{hidden} in the page:\n{page}");
    }
}

#[test]
fn man_dir_writes_one_page_per_command_and_prints_their_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("share/man/man1");
    let printed = stdout_of(&["man", "--dir", dir.to_str().unwrap()]);
    let mut expected: Vec<String> = ["proofbench".to_owned()]
        .into_iter()
        .chain(subcommands().iter().map(|s| format!("proofbench-{s}")))
        .chain(["import", "list", "show", "regressions", "changes"].iter().map(|s| format!("proofbench-history-{s}")))
        .chain(["submit", "status", "wait"].iter().map(|s| format!("proofbench-slurm-{s}")))
        .map(|n| format!("{n}.1"))
        .collect();
    expected.sort();
    let mut written: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    assert_eq!(written, expected);
    let mut listed: Vec<String> =
        printed.lines().map(|l| Path::new(l).strip_prefix(&dir).unwrap().to_string_lossy().into_owned()).collect();
    listed.sort();
    assert_eq!(listed, expected, "the printed paths");
    let run = std::fs::read_to_string(dir.join("proofbench-run.1")).unwrap();
    assert!(run.starts_with(".ie") && run.contains(".TH proofbench-run 1") && run.contains("\\-\\-fail\\-on\\-regression"), "{run}");
    assert!(run.contains(".SH \"EXIT STATUS\"") && run.contains(".SH \"EXAMPLES\"") && run.contains("\\-\\-lockstep"), "{run}");

    // A file where the directory should be: exit 1, naming --dir.
    let out = proofbench(&["man", "--dir", dir.join("proofbench.1").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--dir"), "{}", text(&out.stderr));

    // Links already in the directory are replaced, never written through:
    // the victim keeps its text, a dangling link's target is not made.
    let (victim, made) = (tmp.path().join("victim"), tmp.path().join("made"));
    std::fs::write(&victim, "keep").unwrap();
    let linked = tmp.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(&victim, linked.join("proofbench-run.1")).unwrap();
    std::os::unix::fs::symlink(&made, linked.join("proofbench-report.1")).unwrap();
    stdout_of(&["man", "--dir", linked.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(!made.exists(), "a dangling link's target was created");
    for page in ["proofbench-run.1", "proofbench-report.1"] {
        let p = linked.join(page);
        assert!(!std::fs::symlink_metadata(&p).unwrap().file_type().is_symlink(), "{page} is still a link");
        assert!(std::fs::read_to_string(&p).unwrap().contains(".TH proofbench"), "{page}");
    }
}

#[test]
fn man_l_renders_every_page_without_a_warning() {
    if on_path("man").is_none() {
        return missing("man", "apt-get install man-db");
    }
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("proofbench.1");
    std::fs::write(&top, stdout_of(&["man"])).unwrap();
    let dir = tmp.path().join("pages");
    stdout_of(&["man", "--dir", dir.to_str().unwrap()]);
    let mut pages = vec![top];
    pages.extend(std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()));
    assert!(pages.len() > 10, "{pages:?}");
    for page in &pages {
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(page)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .env("LC_ALL", "C")
            .output()
            .expect("man runs");
        let (rendered, err) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "man -l {}: {err}", page.display());
        assert!(!err.contains("warning") && !err.contains("error"), "man -l {}: {err}", page.display());
        assert!(rendered.contains("NAME") && rendered.contains("SYNOPSIS"), "man -l {}:\n{rendered}", page.display());
    }
    let rendered = text(&Command::new("man").arg("-l").arg(&pages[0]).env("MANPAGER", "cat").env("LC_ALL", "C").output().unwrap().stdout);
    assert!(rendered.contains("SUBCOMMANDS") && rendered.contains("proofbench-check-claims(1)"), "{rendered}");
}
