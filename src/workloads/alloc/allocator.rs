//! The `allocator` axis: which malloc/free the `alloc` workloads call.
//!
//! Every allocator is the same small interface, [`Allocator`]: two function
//! pointers, `malloc` and `free`. The workloads call through it and nothing
//! else, so all allocators run the identical machine code around the call
//! (one indirect call each way) and differ only in the function called.
//!
//! - `system`: the C library's `malloc`/`free` (glibc here).
//! - `mimalloc`: `mi_malloc`/`mi_free`, built into the binary from the C
//!   sources of `libmimalloc-sys` (no override: the process's own malloc is
//!   untouched).
//! - `jemalloc`: jemalloc built by `tikv-jemalloc-sys` with its `_rjem_`
//!   symbol prefix, so it does not replace the process's malloc either.
//! - `preload:<path.so>`: any other allocator library, loaded by the dynamic
//!   loader with `LD_PRELOAD` into the worker process only (the runner sets
//!   the variable for that child alone, see [`preload_env`]); the workload
//!   calls the C library's `malloc`, which the preloaded library replaces.
//!   The worker checks that it did (see [`resolve`]); the runner checks
//!   before the run that the library loads and replaces `malloc`
//!   (`runner::preload`, with [`malloc_provider`] and [`same_library`]).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use serde_json::{Value, json};

use crate::model::Cell;
use crate::workloads::contract::{ParamKind, ParamSpec};

/// `malloc(3)`'s signature.
pub type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
/// `free(3)`'s signature.
pub type FreeFn = unsafe extern "C" fn(*mut c_void);

/// The built-in allocators, in axis order.
pub const BUILT_IN: [&str; 3] = ["system", "mimalloc", "jemalloc"];
/// The prefix of an allocator loaded with `LD_PRELOAD`: `preload:<path.so>`.
pub const PRELOAD: &str = "preload";

unsafe extern "C" {
    // Part of every mimalloc build (libmimalloc-sys declares it only with its
    // `extended` feature): the version as major * 10000 + minor * 100 + patch.
    fn mi_version() -> c_int;
}

/// One allocator: the only way the `alloc` workloads allocate or free the
/// blocks they measure. `Copy`, so every thread holds its own.
#[derive(Clone, Copy, Debug)]
pub struct Allocator {
    malloc: MallocFn,
    free: FreeFn,
}

impl Allocator {
    /// The C library's malloc and free (or, under `LD_PRELOAD`, whatever
    /// library the loader bound them to).
    pub fn libc() -> Allocator {
        Allocator { malloc: libc::malloc, free: libc::free }
    }

    pub fn mimalloc() -> Allocator {
        Allocator { malloc: libmimalloc_sys::mi_malloc, free: libmimalloc_sys::mi_free }
    }

    pub fn jemalloc() -> Allocator {
        Allocator { malloc: tikv_jemalloc_sys::malloc, free: tikv_jemalloc_sys::free }
    }

    /// Allocates `size` bytes; null when the allocator has no memory.
    ///
    /// # Safety
    /// The allocator's contract: the block must be freed only with
    /// [`Allocator::free`] of an allocator of the same kind, once.
    #[inline]
    pub unsafe fn malloc(&self, size: usize) -> *mut u8 {
        // SAFETY: forwarded to the caller.
        unsafe { (self.malloc)(size).cast() }
    }

    /// Frees a block this allocator returned (null is allowed).
    ///
    /// # Safety
    /// `p` is null or came from `malloc` of this allocator and was not freed.
    #[inline]
    pub unsafe fn free(&self, p: *mut u8) {
        // SAFETY: forwarded to the caller.
        unsafe { (self.free)(p.cast()) }
    }
}

/// The `allocator` axis: the three built-in allocators in every profile.
pub fn param() -> ParamSpec {
    let all: Vec<Value> = BUILT_IN.iter().map(|&n| n.into()).collect();
    ParamSpec {
        name: "allocator",
        help: "whose malloc/free: system (the C library's), mimalloc, jemalloc (both built in), or preload:<path.so> \
               (any allocator library, loaded with LD_PRELOAD into the worker)",
        kind: ParamKind::OpenChoice { choices: BUILT_IN.to_vec(), prefixes: vec![PRELOAD] },
        quick: all.clone(),
        full: all.clone(),
        seed: all,
        treatment: false,
    }
}

/// The library of a `preload:<path>` allocator value, if it is one.
pub fn preload_path(value: &str) -> Option<&str> {
    value.strip_prefix(PRELOAD).and_then(|r| r.strip_prefix(':')).filter(|p| !p.is_empty())
}

/// The `LD_PRELOAD` value the runner sets for the worker of `cell`, if the
/// cell's allocator is a preloaded one.
pub fn preload_env(cell: &Cell) -> Option<String> {
    cell.params.get("allocator").and_then(Value::as_str).and_then(preload_path).map(str::to_string)
}

