//! The registry workloads: every map under test implements [`Table`], so
//! falconet-registry, the lock-based maps and the published peers run the
//! same loop in the same process.
//!
//! A Kitura-shaped workload: each operation is a lookup of a live
//! connection (a readiness event), an accept (insert) or a close (remove).
//! Lookups go to a shared set of long-lived connections inserted before the
//! clock starts; inserts and removes churn each thread's own connections;
//! an idle sweep visits every entry every 5 ms (sharded-slab cannot iterate
//! while shared, so it runs without one).
//! Completed work is counted: lookups that found their entry, inserts that
//! succeeded, removes that returned a value.

use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use falconet_registry::{ConnectionId, Options, Registry};

/// Long-lived connections the lookups go to.
pub const RESIDENT: usize = 16_384;

/// A map from connection to a connection's state, as the benchmarks use
/// it. Hash maps key by a number the caller makes up (an fd, a counter);
/// slabs hand out their own keys.
pub trait Table: Sync {
    /// The name in tables.
    const NAME: &'static str;
    /// What a lookup takes.
    type Key: Copy + Send + Sync;
    /// An empty table.
    fn new() -> Self;
    /// Inserts `value`; `fresh` is a key no live entry has (maps use it).
    fn insert(&self, fresh: u64, value: u64) -> Option<Self::Key>;
    /// Looks `key` up and reads the value.
    fn get(&self, key: Self::Key) -> Option<u64>;
    /// Removes `key`; whether it was there.
    fn remove(&self, key: Self::Key) -> bool;
    /// What a thread holds while it handles one batch of events (a batch
    /// of [`BATCH`] operations in the mixes): a pin for the pinned
    /// registry, nothing for the others.
    type Batch<'a>
    where
        Self: 'a;
    /// Starts a batch.
    fn batch(&self) -> Self::Batch<'_>;
    /// Looks `key` up inside a batch.
    #[inline]
    fn get_in(&self, batch: &Self::Batch<'_>, key: Self::Key) -> Option<u64> {
        let _ = batch;
        self.get(key)
    }
    /// The idle sweep, the way the table's users would write it, keeping
    /// every entry: how many entries it visited, or `None` if the table
    /// cannot iterate while shared.
    fn sweep(&self) -> Option<usize>;
}

impl Table for Registry<u64> {
    const NAME: &'static str = "falconet-registry";
    type Key = ConnectionId;
    type Batch<'a> = ();
    fn batch(&self) {}
    fn new() -> Self {
        Registry::with_options(Options::new().max_connections(1 << 22)).unwrap()
    }
    #[inline]
    fn insert(&self, _fresh: u64, value: u64) -> Option<ConnectionId> {
        Registry::insert(self, value).ok()
    }
    #[inline]
    fn get(&self, key: ConnectionId) -> Option<u64> {
        Registry::get(self, key).map(|v| *v)
    }
    #[inline]
    fn remove(&self, key: ConnectionId) -> bool {
        Registry::remove(self, key).is_some()
    }
    fn sweep(&self) -> Option<usize> {
        let mut visited = 0;
        Registry::sweep(self, |_, value| keep(&mut visited, *value));
        Some(visited)
    }
}

/// falconet-registry read through [`Registry::pin`]: each batch of
/// operations is pinned once and its lookups write nothing. Its removes
/// are `discard`s (the event loop closes connections inside its pinned
/// batch, where `remove` could not wait for the epoch): the value is
/// dropped through the epoch, not returned.
pub struct PinnedRegistry(pub Registry<u64>);

impl Table for PinnedRegistry {
    const NAME: &'static str = "falconet-registry pinned";
    type Key = ConnectionId;
    type Batch<'a> = falconet_registry::Pinned<'a, u64>;
    fn batch(&self) -> Self::Batch<'_> {
        self.0.pin()
    }
    fn new() -> Self {
        Self(<Registry<u64> as Table>::new())
    }
    #[inline]
    fn insert(&self, _fresh: u64, value: u64) -> Option<ConnectionId> {
        self.0.insert(value).ok()
    }
    /// Outside a batch (criterion's one-lookup group): one pin per lookup.
    #[inline]
    fn get(&self, key: ConnectionId) -> Option<u64> {
        self.0.pin().get(key).copied()
    }
    #[inline]
    fn get_in(&self, batch: &Self::Batch<'_>, key: ConnectionId) -> Option<u64> {
        batch.get(key).copied()
    }
    #[inline]
    fn remove(&self, key: ConnectionId) -> bool {
        self.0.discard(key)
    }
    fn sweep(&self) -> Option<usize> {
        <Registry<u64> as Table>::sweep(&self.0)
    }
}

