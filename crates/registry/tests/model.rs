//! A proptest state machine: random operation sequences against a
//! `HashMap` model, including lookups held across removals, stale and
//! forged ids, sweeps, trims and drains.
#![cfg(not(falconet_registry_loom))]

mod common;

use std::collections::HashMap;

use common::{Tracked, count, drops};
use falconet_registry::{ConnectionId, Options, Ref, Registry};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert,
    /// Looks up an id ever issued (live or stale), chosen by index.
    Get(usize),
    /// Looks up an arbitrary `u64`.
    Forged(u64),
    /// Takes a `Ref` and keeps it.
    Hold(usize),
    /// Drops a kept `Ref`.
    Release(usize),
    /// `remove`: the value back, or, if this thread holds a `Ref` to the
    /// entry, `None` and the entry discarded.
    Remove(usize),
    Discard(usize),
    /// Sweeps, keeping tags not divisible by the modulus.
    Sweep(u64),
    Trim,
    /// Drains while the kept `Ref`s stay (their entries are discarded),
    /// then drops them.
    Drain,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => Just(Op::Insert),
        4 => any::<usize>().prop_map(Op::Get),
        1 => any::<u64>().prop_map(Op::Forged),
        2 => any::<usize>().prop_map(Op::Hold),
        2 => any::<usize>().prop_map(Op::Release),
        4 => any::<usize>().prop_map(Op::Remove),
        2 => any::<usize>().prop_map(Op::Discard),
        1 => (2..6u64).prop_map(Op::Sweep),
        1 => Just(Op::Trim),
        1 => Just(Op::Drain),
    ]
}

fn config() -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig { cases: 256, ..ProptestConfig::default() }
    }
}

/// Sequence lengths: shorter under Miri, which runs each op ~1000x slower.
fn max_ops(n: usize) -> usize {
    if cfg!(miri) { n / 20 } else { n }
}

/// The model of a `Ref` to `id` dropping: if `id` was removed while
/// referenced and this was its last `Ref`, its value is dropped now (1).
fn let_go(lingering: &mut HashMap<ConnectionId, usize>, id: ConnectionId) -> usize {
    let Some(refs) = lingering.get_mut(&id) else { return 0 };
    *refs -= 1;
    if *refs > 0 {
        return 0;
    }
    lingering.remove(&id);
    1
}

