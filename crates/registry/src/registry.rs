//! The registry: shards of slots, a bound, and the operations.

use std::fmt;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::epoch;
use crate::held;
use crate::id::{ConnectionId, PAGES, SLOTS_PER_SHARD, slot_of};
use crate::pinned::{self, Pinned};
use crate::primitive::{AtomicBool, AtomicU64, AtomicUsize, ConstPtr, Ordering};
use crate::shard::Shard;
use crate::slot::{self, Marked};
use crate::{Full, Options, OptionsError};

/// A map from [`ConnectionId`] to a connection's state, shared by the
/// threads of a server.
///
/// - [`insert`](Self::insert) returns a fresh id (or [`Full`] at
///   `max_connections`), [`get`](Self::get) looks it up without a lock,
///   [`remove`](Self::remove) and [`discard`](Self::discard) take it out,
///   [`sweep`](Self::sweep) visits every entry shard by shard (idle
///   timeouts), [`drain`](Self::drain) empties it at shutdown.
/// - A [`Ref`] from `get` keeps its entry's value alive, and only that:
///   while another thread holds one, [`remove`](Self::remove) of that id
///   (and `drain` reaching it) waits for it. Nothing else ever waits for a
///   `Ref`, and nothing waits for a `Ref` of its own thread: a thread that
///   removes an entry it holds removes it as [`discard`](Self::discard)
///   does (see `remove`). So a thread holding `Ref`s may call anything.
/// - No user code runs under a lock: the shard lock (taken by `insert` and
///   at the end of a removal) covers a free-list push or pop; values are
///   moved in, dropped and handed to `sweep`'s closure with no lock held.
///   Once the registry has been [pinned](Self::pin), removed values are
///   dropped by the epoch's collector, on whichever thread collects, while
///   it is pinned: a value's `Drop` must not block (see [`Pinned`]).
pub struct Registry<T> {
    /// Shared with the removals deferred by the pinned read path
    /// (`pinned.rs`), which may end after the registry drops.
    shards: Arc<[CachePadded<Shard<T>>]>,
    /// Live entries: inserted and not yet marked removed.
    len: CachePadded<AtomicUsize>,
    max_connections: usize,
    /// Set by the first [`pin`](Self::pin), never cleared: from then on the
    /// end of a removal waits for the epoch (`pinned.rs`).
    deferring: AtomicBool,
}

// SAFETY: values are moved in and out and dropped on whichever thread
// inserts, removes or drops the last `Ref` (T: Send), and shared between the
// threads holding `Ref`s (T: Sync). All shared state is atomic or locked.
unsafe impl<T: Send + Sync> Send for Registry<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Registry<T> {}

/// A looked-up entry. Dereferences to the value, which stays valid while the
/// `Ref` lives, even if the entry is removed meanwhile (the removal then
/// ends when the `Ref` drops).
///
/// Holding a `Ref` makes [`Registry::remove`] of the same id on *another*
/// thread wait for it; see [`Registry`]. A `Ref` is `Sync` but not `Send`:
/// it is dropped on the thread that looked it up, which is how a removal
/// knows that a `Ref` is its own thread's and must not be waited for.
/// One entry has at most 2^29 - 1 `Ref`s at once ([`Registry::get`]
/// aborts past it).
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// let registry = falconet_registry::Registry::new();
/// let id = registry.insert(1u32).unwrap();
/// send(registry.get(id).unwrap()); // a `Ref` stays on its thread
/// ```
pub struct Ref<'a, T> {
    registry: &'a Registry<T>,
    shard: &'a Shard<T>,
    state: &'a AtomicU64,
    id: ConnectionId,
    value: ManuallyDrop<ConstPtr<MaybeUninit<T>>>,
}

// Not `Send` (its raw pointers make it so): the thread that looked it up
// recorded it in its held list (`held.rs`) and must be the one to drop it.
// SAFETY: shared, it only gives `&T`.
unsafe impl<T: Sync> Sync for Ref<'_, T> {}

impl<T> Registry<T> {
    /// An empty registry with [`Options::new`].
    pub fn new() -> Self {
        Self::with_options(Options::new()).expect("the default options are valid")
    }