macro_rules! locked_map {
    ($ty:ty, $name:expr, $read:ident, $write:ident $(, $unwrap:ident)?) => {
        impl Table for $ty {
            const NAME: &'static str = $name;
            type Key = u64;
            type Batch<'a> = ();
            fn batch(&self) {}
            fn new() -> Self {
                <$ty>::new(HashMap::with_hasher(RandomState::new()))
            }
            #[inline]
            fn insert(&self, fresh: u64, value: u64) -> Option<u64> {
                self.$write()$(.$unwrap())?.insert(fresh, value);
                Some(fresh)
            }
            #[inline]
            fn get(&self, key: u64) -> Option<u64> {
                self.$read()$(.$unwrap())?.get(&key).copied()
            }
            #[inline]
            fn remove(&self, key: u64) -> bool {
                self.$write()$(.$unwrap())?.remove(&key).is_some()
            }
            fn sweep(&self) -> Option<usize> {
                // Kitura's way: the whole map, under the write lock.
                let mut visited = 0;
                self.$write()$(.$unwrap())?.retain(|_, value| keep(&mut visited, *value));
                Some(visited)
            }
        }
    };
}

locked_map!(std::sync::Mutex<HashMap<u64, u64>>, "std Mutex<HashMap>", lock, lock, unwrap);
locked_map!(std::sync::RwLock<HashMap<u64, u64>>, "std RwLock<HashMap>", read, write, unwrap);
locked_map!(parking_lot::Mutex<HashMap<u64, u64>>, "parking_lot Mutex<HashMap>", lock, lock);
locked_map!(parking_lot::RwLock<HashMap<u64, u64>>, "parking_lot RwLock<HashMap>", read, write);

impl Table for dashmap::DashMap<u64, u64> {
    const NAME: &'static str = "dashmap";
    type Key = u64;
    type Batch<'a> = ();
    fn batch(&self) {}
    fn new() -> Self {
        dashmap::DashMap::new()
    }
    #[inline]
    fn insert(&self, fresh: u64, value: u64) -> Option<u64> {
        dashmap::DashMap::insert(self, fresh, value);
        Some(fresh)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        dashmap::DashMap::get(self, &key).map(|v| *v)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        dashmap::DashMap::remove(self, &key).is_some()
    }
    fn sweep(&self) -> Option<usize> {
        let mut visited = 0;
        self.retain(|_, value| keep(&mut visited, *value));
        Some(visited)
    }
}

impl Table for papaya::HashMap<u64, u64> {
    const NAME: &'static str = "papaya";
    type Key = u64;
    type Batch<'a> = ();
    fn batch(&self) {}
    fn new() -> Self {
        papaya::HashMap::new()
    }
    #[inline]
    fn insert(&self, fresh: u64, value: u64) -> Option<u64> {
        self.pin().insert(fresh, value);
        Some(fresh)
    }
    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        self.pin().get(&key).copied()
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.pin().remove(&key).is_some()
    }
    fn sweep(&self) -> Option<usize> {
        let mut visited = 0;
        self.pin().retain(|_, value| keep(&mut visited, *value));
        Some(visited)
    }
}

impl Table for sharded_slab::Slab<u64> {
    const NAME: &'static str = "sharded-slab";
    type Key = usize;
    type Batch<'a> = ();
    fn batch(&self) {}
    fn new() -> Self {
        sharded_slab::Slab::new()
    }
    #[inline]
    fn insert(&self, _fresh: u64, value: u64) -> Option<usize> {
        sharded_slab::Slab::insert(self, value)
    }
    #[inline]
    fn get(&self, key: usize) -> Option<u64> {
        sharded_slab::Slab::get(self, key).map(|v| *v)
    }
    #[inline]
    fn remove(&self, key: usize) -> bool {
        // `take` returns the value, as `Registry::remove` does (`remove`
        // only marks it).
        sharded_slab::Slab::take(self, key).is_some()
    }
    fn sweep(&self) -> Option<usize> {
        // `unique_iter` needs `&mut Slab`: no sweep while shared.
        None
    }
}

