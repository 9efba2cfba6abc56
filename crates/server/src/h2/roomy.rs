//! A stream map that never reallocates in a steady state.
//!
//! A `HashMap` that only ever holds a few live entries can still grow long
//! after their count peaked: a removal leaves a tombstone where its probe
//! group was full, and once tombstones use up the spare room the next
//! insert rehashes. std's table (hashbrown) rehashes in place when the live
//! entries fill at most half of its capacity, and allocates a larger table
//! otherwise. Which removals leave tombstones depends on the map's random
//! hash keys, so a connection that has run 32 streams at a time for
//! thousands of requests can allocate on request 5,000.
//!
//! [`Roomy`] remembers the highest live count it has held (its peak) and,
//! when an insert reaches a new peak, makes room for twice it: from then
//! on every rehash the table starts itself finds the live entries at or
//! under half its capacity and stays in place. The map grows only at a new
//! peak. Judging by `capacity()` alone is not enough: tombstones lower it,
//! so a table already large enough would be told to grow again.

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::{Deref, DerefMut};

/// A `HashMap` whose [`insert`](Roomy::insert) keeps room for twice the
/// most entries it has held; everything else is the map's own (through
/// `Deref`).
#[derive(Debug)]
pub(crate) struct Roomy<K, V> {
    map: HashMap<K, V>,
    /// The most entries held at once so far.
    peak: usize,
}

impl<K, V> Default for Roomy<K, V> {
    fn default() -> Self {
        Self { map: HashMap::new(), peak: 0 }
    }
}

impl<K: Eq + Hash, V> Roomy<K, V> {
    /// `map.insert(key, value)`, first making room for twice the live
    /// entries if they reach a new peak.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let live = self.map.len() + 1;
        if live > self.peak {
            self.peak = live;
            // `reserve` counts from `len`: capacity for `2 * live` in all.
            self.map.reserve(2 * live - self.map.len());
        }
        self.map.insert(key, value)
    }
}

impl<K, V> Deref for Roomy<K, V> {
    type Target = HashMap<K, V>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl<K, V> DerefMut for Roomy<K, V> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.map
    }
}

impl<'a, K, V> IntoIterator for &'a Roomy<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::collections::hash_map::Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.map.iter()
    }
}

impl<'a, K, V> IntoIterator for &'a mut Roomy<K, V> {
    type Item = (&'a K, &'a mut V);
    type IntoIter = std::collections::hash_map::IterMut<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.map.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Forwards to the system allocator; counts only threads under test.
    #[global_allocator]
    static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;

    /// Batches of `per` streams (odd ids, as a client opens them), each
    /// batch removed before the next, at rising batch sizes: after the
    /// first batch of each size, no batch allocates, for any of 300 maps'
    /// random hash keys. With the first version (room judged by
    /// `capacity()`, which tombstones lower), about one map in 100 grew
    /// late at 100 streams a batch, as one CI run saw at 32; with a plain
    /// `insert`, one in seven at 16.
    #[test]
    fn a_steady_load_never_allocates() {
        let _serial = falconet_testkit::serial();
        for _ in 0..300 {
            let mut map: Roomy<u32, [u64; 4]> = Roomy::default();
            let mut next = 1u32;
            let mut batch = |map: &mut Roomy<u32, [u64; 4]>, per: u32| {
                let first = next;
                for k in 0..per {
                    assert!(map.insert(first + 2 * k, [0; 4]).is_none());
                }
                for k in 0..per {
                    assert!(map.remove(&(first + 2 * k)).is_some());
                }
                next = first + 2 * per;
            };
            for per in [16, 17, 32, 100] {
                batch(&mut map, per);
                let allocations = falconet_testkit::count_allocations(|| {
                    for _ in 0..800 {
                        batch(&mut map, per);
                    }
                });
                assert_eq!(allocations, 0, "the map grew at {per} a batch");
            }
        }
    }

    #[test]
    fn replaces_a_present_key() {
        let mut map = Roomy::default();
        assert_eq!(map.insert(1, "a"), None);
        assert_eq!(map.insert(1, "b"), Some("a"));
        assert_eq!(map.len(), 1);
    }
}
