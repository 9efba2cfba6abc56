//! The entries this thread holds [`Ref`](crate::Ref)s to.
//!
//! [`remove`](crate::Registry::remove) moves a value out, so it must wait
//! until nobody borrows it: until every `Ref` to the entry drops. A `Ref`
//! held by the removing thread itself would never drop (the thread is busy
//! waiting), so the natural
//!
//! ```text
//! if let Some(connection) = registry.get(id) { registry.remove(id); }
//! ```
//!
//! would spin forever. To rule that out, every `Ref` records its entry's
//! key in a list of its thread's while it lives: the registry's number
//! (unique for the process's life) and the address of the entry's state
//! word (unique among that registry's live entries; a slot is reused only
//! once no `Ref` holds it, and a leaked `Ref` holds it forever). The
//! registry's number keeps a leaked `Ref` of a dropped registry from
//! matching a later registry whose words sit at the same address. A
//! removal looks in its thread's list before it waits: an
//! entry this thread holds is removed as `discard` removes it, its value
//! dropped by the last `Ref` to let go. A `Ref` is `!Send`, so it is dropped
//! on the thread whose list has it.
//!
//! The list is a thread-local stack of keys, `INLINE` of them in the
//! thread-local itself and the rest in a heap vector that exists only
//! while a thread holds more than `INLINE` `Ref`s at once. `Ref`s mostly
//! drop in reverse order, so recording one and letting it go are a few
//! instructions each: a push, and a pop of the key on top. The
//! thread-local has no destructor (the vector is freed when it empties),
//! so every access is a plain load from the thread's block; if a thread
//! ends while holding more than `INLINE` `Ref`s (only leaked ones can
//! outlive their thread's code), that vector leaks.

use core::cell::Cell;
use core::ptr;

/// An entry's key: its registry's number and its state word's address.
pub(crate) type Key = (u64, usize);

/// Addresses kept in the thread-local before the list spills to the heap.
const INLINE: usize = 16;

/// One thread's held addresses: `inline[..len.min(INLINE)]`, then the
/// spilled vector's.
struct Held {
    inline: [Cell<Key>; INLINE],
    len: Cell<usize>,
    /// The addresses past `INLINE`, from `Box::into_raw`; null while
    /// `len <= INLINE`.
    spill: Cell<*mut Vec<Key>>,
}

#[cfg(not(falconet_registry_loom))]
crate::primitive::thread_local! {
    static HELD: Held = const { Held::new() };
}

// loom's `thread_local!` takes no `const` initialiser; each loom thread has
// its own list, as each OS thread does.
#[cfg(falconet_registry_loom)]
crate::primitive::thread_local! {
    static HELD: Held = Held::new();
}

impl Held {
    const fn new() -> Self {
        Self {
            inline: [const { Cell::new((0, 0)) }; INLINE],
            len: Cell::new(0),
            spill: Cell::new(ptr::null_mut()),
        }
    }

    #[inline]
    fn push(&self, address: Key) {
        let len = self.len.get();
        match self.inline.get(len) {
            Some(cell) => cell.set(address),
            None => self.push_spilled(address),
        }
        self.len.set(len + 1);
    }

    #[cold]
    fn push_spilled(&self, address: Key) {
        if self.spill.get().is_null() {
            self.spill.set(Box::into_raw(Box::new(Vec::new())));
        }
        // SAFETY: a live box (above, or from an earlier spill), reached only
        // through this thread's list, and no other reference to it exists.
        unsafe { (*self.spill.get()).push(address) };
    }

    /// Removes one occurrence of `address`; the top of the list first.
    #[inline]
    fn remove(&self, address: Key) {
        let len = self.len.get();
        if (1..=INLINE).contains(&len) && self.inline[len - 1].get() == address {
            self.len.set(len - 1);
        } else {
            self.remove_below_top(address);
        }
    }

    /// Removes one occurrence of `address` that is not on top of the inline
    /// part, filling its place with the list's top entry.
    #[cold]
    fn remove_below_top(&self, address: Key) {
        let len = self.len.get();
        let inline = &self.inline[..len.min(INLINE)];
        if len <= INLINE {
            if let Some(at) = inline.iter().rposition(|cell| cell.get() == address) {
                inline[at].set(inline[len - 1].get());
                self.len.set(len - 1);
            }
            return;
        }
        // SAFETY: `len > INLINE`, so the spill is a live box, reached only
        // through this thread's list.
        let spill = unsafe { &mut *self.spill.get() };
        if let Some(at) = spill.iter().rposition(|&held| held == address) {
            spill.swap_remove(at);
        } else if let Some(cell) = inline.iter().rev().find(|cell| cell.get() == address) {
            cell.set(spill.pop().expect("len > INLINE"));
        } else {
            return;
        }
        self.len.set(len - 1);
        if spill.is_empty() {
            // SAFETY: from `Box::into_raw`; the list forgets it here.
            drop(unsafe { Box::from_raw(self.spill.replace(ptr::null_mut())) });
        }
    }

    fn contains(&self, address: Key) -> bool {
        let len = self.len.get();
        self.inline[..len.min(INLINE)].iter().any(|cell| cell.get() == address)
            // SAFETY: `len > INLINE`, so the spill is a live box.
            || (len > INLINE && unsafe { &*self.spill.get() }.contains(&address))
    }
}

/// Records that this thread now holds a `Ref` to the entry `address`.
#[inline]
pub(crate) fn hold(address: Key) {
    let _ = HELD.try_with(|held| held.push(address));
}

/// Records that this thread dropped a `Ref` to the entry at `address`.
#[inline]
pub(crate) fn let_go(address: Key) {
    let _ = HELD.try_with(|held| held.remove(address));
}

/// Whether this thread holds a `Ref` to the entry at `address`.
pub(crate) fn holds(address: Key) -> bool {
    HELD.try_with(|held| held.contains(address)).unwrap_or(false)
}

#[cfg(all(test, not(falconet_registry_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_list_holds_each_address_as_often_as_it_was_recorded() {
        let held = Held::new();
        // Past the inline part, with repeats, let go in two orders.
        let addresses: Vec<usize> = (1..=40).chain([3, 3, 35]).collect();
        let key = |a: usize| (7, a);
        for &address in &addresses {
            held.push(key(address));
        }
        let mut left = addresses.clone();
        let order: Vec<usize> = addresses
            .iter()
            .copied()
            .filter(|a| a % 2 == 1)
            .chain(addresses.iter().rev().copied().filter(|a| a % 2 == 0))
            .collect();
        for address in order {
            for candidate in 0..=41 {
                assert_eq!(held.contains(key(candidate)), left.contains(&candidate), "{candidate}");
            }
            held.remove(key(address));
            let at = left.iter().position(|&a| a == address).unwrap();
            left.remove(at);
            assert_eq!(held.len.get(), left.len());
            assert_eq!(held.spill.get().is_null(), left.len() <= INLINE, "freed when empty");
        }
        // Letting go of an address not held changes nothing.
        held.push(key(7));
        held.remove(key(8));
        held.remove((8, 7));
        assert!(held.contains(key(7)));
        assert!(!held.contains((8, 7)), "another registry's entry at the same address");
    }
}
