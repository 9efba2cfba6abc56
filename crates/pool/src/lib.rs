//! A memory-block pool for network servers.
//!
//! A socket reader leases fixed-size blocks ([`Block`], 4 KiB by default),
//! reads into them, and hands them to whichever thread parses the bytes;
//! that thread drops them and they go back to the pool. Blocks are carved
//! from *slabs* (32 blocks in one page-aligned allocation by default), so a
//! busy server does not call the system allocator per read.
//!
//! ```
//! use falconet_pool::{LeaseError, Pool};
//!
//! let pool = Pool::builder().max_bytes(16 << 20).build()?;
//! let mut block = pool.try_lease()?;
//! let n = {
//!     let request = b"GET / HTTP/1.1\r\n\r\n"; // stand-in for read(2)
//!     block[..request.len()].copy_from_slice(request);
//!     request.len()
//! };
//! let parser = std::thread::spawn(move || {
//!     assert!(block[..n].starts_with(b"GET"));
//!     // `block` drops here and returns to the pool from this thread.
//! });
//! parser.join().unwrap();
//!
//! // The bound is a typed error, never a panic or an abort.
//! let tiny = Pool::builder().block_size(64).blocks_per_slab(1).max_bytes(64).build()?;
//! let _only = tiny.try_lease()?;
//! assert_eq!(tiny.try_lease().unwrap_err(), LeaseError::Exhausted { max_bytes: 64 });
//!
//! // Memory goes back: trim frees every slab whose blocks are all free.
//! drop(_only);
//! assert_eq!(tiny.trim(), 1);
//! assert_eq!(tiny.stats().slabs, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design
//!
//! * **Fast path** (`src/cache.rs`): each thread keeps a LIFO stack of up to one
//!   slab's worth of free blocks, serving one pool at a time. Leasing and
//!   returning on one thread is a pop and a push: no atomic
//!   read-modify-write, no allocation. A [`Block`] is two words (its address
//!   and a tagged pointer to its slab's slot), so it moves in registers.
//! * **Shared store** (`src/slot.rs`): one atomic word per slab, a bit per free
//!   block. A thread refills its cache with a whole slab's free blocks in one
//!   CAS and flushes half a cache in one `fetch_or` per slab. The word is the
//!   state, so there is no ABA; the store is bounded by `max_bytes`.
//! * **Memory goes back** (`src/pool.rs`): [`Pool::trim`] frees every slab whose
//!   blocks are all free, [`Pool::maintain`] a demand-driven share of them. A
//!   slab is retired by one CAS from "all free" to "absent", so a racing
//!   lease can never receive freed memory.
//! * **Lifetime**: blocks leased when the last [`Pool`] handle is dropped
//!   stay valid until they are dropped; then the memory is freed.
//!
//! The design follows Kestrel's `MemoryPool` (4 KiB blocks in 32-block
//! slabs), with the per-thread cache of mimalloc and sharded-slab and the
//! eviction of .NET 10's `PinnedBlockMemoryPool`.
//!
//! # Block size and the prefetcher
//!
//! Kestrel left the last 64 bytes of each 4 KiB stride unused so the
//! prefetcher would not pull in the neighbouring block. Here slabs are
//! page-aligned, so with the default size each block is exactly one page;
//! the streaming prefetcher does not cross 4 KiB page boundaries and the
//! adjacent-line prefetcher pairs lines within an aligned 128 bytes, which
//! never straddle two blocks of a multiple of 128 bytes. The whole block is
//! therefore usable; `docs/benchmarks.md` has the measurement.
//!
//! # Errors
//!
//! * [`LeaseError`] from [`Pool::try_lease`]: `Exhausted` at the bound,
//!   `OutOfMemory` when the system refuses a slab.
//! * [`ConfigError`] from [`PoolBuilder::build`]: a block size that is zero,
//!   not a multiple of 64 or too large; a slab count out of `1..=63`; a slab
//!   larger than `max_bytes`; too many slabs; a thread cache over one slab.
#![warn(unsafe_op_in_unsafe_fn)]

mod block;
#[cfg(feature = "bytes")]
mod buf;
mod cache;
mod config;
mod error;
mod pool;
mod primitive;
mod slot;
mod stats;

pub use block::Block;
#[cfg(feature = "bytes")]
pub use buf::BlockBuf;
pub use config::{
    DEFAULT_BLOCK_SIZE, DEFAULT_BLOCKS_PER_SLAB, DEFAULT_MAX_BYTES, MAX_BLOCK_SIZE, MAX_SLABS,
    PoolBuilder,
};
pub use error::{ConfigError, LeaseError};
pub use pool::Pool;
#[cfg(falconet_pool_loom)]
#[doc(hidden)]
pub use pool::loom_live_pools;
pub use slot::MAX_BLOCKS_PER_SLAB;
pub use stats::Stats;

/// The README's examples run as doctests (the tokio one needs `bytes`).
#[cfg(all(doctest, feature = "bytes"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
