//! The three words the ends agree through, each on a cache line of its own,
//! so that each line has one side that writes it on the hot path.
//!
//! ```text
//!  written (the writer's)   63 ........................... 8 7 ... 3    2        1        0
//!                          +------------------------------+-------+--------+--------+--------+
//!                          | COMMITTED (mod 2^56)         |   0   |R_CLOSED|W_CLOSED|R_WAIT  |
//!                          +------------------------------+-------+--------+--------+--------+
//!  examined (the reader's)  63 ........................... 8 7 ... 3    2        1        0
//!                          +------------------------------+-------+--------+--------+--------+
//!                          | EXAMINED + LENT (mod 2^56)   |   0   |R_CLOSED|   0    |W_WAIT  |
//!                          +------------------------------+-------+--------+--------+--------+
//!  read (the reader's own)                                          2        1        0
//!                                                          ...0 +--------+--------+--------+
//!                                                               |CONFLICT|HOLDING |PENDING |
//!                                                               +--------+--------+--------+
//! ```
//!
//! - **`written`**: the writer adds every commit to its count (one
//!   `fetch_add`, which also tells it whether the reader sleeps or left)
//!   and sets `W_CLOSED` when it finishes (the error slot is written
//!   first). The reader only loads it, except to go to sleep: it sets
//!   `R_WAIT` with a compare-and-swap against the word it judged "nothing
//!   new" from, after registering its waker, so a commit in between fails
//!   the CAS and is seen (no lost wakeup: Kestrel's `SocketInput` bug, PR
//!   801 and 1083). Whoever sees `R_WAIT` in the word its RMW returned
//!   clears it and wakes the reader. The reader's drop sets `R_CLOSED`
//!   here, so the next commit fails.
//! - **`examined`**: the reader adds what each read newly examined (one
//!   `fetch_add`, only when the mark moved), and a waiting `read_at_least`
//!   lends itself every buffered byte (adds them) and gives them back when
//!   the wait ends (subtracts them; see `Shared::reader_news`). The writer
//!   only loads it, and only when its last look says the reader might be
//!   over the pause threshold; to sleep it sets `W_WAIT` with a CAS against
//!   the word it judged from, as the reader does on `written`. The reader's
//!   drop sets `R_CLOSED` here too, to fail that CAS and wake the writer.
//! - **`read`**: the one-read-at-a-time protocol, touched only by readers,
//!   so the writer never pulls its line:
//!
//! ```text
//!            begin (CAS)              data ready (CAS)
//!   idle ------------------> PENDING ------------------> HOLDING
//!    |  ^                      |   \                        |
//!    |  |   cancel / error     |    \ second read:          |
//!    |  |  (swap; takes back   |     +CONFLICT, and a wake  |
//!    |  |   the read's loan)   |                            |
//!    |  +----------------------+                            |
//!    |  fast read: idle -> HOLDING in one CAS               |
//!    +----------------------------------------------------->|
//!    ^                                                      |
//!    +------------------------------------------------------+
//!        advance_to (a swap, after the examined count's add)
//! ```
//!
//! A read that finds `PENDING` sets `CONFLICT` (and wakes the pending read,
//! which then fails too); a read that finds `HOLDING` fails and sets it too,
//! which a holder of bytes ignores, but a fast read that took `HOLDING` and
//! then found no bytes after all (a racing read examined them) obeys: it
//! fails as well, rather than end "nothing yet". Only the
//! owner of `PENDING`/`HOLDING` touches the reader's private state, and it
//! hands that state on with the Release that clears the bit and the Acquire
//! of the next `begin` (or of a fast read's CAS).
//!
//! Two orders the loom models pinned down:
//! - a fast read loads `written` again after its CAS on `read`: the first
//!   load may predate a racing reader's read that consumed past it, and a
//!   count behind the reader's position would wrap to a huge length;
//! - a waiting `read_at_least` lends itself the buffered bytes only after
//!   its CAS on `written` succeeded, so the writer it frees runs against
//!   a read that is already asleep (its next commit wakes the read), as in
//!   every other wait; lent earlier, the poll raced the writer it had just
//!   woken.
//!
//! The unexamined count is `COMMITTED - EXAMINED`, modulo 2^56: both counts
//! sit above the flag bits, so an add that wraps leaves the flags alone,
//! and the difference is right as long as fewer than 2^56 bytes are
//! buffered (they sit in pool blocks: far fewer). Neither side has to read
//! the other's line to publish, only to decide whether to sleep.

