//! The send window in one `AtomicU64`, changed by a single CAS, with an
//! async `reserve` that waits for credit.
//!
//! ```text
//!   63 ........... 34    33       32      31 .............. 0
//! +-------------------+-------+--------+---------------------+
//! |      (zero)       |WAITING|ABORTED | window (i32, two's  |
//! |                   |       |        |  complement)        |
//! +-------------------+-------+--------+---------------------+
//! ```
//!
//! Every operation applies the rules of [`OutputState`] to an unpacked copy
//! and installs the result with one CAS. `WAITING` says a task sleeps in
//! [`reserve`](OutputWindow::reserve) until the window is positive or
//! aborted:
//!
//! - the waiter stores its waker (under a small lock that only waiting and
//!   waking take), then sets `WAITING` with a CAS against the word it found
//!   empty: an `increase` in between fails the CAS and the waiter looks
//!   again, so a wake is never lost;
//! - `increase`, `apply_initial_window_delta` and `abort` clear `WAITING`
//!   in the same CAS that makes the window usable, then take the waker
//!   under the lock (which the waiter held while it set the bit, so the
//!   waker is there) and wake it.
//!
//! One task may wait at a time (a stream's writer); a second waiter
//! replaces the first's waker.
//!
//! As in `input.rs`: every decision is made from a value read by an RMW
//! (linearizable, no error from a stale load, the line taken exclusive at
//! once), with AcqRel throughout; the waker itself is published by the lock.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use crate::error::FlowError;
use crate::output_state::{Aborted, OutputState};
use crate::primitive::{AtomicU64, Mutex, Ordering, lock};

/// The window field (bits 0..=31, an `i32`).
const WINDOW_MASK: u64 = u32::MAX as u64;
/// `abort` has happened.
const ABORTED: u64 = 1 << 32;
/// A task waits in `reserve` for the window to become usable.
const WAITING: u64 = 1 << 33;

fn unpack(word: u64) -> OutputState {
    OutputState { window: (word & WINDOW_MASK) as u32 as i32, aborted: word & ABORTED != 0 }
}

fn pack(state: OutputState) -> u64 {
    u64::from(state.window as u32) | if state.aborted { ABORTED } else { 0 }
}

/// Whether a waiting reservation can go on.
fn usable(state: OutputState) -> bool {
    state.window > 0 || state.aborted
}

/// A send window (what we may send the peer), lock-free: one packed
/// `AtomicU64`, every transition one CAS.
///
/// ```
/// use falconet_flow::OutputWindow;
///
/// let window = OutputWindow::new(100)?;
/// assert_eq!(window.try_reserve(64), Ok(64));
/// assert_eq!(window.try_reserve(64), Ok(36)); // a partial grant
/// window.apply_initial_window_delta(-50)?;    // SETTINGS shrank it
/// assert_eq!(window.available(), -50);
/// window.increase(1000)?;                     // WINDOW_UPDATE
/// assert_eq!(window.try_reserve(64), Ok(64));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OutputWindow {
    word: AtomicU64,
    /// The waiting task's waker; locked only to wait and to wake.
    waiter: Mutex<Option<Waker>>,
}