    /// An empty registry. Allocates nothing until the first insert.
    ///
    /// # Errors
    ///
    /// [`OptionsError`] if the shard count is not a power of two from 1 to
    /// 256, or `max_connections` is 0 or more than the shards can address.
    pub fn with_options(options: Options) -> Result<Self, OptionsError> {
        let (shards, max_connections) = options.validate()?;
        // A number no other registry of this process has (`held.rs`).
        static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let uid = NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Self {
            shards: (0..shards).map(|_| CachePadded::new(Shard::new(uid))).collect(),
            len: CachePadded::new(AtomicUsize::new(0)),
            max_connections,
            deferring: AtomicBool::new(false),
        })
    }

    /// Registers `value` and returns its id.
    ///
    /// # Errors
    ///
    /// [`Full`], holding `value`, when the registry already holds
    /// `max_connections` entries.
    pub fn insert(&self, value: T) -> Result<ConnectionId, Full<T>> {
        match self.vacant_entry() {
            Ok(entry) => Ok(entry.insert(value)),
            Err(full) => Err(Full::new(value, full.max_connections())),
        }
    }

    /// Reserves a slot and tells its id before the value exists, for a
    /// value that holds its own id (slab's `vacant_entry`):
    ///
    /// ```
    /// use falconet_registry::Registry;
    ///
    /// struct Connection { id: u64, peer: &'static str }
    ///
    /// let registry = Registry::new();
    /// let entry = registry.vacant_entry()?;
    /// let id = entry.id();
    /// entry.insert(Connection { id: id.as_u64(), peer: "10.0.0.1:40000" });
    /// assert_eq!(registry.get(id).unwrap().id, id.as_u64());
    /// # Ok::<(), falconet_registry::Full<()>>(())
    /// ```
    ///
    /// Until [`VacantEntry::insert`], the id finds nothing; dropped
    /// without an insert, the slot goes back and the id never finds
    /// anything. The reservation counts against `max_connections`.
    ///
    /// # Errors
    ///
    /// [`Full`] when the registry already holds `max_connections` entries
    /// (reservations included).
    pub fn vacant_entry(&self) -> Result<VacantEntry<'_, T>, Full<()>> {
        // The bound, exact under concurrency: count first, then place.
        let mut len = self.len.load(Ordering::Relaxed);
        loop {
            if len >= self.max_connections {
                return Err(Full::new((), self.max_connections));
            }
            match self.len.compare_exchange_weak(len, len + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => len = actual,
            }
        }
        let home = home_shard() & (self.shards.len() - 1);
        for step in 0..self.shards.len() {
            let index = (home + step) & (self.shards.len() - 1);
            let shard = &self.shards[index];
            if let Some((slot, generation)) = shard.reserve() {
                let id = ConnectionId::new(index, slot, generation);
                return Ok(VacantEntry { registry: self, shard, id });
            }
        }
        // Every slot is held, by entries and by removed entries that lookups
        // still reference.
        self.len.fetch_sub(1, Ordering::Relaxed);
        Err(Full::new((), self.max_connections))
    }

    /// Looks `id` up: no lock, no allocation, one compare-and-swap on the
    /// entry's own state word. `None` if `id` is not live: removed, never
    /// issued, or a stale id of a reused slot.
    ///
    /// # Aborts
    /// When one entry already has 2^29 - 1 `Ref`s at once (in practice,
    /// only `Ref`s leaked with `mem::forget` get there): the count cannot
    /// grow into the state word's flags, and no caller could recover, so
    /// the process aborts, as `Arc::clone` does past `isize::MAX`.
    #[inline]
    pub fn get(&self, id: ConnectionId) -> Option<Ref<'_, T>> {
        let (shard, state) = self.locate(id)?;
        if !slot::acquire(state, id.generation()) {
            return None;
        }
        // SAFETY: the CAS above added our reference.
        Some(unsafe { Ref::acquired(self, shard, state, id) })
    }

    /// Whether `id` is live right now.
    pub fn contains(&self, id: ConnectionId) -> bool {
        // Acquire pairs with the insert's Release store of `OCCUPIED` and
        // the remover's SeqCst marking (slot.rs, "Ordering"): a caller that
        // sees the id live sees its insert.
        self.locate(id)
            .is_some_and(|(_, state)| slot::is_live(state.load(Ordering::Acquire), id.generation()))
    }

    /// Removes `id` and returns its value. From the moment it starts, `get`
    /// of `id` finds nothing; if other threads' lookups still hold [`Ref`]s
    /// to the entry, it waits for them to drop (spinning, then yielding).
    ///
    /// If *this* thread holds a `Ref` to the entry (`if let Some(c) =
    /// registry.get(id) { registry.remove(id); }`, or a `sweep` closure
    /// removing the entry it visits), the value cannot be moved out while
    /// you borrow it, and waiting for your own `Ref` would never end: the
    /// entry is removed as [`discard`](Self::discard) removes it (lookups
    /// stop finding it now; the value is dropped when the last `Ref` lets
    /// go) and `remove` returns `None`.
    ///
    /// Once the registry has been [pinned](Self::pin), `remove` also waits
    /// until every thread pinned at the removal has unpinned (no pinned
    /// lookup can still read the value). A thread that is pinned itself
    /// (by [`pin`](Self::pin), or by any other crossbeam-epoch guard)
    /// cannot wait for its own pin: the entry is removed as `discard`
    /// removes it, and `remove` returns `None`.
    ///
    /// "This thread" is the OS thread: on a current-thread tokio runtime or
    /// a `LocalSet`, a task that keeps a `Ref` across an `.await` makes
    /// every other task's `remove` of that entry on the thread a discard.
    ///
    /// The wait blocks the thread, as a lock does: on an async runtime's
    /// worker, a `remove` that waits for a `Ref` another task keeps across
    /// an `.await` holds that worker until the task lets go, and for good
    /// if the task can only go on once that worker is free (a one-worker
    /// runtime whose timer or I/O it drives; `block_on` futures may hold a
    /// `Ref` across an `.await`, spawned ones cannot, `Ref` is not `Send`).
    /// In async code, drop `Ref`s before an `.await` (clone what you need
    /// out of the value) or remove with `discard`.
    ///
    /// Waiting means a lock order, as with two mutexes: if thread X holds
    /// a `Ref` to `a` and removes `b` while thread Y holds a `Ref` to `b`
    /// and removes `a`, each waits for the other for good. Drop your `Ref`s
    /// before removing another entry, or use [`discard`](Self::discard),
    /// which never waits.
    ///
    /// `None` if `id` is not live, if another removal of it won, or if this
    /// thread holds a `Ref` to it or is pinned (removed as above).
    pub fn remove(&self, id: ConnectionId) -> Option<T> {
        let (shard, state) = self.locate(id)?;
        if held::holds(key(shard, state)) {
            self.discard(id);
            return None;
        }
        let marked = slot::mark_removed(state, id.generation(), true)?;
        self.len.fetch_sub(1, Ordering::Relaxed);
        if self.deferring() && epoch::is_pinned() {
            // This thread is pinned and cannot wait for its own pin: removed
            // as `discard` removes it, before waiting for anyone's `Ref`
            // (whose holder may be waiting for this very pin).
            if slot::give_up_taking(state) {
                // SAFETY: we won the removal and no reference remains.
                unsafe { self.end_removal(id) };
            }
            return None;
        }
        if marked == Marked::Referenced {
            slot::wait_unreferenced(state);
        }
        if self.deferring() && !pinned::wait_for_readers() {
            // The first pin came meanwhile, and this thread is pinned (by
            // another crossbeam-epoch user): it cannot wait for itself.
            // SAFETY: we won the removal and no reference remains.
            unsafe { self.end_removal(id) };
            return None;
        }
        // SAFETY: we won the removal, no reference remains, and no pinned
        // lookup can still see the value (we waited, or nobody ever pinned).
        Some(unsafe { Self::finish_take(shard, id.slot(), state) })
    }

    /// Removes `id` without waiting: its value is dropped now, or by the
    /// last [`Ref`] to it (or, once the registry has been [pinned](Self::pin),
    /// after every thread pinned at that moment has unpinned). Returns
    /// whether `id` was live (and this call removed it). Safe to call while
    /// holding a `Ref` to the entry, or pinned.
    pub fn discard(&self, id: ConnectionId) -> bool {
        let Some((_, state)) = self.locate(id) else { return false };
        let Some(marked) = slot::mark_removed(state, id.generation(), false) else {
            return false;
        };
        self.len.fetch_sub(1, Ordering::Relaxed);
        if marked == Marked::Unreferenced {
            // SAFETY: we won the removal and no reference remains.
            unsafe { self.end_removal(id) };
        }
        true
    }

    /// Pins this thread for a batch of lookups that write nothing: see
    /// [`Pinned`]. Pin once per batch of events (a pin costs about as much
    /// as one counted [`get`](Self::get)), look up through it, and drop it
    /// before the thread blocks.
    ///
    /// ```
    /// use falconet_registry::Registry;
    ///
    /// let registry = Registry::new();
    /// let ids = [registry.insert(String::from("a"))?, registry.insert(String::from("b"))?];
    /// let pinned = registry.pin();
    /// let total: usize = ids.iter().filter_map(|&id| pinned.get(id)).map(String::len).sum();
    /// assert_eq!(total, 2);
    /// # Ok::<(), falconet_registry::Full<String>>(())
    /// ```
    ///
    /// The first pin changes how removals end, for the registry's life: a
    /// removed value is dropped once every thread pinned at the removal
    /// has unpinned, not the moment its last [`Ref`] goes, and
    /// [`remove`](Self::remove) waits for pinned threads as it waits for
    /// `Ref`s. `T: 'static`, because a deferred drop may run after the
    /// registry is gone (the shards live on until it has).
    pub fn pin(&self) -> Pinned<'_, T>
    where
        T: Send + 'static,
    {
        Pinned::new(self, &self.deferring)
    }

    /// Whether removals end through the epoch (`pinned.rs`). `SeqCst`:
    /// pairs with the removal's mark and the pin's fence.
    #[inline]
    fn deferring(&self) -> bool {
        self.deferring.load(Ordering::SeqCst)
    }

    /// Ends a removal: drops the value and vacates its slot, now, or
    /// through the epoch once the registry has been pinned.
    ///
    /// # Safety
    ///
    /// The caller won the removal (or dropped the last reference of a
    /// discarded entry) and no reference to the slot remains.
    unsafe fn end_removal(&self, id: ConnectionId) {
        if !self.deferring() {
            // SAFETY: the caller's contract.
            drop(unsafe { Self::take_removed(&self.shards, id) });
            return;
        }
        // The closure shares the shards: it may run after the registry
        // drops. Two words and an id: crossbeam stores it inline.
        let shards = Arc::clone(&self.shards);
        let end = move || {
            // SAFETY: the caller's contract, and every lookup that could
            // see the entry live has unpinned.
            let value = unsafe { Self::take_removed(&shards, id) };
            // The drop runs on whichever thread collects, inside crossbeam's
            // batch of deferred closures: a panic escaping here would skip
            // the rest of the batch (their values never dropped, their slots
            // never vacated) and surface in an unrelated caller. It stays
            // here; the panic hook has already reported it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(value)));
        };
        // SAFETY: `end` owns what it touches (`T: 'static`: a registry
        // that defers was pinned, which needs it).
        unsafe { pinned::defer(end) };
    }

    /// [`finish_take`](Self::finish_take) of a removed entry, found by id.
    ///
    /// # Safety
    ///
    /// As `finish_take`.
    unsafe fn take_removed(shards: &[CachePadded<Shard<T>>], id: ConnectionId) -> T {
        let shard = &shards[id.shard()];
        let state = shard.state(id.slot()).expect("a removed entry's page exists");
        // SAFETY: the caller's contract.
        unsafe { Self::finish_take(shard, id.slot(), state) }
    }

    /// The number of live entries, reservations included: a
    /// [`VacantEntry`] not yet inserted counts (as it does against
    /// `max_connections`) though its id finds nothing yet.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether there are no live entries (nor reservations).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bound on live entries.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Slots whose value memory is allocated, across all shards: grows with
    /// the entries, and comes back down by [`trim`](Self::trim) (which
    /// [`sweep`](Self::sweep) runs) after they leave.
    pub fn capacity(&self) -> usize {
        self.shards.iter().map(|shard| shard.allocated_slots()).sum()
    }

    /// Frees the value memory of every page (beyond each shard's first)
    /// whose slots are all vacant. Returns the number of pages freed.
    /// [`sweep`](Self::sweep) does this shard by shard.
    pub fn trim(&self) -> usize {
        self.shards.iter().map(|shard| shard.trim()).sum()
    }

    /// Visits every live entry, shard by shard, and removes (as
    /// [`discard`](Self::discard) does) those for which `keep` returns
    /// `false`. Returns how many it removed, then trims each shard.
    ///
    /// No lock is held while `keep` runs: the visited entry is held as a
    /// [`Ref`] is, so another thread's [`remove`](Self::remove) of it waits
    /// for `keep` to return, and nothing else waits at all. `keep` may call
    /// any method on any entry; a `remove` of the entry it visits removes
    /// it as [`discard`](Self::discard) does (the sweep holds it) and
    /// returns `None`, so return `false` instead. Entries inserted or
    /// removed during the sweep may or may not be visited.
    pub fn sweep(&self, mut keep: impl FnMut(ConnectionId, &T) -> bool) -> usize {
        self.visit(|id, value| keep(id, value), true)
    }

    /// Visits every live entry, shard by shard, as [`sweep`](Self::sweep)
    /// does (each held as a [`Ref`] while `f` runs, no lock), but removes
    /// nothing and does not trim: a census of the connections, or a pass
    /// that closes some by other means (a cancellation token in the value).
    pub fn for_each(&self, mut f: impl FnMut(ConnectionId, &T)) {
        self.visit(
            |id, value| {
                f(id, value);
                true
            },
            false,
        );
    }

    /// The walk of `sweep` and `for_each`: removes entries `keep` refuses;
    /// trims each shard after it when `trim`.
    fn visit(&self, mut keep: impl FnMut(ConnectionId, &T) -> bool, trim: bool) -> usize {
        let mut removed = 0;
        for (index, shard) in self.shards.iter().enumerate() {
            for page in 0..PAGES {
                // State pages are allocated in order and never freed.
                let Some(states) = shard.states(page) else { break };
                for (offset, state) in states.iter().enumerate() {
                    let generation = slot::generation(state.load(Ordering::Relaxed));
                    if !slot::acquire(state, generation) {
                        continue;
                    }
                    let id = ConnectionId::new(index, slot_of(page, offset), generation);
                    // SAFETY: the CAS above added our reference.
                    let entry = unsafe { Ref::acquired(self, shard, state, id) };
                    if !keep(id, &entry) && slot::mark_removed(state, generation, false).is_some() {
                        self.len.fetch_sub(1, Ordering::Relaxed);
                        removed += 1;
                    }
                    // If we marked it and held the last reference, this
                    // drop ends the removal.
                    drop(entry);
                }
            }
            if trim {
                shard.trim();
            }
        }
        removed
    }

    /// Removes every entry, shard by shard, handing out each id and value.
    /// Each entry is removed as [`remove`](Self::remove) does (it waits for
    /// other threads' `Ref`s to that entry, and for pinned threads once the
    /// registry has been pinned; one this thread holds is discarded, not
    /// handed out, and on a pinned thread every entry is discarded). Meant
    /// for shutdown, after inserts stop: entries inserted meanwhile may be
    /// missed.
    pub fn drain(&self) -> Drain<'_, T> {
        Drain { registry: self, shard: 0, slot: 0 }
    }

    /// The shard and state word `id` points at, if its page exists.
    #[inline]
    pub(crate) fn locate(&self, id: ConnectionId) -> Option<(&Shard<T>, &AtomicU64)> {
        let shard = self.shards.get(id.shard())?;
        if id.slot() >= SLOTS_PER_SHARD {
            return None;
        }
        Some((shard, shard.state(id.slot())?))
    }

    /// Moves the value out of a slot whose removal we won, and vacates it.
    ///
    /// # Safety
    ///
    /// The caller won the removal (or holds the last reference of a
    /// discarded entry) and no reference to the slot remains.
    unsafe fn finish_take(shard: &Shard<T>, slot: usize, state: &AtomicU64) -> T {
        // SAFETY: the caller's contract; the slot is still reserved.
        let value = unsafe { shard.value(slot).take() };
        shard.vacate(slot, state);
        value
    }
}

