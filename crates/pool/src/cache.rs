//! The per-thread cache: the fast path of lease and return.
//!
//! Each thread keeps, per pool it has touched, an *entry*: a LIFO stack of
//! free blocks of at most one slab's worth (the most recently returned block,
//! warm in this core's cache, is the next one leased), plus two counters.
//!
//! * **Lease**: pop the top block. When the stack is empty, refill it with up
//!   to a whole slab's free blocks in one claim from the store.
//! * **Return** (a [`Block`](crate::Block) dropped on this thread, whichever
//!   thread leased it): push it. When the stack is full, first flush its
//!   older half to the store, grouped by slab (one `fetch_or` per slab).
//!
//! Only the owning thread touches an entry's stack, so lease and return on
//! one thread are a `Vec` pop and push: no atomic read-modify-write, no
//! allocation (the stack's capacity is fixed when the entry is created). A
//! block returned by another thread lands in *that* thread's cache and comes
//! back through the store in batches, so a remote return never contends with
//! the owner's fast path.
//!
//! An entry holds one reference to its pool (see [`crate::pool`]), so its
//! pointer stays valid. Entries of pools whose last handle is gone are
//! flushed and dropped when their thread creates another entry or exits; a
//! block returned to a closed pool bypasses the cache. The stack is reached through a `RefCell` borrowed only inside this
//! module; if it is unavailable (the thread is exiting and its cache is
//! gone), lease and return go straight to the store.

use core::cell::RefCell;
use core::ptr::NonNull;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::error::LeaseError;
use crate::pool::Shared;
use crate::primitive::{AtomicU64, AtomicUsize, Ordering, thread_local};
use crate::slot::BlockRef;

/// One entry's counters, written only by the owning thread (a load and a
/// store, not a read-modify-write) and read by [`Pool::stats`](crate::Pool::stats).
#[derive(Debug, Default)]
pub(crate) struct CacheCounters {
    cached: AtomicUsize,
    hits: AtomicU64,
}

impl CacheCounters {
    pub(crate) fn cached(&self) -> usize {
        self.cached.load(Ordering::Relaxed)
    }

    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

/// One thread's cache for one pool.
struct Entry {
    /// The pool; this entry holds one of its references.
    shared: NonNull<Shared>,
    id: u64,
    /// LIFO stack of at most `capacity` blocks, allocated once.
    blocks: Vec<BlockRef>,
    /// The pool's thread-cache size (`Vec::capacity` may exceed it).
    capacity: usize,
    counters: Arc<CachePadded<CacheCounters>>,
}

thread_local! {
    // loom's `thread_local!` takes no `const` initialiser; the std one would
    // gain nothing measurable from it (the `Vec` is created once per thread).
    #[allow(clippy::missing_const_for_thread_local)]
    static CACHES: RefCell<Vec<Entry>> = RefCell::new(Vec::new());
}

/// Leases one block: from this thread's cache if it can, else from the store.
#[inline]
pub(crate) fn lease(shared: &Shared) -> Result<BlockRef, LeaseError> {
    match with_front_entry(shared, Entry::pop) {
        Some(block) => Ok(block),
        None => lease_slow(shared),
    }
}

/// Returns one block: into this thread's cache if it can, else to the store.
///
/// # Safety
/// `block` is out of the store, owned by the caller, and carries one
/// reference to the live pool at `shared`, which this call consumes.
#[inline]
pub(crate) unsafe fn give_back(shared: NonNull<Shared>, block: BlockRef) {
    // SAFETY: the block's reference keeps the pool alive.
    let pool = unsafe { shared.as_ref() };
    if with_front_entry(pool, |entry| entry.try_push(block)) != Some(true) {
        // SAFETY: as for this function.
        unsafe { give_back_slow(shared, block) };
    }
}

/// The fast path's only look-up: this thread's first entry, if it is the
/// pool's. The slow paths move the entry they use to the front.
#[inline]
fn with_front_entry<R>(shared: &Shared, f: impl FnOnce(&mut Entry) -> Option<R>) -> Option<R> {
    CACHES
        .try_with(|cell| {
            let mut entries = cell.try_borrow_mut().ok()?;
            let entry = entries.first_mut().filter(|entry| entry.id == shared.id)?;
            f(entry)
        })
        .ok()
        .flatten()
}

#[cold]
#[inline(never)]
fn lease_slow(shared: &Shared) -> Result<BlockRef, LeaseError> {
    if shared.config.thread_cache > 0
        && let Some(result) = with_entry(shared, |entry| entry.lease(shared))
    {
        return result;
    }
    lease_from_store(shared)
}

/// # Safety
/// As for [`give_back`].
#[cold]
#[inline(never)]
unsafe fn give_back_slow(shared: NonNull<Shared>, block: BlockRef) {
    // SAFETY: the block's reference keeps the pool alive.
    let pool = unsafe { shared.as_ref() };
    if pool.config.thread_cache > 0
        && !pool.is_closed()
        && with_entry(pool, |entry| entry.push(block)).is_some()
    {
        return;
    }
    pool.release_bits(block.slot(), 1 << block.bit());
    // SAFETY: the block's reference, released once; `pool` is not used after.
    unsafe { Shared::release_refs(shared, 1) };
}

/// Gives this thread's cached blocks of `shared` back to the store.
pub(crate) fn flush_own(shared: &Shared) {
    let _ = CACHES.try_with(|cell| {
        if let Ok(mut entries) = cell.try_borrow_mut()
            && let Some(entry) = entries.iter_mut().find(|e| e.id == shared.id)
        {
            let all = entry.blocks.len();
            entry.flush(all);
        }
    });
}

/// Drops this thread's entry for `shared`, flushing it.
pub(crate) fn remove_own(shared: &Shared) {
    let _ = CACHES.try_with(|cell| {
        // Take the entry out first and drop it after the borrow ends.
        let removed = cell.try_borrow_mut().ok().and_then(|mut entries| {
            let index = entries.iter().position(|e| e.id == shared.id)?;
            Some(entries.swap_remove(index))
        });
        drop(removed);
    });
}

/// Leases without a cache: claims one block from the store.
fn lease_from_store(shared: &Shared) -> Result<BlockRef, LeaseError> {
    let mut block = None;
    shared.take(1, &mut |b| block = Some(b))?;
    shared.count_store_lease();
    Ok(block.expect("take(1) hands out exactly one block"))
}

/// Runs `f` on this thread's entry for `shared`, creating it if needed, and
/// moves the entry to the front, where the fast path looks. `None` when the
/// thread's cache is unavailable.
fn with_entry<R>(shared: &Shared, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
    CACHES
        .try_with(|cell| {
            let mut entries = cell.try_borrow_mut().ok()?;
            let index = match entries.iter().position(|e| e.id == shared.id) {
                Some(index) => index,
                None => {
                    prune_closed(&mut entries);
                    entries.push(Entry::new(shared));
                    entries.len() - 1
                }
            };
            entries.swap(0, index);
            Some(f(&mut entries[0]))
        })
        .ok()
        .flatten()
}

/// Drops the entries of pools whose last handle is gone, flushing them.
fn prune_closed(entries: &mut Vec<Entry>) {
    entries.retain(|entry| {
        // SAFETY: the entry holds a reference, so its pool is alive.
        !unsafe { entry.shared.as_ref() }.is_closed()
    });
}

impl Entry {
    fn new(shared: &Shared) -> Self {
        shared.acquire_refs(1);
        let counters = Arc::new(CachePadded::new(CacheCounters::default()));
        shared.register_cache(Arc::clone(&counters));
        Self {
            shared: NonNull::from(shared),
            id: shared.id,
            blocks: Vec::with_capacity(shared.config.thread_cache),
            capacity: shared.config.thread_cache,
            counters,
        }
    }

