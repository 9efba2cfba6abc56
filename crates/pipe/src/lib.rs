//! A single-producer single-consumer socket-input pipe: the bytes a
//! connection receives, in pooled blocks, from the thread that reads the
//! socket to the code that parses requests, without a lock on the data path.
//!
//! ```
//! use falconet_pipe::{pipe, Options};
//! use falconet_pool::Pool;
//!
//! let pool = Pool::new();
//! let (mut writer, reader) = pipe(&pool, Options::new())?;
//! let socket = std::thread::spawn(move || {
//!     let mut input: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
//!     writer.read_from(&mut input).unwrap(); // read(2) lands in pool memory
//!     writer.flush_blocking().unwrap();      // waits only for back-pressure
//!     writer.close();
//! });
//! let read = reader.read_at_least_blocking(18)?;
//! assert!(read.to_vec().starts_with(b"GET / HTTP/1.1"));
//! let len = read.len();
//! read.advance_to(len, len)?; // consumed, examined: the block goes back to the pool
//! socket.join().unwrap();
//! assert!(reader.read_blocking()?.is_completed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Shape
//!
//! [`pipe`] returns a [`Writer`] (the socket side) and a [`Reader`] (the
//! parser side), System.IO.Pipelines' contract in Rust:
//!
//! - writer: [`buffer`](Writer::buffer) -> fill -> [`commit`](Writer::commit)
//!   (or [`read_from`](Writer::read_from) a socket, or
//!   [`put_slice`](Writer::put_slice)), then [`flush`](Writer::flush), which
//!   waits while the reader is over the pause threshold; finish with
//!   [`close`](Writer::close) or [`close_with`](Writer::close_with);
//! - reader: [`read`](Reader::read) (async), [`read_blocking`](Reader::read_blocking),
//!   [`try_read`](Reader::try_read) or [`read_at_least`](Reader::read_at_least)
//!   return a [`ReadGuard`] over the buffered bytes (slices, or a
//!   [`bytes::Buf`]), whether the stream is completed, and the writer's error;
//!   then [`advance_to(consumed, examined)`](ReadGuard::advance_to).
//!   Examining everything means "wake me only for new data"; consumed blocks
//!   go back to the pool at once.
//!
//! Back-pressure counts **unexamined** bytes (counting consumed ones
//! deadlocked Pipelines, corefx 30689): the writer pauses at `pause_at`
//! (64 KiB) and resumes below `resume_at` (32 KiB); see [`Options`].
//!
//! # Design
//!
//! - The bytes live in a linked list of pool blocks (`segment.rs`): the
//!   writer touches only the tail, the reader only the head; nodes are
//!   recycled by the writer, so steady state allocates nothing.
//! - Everything the ends must agree on is one `AtomicU64` (`state.rs`): the
//!   unexamined-byte count, both sides' "I sleep" bits, both close bits and
//!   the read protocol. A side goes to sleep with a compare-and-swap against
//!   the word it judged from, after registering its waker, so a commit that
//!   lands in between is never missed (Kestrel's lost wakeup, PR 801/1083).
//! - A flush below the pause threshold does not look at that word: the
//!   writer keeps the word its last commit's read-modify-write returned
//!   (only the reader can have lowered the count since), and the reader
//!   reports what could raise it (credit given back, its own drop) on a
//!   line of its own that rarely changes (`Shared::reader_news`). So a
//!   commit + flush costs the writer one access to the shared line, not
//!   two.
//! - One read at a time, checked at run time where the type system cannot:
//!   see [`Reader`] for the exact rule and [`ReadError::ConcurrentRead`].
//!
//! # Errors
//!
//! - [`OptionsError`]: bad thresholds or read space, when the pipe is built.
//! - [`ReadError::ConcurrentRead`]: a second read while one is outstanding.
//! - [`AdvanceError`]: positions past the read (nothing is consumed).
//! - [`WriteError`]: reader gone, writer closed, pool exhausted, a buffer
//!   larger than a block, a commit larger than the buffer.
//! - [`PutError`]: a [`WriteError`] from [`Writer::put_slice`], with how
//!   many bytes were committed before it (a retry resumes there). The
//!   `std::io::Write` and tokio `AsyncWrite` adapters turn a partial write
//!   into `Ok(n)`, so their `Err` always means nothing was written.
//! - The writer's own failure reaches the reader as an `io::Error` on the
//!   last read ([`ReadGuard::error`]).
//!
//! # Features
//!
//! - `tokio`: `AsyncRead` + `AsyncBufRead` for [`IoReader`] and
//!   `AsyncWrite` for [`Writer`]. The core depends on no runtime; blocking
//!   calls park the thread.

mod error;
mod io;
mod options;
mod park;
mod primitive;
mod reader;
mod segment;
mod shared;
mod state;
mod view;
mod waker;
mod writer;

pub use error::{AdvanceError, OptionsError, PutError, ReadError, WriteError};
pub use io::IoReader;
pub use options::{DEFAULT_PAUSE_AT, DEFAULT_RESUME_AT, Options};
pub use reader::{ReadFuture, Readable, Reader};
pub use view::{Chunks, ReadGuard, View};
pub use writer::{Flush, MAX_READ_BLOCKS, VectoredRead, Writer};

/// The waker slot, for its own loom model (loom builds only).
#[cfg(falconet_pipe_loom)]
#[doc(hidden)]
pub use waker::WakerSlot;

use falconet_pool::Pool;

use crate::primitive::Arc;
use crate::shared::Shared;

/// Builds a pipe whose bytes live in blocks leased from `pool`.
///
/// # Errors
/// [`OptionsError`] when `options` are inconsistent (thresholds, read
/// space larger than the pool's blocks).
pub fn pipe(pool: &Pool, options: Options) -> Result<(Writer, Reader), OptionsError> {
    let config = options.validate(pool.block_size())?;
    let shared = Arc::new(Shared::new(config));
    Ok((Writer::new(shared.clone(), pool.clone()), Reader::new(shared)))
}

// The README's tokio example needs the `tokio` feature.
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
