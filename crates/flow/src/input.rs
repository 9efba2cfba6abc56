//! The receive window in one `AtomicU64`: every change is one CAS of the
//! sequential rules ([`InputState`]) on the packed word.
//!
//! ```text
//!   63        62      61 ............... 31 30 ............... 0
//! +---------+-------+----------------------+--------------------+
//! |DISABLED |ABORTED| pending credit (31)  |     window (31)    |
//! +---------+-------+----------------------+--------------------+
//! ```
//!
//! # One CAS per change
//!
//! Every operation loads the word, applies the rules the lock twins apply
//! to the unpacked [`InputState`], and installs the result with one
//! compare-and-swap; a CAS that loses returns the word that beat it, and
//! the rules run again on that. So each change takes effect at its CAS
//! with the rules' own decision (linearizable), and the word always holds
//! a state the rules produced: `window <= initial`, `pending <= threshold`,
//! nothing borrowed or carried into the flags.
//!
//! An answer that changes nothing (a refused frame, FLOW_CONTROL_ERROR; an
//! over-release, the caller's bug; anything after the abort; a frame or a
//! release of 0) is returned only once a read-modify-write (`fetch_add(0)`)
//! has read the same word the rules judged: the load that aims the CAS may
//! be stale, an RMW is the latest value. A refused operation therefore never changes
//! the word, and no other thread ever sees it.
//!
//! # Why not blind read-modify-writes
//!
//! Windows of up to 256 MiB used to apply a release blind (one `fetch_add`
//! of the credit to the window and to pending credit, judged from the word
//! it returned and undone when refused), which was wait-free and, under
//! contention, up to twice as fast as the CAS window of that time (which
//! read with an RMW before its CAS; aimed by a load, this one measured the
//! same as the blind releases: `docs/benchmarks.md`). But
//! an over-release applied blind is in the word until its undo lands, and
//! a legitimate release that lands meanwhile cannot tell its own credit
//! from the phantom: it must wait, or take its credit back and try again.
//! Two adversarial reviews found the ways that went wrong (a phantom that
//! never left, waiting everything for good; credit taken back after a
//! frame had used it, so a fitting frame was refused, credit was announced
//! twice, and once an over-release of more than the whole window passed),
//! and the word has no bits to spare for the record an exact step back
//! needs. A CAS judges before it changes anything: there is no phantom to
//! step back from.
//!
//! # Ordering
//!
//! AcqRel on every read-modify-write. The word publishes nothing but
//! itself, but windows are composed: a stream counts a frame against its
//! connection first, then against itself, and an abort that sees the
//! stream's count must see the connection's too (loom's
//! `stream_and_connection_under_abort` failed with Relaxed operations: the
//! abort's release to the connection was refused as an over-release).
//! Every decision is made on the value of an RMW (the CAS that installs it,
//! or the `fetch_add(0)` that confirms an answer changing nothing); the
//! load only aims the first CAS.

use crate::error::FlowError;
use crate::input_state::{Advance, InputState, Release};
use crate::primitive::{AtomicU64, Ordering};

/// Bits of the window field.
const WINDOW_BITS: u32 = 31;
/// The window field (bits 0..=30).
const WINDOW_MASK: u64 = (1 << WINDOW_BITS) - 1;
/// The pending-credit field (bits 31..=61).
const PENDING_SHIFT: u32 = WINDOW_BITS;
const PENDING_MASK: u64 = ((1 << 31) - 1) << PENDING_SHIFT;
/// `abort` has happened.
const ABORTED: u64 = 1 << 62;
/// END_STREAM was seen: no more WINDOW_UPDATEs.
const UPDATES_DISABLED: u64 = 1 << 63;

/// Unpacks a word.
#[inline]
fn unpack(word: u64) -> InputState {
    InputState {
        window: (word & WINDOW_MASK) as u32,
        pending: ((word & PENDING_MASK) >> PENDING_SHIFT) as u32,
        aborted: word & ABORTED != 0,
        updates_disabled: word & UPDATES_DISABLED != 0,
    }
}

