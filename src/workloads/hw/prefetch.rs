//! `hw.prefetch`: what the hardware prefetcher hides. One sample chases
//! pointers through the cache lines of an array twice the last-level cache
//! (from the topology) in one of three orders, with the same instructions in
//! each: sequential (stride 1 line), strided (`stride_lines` lines) and a
//! seeded random single cycle, which no prefetcher can predict.

use serde_json::{Value, json};

use super::chase::{self, Order};
use super::region::{Advice, Backing, Region};
use super::sizing::{self, ArraySize};
use super::{HwFacts, bytes_text};
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::os::fs_common::skip_or_fail;

pub struct Prefetch;

/// The fault: the line at rank 1 points two ranks ahead, so every walk
/// through it skips a line.
pub const FAULT: &str = "skip-line";

/// The cache line size the array is cut into: the L1 data cache's
/// `coherency_line_size`, 64 when the topology does not say.
pub fn line_bytes(m: &HwFacts) -> usize {
    let line = m
        .topology
        .as_ref()
        .ok()
        .and_then(|t| t.caches.iter().filter(|c| c.level == 1 && (c.kind == "Data" || c.kind == "Unified")).find_map(|c| c.line_bytes));
    match line {
        Some(l) if l >= 16 && l % 8 == 0 && l <= 4096 => l as usize,
        _ => 64,
    }
}

named_enum! {
    /// The `pattern` axis: the order of the lines.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Pattern {
        /// Address order.
        Sequential = "sequential",
        /// Every `stride_lines`-th line.
        Strided = "strided",
        /// A random single cycle.
        Random = "random",
    }
}

impl Workload for Prefetch {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "hw.prefetch",
            group: "hw",
            summary: "Dependent loads through an array of 2 x the last-level cache: sequential, strided and random lines",
            measures: "what the hardware prefetcher saves: the same chain of dependent cache-line loads costs a few \
                       nanoseconds when the next line is predictable (sequential), more when it is a large stride away, \
                       and a full memory latency (plus a TLB miss) when it is random",
            unit: Unit::NsPerOp,
            timed_region: "one sample = `accesses` dependent loads (a pointer chase): each cache line of the array holds the \
                           index of the next line to visit and its own rank, and the loop loads the rank (added to a sum) \
                           and the next index, so each address is known only when the previous load returns; samples continue \
                           the walk where the last one stopped, cycling through the whole array. `sequential` visits the \
                           lines in address order (stride 1 line), `strided` every `stride_lines`-th line (then the next \
                           residue), `random` a seeded uniformly random permutation of all lines chased as a single cycle \
                           (no index array is read: nothing but the load itself tells the next address). The array is \
                           mapped with MADV_NOHUGEPAGE (base pages, where the kernel has THP) and its cycle written in walk \
                           order in prepare, outside the window, so a walk always loads the least recently touched lines; \
                           the value is ns per load",
            total_window: None,
            verifier: "the ranks a sample read sum (mod 2^64) to the closed form sum((r + i) mod lines, i < accesses) for \
                       the rank r it started from, and the walk ends on the line of rank (r + accesses) mod lines: a wrong \
                       or skipped line changes both",
            batched: false,
            params: vec![
                ParamSpec::axis_of::<Pattern>(
                    "pattern",
                    "order of the lines: address order, every stride_lines-th line, or a random single cycle",
                ),
                ParamSpec::int("stride_lines", "the strided pattern's step, in cache lines", 2, 1 << 20, [16, 16, 16]),
                ParamSpec::int("accesses", "dependent loads per sample", 1, 1 << 32, [25_000, 2_000_000, 10_000_000]),
                sizing::bytes_param("array bytes (rounded up to a huge page); 0: l3_multiple x the last-level cache", 0),
                sizing::l3_multiple_param(),
            ],
            faults: &[FAULT],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let machine = HwFacts::live(cell.seed, &cx.allowed);
        let pattern = cell.choice::<Pattern>("pattern")?;
        let order = match pattern {
            Pattern::Sequential => Order::Stride(1),
            Pattern::Strided => Order::Stride(cell.usize("stride_lines")?),
            Pattern::Random => Order::Random(cell.seed),
        };
        let caches = machine.topology.as_ref().ok().map(|t| t.caches.as_slice());
        let hpage = super::region::huge_page_size();
        let size = match sizing::resolve(cell.u64("bytes")?, cell.u64("l3_multiple")?, hpage as u64, caches, machine.mem_available) {
            Ok(s) => s,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        // Base pages wherever THP exists, so that what a random load costs in
        // TLB misses does not depend on the system's THP mode (hw.thp measures that).
        let advice = if machine.thp_enabled.is_some() { Advice::NoHuge } else { Advice::Default };
        let array = match ChaseArray::new(&size, line_bytes(&machine), hpage, advice, order, cx.fault_is(FAULT)) {
            Ok(a) => a,
            Err(e) => return skip_or_fail(&format!("an anonymous mapping of {}", bytes_text(size.bytes)), e),
        };
        let extra = json!({
            "pattern": pattern,
            "stride_lines": match order { Order::Stride(s) => Some(s), Order::Random(_) => None },
            "order": match order {
                Order::Stride(1) => "address order".to_string(),
                Order::Stride(s) => format!("every {s}th line, then the next residue"),
                Order::Random(seed) => format!("random single cycle (Fisher-Yates shuffle, seed {seed})"),
            },
            "thp_enabled": machine.thp_enabled,
            "advice": advice.as_str(),
        });
        Ok(Prepared::ready(ChaseInstance { array, accesses: cell.u64("accesses")?, extra, backing: false }))
    }
}

