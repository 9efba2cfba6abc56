//! The send window's rules, as a plain sequential state machine, shared by
//! [`OutputWindow`](crate::OutputWindow) and the lock-based twins.
//!
//! # Credit that is held, sent, or given back
//!
//! RFC 9113 6.9.1 defines a send window as the credit the peer granted minus
//! the bytes we *sent*, and forbids it to pass 2^31-1: a WINDOW_UPDATE that
//! would take it past is a FLOW_CONTROL_ERROR. A sender that reserves credit
//! before it knows how much it will send has a third kind of byte, credit it
//! took but has neither sent nor given up. The state keeps it apart:
//!
//! - `window`: credit free to take (may be negative after a SETTINGS change);
//! - `held`: credit taken by [`hold`](OutputState::hold) and not yet settled;
//! - the RFC's window is their sum, [`flow_window`](OutputState::flow_window).
//!
//! Transitions, and what each does to the two counts:
//!
//! | operation | `window` | `held` | RFC window |
//! |---|---|---|---|
//! | `reserve(max)`: take `g`, sent at once | `- g` | | `- g` |
//! | `hold(max)`: take `g`, not sent yet | `- g` | `+ g` | |
//! | `sent(n)`: `n` held bytes went out | | `- n` | `- n` |
//! | `give_back(n)`: `n` held bytes never will | `+ n` | `- n` | |
//! | `increase(n)`, `apply_delta(d)` | `+ n`, `+ d` | | `+ n`, `+ d` |
//!
//! The overflow rule follows: `increase` and `apply_delta` refuse to take
//! `window + held` past 2^31-1 (what the peer counts, so an update that
//! passes it is the peer's error), and `give_back` cannot overflow at all:
//! it moves credit from `held` to `window` without changing the sum, which
//! the updates kept at or below 2^31-1. The alternative (checking updates
//! against `window` alone) would accept an update the RFC calls an error
//! while credit is held, and then a give-back would have to either fail
//! (losing credit through no fault of the caller) or pass 2^31-1.
//!
//! Bytes count as sent when they are settled with `sent`, so settle them
//! before the frame can reach the peer (encode, `sent`, then write): a
//! WINDOW_UPDATE for bytes still counted as held would otherwise be checked
//! against a sum that includes them twice.
//!
//! `held` never exceeds 2^31-1: a hold takes at most `window`, so it ends
//! at most at `window + held`, which the updates keep at most 2^31-1.
//! `sent` and `give_back` refuse more than `held` with
//! [`FlowError::NotHeld`] (a caller's accounting bug), changing nothing;
//! after an abort they still settle (credit held before the abort is
//! returned or spent as usual), while reservations fail and updates are
//! ignored.

use crate::error::FlowError;
use crate::input_state::MAX_WINDOW;

/// The reservation was refused: the window is aborted (the stream or the
/// connection is gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aborted;

impl core::fmt::Display for Aborted {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the flow-control window was aborted")
    }
}

impl std::error::Error for Aborted {}

/// A send window's whole state.
///
/// ```
/// use falconet_flow::{OutputState, OutputWindow};
///
/// let window = OutputWindow::new(100)?;
/// assert_eq!(window.try_hold(30), Ok(30));
/// let state: OutputState = window.state();
/// assert_eq!((state.window, state.held, state.aborted), (70, 30, false));
/// assert_eq!(state.flow_window(), 100); // nothing sent yet
/// # Ok::<(), falconet_flow::FlowError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct OutputState {
    /// Credit free to take; negative after a SETTINGS change shrank the
    /// initial window below what was in flight (RFC 9113 6.9.2).
    pub window: i32,
    /// Credit taken by a hold ([`OutputWindow::try_hold`](crate::OutputWindow::try_hold))
    /// and neither sent nor given back yet (0..=2^31-1).
    pub held: u32,
    /// `abort` has happened.
    pub aborted: bool,
}

impl OutputState {
    /// A fresh window of `initial` bytes.
    pub(crate) fn new(initial: u32) -> Result<Self, FlowError> {
        if initial > MAX_WINDOW {
            return Err(FlowError::InitialTooLarge { initial });
        }
        Ok(Self { window: initial as i32, held: 0, aborted: false })
    }

