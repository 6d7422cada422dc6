//! Variants: axes whose values change what is measured (another build of
//! the worker, another allocator, an environment variable, a wrapper, a
//! parameter). `--variant NAME=SPEC` names one; every cell of the plan is
//! measured under each variant, and the rounds alternate their trials so
//! that each round pairs them in time.
//!
//! SPEC is a comma-separated list of settings `KEY=VALUE`. A comma starts a
//! new setting only when a known key and `=` follow it; any other comma
//! belongs to the value (`env=MALLOC_CONF=narenas:1,tcache:false`,
//! `launcher=taskset -c 0,1`). An empty SPEC is the build as it is.

use super::PlanError;
use crate::model::variant::{ENV_NAME_RULE, Setting, SettingKey, Variant, env_name_ok};

fn bad(text: &str, why: impl Into<String>) -> PlanError {
    PlanError::BadVariant { text: text.to_string(), why: why.into() }
}

/// Splits SPEC into settings: a comma followed by a known key and `=`
/// starts a new one.
fn split_settings(text: &str, spec: &str) -> Result<Vec<Setting>, PlanError> {
    let mut out: Vec<Setting> = Vec::new();
    for piece in spec.split(',') {
        let key = piece.split_once('=').and_then(|(k, _)| SettingKey::from_name(k.trim()));
        match (key, out.last_mut()) {
            (Some(key), _) => {
                let value = piece.split_once('=').map(|(_, v)| v.to_string()).unwrap_or_default();
                out.push(Setting { key, value });
            }
            (None, Some(last)) => {
                last.value.push(',');
                last.value.push_str(piece);
            }
            (None, None) => {
                let key = piece.split_once('=').map_or(piece, |(k, _)| k);
                return Err(bad(text, format!("unknown variant key '{key}' (known: {})", SettingKey::known())));
            }
        }
    }
    Ok(out)
}

/// Checks one setting on its own (what needs the machine, such as whether
/// an `exe` is a proofbench, is checked by the runner).
fn check_setting(text: &str, s: &Setting) -> Result<(), PlanError> {
    let value = s.value.as_str();
    if value.trim().is_empty() {
        return Err(bad(text, format!("{}= needs a value", s.key.as_str())));
    }
    if value.contains('\0') {
        return Err(bad(text, format!("{}: the value contains a NUL byte", s.key.as_str())));
    }
    match s.key {
        SettingKey::Env => {
            let (k, _) = s.pair();
            if !value.contains('=') || !env_name_ok(k) {
                return Err(bad(text, format!("env={value}: expected env=NAME=VALUE with NAME of {ENV_NAME_RULE}")));
            }
        }
        SettingKey::Param => {
            let (k, v) = s.pair();
            if !value.contains('=') || k.trim().is_empty() {
                return Err(bad(text, format!("param={value}: expected param=NAME=VALUE")));
            }
            if v.contains(',') {
                return Err(bad(text, format!("param={value}: a variant sets one value (sweep a list with -p instead)")));
            }
        }
        SettingKey::Allocator if value.contains(',') => {
            return Err(bad(text, format!("allocator={value}: a variant sets one allocator")));
        }
        SettingKey::Launcher if shlex::split(value).is_none_or(|w| w.is_empty()) => {
            return Err(bad(text, format!("launcher={value}: unbalanced quotes, or no words")));
        }
        SettingKey::Preload if value.contains([' ', ':']) => {
            return Err(bad(text, format!("preload={value}: LD_PRELOAD separates libraries by spaces and colons")));
        }
        _ => {}
    }
    Ok(())
}

