//! The mismatch tally of a verifier that checks many results one by one
//! (every echo, every call's return value, every file read back): how many
//! differed from what was expected, the first that did, and the reason text
//! a verdict shows.
//!
//! Its counting methods are `#[inline(always)]` and allocate nothing, so a
//! tally kept in a local variable costs inside a timed window exactly what
//! the counter and the `Option` it replaces cost: the expected-vs-got
//! comparison and an add.

/// How many checks of a sample failed, and what the first failure was (`T`:
/// what the verdict shows of it; `()` when only the count matters). The
/// number of checks is the caller's (the sample's iterations, the files read
/// back), given to [`Mismatches::reason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mismatches<T = ()> {
    /// Checks that failed.
    pub count: u64,
    /// The first check that failed, as `T`.
    pub first: Option<T>,
}

impl<T> Mismatches<T> {
    /// No mismatch yet.
    pub const fn new() -> Mismatches<T> {
        Mismatches { count: 0, first: None }
    }

    /// Counts a mismatch when `wrong`, without a branch and without keeping
    /// which check it was.
    #[inline(always)]
    pub fn add_if(&mut self, wrong: bool) {
        self.count += u64::from(wrong);
    }

    /// Counts one mismatch; the first one's `first()` is kept.
    #[inline(always)]
    pub fn record(&mut self, first: impl FnOnce() -> T) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(first());
        }
    }

    /// Adds another tally (of another thread, say) that came after this one.
    pub fn merge(&mut self, later: Mismatches<T>) {
        self.count += later.count;
        if self.first.is_none() {
            self.first = later.first;
        }
    }

    /// The same tally with the first mismatch shown otherwise (turned into
    /// text after the window, say).
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Mismatches<U> {
        Mismatches { count: self.count, first: self.first.map(f) }
    }

    /// Whether every check passed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `3 mismatches in 100 round trips`, and ` (first: ...)` with `show` of
    /// the first when one was kept.
    pub fn reason(&self, checked: u64, what: &str, show: impl FnOnce(&T) -> String) -> String {
        let mut s = format!("{} mismatches in {checked} {what}", self.count);
        if let Some(first) = &self.first {
            s.push_str(&format!(" (first: {})", show(first)));
        }
        s
    }
}

impl Mismatches<()> {
    /// `3 mismatches in 100 calls`.
    pub fn counted(&self, checked: u64, what: &str) -> String {
        self.reason(checked, what, |_| String::new())
    }
}

impl<V: PartialEq> Mismatches<(V, V)> {
    /// Compares what a check got with what was expected; the first pair
    /// that differs is kept as `(expected, got)`.
    #[inline(always)]
    pub fn expect(&mut self, expected: V, got: V) {
        if got != expected {
            self.record(|| (expected, got));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keep_the_first_mismatch_and_render_a_reason() {
        let mut m = Mismatches::new();
        for (want, got) in [(1, 1), (2, 5), (3, 3), (4, 9)] {
            m.expect(want, got);
        }
        assert_eq!(m, Mismatches { count: 2, first: Some((2, 5)) });
        assert!(!m.is_empty());
        assert_eq!(m.reason(4, "echoes", |(s, e)| format!("sent {s}, echoed {e}")), "2 mismatches in 4 echoes (first: sent 2, echoed 5)");
        let mut plain = Mismatches::<()>::new();
        plain.add_if(false);
        assert!(plain.is_empty());
        plain.add_if(true);
        assert_eq!(plain.counted(10, "calls"), "1 mismatches in 10 calls");
    }

    #[test]
    fn merged_tallies_keep_the_earliest_first() {
        let mut a = Mismatches::<&str>::new();
        let mut b = Mismatches::new();
        b.record(|| "b");
        b.record(|| "b2");
        a.merge(b);
        let mut c = Mismatches::new();
        c.record(|| "c");
        a.merge(c);
        assert_eq!(a, Mismatches { count: 3, first: Some("b") });
    }
}
