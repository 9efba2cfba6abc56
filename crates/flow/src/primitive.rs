//! The one place that chooses between `std` and loom: building with
//! `RUSTFLAGS="--cfg falconet_flow_loom"` runs the same code under loom.

#[cfg(falconet_flow_loom)]
pub(crate) use loom::sync::{
    Mutex,
    atomic::{AtomicBool, AtomicU64, Ordering},
};
#[cfg(not(falconet_flow_loom))]
pub(crate) use std::sync::{
    Mutex,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// Locks a mutex, ignoring poison: nothing panics while holding one.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> impl core::ops::DerefMut<Target = T> + '_ {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}
