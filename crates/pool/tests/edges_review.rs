//! Day-one edge probes of the public API, from an outside review: every
//! argument at and just past the ends of its range, and calls in the
//! order a new user tries them. Each edge gets its typed error or its
//! documented result; none panics, hangs or loses bytes.
#![cfg(not(falconet_pool_loom))]

use falconet_pool::{
    ConfigError, LeaseError, MAX_BLOCK_SIZE, MAX_BLOCKS_PER_SLAB, MAX_SLABS, Pool,
};

#[test]
#[cfg_attr(miri, ignore = "a pool bound to MAX_SLABS slabs: its slot table outgrows Miri's memory")]
fn builder_limits_at_and_just_past_each_edge() {
    let b = Pool::builder;
    // block size: 0, 63, 64, MAX, MAX+64, usize::MAX
    assert_eq!(b().block_size(0).build().unwrap_err(), ConfigError::BlockSize { block_size: 0 });
    assert_eq!(b().block_size(63).build().unwrap_err(), ConfigError::BlockSize { block_size: 63 });
    assert!(b().block_size(64).blocks_per_slab(1).build().is_ok());
    assert!(b().block_size(MAX_BLOCK_SIZE).blocks_per_slab(1).build().is_ok());
    assert_eq!(
        b().block_size(usize::MAX).build().unwrap_err(),
        ConfigError::BlockSize { block_size: usize::MAX }
    );
    // A multiple of 64 that would overflow block*blocks if not checked first.
    let huge = usize::MAX - 63;
    assert_eq!(
        b().block_size(huge).build().unwrap_err(),
        ConfigError::BlockSize { block_size: huge }
    );
    // blocks per slab: 1, 63, 64, usize::MAX
    assert!(b().blocks_per_slab(1).build().is_ok());
    assert!(
        b().blocks_per_slab(MAX_BLOCKS_PER_SLAB).thread_cache(MAX_BLOCKS_PER_SLAB).build().is_ok()
    );
    assert_eq!(
        b().blocks_per_slab(usize::MAX).build().unwrap_err(),
        ConfigError::BlocksPerSlab { blocks_per_slab: usize::MAX }
    );
    // max_bytes: 0, slab-1, exactly MAX_SLABS slabs, one slab more, usize::MAX
    assert_eq!(
        b().block_size(64).blocks_per_slab(1).max_bytes(0).build().unwrap_err(),
        ConfigError::SlabOverBound { slab_bytes: 64, max_bytes: 0 }
    );
    assert_eq!(
        b().block_size(128).blocks_per_slab(1).max_bytes(127).build().unwrap_err(),
        ConfigError::SlabOverBound { slab_bytes: 128, max_bytes: 127 }
    );
    assert!(b().block_size(64).blocks_per_slab(1).max_bytes(MAX_SLABS * 64).build().is_ok());
    assert_eq!(
        b().block_size(64).blocks_per_slab(1).max_bytes(MAX_SLABS * 64 + 64).build().unwrap_err(),
        ConfigError::TooManySlabs { slabs: MAX_SLABS + 1 }
    );
    // The largest slab with usize::MAX: still too many slabs, not an overflow.
    assert!(matches!(
        b().block_size(MAX_BLOCK_SIZE).blocks_per_slab(63).max_bytes(usize::MAX).build(),
        Err(ConfigError::TooManySlabs { .. })
    ));
    // thread cache: 0, one slab, one over, usize::MAX
    assert!(b().thread_cache(0).build().is_ok());
    assert!(b().blocks_per_slab(1).thread_cache(1).build().is_ok());
    assert_eq!(
        b().blocks_per_slab(1).thread_cache(usize::MAX).build().unwrap_err(),
        ConfigError::ThreadCache { thread_cache: usize::MAX, blocks_per_slab: 1 }
    );
}