/// Percent of lookups and inserts (the rest are removes).
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// Its name in tables.
    pub name: &'static str,
    /// Percent lookups.
    pub get: u32,
    /// Percent inserts.
    pub insert: u32,
    /// Each thread looks up only its share of the resident connections (a
    /// server's worker handles the events of the connections it polls),
    /// instead of any of them.
    pub owned: bool,
}

/// 98% lookups, 1% inserts, 1% removes.
pub const READ_HEAVY: Mix = Mix { name: "read-heavy 98/1/1", get: 98, insert: 1, owned: false };
/// 98% lookups, 1% inserts, 1% removes, each thread looking up its own
/// share of the connections.
pub const READ_HEAVY_OWNED: Mix =
    Mix { name: "read-heavy 98/1/1, lookups of own connections", get: 98, insert: 1, owned: true };
/// 50% lookups, 25% inserts, 25% removes.
pub const CHURN: Mix = Mix { name: "churn 50/25/25", get: 50, insert: 25, owned: false };

/// Every sweep's closure: counts the visit and keeps the entry (no value
/// is `u64::MAX`, but the table cannot know that).
#[inline]
fn keep(visited: &mut usize, value: u64) -> bool {
    *visited += 1;
    value != u64::MAX
}

/// A table with [`RESIDENT`] long-lived entries, and their keys.
pub fn populated<T: Table>() -> (T, Vec<T::Key>) {
    populated_with(RESIDENT)
}

/// A table with `entries` long-lived entries, and their keys.
pub fn populated_with<T: Table>(entries: usize) -> (T, Vec<T::Key>) {
    let table = T::new();
    let keys = (0..entries as u64).map(|i| table.insert(i, i).unwrap()).collect();
    (table, keys)
}

/// Operations per batch of events (one `epoll_wait`'s worth): the pinned
/// registry pins once per batch.
pub const BATCH: u64 = 64;

/// How often the idle sweep runs during a mix.
pub const SWEEP_EVERY: Duration = Duration::from_millis(5);

/// Runs `ops` operations of `mix` on each of `threads` threads, with the
/// idle sweep running every [`SWEEP_EVERY`] on one more thread (a Kitura
/// server's timer); returns the completed operations and the wall time.
pub fn run_mix<T: Table>(
    table: &T,
    resident: &[T::Key],
    mix: Mix,
    threads: usize,
    ops: u64,
) -> (u64, Duration) {
    let start = Barrier::new(threads + 1);
    let done = Barrier::new(threads + 1);
    let finished = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                thread::sleep(SWEEP_EVERY);
                if table.sweep().is_none() {
                    break;
                }
            }
        });
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (start, done) = (&start, &done);
                s.spawn(move || {
                    let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ ((t as u64 + 1) << 32);
                    let mut own: Vec<T::Key> = Vec::with_capacity(1 << 16);
                    let mut fresh = (1 << 40) * (t as u64 + 1);
                    let mut completed = 0u64;
                    start.wait();
                    let mut batch = table.batch();
                    for op in 0..ops {
                        if op % BATCH == BATCH - 1 {
                            drop(batch);
                            batch = table.batch();
                        }
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let roll = (rng % 100) as u32;
                        if roll < mix.get {
                            let pick = (rng >> 32) as usize % resident.len();
                            // Owned: the resident connections whose index
                            // is this thread's modulo the thread count.
                            let pick = if mix.owned { pick - pick % threads + t } else { pick };
                            let key = resident[pick.min(resident.len() - 1)];
                            completed += u64::from(table.get_in(&batch, key).is_some());
                        } else if roll < mix.get + mix.insert || own.is_empty() {
                            fresh += 1;
                            if let Some(key) = table.insert(fresh, fresh) {
                                own.push(key);
                                completed += 1;
                            }
                        } else {
                            let key = own.swap_remove((rng >> 32) as usize % own.len());
                            completed += u64::from(table.remove(key));
                        }
                    }
                    drop(batch);
                    done.wait();
                    for key in own {
                        table.remove(key);
                    }
                    completed
                })
            })
            .collect();
        start.wait();
        let begin = Instant::now();
        done.wait();
        let elapsed = begin.elapsed();
        finished.store(true, Ordering::Relaxed);
        (workers.into_iter().map(|w| w.join().unwrap()).sum(), elapsed)
    })
}
