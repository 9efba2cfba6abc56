//! The pinned read path: lookups that write nothing, under an epoch guard.
//!
//! A counted lookup ([`Registry::get`]) adds a reference to the entry's
//! state word and drops it again: two writes to a line that any other
//! thread looking the same connection up also writes. A pinned lookup
//! ([`Pinned::get`]) only loads that word: the entry stays valid because
//! the thread is pinned (crossbeam-epoch), and a removal defers the end of
//! the value until no pinned thread can still be reading it.
//!
//! # States
//!
//! The registry is in one of two modes, and moves from the first to the
//! second once, at its first [`Registry::pin`]:
//!
//! ```text
//!   COUNTING ──first pin()──> DEFERRING
//! ```
//!
//! - **COUNTING**: a removal ends (the value dropped or moved out, the slot
//!   vacated) the moment its last `Ref` goes, as `slot.rs` draws it.
//! - **DEFERRING**: the same, except that "ends" is deferred through the
//!   epoch: `discard`, `sweep` and the last `Ref` of a discarded entry
//!   hand the end to a closure that runs once every thread pinned at that
//!   moment has unpinned (`epoch.rs`); `remove`, which returns the value,
//!   first waits for that itself (unless its own thread is pinned, which it
//!   cannot wait for: then it removes as `discard` does and returns
//!   `None`, as it does for an entry its thread holds a `Ref` to).
//!
//! What deferring means for a value, in detail:
//!
//! - **When it drops.** Its end is queued in the removing thread's
//!   crossbeam bag (up to 64 ends), then in crossbeam's global queue, and
//!   runs when some thread collects (every 128th pin, or a flush) after
//!   every thread pinned at the removal has unpinned. So a value can wait
//!   for the next collection, not only for readers; [`Pinned::flush`]
//!   hurries it along.
//! - **Where it drops.** On the collecting thread, inside that thread's
//!   pin (crossbeam collects while pinned): a `Drop` that blocks holds
//!   back the epoch, and with it every `remove` and every deferred drop in
//!   the process. A `Drop` that panics there is contained: the slot is
//!   vacated, the panic hook reports it, and nothing else is lost (an
//!   escaping panic would skip the rest of crossbeam's batch).
//! - **The registry's own drop** drops the live values at once; the
//!   removed ones whose ends are still queued keep the shards (an `Arc`)
//!   until their ends have run.
//! - **Allocation.** Queuing ends costs crossbeam's allocations (a queue
//!   node per flushed bag, and `remove`'s wait flushes one per call), so
//!   churn allocates once a registry is pinned; lookups, pinned or
//!   counted, never do.
//!
//! A pinned lookup reads the entry's state word and returns the value only
//! if the word is live with the id's generation. So it reads a value only
//! while the entry is live or its end is deferred behind the lookup's own
//! guard; the slot is vacated, reused or trimmed only after that end.
//!
//! # The mode switch, and why it needs sequential consistency
//!
//! A removal decides whether to defer by loading the mode *after* marking
//! the entry removed; `pin` sets the mode *before* it pins and loads any
//! state word. Either the removal sees DEFERRING, or the lookup sees the
//! mark (the store-buffer pattern): the mark's compare-and-swap and the
//! mode's load are `SeqCst`, and a pin is a `SeqCst` fence between the
//! mode's store (or `Acquire` load) and the lookups (crossbeam's pin is one
//! on most targets, and a `SeqCst` compare-and-swap on x86, which crossbeam
//! relies on in the same way; a nested pin issues the fence itself). loom
//! treats `SeqCst` as `AcqRel`, so the models switch the mode before their
//! threads start and check the rest.

use crate::epoch::{self, Guard};
use crate::id::ConnectionId;
use crate::primitive::{self, AtomicBool, Ordering, fence};
use crate::registry::Registry;
use crate::slot;
use std::fmt;

/// A thread pinned to a registry's epoch: made by [`Registry::pin`], once
/// per batch of events. Lookups through it ([`get`](Self::get)) write
/// nothing and return plain references that live as long as it does.
///
/// Not `Send`: a pin belongs to its thread. Hold it for a batch, not for
/// long: while any thread is pinned, removed values wait to be dropped, and
/// [`Registry::remove`] on another thread waits for this pin to drop.
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// let registry = falconet_registry::Registry::new();
/// registry.insert(1u32).unwrap();
/// send(registry.pin()); // a pin stays on its thread
/// ```
///
/// Only registries of `'static` values can be pinned (a deferred drop may
/// run after the registry is gone):
///
/// ```compile_fail
/// let name = String::from("borrowed");
/// let registry = falconet_registry::Registry::new();
/// registry.insert(&name).unwrap();
/// drop(registry.pin());
/// ```
pub struct Pinned<'a, T> {
    /// Under loom, every read stays tracked until the pin drops (declared
    /// first: they end before the guard).
    #[cfg(falconet_registry_loom)]
    reads: std::cell::RefCell<Vec<crate::primitive::ConstPtr<std::mem::MaybeUninit<T>>>>,
    registry: &'a Registry<T>,
    guard: Guard,
}

