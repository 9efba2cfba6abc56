//! The send window's rules, as a plain sequential state machine, shared by
//! [`OutputWindow`](crate::OutputWindow) and the lock-based twins.

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct OutputState {
    /// Bytes we may send; negative after a SETTINGS change shrank the
    /// initial window below what was in flight (RFC 9113 6.9.2).
    pub window: i32,
    /// `abort` has happened.
    pub aborted: bool,
}

impl OutputState {
    /// A fresh window of `initial` bytes.
    pub(crate) fn new(initial: u32) -> Result<Self, FlowError> {
        if initial > MAX_WINDOW {
            return Err(FlowError::InitialTooLarge { initial });
        }
        Ok(Self { window: initial as i32, aborted: false })
    }

    /// Takes up to `max` bytes of credit: all of it if the window allows,
    /// less (a partial grant) if not, 0 when the window is empty or negative.
    pub(crate) fn reserve(&mut self, max: u32) -> Result<u32, Aborted> {
        if self.aborted {
            return Err(Aborted);
        }
        let granted = if self.window <= 0 { 0 } else { max.min(self.window as u32) };
        self.window -= granted as i32;
        Ok(granted)
    }

    /// A WINDOW_UPDATE of `n` (RFC 9113 6.9): 0 is a PROTOCOL_ERROR, past
    /// 2^31-1 a FLOW_CONTROL_ERROR; after an abort it is ignored.
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
    /// every stream's window moves by it and may go negative; past 2^31-1
    /// it is a FLOW_CONTROL_ERROR.
    pub(crate) fn apply_delta(&mut self, delta: i32) -> Result<(), FlowError> {
        if self.aborted {
            return Ok(());
        }
        self.shift(i64::from(delta))
    }

    fn shift(&mut self, by: i64) -> Result<(), FlowError> {
        let would_be = i64::from(self.window) + by;
        if would_be > i64::from(MAX_WINDOW) {
            return Err(FlowError::WindowOverflow { would_be });
        }
        if would_be < i64::from(i32::MIN) {
            return Err(FlowError::WindowUnderflow { would_be });
        }
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
}