    /// The window as RFC 9113 6.9.1 counts it: the credit granted minus
    /// the bytes sent, that is `window + held`. Updates keep it at or below
    /// 2^31-1.
    ///
    /// ```
    /// use falconet_flow::OutputState;
    ///
    /// let state = OutputState { window: -10, held: 25, aborted: false };
    /// assert_eq!(state.flow_window(), 15);
    /// ```
    #[must_use]
    pub const fn flow_window(&self) -> i64 {
        self.window as i64 + self.held as i64
    }

    /// Takes up to `max` bytes of free credit: all of it if the window
    /// allows, less (a partial grant) if not, 0 when it is empty or negative.
    fn take(&mut self, max: u32) -> Result<u32, Aborted> {
        if self.aborted {
            return Err(Aborted);
        }
        let granted = if self.window <= 0 { 0 } else { max.min(self.window as u32) };
        // granted <= window when positive: the window stays >= 0.
        self.window -= granted as i32;
        Ok(granted)
    }

    /// Takes up to `max` bytes, counted as sent at once.
    pub(crate) fn reserve(&mut self, max: u32) -> Result<u32, Aborted> {
        self.take(max)
    }

    /// Takes up to `max` bytes and holds them until `sent` or `give_back`.
    pub(crate) fn hold(&mut self, max: u32) -> Result<u32, Aborted> {
        let granted = self.take(max)?;
        // held + granted <= held + window (before) = flow_window <= 2^31-1.
        self.held += granted;
        Ok(granted)
    }

    /// Refuses to settle more than is held.
    fn check_held(&self, n: u32) -> Result<(), FlowError> {
        if n > self.held {
            return Err(FlowError::NotHeld { requested: n, held: self.held });
        }
        Ok(())
    }

    /// `n` held bytes went out: they leave `held` (and the RFC window).
    pub(crate) fn sent(&mut self, n: u32) -> Result<(), FlowError> {
        self.check_held(n)?;
        self.held -= n;
        Ok(())
    }

    /// `n` held bytes will not be sent: they return to `window`. The RFC
    /// window is unchanged, so this cannot overflow.
    pub(crate) fn give_back(&mut self, n: u32) -> Result<(), FlowError> {
        self.check_held(n)?;
        self.held -= n;
        // window + n <= window + held (before) <= 2^31-1: fits an i32.
        self.window = (i64::from(self.window) + i64::from(n)) as i32;
        Ok(())
    }