/// Packs a state the rules produced. Every field is in range by the rules'
/// invariants (`window <= initial <= 2^31-1`, `pending <= threshold <
/// 2^31-1`); a value out of range would spill into the flags, so it is
/// checked in every build, not only with debug assertions.
#[inline]
fn pack(state: InputState) -> u64 {
    let window = u64::from(state.window);
    if window > WINDOW_MASK || u64::from(state.pending) << PENDING_SHIFT > PENDING_MASK {
        out_of_range(state);
    }
    window
        | (u64::from(state.pending) << PENDING_SHIFT)
        | if state.aborted { ABORTED } else { 0 }
        | if state.updates_disabled { UPDATES_DISABLED } else { 0 }
}

/// A state the rules cannot produce: a bug in them, never bad input.
#[cold]
#[inline(never)]
fn out_of_range(state: InputState) -> ! {
    panic!("window or pending credit out of range: {state:?}")
}

/// A receive window (what the peer may send us), lock-free: one packed
/// `AtomicU64`, one CAS per change. See [`InputFlow`](crate::InputFlow) for
/// the operations; the methods here are the same, inherent.
///
/// ```
/// use falconet_flow::{Advance, InputWindow, Release};
///
/// let window = InputWindow::new(65_535)?;
/// assert_eq!(window.try_advance(40_000)?, Advance::Accepted); // a DATA frame
/// assert_eq!(window.release(30_000)?, Release::Pending);     // not above half yet
/// assert_eq!(window.release(10_000)?, Release::Update(40_000)); // send WINDOW_UPDATE
/// assert!(window.try_advance(70_000).is_err()); // FLOW_CONTROL_ERROR
/// # Ok::<(), falconet_flow::FlowError>(())
/// ```
#[derive(Debug)]
pub struct InputWindow {
    word: AtomicU64,
    initial: u32,
    threshold: u32,
}

