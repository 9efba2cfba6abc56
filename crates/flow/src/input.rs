//! The receive window in one `AtomicU64`, changed by a single CAS.
//!
//! ```text
//!   63        62      61 ............... 31 30 ............... 0
//! +---------+-------+----------------------+--------------------+
//! |DISABLED |ABORTED| pending credit (31)  |    window (31)     |
//! +---------+-------+----------------------+--------------------+
//! ```
//!
//! Every operation reads the word, applies the sequential rules of
//! [`InputState`] to the unpacked copy, and installs the result with one
//! compare-and-swap; a CAS that fails retries on the word it found. So each
//! operation is atomic as a whole: an abort can never land between "add the
//! credit" and "reset the pending count" (the gap in the unmerged Kestrel
//! attempt, which used two CASes), and "updates disabled" and "aborted" are
//! bits of the same word, not separate flags.
//!
//! Every decision is made from a value read by a read-modify-write (the
//! loop starts with `fetch_add(0)` and retries from another after a failed
//! CAS), which reads the latest value of the word: a refusal or a no-op
//! takes effect at that RMW, a change at its CAS, so the operations are
//! linearizable and no error is ever reported from a stale load. Starting
//! with an RMW rather than a load also takes the cache line exclusive at
//! once: a load followed by a CAS moves the line twice when another core
//! wrote it last (measured below and in docs/benchmarks.md).
//!
//! Ordering: AcqRel on every RMW. The word publishes nothing but itself,
//! but windows are composed: a stream counts a frame against its connection
//! first, then against itself, and an abort that sees the stream's count
//! must see the connection's too (loom's `stream_and_connection_under_abort`
//! failed with Relaxed loads and CASes: the abort's release to the
//! connection was refused as an over-release).

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
fn pack(state: InputState) -> u64 {
    assert!(
        u64::from(state.window) <= WINDOW_MASK
            && u64::from(state.pending) << PENDING_SHIFT <= PENDING_MASK,
        "window or pending credit out of range: {state:?}"
    );
    u64::from(state.window)
        | (u64::from(state.pending) << PENDING_SHIFT)
        | if state.aborted { ABORTED } else { 0 }
        | if state.updates_disabled { UPDATES_DISABLED } else { 0 }
}

/// A receive window (what the peer may send us), lock-free: one packed
/// `AtomicU64`, every transition one CAS. See [`InputFlow`](crate::InputFlow)
/// for the operations; the methods here are the same, inherent.
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

    /// Applies `rule` to the state in one CAS (retrying on contention);
    /// a refusal changes nothing.
    #[inline]
    fn update<R>(
        &self,
        rule: impl Fn(&mut InputState) -> Result<R, FlowError>,
    ) -> Result<R, FlowError> {
        loop {
            // An RMW, not a load: the latest value, and the line exclusive.
            let current = self.word.fetch_add(0, Ordering::AcqRel);
            let mut state = unpack(current);
            let result = rule(&mut state);
            let new = pack(state);
            if result.is_err() || new == current {
                return result;
            }
            if self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                return result;
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

    /// END_STREAM seen: no more WINDOW_UPDATEs for this window.
    pub fn disable_updates(&self) {
        let _ = self.update(|state| {
            state.disable_updates();
            Ok(())
        });
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

    #[test]
    fn packing_round_trips_every_field_at_its_extremes() {
        for window in [0, 1, crate::MAX_WINDOW] {
            for pending in [0, 1, crate::MAX_WINDOW] {
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
}
