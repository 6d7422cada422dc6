//! `io.seqwrite`: one file rewritten in order, block by block, through
//! `pwrite` or io_uring, then flushed with `fsync`; the writes and the fsync
//! are two rows (the `timed` axis), so the flush is never hidden in the
//! write figure nor left out of the picture.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use super::WriteEngineKind;
use super::blocks::{BLOCK, Found, Stamps};
use super::engine::WriteEngine;
use super::engine::sync::SyncWriter;
use super::engine::uring::{UringWriter, disabled_sysctl};
use super::sizing::{self, MIB, Placed, Rule};
use crate::measure::clock;
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::os::fs_common::{ext4_journal, instance_dir, skip_or_fail};

/// File sizes per profile: quick the last-level cache within 32..128 MiB,
/// full and seed 8x and at least 512 MiB (the study has no write test).
pub const RULES: [Rule; 3] = [
    Rule { mult: 1, floor: 32 * MIB, ceiling: Some(128 * MIB) },
    Rule { mult: 8, floor: 512 * MIB, ceiling: None },
    Rule { mult: 8, floor: 512 * MIB, ceiling: None },
];

pub struct SeqWrite;

named_enum! {
    /// The `timed` axis: what the row's window holds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Timed {
        Writes = "writes",
        Fsync = "fsync",
    }
}

impl Workload for SeqWrite {
    fn needs_scratch(&self) -> bool {
        true
    }

    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "io.seqwrite",
            group: "io",
            summary: "Rewrite one file in order through pwrite or io_uring, then fsync; writes and fsync timed apart",
            measures: "buffered sequential write throughput into the page cache (the `writes` row) and the time to make \
                       those writes durable (the `fsync` row: MB flushed per second of fsync)",
            unit: Unit::MbPerSec,
            timed_region: "every sample rewrites every block of the file (prepared at prepare) from offset 0 in order and \
                           then flushes it; `timed=writes` times only the writes (sync: one pwrite per block; io_uring: \
                           WRITE_FIXED requests with `depth` in flight), each 4 KiB page's three stamps set just before \
                           its block is handed to the kernel (24 bytes per page); `timed=fsync` times only the fsync that \
                           follows (fsync(2), or IORING_OP_FSYNC through the same ring). Outside: creating and \
                           preallocating the file, setting up the ring, and the read-back",
            total_window: Some("the writes and the fsync together, in both rows"),
            verifier: "after every sample the file's cached pages are dropped (POSIX_FADV_DONTNEED, after the fsync) and the \
                       whole file is read back: every 4 KiB page carries its own offset and that sample's generation \
                       number in its stamps, and the template elsewhere (0 mismatched pages), so a lost, misplaced or \
                       stale block fails",
            batched: false,
            params: vec![
                super::engine_param::<WriteEngineKind>(
                    "sync: one pwrite per block, then fsync(2); io_uring: `depth` WRITE_FIXED requests in flight (registered file and fixed buffers), then IORING_OP_FSYNC",
                ),
                ParamSpec::axis_of::<Timed>("timed", "what the row's window holds: the writes, or the fsync after them"),
                ParamSpec::int("block_kib", "bytes per write, in KiB (a multiple of 4)", 4, 65536, [1024; 3]),
                ParamSpec::int("depth", "io_uring: writes in flight (each pins a fixed buffer of block_kib; sync: 1)", 1, 1024, [4; 3]),
                ParamSpec::int(
                    "file_mib",
                    "file size in MiB; 0: from the machine (a multiple of the last-level cache, at most a quarter of the memory available and of the free space)",
                    0,
                    1 << 40,
                    [0; 3],
                ),
            ],
            faults: &["skip-block"],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let engine_name = cell.choice::<WriteEngineKind>("engine")?;
        let time_fsync = cell.choice::<Timed>("timed")? == Timed::Fsync;
        let block_kib = cell.usize("block_kib")?;
        anyhow::ensure!(block_kib % 4 == 0, "block_kib={block_kib} is not a multiple of 4");
        let block_bytes = block_kib * 1024;
        let depth = cell.usize("depth")?;
        let Placed { scratch, filesystem, machine, size } = match sizing::place(cell, cx, RULES, block_bytes as u64)? {
            Ok(p) => p,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        let (file_bytes, blocks) = (size.bytes, size.bytes / block_bytes as u64);
        let stamps = Stamps::new(cell.seed);
        let made = instance_dir(&scratch, "seqwrite").and_then(|d| {
            let path = d.join("data");
            let file = OpenOptions::new().create_new(true).read(true).write(true).open(&path)?;
            Ok((path, file))
        });
        let (path, file) = match made {
            Ok(x) => x,
            Err(e) => return skip_or_fail("creating a file in the scratch directory", e),
        };
        let reader = File::open(&path)?;
        let mut engine: Box<dyn WriteEngine> = match engine_name {
            WriteEngineKind::Sync => Box::new(SyncWriter::new(file, block_bytes, stamps.clone())),
            WriteEngineKind::IoUring => match UringWriter::new(file, block_bytes, stamps.clone(), depth) {
                Ok(w) => Box::new(w),
                Err(e) => match e.skip_reason(disabled_sysctl().as_deref()) {
                    Some(why) => return Ok(Prepared::Skip(why)),
                    None => return Err(e.error).with_context(|| format!("setting up io_uring: {}", e.stage)),
                },
            },
        };
        // Generation 0 allocates every block, so that samples rewrite in place.
        engine.write_all(blocks, 0, None).context("writing the file at prepare")?;
        engine.fsync().context("flushing the file at prepare")?;
        super::drop_cached(&reader).context("dropping the file's cached pages")?;
        Ok(Prepared::ready(SeqWriteInstance {
            in_flight: engine.in_flight(),
            ring_setup: engine.setup().map(str::to_string),
            fsync_call: engine.fsync_call(),
            engine,
            reader,
            stamps,
            path,
            blocks,
            block_bytes,
            time_fsync,
            skip: cx.fault_is("skip-block").then_some(blocks / 2),
            generation: 0,
            read_buf: vec![0; MIB as usize],
            facts: json!({
                "engine": engine_name,
                "timed": if time_fsync { "fsync" } else { "writes" },
                "filesystem": filesystem,
                "ext4_journal": ext4_journal(&scratch),
                "file_bytes": file_bytes,
                "size_rule": size.rule,
                "machine": machine.details(),
                "block_bytes": block_bytes,
                "blocks": blocks,
                "read_back": "after each sample's fsync: POSIX_FADV_DONTNEED on the file, then read() of the whole file",
            }),
        }))
    }
}