/// Whether the object file `provider` (a path from the loader) is the
/// library the user named: the same file after resolving links, or, for a
/// bare name that the loader searched for, the same file name.
pub fn same_library(provider: &str, lib: &str) -> bool {
    let canon = |p: &str| std::fs::canonicalize(p).ok();
    let (a, b) = (canon(provider), canon(lib));
    (a.is_some() && a == b) || (!lib.contains('/') && Path::new(provider).file_name() == Path::new(lib).file_name())
}

/// The file of the loaded object that defines `addr`, as the loader knows it.
fn object_of(addr: *const c_void) -> Option<String> {
    // SAFETY: Dl_info is plain data; all-zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    Some(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

/// The object the dynamic loader binds `malloc` to in this process (the
/// first definition in its lookup order: a preloaded library before libc):
/// the object holding the very function [`Allocator::libc`] calls, or, if
/// that address is a stub in this binary, `dlsym`'s answer.
pub fn malloc_provider() -> Option<String> {
    let called = object_of(Allocator::libc().malloc as *const c_void);
    let exe = std::env::current_exe().ok().and_then(|e| std::fs::canonicalize(e).ok());
    let in_exe = |p: &str| std::fs::canonicalize(p).ok().is_some_and(|c| Some(c) == exe);
    match called {
        Some(p) if !in_exe(&p) => Some(p),
        _ => {
            // SAFETY: a lookup by name in the default scope; nothing is called.
            let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) };
            if addr.is_null() { None } else { object_of(addr) }
        }
    }
}

/// The paths of this process's memory mappings whose file is `lib`
/// (compared after resolving symbolic links), from `/proc/self/maps`.
fn mapped(lib: &Path) -> Vec<String> {
    let want = std::fs::canonicalize(lib).unwrap_or_else(|_| lib.to_path_buf());
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else { continue };
        let p = PathBuf::from(path);
        let same = p == want || std::fs::canonicalize(&p).is_ok_and(|c| c == want);
        if same && !out.iter().any(|o| o == path) {
            out.push(path.to_string());
        }
    }
    out
}

fn glibc_version() -> Option<String> {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: returns a static NUL-terminated string.
        let v = unsafe { libc::gnu_get_libc_version() };
        if !v.is_null() {
            return Some(format!("glibc {}", unsafe { CStr::from_ptr(v) }.to_string_lossy()));
        }
    }
    None
}

/// `mi_version()`'s major * 10000 + minor * 100 + patch as `mimalloc X.Y.Z`.
fn mimalloc_text(v: c_int) -> String {
    format!("mimalloc {}.{}.{}", v / 10000, v / 100 % 100, v % 100)
}

fn mimalloc_version() -> String {
    // SAFETY: a pure query of the built-in mimalloc.
    mimalloc_text(unsafe { mi_version() })
}

/// jemalloc's `mallctl(3)`.
type Mallctl = unsafe extern "C" fn(*const c_char, *mut c_void, *mut usize, *mut c_void, usize) -> c_int;

/// `jemalloc X` from a jemalloc's `mallctl("version")`.
///
/// # Safety
/// `mallctl` is a jemalloc's `mallctl`.
unsafe fn jemalloc_version_by(mallctl: Mallctl) -> Option<String> {
    let mut p: *const c_char = std::ptr::null();
    let mut len = std::mem::size_of::<*const c_char>();
    // SAFETY: "version" is a read-only mallctl whose value is a `const char *`;
    // `p` and `len` are valid out-parameters of that size.
    let rc = unsafe { mallctl(c"version".as_ptr(), (&raw mut p).cast(), &mut len, std::ptr::null_mut(), 0) };
    if rc != 0 || p.is_null() {
        return None;
    }
    // SAFETY: jemalloc's static version string.
    Some(format!("jemalloc {}", unsafe { CStr::from_ptr(p) }.to_string_lossy()))
}

fn jemalloc_version() -> Option<String> {
    // SAFETY: the built-in jemalloc's mallctl.
    unsafe { jemalloc_version_by(tikv_jemalloc_sys::mallctl) }
}

/// The version a preloaded allocator reports about itself, when it is one
/// that says (jemalloc's `mallctl("version")`, gperftools' `tc_version`,
/// `mi_version`); only symbols that `provider` itself defines are asked.
fn preloaded_version(provider: &str) -> Option<String> {
    let sym = |name: &CStr| {
        // SAFETY: a lookup by name in the default scope; nothing is called.
        let a = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        (!a.is_null() && object_of(a).as_deref() == Some(provider)).then_some(a)
    };
    if let Some(a) = sym(c"mallctl") {
        // SAFETY: jemalloc's documented mallctl signature.
        let f: Mallctl = unsafe { std::mem::transmute::<*mut c_void, Mallctl>(a) };
        // SAFETY: the provider's own mallctl.
        if let Some(v) = unsafe { jemalloc_version_by(f) } {
            return Some(v);
        }
    }
    if let Some(a) = sym(c"tc_version") {
        type TcVersion = unsafe extern "C" fn(*mut c_int, *mut c_int, *mut *const c_char) -> *const c_char;
        // SAFETY: gperftools' documented tc_version signature.
        let f: TcVersion = unsafe { std::mem::transmute::<*mut c_void, TcVersion>(a) };
        let (mut major, mut minor, mut patch) = (0, 0, std::ptr::null());
        // SAFETY: valid out-parameters; returns a static string.
        let v = unsafe { f(&mut major, &mut minor, &mut patch) };
        if !v.is_null() {
            // SAFETY: a static NUL-terminated string.
            return Some(unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned());
        }
    }
    if let Some(a) = sym(c"mi_version") {
        type MiVersion = unsafe extern "C" fn() -> c_int;
        // SAFETY: mimalloc's documented mi_version signature.
        return Some(mimalloc_text(unsafe { std::mem::transmute::<*mut c_void, MiVersion>(a)() }));
    }
    None
}