/// A reserved slot whose id is known before its value: made by
/// [`Registry::vacant_entry`]. Fill it with [`insert`](Self::insert);
/// dropped unfilled, the slot goes back (its id never finds anything).
pub struct VacantEntry<'a, T> {
    registry: &'a Registry<T>,
    shard: &'a Shard<T>,
    id: ConnectionId,
}

impl<T> VacantEntry<'_, T> {
    /// The id the value will have.
    pub fn id(&self) -> ConnectionId {
        self.id
    }

    /// Stores `value`, which lookups of [`id`](Self::id) find from now on.
    pub fn insert(self, value: T) -> ConnectionId {
        let this = ManuallyDrop::new(self);
        let (shard, slot) = (this.shard, this.id.slot());
        // SAFETY: we reserved the slot; its values stay allocated.
        let cell = unsafe { shard.value(slot) };
        // SAFETY: reserved by us and not yet published.
        unsafe { cell.write(value) };
        let state = shard.state(slot).expect("reserved slots have state words");
        // Release: pairs with a lookup's Acquire CAS (slot.rs).
        state.store(slot::occupied(this.id.generation()), Ordering::Release);
        this.id
    }
}

impl<T> Drop for VacantEntry<'_, T> {
    fn drop(&mut self) {
        let state = self.shard.state(self.id.slot()).expect("reserved slots have state words");
        // Never published: back on the free list with the next generation.
        self.shard.vacate(self.id.slot(), state);
        self.registry.len.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<T> fmt::Debug for VacantEntry<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VacantEntry").field("id", &self.id).finish_non_exhaustive()
    }
}

