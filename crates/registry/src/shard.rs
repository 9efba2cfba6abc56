//! One shard: pages of slots, and the book of which slots are free.
//!
//! # Structure
//!
//! A shard's slots live in [`PAGES`] pages whose sizes double (`id.rs`).
//! Each page has two parts, allocated on first use:
//!
//! - the **state words** (`slot.rs`), 8 bytes a slot. They stay until the
//!   registry drops: a lookup with any id, stale or forged, may read them at
//!   any time, so they are never freed under it. They keep each slot's
//!   generation while the values are gone.
//! - the **values** (the `T`s, and the free-list link of vacant slots). A
//!   lookup touches them only after its compare-and-swap on the state word
//!   saw `OCCUPIED`, so a page whose slots are all vacant can be freed:
//!   [`Shard::trim`] does, under the lock, and the next insert that needs
//!   the page allocates it again. This is how the memory of a spike of
//!   connections goes back, without an epoch or hazard pointer on the
//!   lookup path.
//!
//! The [`Book`] (under the shard's one lock) has, per page: whether its
//! values are allocated, the head of its free list, how far it has ever been
//! filled (`bump`) and how many slots are reserved (`live`). Inserts take the
//! lowest page with room, so after a spike the high pages empty and can be
//! trimmed.
//!
//! # The lock
//!
//! Taken by [`reserve`](Shard::reserve) (insert), [`vacate`](Shard::vacate)
//! (the end of a removal) and [`trim`](Shard::trim), for a few dozen
//! instructions and, at worst, one page allocation. Never by a lookup, and
//! no user code (not even a value's `Drop`) runs while it is held.

use std::any::Any;
use std::mem::MaybeUninit;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;

use crate::id::{PAGES, page_len, page_of, slot_of};
use crate::primitive::{AtomicPtr, AtomicU64, ConstPtr, Mutex, Ordering, UnsafeCell};
use crate::slot;

/// End of a free list.
const NONE: u32 = u32::MAX;

/// A slot's value and, while it is vacant, its free-list link.
pub(crate) struct ValueSlot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// Next free slot of the page (an offset, or `NONE`). Only touched under
    /// the shard lock while the slot is vacant.
    next_free: UnsafeCell<u32>,
}

/// The two halves of one page.
struct Page<T> {
    /// `page_len` state words, or null before the page is first used.
    /// Published once (Release), freed only when the shard drops.
    states: AtomicPtr<AtomicU64>,
    /// `page_len` values, or null while the page is trimmed.
    values: AtomicPtr<ValueSlot<T>>,
}

/// Per page bookkeeping, under the shard lock.
#[derive(Clone, Copy, Debug)]
struct PageBook {
    /// The values are allocated.
    present: bool,
    /// Head of the free list (an offset), or `NONE`.
    free: u32,
    /// Offsets below this have been handed out since the values were
    /// allocated; those above are vacant and not on the free list.
    bump: u32,
    /// Slots reserved: from `reserve` until `vacate`.
    live: u32,
}

/// Everything the shard lock guards.
#[derive(Debug)]
pub(crate) struct Book {
    pages: [PageBook; PAGES],
}

/// One shard of a registry.
pub(crate) struct Shard<T> {
    /// The registry's number (see `held.rs`).
    pub(crate) uid: u64,
    book: Mutex<Book>,
    pages: [Page<T>; PAGES],
}

fn alloc_slice<E>(len: usize, make: impl FnMut(usize) -> E) -> *mut E {
    let slice: Box<[E]> = (0..len).map(make).collect();
    Box::into_raw(slice).cast::<E>()
}

/// # Safety
///
/// `first` came from `alloc_slice(len, ..)` and is not used afterwards.
unsafe fn free_slice<E>(first: *mut E, len: usize) {
    // SAFETY: the caller's contract: this is the same boxed slice.
    drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(first, len)) });
}

impl<T> Shard<T> {
    pub(crate) fn new(uid: u64) -> Self {
        let empty = PageBook { present: false, free: NONE, bump: 0, live: 0 };
        Self {
            uid,
            book: Mutex::new(Book { pages: [empty; PAGES] }),
            pages: std::array::from_fn(|_| Page {
                states: AtomicPtr::new(ptr::null_mut()),
                values: AtomicPtr::new(ptr::null_mut()),
            }),
        }
    }

    /// The state word of slot `slot`, if its page was ever used. `slot` must
    /// be below `SLOTS_PER_SHARD`.
    #[inline]
    pub(crate) fn state(&self, slot: usize) -> Option<&AtomicU64> {
        let (page, offset) = page_of(slot);
        self.states(page).map(|states| &states[offset])
    }

