use super::*;
use crate::workloads::registry;

const GOOD: &str = r#"
[[workload]]
id = "demo.sweep"
summary = "Runs sh with a sweep"
unit = "ns"
direction = "lower-is-better"
command = ["sh", "-c", "echo n={n} mode={mode}"]
env = { DEMO_N = "{n}" }

[workload.axes]
n = [1, 2, 3]
mode = "fast"

[workload.verify]
must_match = ['n=\d']
must_not_match = ["error"]
value = { regex = 'n=(\d+)', expected = 2, tolerance = 1 }
"#;

fn parse_text(text: &str) -> Result<Vec<CommandDef>, String> {
    parse(Path::new("bench.toml"), text, &registry::specs()).map_err(|e| e.0)
}

fn err(text: &str) -> String {
    parse_text(text).expect_err("the file must be rejected")
}

/// GOOD with one line replaced.
fn with(old: &str, new: &str) -> String {
    assert!(GOOD.contains(old), "{old}");
    GOOD.replace(old, new)
}

#[test]
fn a_good_file_gives_checked_definitions() {
    let defs = parse_text(GOOD).unwrap();
    assert_eq!(defs.len(), 1);
    let d = &defs[0];
    assert_eq!((d.id.as_str(), d.group(), d.unit), ("demo.sweep", "demo", Unit::Ns));
    assert!(d.source.starts_with("bench.toml:"), "{}", d.source);
    assert_eq!(d.axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["mode", "n"]);
    assert_eq!(d.axes[1].values, [Value::from(1), Value::from(2), Value::from(3)]);
    assert_eq!(d.verify.value.as_ref().unwrap().tolerance, 1.0);
    assert!(Path::new(&d.cwd).is_absolute());
    let spec = d.spec();
    assert_eq!((spec.id, spec.group), ("demo.sweep", "demo"));
    assert!(spec.verifier.contains("exit code 0") && spec.verifier.contains("`error`"), "{}", spec.verifier);
    assert_eq!(spec.param("n").unwrap().values(crate::model::Profile::Quick).len(), 3);
}

#[test]
fn the_workers_axis_varies_fastest() {
    let d = &parse_text(&with("mode = \"fast\"", "mode = \"fast\"\nworkers = [1, 2]\nzeta = [\"a\"]")).unwrap()[0];
    assert_eq!(d.axes.last().unwrap().name, "workers");
}

#[test]
fn an_unknown_key_names_the_line_and_the_key() {
    let e = err(&with("unit = \"ns\"", "unit = \"ns\"\ncomand = [\"true\"]"));
    assert!(e.starts_with("bench.toml:6:") && e.contains("`comand`"), "{e}");
    let e = err(&with("must_match", "must_mach"));
    assert!(e.contains("bench.toml:") && e.contains("`must_mach`"), "{e}");
}

