//! One interface over the CAS windows and their lock-based twins, so the
//! tests and the benchmarks drive all three with the same code.

use crate::error::FlowError;
use crate::grant::Grant;
use crate::input_state::{Advance, InputState, Release};
use crate::output_state::{Aborted, OutputState};

/// A receive window: what the peer may send us (RFC 9113 6.9).
pub trait InputFlow: Send + Sync + Sized {
    /// A window of `initial` bytes that announces credit once strictly more
    /// than `threshold` bytes are pending.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1,
    /// [`FlowError::ThresholdTooLarge`] unless `threshold < initial` (or
    /// both are 0).
    fn with_threshold(initial: u32, threshold: u32) -> Result<Self, FlowError>;
    /// A DATA frame of `n` bytes arrived.
    ///
    /// # Errors
    /// [`FlowError::WindowExceeded`] when `n` is more than the window.
    fn try_advance(&self, n: u32) -> Result<Advance, FlowError>;
    /// [`try_advance`](Self::try_advance), and whether an [`abort`](Self::abort)
    /// racing a refused frame counted the frame's bytes as unread (its
    /// return already holds them, so a composition that gives a refused
    /// frame back to its connection must not). Only a window that applies
    /// a frame before judging it can say `true`; none in this crate does
    /// (the default says `false`).
    fn try_advance_counting_abort(&self, n: u32) -> (Result<Advance, FlowError>, bool) {
        (self.try_advance(n), false)
    }
    /// The application consumed `n` bytes.
    ///
    /// # Errors
    /// [`FlowError::OverRelease`] when more is released than consumed.
    fn release(&self, n: u32) -> Result<Release, FlowError>;
    /// Aborts; returns the unreleased bytes once, then 0.
    fn abort(&self) -> u32;
    /// END_STREAM seen: no more updates.
    fn disable_updates(&self);
    /// A snapshot of the whole state.
    fn state(&self) -> InputState;
}

/// A send window: what we may send the peer (RFC 9113 6.9).
pub trait OutputFlow: Send + Sync + Sized {
    /// A window of `initial` bytes.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    fn with_initial(initial: u32) -> Result<Self, FlowError>;
    /// Takes up to `max` bytes of credit, counted as sent (partial grants;
    /// 0 when none).
    ///
    /// # Errors
    /// [`Aborted`] once aborted.
    fn try_reserve(&self, max: u32) -> Result<u32, Aborted>;
    /// Takes up to `max` bytes of credit and holds it until [`sent`](Self::sent)
    /// or [`give_back`](Self::give_back) settles it.
    ///
    /// ```
    /// use falconet_flow::{FlowError, OutputFlow, StdOutputWindow};
    ///
    /// let window = StdOutputWindow::with_initial(100)?;
    /// assert_eq!(window.try_hold(60), Ok(60));
    /// window.sent(50)?;
    /// window.give_back(10)?;
    /// assert_eq!(window.give_back(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
    /// assert_eq!((window.state().window, window.state().held), (50, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] once aborted.
    fn try_hold(&self, max: u32) -> Result<u32, Aborted>;
    /// [`try_hold`](Self::try_hold) as a [`Grant`], which gives back what
    /// it did not send when dropped.
    ///
    /// ```
    /// use falconet_flow::{OutputFlow, ParkingLotOutputWindow};
    ///
    /// let window = ParkingLotOutputWindow::with_initial(100)?;
    /// let mut grant = window.try_grant(30)?;
    /// grant.sent(20)?;
    /// drop(grant);
    /// assert_eq!((window.state().window, window.state().held), (80, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] once aborted.
    fn try_grant(&self, max: u32) -> Result<Grant<'_, Self>, Aborted> {
        Ok(Grant::new(self, self.try_hold(max)?))
    }
    /// `n` held bytes were sent.
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when more than is held.
    fn sent(&self, n: u32) -> Result<(), FlowError>;
    /// `n` held bytes will not be sent: back into the window.
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when more than is held.
    fn give_back(&self, n: u32) -> Result<(), FlowError>;
    /// A WINDOW_UPDATE of `n`.
    ///
    /// # Errors
    /// [`FlowError::ZeroIncrement`], [`FlowError::WindowOverflow`] (free
    /// plus held credit past 2^31-1).
    fn increase(&self, n: u32) -> Result<(), FlowError>;
    /// SETTINGS_INITIAL_WINDOW_SIZE moved by `delta`.
    ///
    /// # Errors
    /// [`FlowError::WindowOverflow`], [`FlowError::WindowUnderflow`].
    fn apply_initial_window_delta(&self, delta: i32) -> Result<(), FlowError>;
    /// Aborts: reservations fail from now on.
    fn abort(&self);
    /// A snapshot of the whole state.
    fn state(&self) -> OutputState;
}

impl InputFlow for crate::InputWindow {
    fn with_threshold(initial: u32, threshold: u32) -> Result<Self, FlowError> {
        crate::InputWindow::with_threshold(initial, threshold)
    }
    #[inline]
    fn try_advance(&self, n: u32) -> Result<Advance, FlowError> {
        crate::InputWindow::try_advance(self, n)
    }
    #[inline]
    fn release(&self, n: u32) -> Result<Release, FlowError> {
        crate::InputWindow::release(self, n)
    }
    fn abort(&self) -> u32 {
        crate::InputWindow::abort(self)
    }
    fn disable_updates(&self) {
        crate::InputWindow::disable_updates(self);
    }
    fn state(&self) -> InputState {
        crate::InputWindow::state(self)
    }
}

impl OutputFlow for crate::OutputWindow {
    fn with_initial(initial: u32) -> Result<Self, FlowError> {
        crate::OutputWindow::new(initial)
    }
    #[inline]
    fn try_reserve(&self, max: u32) -> Result<u32, Aborted> {
        crate::OutputWindow::try_reserve(self, max)
    }
    #[inline]
    fn try_hold(&self, max: u32) -> Result<u32, Aborted> {
        crate::OutputWindow::try_hold(self, max)
    }
    #[inline]
    fn sent(&self, n: u32) -> Result<(), FlowError> {
        crate::OutputWindow::sent(self, n)
    }
    #[inline]
    fn give_back(&self, n: u32) -> Result<(), FlowError> {
        crate::OutputWindow::give_back(self, n)
    }
    #[inline]
    fn increase(&self, n: u32) -> Result<(), FlowError> {
        crate::OutputWindow::increase(self, n)
    }
    fn apply_initial_window_delta(&self, delta: i32) -> Result<(), FlowError> {
        crate::OutputWindow::apply_initial_window_delta(self, delta)
    }
    fn abort(&self) {
        crate::OutputWindow::abort(self);
    }
    fn state(&self) -> OutputState {
        crate::OutputWindow::state(self)
    }
}
