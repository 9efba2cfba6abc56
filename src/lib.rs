//! falconet: concurrency primitives for network servers.
//!
//! This facade re-exports the member crates, as `crossbeam` does; depend on a
//! member directly (`falconet-pool`, ...) to pull in only what you use.
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`pool`] | `falconet-pool` | fixed-size memory blocks carved from slabs, per-thread fast path |
//! | [`pipe`] | `falconet-pipe` | SPSC socket-input pipe: pooled blocks from socket reader to parser |
//! | [`flow`] | `falconet-flow` | HTTP/2 flow-control windows in one CAS-updated `u64` |
//! | [`registry`] | `falconet-registry` | sharded connection registry: id -> connection, lock-free lookup, idle sweep |
//! | [`server`] | `falconet-server` | thin HTTP/1.1 and HTTP/2 server built from the four (without its binary's `cli` feature) |
//!
//! Features pass through to the members: `tokio` (the pipe's tokio
//! adapters, the server's `RequestBody` as `AsyncRead`), `tower` (the
//! server's `tower` module: an axum `Router` on falconet) and `bytes`
//! (the pool's `BlockBuf`, frozen into `bytes::Bytes`). None is on by default.
//!
//! ```
//! let pool = falconet::pool::Pool::new();
//! let mut block = pool.try_lease()?;
//! block[..5].copy_from_slice(b"hello");
//! assert_eq!(&block[..5], b"hello");
//! # Ok::<(), falconet::pool::LeaseError>(())
//! ```
#![forbid(unsafe_code)]

#[doc(inline)]
pub use falconet_flow as flow;
#[doc(inline)]
pub use falconet_pipe as pipe;
#[doc(inline)]
pub use falconet_pool as pool;
#[doc(inline)]
pub use falconet_registry as registry;
#[doc(inline)]
pub use falconet_server as server;
