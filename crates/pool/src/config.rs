//! Pool configuration: the builder and its validation.

use core::alloc::Layout;

use crate::error::ConfigError;
use crate::pool::Pool;
use crate::slot::MAX_BLOCKS_PER_SLAB;

/// The default block size: one 4 KiB page per block.
pub const DEFAULT_BLOCK_SIZE: usize = 4096;
/// The default number of blocks carved from one slab (Kestrel's 32 x 4 KiB).
pub const DEFAULT_BLOCKS_PER_SLAB: usize = 32;
/// The default bound on the memory a pool may hold: 1 GiB (or
/// [`MAX_SLABS`] slabs' worth, if a slab is under 1 KiB).
pub const DEFAULT_MAX_BYTES: usize = 1 << 30;
/// The largest block size a pool accepts: 1 MiB.
pub const MAX_BLOCK_SIZE: usize = 1 << 20;
/// The most slabs one pool may have; the slot table reserves (but does not
/// touch) 128 bytes of address space per possible slab.
pub const MAX_SLABS: usize = 1 << 20;
/// Slabs are aligned to a page, so a 4 KiB block is exactly one page.
const SLAB_ALIGN: usize = 4096;

/// Configures and builds a [`Pool`].
///
/// ```
/// use falconet_pool::Pool;
///
/// let pool = Pool::builder()
///     .block_size(2048)
///     .blocks_per_slab(16)
///     .max_bytes(64 << 20)
///     .build()?;
/// assert_eq!(pool.block_size(), 2048);
/// # Ok::<(), falconet_pool::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PoolBuilder {
    block_size: usize,
    blocks_per_slab: usize,
    max_bytes: Option<usize>,
    thread_cache: Option<usize>,
}

impl Default for PoolBuilder {
    fn default() -> Self {
        Self {
            block_size: DEFAULT_BLOCK_SIZE,
            blocks_per_slab: DEFAULT_BLOCKS_PER_SLAB,
            max_bytes: None,
            thread_cache: None,
        }
    }
}

impl PoolBuilder {
    /// Bytes per block: a non-zero multiple of 64, at most [`MAX_BLOCK_SIZE`].
    /// Default [`DEFAULT_BLOCK_SIZE`]. The whole block is usable.
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// Blocks carved from one slab allocation: 1 to [`MAX_BLOCKS_PER_SLAB`].
    /// Default [`DEFAULT_BLOCKS_PER_SLAB`].
    pub fn blocks_per_slab(mut self, blocks: usize) -> Self {
        self.blocks_per_slab = blocks;
        self
    }

    /// The most memory the pool's slabs may hold; past it
    /// [`Pool::try_lease`] fails with [`LeaseError::Exhausted`](crate::LeaseError::Exhausted).
    /// Default [`DEFAULT_MAX_BYTES`], or [`MAX_SLABS`] slabs' worth if that
    /// is less (slabs under 1 KiB: 64-byte blocks, 8 a slab, get 512 MiB).
    /// At most [`MAX_SLABS`] slabs' worth (128 GiB with the default 128 KiB
    /// slab): [`build`](Self::build) refuses more with
    /// [`ConfigError::TooManySlabs`], `usize::MAX` included.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// Free blocks each thread keeps for itself, 0 to one slab's worth; 0
    /// sends every lease and return to the shared store. Default: one slab.
    pub fn thread_cache(mut self, blocks: usize) -> Self {
        self.thread_cache = Some(blocks);
        self
    }

    /// Validates the configuration and creates the pool. No slab is
    /// allocated until the first lease.
    ///
    /// # Errors
    /// [`ConfigError`] names the first setting out of range.
    pub fn build(self) -> Result<Pool, ConfigError> {
        Ok(Pool::with_config(self.validate()?))
    }

