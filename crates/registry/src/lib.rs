//! A sharded connection registry: the map from connection id to connection
//! state that a server touches on every readiness event, changes on every
//! accept and close, and sweeps for idle connections.
//!
//! ```
//! use falconet_registry::{ConnectionId, Registry};
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! struct Connection { last_active: AtomicU64 }
//!
//! let registry = Registry::new();
//! let id = registry.insert(Connection { last_active: AtomicU64::new(0) })?;
//! let token = id.as_u64(); // the poll token: lookups need no hashing
//!
//! // On every event, from any thread: no lock, nothing allocated.
//! if let Some(connection) = registry.get(ConnectionId::from_u64(token)) {
//!     connection.last_active.store(5, Ordering::Relaxed);
//! }
//!
//! // The idle sweep, shard by shard; no lock is held while the closure runs.
//! let closed = registry.sweep(|_id, connection| connection.last_active.load(Ordering::Relaxed) >= 3);
//! assert_eq!(closed, 0);
//!
//! let connection = registry.remove(id).expect("still registered");
//! assert!(registry.get(id).is_none(), "a removed id finds nothing, even after its slot is reused");
//! # drop(connection);
//! # Ok::<(), falconet_registry::Full<Connection>>(())
//! ```
//!
//! # Design
//!
//! - **Ids** (`id.rs`): a `u64` packing a shard, a slot and the slot's
//!   generation. A lookup is a bounds check, a pointer load and a
//!   compare-and-swap on the slot's own state word; an id whose slot has
//!   been reused has an older generation and finds nothing (the fd-reuse
//!   bug). Every id is at least 2^32, so smaller poll tokens are free for
//!   the caller's listeners and wakers.
//! - **Slots** (`slot.rs`): one `AtomicU64` per slot packs its generation, a
//!   reference count and three state bits; the states and who moves between
//!   them are drawn there. A [`Ref`] is a counted reference: the value stays
//!   valid while it lives, even if the entry is removed meanwhile.
//! - **Shards** (`shard.rs`): each holds pages of slots whose sizes double,
//!   and a lock taken only to hand out or return a slot. Each thread inserts
//!   into a shard of its own; shards are padded to their own cache lines.
//! - **Reclamation**: by reference counts, and by an epoch for pinned
//!   readers. A counted lookup ([`Registry::get`]) returns a [`Ref`]; while
//!   nobody has pinned the registry, a value is dropped (its socket closed)
//!   the moment the last holder lets go, never "some collections later".
//!   A pinned lookup ([`Registry::pin`], then [`Pinned::get`], `pinned.rs`)
//!   writes nothing at all, for threads that look up connections other
//!   threads also look up; once a registry has been pinned, a removed
//!   value ends (dropped, or moved out by `remove`) only after every
//!   thread pinned at the removal has unpinned (crossbeam-epoch). Pages
//!   whose slots are all vacant give their value memory back
//!   ([`Registry::trim`], run by every sweep); the 8-byte state words
//!   stay, because a lookup with a stale id may read them at any time.
//!   `docs/benchmarks.md` has the measurements behind both paths.
//!
//! # What waits for what
//!
//! Lookups, inserts, `discard`, `sweep`, `len` and `trim` never wait for
//! another thread's `Ref` or pin (inserts and the end of a removal take a
//! shard lock for a few instructions). [`Registry::remove`] and [`Registry::drain`]
//! wait for other threads' `Ref`s to the entries they remove, never for the
//! calling thread's own: each thread keeps a list of the entries it holds
//! (`held.rs`; a [`Ref`] is not `Send`), and an entry it holds is removed
//! as [`Registry::discard`] removes it, its value dropped with the last
//! `Ref`. So `if let Some(c) = registry.get(id) { registry.remove(id); }`
//! and a `sweep` closure that removes the entry it visits finish at once.
//! Once the registry has been pinned, `remove` and `drain` also wait for
//! the threads pinned at the removal to unpin; a thread that is pinned
//! itself removes as `discard` does (and `remove` returns `None`), since
//! it cannot wait for its own pin. No user code, not even a value's
//! `Drop`, runs under a lock.
//!
//! # Ids are never reused
//!
//! A slot's generation grows with each use and never wraps: a slot whose
//! last generation (2^32 - 1) ends is retired (`slot.rs`). So an id finds
//! the entry it was issued for or nothing, whatever the churn; a kept id
//! can never reach a later connection (the fd-reuse bug).
//!
//! # Errors
//!
//! - [`Full`]: `insert` at `max_connections` (it hands the value back), and
//!   `vacant_entry` there (`Full<()>`).
//! - [`OptionsError`]: a shard count or bound the registry cannot have.
//! - `remove` returns `None` for an id that is not live, and for one it
//!   removed as `discard` does (held by this thread's `Ref`, or this thread
//!   pinned): the value is then dropped by the registry, never lost.
//! - Any `u64` is accepted as an id: one that is not live finds nothing.

mod epoch;
mod error;
mod held;
mod id;
mod options;
mod pinned;
mod primitive;
mod registry;
mod shard;
mod slot;

pub use error::{Full, OptionsError};
pub use id::ConnectionId;
pub use options::{DEFAULT_MAX_CONNECTIONS, Options};
pub use pinned::Pinned;
pub use registry::{Drain, Ref, Registry, VacantEntry};

#[cfg(all(doctest, not(miri)))] // real sockets: Miri has no TCP
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
