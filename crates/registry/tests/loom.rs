//! loom models of the registry's races, one per race, each named for it.
//!
//! ```text
//! RUSTFLAGS="--cfg falconet_registry_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p falconet-registry --test loom --release
//! ```
//! (`scripts/loom.sh` runs them.) Values are `loom::sync::Arc`s: loom fails
//! a model that leaks one (a value never dropped), and every read of a
//! value through a `Ref` is checked against the removal that moves it out
//! (a use after free is a causality violation).
//!
//! Under loom the first page has 2 slots (then 4, 8) and inserts start at
//! shard 0, so the models reach page growth, reuse and trimming quickly.
#![cfg(falconet_registry_loom)]

use falconet_registry::{ConnectionId, Options, Registry};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

type Value = Arc<u64>;

fn registry(shards: usize) -> Arc<Registry<Value>> {
    Arc::new(Registry::with_options(Options::new().shards(shards).max_connections(8)).unwrap())
}

/// A lookup racing `remove`: the lookup sees the whole value or nothing,
/// and `remove` always gets the value back (it waits for the `Ref`).
#[test]
fn get_racing_remove() {
    model(|| {
        let registry = registry(1);
        let value = Arc::new(7);
        let id = registry.insert(Arc::clone(&value)).unwrap();
        let reader = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.get(id).map(|v| **v))
        };
        let removed = registry.remove(id).expect("remove always wins its own id");
        assert_eq!(*removed, 7);
        assert!(matches!(reader.join().unwrap(), None | Some(7)));
        drop(removed);
        assert_eq!(Arc::strong_count(&value), 1, "the registry kept a copy");
        assert!(registry.is_empty());
    });
}

/// A thread removes an entry it holds while another thread looks it up:
/// the removal does not wait for its own `Ref` (it discards), the other
/// thread sees the whole value or nothing, and the value is dropped exactly
/// once, by whichever `Ref` goes last; the slot is free again afterwards.
#[test]
fn remove_by_a_holder_racing_get() {
    model(|| {
        let registry = registry(1);
        let value = Arc::new(5);
        let id = registry.insert(Arc::clone(&value)).unwrap();
        let reader = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.get(id).map(|v| **v))
        };
        let mine = registry.get(id).expect("live until we remove it");
        assert!(registry.remove(id).is_none(), "held by this thread: discarded");
        assert!(registry.get(id).is_none());
        assert_eq!(**mine, 5);
        drop(mine);
        assert!(matches!(reader.join().unwrap(), None | Some(5)));
        assert_eq!(Arc::strong_count(&value), 1, "dropped once the last holder left");
        assert!(registry.is_empty());
        let again = registry.insert(Arc::new(6)).unwrap();
        assert_eq!(**registry.get(again).unwrap(), 6);
    });
}

/// A `Ref` held across a `discard`: the value stays valid for the holder
/// and is dropped exactly once, by whichever of the two goes last.
#[test]
fn get_racing_discard() {
    model(|| {
        let registry = registry(1);
        let value = Arc::new(9);
        let id = registry.insert(Arc::clone(&value)).unwrap();
        let reader = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || {
                let held = registry.get(id)?;
                thread::yield_now();
                Some(**held)
            })
        };
        assert!(registry.discard(id));
        assert!(matches!(reader.join().unwrap(), None | Some(9)));
        assert_eq!(Arc::strong_count(&value), 1, "dropped once the last holder left");
        assert!(registry.get(id).is_none());
        // The slot is vacant again: the next insert reuses it.
        let again = registry.insert(Arc::new(1)).unwrap();
        assert_eq!(again.as_u64() & 0xffff_ffff, id.as_u64() & 0xffff_ffff);
        assert_ne!(again, id);
    });
}

/// Insert, remove and lookup on one shard from three threads: every lookup
/// sees a value that belongs to the id it asked for.
#[test]
fn insert_remove_get() {
    model(|| {
        let registry = registry(1);
        let old = registry.insert(Arc::new(1)).unwrap();
        let inserter = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.insert(Arc::new(2)).unwrap())
        };
        let looker = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.get(old).map(|v| **v))
        };
        assert_eq!(registry.remove(old).map(|v| *v), Some(1));
        let new = inserter.join().unwrap();
        assert!(matches!(looker.join().unwrap(), None | Some(1)));
        assert_eq!(registry.get(new).map(|v| **v), Some(2));
        assert_eq!(registry.len(), 1);
    });
}

/// A lookup of an id handed over by a relaxed store, racing its insert:
/// with no hand-off ordering the insert may not be visible yet (`None`),
/// but a lookup that finds the entry sees the whole value, by the
/// registry's own publication.
#[test]
fn get_of_a_concurrent_insert() {
    model(|| {
        let registry = registry(1);
        let token = Arc::new(AtomicU64::new(0));
        let inserter = {
            let (registry, token) = (Arc::clone(&registry), Arc::clone(&token));
            thread::spawn(move || {
                let id = registry.insert(Arc::new(2)).unwrap();
                token.store(id.as_u64(), Ordering::Relaxed);
            })
        };
        let raw = token.load(Ordering::Relaxed);
        if raw != 0 {
            let seen = registry.get(ConnectionId::from_u64(raw)).map(|v| **v);
            assert!(matches!(seen, None | Some(2)), "{seen:?}");
        }
        inserter.join().unwrap();
    });
}