#[test]
fn a_bound_that_is_not_a_multiple_of_the_slab_rounds_down_and_reports_the_bound_given() {
    let pool = Pool::builder().block_size(64).blocks_per_slab(1).max_bytes(127).build().unwrap();
    let one = pool.try_lease().unwrap();
    assert_eq!(pool.try_lease().unwrap_err(), LeaseError::Exhausted { max_bytes: 127 });
    drop(one);
    assert!(pool.try_lease().is_ok());
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn the_largest_slab_63_blocks_of_1_mib_leases_every_block_then_is_exhausted() {
    let pool = Pool::builder()
        .block_size(MAX_BLOCK_SIZE)
        .blocks_per_slab(MAX_BLOCKS_PER_SLAB)
        .max_bytes(MAX_BLOCK_SIZE * MAX_BLOCKS_PER_SLAB)
        .build()
        .unwrap();
    let mut blocks = Vec::new();
    for i in 0..MAX_BLOCKS_PER_SLAB {
        let mut block = pool.try_lease().unwrap();
        assert_eq!(block.len(), MAX_BLOCK_SIZE);
        block[0] = i as u8;
        block[MAX_BLOCK_SIZE - 1] = i as u8;
        blocks.push(block);
    }
    assert!(matches!(pool.try_lease(), Err(LeaseError::Exhausted { .. })));
    for (i, block) in blocks.iter().enumerate() {
        assert_eq!((block[0], block[MAX_BLOCK_SIZE - 1]), (i as u8, i as u8));
    }
    assert_eq!(pool.stats().leased, MAX_BLOCKS_PER_SLAB);
    drop(blocks);
    assert_eq!(pool.trim(), 1);
    assert_eq!(pool.stats().slabs, 0);
}

#[test]
fn a_one_block_cache_leases_and_returns_across_threads_without_losing_blocks() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(2)
        .thread_cache(1)
        .max_bytes(128)
        .build()
        .unwrap();
    for _ in 0..1000 {
        let a = pool.try_lease().unwrap();
        let b = pool.try_lease().unwrap();
        std::thread::spawn(move || drop(a)).join().unwrap();
        drop(b);
    }
    let stats = pool.stats();
    assert_eq!(stats.leased, 0, "{stats:?}");
    assert_eq!(stats.slabs, 1, "{stats:?}");
}

#[test]
fn trim_maintain_and_flush_on_an_empty_pool_and_twice() {
    let pool = Pool::new();
    assert_eq!(pool.trim(), 0);
    assert_eq!(pool.maintain(), 0);
    assert_eq!(pool.flush_thread_cache(), 0);
    drop(pool.try_lease().unwrap());
    // A refill takes a whole slab into this thread's cache.
    assert_eq!(pool.flush_thread_cache(), 32);
    assert_eq!(pool.flush_thread_cache(), 0);
    assert_eq!(pool.trim(), 1);
    assert_eq!(pool.trim(), 0);
    assert_eq!(pool.maintain(), 0);
    assert_eq!(pool.stats().slabs, 0);
    // The pool works after being trimmed to nothing.
    assert!(pool.try_lease().is_ok());
}

#[test]
fn no_cache_pool_of_one_block_leases_again_after_each_return() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(1)
        .thread_cache(0)
        .max_bytes(64)
        .build()
        .unwrap();
    for _ in 0..100 {
        let block = pool.try_lease().unwrap();
        assert!(pool.try_lease().is_err());
        drop(block);
    }
    assert_eq!(pool.stats().cached, 0);
}

#[test]
fn a_block_outlives_every_handle_and_a_clone_keeps_the_pool() {
    let pool = Pool::builder().block_size(64).blocks_per_slab(1).max_bytes(64).build().unwrap();
    let clone = pool.clone();
    let mut block = pool.try_lease().unwrap();
    drop(pool);
    assert!(clone.try_lease().is_err(), "the only block is still leased");
    drop(clone);
    block[63] = 7;
    assert_eq!(block[63], 7);
    drop(block);
}

#[cfg(feature = "bytes")]
#[test]
fn block_buf_at_its_edges() {
    use bytes::BufMut;
    let pool = Pool::builder().block_size(64).blocks_per_slab(1).max_bytes(64).build().unwrap();
    let mut buf = pool.try_lease().unwrap().into_buf();
    assert!(buf.is_empty() && buf.capacity() == 64);
    // SAFETY: advancing by 0 initialises nothing new.
    unsafe { buf.advance_mut(0) };
    buf.truncate(usize::MAX);
    assert_eq!(buf.len(), 0);
    buf.put_slice(&[1; 64]);
    assert_eq!(buf.remaining_mut(), 0);
    assert_eq!(buf.chunk_mut().len(), 0);
    buf.put_slice(&[]);
    buf.truncate(10);
    assert_eq!(buf.len(), 10);
    buf.clear();
    let frozen = buf.freeze();
    assert!(frozen.is_empty());
    assert!(pool.try_lease().is_err(), "the empty Bytes still holds the block");
    drop(frozen);
    assert!(pool.try_lease().is_ok());
}