fn run(ops: Vec<Op>, shards: usize, max: usize) {
    let drops = drops();
    let registry: Registry<Tracked> =
        Registry::with_options(Options::new().shards(shards).max_connections(max)).unwrap();
    // The model: live entries, every id ever issued, and removed entries
    // still referenced (their value leaves with the last Ref).
    let mut live: HashMap<ConnectionId, u64> = HashMap::new();
    let mut issued: Vec<ConnectionId> = Vec::new();
    let mut lingering: HashMap<ConnectionId, usize> = HashMap::new();
    let mut dropped = 0;
    let mut next_tag = 0;
    let mut held: Vec<Ref<'_, Tracked>> = Vec::new();

    let holds = |held: &Vec<Ref<'_, Tracked>>, id: ConnectionId| {
        held.iter().filter(|r| r.id() == id).count()
    };
    let pick = |issued: &Vec<ConnectionId>, i: usize| {
        (!issued.is_empty()).then(|| issued[i % issued.len()])
    };

    for op in ops {
        match op {
            Op::Insert => {
                let tag = next_tag;
                next_tag += 1;
                match registry.insert(Tracked::new(tag, &drops)) {
                    Ok(id) => {
                        assert!(live.len() < max);
                        assert!(!issued.contains(&id), "an id was issued twice");
                        live.insert(id, tag);
                        issued.push(id);
                    }
                    Err(full) => {
                        assert_eq!(live.len(), max, "Full below the bound");
                        assert_eq!(full.value().tag, tag);
                        drop(full);
                        dropped += 1;
                    }
                }
            }
            Op::Get(i) => {
                if let Some(id) = pick(&issued, i) {
                    assert_eq!(registry.get(id).map(|v| v.tag), live.get(&id).copied(), "{id:?}");
                }
            }
            Op::Forged(raw) => {
                let id = ConnectionId::from_u64(raw);
                assert_eq!(registry.get(id).map(|v| v.tag), live.get(&id).copied());
            }
            Op::Hold(i) => {
                if let Some(id) = pick(&issued, i) {
                    let got = registry.get(id);
                    assert_eq!(got.as_ref().map(|v| v.tag), live.get(&id).copied());
                    held.extend(got);
                }
            }
            Op::Release(i) => {
                if !held.is_empty() {
                    let id = held.swap_remove(i % held.len()).id();
                    dropped += let_go(&mut lingering, id);
                }
            }
            Op::Remove(i) | Op::Discard(i) => {
                let Some(id) = pick(&issued, i) else { continue };
                let refs = holds(&held, id);
                if matches!(op, Op::Remove(_)) && refs == 0 {
                    let got = registry.remove(id);
                    assert_eq!(got.as_ref().map(|v| v.tag), live.remove(&id));
                    if got.is_some() {
                        dropped += 1;
                    }
                } else {
                    let was_live = live.remove(&id).is_some();
                    if matches!(op, Op::Remove(_)) {
                        assert!(registry.remove(id).is_none(), "held: removed as discard");
                    } else {
                        assert_eq!(registry.discard(id), was_live);
                    }
                    if was_live && refs == 0 {
                        dropped += 1;
                    } else if was_live {
                        lingering.insert(id, refs);
                    }
                }
            }
            Op::Sweep(modulus) => {
                let mut visited = 0;
                let removed = registry.sweep(|id, value| {
                    visited += 1;
                    assert_eq!(
                        live.get(&id),
                        Some(&value.tag),
                        "visited an entry not in the model"
                    );
                    value.tag % modulus != 0
                });
                assert_eq!(visited, live.len(), "visited every live entry once");
                let before = live.len();
                live.retain(|id, tag| {
                    if *tag % modulus != 0 {
                        return true;
                    }
                    match holds(&held, *id) {
                        0 => dropped += 1,
                        refs => {
                            lingering.insert(*id, refs);
                        }
                    }
                    false
                });
                assert_eq!(removed, before - live.len());
            }
            Op::Trim => {
                registry.trim();
            }
            Op::Drain => {
                let mut drained: Vec<_> = registry.drain().map(|(id, v)| (id, v.tag)).collect();
                let mut expected: Vec<_> = Vec::new();
                for (id, tag) in live.drain() {
                    match holds(&held, id) {
                        0 => expected.push((id, tag)),
                        refs => {
                            lingering.insert(id, refs);
                        }
                    }
                }
                drained.sort();
                expected.sort();
                assert_eq!(drained, expected);
                dropped += drained.len();
                for r in held.drain(..) {
                    let id = r.id();
                    drop(r);
                    dropped += let_go(&mut lingering, id);
                }
            }
        }
        assert_eq!(registry.len(), live.len());
        assert_eq!(count(&drops), dropped, "a value was dropped too early, too late or twice");
        for id in &issued {
            assert_eq!(registry.contains(*id), live.contains_key(id));
        }
    }
    let remaining = live.len() + lingering.len();
    drop(held);
    drop(registry);
    assert_eq!(count(&drops), dropped + remaining, "every value left exactly once");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn registry_matches_a_hash_map(ops in proptest::collection::vec(op(), 1..max_ops(300)), shards in 0..3u32) {
        run(ops, 1 << shards, 40);
    }

    #[test]
    fn registry_at_a_tight_bound_matches_a_hash_map(ops in proptest::collection::vec(op(), 1..max_ops(200))) {
        run(ops, 2, 5);
    }
}
