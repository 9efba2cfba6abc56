//! One side's waker slot: a register/wake hand-off without a lock.
//!
//! The pipe decides *whether* to wake from its words (`READER_WAITING`,
//! `WRITER_WAITING`); this slot only moves the `Waker` itself between the
//! side that sleeps (one registrant at a time: the writer, or the reader
//! that owns the read) and whoever wakes it (possibly two at once: the
//! writer and a conflicting reader both wake a pending read).
//!
//! ```text
//!             register: CAS IDLE -> REGISTERING, store, CAS back to IDLE
//!   IDLE <------------------------------------------------------------+
//!    |  wake: fetch_or WAKING; if it was IDLE, take, clear WAKING      |
//!    +--> WAKING ------------------------------------------------------+
//! ```
//!
//! A wake that lands during a registration sets `WAKING` and leaves; the
//! registrant finds the bit when it tries to return to `IDLE` and wakes the
//! new waker itself. A registration that lands during a wake finds `WAKING`
//! and wakes its own waker at once (the task polls again and re-checks).
//! This is the protocol of `futures::task::AtomicWaker`, written for loom.

use core::task::Waker;

use crate::primitive::{AtomicUsize, Ordering, UnsafeCell};

/// Nobody is registering or waking.
const IDLE: usize = 0;
/// The registrant is writing the slot.
const REGISTERING: usize = 0b01;
/// A waker is taking the slot.
const WAKING: usize = 0b10;

#[doc(hidden)]
pub struct WakerSlot {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the slot is only written by whoever moved `state` out of `IDLE`,
// which excludes every other access; `Waker` is `Send + Sync`.
unsafe impl Send for WakerSlot {}
// SAFETY: as above.
unsafe impl Sync for WakerSlot {}

impl WakerSlot {
    #[doc(hidden)]
    pub fn new() -> Self {
        Self { state: AtomicUsize::new(IDLE), waker: UnsafeCell::new(None) }
    }

    /// Stores `waker` so that every `wake` ordered after this call wakes it.
    /// One registrant at a time (the caller guarantees it).
    #[doc(hidden)]
    pub fn register(&self, waker: &Waker) {
        // Acquire pairs with the Release that ended the last wake or
        // registration: the slot's previous writes happen before ours.
        match self.state.compare_exchange(IDLE, REGISTERING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                self.waker.with_mut(|slot| {
                    // SAFETY: `REGISTERING` excludes every other access.
                    let slot = unsafe { &mut *slot };
                    match slot {
                        Some(old) if old.will_wake(waker) => {}
                        _ => *slot = Some(waker.clone()),
                    }
                });
                // AcqRel: Release publishes the waker to the next taker;
                // Acquire (on failure) orders a concurrent wake before us.
                if self
                    .state
                    .compare_exchange(IDLE | REGISTERING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // A wake arrived while we registered and left the slot to
                    // us: take the waker back and wake it ourselves.
                    let taken = self.waker.with_mut(|slot| {
                        // SAFETY: `REGISTERING` is still set: we own the slot.
                        unsafe { (*slot).take() }
                    });
                    // Release: the slot's write happens before the next owner.
                    self.state.store(IDLE, Ordering::Release);
                    if let Some(waker) = taken {
                        waker.wake();
                    }
                }
            }
            // A wake is in progress: it may have missed our waker, so wake
            // it now; the task polls again and re-checks the pipe's state.
            Err(_) => {
                // Until the waking thread finishes, every re-poll lands here
                // again: a spin. On real threads the waker runs on its own
                // core; loom must be told to schedule it. (Yield before the
                // wake: loom's yield drops a pending unpark.)
                #[cfg(falconet_pipe_loom)]
                loom::thread::yield_now();
                waker.wake_by_ref();
            }
        }
    }

    /// Wakes the registered waker, if any, and empties the slot.
    #[doc(hidden)]
    pub fn wake(&self) {
        // AcqRel: Acquire sees the registrant's store; Release is for the
        // registrant that finds WAKING.
        if self.state.fetch_or(WAKING, Ordering::AcqRel) == IDLE {
            let taken = self.waker.with_mut(|slot| {
                // SAFETY: we moved the state out of IDLE: we own the slot.
                unsafe { (*slot).take() }
            });
            // Release: our take happens before the next registration.
            self.state.fetch_and(!WAKING, Ordering::Release);
            if let Some(waker) = taken {
                waker.wake();
            }
        }
    }
}