    fn shared(&self) -> &Shared {
        // SAFETY: the entry holds a reference, so its pool is alive.
        unsafe { self.shared.as_ref() }
    }

    /// The fast path of a lease: the top of the stack, if any.
    #[inline]
    fn pop(&mut self) -> Option<BlockRef> {
        let block = self.blocks.pop()?;
        bump(&self.counters.hits);
        self.counters.cached.store(self.blocks.len(), Ordering::Relaxed);
        Some(block)
    }

    /// The fast path of a return: push if there is room and the pool is open.
    #[inline]
    fn try_push(&mut self, block: BlockRef) -> Option<bool> {
        if self.blocks.len() == self.capacity || self.shared().is_closed() {
            return Some(false);
        }
        self.blocks.push(block);
        self.counters.cached.store(self.blocks.len(), Ordering::Relaxed);
        Some(true)
    }

    fn lease(&mut self, shared: &Shared) -> Result<BlockRef, LeaseError> {
        if let Some(block) = self.pop() {
            return Ok(block);
        }
        // Refill with up to a slab's free blocks; the last one is leased.
        let blocks = &mut self.blocks;
        shared.take(self.capacity, &mut |block| blocks.push(block))?;
        shared.count_store_lease();
        let block = self.blocks.pop().expect("take hands out at least one block");
        self.counters.cached.store(self.blocks.len(), Ordering::Relaxed);
        Ok(block)
    }

    fn push(&mut self, block: BlockRef) {
        if self.blocks.len() == self.capacity {
            self.flush(self.blocks.len().div_ceil(2));
        }
        self.blocks.push(block);
        self.counters.cached.store(self.blocks.len(), Ordering::Relaxed);
    }

    /// Gives the `count` oldest cached blocks back to the store.
    fn flush(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        let shared = self.shared;
        // SAFETY: the entry holds a reference, so the pool is alive.
        let pool = unsafe { shared.as_ref() };
        // Blocks refilled together share a slab: one `fetch_or` per run.
        let mut run: Option<(usize, u64)> = None;
        for block in self.blocks.drain(..count) {
            let (slot, bit) = (block.slot(), 1 << block.bit());
            run = match run {
                Some((run_slot, bits)) if run_slot == slot => Some((slot, bits | bit)),
                Some((run_slot, bits)) => {
                    pool.release_bits(run_slot, bits);
                    Some((slot, bit))
                }
                None => Some((slot, bit)),
            };
        }
        if let Some((slot, bits)) = run {
            pool.release_bits(slot, bits);
        }
        self.counters.cached.store(self.blocks.len(), Ordering::Relaxed);
        // SAFETY: the flushed blocks' references; the entry's own keeps the
        // pool alive afterwards.
        unsafe { Shared::release_refs(shared, count) };
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.flush(self.blocks.len());
        self.shared().unregister_cache(&self.counters);
        // SAFETY: the entry's own reference, released once; not used after.
        unsafe { Shared::release_refs(self.shared, 1) };
    }
}

/// Adds one to a counter only this thread writes: a load and a store, which
/// compile to plain moves, instead of a locked read-modify-write.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