impl<T> Drop for Registry<T> {
    fn drop(&mut self) {
        // Deferred ends of removals (`pinned.rs`) may still share the
        // shards, keeping them after the registry: its live values must not
        // wait for those, so they are dropped here, as they would be with
        // the shards.
        if Arc::get_mut(&mut self.shards).is_none() {
            for shard in self.shards.iter() {
                shard.drop_live_values();
            }
        }
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Registry<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("len", &self.len())
            .field("max_connections", &self.max_connections)
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

impl<'a, T> Ref<'a, T> {
    /// Wraps a reference the caller added to `id`'s slot.
    ///
    /// # Safety
    ///
    /// The caller's `slot::acquire` of `state` with `id`'s generation
    /// succeeded; the `Ref` now owns that reference.
    unsafe fn acquired(
        registry: &'a Registry<T>,
        shard: &'a Shard<T>,
        state: &'a AtomicU64,
        id: ConnectionId,
    ) -> Self {
        // SAFETY: a referenced slot is reserved, so its values are allocated.
        let value = unsafe { shard.value(id.slot()) }.get();
        held::hold(key(shard, state));
        Ref { registry, shard, state, id, value: ManuallyDrop::new(value) }
    }

    /// The entry's id.
    pub fn id(&self) -> ConnectionId {
        self.id
    }
}

impl<T> std::ops::Deref for Ref<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: we hold a reference, so the value is initialised and
        // nobody moves or drops it until the last reference goes.
        unsafe { ConstPtr::deref(&self.value).assume_init_ref() }
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ref").field("id", &self.id).field("value", &**self).finish()
    }
}

