//! The shared store: one slot per possible slab, each a single atomic word.
//!
//! A slot's word says whether the slot holds a slab and which of the slab's
//! blocks sit in the shared store (are neither leased nor in a thread cache):
//!
//! ```text
//!   63   62 ........................ n   n-1 ................ 0
//! +-----+------------------------------+----------------------+
//! |  P  |            always 0          |  free bit per block  |
//! +-----+------------------------------+----------------------+
//!   P = PRESENT: the slot holds a live slab; n = blocks per slab (1..=63)
//! ```
//!
//! The states of a slot and the only transitions between them:
//!
//! ```text
//!            install (table lock held)           claim: CAS clears free bits
//!   ABSENT ----------------------------> PRESENT <--------------------------+
//!   (0)    <----------------------------  | free bits                       |
//!            retire: CAS all-free -> 0    +---------------------------------+
//!            (table lock held)                release: fetch_or sets bits
//! ```
//!
//! * **claim** (lease slow path, any thread): load the word, and if it has free
//!   bits, CAS them clear; only then read the slab's base address. A thread takes up to a whole slab's free blocks in
//!   one CAS, so the store is touched once per refill, not once per block.
//! * **release** (return slow path, any thread): `fetch_or` the block's bit.
//!   Only a block that is out of the store is released, so its slab is
//!   present and its bit is clear: no CAS loop, no contention with claims
//!   beyond the one cache line.
//! * **retire** (trim, table lock held): CAS the word from *all free* to 0.
//!   It succeeds only when every block of the slab is in the store, and from
//!   then on no claim can succeed, so a trim racing a lease never hands out
//!   freed memory. The slab memory is freed after the CAS.
//! * **install** (grow, table lock held): write the slab's base address, then
//!   publish the word. Only the lock holder writes an absent slot.
//!
//! # Why there is no ABA
//!
//! The word *is* the state: a free bit set means that block is in the store,
//! whatever happened in between. A claim whose CAS succeeds against a stale
//! but equal word claims blocks that are free now. Even a slab retired and
//! re-installed between a claimer's load and its CAS is safe, because the
//! claimer reads the base address only *after* its CAS succeeds, and that CAS
//! synchronises with the install of the slab it claimed from.

use core::ptr::NonNull;

use crate::primitive::{AtomicU64, Ordering, UnsafeCell};

/// Bit 63: the slot holds a live slab.
pub(crate) const PRESENT: u64 = 1 << 63;

/// The most blocks a slab may hold: one free bit each, below the "present" bit
/// of the slab's state word.
pub const MAX_BLOCKS_PER_SLAB: usize = 63;

/// The free bits of a slab of `blocks` blocks: bits `0..blocks`.
pub(crate) const fn free_bits(blocks: usize) -> u64 {
    debug_assert!(blocks >= 1 && blocks <= MAX_BLOCKS_PER_SLAB);
    (1u64 << blocks) - 1
}

/// A block's place in the store: its slot and its bit, packed in one word.
///
/// Thread caches hold these, not pointers with a location beside them: an
/// 8-byte element moves through a cache's stack at full speed, while a
/// 16-byte one defeated store-to-load forwarding and tripled the cost of a
/// lease and return (measured: 8.6 ns against 2.6 ns for the bare stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct BlockRef(u64);

/// Bits `0..BIT_WIDTH` of a [`BlockRef`]: the block's bit in its slot word.
const BIT_WIDTH: u32 = 6;
/// Mask of the bit field of a [`BlockRef`]; the slot index sits above it.
const BIT_MASK: u64 = (1 << BIT_WIDTH) - 1;
const _: () = assert!(MAX_BLOCKS_PER_SLAB as u64 <= BIT_MASK + 1);

impl BlockRef {
    /// A placeholder for an empty stack slot (never handed out as a block).
    pub(crate) const EMPTY: Self = Self(0);

    #[inline]
    pub(crate) fn new(slot: usize, bit: u32) -> Self {
        debug_assert!(u64::from(bit) <= BIT_MASK);
        Self((slot as u64) << BIT_WIDTH | u64::from(bit))
    }

