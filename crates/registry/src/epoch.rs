//! The epoch behind the pinned read path ([`Registry::pin`](crate::Registry::pin)):
//! crossbeam-epoch's default collector, or, under loom, a model of the one
//! guarantee the registry takes from it.
//!
//! # The guarantee
//!
//! A closure deferred by a thread that is pinned runs only after every
//! guard that was live when it was deferred has dropped. A pinned lookup
//! reads a value only under a guard, and a removal defers the value's end
//! (its drop, or its move out of `remove`) until after it has marked the
//! entry removed: so no lookup that could have seen the entry live is still
//! reading when the value ends, and any lookup pinned later sees the mark.
//!
//! # Under loom
//!
//! loom cannot run crossbeam-epoch's default collector (crossbeam's own loom
//! build has none), so the models use this module's shim instead, which
//! keeps the guarantee in its plainest form: one count of pinned threads
//! and one list of deferred closures under one lock; a closure runs when
//! the count falls to zero. That is stricter than an epoch (which runs a
//! closure once every thread *pinned before it* has moved on, not once
//! nobody is pinned), so it admits fewer schedules; the models check the
//! registry's side of the protocol (mark, then defer; read only what a
//! guard covers), not crossbeam's epoch advance, which crossbeam's own
//! loom models check. The shim runs closures after unpinning, never while
//! the collecting thread is pinned or before other threads unpin, so what
//! a deferred drop does inside crossbeam's collection (block, panic, run
//! inside another thread's `remove`) is left to the real-thread tests of
//! `tests/pinned.rs`.

#[cfg(not(falconet_registry_loom))]
pub(crate) use crossbeam_epoch::{Guard, is_pinned, pin};

#[cfg(falconet_registry_loom)]
pub(crate) use shim::{Guard, is_pinned, pin};

#[cfg(falconet_registry_loom)]
mod shim {
    use std::cell::Cell;
    use std::marker::PhantomData;

    use loom::sync::Mutex;

    /// A deferred closure, its lifetime and `Send` erased as
    /// crossbeam's `defer_unchecked` erases them.
    struct Deferred(Box<dyn FnOnce()>);

    // SAFETY: as `Guard::defer_unchecked`: the caller vouches for running
    // the closure on another thread.
    unsafe impl Send for Deferred {}

    struct Collector {
        /// Threads with at least one live guard.
        pinned: usize,
        garbage: Vec<Deferred>,
    }

    loom::lazy_static! {
        static ref COLLECTOR: Mutex<Collector> =
            Mutex::new(Collector { pinned: 0, garbage: Vec::new() });
    }

    loom::thread_local! {
        /// This thread's live guards.
        static DEPTH: Cell<usize> = Cell::new(0);
    }

    /// A pinned thread's guard: not `Send`, as crossbeam's is not.
    pub(crate) struct Guard {
        _not_send: PhantomData<*const ()>,
    }

    pub(crate) fn pin() -> Guard {
        if DEPTH.with(|depth| depth.replace(depth.get() + 1)) == 0 {
            COLLECTOR.lock().unwrap().pinned += 1;
        }
        Guard { _not_send: PhantomData }
    }

    pub(crate) fn is_pinned() -> bool {
        DEPTH.with(|depth| depth.get() > 0)
    }

    impl Guard {
        /// Runs `f` once no thread is pinned.
        ///
        /// # Safety
        ///
        /// As crossbeam's: `f` may run on any thread, after the caller's
        /// borrows have ended, unless the caller waits for it.
        pub(crate) unsafe fn defer_unchecked<F: FnOnce() -> R, R>(&self, f: F) {
            let boxed: Box<dyn FnOnce() + '_> = Box::new(move || drop(f()));
            // SAFETY: the caller's contract (lifetime erasure only).
            let boxed: Box<dyn FnOnce() + 'static> = unsafe { std::mem::transmute(boxed) };
            COLLECTOR.lock().unwrap().garbage.push(Deferred(boxed));
        }

        /// Nothing to push: the shim has one list.
        pub(crate) fn flush(&self) {}
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            if DEPTH.with(|depth| depth.replace(depth.get() - 1)) != 1 {
                return;
            }
            let garbage = {
                let mut collector = COLLECTOR.lock().unwrap();
                collector.pinned -= 1;
                if collector.pinned == 0 {
                    std::mem::take(&mut collector.garbage)
                } else {
                    Vec::new()
                }
            };
            for deferred in garbage {
                (deferred.0)();
            }
        }
    }
}
