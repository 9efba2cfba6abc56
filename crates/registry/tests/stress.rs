//! Four threads of lookup / insert / remove churn with a sweep running,
//! every value checked to belong to the id it was found under.
//!
//! `FALCONET_REGISTRY_STRESS_OPS` sets the operations per thread (default
//! 4 million, 300 under Miri; `scripts/soak.sh` runs 50 million).
#![cfg(not(falconet_registry_loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;

use falconet_registry::{ConnectionId, Options, Registry};

const THREADS: usize = 4;
/// Ids each thread publishes for the others to look up.
const RING: usize = 256;

static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// A connection: its own id (set right after insert, before the id is
/// published) and a checksum of its owner and sequence number.
struct Conn {
    id: AtomicU64,
    owner: u64,
    check: u64,
}

fn check_of(owner: u64) -> u64 {
    owner.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ 0xa5a5
}

impl Conn {
    fn new(owner: u64) -> Self {
        Self { id: AtomicU64::new(0), owner, check: check_of(owner) }
    }

    /// The value belongs to `id`: it is intact and was inserted under it.
    fn verify(&self, id: ConnectionId) {
        assert_eq!(self.check, check_of(self.owner), "a torn or freed value");
        let own = self.id.load(Ordering::Acquire);
        assert!(own == id.as_u64() || own == 0, "found under {id:?}, but it is {own:#x}");
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        assert_eq!(self.check, check_of(self.owner), "dropped twice or torn");
        self.check = 0;
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

fn ops() -> u64 {
    std::env::var("FALCONET_REGISTRY_STRESS_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 300 } else { 4_000_000 })
}

#[test]
fn churn_with_a_sweep_running() {
    let ops = ops();
    let registry: Registry<Conn> =
        Registry::with_options(Options::new().shards(8).max_connections(1 << 20)).unwrap();
    let published: Vec<AtomicU64> = (0..THREADS * RING).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let inserted = AtomicUsize::new(0);
    let (hits, sweeps, swept) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    thread::scope(|s| {
        // Stops the sweeper however the workers end, so a failure cannot hang.
        struct StopOnDrop<'a>(&'a AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = StopOnDrop(&stop);
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let removed = registry.sweep(|id, conn| {
                    conn.verify(id);
                    conn.owner % 13 != 0
                });
                swept.fetch_add(removed, Ordering::Relaxed);
                sweeps.fetch_add(1, Ordering::Relaxed);
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (registry, published, inserted, hits) =
                    (&registry, &published, &inserted, &hits);
                s.spawn(move || {
                    let mut own: Vec<ConnectionId> = Vec::new();
                    let mut rng = 0x2545_f491_4f6c_dd1d_u64 ^ (t as u64 + 1);
                    let mut next = || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng
                    };
                    for seq in 0..ops {
                        let roll = next() % 100;
                        if roll < 50 || (roll >= 75 && own.is_empty()) {
                            let raw = published[next() as usize % published.len()]
                                .load(Ordering::Acquire);
                            let id = ConnectionId::from_u64(raw);
                            if let Some(conn) = registry.get(id) {
                                conn.verify(id);
                                assert_eq!(
                                    conn.id.load(Ordering::Acquire),
                                    raw,
                                    "published after set"
                                );
                                hits.fetch_add(1, Ordering::Relaxed);
                            }
                        } else if roll < 75 {
                            let owner = ((t as u64) << 48) | seq;
                            let id = registry.insert(Conn::new(owner)).unwrap();
                            inserted.fetch_add(1, Ordering::Relaxed);
                            // A sweep may have taken it already (owner % 13 == 0).
                            if let Some(conn) = registry.get(id) {
                                conn.id.store(id.as_u64(), Ordering::Release);
                            }
                            published[t * RING + seq as usize % RING]
                                .store(id.as_u64(), Ordering::Release);
                            own.push(id);
                        } else {
                            let id = own.swap_remove(next() as usize % own.len());
                            if next() % 4 == 0 {
                                registry.discard(id);
                            } else if let Some(conn) = registry.remove(id) {
                                conn.verify(id);
                                assert_eq!(conn.id.load(Ordering::Acquire), id.as_u64());
                            }
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
    });
    let inserted = inserted.into_inner();
    let left = registry.len();
    eprintln!(
        "{ops} ops x {THREADS} threads: {inserted} inserted, {} lookups hit, {} sweeps removed {}, {left} left",
        hits.into_inner(),
        sweeps.into_inner(),
        swept.into_inner()
    );
    assert_eq!(registry.drain().count(), left);
    assert!(registry.is_empty());
    drop(registry);
    assert_eq!(DROPPED.load(Ordering::Relaxed), inserted, "every value dropped exactly once");
}
