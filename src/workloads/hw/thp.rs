//! `hw.thp`: transparent huge pages against base pages, advised per mapping
//! with `madvise(MADV_HUGEPAGE)` or `madvise(MADV_NOHUGEPAGE)`, for
//! sequential and random access. The two costs are separate rows (the
//! `phase` axis), never summed: `first-touch` times the page faults that
//! populate a fresh mapping, `access` times dependent loads through a mapping
//! populated in prepare. Every row records the AnonHugePages the kernel
//! actually gave that mapping (its lines of `/proc/self/smaps`), and a
//! `hugepage` row says in a note when the kernel gave it no huge pages, or
//! huge pages for part of it only: the advice is a request the machine may
//! refuse, so such a row is kept (its data is still verified), with a note.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde_json::{Value, json};

use super::chase::Order;
use super::prefetch::{ChaseArray, ChaseInstance, Walk, line_bytes};
use super::region::{self, Advice, Backing, Region};
use super::sizing::{self, ArraySize};
use super::{HwFacts, bytes_text, page_size};
use crate::model::{Cell, named_enum};
use crate::workloads::contract::{
    Check, Instance, ParamSpec, PrepareContext, Prepared, TableShape, Timer, Unit, Work, Workload, WorkloadSpec,
};
use crate::workloads::mismatch::Mismatches;
use crate::workloads::os::fs_common::skip_or_fail;

pub struct Thp;

/// The faults: `skip-page` leaves one page of the first sample untouched
/// (first-touch rows); `skip-line` breaks the chase (access rows).
pub const SKIP_PAGE: &str = "skip-page";
pub const SKIP_LINE: &str = "skip-line";

named_enum! {
    /// The `advice` axis: the madvise on the region.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum AdviceParam {
        Huge = "hugepage",
        NoHuge = "nohugepage",
    }
}

impl AdviceParam {
    fn advice(self) -> Advice {
        match self {
            AdviceParam::Huge => Advice::Huge,
            AdviceParam::NoHuge => Advice::NoHuge,
        }
    }
}

named_enum! {
    /// The `access` axis: page order of the first touch, line order of the access phase.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum AccessOrder {
        Sequential = "sequential",
        Random = "random",
    }
}

named_enum! {
    /// The `phase` axis: what is timed.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Phase {
        /// The page faults of a fresh region.
        FirstTouch = "first-touch",
        /// Loads through a populated region.
        Access = "access",
    }
}

/// Why THP rows cannot run as named here, from the `enabled` mode.
pub fn thp_unavailable(enabled: Option<&str>, advice: Advice) -> Option<String> {
    match enabled {
        None => Some(
            "transparent huge pages are not available: /sys/kernel/mm/transparent_hugepage/enabled is missing (a kernel \
             without THP)"
                .into(),
        ),
        Some("never") if advice == Advice::Huge => {
            Some("THP is disabled (/sys/kernel/mm/transparent_hugepage/enabled is [never]): MADV_HUGEPAGE would get base pages".into())
        }
        _ => None,
    }
}

