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
//!   bits, CAS them clear; only then read the slab's base address. A thread
//!   takes up to a whole slab's free blocks in one CAS, so the store is
//!   touched once per refill, not once per block.
//! * **release** (return slow path, any thread): `fetch_or` the block's bit.
//!   Only a block that is out of the store is released, so its slab is
//!   present and its bit is clear: no CAS loop, no contention with claims
//!   beyond the one cache line.
//! * **retire** (trim, table lock held): CAS the word from *all free* to 0.
//!   It succeeds only when every block of the slab is in the store, and from
//!   then on no claim can succeed, so a trim racing a lease never hands out
//!   freed memory. The slab memory is freed after the CAS.
//! * **install** (grow, table lock held): write the slab's description (base
//!   address, pool, block size), then publish the word. Only the lock holder
//!   writes an absent slot.
//!
//! # Why there is no ABA
//!
//! The word *is* the state: a free bit set means that block is in the store,
//! whatever happened in between. A claim whose CAS succeeds against a stale
//! but equal word claims blocks that are free now. Even a slab retired and
//! re-installed between a claimer's load and its CAS is safe, because the
//! claimer reads the base address only *after* its CAS succeeds, and that CAS
//! synchronises with the install of the slab it claimed from.

use core::num::NonZero;
use core::ptr::NonNull;

use crate::pool::Shared;
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

/// A block's place: a pointer to its slot, tagged with its bit.
///
/// Slots are 128-byte aligned, so the low bits of a slot's address are
/// free to hold the block's bit (0 to 62). A place is one word: thread
/// caches hold places (an 8-byte element moves through a stack at full
/// speed, where a 16-byte one defeated store-to-load forwarding: 8.6 ns
/// against 2.6 ns for a bare stack), and a [`Block`](crate::Block) is its
/// address and its place, two words that travel in registers. From the
/// slot come the block's pool, the slab's base address and the block size.
/// Places sort by slot first, then bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct BlockRef(NonNull<Slot>);

/// Bits `0..BIT_WIDTH` of a [`BlockRef`]: the block's bit in its slot word.
const BIT_WIDTH: u32 = 6;
/// Mask of the bit field of a [`BlockRef`]; the slot's address sits above it.
const BIT_MASK: usize = (1 << BIT_WIDTH) - 1;
const _: () = assert!(MAX_BLOCKS_PER_SLAB <= BIT_MASK + 1);
const _: () = assert!(align_of::<Slot>() > BIT_MASK);

// SAFETY: a place is an address and a bit; it is only dereferenced (to its
// slot, which is `Sync`) by the owner of the block it names.
unsafe impl Send for BlockRef {}

impl BlockRef {
    /// A placeholder for an empty stack slot (never handed out as a block).
    pub(crate) const EMPTY: Self = Self(NonNull::dangling());

    #[inline]
    pub(crate) fn new(slot: &Slot, bit: u32) -> Self {
        debug_assert!(bit as usize <= BIT_MASK);
        Self(NonNull::from(slot).map_addr(|addr| addr | bit as usize))
    }

    /// The block's slot.
    ///
    /// # Safety
    /// The caller owns the block this place names (so its pool, which owns
    /// the slot table, is alive) and does not keep the reference longer.
    #[inline]
    pub(crate) unsafe fn slot<'a>(self) -> &'a Slot {
        let slot = self.0.map_addr(|addr| {
            NonZero::new(addr.get() & !BIT_MASK).expect("a slot's address is not null")
        });
        // SAFETY: untagged, the pointer is the slot's address, with its
        // provenance; the caller keeps the pool, and so the slot, alive.
        unsafe { slot.as_ref() }
    }

    /// Whether two places are in the same slot.
    #[inline]
    pub(crate) fn same_slot(self, other: Self) -> bool {
        (self.0.addr().get() ^ other.0.addr().get()) & !BIT_MASK == 0
    }

    /// The block's bit in its slot word.
    #[inline]
    pub(crate) fn bit(self) -> u32 {
        (self.0.addr().get() & BIT_MASK) as u32
    }
}

/// What a present slot knows of its slab, written when the slab is
/// installed and read by the owners of its blocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slab {
    /// The slab's memory.
    pub(crate) base: *mut u8,
    /// The pool the slab belongs to.
    pub(crate) pool: *const Shared,
    /// Bytes per block.
    pub(crate) block_size: usize,
}

impl Slab {
    const ABSENT: Self =
        Self { base: core::ptr::null_mut(), pool: core::ptr::null(), block_size: 0 };
}