/// What one walk saw (checked against what it should have).
#[derive(Clone, Copy, Debug)]
pub struct Walk {
    steps: u64,
    start_rank: u64,
    sum: u64,
    end_rank: u64,
}

/// An array laid out as one pointer-chasing cycle (see [`chase`]) in its own
/// mapping, and the walk's position, which samples continue from.
pub struct ChaseArray {
    region: Region,
    size: ArraySize,
    words_per_line: usize,
    lines: usize,
    line: usize,
    rank: u64,
    steps_total: u64,
    after_prepare: Result<Backing, String>,
}

impl ChaseArray {
    /// Maps `size.bytes` (aligned to `align`, advised with `advice`), cuts it
    /// into lines of `line_bytes` and writes the cycle of `order` into it
    /// (the first touch of every page). `skip_line` breaks the cycle on purpose.
    pub fn new(
        size: &ArraySize,
        line_bytes: usize,
        align: usize,
        advice: Advice,
        order: Order,
        skip_line: bool,
    ) -> std::io::Result<ChaseArray> {
        let words_per_line = line_bytes / 8;
        let lines = usize::try_from(size.bytes).unwrap_or(usize::MAX) / line_bytes;
        if lines < 4 || lines > u32::MAX as usize {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{lines} lines is outside 4..=2^32-1")));
        }
        let mut region = Region::new(lines * line_bytes, align, advice)?;
        let ord = chase::order(lines, order);
        chase::build(region.words_mut(), words_per_line, &ord);
        if skip_line {
            chase::skip_one(region.words_mut(), words_per_line, &ord, 1);
        }
        let after_prepare = region.backing();
        Ok(ChaseArray { region, size: size.clone(), words_per_line, lines, line: ord[0] as usize, rank: 0, steps_total: 0, after_prepare })
    }

    /// One timed walk of `steps` loads.
    pub fn sample(&mut self, steps: u64, timer: &mut Timer) -> (Work, Walk) {
        let mem = self.region.words();
        timer.start();
        let w = chase::walk(mem, self.words_per_line, self.line, steps);
        timer.stop();
        let end_rank = chase::rank_of(mem, self.words_per_line, w.end_line);
        let walk = Walk { steps, start_rank: self.rank, sum: w.sum, end_rank };
        self.line = w.end_line;
        self.rank = (self.rank + steps) % self.lines as u64;
        self.steps_total += steps;
        (Work::ops(steps), walk)
    }

    pub fn verify(&self, l: &Walk) -> Check {
        let n = self.lines as u64;
        let (sum, end) = (chase::expected_sum(n, l.start_rank, l.steps), (l.start_rank + l.steps) % n);
        Check {
            passed: l.sum == sum && l.end_rank == end,
            expected: format!(
                "ranks summing to {sum} (sum of (r + i) mod {n} for r = {}, i < {}), ending at rank {end}",
                l.start_rank, l.steps
            ),
            observed: format!("ranks summing to {}, ending at rank {}", l.sum, l.end_rank),
        }
    }

    /// Sizes, the backing after prepare and now, and the walk's progress.
    pub fn details(&self) -> Value {
        let mut d = self.size.details();
        let o = d.as_object_mut().expect("an object");
        o.insert("bytes".into(), json!(self.region.len()));
        o.insert("line_bytes".into(), json!(self.words_per_line * 8));
        o.insert("lines".into(), json!(self.lines));
        o.insert("passes_total".into(), json!(self.steps_total as f64 / self.lines as f64));
        match &self.after_prepare {
            Ok(b) => {
                o.insert("backing_after_prepare".into(), b.details(self.region.len() as u64));
            }
            Err(why) => {
                o.insert("backing_after_prepare".into(), json!({ "absent": why }));
            }
        }
        d
    }