impl Workload for Thp {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            id: "hw.thp",
            group: "hw",
            summary: "Huge pages vs base pages (madvise) for sequential and random access: fault cost and access cost, separately",
            measures: "what a 2 MiB page changes: the first-touch row is the kernel's cost to fault the mapping in (one \
                       huge page allocated and zeroed per 2 MiB, against 512 base-page faults), the access row the cost of \
                       dependent loads once it is populated (a TLB miss and page walk per new 4 KiB page, or per 2 MiB)",
            unit: Unit::NsPerOp,
            timed_region: "phase first-touch: one sample maps a fresh region (mmap, trimmed to a huge-page-aligned start, and \
                           madvise), outside the window, then times writing one word to every base page, in address order \
                           (sequential) or a seeded random page order (random): the page faults and zeroing; reading the \
                           pages back, reading smaps and munmap are outside; the value is ns per base page. Phase access: \
                           the region is mapped, advised and populated in prepare (the pointer-chase cycle written line by \
                           line), and one sample times `accesses` dependent loads chasing it as hw.prefetch does \
                           (sequential: lines in address order; random: a seeded random single cycle), continuing where \
                           the last sample stopped; the value is ns per load. The two phases are separate rows, never summed",
            total_window: None,
            verifier: "first-touch: after the window every base page's first word reads back its index + 1 (0 mismatches; \
                       the words sum to P(P+1)/2 for P pages); access: the ranks read sum (mod 2^64) to the closed form \
                       sum((r + i) mod lines, i < accesses) and the walk ends on rank (r + accesses) mod lines. Every row \
                       also records the AnonHugePages smaps reports for the region (after each first touch; after prepare \
                       and after the last sample); a hugepage row whose region the kernel did not back with huge pages at \
                       every reading says so in a note (huge_pages_obtained `none` or `partly`): a fact of the machine, not \
                       a failed check",
            batched: false,
            params: vec![
                ParamSpec::axis_of::<AdviceParam>("advice", "madvise on the region: MADV_HUGEPAGE or MADV_NOHUGEPAGE"),
                ParamSpec::axis_of::<AccessOrder>("access", "page order of the first touch, line order of the access phase"),
                ParamSpec::axis_of::<Phase>("phase", "what is timed: the page faults of a fresh region, or loads through a populated one"),
                ParamSpec::int("accesses", "dependent loads per sample (access phase)", 1, 1 << 32, [25_000, 2_000_000, 10_000_000]),
                sizing::bytes_param("region bytes (rounded up to a huge page); 0: l3_multiple x the last-level cache", 512 << 20),
                sizing::l3_multiple_param(),
            ],
            faults: &[SKIP_PAGE, SKIP_LINE],
            shape: TableShape::Primitive,
        }
    }

    fn prepare(&self, cell: &Cell, cx: &PrepareContext) -> anyhow::Result<Prepared> {
        let machine = HwFacts::live(cell.seed, &cx.allowed);
        let advice = cell.choice::<AdviceParam>("advice")?.advice();
        if let Some(why) = thp_unavailable(machine.thp_enabled.as_deref(), advice) {
            return Ok(Prepared::Skip(why));
        }
        let access = cell.choice::<AccessOrder>("access")?;
        let random = access == AccessOrder::Random;
        let hpage = region::huge_page_size();
        let caches = machine.topology.as_ref().ok().map(|t| t.caches.as_slice());
        let size = match sizing::resolve(cell.u64("bytes")?, cell.u64("l3_multiple")?, hpage as u64, caches, machine.mem_available) {
            Ok(s) => s,
            Err(why) => return Ok(Prepared::Skip(why)),
        };
        let common = json!({
            "advice": advice.as_str(),
            "access": access,
            "huge_page_bytes": hpage,
            "thp_enabled": machine.thp_enabled,
            "thp_defrag": machine.thp_defrag,
        });
        let what = format!("an anonymous mapping of {} with {}", bytes_text(size.bytes), advice.as_str());
        match cell.choice("phase")? {
            Phase::FirstTouch => {
                let page = page_size();
                let pages = usize::try_from(size.bytes)?.div_ceil(page);
                // One mapping now: a kernel that refuses it (or the advice) skips here.
                if let Err(e) = Region::new(pages * page, hpage, advice) {
                    return skip_or_fail(&what, e);
                }
                let mut order: Vec<u32> = (0..u32::try_from(pages)?).collect();
                if random {
                    order.shuffle(&mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(cell.seed));
                }
                Ok(Prepared::ready(FirstTouch {
                    size,
                    page,
                    align: hpage,
                    advice,
                    order,
                    skip_page: cx.fault_is(SKIP_PAGE),
                    samples: 0,
                    huge_seen: None,
                    common,
                }))
            }
            Phase::Access => {
                let order = if random { Order::Random(cell.seed) } else { Order::Stride(1) };
                match ChaseArray::new(&size, line_bytes(&machine), hpage, advice, order, cx.fault_is(SKIP_LINE)) {
                    Ok(array) => {
                        let mut extra = common;
                        if let Some(o) = extra.as_object_mut() {
                            o.insert("phase".into(), json!("access"));
                        }
                        let chase = ChaseInstance { array, accesses: cell.u64("accesses")?, extra, backing: true };
                        Ok(Prepared::ready(Access { chase, advice }))
                    }
                    Err(e) => skip_or_fail(&what, e),
                }
            }
        }
    }
}