impl InputWindow {
    /// A window of `initial` bytes announcing credit once more than half of
    /// it is pending.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(initial: u32) -> Result<Self, FlowError> {
        Self::with_threshold(initial, initial / 2)
    }

    /// A window announcing credit once strictly more than `threshold` bytes
    /// are pending. `threshold` must be below `initial` (0 for a window of
    /// 0): a peer that keeps to the window never leaves more than `initial`
    /// bytes pending.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1;
    /// [`FlowError::ThresholdTooLarge`] when `threshold >= initial` (and
    /// `initial > 0`), or `threshold > 0` with `initial == 0`.
    pub fn with_threshold(initial: u32, threshold: u32) -> Result<Self, FlowError> {
        let state = InputState::new(initial, threshold)?;
        Ok(Self { word: AtomicU64::new(pack(state)), initial, threshold })
    }

    /// Applies `rule` to the state in one CAS, retrying on contention. An
    /// answer that changes nothing (a refusal among them) is returned once
    /// an RMW has read the word it was judged on.
    #[inline]
    fn update<R>(
        &self,
        rule: impl Fn(&mut InputState) -> Result<R, FlowError>,
    ) -> Result<R, FlowError> {
        // A load is enough to aim the CAS, which checks it. Acquire pairs
        // with the Release half of the last RMW, as the CAS's own read does,
        // so a first guess is seldom stale.
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let mut state = unpack(current);
            let result = rule(&mut state);
            let new = if result.is_ok() { pack(state) } else { current };
            if new == current {
                let latest = self.word.fetch_add(0, Ordering::AcqRel);
                if latest == current {
                    return result;
                }
                current = latest;
                continue;
            }
            match self.word.compare_exchange_weak(current, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return result,
                Err(now) => current = now,
            }
        }
    }

    /// A DATA frame of `n` bytes arrived (RFC 9113 6.9.1).
    ///
    /// # Errors
    /// [`FlowError::WindowExceeded`] (FLOW_CONTROL_ERROR) when `n` is more
    /// than the window, even after an abort.
    #[inline]
    pub fn try_advance(&self, n: u32) -> Result<Advance, FlowError> {
        self.update(|state| state.advance(n))
    }

    /// The application consumed `n` bytes: they return to the window, and a
    /// [`Release::Update`] says when to send WINDOW_UPDATE.
    ///
    /// # Errors
    /// [`FlowError::OverRelease`] when more is released than was consumed.
    #[inline]
    pub fn release(&self, n: u32) -> Result<Release, FlowError> {
        let (initial, threshold) = (self.initial, self.threshold);
        self.update(|state| state.release(n, initial, threshold))
    }

    /// Aborts the window: returns the bytes consumed and not released
    /// (for the connection window), once; 0 on every later call. After it,
    /// advances count nothing and releases give nothing back.
    pub fn abort(&self) -> u32 {
        let initial = self.initial;
        self.update(|state| Ok(state.abort(initial))).unwrap_or(0)
    }

    /// END_STREAM seen: no more WINDOW_UPDATEs for this window. (One
    /// `fetch_or`: it sets a flag and decides nothing.)
    pub fn disable_updates(&self) {
        self.word.fetch_or(UPDATES_DISABLED, Ordering::AcqRel);
    }

    /// Reuses the window for a new stream of `initial` bytes.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1 (the window is unchanged).
    pub fn reset(&mut self, initial: u32) -> Result<(), FlowError> {
        *self = Self::with_threshold(initial, initial / 2)?;
        Ok(())
    }

    /// The whole state, as one snapshot.
    pub fn state(&self) -> InputState {
        // Acquire pairs with the Release half of the RMW that wrote the
        // word: a composed window's caller that sees this state sees what
        // was done before it (module docs).
        unpack(self.word.load(Ordering::Acquire))
    }

    /// The bytes the peer may still send.
    pub fn available(&self) -> u32 {
        self.state().window
    }

    /// The window's initial size.
    pub fn initial(&self) -> u32 {
        self.initial
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_WINDOW;

    #[test]
    fn packing_round_trips_every_field_at_its_extremes() {
        for window in [0, 1, MAX_WINDOW] {
            for pending in [0, 1, MAX_WINDOW] {
                for aborted in [false, true] {
                    for updates_disabled in [false, true] {
                        let state = InputState { window, pending, aborted, updates_disabled };
                        assert_eq!(unpack(pack(state)), state);
                    }
                }
            }
        }
        assert_eq!(WINDOW_MASK & PENDING_MASK, 0);
        assert_eq!((WINDOW_MASK | PENDING_MASK) & (ABORTED | UPDATES_DISABLED), 0);
        assert_eq!(WINDOW_MASK | PENDING_MASK | ABORTED | UPDATES_DISABLED, u64::MAX);
    }

    #[test]
    fn refused_changes_leave_the_word_untouched_at_every_edge() {
        for initial in [100, MAX_WINDOW] {
            let window = InputWindow::with_threshold(initial, initial / 2).unwrap();
            let untouched = window.word.load(Ordering::Relaxed);
            for n in [initial + 1, 1 << 20, (1 << 20) + 1, MAX_WINDOW, u32::MAX] {
                if n <= initial {
                    continue;
                }
                let available = initial;
                assert_eq!(
                    window.try_advance(n),
                    Err(FlowError::WindowExceeded { requested: n, available })
                );
                assert_eq!(
                    window.release(n),
                    Err(FlowError::OverRelease { released: n, outstanding: 0 })
                );
                assert_eq!(window.release(0), Ok(Release::Pending));
                assert_eq!(window.word.load(Ordering::Relaxed), untouched, "n = {n}");
            }
        }
    }

    #[test]
    fn the_largest_window_drains_and_refills_to_its_edges() {
        let window = InputWindow::new(MAX_WINDOW).unwrap();
        assert_eq!(window.try_advance(MAX_WINDOW), Ok(Advance::Accepted));
        assert_eq!(
            window.try_advance(1),
            Err(FlowError::WindowExceeded { requested: 1, available: 0 })
        );
        assert_eq!(window.release(MAX_WINDOW), Ok(Release::Update(MAX_WINDOW)));
        assert_eq!(window.release(1), Err(FlowError::OverRelease { released: 1, outstanding: 0 }));
        assert_eq!(window.state(), InputState { window: MAX_WINDOW, ..InputState::default() });
        window.disable_updates();
        assert_eq!(window.abort(), 0);
        assert_eq!(window.abort(), 0, "once");
        assert_eq!(window.try_advance(1), Ok(Advance::Aborted));
        assert_eq!(window.release(1), Ok(Release::Aborted));
    }
}