#[test]
fn a_regex_that_does_not_compile_is_named() {
    let e = err(&with(r#"must_not_match = ["error"]"#, r#"must_not_match = ["(unclosed"]"#));
    assert!(e.starts_with("bench.toml:16: key `verify.must_not_match`: the regex does not compile"), "{e}");
    let e = err(&with(r#"value = { regex = 'n=(\d+)'"#, r#"value = { regex = 'n=\d+'"#));
    assert!(e.contains("key `verify.value.regex`") && e.contains("capture group"), "{e}");
}

#[test]
fn an_undefined_placeholder_is_named_with_the_axes() {
    let e = err(&with("echo n={n}", "echo n={count}"));
    assert!(e.starts_with("bench.toml:7: key `command`: placeholder `{count}` is not an axis (axes: mode, n)"), "{e}");
    let e = err(&with("DEMO_N = \"{n}\"", "DEMO_N = \"{m}\""));
    assert!(e.contains("key `env.DEMO_N`") && e.contains("`{m}`"), "{e}");
}

#[test]
fn shell_expansions_and_escaped_braces_are_not_placeholders() {
    assert!(parse_text(&with("echo n={n}", "echo $${HOME} {{x}} n={n}")).is_ok());
}

#[test]
fn a_missing_program_is_named() {
    let e = err(&with(r#"["sh", "-c""#, r#"["no-such-program-proofbench", "-c""#));
    assert!(e.starts_with("bench.toml:7: key `command`: program `no-such-program-proofbench`: not found on PATH"), "{e}");
    let e = err(&with(r#"["sh", "-c""#, r#"["./missing.sh", "-c""#));
    assert!(e.contains("is not an executable file"), "{e}");
    let e = err(&with("env = {", "prepare = [\"no-such-prep-proofbench\"]\nenv = {"));
    assert!(e.contains("key `prepare`: program `no-such-prep-proofbench`"), "{e}");
}

#[test]
fn a_string_command_needs_shell_true() {
    let e = err(&with(r#"command = ["sh", "-c", "echo n={n} mode={mode}"]"#, r#"command = "echo {n} {mode}""#));
    assert!(e.contains("key `command`") && e.contains("shell = true"), "{e}");
    let ok = with(r#"command = ["sh", "-c", "echo n={n} mode={mode}"]"#, "command = \"echo n={n} {mode}\"\nshell = true");
    assert_eq!(parse_text(&ok).unwrap()[0].command, ["sh", "-c", "echo n={n} {mode}"]);
    let e = err(&with("env = {", "shell = true\nenv = {"));
    assert!(e.contains("one string"), "{e}");
}

#[test]
fn ids_must_not_clash_with_built_in_workloads_or_groups() {
    let e = err(&with("demo.sweep", "cpu.mine"));
    assert!(e.starts_with("bench.toml:3: key `id`") && e.contains("built-in group 'cpu'"), "{e}");
    let e = err(&with("demo.sweep", "nodot"));
    assert!(e.contains("GROUP.NAME"), "{e}");
    let twice = format!("{GOOD}\n{GOOD}");
    assert!(err(&twice).contains("defined twice"));
    // An id names files: one longer than a name may be is refused before anything runs.
    let e = err(&with("demo.sweep", &format!("demo.{}", "s".repeat(250))));
    assert!(e.starts_with("bench.toml:3: key `id`") && e.contains("255 characters long; at most 64"), "{e}");
}

#[test]
fn units_directions_and_metrics_must_agree() {
    let e = err(&with("direction = \"lower-is-better\"", "direction = \"higher-is-better\""));
    assert!(e.contains("key `direction`") && e.contains("lower-is-better"), "{e}");
    let e = err(&with("unit = \"ns\"", "unit = \"furlongs\""));
    assert!(e.contains("key `unit`") && e.contains("cycles"), "{e}");
    let e = err(&with("unit = \"ns\"", "unit = \"cycles\""));
    assert!(e.contains("wall-time sample is in ns"), "{e}");
    let metric = with("unit = \"ns\"", "unit = \"cycles\"\nmetric = { regex = 'cycles=(\\d+)', total_regex = 'total=(\\d+)' }");
    let d = &parse_text(&metric).unwrap()[0];
    assert_eq!(d.metric.as_ref().unwrap().total_regex.as_deref(), Some("total=(\\d+)"));
    assert!(d.spec().total_window.is_some());
}

#[test]
fn axis_values_are_integers_or_strings_of_one_kind() {
    assert!(err(&with("mode = \"fast\"", "mode = [1, \"x\"]")).contains("mixes"));
    assert!(err(&with("mode = \"fast\"", "mode = [1.5]")).contains("integers or non-empty strings"));
    assert!(err(&with("mode = \"fast\"", "mode = []")).contains("at least one value"));
}

#[test]
fn a_file_without_workloads_or_with_bad_toml_is_rejected() {
    assert!(err("").contains("no [[workload]]"));
    let e = err("[[workload]\n");
    assert!(e.starts_with("bench.toml:1:"), "{e}");
}

#[test]
fn env_names_must_be_shell_names_and_values_free_of_nul() {
    for bad in [r#""BAD=NAME""#, r#""""#, r#""1X""#, r#""A B""#, r#""\u0000""#] {
        let e = err(&with("DEMO_N = ", &format!("{bad} = ")));
        assert!(e.contains("key `env.") && e.contains("is not an environment variable name"), "{bad}: {e}");
    }
    let e = err(&with(r#"DEMO_N = "{n}""#, r#"DEMO_N = "a\u0000b""#));
    assert!(e.contains("key `env.DEMO_N`: the value contains a NUL byte"), "{e}");
    assert!(parse_text(&with("DEMO_N = ", "_DEMO_2 = ")).is_ok());
}

#[test]
fn a_profile_command_is_checked_like_the_others() {
    let good = format!("{GOOD}\n[workload.profile]\ncommand = [\"sh\", \"-c\", \"echo guest {{n}}\"]\n");
    let d = &parse_text(&good).unwrap()[0];
    assert_eq!(d.profile.as_deref(), Some(&["sh".to_string(), "-c".into(), "echo guest {n}".into()][..]));
    assert!(!d.echo_output);
    assert_eq!(parse_text(GOOD).unwrap()[0].profile, None, "none without the table");
    let e = err(&format!("{GOOD}\n[workload.profile]\ncommand = [\"sh\", \"-c\", \"echo {{cpus}}\"]\n"));
    assert!(e.contains("key `profile.command`: placeholder `{cpus}` is not an axis"), "{e}");
    let e = err(&format!("{GOOD}\n[workload.profile]\ncommand = [\"no-such-guest-probe\"]\n"));
    assert!(e.contains("key `profile.command`: program `no-such-guest-probe`: not found on PATH"), "{e}");
    let e = err(&format!("{GOOD}\n[workload.profile]\ncommand = [\"true\"]\nruns = 2\n"));
    assert!(e.contains("`runs`"), "{e}");
    let e = err(&format!("{GOOD}\n[workload.profile]\ncommand = \"echo x\"\n"));
    assert!(e.contains("key `profile.command`: a string runs through a shell only with `shell = true`"), "{e}");
}