    /// The index of the block's slot.
    #[inline]
    pub(crate) fn slot(self) -> usize {
        (self.0 >> BIT_WIDTH) as usize
    }

    /// The block's bit in its slot word.
    #[inline]
    pub(crate) fn bit(self) -> u32 {
        (self.0 & BIT_MASK) as u32
    }
}

/// One possible slab: its state word and its base address.
#[derive(Debug)]
pub(crate) struct Slot {
    /// `PRESENT` plus one free bit per block in the store; 0 when absent.
    word: AtomicU64,
    /// The slab's memory; written only under the table lock while the slot
    /// is absent (install) or has just been retired (retire), read by a
    /// claimer after its CAS succeeds.
    base: UnsafeCell<*mut u8>,
}

impl Slot {
    /// An absent slot. (Outside loom the table is zeroed memory instead.)
    #[cfg(any(test, falconet_pool_loom))]
    pub(crate) fn new() -> Self {
        Self { word: AtomicU64::new(0), base: UnsafeCell::new(core::ptr::null_mut()) }
    }

    /// Claims up to `max` (at least 1) free blocks of this slab.
    ///
    /// Returns the claimed bits, or `None` when the slot is absent or has no
    /// free block. The claimer then owns those blocks and may read the base
    /// address with [`Slot::base`].
    ///
    /// # Ordering
    /// The successful CAS is `Acquire`: it reads the word last written by a
    /// `release` (`Release`) or `install` (`Release`), so the previous
    /// holder's writes to the blocks, and the base address, happen before
    /// this thread touches them. The failure ordering is `Relaxed` because a
    /// failed CAS only retries with the new value.
    pub(crate) fn claim(&self, max: u32) -> Option<u64> {
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            let free = word & !PRESENT;
            if free == 0 {
                // Absent (word == 0) or every block is out of the store.
                return None;
            }
            let taken = lowest_bits(free, max);
            match self.word.compare_exchange_weak(
                word,
                word & !taken,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                // The claimed blocks now keep the slab from being retired.
                Ok(_) => return Some(taken),
                // Someone claimed or released in between: retry with what is
                // there now.
                Err(now) => word = now,
            }
        }
    }

    /// Gives blocks back to the store by setting their free bits.
    ///
    /// The caller owns the blocks `bits` names (they are out of the store), so
    /// the slab is present and those bits are clear.
    ///
    /// # Ordering
    /// `Release`: the holder's writes to the blocks happen before any later
    /// claim (`Acquire`) or retire (`Acquire`) that reads this word.
    pub(crate) fn release(&self, bits: u64) {
        let before = self.word.fetch_or(bits, Ordering::Release);
        debug_assert!(before & PRESENT != 0, "released into an absent slot");
        debug_assert_eq!(before & bits, 0, "a block was released twice");
    }

    /// Installs a slab at `base`, leaving the blocks of `free` in the store.
    ///
    /// The caller holds the table lock and has checked that the slot is
    /// absent (only the lock holder changes an absent slot).
    ///
    /// # Ordering
    /// `Release`, paired with the `Acquire` CAS in [`Slot::claim`]: the base
    /// address written here is visible to whoever claims from this slab.
    pub(crate) fn install(&self, base: NonNull<u8>, free: u64) {
        debug_assert_eq!(self.word.load(Ordering::Relaxed), 0);
        // SAFETY: the slot is absent and we hold the table lock, so no claim
        // can succeed on it (its word has no free bit) and no other thread
        // reads or writes `base` now.
        self.base.with_mut(|slot_base| unsafe { *slot_base = base.as_ptr() });
        self.word.store(PRESENT | free, Ordering::Release);
    }

    /// Retires the slab if all its blocks (`all_free`) are in the store.
    ///
    /// Returns the slab's base address, which the caller now owns and frees.
    /// The caller holds the table lock.
    ///
    /// # Ordering
    /// `Acquire` on success, paired with the `Release` of every `release`
    /// that put a block back: all writes to the slab's blocks happen before
    /// the caller frees its memory.
    pub(crate) fn retire(&self, all_free: u64) -> Option<NonNull<u8>> {
        self.word
            .compare_exchange(PRESENT | all_free, 0, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // SAFETY: the CAS made the slot absent with every block in the
        // store, so no thread holds a block of it and no claim can succeed
        // on it any more; we hold the table lock, so no install runs.
        let base = self
            .base
            .with_mut(|base| unsafe { core::mem::replace(&mut *base, core::ptr::null_mut()) });
        NonNull::new(base)
    }

    /// The slab's base address, for a caller that owns one of its blocks
    /// (so the slab is present and can be neither installed nor retired).
    #[inline]
    pub(crate) fn base(&self) -> NonNull<u8> {
        // SAFETY: the caller owns a block of this slab: `install` wrote
        // `base` before its Release store, which the claim of that block
        // synchronised with (Acquire), and `retire` cannot write it until
        // the block is back in the store.
        let base = self.base.with(|base| unsafe { *base });
        // SAFETY: a present slot's base is the non-null slab address.
        unsafe { NonNull::new_unchecked(base) }
    }

    /// Takes the slab out of a slot during the pool's destruction.
    pub(crate) fn take_for_drop(&mut self) -> Option<NonNull<u8>> {
        // SAFETY: `&mut self`: no other thread can reach the slot.
        let base = self
            .base
            .with_mut(|base| unsafe { core::mem::replace(&mut *base, core::ptr::null_mut()) });
        NonNull::new(base)
    }

    /// A read of the base cell, for loom's race detector: it must happen
    /// after the slab's install and before its retirement, as every access
    /// to a leased block must.
    #[cfg(falconet_pool_loom)]
    pub(crate) fn loom_touch(&self) {
        // SAFETY: only reads the pointer value; loom checks the ordering.
        self.base.with(|base| unsafe {
            assert!(!(*base).is_null(), "block used after its slab was freed")
        });
    }

    /// Whether the slot holds a slab (a snapshot).
    pub(crate) fn is_present(&self) -> bool {
        self.word.load(Ordering::Relaxed) & PRESENT != 0
    }

    /// How many of the slab's blocks are in the store (a snapshot).
    pub(crate) fn free_count(&self) -> usize {
        (self.word.load(Ordering::Relaxed) & !PRESENT).count_ones() as usize
    }
}

