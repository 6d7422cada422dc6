//! Variants as data: axes whose values change what is measured (another
//! build of the worker, another allocator, an environment variable, a
//! wrapper, a parameter), as the cell and run.json record them. Parsing
//! `--variant NAME=SPEC` is the plan's (`plan::variant`).

use serde::{Deserialize, Serialize};

use super::names::named_enum;

named_enum! {
    /// What a setting changes. `ALL` lists the keys in the order the help
    /// lists them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SettingKey {
        /// Another proofbench binary (of the same version) runs the worker.
        Exe = "exe",
        /// An allocator library loaded with `LD_PRELOAD` into the worker,
        /// checked before the run to replace `malloc` (any other library
        /// goes in with `env=LD_PRELOAD=...`, checked to load).
        Preload = "preload",
        /// The `allocator` parameter (`system`, `mimalloc`, `jemalloc`, `preload:<path.so>`).
        Allocator = "allocator",
        /// `K=V`: an environment variable of the worker.
        Env = "env",
        /// A command prefix the worker runs under (`taskset -c 1`, `numactl -N 0`).
        Launcher = "launcher",
        /// `NAME=VALUE`: one value of a parameter (a command workload's placeholder too).
        Param = "param",
    }
}

impl SettingKey {
    /// Every key's name, for error messages.
    pub fn known() -> String {
        SettingKey::ALL.map(SettingKey::as_str).join(", ")
    }
}

/// One setting of a variant, as typed after its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub key: SettingKey,
    pub value: String,
}

impl Setting {
    /// `K` and `V` of an `env` or `param` setting.
    pub fn pair(&self) -> (&str, &str) {
        self.value.split_once('=').unwrap_or((&self.value, ""))
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.key.as_str(), self.value)
    }
}

/// A variant as the cell and run.json record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    /// Whether the others are compared with this one.
    pub base: bool,
    pub settings: Vec<Setting>,
}

/// The name of the axis the variants make.
pub const AXIS: &str = "variant";

impl Variant {
    /// The values of settings with key `key`.
    pub fn values(&self, key: SettingKey) -> impl Iterator<Item = &str> {
        self.settings.iter().filter(move |s| s.key == key).map(|s| s.value.as_str())
    }

    /// The one value of a key a variant may give once (`exe`, `preload`, `launcher`).
    pub fn one(&self, key: SettingKey) -> Option<&str> {
        self.values(key).next()
    }

    /// The parameter overrides (`NAME=VALUE`) the variant makes, `allocator=` included.
    pub fn params(&self) -> Vec<String> {
        self.settings
            .iter()
            .filter_map(|s| match s.key {
                SettingKey::Param => Some(s.value.clone()),
                SettingKey::Allocator => Some(format!("allocator={}", s.value)),
                _ => None,
            })
            .collect()
    }

    /// The environment variables it sets for the worker.
    pub fn env(&self) -> Vec<(String, String)> {
        self.settings.iter().filter(|s| s.key == SettingKey::Env).map(|s| s.pair()).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The words of its launcher prefix (empty without one).
    pub fn wrapper(&self) -> Vec<String> {
        self.one(SettingKey::Launcher).and_then(shlex::split).unwrap_or_default()
    }

    /// `a (base): param=range=1000000` for reports.
    pub fn describe(&self) -> String {
        let settings: Vec<String> = self.settings.iter().map(Setting::to_string).collect();
        let what = if settings.is_empty() { "the build as it is".to_string() } else { settings.join(", ") };
        format!("{}{}: {what}", self.name, if self.base { " (base)" } else { "" })
    }
}

/// What [`env_name_ok`] accepts, for error messages.
pub const ENV_NAME_RULE: &str = "letters, digits and '_', not starting with a digit";

/// Whether `name` can name an environment variable: ASCII letters, digits
/// and `_`, not starting with a digit, as POSIX shells accept
/// ([`ENV_NAME_RULE`]). So never empty, never holding `=` (which would split
/// into another name and value in the child's environment) or NUL. The one
/// check for every environment variable name proofbench takes: `--variant
/// NAME=env=K=V` and the `env` table of a command workload.
pub fn env_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