/// What a first-touch sample found after its window.
#[derive(Clone, Debug)]
struct Touched {
    sum: u64,
    mismatches: Mismatches,
    backing: Result<Backing, String>,
}

struct FirstTouch {
    size: ArraySize,
    page: usize,
    align: usize,
    advice: Advice,
    /// The page indices in touch order.
    order: Vec<u32>,
    skip_page: bool,
    samples: u64,
    /// The least and most AnonHugePages over the samples.
    huge_seen: Option<(u64, u64)>,
    common: Value,
}

impl FirstTouch {
    fn pages(&self) -> u64 {
        self.order.len() as u64
    }
}

impl Instance for FirstTouch {
    type Outcome = Touched;

    fn sample(&mut self, _iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Touched)> {
        let pages = self.order.len();
        let mut region = Region::new(pages * self.page, self.align, self.advice)?;
        let stride = self.page / 8;
        // The fault leaves the middle page of the first sample untouched.
        let skip = (self.skip_page && self.samples == 0).then_some((pages / 2) as u32);
        let words = region.words_mut();
        timer.start();
        for &p in &self.order {
            if Some(p) != skip {
                words[p as usize * stride] = u64::from(p) + 1;
            }
        }
        timer.stop();
        let (mut sum, mut mismatches) = (0u64, Mismatches::new());
        for p in 0..pages {
            let v = words[p * stride];
            sum = sum.wrapping_add(v);
            mismatches.add_if(v != p as u64 + 1);
        }
        let backing = region.backing();
        if let Ok(b) = &backing {
            let (lo, hi) = self.huge_seen.unwrap_or((u64::MAX, 0));
            self.huge_seen = Some((lo.min(b.anon_huge_bytes), hi.max(b.anon_huge_bytes)));
        }
        drop(region);
        self.samples += 1;
        Ok((Work::ops(pages as u64), Touched { sum, mismatches, backing }))
    }

    fn verify(&mut self, t: &Touched) -> Check {
        let p = self.pages();
        let want = p.wrapping_mul(p + 1) / 2;
        Check {
            passed: t.mismatches.is_empty() && t.sum == want,
            expected: format!("{p} pages each reading back its index + 1 (sum {want}, 0 mismatches)"),
            observed: format!("sum {}, {} mismatches", t.sum, t.mismatches.count),
        }
    }

    fn details(&self, last: Option<&Touched>) -> Value {
        let mut d = self.size.details();
        let o = d.as_object_mut().expect("an object");
        for (k, v) in self.common.as_object().into_iter().flatten() {
            o.insert(k.clone(), v.clone());
        }
        o.insert("phase".into(), json!("first-touch"));
        o.insert("page_bytes".into(), json!(self.page));
        o.insert("pages".into(), json!(self.pages()));
        let backing = last.map(|t| t.backing.clone());
        if let Some(Ok(b)) = &backing {
            o.insert("anon_huge_bytes".into(), json!(b.anon_huge_bytes));
            o.insert("backing_last_sample".into(), b.details(self.size.bytes));
        } else if let Some(Err(why)) = &backing {
            o.insert("backing_last_sample".into(), json!({ "absent": why }));
        }
        if let Some((lo, hi)) = self.huge_seen {
            o.insert("anon_huge_bytes_min".into(), json!(lo));
            o.insert("anon_huge_bytes_max".into(), json!(hi));
        }
        if self.advice == Advice::Huge {
            let why = match &backing {
                Some(Err(why)) => why.clone(),
                _ => "no sample ran".into(),
            };
            note_huge_pages(o, self.size.bytes, self.huge_seen.ok_or(why), "every sample's fresh mapping");
        }
        d
    }
}