/// What one sample did and what its read-back found.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Outcome {
    written: u64,
    write_ns: u64,
    fsync_ns: u64,
    resident_pct: Option<f64>,
    pages: u64,
    mismatched: u64,
    /// The first bad page's offset and what it carried.
    first_bad: Option<(u64, Found)>,
    file_len: u64,
}

struct SeqWriteInstance {
    engine: Box<dyn WriteEngine>,
    reader: File,
    stamps: Stamps,
    path: PathBuf,
    blocks: u64,
    block_bytes: usize,
    in_flight: usize,
    /// io_uring's setup flags (details `ring_setup`).
    ring_setup: Option<String>,
    fsync_call: &'static str,
    time_fsync: bool,
    /// The fault: this block is left out of every sample's writes.
    skip: Option<u64>,
    generation: u64,
    read_buf: Vec<u8>,
    facts: serde_json::Value,
}

impl SeqWriteInstance {
    fn file_bytes(&self) -> u64 {
        self.blocks * self.block_bytes as u64
    }

    /// Drops the file's cached pages and reads it back, checking every page.
    fn read_back(&mut self, last: &mut Outcome) -> std::io::Result<()> {
        super::drop_cached(&self.reader)?;
        last.resident_pct = super::resident_pct(&self.path).ok();
        last.file_len = self.reader.metadata()?.len();
        let mut at = 0u64;
        while at < last.file_len {
            let want = (last.file_len - at).min(self.read_buf.len() as u64) as usize;
            let n = self.reader.read_at(&mut self.read_buf[..want], at)?;
            if n == 0 {
                break;
            }
            for (i, page) in self.read_buf[..n].chunks(BLOCK).enumerate() {
                let off = at + (i * BLOCK) as u64;
                last.pages += 1;
                if let Err(found) = self.stamps.check_block(page, off, self.generation) {
                    last.mismatched += 1;
                    last.first_bad.get_or_insert((off, found));
                }
            }
            at += n as u64;
        }
        Ok(())
    }
}