    pub fn backing(&self) -> Result<Backing, String> {
        self.region.backing()
    }

    pub fn region_bytes(&self) -> u64 {
        self.region.len() as u64
    }
}

/// A prepared chase: `accesses` dependent loads per sample. `extra` is
/// merged into the details; with `backing`, the details also carry the
/// region's AnonHugePages as the last sample left it (hw.thp).
pub(crate) struct ChaseInstance {
    pub array: ChaseArray,
    pub accesses: u64,
    pub extra: Value,
    pub backing: bool,
}

impl Instance for ChaseInstance {
    type Outcome = Walk;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Walk)> {
        Ok(self.array.sample(self.accesses, timer))
    }

    fn verify(&mut self, walk: &Walk) -> Check {
        self.array.verify(walk)
    }

    fn details(&self, _: Option<&Walk>) -> Value {
        let mut d = self.array.details();
        let o = d.as_object_mut().expect("an object");
        o.insert("accesses_per_sample".into(), json!(self.accesses));
        for (k, v) in self.extra.as_object().into_iter().flatten() {
            o.insert(k.clone(), v.clone());
        }
        if self.backing {
            match self.array.backing() {
                Ok(b) => {
                    o.insert("anon_huge_bytes".into(), json!(b.anon_huge_bytes));
                    o.insert("backing_last_sample".into(), b.details(self.array.region_bytes()));
                }
                Err(why) => {
                    o.insert("backing_last_sample".into(), json!({ "absent": why }));
                }
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::{ready, test_cell};

    /// A 1 MiB chase array of 64-byte lines.
    fn small(order: Order, skip: bool) -> ChaseArray {
        let size = ArraySize { bytes: 1 << 20, source: "test".into(), llc_level: None, llc_bytes: None, mem_available: None };
        ChaseArray::new(&size, 64, 4096, Advice::Default, order, skip).expect("a small chase array")
    }

    #[test]
    fn walks_verify_across_samples_and_wraps() {
        for order in [Order::Stride(1), Order::Stride(16), Order::Random(3)] {
            let mut a = small(order, false);
            for steps in [1000, 16_384, 40_000] {
                let mut t = Timer::new();
                let (w, walk) = a.sample(steps, &mut t);
                assert_eq!(w, Work::ops(steps));
                assert!(t.work_ns().is_some());
                let v = a.verify(&walk);
                assert!(v.passed, "{order:?}: {v:?}");
            }
            assert_eq!(a.details()["lines"], 16_384);
            assert!(a.details()["passes_total"].as_f64().unwrap() > 3.5);
        }
    }

    #[test]
    fn a_skipped_line_fails_the_verifier() {
        for order in [Order::Stride(1), Order::Random(3)] {
            let mut a = small(order, true);
            let (_, walk) = a.sample(100, &mut Timer::new());
            let v = a.verify(&walk);
            assert!(!v.passed, "{v:?}");
            assert!(v.expected.contains("ending at rank 100"), "{}", v.expected);
        }
    }

    #[test]
    fn prepare_sizes_the_array_and_records_it() {
        let dir = tempfile::tempdir().unwrap();
        let params = json!({"pattern": "strided", "stride_lines": 16, "accesses": 1000, "bytes": 4 << 20, "l3_multiple": 2});
        let mut inst = ready(Prefetch.prepare_here(&test_cell("hw.prefetch", params, None, dir.path())));
        inst.sample(1, &mut Timer::new()).unwrap();
        assert!(inst.verify().passed);
        let d = inst.details();
        assert_eq!(d["bytes"], 4 << 20);
        assert_eq!(d["stride_lines"], 16);
        assert_eq!(d["accesses_per_sample"], 1000);
        assert!(d["size_source"].as_str().unwrap().contains("--param"));
        let params = json!({"pattern": "random", "stride_lines": 16, "accesses": 1000, "bytes": 1u64 << 36, "l3_multiple": 2});
        match Prefetch.prepare_here(&test_cell("hw.prefetch", params, None, dir.path())).unwrap() {
            Prepared::Skip(why) | Prepared::NotApplicable(why) => assert!(why.contains("MemAvailable"), "{why}"),
            Prepared::Ready(_) => panic!("64 GiB should not fit"),
        }
    }

    #[test]
    fn the_line_size_comes_from_the_l1_data_cache() {
        let m = HwFacts { topology: Ok(crate::topology::fixture("4c8t")), mem_available: None, thp_enabled: None, thp_defrag: None };
        assert_eq!(line_bytes(&m), 64);
        let none = HwFacts { topology: Err("no".into()), ..m };
        assert_eq!(line_bytes(&none), 64);
    }
}
