//! The reset budget against rapid reset (CVE-2023-44487) and MadeYouReset
//! (CVE-2025-8671): a token bucket of resets a client may cause.
//!
//! - It starts full, at its capacity ([`Config::reset_budget`]).
//! - Each stream the client resets before its response ended, and each
//!   stream error the server sends, *spends* one token; a spend that finds
//!   none left is refused, and the connection ends (ENHANCE_YOUR_CALM).
//! - Each stream that completes normally *earns* one back.
//! - Time earns them back too, [`Config::reset_refill_per_second`] a
//!   second, read from the caller's clock at each [`refill`](ResetBudget::refill):
//!   a client that cancels now and then over a long connection (a gRPC
//!   subscription cancelled by design, a browser's abandoned downloads) is
//!   never cut off, while a flood runs dry within one burst.
//!
//! Neither way of earning goes past the capacity. Tokens are counted in
//! thousandths ([`MILLI`]), so that a refill of `r` a second is exactly
//! `r` thousandths a millisecond, without a remainder to carry: the bucket
//! after any run of refills is the same as after one refill for their
//! whole time (`min(tokens + t * r, capacity)` composes), which the tests
//! check against a millisecond-by-millisecond model.
//!
//! [`Config::reset_budget`]: super::connection::Config::reset_budget
//! [`Config::reset_refill_per_second`]: super::connection::Config::reset_refill_per_second

/// Thousandths of a token in one token.
const MILLI: u64 = 1000;

/// One connection's reset budget (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResetBudget {
    /// Thousandths of a token left, at most `capacity`.
    milli: u64,
    /// The capacity, in thousandths.
    capacity: u64,
    /// Thousandths earned a millisecond: the tokens earned a second.
    per_ms: u64,
    /// The clock's reading at the last refill; `None` before the first.
    at: Option<u64>,
}

impl ResetBudget {
    /// A full budget of `capacity` resets, refilled `per_second` a second.
    pub(crate) fn new(capacity: u32, per_second: u32) -> Self {
        let capacity = u64::from(capacity) * MILLI;
        Self { milli: capacity, capacity, per_ms: u64::from(per_second), at: None }
    }

    /// Spends one reset: `false`, spending nothing, when none is left.
    pub(crate) fn spend(&mut self) -> bool {
        let Some(left) = self.milli.checked_sub(MILLI) else { return false };
        self.milli = left;
        true
    }

    /// A stream completed normally: one reset back.
    pub(crate) fn earn(&mut self) {
        self.milli = (self.milli + MILLI).min(self.capacity);
    }

    /// Earns back what the time since the last refill is worth, `now_ms`
    /// read from any monotonic clock in milliseconds; the first call only
    /// starts the clock. A reading earlier than the last is taken as no
    /// time.
    pub(crate) fn refill(&mut self, now_ms: u64) {
        let since = self.at.unwrap_or(now_ms);
        let elapsed = now_ms.saturating_sub(since);
        self.milli =
            self.milli.saturating_add(elapsed.saturating_mul(self.per_ms)).min(self.capacity);
        self.at = Some(since.max(now_ms));
    }

