//! The receive window's rules, as a plain sequential state machine.
//!
//! Both [`InputWindow`](crate::InputWindow) (one CAS over a packed word) and
//! the lock-based twins apply exactly these functions, so they can only
//! differ in how they synchronise, never in what they decide.

use crate::error::FlowError;

/// The largest window HTTP/2 allows: 2^31-1 (RFC 9113 6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// What [`try_advance`](crate::InputFlow::try_advance) did with a DATA frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advance {
    /// The bytes were counted against the window.
    Accepted,
    /// The window is aborted: nothing was counted (the frame still had to
    /// fit the window, or it is an error).
    Aborted,
}

/// What [`release`](crate::InputFlow::release) did with consumed bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// The credit is pending: too little to announce yet, or updates are
    /// disabled.
    Pending,
    /// Send a WINDOW_UPDATE with this increment (it is above the threshold;
    /// pending credit was reset to 0 in the same step).
    Update(u32),
    /// The window is aborted: nothing was given back.
    Aborted,
}

/// A receive window's whole state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct InputState {
    /// Bytes the peer may still send (0..=2^31-1).
    pub window: u32,
    /// Credit given back but not yet announced (0..=2^31-2: at most the
    /// threshold, which is below the initial window).
    pub pending: u32,
    /// `abort` has happened.
    pub aborted: bool,
    /// END_STREAM was seen: no more WINDOW_UPDATEs for this window.
    pub updates_disabled: bool,
}

impl InputState {
    /// A fresh window of `initial` bytes that announces credit once more
    /// than `threshold` bytes are pending.
    ///
    /// The threshold must be below `initial` (or 0 with a window of 0):
    /// a peer that keeps to the window leaves at most `initial` bytes
    /// pending, so a larger threshold would never announce. This bound also
    /// keeps every field in range: `pending <= threshold < 2^31 - 1`.
    pub(crate) fn new(initial: u32, threshold: u32) -> Result<Self, FlowError> {
        if initial > MAX_WINDOW {
            return Err(FlowError::InitialTooLarge { initial });
        }
        if threshold >= initial.max(1) {
            return Err(FlowError::ThresholdTooLarge { threshold, initial });
        }
        Ok(Self { window: initial, ..Self::default() })
    }

    /// A DATA frame of `n` bytes arrived.
    ///
    /// RFC 9113 6.9.1: a sender must not exceed the window; more than the
    /// window is a FLOW_CONTROL_ERROR, even after an abort (Kestrel's rule:
    /// the peer broke it whatever we did locally). After an abort the bytes
    /// are not counted: the stream's reader is gone.
    #[inline]
    pub(crate) fn advance(&mut self, n: u32) -> Result<Advance, FlowError> {
        if n > self.window {
            return Err(FlowError::WindowExceeded { requested: n, available: self.window });
        }
        if self.aborted {
            return Ok(Advance::Aborted);
        }
        self.window -= n;
        Ok(Advance::Accepted)
    }

    /// The application consumed `n` bytes: they go back into the window at
    /// once, and into pending credit, which is announced (and reset) once it
    /// is strictly greater than `threshold` (half the initial window by
    /// default; RFC 9113 6.9 leaves the policy to the receiver).
    ///
    /// A frame counts against the window including credit not yet
    /// announced (Kestrel's rule), so a peer that sends past what it was
    /// told can drive pending credit up to `threshold + initial`, more than
    /// one WINDOW_UPDATE carries: an announcement is capped at 2^31-1 and
    /// the rest stays pending (it is at most `threshold` then).
    #[inline]
    pub(crate) fn release(
        &mut self,
        n: u32,
        initial: u32,
        threshold: u32,
    ) -> Result<Release, FlowError> {
        if self.aborted {
            return Ok(Release::Aborted);
        }
        // window <= initial, always.
        let outstanding = initial - self.window;
        if n > outstanding {
            return Err(FlowError::OverRelease { released: n, outstanding });
        }
        // n <= outstanding: the window stays <= initial.
        self.window += n;
        if self.updates_disabled {
            return Ok(Release::Pending);
        }
        // pending <= threshold < 2^31 - 1 and n <= initial <= 2^31 - 1, so
        // the sum fits a u32 (checked all the same: a rule that cannot
        // overflow is the only way the packed word and the twins agree).
        let pending = self.pending.checked_add(n).expect("pending + n < 2^32");
        if pending > threshold {
            let update = pending.min(MAX_WINDOW);
            // pending - update <= threshold + initial - (2^31 - 1) <= threshold.
            self.pending = pending - update;
            Ok(Release::Update(update))
        } else {
            self.pending = pending;
            Ok(Release::Pending)
        }
    }

    /// Aborts the window and returns the bytes consumed but never released
    /// (so a stream can give them back to its connection), once; 0 after.
    pub(crate) fn abort(&mut self, initial: u32) -> u32 {
        if self.aborted {
            return 0;
        }
        self.aborted = true;
        initial - self.window
    }

    /// END_STREAM seen: the peer will send nothing more, so announcing
    /// credit is pointless (RFC 9113 6.9: updates for a half-closed stream
    /// may be ignored).
    pub(crate) fn disable_updates(&mut self) {
        self.updates_disabled = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules() {
        let mut state = InputState::new(100, 50).unwrap();
        assert_eq!(state.advance(60), Ok(Advance::Accepted));
        assert_eq!(
            state.advance(41),
            Err(FlowError::WindowExceeded { requested: 41, available: 40 })
        );
        assert_eq!(state.release(50, 100, 50), Ok(Release::Pending), "50 is not > 50");
        assert_eq!(state.release(1, 100, 50), Ok(Release::Update(51)));
        assert_eq!(
            state.release(10, 100, 50),
            Err(FlowError::OverRelease { released: 10, outstanding: 9 })
        );
        assert_eq!(state.abort(100), 9);
        assert_eq!(state.abort(100), 0);
        assert_eq!(state.advance(5), Ok(Advance::Aborted));
        assert_eq!(
            state.advance(92),
            Err(FlowError::WindowExceeded { requested: 92, available: 91 })
        );
        assert_eq!(state.release(1, 100, 50), Ok(Release::Aborted));
        assert_eq!(
            InputState::new(MAX_WINDOW + 1, 0),
            Err(FlowError::InitialTooLarge { initial: MAX_WINDOW + 1 })
        );
        assert_eq!(
            InputState::new(100, 100),
            Err(FlowError::ThresholdTooLarge { threshold: 100, initial: 100 })
        );
        assert_eq!(InputState::new(0, 0), Ok(InputState::default()));
    }
}