impl OutputWindow {
    /// A window of `initial` bytes.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(initial: u32) -> Result<Self, FlowError> {
        Ok(Self {
            word: AtomicU64::new(pack(OutputState::new(initial)?)),
            waiter: Mutex::new(None),
        })
    }

    /// Applies `rule` in one CAS, keeping `WAITING` unless the result makes
    /// the window usable; wakes the waiter then. A refusal changes nothing.
    #[inline]
    fn update<R, E>(&self, rule: impl Fn(&mut OutputState) -> Result<R, E>) -> Result<R, E> {
        loop {
            // An RMW, not a load: the latest value, and the line exclusive.
            let current = self.word.fetch_add(0, Ordering::AcqRel);
            let mut state = unpack(current);
            let result = rule(&mut state);
            let waiting = current & WAITING != 0;
            let wake = result.is_ok() && waiting && usable(state);
            let new = pack(state) | if waiting && !wake { WAITING } else { 0 };
            if result.is_err() || new == current {
                return result;
            }
            if self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                if wake {
                    self.wake();
                }
                return result;
            }
        }
    }

    #[cold]
    fn wake(&self) {
        let waker = lock(&self.waiter).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Takes up to `max` bytes of credit now: `max` if the window allows,
    /// less if not (a partial grant), 0 when it is empty or negative.
    ///
    /// # Errors
    /// [`Aborted`] once the window is aborted.
    #[inline]
    pub fn try_reserve(&self, max: u32) -> Result<u32, Aborted> {
        self.update(|state| state.reserve(max))
    }

    /// Waits until some credit is available and takes up to `max` bytes
    /// of it (at least 1 when `max > 0`).
    ///
    /// # Errors
    /// [`Aborted`] when the window is aborted, also while waiting.
    pub fn reserve(&self, max: u32) -> Reserve<'_> {
        Reserve { window: self, max }
    }

    /// A WINDOW_UPDATE of `n` arrived (RFC 9113 6.9); wakes a waiting
    /// [`reserve`](Self::reserve).
    ///
    /// # Errors
    /// [`FlowError::ZeroIncrement`] (PROTOCOL_ERROR) for 0,
    /// [`FlowError::WindowOverflow`] (FLOW_CONTROL_ERROR) past 2^31-1.
    pub fn increase(&self, n: u32) -> Result<(), FlowError> {
        self.update(|state| state.increase(n))
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE changed by `delta` (RFC 9113 6.9.2):
    /// the window moves by it and may go negative.
    ///
    /// # Errors
    /// [`FlowError::WindowOverflow`] (FLOW_CONTROL_ERROR) past 2^31-1,
    /// [`FlowError::WindowUnderflow`] below -2^31.
    pub fn apply_initial_window_delta(&self, delta: i32) -> Result<(), FlowError> {
        self.update(|state| state.apply_delta(delta))
    }

    /// Aborts the window: every reservation fails from now on, a waiting
    /// one too.
    pub fn abort(&self) {
        let _ = self.update(|state| {
            state.abort();
            Ok::<(), Aborted>(())
        });
    }

    /// The whole state, as one snapshot.
    pub fn state(&self) -> OutputState {
        unpack(self.word.load(Ordering::Acquire))
    }

    /// The bytes we may send (negative after a shrinking SETTINGS change).
    pub fn available(&self) -> i32 {
        self.state().window
    }

    /// One poll of a waiting reservation.
    fn poll_reserve(&self, cx: &mut Context<'_>, max: u32) -> Poll<Result<u32, Aborted>> {
        loop {
            // An RMW, not a load: see `update`.
            let current = self.word.fetch_add(0, Ordering::AcqRel);
            let mut state = unpack(current);
            if max == 0 || usable(state) {
                let result = state.reserve(max);
                // The only waiter is this task: done waiting.
                let new = if result.is_ok() { pack(state) } else { current & !WAITING };
                if new == current
                    || self
                        .word
                        .compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                {
                    return Poll::Ready(result);
                }
                continue;
            }
            // Nothing to take: leave the waker, then sleep only if the word
            // is still the one we judged empty. The lock is held across the
            // CAS, so a waker that sees WAITING finds the waker in place.
            let mut waiter = lock(&self.waiter);
            if !waiter.as_ref().is_some_and(|old| old.will_wake(cx.waker())) {
                *waiter = Some(cx.waker().clone());
            }
            if self
                .word
                .compare_exchange(current, current | WAITING, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Poll::Pending;
            }
        }
    }
}

/// The future of [`OutputWindow::reserve`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Reserve<'a> {
    window: &'a OutputWindow,
    max: u32,
}

impl Future for Reserve<'_> {
    type Output = Result<u32, Aborted>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.window.poll_reserve(cx, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_negative_windows_and_keeps_flags_apart() {
        for window in [i32::MIN, -1, 0, 1, i32::MAX] {
            for aborted in [false, true] {
                let state = OutputState { window, aborted };
                assert_eq!(unpack(pack(state)), state);
                assert_eq!(pack(state) & WAITING, 0);
            }
        }
        assert_eq!(WINDOW_MASK & (ABORTED | WAITING), 0);
    }
}
