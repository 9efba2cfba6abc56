//! A single-producer single-consumer socket-input pipe: the bytes a
//! connection receives, in pooled blocks, from the thread that reads the
//! socket to the code that parses requests, without a lock on the data path.
//!
//! ```
//! use falconet_pipe::{Options, Pool, pipe};
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
//!   go back to the pool at once, except while the writer waits on
//!   back-pressure: then they stay in the pipe for its next writes (it is
//!   about to need as many), and [`Writer::trim`] or closing the writer
//!   gives back those it did not reuse.
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
//! - The ends agree through three words, each on its own cache line
//!   (`state.rs`): the writer's (committed-byte count, its close bit, the
//!   reader's sleep bit), the reader's (examined-byte count, the writer's
//!   sleep bit) and the read protocol's (touched by readers only). Each
//!   side publishes with one read-modify-write of its own line, which the
//!   other side only loads, so a commit does not wait for a line the reader
//!   has just written. A side goes to sleep with a compare-and-swap on the
//!   *other* side's word, against the value it judged from, after
//!   registering its waker, so a commit or an advance that lands in between
//!   is never missed (Kestrel's lost wakeup, PR 801/1083).
//! - A flush below the pause threshold does not look at the reader's word:
//!   the writer keeps the examined count it last loaded (the reader can
//!   only have raised it since), and the reader reports what could lower
//!   it (credit given back, its own drop) on a line of its own that rarely
//!   changes (`Shared::reader_news`). So a commit + flush costs the writer
//!   one read-modify-write of its own line.
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

/// The block pool a pipe leases its blocks from, re-exported so that a
/// pipe needs no other dependency: [`Pool`] to make one, and the crate
/// for the rest ([`WriteError::Lease`] carries its
/// [`LeaseError`](falconet_pool::LeaseError)).
pub use falconet_pool::{self, Pool};

/// The waker slot, for its own loom model (loom builds only).
#[cfg(falconet_pipe_loom)]
#[doc(hidden)]
pub use waker::WakerSlot;

use crate::primitive::Arc;
use crate::shared::Shared;

/// Builds a pipe whose bytes live in blocks leased from `pool`.
///
/// # Errors
/// [`OptionsError`] when `options` are inconsistent (thresholds, read
/// space larger than the pool's blocks).
pub fn pipe(pool: &Pool, options: Options) -> Result<(Writer, Reader), OptionsError> {
    pipe_at(pool, options, 0)
}

/// [`pipe`], its stream starting at position `start` (tests start near
/// the point where the shared counts wrap).
pub(crate) fn pipe_at(
    pool: &Pool,
    options: Options,
    start: u64,
) -> Result<(Writer, Reader), OptionsError> {
    let config = options.validate(pool.block_size())?;
    let shared = Arc::new(Shared::new(config, start));
    Ok((Writer::new(shared.clone(), pool.clone(), start), Reader::new(shared, start)))
}

// The README's tokio example needs the `tokio` feature.
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The shared counts are 56 bits wide and wrap; the stream positions do
/// not. A pipe that starts just short of the wrap must move every byte
/// across it, pause and resume at its thresholds there, and report end of
/// stream after it.
#[cfg(all(test, not(falconet_pipe_loom)))]
mod wrap_tests {
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};
    use std::future::Future;

    use falconet_pool::Pool;

    use crate::state::COUNT_MAX;
    use crate::{Options, pipe_at};

    /// Stream positions around the point where the counts wrap (2^56).
    const NEAR_THE_WRAP: [u64; 3] = [COUNT_MAX - 1000, COUNT_MAX, COUNT_MAX + 1];

    #[test]
    fn unexamined_counts_across_the_wrap() {
        let pool = Pool::new();
        for start in NEAR_THE_WRAP {
            let (mut writer, reader) = pipe_at(&pool, Options::new(), start).unwrap();
            writer.put_slice(&[7; 3000]).unwrap();
            assert_eq!(writer.unexamined(), 3000, "start {start}");
            let read = reader.try_read().unwrap().expect("3,000 bytes buffered");
            read.advance_to(1000, 2000).unwrap();
            assert_eq!(writer.unexamined(), 1000, "start {start}");
        }
    }

    #[test]
    fn one_thread_pauses_and_resumes_across_the_wrap() {
        let pool = Pool::new();
        for start in NEAR_THE_WRAP {
            let options = Options::new().pause_at(3000).resume_at(1000);
            let (mut writer, reader) = pipe_at(&pool, options, start).unwrap();
            let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
            writer.put_slice(&data).unwrap();
            let waker = Waker::noop();
            let mut cx = Context::from_waker(waker);
            // 5,000 unexamined, pause_at 3,000: the flush waits.
            let mut flush = pin!(writer.flush());
            assert!(flush.as_mut().poll(&mut cx).is_pending(), "start {start}");
            let read = reader.try_read().unwrap().expect("5,000 bytes buffered");
            assert_eq!(read.to_vec(), data, "start {start}");
            // 1,000 left unexamined: not below resume_at, still paused.
            read.advance_to(4000, 4000).unwrap();
            assert!(flush.as_mut().poll(&mut cx).is_pending(), "start {start}");
            let read = reader.try_read().unwrap().expect("1,000 bytes unexamined");
            assert_eq!(read.to_vec(), data[4000..], "start {start}");
            read.advance_to(1000, 1000).unwrap();
            assert_eq!(flush.poll(&mut cx), Poll::Ready(Ok(())), "start {start}");
            assert!(reader.try_read().unwrap().is_none(), "everything examined");
            writer.close();
            let end = reader.try_read().unwrap().expect("end of stream");
            assert!(end.is_completed() && end.is_empty());
        }
    }

    #[test]
    fn two_threads_move_every_byte_across_the_wrap() {
        let pool = Pool::new();
        for start in NEAR_THE_WRAP {
            let options = Options::new().pause_at(4096).resume_at(1024);
            let (mut writer, reader) = pipe_at(&pool, options, start).unwrap();
            const TOTAL: usize = if cfg!(miri) { 8 << 10 } else { 1 << 20 };
            let producer = std::thread::spawn(move || {
                let mut sent = 0;
                while sent < TOTAL {
                    let chunk: Vec<u8> =
                        (sent..(sent + 333).min(TOTAL)).map(|i| (i % 251) as u8).collect();
                    writer.put_slice(&chunk).unwrap();
                    writer.flush_blocking().unwrap();
                    sent += chunk.len();
                }
                writer.close();
            });
            let mut received = 0;
            loop {
                let read = reader.read_blocking().unwrap();
                let done = read.is_completed();
                for (i, byte) in read.to_vec().into_iter().enumerate() {
                    assert_eq!(byte, ((received + i) % 251) as u8, "start {start}");
                }
                received += read.len();
                let len = read.len();
                read.consume(len).unwrap();
                if done {
                    break;
                }
            }
            producer.join().unwrap();
            assert_eq!(received, TOTAL, "start {start}");
        }
    }
}
