//! A slot's lifecycle: one `AtomicU64` per slot, the only word a lookup
//! changes.
//!
//! ```text
//!  63                  32 31                     3    2        1         0
//! +----------------------+------------------------+--------+----------+----------+
//! |      generation      |   references (29 bits) | TAKING | REMOVING | OCCUPIED |
//! +----------------------+------------------------+--------+----------+----------+
//! ```
//!
//! # States (generation `g` is fixed until the slot is vacated)
//!
//! ```text
//!   VACANT(g) ──insert──> OCCUPIED(g, 0) ──get──> OCCUPIED(g, r + 1) ──Ref dropped──> OCCUPIED(g, r)
//!                              │
//!          discard / sweep ────┼──> REMOVING(g, r)          the remover finishes if r == 0,
//!                              │                            else the Ref that takes r to 0 does
//!          remove ─────────────┴──> REMOVING+TAKING(g, r)   the remover waits for r == 0, then
//!                                                           moves the value out
//!   finish: the value is dropped or moved out, then VACANT(g + 1) (under the shard lock),
//!           or RETIRED when g is the last generation, 2^32 - 1
//! ```
//!
//! # Generations never wrap
//!
//! A slot's generation starts at 1 and grows by one per use. A slot whose
//! last generation (2^32 - 1) ends is **retired**: its word becomes
//! `VACANT(0)` (0 is never a live generation, so no lookup matches it), and
//! the shard never hands it out again. So an id can only ever find the
//! entry it was issued for: no count of reuses brings an old generation
//! back. The cost is one slot (its 8-byte state word and its value place)
//! per 2^32 - 1 uses of that slot; a shard has 16,777,184 slots, so a
//! shard runs out only after about 7.2 * 10^16 inserts (over 200 years at
//! ten million inserts a second), and then `insert` says `Full`.
//!
//! - A lookup succeeds only by a compare-and-swap from `OCCUPIED` (no
//!   `REMOVING`) with the id's generation, adding one reference: a removed
//!   entry, a vacant slot and a reused slot all refuse it, and a lookup never
//!   reads a value the slot does not hold.
//! - Exactly one party finishes a removal: the one whose read-modify-write
//!   saw both `REMOVING` and the last reference go (the remover's CAS with
//!   no references, or the `Ref` drop that took the count from 1 to 0).
//!   `TAKING` hands that moment to the waiting `remove` instead.
//! - Vacant slots never hold references: a reference is only ever added by a
//!   CAS that saw `OCCUPIED`.
//!
//! # Ordering
//!
//! - The insert publishes `OCCUPIED` with a `Release` store after writing
//!   the value; a lookup's successful CAS is `Acquire`, so it sees the value.
//! - A `Ref` drop is `AcqRel`: `Release` so its reads of the value happen
//!   before whoever finishes the removal drops or moves it; `Acquire` so that
//!   if this drop finishes it, it sees the other holders' reads as done. The
//!   remover's CAS and its wait for the count to reach 0 are `Acquire` for
//!   the same reason.
//! - Marking a value removed is `SeqCst`, for the pinned read path: see
//!   `pinned.rs`. A pinned lookup (which writes nothing) loads the word
//!   `Acquire` and reads the value only if it is live.

use crate::primitive::{AtomicU64, Ordering, fence};

/// The slot holds a value.
const OCCUPIED: u64 = 1 << 0;
/// The value was removed: lookups refuse it; it leaves when unreferenced.
const REMOVING: u64 = 1 << 1;
/// A `remove` waits to move the value out (the last `Ref` leaves it alone).
const TAKING: u64 = 1 << 2;
/// Where the reference count starts.
const REFS_SHIFT: u32 = 3;
/// One reference.
const REF_ONE: u64 = 1 << REFS_SHIFT;
/// Where the generation starts: the reference count is the bits between.
const GENERATION_SHIFT: u32 = 32;
/// The most references one entry can have at once.
const MAX_REFS: u64 = (1 << (GENERATION_SHIFT - REFS_SHIFT)) - 1;
/// Mask of the reference count.
const REFS_MASK: u64 = MAX_REFS << REFS_SHIFT;

/// The word of a vacant slot of generation `generation`.
pub(crate) const fn vacant(generation: u32) -> u64 {
    (generation as u64) << GENERATION_SHIFT
}

/// The word of a freshly inserted value of generation `generation`.
pub(crate) const fn occupied(generation: u32) -> u64 {
    vacant(generation) | OCCUPIED
}

/// The generation field of `word`.
pub(crate) const fn generation(word: u64) -> u32 {
    (word >> GENERATION_SHIFT) as u32
}

/// The generation of a retired slot: never issued, so never matched.
const RETIRED: u32 = 0;

/// The word of a retired slot.
pub(crate) const fn retired() -> u64 {
    vacant(RETIRED)
}

/// Whether `word` is a retired slot's.
pub(crate) const fn is_retired(word: u64) -> bool {
    generation(word) == RETIRED
}

/// The generation after `generation`, or `None` when `generation` was the
/// slot's last (the slot retires instead of wrapping).
pub(crate) const fn next_generation(generation: u32) -> Option<u32> {
    generation.checked_add(1)
}

const fn refs(word: u64) -> u64 {
    (word & REFS_MASK) >> REFS_SHIFT
}

/// Whether `word` is a live value of generation `generation` (a lookup
/// would find it).
pub(crate) const fn is_live(word: u64, generation: u32) -> bool {
    word & (OCCUPIED | REMOVING) == OCCUPIED && (word >> GENERATION_SHIFT) as u32 == generation
}

/// Whether the slot of `word` holds a value (live, or removed but not yet
/// finished).
pub(crate) const fn holds_value(word: u64) -> bool {
    word & OCCUPIED != 0
}