    /// The state words of page `page`, if it was ever used.
    #[inline]
    pub(crate) fn states(&self, page: usize) -> Option<&[AtomicU64]> {
        // Acquire: pairs with the Release publication in `reserve`.
        let first = self.pages[page].states.load(Ordering::Acquire);
        if first.is_null() {
            return None;
        }
        // SAFETY: published state pages hold `page_len` initialised words and
        // are freed only by `drop`, which has `&mut self`.
        Some(unsafe { &*ptr::slice_from_raw_parts(first, page_len(page)) })
    }

    /// The value of slot `slot`.
    ///
    /// # Safety
    ///
    /// The caller holds a reference to the slot or won its removal or its
    /// reservation: the slot is reserved, so its page's values are allocated.
    #[inline]
    pub(crate) unsafe fn value(&self, slot: usize) -> &ValueSlot<T> {
        let (page, offset) = page_of(slot);
        // Acquire: pairs with the Release publication in `reserve`.
        let first = self.pages[page].values.load(Ordering::Acquire);
        debug_assert!(!first.is_null());
        // SAFETY: a reserved slot keeps `live > 0`, so `trim` leaves the
        // page's values allocated (the caller's contract).
        unsafe { &*first.add(offset) }
    }

    /// Reserves a vacant slot: its shard-wide index and its generation.
    /// `None` if every page is full.
    pub(crate) fn reserve(&self) -> Option<(usize, u32)> {
        let mut book = self.book.lock();
        for page in 0..PAGES {
            let entry = &mut book.pages[page];
            if !entry.present {
                self.allocate(page);
                *entry = PageBook { present: true, free: NONE, bump: 0, live: 0 };
            }
            let states = self.states(page).expect("allocated above");
            // Relaxed: vacant words change only under the lock we hold.
            let word = |offset: u32| states[offset as usize].load(Ordering::Relaxed);
            let offset = if entry.free != NONE {
                let offset = entry.free;
                // SAFETY: the values are allocated (present) and the slot
                // is vacant and on the free list: nothing else touches its
                // link, and we hold the lock.
                entry.free = unsafe { self.link(page, offset as usize).with_mut(|next| *next) };
                offset
            } else {
                // Past the free list, slots never handed out since the
                // values were allocated; retired ones are never handed out.
                let len = page_len(page) as u32;
                while entry.bump < len && slot::is_retired(word(entry.bump)) {
                    entry.bump += 1;
                }
                if entry.bump == len {
                    continue;
                }
                entry.bump += 1;
                entry.bump - 1
            };
            entry.live += 1;
            return Some((slot_of(page, offset as usize), slot::generation(word(offset))));
        }
        None
    }

    /// Allocates page `page`'s values (and its state words, the first time).
    fn allocate(&self, page: usize) {
        let len = page_len(page);
        let table = &self.pages[page];
        if table.states.load(Ordering::Relaxed).is_null() {
            let states = alloc_slice(len, |_| AtomicU64::new(slot::vacant(1)));
            // Release: a lookup that loads the pointer sees the words.
            table.states.store(states, Ordering::Release);
        }
        let values = alloc_slice(len, |_| ValueSlot {
            value: UnsafeCell::new(MaybeUninit::uninit()),
            next_free: UnsafeCell::new(NONE),
        });
        // Release: whoever reserves a slot of the page sees the allocation.
        table.values.store(values, Ordering::Release);
    }

    /// The free-list link of offset `offset` of page `page`.
    ///
    /// # Safety
    ///
    /// The page's values are allocated.
    unsafe fn link(&self, page: usize, offset: usize) -> &UnsafeCell<u32> {
        let first = self.pages[page].values.load(Ordering::Relaxed);
        // SAFETY: allocated (the caller's contract), and offset < page_len.
        unsafe { &(*first.add(offset)).next_free }
    }

    /// Returns a finished slot to its page's free list with the next
    /// generation, or retires it after its last generation (`slot.rs`).
    /// The value was already dropped or moved out.
    pub(crate) fn vacate(&self, slot: usize, state: &AtomicU64) {
        let (page, offset) = page_of(slot);
        let mut book = self.book.lock();
        let generation = slot::generation(state.load(Ordering::Relaxed));
        let entry = &mut book.pages[page];
        entry.live -= 1;
        let Some(next) = slot::next_generation(generation) else {
            // Release: as below. Off every free list for good, and skipped
            // by `reserve`'s bump after a trim.
            state.store(slot::retired(), Ordering::Release);
            return;
        };
        // Release: the value's end happens before the slot's reuse (the next
        // insert also takes this lock).
        state.store(slot::vacant(next), Ordering::Release);
        let head = entry.free;
        // SAFETY: reserved until now, so allocated; the slot is vacant and we
        // hold the lock.
        unsafe { self.link(page, offset).with_mut(|next| *next = head) };
        entry.free = offset as u32;
    }

