//! The readiness word: everything the writer and the reader must agree on,
//! in one `AtomicU64`.
//!
//! ```text
//!  63   62       61      60      59       58       57       56    55 ............ 0
//! +---+--------+-------+-------+--------+--------+--------+--------+----------------+
//! | 0 |CONFLICT|HOLDING|PENDING|R_CLOSED|W_CLOSED|W_WAIT  |R_WAIT  |  UNEXAMINED    |
//! +---+--------+-------+-------+--------+--------+--------+--------+----------------+
//! ```
//!
//! - `UNEXAMINED`: bytes committed by the writer that the reader has not yet
//!   examined. The writer adds on `commit`; the reader subtracts on
//!   `advance_to`. A waiting `read_at_least` borrows the whole count (sets it
//!   to zero, keeping the amount as its private credit) and gives it back
//!   when the wait ends: in the CAS that makes the read ready, or in the
//!   cancel's.
//!   Back-pressure compares it with the thresholds, and the reader derives
//!   the written total from it (`examined + credit + UNEXAMINED`), so
//!   one word carries both "how much is there" and "should the writer wait".
//!   The pipe's bytes live in pool blocks, so the count is bounded by the
//!   memory a pool can hold, far below 2^56.
//! - `R_WAIT` / `W_WAIT`: the reader (writer) registered its waker and sleeps
//!   until the other side changes the word. Whoever clears the bit wakes the
//!   sleeper; the sleeper sets it with a compare-and-swap against the word it
//!   judged "nothing to do" from, so a change in between fails the CAS and is
//!   seen (no lost wakeup: Kestrel's `SocketInput` bug, PR 801 and 1083).
//! - `W_CLOSED`: the writer finished (`close` or `close_with`, or dropped).
//!   The error slot is written before the bit is set, and never after.
//! - `R_CLOSED`: the reader was dropped; the writer's next flush says so.
//! - `PENDING` / `HOLDING`: the read protocol. At most one read at a time:
//!
//! ```text
//!            begin (CAS)              data ready (CAS; returns credit)
//!   idle ------------------> PENDING --------------------> HOLDING
//!    ^  ^                      |  \                           |
//!    |  |   cancel / error     |   \ second read: +CONFLICT,  |
//!    |  |  (CAS, returns the   |    wake the pending one      |
//!    |  |   read's credit)     |                              |
//!    |  +----------------------+                              |
//!    +--------------------------------------------------------+
//!        advance_to (one RMW: subtracts what became examined)
//! ```
//!
//! A read that finds `PENDING` sets `CONFLICT` (and wakes the pending read,
//! which then fails too); a read that finds `HOLDING` just fails. Only the
//! owner of `PENDING`/`HOLDING` touches the reader's private state, and it
//! hands that state on with the Release of the CAS that clears the bit and
//! the Acquire of the next `begin`.

/// Bits of the unexamined-byte count.
pub(crate) const UNEXAMINED: u64 = (1 << 56) - 1;
/// The reader sleeps until the word changes.
pub(crate) const READER_WAITING: u64 = 1 << 56;
/// The writer sleeps until the reader examines enough or leaves.
pub(crate) const WRITER_WAITING: u64 = 1 << 57;
/// The writer has finished; no more bytes will come.
pub(crate) const WRITER_CLOSED: u64 = 1 << 58;
/// The reader has been dropped.
pub(crate) const READER_CLOSED: u64 = 1 << 59;
/// A read has begun and has not returned its bytes yet.
pub(crate) const PENDING: u64 = 1 << 60;
/// A read returned its bytes and has not advanced yet.
pub(crate) const HOLDING: u64 = 1 << 61;
/// A second read ran into a pending one; the pending one must fail too.
pub(crate) const CONFLICT: u64 = 1 << 62;

/// The unexamined-byte count of a state word.
#[inline]
pub(crate) const fn unexamined(state: u64) -> u64 {
    state & UNEXAMINED
}

/// Whether any of `bits` is set in `state`.
#[inline]
pub(crate) const fn has(state: u64, bits: u64) -> bool {
    state & bits != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_overlap_and_fill_63_bits() {
        let flags = [
            READER_WAITING,
            WRITER_WAITING,
            WRITER_CLOSED,
            READER_CLOSED,
            PENDING,
            HOLDING,
            CONFLICT,
        ];
        let mut seen = UNEXAMINED;
        for flag in flags {
            assert_eq!(flag.count_ones(), 1);
            assert_eq!(seen & flag, 0, "{flag:#x} overlaps");
            seen |= flag;
        }
        assert_eq!(seen, u64::MAX >> 1);
        assert_eq!(unexamined(READER_WAITING | 7), 7);
        assert!(has(PENDING | HOLDING, HOLDING));
    }
}