/// Adds a reference if `state` holds a live value of `generation`.
#[inline]
pub(crate) fn acquire(state: &AtomicU64, generation: u32) -> bool {
    let mut word = state.load(Ordering::Relaxed);
    loop {
        if !is_live(word, generation) {
            return false;
        }
        if refs(word) == MAX_REFS {
            // 2^29 - 1 references to one entry at once: by leaking `Ref`s
            // (mem::forget) or by holding that many live ones. Like Arc's
            // count (whose limit is isize::MAX), the count must not wrap
            // into the flags below it, and no caller can recover: abort.
            std::process::abort();
        }
        // Acquire: pairs with the insert's Release store of OCCUPIED.
        match state.compare_exchange_weak(
            word,
            word + REF_ONE,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return true,
            Err(actual) => word = actual,
        }
    }
}

/// Drops a reference. Returns `true` if the caller must finish the removal
/// (it dropped the last reference of a value removed by `discard`).
#[inline]
pub(crate) fn release(state: &AtomicU64) -> bool {
    // AcqRel: see the module docs. SeqCst: if this drop ends a discard, it
    // then loads the registry's mode, and the discard's mark must precede
    // that load in the SeqCst order (`pinned.rs`); a SeqCst read of the
    // mark's SeqCst write gives that, an AcqRel one does not. The same
    // instruction on x86.
    let before = state.fetch_sub(REF_ONE, Ordering::SeqCst);
    debug_assert!(refs(before) > 0);
    before & (REMOVING | TAKING) == REMOVING && refs(before) == 1
}

/// How a removal that won its mark goes on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Marked {
    /// Nobody references the value: the remover finishes now.
    Unreferenced,
    /// Lookups hold it: the last `Ref` finishes (discard), or the remover
    /// waits (take).
    Referenced,
}

/// Marks a live value of `generation` removed. `None` if there is none (a
/// vacant or reused slot, or another removal won).
pub(crate) fn mark_removed(state: &AtomicU64, generation: u32, take: bool) -> Option<Marked> {
    let flags = if take { REMOVING | TAKING } else { REMOVING };
    let mut word = state.load(Ordering::Relaxed);
    loop {
        if !is_live(word, generation) {
            return None;
        }
        // Acquire: if nobody references the value we finish it, after every
        // holder's Release drop. SeqCst: the removal then loads the
        // registry's mode, and a pinned lookup must see this mark or the
        // removal must see the mode (`pinned.rs`).
        match state.compare_exchange_weak(word, word | flags, Ordering::SeqCst, Ordering::Relaxed) {
            Ok(_) if refs(word) == 0 => return Some(Marked::Unreferenced),
            Ok(_) => return Some(Marked::Referenced),
            Err(actual) => word = actual,
        }
    }
}

/// Turns a removal marked for taking into a discard, for a remover that
/// cannot wait: clears `TAKING`, so the last `Ref` ends the removal.
/// Returns `true` if no reference is left, and the caller must end it.
pub(crate) fn give_up_taking(state: &AtomicU64) -> bool {
    let mut word = state.load(Ordering::Relaxed);
    loop {
        if refs(word) == 0 {
            // Acquire: the holders' Release drops happen before our end.
            fence(Ordering::Acquire);
            return true;
        }
        // Release: nothing of ours to publish; AcqRel pairs as `mark_removed`.
        match state.compare_exchange_weak(word, word & !TAKING, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => return false,
            Err(actual) => word = actual,
        }
    }
}

/// Waits until a value marked for taking has no references left.
pub(crate) fn wait_unreferenced(state: &AtomicU64) {
    let mut round = 0;
    // Acquire: pairs with the holders' Release drops; their reads of the
    // value happen before we move it out.
    while refs(state.load(Ordering::Acquire)) != 0 {
        crate::primitive::wait_a_little(round);
        round = round.saturating_add(1);
    }
}

#[cfg(all(test, not(falconet_registry_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_refuses_vacant_removed_and_reused_slots() {
        let state = AtomicU64::new(vacant(7));
        assert!(!acquire(&state, 7), "vacant");
        state.store(occupied(7), Ordering::Relaxed);
        assert!(!acquire(&state, 6), "older generation");
        assert!(!acquire(&state, 8), "newer generation");
        assert!(acquire(&state, 7));
        assert_eq!(mark_removed(&state, 7, false), Some(Marked::Referenced));
        assert!(!acquire(&state, 7), "removed");
        assert_eq!(mark_removed(&state, 7, false), None, "removed twice");
        assert!(release(&state), "the last reference finishes a discard");
    }

    #[test]
    fn the_last_reference_leaves_a_taken_value_to_its_taker() {
        let state = AtomicU64::new(occupied(1));
        assert!(acquire(&state, 1));
        assert!(acquire(&state, 1));
        assert_eq!(mark_removed(&state, 1, true), Some(Marked::Referenced));
        assert!(!release(&state));
        assert!(!release(&state));
        wait_unreferenced(&state);
    }

    #[test]
    fn the_last_generation_has_no_next_and_a_retired_slot_matches_nothing() {
        assert_eq!(next_generation(u32::MAX), None);
        assert_eq!(next_generation(1), Some(2));
        let word = occupied(u32::MAX);
        assert_eq!(generation(word), u32::MAX);
        assert!(is_live(word, u32::MAX));
        let state = AtomicU64::new(retired());
        assert!(is_retired(state.load(Ordering::Relaxed)));
        assert!(!is_retired(vacant(1)) && !is_retired(occupied(u32::MAX)));
        for generation in [RETIRED, 1, u32::MAX] {
            assert!(!acquire(&state, generation), "a retired slot matches no id");
            assert_eq!(mark_removed(&state, generation, true), None);
        }
    }
}