/// The lowest `max` set bits of `bits` (all of them if there are fewer).
fn lowest_bits(bits: u64, max: u32) -> u64 {
    if bits.count_ones() <= max {
        return bits;
    }
    let mut rest = bits;
    for _ in 0..max {
        rest &= rest - 1; // clear the lowest set bit
    }
    bits & !rest
}

#[cfg(all(test, not(falconet_pool_loom)))]
mod tests {
    use super::*;

    #[test]
    fn lowest_bits_takes_from_the_bottom() {
        assert_eq!(lowest_bits(0b1011_0110, 2), 0b0000_0110);
        assert_eq!(lowest_bits(0b1011_0110, 9), 0b1011_0110);
        assert_eq!(lowest_bits(free_bits(63), 63), free_bits(63));
        assert_eq!(lowest_bits(0b1000, 1), 0b1000);
    }

    #[test]
    fn a_slot_claims_releases_and_retires() {
        let mut memory = [0u8; 64];
        let base = NonNull::new(memory.as_mut_ptr()).unwrap();
        let slot = Slot::new();
        assert!(slot.claim(1).is_none(), "an absent slot has nothing to claim");
        assert!(slot.retire(free_bits(4)).is_none());

        slot.install(base, free_bits(4) & !1);
        assert_eq!(slot.free_count(), 3);
        assert_eq!(slot.claim(2), Some(0b0110));
        assert_eq!(slot.base(), base);
        assert!(slot.retire(free_bits(4)).is_none(), "blocks are out: no retire");
        slot.release(0b0111);
        assert_eq!(slot.free_count(), 4);
        assert_eq!(slot.retire(free_bits(4)), Some(base));
        assert!(!slot.is_present());
        assert!(slot.claim(4).is_none(), "a retired slot hands nothing out");
    }
}
