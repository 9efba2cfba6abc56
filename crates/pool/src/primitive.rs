//! The one place that chooses between `std` and loom.
//!
//! Everything in the crate takes its atomics, `UnsafeCell`, `Mutex` and
//! `thread_local!` from here, never from `std` directly, so that building with
//! `RUSTFLAGS="--cfg falconet_pool_loom"` runs the same code under the loom
//! model checker (the pattern of `crossbeam_loom` and tokio's `crate::loom`).

#[cfg(falconet_pool_loom)]
pub(crate) use loom::{
    sync::Mutex,
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    thread_local,
};
#[cfg(not(falconet_pool_loom))]
pub(crate) use std::{
    sync::Mutex,
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    thread_local,
};

/// Locks a mutex, ignoring poison: the pool never panics while holding one,
/// and a poisoned slab table is still a consistent slab table.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// `std::cell::UnsafeCell` with loom's closure API, so loom can check every
/// access against the happens-before order of the other threads.
#[cfg(not(falconet_pool_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(falconet_pool_loom))]
impl<T> UnsafeCell<T> {
    #[cfg(test)]
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared pointer to the contents.
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with an exclusive pointer to the contents.
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(falconet_pool_loom)]
pub(crate) use loom::cell::UnsafeCell;
