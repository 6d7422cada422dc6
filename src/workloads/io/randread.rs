//! `io.randread`: random 4 KiB reads of one file, through each engine, from
//! the page cache (buffered, the file read once at prepare) or from the
//! device (O_DIRECT): the OS/CPU feature study's asynchronous-I/O benchmark
//! (synchronous `pread`, POSIX AIO's thread pool, io_uring with registered
//! buffers at queue depth 32 over a 256 MB file).

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use rand::SeedableRng;
use rand::distr::{Distribution, Uniform};
use rand::rngs::Xoshiro256PlusPlus;
use serde_json::json;

use super::ReadEngineKind;
use super::blocks::{ALIGN, BLOCK, Stamps};
use super::engine::sync::SyncReader;
use super::engine::threadpool::PoolReader;
use super::engine::uring::{UringReader, disabled_sysctl};
use super::engine::{ReadEngine, Request, Tally};
use super::sizing::{self, MIB, Placed, Rule};
use crate::model::{Cell, Profile, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::os::fs_common::{instance_dir, skip_or_fail};

/// File sizes per profile: quick 2x the last-level cache within 64..256 MiB,
/// full 16x and at least 1 GiB, seed 8x and at least the study's 256 MB.
pub const RULES: [Rule; 3] = [
    Rule { mult: 2, floor: 64 * MIB, ceiling: Some(256 * MIB) },
    Rule { mult: 16, floor: 1024 * MIB, ceiling: None },
    Rule { mult: 8, floor: 256 * MIB, ceiling: None },
];

pub struct RandRead;

named_enum! {
    /// The `mode` axis: through the page cache or around it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Mode {
        Buffered = "buffered",
        Direct = "direct",
    }
}