impl Instance for SeqWriteInstance {
    type Outcome = Outcome;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Outcome)> {
        self.generation += 1;
        let t0 = clock::now_ns();
        let written = self.engine.write_all(self.blocks, self.generation, self.skip);
        let t1 = clock::now_ns();
        let written = written.with_context(|| format!("writing {}", self.path.display()))?;
        self.engine.fsync().with_context(|| format!("flushing {}", self.path.display()))?;
        let t2 = clock::now_ns();
        let (write_ns, fsync_ns) = (t1 - t0, t2 - t1);
        timer.record_work(if self.time_fsync { fsync_ns } else { write_ns });
        timer.record_total(t2 - t0);
        let mut last = Outcome { written, write_ns, fsync_ns, resident_pct: None, pages: 0, mismatched: 0, first_bad: None, file_len: 0 };
        self.read_back(&mut last).with_context(|| format!("reading {} back", self.path.display()))?;
        let ops = if self.time_fsync { 1 } else { self.blocks };
        Ok((Work { ops, bytes: written }, last))
    }

    fn verify(&mut self, l: &Outcome) -> Check {
        let pages = self.file_bytes() / BLOCK as u64;
        let expected = format!(
            "{} B read back after fsync: {pages} pages of 4096 B, each with its offset and generation {} (0 mismatched)",
            self.file_bytes(),
            self.generation
        );
        let mut observed = format!("{} B read back: {} pages, {} mismatched", l.file_len, l.pages, l.mismatched);
        if let Some((off, f)) = l.first_bad {
            let generation = f.tag ^ self.stamps.key;
            let what = if generation <= self.generation { format!("generation {generation}") } else { "no known generation".into() };
            observed.push_str(&format!(" (first: page at offset {off} carried offset {} and {what})", f.offset));
        }
        Check { passed: l.file_len == self.file_bytes() && l.pages == pages && l.mismatched == 0, expected, observed }
    }

    fn details(&self, last: Option<&Outcome>) -> serde_json::Value {
        let mut d = self.facts.clone();
        let m = d.as_object_mut().expect("facts is an object");
        m.insert("in_flight".into(), self.in_flight.into());
        if let Some(setup) = &self.ring_setup {
            m.insert("ring_setup".into(), setup.as_str().into());
        }
        m.insert("fsync_call".into(), self.fsync_call.into());
        m.insert("generations".into(), self.generation.into());
        m.insert("last_sample_write_ns".into(), last.map(|l| l.write_ns).into());
        m.insert("last_sample_fsync_ns".into(), last.map(|l| l.fsync_ns).into());
        m.insert("resident_pct_before_read_back".into(), last.and_then(|l| l.resident_pct).into());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    fn cell(engine: &str, timed: &str, fault: Option<&str>, dir: &std::path::Path) -> Cell {
        let mut c =
            test_cell("io.seqwrite", json!({"engine": engine, "timed": timed, "block_kib": 64, "depth": 4, "file_mib": 1}), fault, dir);
        c.group = "io".into();
        c
    }

    #[test]
    fn both_engines_write_every_block_and_time_writes_and_fsync_apart() {
        for engine in ["sync", "io_uring"] {
            for timed in ["writes", "fsync"] {
                let tmp = tempfile::tempdir().unwrap();
                let Prepared::Ready(mut inst) = SeqWrite.prepare_here(&cell(engine, timed, None, tmp.path())).unwrap() else { continue };
                let mut t = Timer::new();
                let w = inst.sample(1, &mut t).unwrap();
                assert_eq!(w, Work { ops: if timed == "fsync" { 1 } else { 16 }, bytes: MIB });
                assert!(t.total_ns().unwrap() >= t.work_ns().unwrap());
                let v = inst.verify();
                assert!(v.passed, "{engine} {timed}: {v:?}");
                inst.sample(1, &mut Timer::new()).unwrap();
                assert!(inst.verify().expected.contains("generation 2"));
                let d = inst.details();
                assert_eq!((d["blocks"].as_u64(), d["generations"].as_u64()), (Some(16), Some(2)));
                assert_eq!(d["timed"], timed);
            }
        }
    }

    #[test]
    fn a_skipped_block_is_found_stale_by_the_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inst = ready(SeqWrite.prepare_here(&cell("sync", "writes", Some("skip-block"), tmp.path())));
        inst.sample(1, &mut Timer::new()).unwrap();
        let v = inst.verify();
        assert!(!v.passed);
        assert_eq!(
            v.observed,
            "1048576 B read back: 256 pages, 16 mismatched (first: page at offset 524288 carried offset 524288 and generation 0)"
        );
    }
}
