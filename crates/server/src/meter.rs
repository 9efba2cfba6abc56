//! A least data rate, metered: what a client owes against a
//! [`MinDataRate`](crate::MinDataRate) while it owes data, and whether it
//! has fallen too far behind.
//!
//! The timer judges a meter at each tick. Between ticks the client gains
//! what it moved and loses the rate's worth for each exchange it owes
//! (responses it must take, or request bodies it must send), for the time
//! since. Its balance, in thousandths of a byte so that no tick rounds a
//! low rate (or a short tick's share of one) away, may be a period
//! (`grace`) behind; further, it is too slow.
//!
//! ```text
//! none --owes--> metering --balance >= -period--> metering
//!   ^              |   \--balance < -period--> too slow (the caller closes)
//!   +--owes none---+         metering --paused--> metering (not billed)
//! ```
//!
//! A tick that finds nothing owed forgets the meter, and one that finds the
//! exchanges paused (the client cannot move data for now) bills nothing
//! and keeps the balance. A balance may bank at most a period's worth
//! ahead, so a fast start buys no long dribble after it.
//!
//! A tick bills at most half a grace, however long since the last: a
//! later tick means the timer was starved (a handler that blocked its
//! worker, a paused VM, an overloaded box), and the client cannot be
//! judged on time the server was not watching. What it moved meanwhile
//! still pays, but the server sees only what the socket takes at the late
//! tick, which the kernel's windows decide. Kestrel's `TimeoutControl`
//! applies the same rule with its one-second heartbeat. The timer ticks
//! at most every quarter of a grace, so a tick on time is never cut
//! short; a late one cuts off only a client already half a period
//! behind, and a client that moves nothing is still cut off at its sixth
//! late tick at most (its third, with nothing banked).

/// A rate as the timer uses it: bytes a second, and the grace in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rate {
    pub(crate) bytes_per_second: u64,
    pub(crate) grace_ms: u64,
}