impl<T> Drop for Ref<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropped once, here; we no longer read the value.
        unsafe { ManuallyDrop::drop(&mut self.value) };
        held::let_go(key(self.shard, self.state));
        if slot::release(self.state) {
            // SAFETY: we dropped the last reference of a discarded entry.
            unsafe { self.registry.end_removal(self.id) };
        }
    }
}

/// The iterator of [`Registry::drain`]: every entry's id and value.
pub struct Drain<'a, T> {
    registry: &'a Registry<T>,
    shard: usize,
    /// The next slot to look at, shard-wide.
    slot: usize,
}

impl<T> Iterator for Drain<'_, T> {
    type Item = (ConnectionId, T);

    fn next(&mut self) -> Option<(ConnectionId, T)> {
        while let Some(shard) = self.registry.shards.get(self.shard) {
            while self.slot < SLOTS_PER_SHARD {
                let slot = self.slot;
                // State pages are allocated in order: a missing one ends the shard.
                let Some(state) = shard.state(slot) else { break };
                self.slot += 1;
                let generation = slot::generation(state.load(Ordering::Relaxed));
                let id = ConnectionId::new(self.shard, slot, generation);
                if let Some(value) = self.registry.remove(id) {
                    return Some((id, value));
                }
            }
            shard.trim();
            self.shard += 1;
            self.slot = 0;
        }
        None
    }
}