    /// Frees the values of every page above the first whose slots are all
    /// vacant. Returns how many pages it freed.
    pub(crate) fn trim(&self) -> usize {
        let mut freed = [ptr::null_mut(); PAGES];
        {
            let mut book = self.book.lock();
            let pages = book.pages.iter_mut().zip(&self.pages).zip(&mut freed);
            for ((entry, table), freed) in pages.skip(1) {
                if entry.present && entry.live == 0 {
                    entry.present = false;
                    *freed = table.values.swap(ptr::null_mut(), Ordering::Relaxed);
                }
            }
        }
        let mut count = 0;
        for (page, first) in freed.into_iter().enumerate() {
            if !first.is_null() {
                // No slot of the page is reserved, so no lookup holds or can
                // gain a reference into it (a reference needs OCCUPIED, set
                // only after a reservation); we unpublished it under the lock.
                // SAFETY: as above; allocated by `allocate` with this length.
                unsafe { free_slice(first, page_len(page)) };
                count += 1;
            }
        }
        count
    }

    /// Drops every live value (not the removed ones, whose ends are
    /// deferred and drop them) and vacates its slot: for a registry that
    /// drops while deferred ends still share its shards (`pinned.rs`).
    pub(crate) fn drop_live_values(&self) {
        let mut dropping = DropAll::default();
        for page in 0..PAGES {
            let Some(states) = self.states(page) else { break };
            for (offset, state) in states.iter().enumerate() {
                // Acquire: the insert's Release store of OCCUPIED.
                let word = state.load(Ordering::Acquire);
                if !slot::is_live(word, slot::generation(word)) {
                    continue;
                }
                let slot = slot_of(page, offset);
                // The registry is being dropped (no lookup, `Ref` or
                // removal of it remains) and the slot is live; the pending
                // deferred ends touch only removed slots.
                // SAFETY: so the value is initialised and ours alone.
                let value = unsafe { self.value(slot).take() };
                self.vacate(slot, state);
                dropping.drop_one(value);
            }
        }
        dropping.finish();
    }

    /// Slots whose values are allocated (for `capacity`).
    pub(crate) fn allocated_slots(&self) -> usize {
        let book = self.book.lock();
        (0..PAGES).filter(|&page| book.pages[page].present).map(page_len).sum()
    }
}

impl<T> ValueSlot<T> {
    /// A shared pointer to the value.
    pub(crate) fn get(&self) -> ConstPtr<MaybeUninit<T>> {
        self.value.get()
    }

    /// Writes the value of a slot the caller reserved.
    ///
    /// # Safety
    ///
    /// The caller reserved the slot and has not published it.
    pub(crate) unsafe fn write(&self, value: T) {
        // SAFETY: nobody else can reach an unpublished reserved slot.
        self.value.with_mut(|cell| unsafe { (*cell).write(value) });
    }

    /// Moves the value out.
    ///
    /// # Safety
    ///
    /// The caller won the removal and no reference to the slot remains.
    pub(crate) unsafe fn take(&self) -> T {
        // SAFETY: the caller's contract: the value is initialised and ours.
        self.value.with_mut(|cell| unsafe { (*cell).assume_init_read() })
    }
}

/// Drops values one after another, every one of them even if some panic
/// in `drop`, as a `Vec` does: the first panic resumes once all are
/// dropped (and, in the shard's own drop, its pages freed). A value whose
/// `drop` panics must not leak the others (their sockets left open).
#[derive(Default)]
struct DropAll {
    /// The first panic's payload.
    panic: Option<Box<dyn Any + Send>>,
}

impl DropAll {
    fn drop_one<T>(&mut self, value: T) {
        // AssertUnwindSafe: the value is gone either way, and nothing else
        // is touched.
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
            self.panic.get_or_insert(payload);
        }
    }

    fn finish(self) {
        if let Some(payload) = self.panic {
            panic::resume_unwind(payload);
        }
    }
}

impl<T> Drop for Shard<T> {
    fn drop(&mut self) {
        let mut dropping = DropAll::default();
        let book = self.book.lock().pages;
        for (page, entry) in book.iter().enumerate() {
            let len = page_len(page);
            let states = self.pages[page].states.load(Ordering::Relaxed);
            let values = self.pages[page].values.load(Ordering::Relaxed);
            if !values.is_null() {
                for offset in 0..entry.bump as usize {
                    // SAFETY: states are allocated whenever values are.
                    let word = unsafe { &*states.add(offset) }.load(Ordering::Relaxed);
                    if slot::holds_value(word) {
                        // SAFETY: `&mut self`: no reference or removal is in
                        // flight, and an occupied slot holds its value.
                        dropping.drop_one(unsafe { (*values.add(offset)).take() });
                    }
                }
                // SAFETY: allocated by `allocate` with this length.
                unsafe { free_slice(values, len) };
            }
            if !states.is_null() {
                // SAFETY: allocated by `allocate` with this length.
                unsafe { free_slice(states, len) };
            }
        }
        dropping.finish();
    }
}
