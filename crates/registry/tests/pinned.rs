//! The pinned read path (`Registry::pin`): lookups that write nothing, and
//! removals that end values only once no pinned thread can read them.
//!
//! These go through crossbeam-epoch, which keeps pointers in integers:
//! under Miri they run with `-Zmiri-permissive-provenance`
//! (`scripts/miri.sh`), the rest of the crate's tests with strict
//! provenance.
#![cfg(not(falconet_registry_loom))]

mod common;

/// One module, so that `--skip epoch_pinned` finds every test here.
mod epoch_pinned {
    use std::collections::HashMap;
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::thread;
    use std::time::Duration;

    use super::common::{Tracked, count, drops};
    use falconet_registry::{ConnectionId, Options, Registry};
    use proptest::prelude::*;

    fn registry<T>(shards: usize, max: usize) -> Registry<T> {
        Registry::with_options(Options::new().shards(shards).max_connections(max)).unwrap()
    }

    /// Drives the epoch (pins and flushes on this thread) until `done`: a
    /// deferred drop runs once every thread pinned at the removal has moved
    /// on, which other tests' threads in this process may delay a little.
    fn settle<T: Send + 'static>(registry: &Registry<T>, done: impl Fn() -> bool) {
        for _ in 0..1_000_000 {
            if done() {
                return;
            }
            registry.pin().flush();
            thread::yield_now();
        }
        panic!("the deferred drops never ran");
    }

    #[test]
    fn a_pinned_lookup_finds_live_ids_and_refuses_every_other() {
        let drops = drops();
        let registry = registry(2, 64);
        let a = registry.insert(Tracked::new(1, &drops)).unwrap();
        let b = registry.insert(Tracked::new(2, &drops)).unwrap();
        let stale = registry.insert(Tracked::new(3, &drops)).unwrap();
        drop(registry.remove(stale).unwrap());
        let reused = registry.insert(Tracked::new(4, &drops)).unwrap();
        let pinned = registry.pin();
        assert_eq!(pinned.get(a).map(|v| v.tag), Some(1));
        assert_eq!(pinned.get(b).map(|v| v.tag), Some(2));
        assert_eq!(pinned.get(reused).map(|v| v.tag), Some(4));
        assert!(pinned.get(stale).is_none(), "a stale id of a reused slot");
        // Below 2^32, every bit set, a far generation, the next generation, an
        // unallocated page, a shard past the last.
        let forged = [
            0,
            1,
            u64::MAX,
            a.as_u64() ^ (1 << 63),
            a.as_u64() + (1 << 32),
            (1 << 32) | (5000 << 8),
            (1 << 32) | 7,
        ];
        for raw in forged {
            assert!(pinned.get(ConnectionId::from_u64(raw)).is_none(), "{raw:#x}");
        }
        drop(pinned);
        assert_eq!(count(&drops), 1, "only the removed value");
    }

    #[test]
    fn a_value_read_through_a_pin_outlives_its_removal_until_the_pin_drops() {
        let drops = drops();
        let registry = registry(1, 64);
        let id = registry.insert(Tracked::new(7, &drops)).unwrap();
        let pinned = registry.pin();
        let value = pinned.get(id).unwrap();
        assert!(registry.discard(id));
        assert!(pinned.get(id).is_none(), "removed: later lookups refuse it");
        // The slot must not be reused (nor its value dropped) while we read.
        let others: Vec<_> =
            (0..40).map(|i| registry.insert(Tracked::new(100 + i, &drops)).unwrap()).collect();
        // The id's low 32 bits are its shard and slot (the generation is above).
        let place = |id: ConnectionId| id.as_u64() as u32;
        assert!(others.iter().all(|other| place(*other) != place(id)), "reused under a pin");
        for _ in 0..1000 {
            pinned.flush();
        }
        assert_eq!(value.tag, 7);
        assert_eq!(count(&drops), 0, "dropped while a pinned reader could read it");
        drop(pinned);
        settle(&registry, || count(&drops) == 1);
        drop(registry);
        assert_eq!(count(&drops), 41, "every value left exactly once");
    }

    #[test]
    fn remove_by_a_pinned_thread_discards_instead_of_waiting_for_itself() {
        let drops = drops();
        let registry = registry(1, 64);
        let id = registry.insert(Tracked::new(1, &drops)).unwrap();
        let pinned = registry.pin();
        let value = pinned.get(id).unwrap();
        assert!(registry.remove(id).is_none(), "a pinned thread cannot wait for itself");
        assert!(registry.is_empty() && !registry.contains(id));
        assert_eq!(value.tag, 1);
        drop(pinned);
        settle(&registry, || count(&drops) == 1);
        // Also pinned by someone else's crossbeam guard, not ours.
        let id = registry.insert(Tracked::new(2, &drops)).unwrap();
        let foreign = crossbeam_epoch::pin();
        assert!(registry.remove(id).is_none());
        drop(foreign);
        settle(&registry, || count(&drops) == 2);
    }

    #[test]
    fn remove_waits_for_a_pinned_reader_on_another_thread() {
        let registry = registry::<Box<AtomicU64>>(1, 64);
        let id = registry.insert(Box::new(AtomicU64::new(5))).unwrap();
        let (pinned_now, reader_done) = (Barrier::new(2), AtomicBool::new(false));
        thread::scope(|s| {
            s.spawn(|| {
                let pinned = registry.pin();
                let value = pinned.get(id).unwrap();
                pinned_now.wait();
                // The remover is (or will be) waiting for this pin: the value
                // must stay ours until we unpin.
                thread::sleep(Duration::from_millis(50));
                assert_eq!(value.load(Ordering::Relaxed), 5);
                reader_done.store(true, Ordering::SeqCst);
            });
            pinned_now.wait();
            let value = registry.remove(id).expect("not pinned here: remove waits and returns it");
            assert!(
                reader_done.load(Ordering::SeqCst),
                "remove returned while a reader was pinned"
            );
            value.store(6, Ordering::Relaxed); // ours now
        });
    }

    #[test]
    fn counted_lookups_sweeps_and_drains_keep_their_rules_in_deferring_mode() {
        let drops = drops();
        let registry = registry(2, 256);
        drop(registry.pin()); // deferring from now on
        let ids: Vec<_> =
            (0..100).map(|i| registry.insert(Tracked::new(i, &drops)).unwrap()).collect();
        // A Ref keeps its value past a discard; the end is then deferred.
        let held = registry.get(ids[0]).unwrap();
        assert!(registry.discard(ids[0]));
        assert_eq!(held.tag, 0);
        drop(held);
        // remove returns the value at once when nobody is pinned.
        assert_eq!(registry.remove(ids[1]).map(|v| v.tag), Some(1));
        // A sweep removing the odd tags.
        assert_eq!(registry.sweep(|_, v| v.tag % 2 == 0), 49);
        let drained: usize = registry.drain().count();
        assert_eq!(drained, 49);
        assert!(registry.is_empty());
        settle(&registry, || count(&drops) == 100);
        // Slots come back after the deferred ends: the registry refills.
        let again: Vec<_> =
            (0..256).map(|i| registry.insert(Tracked::new(i, &drops)).unwrap()).collect();
        assert_eq!(again.len(), 256);
    }

    #[test]
    fn deferred_ends_outlive_a_dropped_registry() {
        let drops = drops();
        {
            let registry = registry(4, 64);
            let ids: Vec<_> =
                (0..50).map(|i| registry.insert(Tracked::new(i, &drops)).unwrap()).collect();
            let pinned = registry.pin();
            for id in &ids {
                assert!(registry.discard(*id));
            }
            drop(pinned);
            for id in ids.iter().take(10) {
                assert!(!registry.discard(*id));
            }
            // The registry drops with its removals' ends still deferred.
        }
        for _ in 0..1_000_000 {
            if count(&drops) == 50 {
                return;
            }
            crossbeam_epoch::pin().flush();
            thread::yield_now();
        }
        panic!("deferred drops lost with the registry: {} of 50", count(&drops));
    }

    /// A value whose drop panics, carrying a tracked value that drops
    /// anyway (fields drop while the panic unwinds).
    struct Panicky {
        _tracked: Tracked,
        panics: bool,
    }

    impl Drop for Panicky {
        fn drop(&mut self) {
            if self.panics && !thread::panicking() {
                panic!("a value's Drop panics (on purpose, in a test)");
            }
        }
    }

    #[test]
    fn a_drop_that_panics_in_the_epoch_loses_nothing_and_surfaces_nowhere() {
        let drops = drops();
        let registry = registry(1, 64);
        drop(registry.pin());
        let ids: Vec<_> = (0..4)
            .map(|i| {
                registry
                    .insert(Panicky { _tracked: Tracked::new(i, &drops), panics: i == 0 })
                    .unwrap()
            })
            .collect();
        for &id in &ids {
            assert!(registry.discard(id));
        }
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            settle(&registry, || count(&drops) == 4);
        }));
        assert!(unwound.is_ok(), "a deferred drop's panic reached an unrelated caller");
        // Every slot came back: the registry fills to its bound again.
        let again: Vec<_> = (0..64)
            .map(|i| {
                registry
                    .insert(Panicky { _tracked: Tracked::new(i, &drops), panics: false })
                    .unwrap()
            })
            .collect();
        assert_eq!(again.len(), 64);
    }

    #[test]
    fn remove_returns_its_value_when_its_wait_collects_a_drop_that_panics() {
        let drops = drops();
        let registry = std::sync::Arc::new(registry(1, 64));
        drop(registry.pin());
        let a =
            registry.insert(Panicky { _tracked: Tracked::new(1, &drops), panics: true }).unwrap();
        let b =
            registry.insert(Panicky { _tracked: Tracked::new(2, &drops), panics: false }).unwrap();
        // A's end reaches the global queue (its thread exits), where the
        // wait inside remove(b) collects it.
        let other = std::sync::Arc::clone(&registry);
        thread::spawn(move || assert!(other.discard(a))).join().unwrap();
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| registry.remove(b)));
        let value =
            got.expect("remove unwound with another value's panic").expect("not pinned: the value");
        assert_eq!(value._tracked.tag, 2);
        drop(value);
        settle(&registry, || count(&drops) == 2);
    }

    /// A thread holding a `Ref` removes another entry (and waits for the
    /// pinned thread), while the pinned thread removes the entry that
    /// `Ref` holds: the pinned thread must not wait for the `Ref`.
    #[test]
    fn a_ref_holder_and_a_pinned_thread_removing_each_others_entries_both_return() {
        let registry = std::sync::Arc::new(registry::<u32>(1, 64));
        drop(registry.pin());
        let (x, y) = (registry.insert(1).unwrap(), registry.insert(2).unwrap());
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let holder = {
            let (registry, done_tx) = (std::sync::Arc::clone(&registry), done_tx.clone());
            thread::spawn(move || {
                let held = registry.get(x).unwrap();
                held_tx.send(()).unwrap();
                thread::sleep(Duration::from_millis(50)); // the other is pinned, in remove(x)
                let got = registry.remove(y);
                assert_eq!(*held, 1);
                drop(held);
                done_tx.send(got).unwrap();
            })
        };
        let pinned_remover = {
            let registry = std::sync::Arc::clone(&registry);
            thread::spawn(move || {
                held_rx.recv().unwrap();
                let pinned = registry.pin();
                assert!(registry.remove(x).is_none(), "pinned: removed as discard");
                thread::sleep(Duration::from_millis(100)); // stay pinned a while
                drop(pinned);
                done_tx.send(None).unwrap();
            })
        };
        for _ in 0..2 {
            done_rx.recv_timeout(Duration::from_secs(30)).expect("the two removals deadlocked");
        }
        holder.join().unwrap();
        pinned_remover.join().unwrap();
        assert!(registry.is_empty());
    }

    #[test]
    fn drain_on_a_pinned_thread_discards_what_it_cannot_hand_out() {
        let drops = drops();
        let registry = registry(2, 64);
        for tag in 0..5 {
            registry.insert(Tracked::new(tag, &drops)).unwrap();
        }
        let pinned = registry.pin();
        assert_eq!(registry.drain().count(), 0, "a pinned thread cannot wait: all discarded");
        drop(pinned);
        assert!(registry.is_empty());
        settle(&registry, || count(&drops) == 5);
    }

    #[test]
    fn dropping_the_registry_drops_its_live_values_at_once() {
        let drops = drops();
        let registry = registry(2, 64);
        drop(registry.pin());
        for tag in 0..3 {
            registry.insert(Tracked::new(tag, &drops)).unwrap();
        }
        let removed = registry.insert(Tracked::new(9, &drops)).unwrap();
        let pinned = registry.pin();
        assert!(registry.discard(removed));
        drop(pinned);
        // The removed value's end may still be pending: it keeps the
        // shards, but not the live values.
        drop(registry);
        assert!(count(&drops) >= 3, "live values outlived their registry");
        for _ in 0..1_000_000 {
            if count(&drops) == 4 {
                return;
            }
            crossbeam_epoch::pin().flush();
            thread::yield_now();
        }
        panic!("the removed value was never dropped");
    }

    /// Values whose drop poisons them first: a reader that saw one after its
    /// end would see the poison (and Miri or a sanitizer the use after free).
    struct Canary(Box<[u64; 4]>);

    const ALIVE: u64 = 0x5eed_5eed_5eed_5eed;

    impl Canary {
        fn new(tag: u64) -> Self {
            Self(Box::new([ALIVE, tag, !tag, ALIVE]))
        }
        fn check(&self) -> u64 {
            let words = *self.0;
            assert!(words[0] == ALIVE && words[3] == ALIVE && words[2] == !words[1], "{words:x?}");
            words[1]
        }
    }

    impl Drop for Canary {
        fn drop(&mut self) {
            for word in self.0.iter_mut() {
                // Volatile: the poison must really be written before the free.
                // SAFETY: a valid, aligned, exclusive reference.
                unsafe { std::ptr::write_volatile(word, 0xdead) };
            }
        }
    }

    #[test]
    fn pinned_readers_never_see_an_ended_value_under_churn() {
        let (readers, per_thread, batch) = if cfg!(miri) { (2, 60, 8) } else { (3, 200_000, 64) };
        let registry = registry::<Canary>(4, 4096);
        let ids: Vec<ConnectionId> =
            (0..256).map(|i| registry.insert(Canary::new(i)).unwrap()).collect();
        let shared: Vec<AtomicU64> = ids.iter().map(|id| AtomicU64::new(id.as_u64())).collect();
        let found = AtomicUsize::new(0);
        thread::scope(|s| {
            for t in 0..readers {
                let (registry, shared, found) = (&registry, &shared, &found);
                s.spawn(move || {
                    let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ (t as u64 + 1);
                    let mut done = 0;
                    while done < per_thread {
                        let pinned = registry.pin();
                        for _ in 0..batch {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            let id = ConnectionId::from_u64(
                                shared[rng as usize % shared.len()].load(Ordering::Relaxed),
                            );
                            if let Some(value) = pinned.get(id) {
                                value.check();
                                found.fetch_add(1, Ordering::Relaxed);
                            }
                            done += 1;
                        }
                        drop(pinned);
                    }
                });
            }
            // The writer: discards (deferred), removes (waits), re-inserts.
            let writer = s.spawn(|| {
                let mut rng = 0x2545_f491_4f6c_dd1d_u64;
                let mut tag = 1 << 20;
                let rounds = if cfg!(miri) { 40 } else { 20_000 };
                for round in 0..rounds {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let at = rng as usize % shared.len();
                    let id = ConnectionId::from_u64(shared[at].load(Ordering::Relaxed));
                    if round % 2 == 0 {
                        assert!(registry.discard(id));
                    } else {
                        let value = registry.remove(id).expect("the writer owns every removal");
                        value.check();
                    }
                    tag += 1;
                    let fresh = registry.insert(Canary::new(tag)).unwrap();
                    shared[at].store(fresh.as_u64(), Ordering::Relaxed);
                }
            });
            writer.join().unwrap();
        });
        assert!(found.load(Ordering::Relaxed) > 0);
        assert_eq!(registry.len(), 256);
    }

    // The sequential model: random operations, some under a pin held across
    // several of them, against a `HashMap`. Drops are deferred, so the model
    // checks that no value ends while a pin could read it (every reference
    // taken under the current pin is re-read after each operation), that
    // lookups match the model, and that every value ends exactly once in the
    // end.
    #[derive(Clone, Debug)]
    enum Op {
        Insert,
        Pin,
        Unpin,
        /// A pinned lookup (pins for this one lookup if no pin is held).
        PinnedGet(usize),
        Get(usize),
        Remove(usize),
        Discard(usize),
        Sweep(u64),
        Flush,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => Just(Op::Insert),
            2 => Just(Op::Pin),
            2 => Just(Op::Unpin),
            6 => any::<usize>().prop_map(Op::PinnedGet),
            2 => any::<usize>().prop_map(Op::Get),
            3 => any::<usize>().prop_map(Op::Remove),
            3 => any::<usize>().prop_map(Op::Discard),
            1 => (2..5u64).prop_map(Op::Sweep),
            1 => Just(Op::Flush),
        ]
    }

    fn run_model(ops: Vec<Op>, shards: usize, max: usize) {
        let drops = drops();
        let registry: Registry<Tracked> = registry(shards, max);
        let mut live: HashMap<ConnectionId, u64> = HashMap::new();
        let mut issued: Vec<ConnectionId> = Vec::new();
        let mut next_tag = 0;
        let mut inserted = 0;
        let mut pin = None;
        let mut reads: Vec<(&Tracked, u64)> = Vec::new();
        let pick = |issued: &Vec<ConnectionId>, i: usize| {
            (!issued.is_empty()).then(|| issued[i % issued.len()])
        };
        for op in ops {
            match op {
                Op::Insert => {
                    next_tag += 1;
                    if let Ok(id) = registry.insert(Tracked::new(next_tag, &drops)) {
                        inserted += 1;
                        live.insert(id, next_tag);
                        issued.push(id);
                    } else {
                        // Only at the bound, though removed values wait for
                        // the epoch to give their slots back.
                        assert_eq!(live.len(), max, "Full below the bound");
                        inserted += 1; // `Full` handed it back, dropped here
                    }
                }
                Op::Pin => {
                    if pin.is_none() {
                        pin = Some(registry.pin());
                    }
                }
                Op::Unpin => {
                    reads.clear();
                    pin = None;
                }
                Op::PinnedGet(i) => {
                    let Some(id) = pick(&issued, i) else { continue };
                    match &pin {
                        Some(pinned) => {
                            let got = pinned.get(id);
                            assert_eq!(got.map(|v| v.tag), live.get(&id).copied());
                            if let Some(value) = got {
                                let value = std::ptr::from_ref(value);
                                // SAFETY: `reads` is cleared before the pin drops.
                                let value: &'static Tracked = unsafe { &*value };
                                reads.push((value, value.tag));
                            }
                        }
                        None => {
                            assert_eq!(
                                registry.pin().get(id).map(|v| v.tag),
                                live.get(&id).copied()
                            )
                        }
                    }
                }
                Op::Get(i) => {
                    let Some(id) = pick(&issued, i) else { continue };
                    assert_eq!(registry.get(id).map(|v| v.tag), live.get(&id).copied());
                }
                Op::Remove(i) => {
                    let Some(id) = pick(&issued, i) else { continue };
                    let expected = live.remove(&id);
                    let got = registry.remove(id);
                    if pin.is_some() {
                        assert!(got.is_none(), "pinned: removed as discard");
                    } else {
                        assert_eq!(got.as_ref().map(|v| v.tag), expected);
                    }
                }
                Op::Discard(i) => {
                    let Some(id) = pick(&issued, i) else { continue };
                    assert_eq!(registry.discard(id), live.remove(&id).is_some());
                }
                Op::Sweep(modulus) => {
                    let before = live.len();
                    live.retain(|_, tag| *tag % modulus != 0);
                    assert_eq!(registry.sweep(|_, v| v.tag % modulus != 0), before - live.len());
                }
                Op::Flush => match &pin {
                    Some(pinned) => pinned.flush(),
                    None => registry.pin().flush(),
                },
            }
            for (value, tag) in &reads {
                assert_eq!(value.tag, *tag, "a value read under the pin changed or ended");
            }
            assert!(count(&drops) <= inserted - live.len(), "a live value was dropped");
            assert_eq!(registry.len(), live.len());
        }
        reads.clear();
        drop(pin);
        let live_now = live.len();
        settle(&registry, || count(&drops) == inserted - live_now);
        drop(registry);
        assert_eq!(count(&drops), inserted, "every value left exactly once");
    }

    proptest! {
        #![proptest_config(if cfg!(miri) {
            ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() }
        } else {
            ProptestConfig::with_cases(256)
        })]

        #[test]
        fn pinned_registry_matches_a_hash_map(
            ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 15 } else { 300 }),
            shards in 0..3u32,
        ) {
            run_model(ops, 1 << shards, 24);
        }
    }

    /// A value whose `drop` panics when the registry drops it, while a
    /// pinned removal's deferred end still shares the shards (another
    /// thread's pin holds the epoch): the registry's own drop drops the
    /// live values, every one of them, and the panic comes out after; the
    /// removed value drops with its deferred end.
    #[test]
    fn a_value_that_panics_in_drop_with_a_deferred_removal_does_not_leak_the_others() {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (holding, held) = std::sync::mpsc::channel();
        let holder = thread::spawn(move || {
            let _guard = crossbeam_epoch::pin();
            holding.send(()).unwrap();
            wait.recv().unwrap();
        });
        held.recv().unwrap();
        let (drops, dropped) = super::common::drop_bombs(|registry, ids| {
            let pin = registry.pin();
            assert!(registry.remove(ids[9]).is_none(), "discarded while pinned");
            drop(pin);
        });
        assert!(dropped.is_err(), "the first panic comes out");
        assert_eq!(count(&drops), 9, "every live value");
        release.send(()).unwrap();
        holder.join().unwrap();
        for _ in 0..1_000_000 {
            if count(&drops) == 10 {
                return;
            }
            crossbeam_epoch::pin().flush();
            thread::yield_now();
        }
        panic!("the deferred drop never ran");
    }
}