    /// Whole resets left.
    #[cfg(test)]
    pub(crate) fn left(&self) -> u64 {
        self.milli / MILLI
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spends_down_to_zero_then_refuses() {
        let mut budget = ResetBudget::new(3, 0);
        assert!(budget.spend() && budget.spend() && budget.spend());
        assert!(!budget.spend());
        assert_eq!(budget.left(), 0);
        budget.earn();
        assert!(budget.spend());
        assert!(!budget.spend());
    }

    #[test]
    fn zero_capacity_refuses_the_first() {
        let mut budget = ResetBudget::new(0, 1000);
        budget.refill(0);
        budget.refill(10_000);
        budget.earn();
        assert!(!budget.spend());
    }

    #[test]
    fn earning_stops_at_the_capacity() {
        let mut budget = ResetBudget::new(2, 0);
        budget.earn();
        budget.earn();
        assert_eq!(budget.left(), 2);
        assert!(budget.spend() && budget.spend() && !budget.spend());
    }

    /// 33 a second (nghttp2's rate): 30 ms earns 990 thousandths, not a
    /// whole reset; the next 1 ms completes it. Fractions are kept.
    #[test]
    fn time_earns_fractions_that_add_up() {
        let mut budget = ResetBudget::new(1, 33);
        assert!(budget.spend());
        budget.refill(5_000);
        budget.refill(5_030);
        assert!(!budget.spend());
        budget.refill(5_031);
        assert!(budget.spend());
    }

    /// The first reading starts the clock: time before it earns nothing.
    #[test]
    fn the_first_refill_only_starts_the_clock() {
        let mut budget = ResetBudget::new(10, 1000);
        for _ in 0..10 {
            assert!(budget.spend());
        }
        budget.refill(u64::MAX / 2);
        assert!(!budget.spend());
        budget.refill(u64::MAX / 2 + 1);
        assert!(budget.spend());
    }

    /// The edges of every argument: the largest capacity and rate, a clock
    /// at u64::MAX, a clock that goes back.
    #[test]
    fn edges_of_the_ranges() {
        let mut budget = ResetBudget::new(u32::MAX, u32::MAX);
        assert_eq!(budget.left(), u64::from(u32::MAX));
        budget.earn();
        assert_eq!(budget.left(), u64::from(u32::MAX));
        assert!(budget.spend());
        budget.refill(0);
        budget.refill(u64::MAX);
        assert_eq!(budget.left(), u64::from(u32::MAX));
        // Back in time: nothing earned, and the clock keeps its reading.
        let mut budget = ResetBudget::new(5, 1000);
        budget.refill(100);
        for _ in 0..5 {
            assert!(budget.spend());
        }
        budget.refill(50);
        assert!(!budget.spend());
        budget.refill(100);
        assert!(!budget.spend(), "time earned twice");
        budget.refill(101);
        assert!(budget.spend());
    }

    #[derive(Clone, Debug)]
    enum Op {
        Spend,
        Earn,
        /// Milliseconds forward (or, below zero, back) on the clock.
        Tick(i16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => Just(Op::Spend),
            2 => Just(Op::Earn),
            3 => (-1_000i16..2_000).prop_map(Op::Tick),
        ]
    }

    proptest! {
        /// Against a model that refills one millisecond at a time and
        /// keeps whole and partial tokens apart.
        #[test]
        fn matches_a_millisecond_model(
            capacity in 0u32..20,
            per_second in prop_oneof![Just(0u32), 1u32..100, Just(1000), Just(7919)],
            ops in proptest::collection::vec(op(), 0..200),
        ) {
            let mut budget = ResetBudget::new(capacity, per_second);
            // The model: whole tokens and thousandths, apart.
            let (mut whole, mut part) = (u64::from(capacity), 0u64);
            let cap = u64::from(capacity);
            let mut clock = 1_000u64;
            let mut latest: Option<u64> = None;
            for op in ops {
                match op {
                    Op::Spend => {
                        let model = whole > 0;
                        if model { whole -= 1; }
                        prop_assert_eq!(budget.spend(), model);
                    }
                    Op::Earn => {
                        budget.earn();
                        if whole < cap { whole += 1; }
                        if whole == cap { part = 0; }
                    }
                    Op::Tick(step) => {
                        clock = clock.saturating_add_signed(i64::from(step));
                        if let Some(last) = latest {
                            for _ in last..clock.max(last) {
                                part += u64::from(per_second);
                                whole += part / 1000;
                                part %= 1000;
                                if whole >= cap { whole = cap; part = 0; }
                            }
                        }
                        latest = Some(latest.map_or(clock, |last| last.max(clock)));
                        budget.refill(clock);
                    }
                }
                prop_assert_eq!(budget.left(), whole);
            }
        }
    }
}
