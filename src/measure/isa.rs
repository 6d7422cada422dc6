//! Which code path a multiversioned kernel takes on this CPU.
//!
//! A compute kernel written once is compiled three times by
//! [`multiversion!`](crate::measure::isa::multiversion): for x86-64-v4
//! (`avx512f`), for x86-64-v3 (`avx2`) and for the build's baseline. Each copy
//! is the same source under another `#[target_feature]`, so closures inside
//! it (the parallel leaves handed to a task runtime) are compiled for that
//! path too. At run time the kernel takes the path of the [`Path`] it is
//! handed, and a [`Path`] other than `baseline` can only be had from
//! detection: the widest path the CPU has ([`Path::native`]), or one path
//! pinned with the `isa` parameter ([`Path::choose`]), refused when the CPU
//! lacks its features. So one portable binary runs at the machine's width on
//! every host of a fleet, and `-C target-cpu=native` is not needed.
//!
//! Floating-point results do not depend on the path: Rust never contracts
//! `a * b + c` into a fused multiply-add nor reorders additions, whatever the
//! target features, so every path computes the same bits (the kernels'
//! tests check it on every path this CPU has).

use crate::model::isa::{CodePath, IsaChoice, names};

/// The features of x86-64-v4 (`avx512f`), as `#[target_feature]` and
/// `is_x86_feature_detected!` name them; it includes v3's.
pub const AVX512F_FEATURES: &[&str] =
    &["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma", "bmi1", "bmi2", "lzcnt", "popcnt", "movbe", "f16c"];
/// The features of x86-64-v3 (`avx2`).
pub const AVX2_FEATURES: &[&str] = &["avx2", "fma", "bmi1", "bmi2", "lzcnt", "popcnt", "movbe", "f16c"];

/// The features a path needs.
pub fn features(path: CodePath) -> &'static [&'static str] {
    match path {
        CodePath::Avx512f => AVX512F_FEATURES,
        CodePath::Avx2 => AVX2_FEATURES,
        CodePath::Baseline => &[],
    }
}

/// The features of `path` that `detected` says are absent (AVX-512's
/// detection includes the kernel's saving of its state).
fn missing_on(path: CodePath, detected: &dyn Fn(&str) -> bool) -> Vec<&'static str> {
    features(path).iter().copied().filter(|f| !detected(f)).collect()
}

