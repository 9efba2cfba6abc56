//! The pool's typed errors. Nothing in the pool panics or aborts on bad input
//! or on a full pool: it returns one of these.

use core::fmt;

/// Why [`Pool::try_lease`](crate::Pool::try_lease) could not hand out a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseError {
    /// Every block the `max_bytes` bound allows is leased (or waiting in
    /// another thread's cache), and no slab may be added.
    Exhausted {
        /// The pool's bound, from [`PoolBuilder::max_bytes`](crate::PoolBuilder::max_bytes).
        max_bytes: usize,
    },
    /// The system allocator refused a new slab.
    OutOfMemory {
        /// The size of the slab that could not be allocated.
        slab_bytes: usize,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exhausted { max_bytes } => {
                write!(
                    f,
                    "block pool exhausted: all {max_bytes} bytes it may use are leased \
                     or held in other threads' caches (see the README's \"On tokio\")"
                )
            }
            Self::OutOfMemory { slab_bytes } => {
                write!(f, "the system allocator refused a {slab_bytes}-byte slab")
            }
        }
    }
}

impl std::error::Error for LeaseError {}

/// Why [`PoolBuilder::build`](crate::PoolBuilder::build) rejected a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The block size is zero, not a multiple of 64 (the cache-line size every
    /// block is aligned to), or above [`MAX_BLOCK_SIZE`](crate::MAX_BLOCK_SIZE).
    BlockSize {
        /// The rejected size.
        block_size: usize,
    },
    /// Blocks per slab is zero or above
    /// [`MAX_BLOCKS_PER_SLAB`](crate::MAX_BLOCKS_PER_SLAB).
    BlocksPerSlab {
        /// The rejected count.
        blocks_per_slab: usize,
    },
    /// One slab (block size x blocks per slab) is larger than `max_bytes`.
    SlabOverBound {
        /// The size of one slab.
        slab_bytes: usize,
        /// The bound it exceeds.
        max_bytes: usize,
    },
    /// `max_bytes` allows more slabs than [`MAX_SLABS`](crate::MAX_SLABS).
    TooManySlabs {
        /// How many slabs the bound would allow.
        slabs: usize,
    },
    /// The thread cache holds more blocks than one slab; a cache of at most
    /// one slab keeps trimmed memory within one slab per thread.
    ThreadCache {
        /// The rejected capacity.
        thread_cache: usize,
        /// Blocks per slab, the largest capacity allowed.
        blocks_per_slab: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BlockSize { block_size } => write!(
                f,
                "block size {block_size} must be a non-zero multiple of 64 of at most {}",
                crate::MAX_BLOCK_SIZE
            ),
            Self::BlocksPerSlab { blocks_per_slab } => write!(
                f,
                "blocks per slab {blocks_per_slab} must be between 1 and {}",
                crate::MAX_BLOCKS_PER_SLAB
            ),
            Self::SlabOverBound { slab_bytes, max_bytes } => {
                write!(f, "one slab of {slab_bytes} bytes exceeds max_bytes {max_bytes}")
            }
            Self::TooManySlabs { slabs } => {
                write!(f, "max_bytes allows {slabs} slabs, more than {}", crate::MAX_SLABS)
            }
            Self::ThreadCache { thread_cache, blocks_per_slab } => write!(
                f,
                "thread cache of {thread_cache} blocks exceeds one slab ({blocks_per_slab} blocks)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