impl Workload for RandRead {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "io.randread",
            group: "io",
            summary: "Random 4 KiB reads of one file: pread, a pread thread pool, io_uring; buffered or O_DIRECT",
            measures: "how many random 4 KiB reads per second one process gets from the storage stack: with O_DIRECT the \
                       device and the kernel's block path (queue depth matters), buffered the page cache's read path \
                       (the file is cached: system-call and copy costs)",
            unit: Unit::OpsPerSec,
            timed_region: "the sample's `reads` reads and nothing else: for `sync` one pread after another on the worker \
                           thread; for `threadpool` releasing `depth` waiting threads (started at prepare), their preads \
                           taken from a shared list, and the wait for the last; for `io_uring` keeping `depth` \
                           READ_FIXED requests in flight (submit and wait in one io_uring_enter) until the last completes. \
                           Each completed block's three stamps are compared as it arrives (24 bytes, inside the window). \
                           Outside: writing the file, warming or dropping its cache, starting threads, setting up the \
                           ring and registering the file and buffers, drawing the offsets",
            total_window: None,
            verifier: "every 4 KiB block read carries its own file offset (stamped at prepare in its first and last 8 \
                       bytes, with the file's key): every read of every sample returned a full block whose stamps match \
                       the offset asked for (0 mismatched, 0 short)",
            batched: false,
            params: vec![
                ParamSpec::axis_of::<Mode>(
                    "mode",
                    "buffered (through the page cache, the file cached at prepare) or direct (O_DIRECT: the device)",
                )
                .with_values(Profile::Seed, vec![Mode::Direct.as_str().into()]),
                super::engine_param::<ReadEngineKind>(
                    "sync: one pread at a time; threadpool: `depth` threads doing pread (the POSIX AIO model); io_uring: `depth` requests in flight, registered file and fixed buffers",
                ),
                ParamSpec::int("depth", "reads in flight: io_uring's queue depth, the thread pool's threads (sync: 1)", 1, 4096, [32; 3]),
                ParamSpec::int("reads", "random 4 KiB reads per sample", 1, 100_000_000, [4096, 16384, 1000]),
                ParamSpec::int(
                    "file_mib",
                    "file size in MiB; 0: from the machine (a multiple of the last-level cache, at most a quarter of the memory available and of the free space)",
                    0,
                    1 << 40,
                    [0; 3],
                ),
            ],
            faults: &["off-by-one-block"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let direct = cell.choice::<Mode>("mode")? == Mode::Direct;
        let engine_name = cell.choice::<ReadEngineKind>("engine")?;
        let depth = cell.usize("depth")?;
        let reads = cell.usize("reads")?;
        let Placed { scratch, filesystem, machine, size } = match sizing::place(cell, cx, RULES, BLOCK as u64)? {
            Ok(p) => p,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        let stamps = Stamps::new(cell.seed);
        let path = match instance_dir(&scratch, "randread").and_then(|d| write_file(&d.join("data"), size.bytes, &stamps)) {
            Ok(p) => p,
            Err(e) => return skip_or_fail("writing the file in the scratch directory", e),
        };
        let dio_align = if direct { super::dio_alignment(&path) } else { None };
        if let Some((mem, off)) = dio_align {
            if off == 0 {
                return Ok(Prepared::Skip(format!(
                    "{filesystem} does not support O_DIRECT on this file (statx reports no direct-I/O alignment)"
                )));
            }
            if mem as usize > ALIGN || off as usize > BLOCK {
                return Ok(Prepared::Skip(format!(
                    "O_DIRECT here needs {mem} B memory and {off} B offset alignment; 4 KiB reads allow at most {ALIGN} and {BLOCK}"
                )));
            }
        }
        // The page cache: full for buffered rows, dropped for direct ones.
        let page_cache = if direct {
            File::open(&path).and_then(|f| super::drop_cached(&f)).context("dropping the file's cached pages")?;
            "bypassed: O_DIRECT reads; the file's clean pages were dropped at prepare (POSIX_FADV_DONTNEED)"
        } else {
            std::io::copy(&mut File::open(&path)?.take(size.bytes), &mut std::io::sink()).context("reading the file once")?;
            "cached: the file was written and then read once at prepare, so buffered reads come from the page cache"
        };
        let resident_after_prepare = super::resident_pct(&path).ok();
        let page_cache = match resident_after_prepare {
            // tmpfs and the like keep a file's pages whatever is advised: they are the file.
            Some(pct) if direct && pct >= 50.0 => {
                "in memory: O_DIRECT was accepted, but the file's pages stayed resident after POSIX_FADV_DONTNEED \
                 (on this filesystem they are the file), so these reads reach no device"
            }
            _ => page_cache,
        };
        let file = match super::open_read(&path, direct) {
            Ok(f) => f,
            Err(e) if direct && super::direct_refused(&e) => {
                return Ok(Prepared::Skip(format!("{filesystem} refuses O_DIRECT: {e}")));
            }
            Err(e) => return Err(e).context("opening the file for reading"),
        };
        let mut engine: Box<dyn ReadEngine> = match engine_name {
            ReadEngineKind::Sync => Box::new(SyncReader::new(file, stamps.clone())),
            ReadEngineKind::Threadpool => Box::new(PoolReader::new(file, stamps.clone(), depth).context("starting the thread pool")?),
            ReadEngineKind::IoUring => match UringReader::new(file, stamps.clone(), depth) {
                Ok(r) => Box::new(r),
                Err(e) => match e.skip_reason(disabled_sysctl().as_deref()) {
                    Some(why) => return Ok(Prepared::Skip(why)),
                    None => return Err(e.error).with_context(|| format!("setting up io_uring: {}", e.stage)),
                },
            },
        };
        // One read now: a filesystem that refuses direct reads skips the row here.
        engine.load(&[Request { offset: 0, expect: 0 }]);
        if let Err(e) = engine.run() {
            if direct && super::direct_refused(&e) {
                return Ok(Prepared::Skip(format!("{filesystem} refuses O_DIRECT reads: {e}")));
            }
            return Err(e).context("the first read");
        }
        let blocks = size.bytes / BLOCK as u64;
        Ok(Prepared::ready(RandReadInstance {
            in_flight: engine.in_flight(),
            ring_setup: engine.setup().map(str::to_string),
            engine,
            engine_name,
            direct,
            path,
            blocks,
            reads,
            rng: Xoshiro256PlusPlus::seed_from_u64(cell.seed ^ 0x4A4D_0E1D),
            dist: Uniform::new(0, blocks).context("the file has no block")?,
            shift_first: cx.fault_is("off-by-one-block"),
            reqs: Vec::with_capacity(reads),
            facts: json!({
                "filesystem": filesystem,
                "file_bytes": size.bytes,
                "size_rule": size.rule,
                "machine": machine.details(),
                "page_cache": page_cache,
                "resident_pct_after_prepare": resident_after_prepare,
                "dio_align": dio_align.map(|(m, o)| json!({ "memory": m, "offset": o })),
            }),
            reads_total: 0,
        }))
    }
}

/// Writes `bytes` (whole blocks) of stamped blocks to `path` and flushes
/// them, so that no writeback runs during the samples.
fn write_file(path: &std::path::Path, bytes: u64, stamps: &Stamps) -> std::io::Result<PathBuf> {
    let mut f = File::create(path)?;
    let mut chunk = vec![0u8; MIB as usize];
    let mut at = 0u64;
    while at < bytes {
        let n = (bytes - at).min(MIB) as usize / BLOCK * BLOCK;
        stamps.fill(&mut chunk[..n], at, 0);
        f.write_all(&chunk[..n])?;
        at += n as u64;
    }
    f.sync_all()?;
    Ok(path.to_path_buf())
}

struct RandReadInstance {
    engine: Box<dyn ReadEngine>,
    engine_name: ReadEngineKind,
    direct: bool,
    in_flight: usize,
    /// io_uring's setup flags (details `ring_setup`).
    ring_setup: Option<String>,
    path: PathBuf,
    blocks: u64,
    reads: usize,
    rng: Xoshiro256PlusPlus,
    dist: Uniform<u64>,
    /// The fault: the first read of each sample goes one block further than
    /// the offset it is checked against.
    shift_first: bool,
    reqs: Vec<Request>,
    facts: serde_json::Value,
    reads_total: u64,
}

impl Instance for RandReadInstance {
    /// What the engine's reads found.
    type Outcome = Tally;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Tally)> {
        self.reqs.clear();
        for _ in 0..self.reads {
            let off = self.dist.sample(&mut self.rng) * BLOCK as u64;
            self.reqs.push(Request { offset: off, expect: off });
        }
        if self.shift_first {
            self.reqs[0].offset = (self.reqs[0].offset + BLOCK as u64) % (self.blocks * BLOCK as u64);
        }
        self.engine.load(&self.reqs);
        timer.start();
        let tally = self.engine.run();
        timer.stop();
        let tally = tally.with_context(|| format!("reading {}", self.path.display()))?;
        self.reads_total += tally.reads;
        Ok((Work { ops: tally.reads, bytes: tally.reads * BLOCK as u64 }, tally))
    }