impl<'a, T> Pinned<'a, T> {
    /// Pins the calling thread (see the module docs for the order).
    pub(crate) fn new(registry: &'a Registry<T>, deferring: &AtomicBool) -> Self {
        // Acquire: a mode set by another thread's pin happens before our
        // fence below.
        if !deferring.load(Ordering::Acquire) {
            deferring.store(true, Ordering::SeqCst);
        }
        let nested = epoch::is_pinned();
        let guard = epoch::pin();
        if nested {
            // An outer pin's fence came before the mode was read: the store
            // (or load) of the mode must precede every lookup below.
            fence(Ordering::SeqCst);
        }
        Self {
            #[cfg(falconet_registry_loom)]
            reads: std::cell::RefCell::new(Vec::new()),
            registry,
            guard,
        }
    }

    /// Looks `id` up without writing anything: a bounds check, a pointer
    /// load and a load of the entry's state word. `None` if `id` is not
    /// live (removed, never issued, a stale id of a reused slot).
    ///
    /// The reference stays valid while this pin lives, even if the entry
    /// is removed meanwhile (its value is then dropped after the pin ends).
    #[inline]
    pub fn get(&self, id: ConnectionId) -> Option<&T> {
        let (shard, state) = self.registry.locate(id)?;
        // Acquire: pairs with the insert's Release store of OCCUPIED, so
        // the value is initialised.
        if !slot::is_live(state.load(Ordering::Acquire), id.generation()) {
            return None;
        }
        // Live, so reserved, so its values are allocated; and its end (drop
        // or move, then vacate) is deferred until our guard drops (module
        // docs), so it stays initialised and in place while `self` lives.
        // SAFETY: as just said, the slot is reserved while `self` lives.
        let cell = unsafe { shard.value(id.slot()) }.get();
        Some(self.keep(cell))
    }

    /// The value behind `cell`, for as long as the pin lives.
    #[cfg(not(falconet_registry_loom))]
    #[inline]
    fn keep(&self, cell: primitive::ConstPtr<std::mem::MaybeUninit<T>>) -> &T {
        // SAFETY: see `get`: initialised and in place while `self` lives.
        unsafe { cell.into_ref().assume_init_ref() }
    }

    /// The value behind `cell`; loom tracks the read until the pin drops.
    #[cfg(falconet_registry_loom)]
    fn keep(&self, cell: primitive::ConstPtr<std::mem::MaybeUninit<T>>) -> &T {
        // SAFETY: see `get`: initialised and in place while `self` lives,
        // and `cell`, which loom tracks, lives in `reads` as long.
        let value: *const T = unsafe { cell.deref().assume_init_ref() };
        self.reads.borrow_mut().push(cell);
        // SAFETY: as above.
        unsafe { &*value }
    }

    /// Hands the values this thread removed to the epoch's collector now,
    /// and drops those no pinned thread can still see, instead of when
    /// this thread's batch of deferred drops fills (crossbeam keeps up to 64
    /// per thread). Call it after a batch that closed connections whose
    /// values own resources (a socket, a buffer) that should go back soon.
    pub fn flush(&self) {
        self.guard.flush();
    }
}

impl<T> fmt::Debug for Pinned<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pinned").finish_non_exhaustive()
    }
}

/// Runs `end` once no thread pinned now can still read what it ends.
///
/// # Safety
///
/// `end` may run on any thread, at any later time (even after the
/// registry drops): it must own or share (`Arc`) everything it touches.
pub(crate) unsafe fn defer(end: impl FnOnce()) {
    let guard = epoch::pin();
    // SAFETY: the caller's contract.
    unsafe { guard.defer_unchecked(end) };
}

/// Waits until no thread pinned now can still be reading a value the
/// caller marked removed. `false` (at once) if this thread is pinned: it
/// would wait for itself.
pub(crate) fn wait_for_readers() -> bool {
    if epoch::is_pinned() {
        return false;
    }
    // Shared with the closure, not borrowed by it: the wait below collects,
    // which runs other values' drops, and if one of those unwinds out of
    // here the closure must still have its flag.
    let passed = std::sync::Arc::new(AtomicBool::new(false));
    {
        let guard = epoch::pin();
        let flag = std::sync::Arc::clone(&passed);
        // Release: pairs with the Acquire load below; every reader the
        // epoch waited for is done before we move the value out.
        // SAFETY: the closure owns what it touches.
        unsafe { guard.defer_unchecked(move || flag.store(true, Ordering::Release)) };
        guard.flush();
    }
    let mut round = 0;
    while !passed.load(Ordering::Acquire) {
        primitive::wait_a_little(round);
        round = round.saturating_add(1);
        // Unpinned again at once: helps the epoch along and collects.
        epoch::pin().flush();
    }
    true
}