/// The counts' place in `written` and `examined`: above the flag bits.
pub(crate) const COUNT_SHIFT: u32 = 8;
/// The largest count difference (and unexamined-byte figure) there is.
pub(crate) const COUNT_MAX: u64 = u64::MAX >> COUNT_SHIFT;

/// `written`: the reader sleeps until the word changes.
pub(crate) const READER_WAITING: u64 = 1 << 0;
/// `written`: the writer has finished; no more bytes will come.
pub(crate) const WRITER_CLOSED: u64 = 1 << 1;
/// `written` and `examined`: the reader has been dropped.
pub(crate) const READER_CLOSED: u64 = 1 << 2;
/// `examined`: the writer sleeps until the reader examines enough or leaves.
pub(crate) const WRITER_WAITING: u64 = 1 << 0;

/// `read`: a read has begun and has not returned its bytes yet.
pub(crate) const PENDING: u64 = 1 << 0;
/// `read`: a read returned its bytes and has not advanced yet (or a fast
/// read took the read and is about to find out whether it has bytes).
pub(crate) const HOLDING: u64 = 1 << 1;
/// `read`: a second read ran into this one. A pending read fails too, and
/// so does a fast read that finds no bytes after all; a holder of bytes
/// ignores it.
pub(crate) const CONFLICT: u64 = 1 << 2;

/// `n` bytes as an addend of a count word.
#[inline]
pub(crate) const fn bytes(n: u64) -> u64 {
    n << COUNT_SHIFT
}

/// The count of a `written` or `examined` word (modulo 2^56).
#[inline]
pub(crate) const fn count(word: u64) -> u64 {
    word >> COUNT_SHIFT
}

/// How far stream position `ahead` is past `behind`, both counts or full
/// positions (only their low 56 bits matter).
#[inline]
pub(crate) const fn distance(ahead: u64, behind: u64) -> u64 {
    ahead.wrapping_sub(behind) & COUNT_MAX
}

/// Whether any of `bits` is set in `word`.
#[inline]
pub(crate) const fn has(word: u64, bits: u64) -> bool {
    word & bits != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_sit_below_the_count() {
        for flag in [READER_WAITING, WRITER_CLOSED, READER_CLOSED, WRITER_WAITING] {
            assert_eq!(flag.count_ones(), 1);
            assert!(flag < bytes(1), "{flag:#x} overlaps the count");
        }
        assert_eq!(READER_WAITING | WRITER_CLOSED | READER_CLOSED, 0b111);
        assert_eq!(PENDING | HOLDING | CONFLICT, 0b111);
        assert_eq!(count(bytes(7) | READER_CLOSED | READER_WAITING), 7);
        assert!(has(PENDING | HOLDING, HOLDING));
    }

    #[test]
    fn counts_wrap_without_touching_the_flags() {
        let flags = READER_WAITING | WRITER_CLOSED | READER_CLOSED;
        // A count one short of wrapping, plus three bytes.
        let word = bytes(COUNT_MAX) | flags;
        let after = word.wrapping_add(bytes(3));
        assert_eq!(after & (bytes(1) - 1), flags);
        assert_eq!(count(after), 2);
        // The distance across the wrap is still three.
        assert_eq!(distance(count(after), COUNT_MAX), 3);
        // Full 64-bit positions and 56-bit counts agree.
        let position = (1u64 << 60) + 5;
        assert_eq!(distance(position, count(bytes(position))), 0);
        assert_eq!(distance(position + 9, count(bytes(position))), 9);
        // A subtraction that wraps back (a loan given back) too.
        assert_eq!(count(bytes(2).wrapping_sub(bytes(5))), COUNT_MAX - 2);
        assert_eq!(distance(2, count(bytes(2).wrapping_sub(bytes(5)))), 5);
    }
}