    /// A WINDOW_UPDATE of `n` (RFC 9113 6.9): 0 is a PROTOCOL_ERROR, taking
    /// `window + held` past 2^31-1 a FLOW_CONTROL_ERROR; after an abort it
    /// is ignored.
    pub(crate) fn increase(&mut self, n: u32) -> Result<(), FlowError> {
        if n == 0 {
            return Err(FlowError::ZeroIncrement);
        }
        if self.aborted {
            return Ok(());
        }
        self.shift(i64::from(n))
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE changed by `delta` (RFC 9113 6.9.2):
    /// every stream's window moves by it and may go negative; taking
    /// `window + held` past 2^31-1 is a FLOW_CONTROL_ERROR.
    pub(crate) fn apply_delta(&mut self, delta: i32) -> Result<(), FlowError> {
        if self.aborted {
            return Ok(());
        }
        self.shift(i64::from(delta))
    }

    /// Moves the window by `by`: the RFC window (`window + held`) must stay
    /// at most 2^31-1, the free window (`window`) at least -2^31.
    fn shift(&mut self, by: i64) -> Result<(), FlowError> {
        let flow = self.flow_window() + by;
        if flow > i64::from(MAX_WINDOW) {
            return Err(FlowError::WindowOverflow { would_be: flow });
        }
        let would_be = i64::from(self.window) + by;
        if would_be < i64::from(i32::MIN) {
            return Err(FlowError::WindowUnderflow { would_be });
        }
        // i32::MIN <= would_be <= flow <= 2^31-1.
        self.window = would_be as i32;
        Ok(())
    }

    /// Aborts the window: reservations fail from now on.
    pub(crate) fn abort(&mut self) {
        self.aborted = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules() {
        let mut state = OutputState::new(100).unwrap();
        assert_eq!(state.reserve(30), Ok(30));
        assert_eq!(state.reserve(100), Ok(70), "a partial grant");
        assert_eq!(state.reserve(1), Ok(0));
        assert_eq!(state.increase(0), Err(FlowError::ZeroIncrement));
        assert_eq!(state.apply_delta(-50), Ok(()));
        assert_eq!(state.window, -50);
        assert_eq!(state.reserve(1), Ok(0), "negative: nothing");
        assert_eq!(state.increase(80), Ok(()));
        assert_eq!(state.window, 30);
        state.abort();
        assert_eq!(state.reserve(1), Err(Aborted));
        assert_eq!(state.increase(5), Ok(()));
        assert_eq!(state.increase(0), Err(FlowError::ZeroIncrement));
    }

    #[test]
    fn increments_past_the_maximum_are_refused() {
        let mut state = OutputState::new(MAX_WINDOW - 10).unwrap();
        assert_eq!(
            state.increase(11),
            Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + 1 })
        );
        assert_eq!(state.increase(10), Ok(()));
        assert_eq!(
            state.apply_delta(1),
            Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + 1 })
        );
    }

    #[test]
    fn held_credit_counts_against_updates_and_comes_back_without_overflow() {
        // The edge from the RFC: credit held, an update takes the window to
        // the maximum, then the held credit is given back.
        let mut state = OutputState::new(MAX_WINDOW - 100).unwrap();
        assert_eq!(state.hold(u32::MAX), Ok(MAX_WINDOW - 100));
        assert_eq!(state.increase(100), Ok(()), "window + held reaches 2^31-1");
        assert_eq!(
            state.increase(1),
            Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + 1 }),
            "the held bytes are unsent: the peer counts them"
        );
        assert_eq!(state.give_back(MAX_WINDOW - 100), Ok(()));
        assert_eq!(state, OutputState { window: MAX_WINDOW as i32, held: 0, aborted: false });
    }

    #[test]
    fn sent_bytes_leave_the_window_for_good() {
        let mut state = OutputState::new(100).unwrap();
        assert_eq!(state.hold(60), Ok(60));
        assert_eq!(state.sent(40), Ok(()));
        assert_eq!(state.flow_window(), 60);
        assert_eq!(state.give_back(21), Err(FlowError::NotHeld { requested: 21, held: 20 }));
        assert_eq!(state.sent(21), Err(FlowError::NotHeld { requested: 21, held: 20 }));
        assert_eq!(state.give_back(20), Ok(()));
        assert_eq!(state, OutputState { window: 60, held: 0, aborted: false });
        assert_eq!(state.sent(0), Ok(()));
        assert_eq!(state.give_back(0), Ok(()));
        assert_eq!(state.give_back(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
    }

    #[test]
    fn a_shrink_below_held_credit_leaves_a_negative_window_that_give_back_refills() {
        let mut state = OutputState::new(100).unwrap();
        assert_eq!(state.hold(100), Ok(100));
        assert_eq!(state.apply_delta(-150), Ok(()));
        assert_eq!((state.window, state.flow_window()), (-150, -50));
        assert_eq!(state.hold(1), Ok(0));
        assert_eq!(state.give_back(100), Ok(()));
        assert_eq!((state.window, state.held), (-50, 0));
    }

    #[test]
    fn after_an_abort_held_credit_still_settles() {
        let mut state = OutputState::new(100).unwrap();
        assert_eq!(state.hold(50), Ok(50));
        state.abort();
        assert_eq!(state.hold(1), Err(Aborted));
        assert_eq!(state.sent(10), Ok(()));
        assert_eq!(state.give_back(40), Ok(()));
        assert_eq!(state.give_back(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
        assert_eq!(state, OutputState { window: 90, held: 0, aborted: true });
    }

    #[test]
    fn the_most_negative_window_keeps_held_credit_representable() {
        let mut state = OutputState::new(MAX_WINDOW).unwrap();
        assert_eq!(state.hold(MAX_WINDOW), Ok(MAX_WINDOW));
        assert_eq!(state.apply_delta(i32::MIN), Ok(()));
        assert_eq!(state.window, i32::MIN);
        assert_eq!(
            state.apply_delta(-1),
            Err(FlowError::WindowUnderflow { would_be: i64::from(i32::MIN) - 1 })
        );
        assert_eq!(state.give_back(MAX_WINDOW), Ok(()));
        assert_eq!(state.window, -1);
    }
}
