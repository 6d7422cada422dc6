//! The unit of a row's headline value and the direction that makes a
//! change better or worse; what one sample did, from which the harness
//! derives the value; and how the report tabulates a workload's rows.

use serde::{Deserialize, Serialize};

use super::names::named_enum;

named_enum! {
    /// The unit of a row's headline value; it fixes the direction.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Unit {
        /// Wall time of one sample's work window, in nanoseconds.
        Ns = "ns",
        /// Nanoseconds per operation (work window / operations).
        NsPerOp = "ns/op",
        /// Operations per second.
        OpsPerSec = "ops/s",
        /// Megabytes (10^6 bytes) per second.
        MbPerSec = "MB/s",
        /// Millions of operations per second, as the NAS Parallel Benchmarks
        /// count operations.
        MopsPerSec = "Mop/s",
        /// CPU or timer cycles a system counted itself (a guest reporting its
        /// own cycle counts). Only workloads that record their value directly
        /// (`Timer::record_value` in `workloads::contract`) use it: there is no value to derive.
        Cycles = "cycles",
    }
}

impl Unit {
    pub fn direction(self) -> Direction {
        match self {
            Unit::Ns | Unit::NsPerOp | Unit::Cycles => Direction::LowerIsBetter,
            Unit::OpsPerSec | Unit::MbPerSec | Unit::MopsPerSec => Direction::HigherIsBetter,
        }
    }

    /// The value of one window in this unit. `None` when it is undefined
    /// (zero time or zero operations).
    pub fn value(self, window_ns: u64, iters: u64, work: Work) -> Option<f64> {
        let ns = window_ns as f64;
        let v = match self {
            Unit::Ns => ns / iters.max(1) as f64,
            Unit::NsPerOp => {
                if work.ops == 0 {
                    return None;
                }
                ns / work.ops as f64
            }
            Unit::OpsPerSec => {
                if window_ns == 0 {
                    return None;
                }
                work.ops as f64 * 1e9 / ns
            }
            Unit::MbPerSec => {
                if window_ns == 0 {
                    return None;
                }
                work.bytes as f64 * 1e3 / ns
            }
            Unit::MopsPerSec => {
                if window_ns == 0 {
                    return None;
                }
                work.ops as f64 * 1e3 / ns
            }
            Unit::Cycles => return None,
        };
        v.is_finite().then_some(v)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

impl Direction {
    /// The one spelling of every output, records and exports alike (JSON,
    /// CSV, tables, sentences): `lower-is-better`, as a command file types it.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::LowerIsBetter => "lower-is-better",
            Direction::HigherIsBetter => "higher-is-better",
        }
    }
}

/// What one sample did (the harness derives the unit's value from it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    /// Operations done in the sample (iterations, items, tasks...).
    pub ops: u64,
    /// Bytes moved in the sample, for MB/s rows (0 otherwise).
    pub bytes: u64,
}

impl Work {
    pub fn ops(ops: u64) -> Work {
        Work { ops, bytes: 0 }
    }
}

/// How the report tabulates a workload's rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableShape {
    /// Medians per worker count and speedups (capOS), then per-row statistics.
    #[default]
    Scaling,
    /// One line per primitive operation: Iters, Total(us), Per(ns) (rvOS),
    /// then per-row statistics.
    Primitive,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direction_has_one_spelling_the_records_and_every_output() {
        for d in [Direction::LowerIsBetter, Direction::HigherIsBetter] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
    }

    #[test]
    fn units_derive_values_and_directions() {
        let w = Work { ops: 4, bytes: 2_000_000 };
        assert_eq!(Unit::Ns.value(1000, 1, w), Some(1000.0));
        assert_eq!(Unit::NsPerOp.value(1000, 1, w), Some(250.0));
        assert_eq!(Unit::OpsPerSec.value(2_000_000_000, 1, w), Some(2.0));
        assert_eq!(Unit::MbPerSec.value(1_000_000_000, 1, w), Some(2.0));
        assert_eq!(Unit::MopsPerSec.value(2_000, 1, Work::ops(6_000)), Some(3000.0));
        assert_eq!(Unit::MopsPerSec.direction(), Direction::HigherIsBetter);
        assert_eq!(Unit::OpsPerSec.value(0, 1, w), None);
        assert_eq!(Unit::NsPerOp.value(10, 1, Work::default()), None);
        assert_eq!(Unit::Ns.direction(), Direction::LowerIsBetter);
        assert_eq!(Unit::OpsPerSec.direction(), Direction::HigherIsBetter);
    }
}