/// On a `hugepage` row: whether the kernel gave the region huge pages
/// (`huge_pages_obtained`: `all`, `partly` or `none`, from the least and most
/// AnonHugePages of its readings), and a `note` saying so when not all.
fn note_huge_pages(o: &mut serde_json::Map<String, Value>, region_bytes: u64, seen: Result<(u64, u64), String>, readings: &str) {
    let (obtained, note) = match seen {
        Err(why) => (Value::Null, format!("whether MADV_HUGEPAGE got huge pages is unknown: {why}")),
        Ok((_, 0)) => (
            json!("none"),
            format!(
                "huge pages were NOT obtained: MADV_HUGEPAGE was advised, but AnonHugePages was 0 at every reading ({readings}): \
                 this row timed base pages"
            ),
        ),
        Ok((lo, _)) if lo >= region_bytes => (json!("all"), String::new()),
        Ok((lo, hi)) => (
            json!("partly"),
            format!(
                "huge pages were obtained for part of the region only: AnonHugePages {} to {} of {} ({readings}): this row \
                 timed a mix of huge and base pages",
                bytes_text(lo),
                bytes_text(hi),
                bytes_text(region_bytes)
            ),
        ),
    };
    o.insert("huge_pages_obtained".into(), obtained);
    if !note.is_empty() {
        o.insert("note".into(), json!(note));
    }
}

/// An access row: the chase of hw.prefetch over a region advised as the cell
/// says, with the `hugepage` note.
struct Access {
    chase: ChaseInstance,
    advice: Advice,
}

impl Instance for Access {
    type Outcome = Walk;

    fn sample(&mut self, iters: u64, timer: &mut Timer) -> anyhow::Result<(Work, Walk)> {
        self.chase.sample(iters, timer)
    }

    fn verify(&mut self, walk: &Walk) -> Check {
        self.chase.verify(walk)
    }

