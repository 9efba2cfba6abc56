//! Connection ids and where they point.
//!
//! ```text
//!  63                              32 31                      8 7        0
//! +----------------------------------+-------------------------+----------+
//! |            generation            |    slot within shard    |  shard   |
//! +----------------------------------+-------------------------+----------+
//! ```
//!
//! - **shard** (8 bits): which shard holds the slot (at most 256 shards).
//! - **slot** (24 bits): the slot's index within its shard, at most
//!   16,777,184 slots per shard.
//! - **generation** (32 bits): how many times the slot has been vacated, plus
//!   one. A lookup matches the whole generation, so an id whose slot was
//!   reused by a newer connection finds nothing (the fd-reuse bug). A
//!   generation never wraps: a slot whose last generation (2^32 - 1) ends is
//!   retired for good (`slot.rs`), so an id finds its own entry or nothing,
//!   however many times its slot was reused. It is never 0.
//!
//! Because the generation is never 0, every id is at least 2^32: tokens below
//! that are free for the caller's own event sources (a listener, a waker).
//!
//! Slots live in pages whose sizes double (sharded-slab's layout): page `k`
//! holds `FIRST_PAGE << k` slots, so the page and offset of a slot index are
//! a leading-zeros count and a subtraction, and pages never move.

/// Bits of the shard field.
pub(crate) const SHARD_BITS: u32 = 8;
/// The most shards a registry can have.
pub(crate) const MAX_SHARDS: usize = 1 << SHARD_BITS;
/// Mask of the shard field.
const SHARD_MASK: u64 = (1 << SHARD_BITS) - 1;
/// Bits of the slot-within-shard field.
const SLOT_BITS: u32 = 24;
/// Mask of the slot field, after shifting it down.
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Where the generation starts.
const GENERATION_SHIFT: u32 = 32;

/// Slots in page 0 (then 2x, 4x, ...). Small under loom, which models every
/// slot's atomic.
#[cfg(not(falconet_registry_loom))]
pub(crate) const FIRST_PAGE: usize = 32;
#[cfg(falconet_registry_loom)]
pub(crate) const FIRST_PAGE: usize = 2;
const FIRST_PAGE_SHIFT: u32 = FIRST_PAGE.trailing_zeros();

/// Pages per shard: as many doublings as fit in the slot field.
#[cfg(not(falconet_registry_loom))]
pub(crate) const PAGES: usize = (SLOT_BITS - FIRST_PAGE_SHIFT) as usize;
/// Pages per shard: three under loom (2 + 4 + 8 slots).
#[cfg(falconet_registry_loom)]
pub(crate) const PAGES: usize = 3;

/// Slots in one shard: the sum of the page sizes.
pub(crate) const SLOTS_PER_SHARD: usize = FIRST_PAGE * ((1 << PAGES) - 1);

const _: () = assert!(SLOTS_PER_SHARD as u64 <= SLOT_MASK + 1);
const _: () = assert!(FIRST_PAGE.is_power_of_two());

/// A connection's id: a slot and the generation of that slot's occupant.
///
/// It converts to and from a `u64` ([`as_u64`](Self::as_u64),
/// [`from_u64`](Self::from_u64), `From`), so it can be the token of an epoll
/// registration, or of a mio `Token` on 64-bit targets (`Token(id.as_u64()
/// as usize)`; a `usize` has fewer bits on 32-bit targets). Any `u64` is
/// accepted back: an id that was never issued, or whose entry was removed,
/// simply finds nothing.
///
/// An id never finds a later entry than its own: the generation it carries
/// is never issued again for its slot (slots retire rather than wrap their
/// generation; see the crate docs), so the fd-reuse bug cannot happen
/// whatever the churn.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(u64);

impl ConnectionId {
    /// The id as a `u64` (always at least 2^32).
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// An id from a `u64`, for example a poll token. Never fails: a value
    /// that is not a live id finds nothing.
    pub const fn from_u64(raw: u64) -> Self {
        Self(raw)
    }

    /// Packs a shard, a slot within it and a generation.
    pub(crate) fn new(shard: usize, slot: usize, generation: u32) -> Self {
        debug_assert!(shard < MAX_SHARDS && (slot as u64) <= SLOT_MASK);
        Self(
            (u64::from(generation) << GENERATION_SHIFT)
                | ((slot as u64) << SHARD_BITS)
                | shard as u64,
        )
    }

    pub(crate) fn shard(self) -> usize {
        (self.0 & SHARD_MASK) as usize
    }

    pub(crate) fn slot(self) -> usize {
        ((self.0 >> SHARD_BITS) & SLOT_MASK) as usize
    }

    pub(crate) fn generation(self) -> u32 {
        (self.0 >> GENERATION_SHIFT) as u32
    }
}

impl std::fmt::Debug for ConnectionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionId")
            .field("shard", &self.shard())
            .field("slot", &self.slot())
            .field("generation", &self.generation())
            .finish()
    }
}

impl From<ConnectionId> for u64 {
    fn from(id: ConnectionId) -> u64 {
        id.0
    }
}

impl From<u64> for ConnectionId {
    fn from(raw: u64) -> Self {
        Self(raw)
    }
}

/// The page holding slot `slot` of a shard, and the slot's offset in it.
/// `slot` must be below [`SLOTS_PER_SHARD`].
pub(crate) fn page_of(slot: usize) -> (usize, usize) {
    // Shifting by the first page's size makes page k start at 2^(k + shift).
    let shifted = slot + FIRST_PAGE;
    let page = (usize::BITS - 1 - shifted.leading_zeros() - FIRST_PAGE_SHIFT) as usize;
    (page, shifted - (FIRST_PAGE << page))
}

/// The number of slots in page `page`.
pub(crate) const fn page_len(page: usize) -> usize {
    FIRST_PAGE << page
}

/// The shard-wide index of offset `offset` in page `page`.
pub(crate) const fn slot_of(page: usize, offset: usize) -> usize {
    (FIRST_PAGE << page) - FIRST_PAGE + offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_math_round_trips_at_every_page_edge() {
        let mut start = 0;
        for page in 0..PAGES {
            assert_eq!(page_of(start), (page, 0));
            assert_eq!(slot_of(page, 0), start);
            let last = start + page_len(page) - 1;
            assert_eq!(page_of(last), (page, page_len(page) - 1));
            assert_eq!(slot_of(page, page_len(page) - 1), last);
            start += page_len(page);
        }
        assert_eq!(start, SLOTS_PER_SHARD);
    }

    #[test]
    fn id_fields_round_trip_at_their_widths() {
        let id = ConnectionId::new(MAX_SHARDS - 1, SLOTS_PER_SHARD - 1, u32::MAX);
        assert_eq!(id.shard(), MAX_SHARDS - 1);
        assert_eq!(id.slot(), SLOTS_PER_SHARD - 1);
        assert_eq!(id.generation(), u32::MAX);
        let low = ConnectionId::new(0, 0, 1);
        assert_eq!(low.as_u64(), 1 << 32);
        assert_eq!(ConnectionId::from_u64(id.as_u64()), id);
    }
}
