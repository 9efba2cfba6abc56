//! The lock-based twins: the same rules ([`InputState`], [`OutputState`])
//! behind a `parking_lot::Mutex` or a `std::sync::Mutex`, for the
//! comparisons in `benches/` and the shared tests.

use crate::error::FlowError;
use crate::input_state::{Advance, InputState, Release};
use crate::output_state::{Aborted, OutputState};
use crate::traits::{InputFlow, OutputFlow};

/// A mutex the twins can hold their state in.
pub trait StateLock<T>: Send + Sync {
    /// A lock around `value`.
    fn new(value: T) -> Self;
    /// Runs `f` with the state locked.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

impl<T: Send> StateLock<T> for parking_lot::Mutex<T> {
    fn new(value: T) -> Self {
        parking_lot::Mutex::new(value)
    }
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock())
    }
}

impl<T: Send> StateLock<T> for std::sync::Mutex<T> {
    fn new(value: T) -> Self {
        std::sync::Mutex::new(value)
    }
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // The rules never panic with the lock held: poison is impossible,
        // and a poisoned window would still be a consistent window.
        f(&mut self.lock().unwrap_or_else(|poison| poison.into_inner()))
    }
}

/// A receive window behind a lock (see [`ParkingLotInputWindow`],
/// [`StdInputWindow`]).
#[derive(Debug)]
pub struct LockedInputWindow<L> {
    state: L,
    initial: u32,
    threshold: u32,
}

/// [`LockedInputWindow`] with `parking_lot::Mutex`.
pub type ParkingLotInputWindow = LockedInputWindow<parking_lot::Mutex<InputState>>;
/// [`LockedInputWindow`] with `std::sync::Mutex`.
pub type StdInputWindow = LockedInputWindow<std::sync::Mutex<InputState>>;

impl<L: StateLock<InputState>> LockedInputWindow<L> {
    /// A window of `initial` bytes that announces credit past half of it,
    /// as [`InputWindow::new`](crate::InputWindow::new).
    ///
    /// ```
    /// use falconet_flow::{InputFlow, ParkingLotInputWindow, Release, StdInputWindow};
    ///
    /// let window = ParkingLotInputWindow::new(65_535)?;
    /// window.try_advance(40_000)?;
    /// assert_eq!(window.release(40_000)?, Release::Update(40_000));
    /// assert!(StdInputWindow::new(1 << 31).is_err()); // above 2^31-1
    /// # Ok::<(), falconet_flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(initial: u32) -> Result<Self, FlowError> {
        <Self as InputFlow>::with_threshold(initial, initial / 2)
    }

    /// A window of `initial` bytes that announces credit once strictly
    /// more than `threshold` bytes are pending (see
    /// [`InputFlow::with_threshold`]).
    ///
    /// # Errors
    /// As [`InputFlow::with_threshold`].
    pub fn with_threshold(initial: u32, threshold: u32) -> Result<Self, FlowError> {
        <Self as InputFlow>::with_threshold(initial, threshold)
    }
}

impl<L: StateLock<InputState>> InputFlow for LockedInputWindow<L> {
    fn with_threshold(initial: u32, threshold: u32) -> Result<Self, FlowError> {
        Ok(Self { state: L::new(InputState::new(initial, threshold)?), initial, threshold })
    }
    #[inline]
    fn try_advance(&self, n: u32) -> Result<Advance, FlowError> {
        self.state.with(|state| state.advance(n))
    }
    #[inline]
    fn release(&self, n: u32) -> Result<Release, FlowError> {
        self.state.with(|state| state.release(n, self.initial, self.threshold))
    }
    fn abort(&self) -> u32 {
        self.state.with(|state| state.abort(self.initial))
    }
    fn disable_updates(&self) {
        self.state.with(InputState::disable_updates);
    }
    fn state(&self) -> InputState {
        self.state.with(|state| *state)
    }
}

/// A send window behind a lock (see [`ParkingLotOutputWindow`],
/// [`StdOutputWindow`]); the synchronous operations only.
#[derive(Debug)]
pub struct LockedOutputWindow<L> {
    state: L,
}

/// [`LockedOutputWindow`] with `parking_lot::Mutex`.
pub type ParkingLotOutputWindow = LockedOutputWindow<parking_lot::Mutex<OutputState>>;
/// [`LockedOutputWindow`] with `std::sync::Mutex`.
pub type StdOutputWindow = LockedOutputWindow<std::sync::Mutex<OutputState>>;

impl<L: StateLock<OutputState>> LockedOutputWindow<L> {
    /// A send window of `initial` bytes (the peer's
    /// SETTINGS_INITIAL_WINDOW_SIZE), as
    /// [`OutputWindow::new`](crate::OutputWindow::new).
    ///
    /// ```
    /// use falconet_flow::{OutputFlow, ParkingLotOutputWindow};
    ///
    /// let window = ParkingLotOutputWindow::new(65_535)?;
    /// assert_eq!(window.try_reserve(100_000), Ok(65_535));
    /// assert!(ParkingLotOutputWindow::new(1 << 31).is_err()); // above 2^31-1
    /// # Ok::<(), falconet_flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(initial: u32) -> Result<Self, FlowError> {
        <Self as OutputFlow>::with_initial(initial)
    }
}

impl<L: StateLock<OutputState>> OutputFlow for LockedOutputWindow<L> {
    fn with_initial(initial: u32) -> Result<Self, FlowError> {
        Ok(Self { state: L::new(OutputState::new(initial)?) })
    }
    #[inline]
    fn try_reserve(&self, max: u32) -> Result<u32, Aborted> {
        self.state.with(|state| state.reserve(max))
    }
    #[inline]
    fn try_hold(&self, max: u32) -> Result<u32, Aborted> {
        self.state.with(|state| state.hold(max))
    }
    #[inline]
    fn sent(&self, n: u32) -> Result<(), FlowError> {
        self.state.with(|state| state.sent(n))
    }
    #[inline]
    fn give_back(&self, n: u32) -> Result<(), FlowError> {
        self.state.with(|state| state.give_back(n))
    }
    #[inline]
    fn increase(&self, n: u32) -> Result<(), FlowError> {
        self.state.with(|state| state.increase(n))
    }
    fn apply_initial_window_delta(&self, delta: i32) -> Result<(), FlowError> {
        self.state.with(|state| state.apply_delta(delta))
    }
    fn abort(&self) {
        self.state.with(OutputState::abort);
    }
    fn state(&self) -> OutputState {
        self.state.with(|state| *state)
    }
}