    fn details(&self, last: Option<&Walk>) -> Value {
        let mut d = self.chase.details(last);
        if self.advice == Advice::Huge
            && let Some(o) = d.as_object_mut()
        {
            // The readings after prepare and after the last sample.
            let huge = |k: &str| o.get(k).and_then(|b| b.get("anon_huge_bytes")).and_then(Value::as_u64);
            let absent = |k: &str| o.get(k).and_then(|b| b.get("absent")).and_then(Value::as_str).map(str::to_string);
            let readings: Vec<u64> = ["backing_after_prepare", "backing_last_sample"].into_iter().filter_map(huge).collect();
            let seen = match (readings.iter().min(), readings.iter().max()) {
                (Some(&lo), Some(&hi)) => Ok((lo, hi)),
                _ => Err(absent("backing_last_sample").or_else(|| absent("backing_after_prepare")).unwrap_or_else(|| "no reading".into())),
            };
            note_huge_pages(o, self.chase.array.region_bytes(), seen, "after prepare and after the last sample");
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::os::fs_common::test_cell;

    fn cell(phase: &str, advice: &str, access: &str, fault: Option<&str>, dir: &std::path::Path) -> Cell {
        let params = json!({"advice": advice, "access": access, "phase": phase, "accesses": 5000, "bytes": 4 << 20, "l3_multiple": 2});
        test_cell("hw.thp", params, fault, dir)
    }

    fn thp_here() -> Option<String> {
        HwFacts::live(0, &crate::measure::affinity::current_thread().unwrap()).thp_enabled
    }

    #[test]
    fn first_touch_reads_back_every_page_and_records_the_backing() {
        let dir = tempfile::tempdir().unwrap();
        for access in ["sequential", "random"] {
            let c = cell("first-touch", "nohugepage", access, None, dir.path());
            let mut inst = match Thp.prepare_here(&c).unwrap() {
                Prepared::Ready(i) => i,
                Prepared::Skip(why) | Prepared::NotApplicable(why) => return assert!(thp_here().is_none(), "{why}"),
            };
            let mut t = Timer::new();
            assert_eq!(inst.sample(1, &mut t).unwrap(), Work::ops((4 << 20) / page_size() as u64));
            assert!(inst.verify().passed, "{:?}", inst.verify());
            let d = inst.details();
            assert_eq!(d["anon_huge_bytes"], 0, "MADV_NOHUGEPAGE: {d}");
            assert_eq!(d["bytes"], 4 << 20);
            assert_eq!(d["phase"], "first-touch");
        }
    }

    #[test]
    fn an_untouched_page_or_a_broken_chase_is_invalid() {
        let dir = tempfile::tempdir().unwrap();
        for (phase, fault, observed) in [("first-touch", SKIP_PAGE, "1 mismatches"), ("access", SKIP_LINE, "ranks summing")] {
            let c = cell(phase, "nohugepage", "random", Some(fault), dir.path());
            let Prepared::Ready(mut inst) = Thp.prepare_here(&c).unwrap() else { return };
            inst.sample(1, &mut Timer::new()).unwrap();
            let v = inst.verify();
            assert!(!v.passed && v.observed.contains(observed), "{phase}: {v:?}");
        }
    }

    #[test]
    fn access_rows_walk_a_populated_region() {
        let dir = tempfile::tempdir().unwrap();
        let c = cell("access", "hugepage", "sequential", None, dir.path());
        let mut inst = match Thp.prepare_here(&c).unwrap() {
            Prepared::Ready(i) => i,
            Prepared::Skip(why) | Prepared::NotApplicable(why) => return assert!(why.contains("THP"), "{why}"),
        };
        for _ in 0..3 {
            assert_eq!(inst.sample(1, &mut Timer::new()).unwrap(), Work::ops(5000));
            assert!(inst.verify().passed);
        }
        let d = inst.details();
        assert!(d["backing_after_prepare"]["anon_huge_bytes"].is_u64(), "{d}");
        assert_eq!(d["accesses_per_sample"], 5000);
    }

    #[test]
    fn hugepage_rows_note_when_huge_pages_were_not_obtained() {
        let note = |seen: Result<(u64, u64), String>| {
            let mut o = serde_json::Map::new();
            note_huge_pages(&mut o, 4 << 20, seen, "test readings");
            (o["huge_pages_obtained"].clone(), o.get("note").and_then(Value::as_str).map(str::to_string))
        };
        let (obtained, text) = note(Ok((0, 0)));
        assert_eq!(obtained, "none");
        assert!(text.unwrap().starts_with("huge pages were NOT obtained: MADV_HUGEPAGE was advised, but AnonHugePages was 0"));
        let (obtained, text) = note(Ok((2 << 20, 4 << 20)));
        assert_eq!(obtained, "partly");
        assert!(text.unwrap().contains("AnonHugePages 2.0 MiB to 4.0 MiB of 4.0 MiB"));
        assert_eq!(note(Ok((4 << 20, 4 << 20))), (json!("all"), None));
        let (obtained, text) = note(Err("cannot read smaps".into()));
        assert!(obtained.is_null() && text.unwrap().ends_with("unknown: cannot read smaps"));
        // On this machine: whatever the kernel gave, a hugepage row says what it got.
        let dir = tempfile::tempdir().unwrap();
        for phase in ["first-touch", "access"] {
            let Prepared::Ready(mut inst) = Thp.prepare_here(&cell(phase, "hugepage", "sequential", None, dir.path())).unwrap() else {
                return;
            };
            inst.sample(1, &mut Timer::new()).unwrap();
            assert!(inst.verify().passed);
            let d = inst.details();
            let got = d["huge_pages_obtained"].as_str().unwrap();
            assert_eq!(d["note"].is_string(), got != "all", "{phase}: {d}");
            let nohuge = Thp.prepare_here(&cell(phase, "nohugepage", "sequential", None, dir.path())).unwrap();
            let Prepared::Ready(mut inst) = nohuge else { return };
            inst.sample(1, &mut Timer::new()).unwrap();
            assert!(inst.details().get("huge_pages_obtained").is_none() && inst.details().get("note").is_none());
        }
    }

    #[test]
    fn missing_or_disabled_thp_is_a_reason_to_skip() {
        assert!(thp_unavailable(None, Advice::NoHuge).unwrap().contains("missing"));
        assert!(thp_unavailable(Some("never"), Advice::Huge).unwrap().contains("[never]"));
        assert_eq!(thp_unavailable(Some("never"), Advice::NoHuge), None);
        assert_eq!(thp_unavailable(Some("madvise"), Advice::Huge), None);
        assert_eq!(thp_unavailable(Some("always"), Advice::Huge), None);
    }
}