/// One possible slab: its state word and what it knows of its slab.
///
/// 128-byte aligned, with the word and the slab description on different
/// 64-byte lines: claims and releases write the word, while every return
/// reads the description.
#[derive(Debug)]
#[repr(C, align(128))]
pub(crate) struct Slot {
    /// `PRESENT` plus one free bit per block in the store; 0 when absent.
    word: AtomicU64,
    _line: [u64; 7],
    /// Written only under the table lock while the slot is absent (install)
    /// or has just been retired (retire); read by a block's owner.
    slab: UnsafeCell<Slab>,
}

impl Slot {
    /// An absent slot. (Outside loom the table is zeroed memory instead.)
    #[cfg(any(test, falconet_pool_loom))]
    pub(crate) fn new() -> Self {
        Self { word: AtomicU64::new(0), _line: [0; 7], slab: UnsafeCell::new(Slab::ABSENT) }
    }

    /// Claims up to `max` (at least 1) free blocks of this slab.
    ///
    /// Returns the claimed bits, or `None` when the slot is absent or has no
    /// free block. The claimer then owns those blocks and may read the slab
    /// description with [`Slot::slab`].
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

    /// Installs `slab`, leaving the blocks of `free` in the store.
    ///
    /// The caller holds the table lock and has checked that the slot is
    /// absent (only the lock holder changes an absent slot).
    ///
    /// # Ordering
    /// `Release`, paired with the `Acquire` CAS in [`Slot::claim`]: the slab
    /// description written here is visible to whoever claims from this slab.
    pub(crate) fn install(&self, slab: Slab, free: u64) {
        debug_assert_eq!(self.word.load(Ordering::Relaxed), 0);
        // SAFETY: the slot is absent and we hold the table lock, so no claim
        // can succeed on it (its word has no free bit) and no other thread
        // reads or writes `slab` now.
        self.slab.with_mut(|current| unsafe { *current = slab });
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
        // SAFETY: the CAS left the slot absent with every block in the store:
        // no thread holds a block, no claim can succeed, no install runs.
        let slab =
            self.slab.with_mut(|slab| unsafe { core::mem::replace(&mut *slab, Slab::ABSENT) });
        NonNull::new(slab.base)
    }

    /// The slab's description, for a caller that owns one of its blocks (so
    /// the slab is present and can be neither installed nor retired).
    #[inline]
    pub(crate) fn slab(&self) -> Slab {
        // SAFETY: the caller owns a block: `install` wrote this before the
        // Release store its claim acquired; `retire` waits for the block.
        self.slab.with(|slab| unsafe { *slab })
    }

    /// Takes the slab out of a slot during the pool's destruction.
    pub(crate) fn take_for_drop(&mut self) -> Option<NonNull<u8>> {
        // SAFETY: `&mut self`: no other thread can reach the slot.
        let slab =
            self.slab.with_mut(|slab| unsafe { core::mem::replace(&mut *slab, Slab::ABSENT) });
        NonNull::new(slab.base)
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
    fn places_name_their_slot_and_bit() {
        let (a, b) = (Slot::new(), Slot::new());
        let (a1, a5, b1) = (BlockRef::new(&a, 1), BlockRef::new(&a, 5), BlockRef::new(&b, 1));
        assert!(a1.same_slot(a5));
        assert!(!a1.same_slot(b1));
        assert_eq!((a1.bit(), a5.bit()), (1, 5));
        assert!(a1 < a5, "places order by slot, then bit");
    }

    #[test]
    fn a_slot_claims_releases_and_retires() {
        let mut memory = [0u8; 64];
        let base = NonNull::new(memory.as_mut_ptr()).unwrap();
        let slot = Slot::new();
        assert!(slot.claim(1).is_none(), "an absent slot has nothing to claim");
        assert!(slot.retire(free_bits(4)).is_none());

        let slab = Slab { base: base.as_ptr(), pool: core::ptr::null(), block_size: 16 };
        slot.install(slab, free_bits(4) & !1);
        assert_eq!(slot.free_count(), 3);
        assert_eq!(slot.claim(2), Some(0b0110));
        assert_eq!(slot.slab().base, base.as_ptr());
        let place = BlockRef::new(&slot, 2);
        assert_eq!(place.bit(), 2);
        // SAFETY: `slot` outlives `place`'s use here.
        assert!(core::ptr::eq(unsafe { place.slot() }, &slot));
        assert!(slot.retire(free_bits(4)).is_none(), "blocks are out: no retire");
        slot.release(0b0111);
        assert_eq!(slot.free_count(), 4);
        assert_eq!(slot.retire(free_bits(4)), Some(base));
        assert!(!slot.is_present());
        assert!(slot.claim(4).is_none(), "a retired slot hands nothing out");
    }
}
