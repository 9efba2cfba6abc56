//! What the pool's test binaries share.

use falconet_pool::Pool;

/// A pool of `max_slabs` slabs of `blocks_per_slab` blocks of `block_size`
/// bytes, with a thread cache of `thread_cache` blocks.
pub fn pool(
    block_size: usize,
    blocks_per_slab: usize,
    max_slabs: usize,
    thread_cache: usize,
) -> Pool {
    Pool::builder()
        .block_size(block_size)
        .blocks_per_slab(blocks_per_slab)
        .max_bytes(block_size * blocks_per_slab * max_slabs)
        .thread_cache(thread_cache)
        .build()
        .expect("a valid test configuration")
}
