//! Input hygiene: names a shell would refuse are refused before anything
//! runs, and text from the user or a workload reaches report.md, report.html
//! and the terminal as text (escaped for markdown and HTML, control
//! characters replaced), never as markup or terminal escapes.

use std::path::PathBuf;

use crate::common::{FAST, Sandbox, text};

fn write(sb: &Sandbox, name: &str, body: &str) -> PathBuf {
    let p = sb.tmp.path().join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// A command workload whose `env` table holds `entry` (on line 7).
fn env_toml(entry: &str) -> String {
    format!(
        r#"
[[workload]]
id = "shell.env"
summary = "Wall time of true"
unit = "ns"
direction = "lower-is-better"
env = {{ {entry} }}
command = ["true"]
"#
    )
}

#[test]
fn env_names_that_a_shell_refuses_are_refused_naming_file_line_and_key() {
    for (entry, key) in [(r#""BAD=NAME" = "1""#, "BAD=NAME"), (r#""" = "1""#, "\"\""), (r#""1X" = "1""#, "1X"), (r#""A-B" = "1""#, "A-B")] {
        let sb = Sandbox::new();
        let file = write(&sb, "env.toml", &env_toml(entry));
        let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell"], FAST].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{entry}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let at = format!("proofbench: error: {}:7: key `env.", file.display());
        assert!(err.starts_with(&at), "{entry}: {err}");
        assert!(err.contains(key) && err.contains("letters, digits and '_', not starting with a digit"), "{entry}: {err}");
        assert!(!sb.run_dir().exists(), "nothing ran for {entry}");
    }
    // A good name still runs.
    let sb = Sandbox::new();
    let file = write(&sb, "env.toml", &env_toml(r#"GOOD_NAME1 = "1""#));
    let out = sb.run(&[&["--workloads", file.to_str().unwrap(), "shell", "--no-history"], FAST].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