/// A cell's allocator, resolved in the worker, and the facts the row
/// records about it.
pub struct Resolved {
    pub alloc: Allocator,
    /// `allocator`, `allocator_library`, `allocator_version`, `malloc_provider`,
    /// `preload_mapped`: see docs/RECORD-FORMAT.md.
    pub info: Value,
}

/// Resolves the cell's `allocator` parameter. For `preload:<path>` it checks
/// that the loader really bound `malloc` to that library in this process
/// (an error otherwise: the runner sets `LD_PRELOAD` for the worker, and the
/// loader only warns when it cannot preload).
pub fn resolve(cell: &Cell) -> anyhow::Result<Resolved> {
    let name = cell.str("allocator")?;
    let provider = malloc_provider();
    let (alloc, library, version, preload_mapped) = match name {
        "system" => (Allocator::libc(), provider.clone().unwrap_or_else(|| "the C library".into()), glibc_version(), None),
        "mimalloc" => {
            let exe = object_of(Allocator::mimalloc().malloc as *const c_void).unwrap_or_else(|| "this binary".into());
            (Allocator::mimalloc(), format!("built in ({exe}, libmimalloc-sys)"), Some(mimalloc_version()), None)
        }
        "jemalloc" => {
            let exe = object_of(Allocator::jemalloc().malloc as *const c_void).unwrap_or_else(|| "this binary".into());
            (Allocator::jemalloc(), format!("built in ({exe}, tikv-jemalloc-sys, _rjem_ prefix)"), jemalloc_version(), None)
        }
        other => {
            let Some(lib) = preload_path(other) else { bail!("unknown allocator '{other}'") };
            let Some(path) = provider.clone().filter(|p| same_library(p, lib)) else {
                let found = mapped(Path::new(lib));
                return Err(anyhow!(
                    "allocator {other}: malloc is bound to {} in the worker, not to {lib} (LD_PRELOAD='{}'; {lib} mapped: {})",
                    provider.as_deref().unwrap_or("nothing"),
                    std::env::var("LD_PRELOAD").unwrap_or_default(),
                    if found.is_empty() { "no".to_string() } else { found.join(", ") }
                ));
            };
            let version = preloaded_version(&path);
            let found = mapped(Path::new(&path));
            (Allocator::libc(), path, version, Some(found))
        }
    };
    let info = json!({
        "allocator": name,
        "allocator_library": library,
        "allocator_version": version,
        "malloc_provider": provider,
        "preload_mapped": preload_mapped,
    });
    Ok(Resolved { alloc, info })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(a: Allocator) {
        for size in [1usize, 16, 256, 1000, 1 << 20] {
            // SAFETY: allocated, written within its size, freed once by the same allocator.
            unsafe {
                let p = a.malloc(size);
                assert!(!p.is_null());
                p.write(7);
                p.add(size - 1).write(9);
                assert_eq!(p.read() + p.add(size - 1).read(), if size == 1 { 18 } else { 16 });
                a.free(p);
            }
        }
    }

    #[test]
    fn every_built_in_allocator_allocates_and_frees() {
        round_trip(Allocator::libc());
        round_trip(Allocator::mimalloc());
        round_trip(Allocator::jemalloc());
    }

    #[test]
    fn built_in_allocators_report_their_versions() {
        assert!(mimalloc_version().starts_with("mimalloc "), "{}", mimalloc_version());
        assert!(jemalloc_version().is_some_and(|v| v.starts_with("jemalloc 5.")), "{:?}", jemalloc_version());
        assert!(malloc_provider().is_some_and(|p| p.contains("libc")), "{:?}", malloc_provider());
    }

    #[test]
    fn preload_values_name_their_library() {
        assert_eq!(preload_path("preload:/usr/lib/libx.so"), Some("/usr/lib/libx.so"));
        assert_eq!(preload_path("preload:"), None);
        assert_eq!(preload_path("system"), None);
    }

    #[test]
    fn libraries_match_by_file_or_by_the_name_searched_for() {
        assert!(same_library("/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"));
        assert!(!same_library("/lib/x86_64-linux-gnu/libc.so.6", "libm.so.6"));
        assert!(!same_library("/lib/x86_64-linux-gnu/libc.so.6", "/somewhere/else/libc.so.6"));
        assert!(same_library("/proc/self/exe", "/proc/self/exe"));
    }
}