/// Parses one `--variant NAME=SPEC`.
pub fn parse(text: &str) -> Result<Variant, PlanError> {
    let Some((name, spec)) = text.split_once('=') else {
        return Err(bad(text, "expected NAME=SPEC, e.g. --variant base= or --variant je=allocator=jemalloc"));
    };
    let name = name.trim();
    let name_ok = !name.is_empty() && name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if !name_ok {
        return Err(bad(text, format!("'{name}' is not a variant name (1 to 32 letters, digits, '_', '.' or '-')")));
    }
    let settings = if spec.trim().is_empty() { Vec::new() } else { split_settings(text, spec)? };
    for s in &settings {
        check_setting(text, s)?;
    }
    for key in [SettingKey::Exe, SettingKey::Preload, SettingKey::Launcher, SettingKey::Allocator] {
        if settings.iter().filter(|s| s.key == key).count() > 1 {
            return Err(bad(text, format!("{} is given twice", key.as_str())));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for s in settings.iter().filter(|s| s.key == SettingKey::Env || s.key == SettingKey::Param) {
        let (k, _) = s.pair();
        let k = if s.key == SettingKey::Param { k.trim() } else { k };
        if seen.contains(&k) {
            return Err(bad(text, format!("{}={k} is given twice", s.key.as_str())));
        }
        seen.push(k);
    }
    if settings.iter().any(|s| s.key == SettingKey::Allocator)
        && settings.iter().any(|s| s.key == SettingKey::Param && s.pair().0.trim() == "allocator")
    {
        return Err(bad(text, "allocator= and param=allocator= both set the allocator"));
    }
    Ok(Variant { name: name.to_string(), base: false, settings })
}

/// Parses every `--variant` and marks the base (`--base NAME`, else the
/// first). None given: no variants. One alone, a duplicate name, or a base
/// that names no variant: a usage error naming the flag.
pub fn parse_all(texts: &[String], base: Option<&str>) -> Result<Vec<Variant>, PlanError> {
    if texts.is_empty() {
        return match base {
            Some(b) => Err(PlanError::BadBase { name: b.to_string(), why: "needs two or more --variant".into() }),
            None => Ok(Vec::new()),
        };
    }
    let mut out: Vec<Variant> = Vec::new();
    for t in texts {
        let v = parse(t)?;
        if out.iter().any(|o| o.name == v.name) {
            return Err(bad(t, format!("the name '{}' is given twice", v.name)));
        }
        out.push(v);
    }
    if out.len() < 2 {
        return Err(bad(&texts[0], "give two or more variants: one alone has nothing to be compared with"));
    }
    let base = base.unwrap_or(&out[0].name).to_string();
    let Some(b) = out.iter_mut().find(|v| v.name == base) else {
        let names: Vec<&str> = out.iter().map(|v| v.name.as_str()).collect();
        return Err(PlanError::BadBase { name: base, why: format!("no variant has that name ({})", names.join(", ")) });
    };
    b.base = true;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(text: &str) -> String {
        parse(text).expect_err(text).to_string()
    }

    #[test]
    fn settings_split_at_commas_that_start_a_known_key() {
        let v = parse("je=allocator=jemalloc,env=MALLOC_CONF=narenas:1,tcache:false,launcher=taskset -c 0,1").unwrap();
        let got: Vec<String> = v.settings.iter().map(Setting::to_string).collect();
        assert_eq!(got, ["allocator=jemalloc", "env=MALLOC_CONF=narenas:1,tcache:false", "launcher=taskset -c 0,1"]);
        assert_eq!(v.env(), [("MALLOC_CONF".to_string(), "narenas:1,tcache:false".to_string())]);
        assert_eq!(v.wrapper(), ["taskset", "-c", "0,1"]);
        assert_eq!(v.params(), ["allocator=jemalloc"]);
        assert!(parse("a=").unwrap().settings.is_empty(), "an empty spec is the build as it is");
        assert_eq!(parse("k=param=kernel=b.elf").unwrap().params(), ["kernel=b.elf"]);
    }

    #[test]
    fn bad_variants_name_what_is_wrong() {
        assert!(why("a=frobnicate=1").contains("unknown variant key 'frobnicate' (known: exe, preload, allocator, env, launcher, param)"));
        assert!(why("noequals").contains("expected NAME=SPEC"));
        assert!(why("a b=").contains("not a variant name"));
        assert!(why("a=env=1X=2").contains("expected env=NAME=VALUE"));
        assert!(why("a=param=range").contains("expected param=NAME=VALUE"));
        assert!(why("a=param=range=1,2").contains("sets one value"));
        assert!(why("a=exe=/x,exe=/y").contains("exe is given twice"));
        assert!(why("a=env=X=1,env=X=2").contains("env=X is given twice"));
        assert!(why("a=launcher='oops").contains("unbalanced quotes"));
        assert!(why("a=exe=").contains("exe= needs a value"));
        assert!(why("a=preload=/a.so /b.so").contains("LD_PRELOAD"));
        assert!(why("a=allocator=system,param=allocator=jemalloc").contains("both set the allocator"));
        assert!(why("a=frobnicate=1").starts_with("--variant a=frobnicate=1: "), "the message names the flag");
    }

    #[test]
    fn the_list_needs_two_distinct_names_and_a_base_among_them() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let e = |v: &[&str], base: Option<&str>| parse_all(&s(v), base).expect_err("refused").to_string();
        assert!(e(&["a="], None).contains("two or more variants"));
        assert!(e(&["a=", "a=env=X=1"], None).contains("the name 'a' is given twice"));
        assert!(e(&["a=", "b="], Some("c")).contains("--base c: no variant has that name (a, b)"));
        assert!(e(&[], Some("c")).contains("--base c: needs two or more --variant"));
        let v = parse_all(&s(&["a=", "b=env=X=1"]), Some("b")).unwrap();
        assert_eq!(v.iter().map(|v| (v.name.as_str(), v.base)).collect::<Vec<_>>(), [("a", false), ("b", true)]);
        assert!(parse_all(&s(&["a=", "b="]), None).unwrap()[0].base, "the first is the base by default");
        assert!(parse_all(&[], None).unwrap().is_empty());
    }
}
