//! The one place that chooses between `std` and loom.
//!
//! Everything in the crate takes its atomics, `Arc`, `UnsafeCell` and thread
//! from here (thread parking is in `park.rs`), so that `RUSTFLAGS="--cfg falconet_pipe_loom"` runs the
//! same code under the loom model checker.

#[cfg(falconet_pipe_loom)]
pub(crate) use loom::{
    sync::Arc,
    sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering},
};
#[cfg(not(falconet_pipe_loom))]
pub(crate) use std::{
    sync::Arc,
    sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering},
};

/// `std::cell::UnsafeCell` with loom's closure API, so loom can check every
/// access against the happens-before order of the other threads.
#[cfg(not(falconet_pipe_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(falconet_pipe_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared pointer to the contents.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with an exclusive pointer to the contents.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(falconet_pipe_loom)]
pub(crate) use loom::cell::UnsafeCell;