/// A stale id while its slot is vacated and reused by a newer connection:
/// it finds the old value or nothing, never the new one.
#[test]
fn stale_id_after_its_slot_is_reused() {
    model(|| {
        let registry = registry(1);
        let old = registry.insert(Arc::new(1)).unwrap();
        let churn = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || {
                registry.remove(old).unwrap();
                registry.insert(Arc::new(2)).unwrap()
            })
        };
        let stale = registry.get(old).map(|v| **v);
        let still = registry.contains(old);
        let new = churn.join().unwrap();
        assert_eq!(new.as_u64() & 0xffff_ffff, old.as_u64() & 0xffff_ffff, "the slot was reused");
        assert!(matches!(stale, None | Some(1)), "{stale:?}");
        let _ = still;
        assert!(registry.get(old).is_none());
        assert!(!registry.discard(old));
        assert_eq!(registry.get(new).map(|v| **v), Some(2));
    });
}

/// A sweep racing an insert and a remove on the same shard: it removes
/// exactly what it rejects, visits nothing twice, and every value is
/// dropped once.
#[test]
fn sweep_racing_insert_and_remove() {
    model(|| {
        let registry = registry(1);
        let doomed = Arc::new(1);
        let removed = Arc::new(2);
        let a = registry.insert(Arc::clone(&doomed)).unwrap();
        let b = registry.insert(Arc::clone(&removed)).unwrap();
        let sweeper = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || {
                let mut seen = Vec::new();
                let n = registry.sweep(|id, value| {
                    assert!(!seen.contains(&id));
                    seen.push(id);
                    **value != 1
                });
                (n, seen)
            })
        };
        let inserter = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.insert(Arc::new(3)).unwrap())
        };
        assert_eq!(registry.remove(b).map(|v| *v), Some(2));
        let (n, seen) = sweeper.join().unwrap();
        let c = inserter.join().unwrap();
        assert_eq!(n, 1, "the sweep removed the rejected entry, only");
        assert!(seen.contains(&a));
        assert!(!registry.contains(a));
        assert_eq!(registry.get(c).map(|v| **v), Some(3));
        assert_eq!(registry.len(), 1);
        assert_eq!(Arc::strong_count(&doomed), 1);
        assert_eq!(Arc::strong_count(&removed), 1);
    });
}

/// `remove` and `discard` of one id: exactly one wins.
#[test]
fn two_removals_of_one_id() {
    model(|| {
        let registry = registry(1);
        let value = Arc::new(5);
        let id = registry.insert(Arc::clone(&value)).unwrap();
        let other = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.discard(id))
        };
        let took = registry.remove(id).is_some();
        let discarded = other.join().unwrap();
        assert!(took ^ discarded, "took {took}, discarded {discarded}");
        assert_eq!(Arc::strong_count(&value), 1);
        assert!(registry.is_empty());
    });
}

/// A trim freeing an emptied page while an insert needs that page and a
/// stale id into it is looked up.
#[test]
fn trim_racing_insert_and_stale_lookup() {
    model(|| {
        let registry = registry(1);
        // Page 0 holds 2 slots under loom: the next two go to page 1.
        let _keep = [registry.insert(Arc::new(0)).unwrap(), registry.insert(Arc::new(0)).unwrap()];
        let stale: Vec<ConnectionId> =
            (0..2).map(|_| registry.insert(Arc::new(1)).unwrap()).collect();
        for id in &stale {
            registry.remove(*id).unwrap();
        }
        let trimmer = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.trim())
        };
        let looker = {
            let registry = Arc::clone(&registry);
            let id = stale[0];
            thread::spawn(move || registry.get(id).is_none())
        };
        let new = registry.insert(Arc::new(2)).unwrap();
        assert!(trimmer.join().unwrap() <= 1);
        assert!(looker.join().unwrap());
        assert_eq!(registry.get(new).map(|v| **v), Some(2));
        assert!(stale.iter().all(|id| registry.get(*id).is_none()));
    });
}

/// A vacant entry's id, published to another thread before the value is:
/// a lookup sees nothing or the whole value, never a torn or stale one;
/// an abandoned reservation's id finds nothing even once its slot is
/// taken again by another thread's insert.
#[test]
fn vacant_entry_id_looked_up_before_and_after_insert() {
    model(|| {
        let registry = registry(1);
        let published = Arc::new(AtomicU64::new(0));
        let reader = {
            let (registry, published) = (Arc::clone(&registry), Arc::clone(&published));
            thread::spawn(move || {
                let raw = published.load(Ordering::Acquire);
                if raw == 0 {
                    return None;
                }
                registry.get(ConnectionId::from_u64(raw)).map(|v| **v)
            })
        };
        let abandoned = registry.vacant_entry().unwrap();
        let stale = abandoned.id();
        drop(abandoned);
        let entry = registry.vacant_entry().unwrap();
        let id = entry.id();
        published.store(id.as_u64(), Ordering::Release);
        entry.insert(Arc::new(id.as_u64()));
        let seen = reader.join().unwrap();
        assert!(matches!(seen, None) || seen == Some(id.as_u64()), "{seen:?}");
        assert!(registry.get(stale).is_none());
        assert_eq!(registry.len(), 1);
        drop(registry.remove(id));
    });
}