    fn verify(&mut self, t: &Tally) -> Check {
        let expected = format!("{} reads of 4096 B, each block carrying the offset it was read from: 0 mismatched, 0 short", self.reads);
        let mut observed = format!("{} reads, {} mismatched, {} short", t.reads, t.mismatches, t.short);
        if let Some(b) = t.first_bad {
            observed.push_str(&format!(
                " (first: read {} of offset {} returned {} B stamped with offset {})",
                b.index, b.expect, b.found.len, b.found.offset
            ));
        }
        Check { passed: t.reads == self.reads as u64 && t.mismatches == 0, expected, observed }
    }

    fn details(&self, _: Option<&Tally>) -> serde_json::Value {
        let mut d = self.facts.clone();
        let m = d.as_object_mut().expect("facts is an object");
        m.insert("engine".into(), self.engine_name.as_str().into());
        m.insert("mode".into(), (if self.direct { "direct" } else { "buffered" }).into());
        m.insert("in_flight".into(), self.in_flight.into());
        if let Some(setup) = &self.ring_setup {
            m.insert("ring_setup".into(), setup.as_str().into());
        }
        m.insert("block_bytes".into(), BLOCK.into());
        m.insert("file_blocks".into(), self.blocks.into());
        m.insert("reads_per_sample".into(), self.reads.into());
        m.insert("reads_total".into(), self.reads_total.into());
        m.insert("resident_pct_at_end".into(), super::resident_pct(&self.path).ok().into());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    fn cell(engine: &str, mode: &str, fault: Option<&str>, dir: &std::path::Path) -> Cell {
        let mut c = test_cell("io.randread", json!({"engine": engine, "mode": mode, "depth": 4, "reads": 64, "file_mib": 1}), fault, dir);
        c.group = "io".into();
        c
    }

    #[test]
    fn every_engine_reads_stamped_blocks_buffered() {
        for engine in ReadEngineKind::NAMES {
            let tmp = tempfile::tempdir().unwrap();
            let prepared = RandRead.prepare_here(&cell(engine, "buffered", None, tmp.path())).unwrap();
            let Prepared::Ready(mut inst) = prepared else { continue };
            assert_eq!(inst.sample(1, &mut Timer::new()).unwrap(), Work { ops: 64, bytes: 64 * 4096 });
            let v = inst.verify();
            assert!(v.passed, "{engine}: {v:?}");
            let d = inst.details();
            assert_eq!(d["file_bytes"], MIB);
            assert_eq!(d["file_blocks"], 256);
            assert_eq!(d["engine"], *engine);
        }
    }

    #[test]
    fn a_read_one_block_off_fails_the_verifier() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inst = ready(RandRead.prepare_here(&cell("sync", "buffered", Some("off-by-one-block"), tmp.path())));
        inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert!(v.observed.starts_with("64 reads, 1 mismatched, 0 short (first: read 0 of offset "), "{}", v.observed);
    }

    #[test]
    fn a_file_larger_than_the_free_space_is_refused_before_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = cell("sync", "buffered", None, tmp.path());
        c.params.insert("file_mib".into(), json!(1u64 << 40));
        match RandRead.prepare_here(&c) {
            Ok(Prepared::Skip(why)) => assert!(why.starts_with("not enough free space"), "{why}"),
            _ => panic!("not skipped"),
        }
        assert!(!tmp.path().join("randread").exists(), "nothing was written");
    }
}
