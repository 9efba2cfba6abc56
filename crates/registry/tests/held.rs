//! The per-thread held list that makes `remove` of an entry the
//! calling thread holds discard instead of waiting.
#![cfg(not(falconet_registry_loom))]

use std::cell::RefCell;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use falconet_registry::{ConnectionId, Options, Registry};

fn one_shard() -> Registry<u64> {
    Registry::with_options(Options::new().shards(1)).unwrap()
}

/// Runs `f` on a thread; fails instead of hanging.
fn finishes<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(Duration::from_secs(10)).expect("hung (remove waited for its own thread?)")
}

/// A `Ref` leaked with `mem::forget` (safe code) leaves its state word's
/// address in this thread's held list forever. Once its registry is gone,
/// a new registry's entry at the same address is taken for "held": `remove`
/// returns `None` and drops the value, though no `Ref` to it exists.
#[test]
// The leak is the point, and Miri's leak check would report it.
#[cfg_attr(miri, ignore = "leaks a Ref on purpose")]
fn a_leaked_ref_of_a_dropped_registry_makes_remove_of_a_new_entry_discard() {
    {
        let mut false_positives = 0;
        for _ in 0..50 {
            let old = one_shard();
            let id = old.insert(1).unwrap();
            std::mem::forget(old.get(id).unwrap());
            drop(old);
            let new = one_shard();
            let id = new.insert(2).unwrap();
            // Nothing holds a Ref to `id`: remove must hand the value back.
            if new.remove(id) != Some(2) {
                false_positives += 1;
            }
        }
        assert_eq!(false_positives, 0, "remove returned None for an entry nobody holds (of 50)");
    }
}

/// More than 16 Refs (the inline part) held at once, of distinct and of
/// the same entries, dropped in scrambled orders: afterwards the list is
/// empty again, so every remove returns the value (no stale address).
#[test]
fn many_refs_dropped_in_any_order_leave_no_stale_address() {
    finishes(|| {
        let registry = one_shard();
        let ids: Vec<ConnectionId> = (0..40).map(|i| registry.insert(i).unwrap()).collect();
        for round in 0..20u64 {
            let mut refs: Vec<_> = ids
                .iter()
                .chain(ids.iter().take(10)) // repeats
                .map(|&id| registry.get(id).unwrap())
                .collect();
            // A scrambled drop order, different per round.
            let mut state = round * 2654435761 + 1;
            while !refs.is_empty() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let at = (state % refs.len() as u64) as usize;
                drop(refs.swap_remove(at));
            }
        }
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(registry.remove(id), Some(i as u64), "entry {i} still looks held");
        }
        assert!(registry.is_empty());
    });
}

/// Nested Refs of one entry: remove discards; len is decremented once; the
/// value is dropped when the last Ref goes; a second remove finds nothing.
#[test]
fn nested_refs_remove_discards_once_and_len_stays_exact() {
    finishes(|| {
        let registry = one_shard();
        let id = registry.insert(7).unwrap();
        let other = registry.insert(8).unwrap();
        let a = registry.get(id).unwrap();
        let b = registry.get(id).unwrap();
        assert_eq!(registry.remove(id), None);
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.remove(id), None);
        assert_eq!(registry.len(), 1);
        assert!(registry.get(id).is_none());
        drop(a);
        assert_eq!(*b, 7);
        drop(b);
        // The slot is reusable and the other entry is unaffected.
        assert_eq!(registry.remove(other), Some(8));
        let again = registry.insert(9).unwrap();
        assert!(registry.get(id).is_none());
        assert_eq!(registry.remove(again), Some(9));
        assert!(registry.is_empty());
    });
}

/// A sweep whose closure panics: the sweep's internal Ref unwinds and
/// leaves the held list, so a later remove of that entry returns it.
#[test]
fn a_panicking_sweep_closure_leaves_nothing_held() {
    finishes(|| {
        let registry = one_shard();
        let id = registry.insert(5).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            registry.sweep(|_, _| panic!("boom"));
        }));
        assert!(caught.is_err());
        assert_eq!(registry.remove(id), Some(5));
    });
}

/// A sweep closure removing the entry it visits, and another entry that a
/// Ref outside the sweep holds: no hang, len exact, values dropped once.
#[test]
fn sweep_closure_removes_visited_and_other_held_entries() {
    finishes(|| {
        let registry = one_shard();
        let ids: Vec<_> = (0..30).map(|i| registry.insert(i).unwrap()).collect();
        let outside = registry.get(ids[29]).unwrap();
        let removed = registry.sweep(|id, &v| {
            if v % 3 == 0 {
                assert_eq!(registry.remove(id), None, "held by the sweep");
            }
            if v == 1 {
                assert_eq!(registry.remove(ids[29]), None, "held outside");
            }
            v % 3 != 1
        });
        // v%3==1: 1,4,..,28 = 10 entries; v%3==0 discarded through remove: 10.
        assert_eq!(removed, 10);
        assert_eq!(registry.len(), 30 - 10 - 10 - 1);
        assert_eq!(*outside, 29);
        drop(outside);
        assert_eq!(registry.drain().count(), 9);
        assert!(registry.is_empty());
    });
}

/// Refs taken and removed inside another thread-local's destructor (after
/// the thread's other locals may be gone): no hang, the value comes back.
#[test]
// The registry is leaked (a thread-local destructor needs it 'static),
// which Miri's leak check would report.
#[cfg_attr(miri, ignore = "leaks its registry on purpose")]
fn refs_inside_a_thread_local_destructor() {
    /// The registry, an id to hold and remove, an id to remove, and where
    /// to report the two removals.
    type Task = (
        &'static Registry<u64>,
        ConnectionId,
        ConnectionId,
        mpsc::Sender<(Option<u64>, Option<u64>)>,
    );
    struct OnExit(Option<Task>);
    impl Drop for OnExit {
        fn drop(&mut self) {
            if let Some((registry, held, free, tx)) = self.0.take() {
                let r = registry.get(held).unwrap();
                let a = registry.remove(held);
                drop(r);
                let b = registry.remove(free);
                tx.send((a, b)).unwrap();
            }
        }
    }
    thread_local! { static ON_EXIT: RefCell<OnExit> = const { RefCell::new(OnExit(None)) }; }
    let registry: &'static Registry<u64> = Box::leak(Box::new(one_shard()));
    let held = registry.insert(1).unwrap();
    let free = registry.insert(2).unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        // Use the registry first, so its thread-locals exist before ours.
        drop(registry.get(free));
        ON_EXIT.with(|slot| slot.borrow_mut().0 = Some((registry, held, free, tx)));
    });
    let (a, b) = rx.recv_timeout(Duration::from_secs(10)).expect("hung in a TLS destructor");
    assert_eq!((a, b), (None, Some(2)));
    assert_eq!(registry.len(), 0);
}
