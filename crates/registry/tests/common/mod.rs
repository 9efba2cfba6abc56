//! Shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A value that counts its drops, so tests see every value leave once.
#[derive(Debug)]
pub struct Tracked {
    pub tag: u64,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
    pub fn new(tag: u64, drops: &Arc<AtomicUsize>) -> Self {
        Self { tag, drops: Arc::clone(drops) }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn drops() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(drops: &Arc<AtomicUsize>) -> usize {
    drops.load(Ordering::SeqCst)
}

/// A value whose `drop` panics if `boom`, counting its drop first.
pub struct Bomb {
    boom: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        assert!(!self.boom, "this value's drop panics");
    }
}

/// Ten values in a one-shard registry, the 3rd and the 8th panicking when
/// dropped; `before` runs on them, then the registry is dropped. Returns
/// the drop count and how the registry's drop ended.
pub fn drop_bombs(
    before: impl FnOnce(&falconet_registry::Registry<Bomb>, &[falconet_registry::ConnectionId]),
) -> (Arc<AtomicUsize>, std::thread::Result<()>) {
    use falconet_registry::{Options, Registry};
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let drops = drops();
    let registry = Registry::with_options(Options::new().shards(1)).unwrap();
    let ids: Vec<_> = (0..10)
        .map(|i| registry.insert(Bomb { boom: i == 2 || i == 7, drops: Arc::clone(&drops) }))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|_| panic!("room for ten"));
    before(&registry, &ids);
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(registry)));
    (drops, dropped)
}