impl Rate {
    pub(crate) fn new(rate: crate::MinDataRate) -> Self {
        Self {
            bytes_per_second: u64::from(rate.bytes_per_second()),
            grace_ms: u64::try_from(rate.grace().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The most time one tick bills: half a grace (see the module's docs).
    fn max_gap_ms(self) -> u64 {
        self.grace_ms / 2
    }
}

/// Where a client stands against a [`Rate`] while it owes data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meter {
    /// The last tick that judged it (ms since server start).
    last: u64,
    /// The most the client's counter of bytes moved has been (it may dip).
    moved: u64,
    /// Thousandths of a byte moved beyond the rate (below zero: behind
    /// it), at most a period's worth.
    balance: i64,
    /// Exchanges owed at the last tick.
    owed: u64,
}

/// What one tick finds due: made by [`Meter::bill`], settled by
/// [`Meter::settle`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bill {
    /// Thousandths of a byte due since the last tick.
    due: i64,
    /// A period's worth, in thousandths of a byte: the most a balance may
    /// bank, and the most it may be behind.
    period: i64,
    now: u64,
}

impl Meter {
    /// Starts metering at `now`, with `moved` bytes counted so far.
    pub(crate) fn start(now: u64, moved: u64, owed: u64) -> Self {
        Self { last: now, moved, balance: 0, owed }
    }

    /// Nothing is owed for now, though the exchanges go on (the client
    /// cannot send: its credit is spent, or the server is not reading):
    /// the time since the last tick is not billed, what moved in it is
    /// still paid in, and the balance is kept (the next bill caps it).
    pub(crate) fn pause(&mut self, now: u64, moved: u64) {
        self.balance = self.balance.saturating_add(self.paid(moved));
        self.last = now;
        self.moved = self.moved.max(moved);
    }

    /// What is due at `now` with `owed` exchanges owed (at least one).
    pub(crate) fn bill(&mut self, now: u64, owed: u64, rate: Rate) -> Bill {
        if owed != self.owed && self.balance < 0 {
            // A debt is time behind the rate: with more (or fewer)
            // exchanges owed, the same time is more (or less) bytes. (A
            // credit is not scaled up: banked on one exchange, it must not
            // pay for twenty; the cap trims it.)
            let scaled = i128::from(self.balance) * i128::from(owed) / i128::from(self.owed);
            self.balance = i64::try_from(scaled).unwrap_or(i64::MIN);
        }
        self.owed = owed;
        let per_second =
            i64::try_from(rate.bytes_per_second.saturating_mul(owed)).unwrap_or(i64::MAX);
        // A late tick bills only what a tick on time could have (see the
        // module's docs): the rest was the server's own delay.
        let elapsed = now.saturating_sub(self.last).min(rate.max_gap_ms());
        let elapsed = i64::try_from(elapsed).unwrap_or(i64::MAX);
        let period = per_second.saturating_mul(i64::try_from(rate.grace_ms).unwrap_or(i64::MAX));
        Bill { due: per_second.saturating_mul(elapsed), period, now }
    }

    /// Whether `moved` bytes (the client's counter now) fall short of the
    /// bill, before the balance is counted.
    pub(crate) fn short(&self, bill: &Bill, moved: u64) -> bool {
        self.paid(moved) < bill.due
    }

    /// Settles the bill with the client's counter at `moved`: whether the
    /// client is within a period of the rate.
    pub(crate) fn settle(&mut self, bill: Bill, moved: u64) -> bool {
        // Capped after what is due: a tick late (a stalled worker, a
        // paused VM) must not lose what the client paid meanwhile.
        self.balance =
            self.balance.saturating_add(self.paid(moved)).saturating_sub(bill.due).min(bill.period);
        self.last = bill.now;
        self.moved = self.moved.max(moved);
        self.balance >= -bill.period
    }

    /// Thousandths of a byte moved since the last tick.
    fn paid(&self, moved: u64) -> i64 {
        i64::try_from(moved.saturating_sub(self.moved)).unwrap_or(i64::MAX).saturating_mul(1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 B/s over 2 s: a tick bills a second at most.
    const RATE: Rate = Rate { bytes_per_second: 100, grace_ms: 2_000 };

    /// Ticks once: `moved` is the counter now.
    fn tick(meter: &mut Meter, now: u64, moved: u64, owed: u64) -> bool {
        let bill = meter.bill(now, owed, RATE);
        meter.settle(bill, moved)
    }

    #[test]
    fn a_client_at_the_rate_is_never_too_slow() {
        let mut meter = Meter::start(0, 0, 1);
        for second in 1..=100u64 {
            assert!(tick(&mut meter, second * 1000, second * 100, 1));
        }
    }

    #[test]
    fn a_silent_client_is_too_slow_just_past_its_grace() {
        let mut meter = Meter::start(0, 0, 1);
        assert!(tick(&mut meter, 1_000, 0, 1));
        assert!(tick(&mut meter, 2_000, 0, 1), "exactly a period behind is within it");
        assert!(!tick(&mut meter, 2_001, 0, 1));
    }

    #[test]
    fn a_fast_start_banks_one_period_at_most() {
        let mut meter = Meter::start(0, 0, 1);
        // A megabyte in the first second, then nothing.
        assert!(tick(&mut meter, 1_000, 1 << 20, 1));
        for second in 2..=5 {
            assert!(
                tick(&mut meter, second * 1_000, 1 << 20, 1),
                "a period banked, a period of grace"
            );
        }
        assert!(!tick(&mut meter, 5_001, 1 << 20, 1));
    }

    #[test]
    fn more_exchanges_owed_owe_more_and_scale_a_debt() {
        let mut meter = Meter::start(0, 0, 1);
        // Half a period behind on one exchange is half a period on four.
        assert!(tick(&mut meter, 1_000, 0, 1));
        assert!(tick(&mut meter, 1_000, 0, 4));
        // Four exchanges at one exchange's rate fall behind.
        let mut moved = 0;
        let mut now = 1_000;
        let mut within = true;
        while within && now < 10_000 {
            now += 100;
            moved += 10;
            within = tick(&mut meter, now, moved, 4);
        }
        assert!(!within, "a quarter of the rate owed is too slow");
        // The half period left (400 bytes, at four exchanges) runs out at
        // 300 bytes a second: in 1.4 s, at this tick's granularity.
        assert_eq!(now, 2_400);
    }

    #[test]
    fn a_counter_that_dips_pays_nothing_twice() {
        let mut meter = Meter::start(0, 500, 1);
        assert!(tick(&mut meter, 1_000, 600, 1));
        // The counter dips (acknowledgements counted early), then comes
        // back: the same bytes do not pay again.
        assert!(tick(&mut meter, 2_000, 550, 1));
        assert!(tick(&mut meter, 3_000, 600, 1));
        assert!(!tick(&mut meter, 3_001, 600, 1), "only the first 100 bytes paid");
    }

    #[test]
    fn a_pause_bills_nothing_and_keeps_the_debt_and_the_pay() {
        let mut meter = Meter::start(0, 0, 1);
        assert!(tick(&mut meter, 1_000, 0, 1));
        assert!(tick(&mut meter, 1_500, 0, 1), "a debt of 150 bytes");
        // Paused for a long time, with 50 bytes moved before it.
        meter.pause(60_000, 50);
        // The debt (150, less the 50 paid) is still there: 100 more
        // bytes behind is past the period (200).
        assert!(tick(&mut meter, 61_000, 50, 1), "100 + 100 behind is within it");
        assert!(!tick(&mut meter, 61_001, 50, 1));
    }

    #[test]
    fn a_late_tick_bills_half_a_grace_at_most() {
        // A client a period ahead, then a minute with the server stalled
        // and nothing taken: half a grace billed, not a minute.
        let mut meter = Meter::start(0, 0, 1);
        assert!(tick(&mut meter, 1_000, 1 << 20, 1));
        assert!(tick(&mut meter, 61_000, 1 << 20, 1), "a minute unwatched bills 1 s");
        assert_eq!(meter.balance, 100_000, "the 200 bytes banked, less 100");
        // Up to the limit, a gap is billed whole.
        let mut on_time = Meter::start(0, 0, 1);
        let mut late = Meter::start(0, 0, 1);
        assert!(tick(&mut on_time, 1_000, 0, 1));
        assert!(tick(&mut late, 1_001, 0, 1));
        assert_eq!(late.balance, on_time.balance);
        // A client that moves nothing is still cut off by late ticks
        // alone: at the third with nothing banked, the fifth with a period
        // banked, the sixth at most (a pause pays in without the cap,
        // which the first bill after it applies).
        for (banked, paused, cut_at) in [(0, false, 3), (1 << 20, false, 5), (1 << 20, true, 6)] {
            let mut meter = Meter::start(0, 0, 1);
            let mut now = 0;
            if banked > 0 {
                now = 1_000;
                if paused {
                    meter.pause(now, banked);
                } else {
                    assert!(tick(&mut meter, now, banked, 1));
                }
            }
            let mut late_ticks = 0;
            loop {
                now += 60_000;
                late_ticks += 1;
                if !tick(&mut meter, now, banked, 1) {
                    break;
                }
            }
            assert_eq!(late_ticks, cut_at, "{banked} bytes banked, paused: {paused}");
        }
    }

    #[test]
    fn late_ticks_bill_more_exchanges_each() {
        // The limit is on time: four exchanges owe four times its worth.
        let mut meter = Meter::start(0, 0, 4);
        assert!(tick(&mut meter, 60_000, 0, 4));
        assert_eq!(meter.balance, -400_000);
        assert!(tick(&mut meter, 120_000, 0, 4), "800 bytes behind: a period of four");
        assert!(!tick(&mut meter, 180_000, 0, 4));
    }

    #[test]
    fn extremes_saturate_instead_of_overflowing() {
        let huge = Rate { bytes_per_second: u64::MAX, grace_ms: u64::MAX };
        let mut meter = Meter::start(0, 0, u64::MAX);
        let bill = meter.bill(u64::MAX, u64::MAX, huge);
        assert!(meter.settle(bill, u64::MAX), "saturated due, saturated period");
        let mut meter = Meter::start(u64::MAX, u64::MAX, 1);
        let bill = meter.bill(0, 1, RATE);
        assert!(meter.settle(bill, 0), "a clock that went back owes nothing");
    }
}