impl<T> fmt::Debug for Drain<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Drain").field("shard", &self.shard).field("slot", &self.slot).finish()
    }
}

/// An entry's key in the held list (`held.rs`): its registry's number and
/// the address of its slot's state word.
#[inline]
fn key<T>(shard: &Shard<T>, state: &AtomicU64) -> held::Key {
    (shard.uid, core::ptr::from_ref(state).addr())
}

/// The shard this thread inserts into: threads are numbered in the order
/// they first insert, so up to `shards` threads each get a lock of their own.
#[cfg(not(falconet_registry_loom))]
fn home_shard() -> usize {
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    static NEXT: StdAtomicUsize = StdAtomicUsize::new(0);
    thread_local! {
        static HOME: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    HOME.with(|home| *home)
}

/// Under loom every thread starts at shard 0 (the models choose the shards).
#[cfg(falconet_registry_loom)]
fn home_shard() -> usize {
    0
}

#[cfg(all(test, not(falconet_registry_loom)))]
mod tests {
    use super::*;

    /// One shard, so every insert and reuse lands where the test looks.
    fn one_shard() -> Registry<u32> {
        Registry::with_options(Options::new().shards(1)).unwrap()
    }

    /// Fast-forwards vacant slot `slot` of shard 0 to `generation`, as
    /// that many insert/remove cycles would (2^32 of them take minutes).
    fn age(registry: &Registry<u32>, slot: usize, generation: u32) {
        let state = registry.shards[0].state(slot).unwrap();
        assert!(!slot::holds_value(state.load(Ordering::Relaxed)));
        state.store(slot::vacant(generation), Ordering::Relaxed);
    }

    #[test]
    fn a_slot_whose_generation_would_wrap_is_retired_not_reused() {
        let registry = one_shard();
        let first = registry.insert(0).unwrap();
        assert_eq!(first.generation(), 1);
        assert_eq!(registry.remove(first), Some(0));
        // The slot's last generation: 2^32 - 2 more cycles from here.
        age(&registry, first.slot(), u32::MAX);
        let last = registry.insert(1).unwrap();
        assert_eq!((last.slot(), last.generation()), (first.slot(), u32::MAX));
        assert_eq!(registry.remove(last), Some(1));
        // One more use would wrap to generation 1, and `first`, kept from
        // the start, would find it (the fd-reuse bug).
        let next = registry.insert(2).unwrap();
        assert!(registry.get(first).is_none(), "a stale id found a newer entry");
        assert!(registry.get(last).is_none());
        assert_ne!(next.slot(), first.slot(), "the slot is retired");
        // Many more inserts never hand it out again.
        let ids: Vec<_> = (0..100).map(|i| registry.insert(i).unwrap()).collect();
        assert!(ids.iter().all(|id| id.slot() != first.slot()));
        assert!(registry.get(first).is_none());
    }

    #[test]
    fn a_retired_slot_stays_retired_when_its_page_is_trimmed_and_refilled() {
        let registry = one_shard();
        // Fill page 0 (32 slots) and part of page 1.
        let ids: Vec<_> = (0..40).map(|i| registry.insert(i).unwrap()).collect();
        let victim = ids[35]; // in page 1
        for &id in ids.iter().filter(|&&id| id != victim) {
            registry.remove(id).unwrap();
        }
        // Removed last, the victim tops page 1's free list.
        registry.remove(victim).unwrap();
        age(&registry, victim.slot(), u32::MAX);
        // Inserts take the lowest page with room: fill page 0 first.
        let page0: Vec<_> = (0..32).map(|i| registry.insert(i).unwrap()).collect();
        let last = registry.insert(99).unwrap();
        assert_eq!((last.slot(), last.generation()), (victim.slot(), u32::MAX));
        registry.remove(last).unwrap();
        assert_eq!(registry.trim(), 1, "page 1 is all vacant");
        // Page 1's values are allocated again, bump-filled from offset 0:
        // the retired slot is skipped.
        let refill: Vec<_> = (0..40).map(|i| registry.insert(i).unwrap()).collect();
        assert!(refill.iter().all(|id| id.slot() != victim.slot()));
        assert!(registry.get(victim).is_none() && registry.get(last).is_none());
        drop(page0);
    }
}
