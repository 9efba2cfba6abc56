//! The one place that chooses between `std` and loom.
//!
//! Everything in the crate takes its atomics, cells, lock and spin hint from
//! here, so that `RUSTFLAGS="--cfg falconet_registry_loom"` runs the same
//! code under the loom model checker.

#[cfg(falconet_registry_loom)]
pub(crate) use loom::{
    cell::{ConstPtr, UnsafeCell},
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence},
    thread_local,
};
#[cfg(not(falconet_registry_loom))]
pub(crate) use std::{
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence},
    thread_local,
};

/// The shard lock: parking_lot's in production, loom's in the models.
#[cfg(not(falconet_registry_loom))]
pub(crate) type Mutex<T> = parking_lot::Mutex<T>;

/// The shard lock: parking_lot's in production, loom's in the models.
#[cfg(falconet_registry_loom)]
#[derive(Debug)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(falconet_registry_loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(loom::sync::Mutex::new(value))
    }

    /// parking_lot's signature: no poisoning.
    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Waits a little for another thread (a lookup to drop its `Ref`).
#[cfg(not(falconet_registry_loom))]
pub(crate) fn wait_a_little(round: u32) {
    if round < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Waits a little for another thread: under loom, always a yield, so the
/// model schedules the thread being waited for.
#[cfg(falconet_registry_loom)]
pub(crate) fn wait_a_little(_round: u32) {
    loom::thread::yield_now();
}

/// `std::cell::UnsafeCell` with loom's pointer API, so loom can check every
/// access against the happens-before order of the other threads (a `Ref`
/// holds a [`ConstPtr`] for as long as it lives).
#[cfg(not(falconet_registry_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(falconet_registry_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// A shared pointer to the contents.
    #[inline]
    pub(crate) fn get(&self) -> ConstPtr<T> {
        ConstPtr(self.0.get())
    }

    /// Runs `f` with an exclusive pointer to the contents.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A shared pointer into an [`UnsafeCell`] (loom tracks it while it lives).
#[cfg(not(falconet_registry_loom))]
#[derive(Debug)]
pub(crate) struct ConstPtr<T>(*const T);

#[cfg(not(falconet_registry_loom))]
impl<T> ConstPtr<T> {
    /// # Safety
    ///
    /// No `&mut` to the contents may exist while the returned reference lives.
    #[inline]
    pub(crate) unsafe fn deref(&self) -> &T {
        // SAFETY: the caller's contract.
        unsafe { &*self.0 }
    }

    /// The contents, for as long as the caller needs them (loom's
    /// `ConstPtr` has no such method: under loom, keep the pointer alive
    /// instead, so loom goes on tracking the read).
    ///
    /// # Safety
    ///
    /// No `&mut` to the contents may exist, and the contents must stay in
    /// place, while the returned reference lives.
    #[inline]
    pub(crate) unsafe fn into_ref<'a>(self) -> &'a T {
        // SAFETY: the caller's contract.
        unsafe { &*self.0 }
    }
}