/// `DETECTABLE`, the features `detected` has an arm for, and `detected`:
/// `is_x86_feature_detected!` takes a literal, so one arm per name, from
/// one list (a test checks that it is `AVX512F_FEATURES`).
#[cfg(target_arch = "x86_64")]
macro_rules! detect {
    ($($name:tt),*) => {
        #[cfg(test)]
        const DETECTABLE: &[&str] = &[$($name),*];

        /// Whether this CPU has `feature` (one of the lists above; any
        /// other name is absent).
        fn detected(feature: &str) -> bool {
            match feature {
                $($name => std::arch::is_x86_feature_detected!($name),)*
                _ => false,
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
detect!("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma", "bmi1", "bmi2", "lzcnt", "popcnt", "movbe", "f16c");

/// Off x86-64 only the baseline path exists.
#[cfg(not(target_arch = "x86_64"))]
fn detected(_feature: &str) -> bool {
    false
}

/// Every path this CPU can take, from the widest; `baseline` always.
pub fn available() -> Vec<CodePath> {
    available_on(&detected)
}

/// Every path whose features `detected` says are present, from the widest.
fn available_on(detected: &dyn Fn(&str) -> bool) -> Vec<CodePath> {
    CodePath::ALL.into_iter().filter(|&p| missing_on(p, detected).is_empty()).collect()
}

/// A code path this CPU has: the only way to a path other than `baseline`,
/// so that a kernel never runs instructions the CPU lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path(CodePath);

impl Path {
    /// The build's baseline, which every CPU of its target runs.
    #[cfg(test)]
    pub const BASELINE: Path = Path(CodePath::Baseline);

    /// The widest path this CPU has.
    pub fn native() -> Path {
        Path(available()[0])
    }

    /// `path` if this CPU has it, else the features it lacks.
    pub fn new(path: CodePath) -> Result<Path, String> {
        Path::new_on(path, &detected)
    }

    /// [`Path::new`] on a CPU whose features `detected` tells.
    fn new_on(path: CodePath, detected: &dyn Fn(&str) -> bool) -> Result<Path, String> {
        let lacking = missing_on(path, detected);
        if lacking.is_empty() {
            Ok(Path(path))
        } else {
            Err(format!("isa={path}: this CPU lacks {} (it has {})", lacking.join(", "), names(&available_on(detected))))
        }
    }

    /// The path the `isa` parameter asks for: the widest for `native`, else
    /// the one it pins, refused (with the reason, for a skipped row) when
    /// the CPU lacks it.
    pub fn choose(choice: IsaChoice) -> Result<Path, String> {
        match choice.pinned() {
            None => Ok(Path::native()),
            Some(p) => Path::new(p),
        }
    }

    /// Every path this CPU has, from the widest (a test runs each).
    #[cfg(test)]
    pub fn every() -> Vec<Path> {
        available().into_iter().map(Path).collect()
    }

    /// The path's name.
    pub fn code_path(self) -> CodePath {
        self.0
    }
}

/// Defines a kernel function compiled once per code path, dispatching on
/// its first argument, a [`Path`]:
///
/// ```ignore
/// multiversion! {
///     /// Docs.
///     fn kernel[R: Runtime](path: Path, rt: &R, x: &mut [f64]) -> f64 {
///         ...
///     }
/// }
/// ```
///
/// Generic parameters go in square brackets (`[]` for none); every argument
/// is `name: Type`. The body is copied into a `#[target_feature]` function
/// per path, so closures in it are compiled for the path as well; helpers
/// it calls are compiled for the path only where they inline (mark small
/// ones `#[inline(always)]`, or make them `multiversion!` kernels and pass
/// `path` on).
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident [$($gen:tt)*] ($path:ident : Path $(, $arg:ident : $ty:ty)* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name<$($gen)*>($path: $crate::measure::isa::Path $(, $arg: $ty)*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(
                    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx2,fma,bmi1,bmi2,lzcnt,popcnt,movbe,f16c"
                )]
                fn avx512f<$($gen)*>($path: $crate::measure::isa::Path $(, $arg: $ty)*) $(-> $ret)? {
                    let _ = $path;
                    $body
                }
                #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt,movbe,f16c")]
                fn avx2<$($gen)*>($path: $crate::measure::isa::Path $(, $arg: $ty)*) $(-> $ret)? {
                    let _ = $path;
                    $body
                }
                match $path.code_path() {
                    // SAFETY: a Path other than baseline is made only after
                    // detecting every feature its copy is compiled with
                    // (`Path::new`; the lists are `AVX512F_FEATURES` and
                    // `AVX2_FEATURES`, checked against these by a test).
                    $crate::model::isa::CodePath::Avx512f => return unsafe { avx512f($path $(, $arg)*) },
                    // SAFETY: as above.
                    $crate::model::isa::CodePath::Avx2 => return unsafe { avx2($path $(, $arg)*) },
                    $crate::model::isa::CodePath::Baseline => {}
                }
            }
            // A body need not use the path it was compiled for.
            let _ = $path;
            $body
        }
    };
}
pub(crate) use multiversion;

#[cfg(test)]
mod tests {
    use super::*;

    multiversion! {
        /// A loop the compiler vectorises: the same sum on every path.
        fn dot[](path: Path, a: &[f64], b: &[f64]) -> f64 {
            let mut parts = [0.0; 8];
            for (ca, cb) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
                for i in 0..8 {
                    parts[i] += ca[i] * cb[i];
                }
            }
            parts.iter().sum()
        }
    }

    #[test]
    fn every_path_gives_the_same_bits_and_baseline_is_always_there() {
        let a: Vec<f64> = (0..4096).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..4096).map(|i| (i as f64 * 0.11).cos()).collect();
        let paths = Path::every();
        assert_eq!(paths.last(), Some(&Path::BASELINE));
        let reference = dot(Path::BASELINE, &a, &b);
        for p in paths {
            assert_eq!(dot(p, &a, &b).to_bits(), reference.to_bits(), "{p:?}");
        }
    }

    #[test]
    fn the_feature_lists_are_the_macros_and_nest() {
        // The macro's attribute strings, as written in it.
        let src = include_str!("isa.rs");
        for (path, list) in [(CodePath::Avx512f, AVX512F_FEATURES), (CodePath::Avx2, AVX2_FEATURES)] {
            let joined = list.join(",");
            assert!(src.contains(&format!("\"{joined}\"")), "{path}: the macro enables other features than {joined}");
        }
        assert!(AVX2_FEATURES.iter().all(|f| AVX512F_FEATURES.contains(f)), "v4 includes v3");
        // Detection has an arm for every feature (a missing one would refuse the path).
        #[cfg(target_arch = "x86_64")]
        assert_eq!(DETECTABLE, AVX512F_FEATURES);
        // A path is supported only with all of its features, and the
        // widest supported one is native.
        for p in available() {
            assert!(missing_on(p, &detected).is_empty());
        }
        assert_eq!(Path::native().code_path(), available()[0]);
    }

    #[test]
    fn a_pinned_path_the_cpu_lacks_is_refused_naming_what_it_lacks() {
        for p in CodePath::ALL {
            match Path::new(p) {
                Ok(path) => assert!(available().contains(&p) && path.code_path() == p),
                Err(why) => {
                    assert!(!available().contains(&p));
                    assert!(why.starts_with(&format!("isa={p}: this CPU lacks ")), "{why}");
                }
            }
        }
        assert_eq!(Path::choose(IsaChoice::Baseline), Ok(Path::BASELINE));
        // A CPU with AVX2 but no AVX-512, and one with neither, whatever
        // this machine has.
        let v3 = |f: &str| AVX2_FEATURES.contains(&f);
        assert_eq!(
            Path::new_on(CodePath::Avx512f, &v3),
            Err("isa=avx512f: this CPU lacks avx512f, avx512bw, avx512cd, avx512dq, avx512vl (it has avx2, baseline)".into())
        );
        assert_eq!(Path::new_on(CodePath::Avx2, &v3), Ok(Path(CodePath::Avx2)));
        let none = |_: &str| false;
        assert_eq!(Path::new_on(CodePath::Avx2, &none).unwrap_err().split(" (it has ").nth(1), Some("baseline)"));
        assert_eq!(Path::new_on(CodePath::Baseline, &none), Ok(Path::BASELINE));
        assert_eq!(Path::choose(IsaChoice::Native), Ok(Path::native()));
    }
}