// The pinned read path (`Registry::pin`). Under loom the epoch is the
// crate's shim (`src/epoch.rs`): a deferred end runs when the last pinned
// thread unpins. Each model pins once before its threads start, so the
// registry is already deferring (loom cannot check the `SeqCst` mode
// switch, see `src/pinned.rs`). A pinned read is tracked by loom until its
// pin drops, so an end (drop or move) of the value that is not ordered
// after it fails the model.

/// A deferring registry holding 7.
fn pinned_registry() -> (Arc<Registry<Value>>, Value, ConnectionId) {
    let registry = registry(1);
    drop(registry.pin());
    let value = Arc::new(7);
    let id = registry.insert(Arc::clone(&value)).unwrap();
    (registry, value, id)
}

/// A thread that looks `id` up once under a pin of its own.
fn pinned_reader(
    registry: &Arc<Registry<Value>>,
    id: ConnectionId,
) -> thread::JoinHandle<Option<u64>> {
    let registry = Arc::clone(registry);
    thread::spawn(move || registry.pin().get(id).map(|v| **v))
}

/// A pinned lookup racing `discard`: it reads the whole value or nothing,
/// and the value is dropped exactly once, after the reader unpins.
#[test]
fn pinned_get_racing_discard() {
    model(|| {
        let (registry, value, id) = pinned_registry();
        let reader = pinned_reader(&registry, id);
        assert!(registry.discard(id));
        assert!(matches!(reader.join().unwrap(), None | Some(7)));
        assert_eq!(Arc::strong_count(&value), 1, "dropped once nobody was pinned");
        assert!(registry.is_empty());
    });
}

/// A pinned lookup racing `remove` on an unpinned thread: `remove` waits
/// for the reader's pin and returns the value; the reader sees it whole
/// or not at all.
#[test]
fn pinned_get_racing_remove() {
    model(|| {
        let (registry, value, id) = pinned_registry();
        let reader = pinned_reader(&registry, id);
        let removed = registry.remove(id).expect("not pinned: remove waits and returns it");
        assert_eq!(*removed, 7);
        drop(removed);
        assert!(matches!(reader.join().unwrap(), None | Some(7)));
        assert_eq!(Arc::strong_count(&value), 1);
    });
}

/// A stale id looked up under a pin while its entry is discarded and a
/// new connection is inserted (into the same slot, once the end ran): the
/// reader finds the old value or nothing, never the new one.
#[test]
fn pinned_get_racing_discard_and_reuse() {
    model(|| {
        let (registry, _value, id) = pinned_registry();
        let reader = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || {
                let pinned = registry.pin();
                let first = pinned.get(id).map(|v| **v);
                let second = pinned.get(id).map(|v| **v);
                (first, second)
            })
        };
        assert!(registry.discard(id));
        let fresh = registry.insert(Arc::new(8)).unwrap();
        let (first, second) = reader.join().unwrap();
        assert!(matches!(first, None | Some(7)) && matches!(second, None | Some(7)));
        assert!(!(first.is_none() && second.is_some()), "found again after it was gone");
        assert_eq!(**registry.get(fresh).unwrap(), 8);
    });
}

/// The last counted `Ref` of a discarded entry drops on one thread while a
/// pinned lookup reads on another: the `Ref`'s end is deferred behind the
/// pin, and the value is dropped once.
#[test]
fn pinned_get_racing_the_last_ref_of_a_discard() {
    model(|| {
        let (registry, value, id) = pinned_registry();
        let held = registry.get(id).unwrap();
        let reader = pinned_reader(&registry, id);
        let discarder = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || assert!(registry.discard(id)))
        };
        assert_eq!(**held, 7);
        drop(held);
        discarder.join().unwrap();
        assert!(matches!(reader.join().unwrap(), None | Some(7)));
        assert_eq!(Arc::strong_count(&value), 1);
    });
}

/// `remove` by a thread that is itself pinned, racing a pinned reader on
/// another thread: it cannot wait for its own pin, so it discards
/// (`None`) and the value is dropped once, after both unpin.
#[test]
fn remove_by_a_pinned_thread_racing_a_pinned_reader() {
    model(|| {
        let (registry, value, id) = pinned_registry();
        let reader = pinned_reader(&registry, id);
        {
            let pinned = registry.pin();
            let mine = pinned.get(id).map(|v| **v);
            assert!(registry.remove(id).is_none(), "pinned: removed as discard");
            assert_eq!(mine, Some(7));
        }
        assert!(matches!(reader.join().unwrap(), None | Some(7)));
        assert_eq!(Arc::strong_count(&value), 1);
    });
}