    fn validate(self) -> Result<Config, ConfigError> {
        let Self { block_size, blocks_per_slab, max_bytes, thread_cache } = self;
        if block_size == 0 || block_size % 64 != 0 || block_size > MAX_BLOCK_SIZE {
            return Err(ConfigError::BlockSize { block_size });
        }
        if blocks_per_slab == 0 || blocks_per_slab > MAX_BLOCKS_PER_SLAB {
            return Err(ConfigError::BlocksPerSlab { blocks_per_slab });
        }
        // Cannot overflow: both factors are bounded above.
        let slab_bytes = block_size * blocks_per_slab;
        // Unset, the bound never makes a valid slab size invalid.
        // (Saturating: 2^20 slabs of 128 KiB overflow a 32-bit usize.)
        let max_bytes =
            max_bytes.unwrap_or(DEFAULT_MAX_BYTES.min(MAX_SLABS.saturating_mul(slab_bytes)));
        if slab_bytes > max_bytes {
            return Err(ConfigError::SlabOverBound { slab_bytes, max_bytes });
        }
        let max_slabs = max_bytes / slab_bytes;
        if max_slabs > MAX_SLABS {
            return Err(ConfigError::TooManySlabs { slabs: max_slabs });
        }
        let thread_cache = thread_cache.unwrap_or(blocks_per_slab);
        if thread_cache > blocks_per_slab {
            return Err(ConfigError::ThreadCache { thread_cache, blocks_per_slab });
        }
        let slab_layout = Layout::from_size_align(slab_bytes, SLAB_ALIGN)
            .expect("slab size is bounded by MAX_BLOCK_SIZE * 63, far below isize::MAX");
        Ok(Config { block_size, blocks_per_slab, max_bytes, max_slabs, thread_cache, slab_layout })
    }
}

/// A validated configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) block_size: usize,
    pub(crate) blocks_per_slab: usize,
    pub(crate) max_bytes: usize,
    pub(crate) max_slabs: usize,
    pub(crate) thread_cache: usize,
    pub(crate) slab_layout: Layout,
}

impl Config {
    /// The default configuration (always valid).
    pub(crate) fn default_config() -> Self {
        PoolBuilder::default().validate().expect("the defaults are valid")
    }
}

#[cfg(all(test, not(falconet_pool_loom)))]
mod tests {
    use super::*;

    fn err(builder: PoolBuilder) -> ConfigError {
        builder.build().unwrap_err()
    }

    #[test]
    fn bad_configurations_are_typed_errors() {
        let b = PoolBuilder::default;
        assert_eq!(err(b().block_size(0)), ConfigError::BlockSize { block_size: 0 });
        assert_eq!(err(b().block_size(100)), ConfigError::BlockSize { block_size: 100 });
        assert_eq!(
            err(b().block_size(MAX_BLOCK_SIZE + 64)),
            ConfigError::BlockSize { block_size: MAX_BLOCK_SIZE + 64 }
        );
        assert_eq!(err(b().blocks_per_slab(0)), ConfigError::BlocksPerSlab { blocks_per_slab: 0 });
        assert_eq!(
            err(b().blocks_per_slab(64)),
            ConfigError::BlocksPerSlab { blocks_per_slab: 64 }
        );
        assert_eq!(
            err(b().max_bytes(4096)),
            ConfigError::SlabOverBound { slab_bytes: 32 * 4096, max_bytes: 4096 }
        );
        assert_eq!(
            err(b().block_size(64).blocks_per_slab(1).max_bytes(usize::MAX)),
            ConfigError::TooManySlabs { slabs: usize::MAX / 64 }
        );
        assert_eq!(
            err(b().thread_cache(33)),
            ConfigError::ThreadCache { thread_cache: 33, blocks_per_slab: 32 }
        );
        assert!(b().thread_cache(0).build().is_ok());
        assert_eq!(
            err(b().block_size(64).blocks_per_slab(8).max_bytes(DEFAULT_MAX_BYTES)),
            ConfigError::TooManySlabs { slabs: DEFAULT_MAX_BYTES / 512 }
        );
        assert!(err(b().block_size(1)).to_string().contains("multiple of 64"));
    }

    /// Changing only the slab's size never trips the default bound: slabs
    /// under 1 KiB get `MAX_SLABS` of them (it once refused 64-byte blocks
    /// 8 a slab with `TooManySlabs`, the user having set no bound).
    #[test]
    fn the_default_bound_fits_any_slab_size() {
        for (block_size, blocks_per_slab) in
            [(64, 1), (64, 8), (64, 16), (128, 8), (1024, 1), (4096, 32), (MAX_BLOCK_SIZE, 63)]
        {
            let config = PoolBuilder::default()
                .block_size(block_size)
                .blocks_per_slab(blocks_per_slab)
                .validate()
                .unwrap();
            let slab_bytes = block_size * blocks_per_slab;
            assert_eq!(
                config.max_bytes,
                DEFAULT_MAX_BYTES.min(MAX_SLABS.saturating_mul(slab_bytes))
            );
            assert_eq!(config.max_slabs, config.max_bytes / slab_bytes);
            assert!(config.max_slabs <= MAX_SLABS);
        }
    }
}
