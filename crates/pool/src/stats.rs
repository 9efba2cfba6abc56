//! A snapshot of a pool's counters.

/// Counters of one pool, from [`Pool::stats`](crate::Pool::stats).
///
/// `leased + free == slabs * blocks_per_slab` and `cached <= free` in
/// every snapshot. The snapshot is exact when no lease or return runs
/// concurrently; while other threads lease and return, the split between
/// `leased`, `free` and `cached` is approximate (the shared store and the
/// thread caches are read one after the other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Usable bytes per block.
    pub block_size: usize,
    /// Blocks carved from each slab.
    pub blocks_per_slab: usize,
    /// Slabs allocated now.
    pub slabs: usize,
    /// The most slabs allocated at once.
    pub peak_slabs: usize,
    /// Slabs freed by [`trim`](crate::Pool::trim), [`maintain`](crate::Pool::maintain)
    /// and the last handle's drop, in total.
    pub trimmed_slabs: u64,
    /// Blocks held by [`Block`](crate::Block) handles.
    pub leased: usize,
    /// Blocks free: in the shared store or in a thread cache.
    pub free: usize,
    /// Of the free blocks, those sitting in thread caches.
    pub cached: usize,
    /// Leases served by a thread cache (no atomic read-modify-write).
    pub cache_leases: u64,
    /// Leases served by the shared store (a refill, or the cache is off).
    pub store_leases: u64,
}

impl Stats {
    /// Bytes of slab memory allocated now.
    pub fn bytes(&self) -> usize {
        self.slabs * self.blocks_per_slab * self.block_size
    }
}
