//! A proptest state machine: random writes, commits, reads, advances,
//! flushes and closes against a `VecDeque<u8>` model. The reader must see
//! exactly the bytes written, in order, once; reads, flushes and errors must
//! happen exactly when the model says.
#![cfg(not(falconet_pipe_loom))]

mod common;

use common::Trickle;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use falconet_pipe::{Options, ReadError, ReadGuard, WriteError, pipe};
use falconet_pool::Pool;
use proptest::prelude::*;

const BLOCK: usize = 64;
const PAUSE_AT: u64 = 24;
const RESUME_AT: u64 = 12;

#[derive(Clone, Debug)]
enum Op {
    /// `put_slice` of `len` bytes.
    Write(usize),
    /// `buffer(min)`, fill `n` (clamped to the buffer), `commit`.
    Commit { min: usize, n: usize },
    /// `try_read` (fails while a read is held).
    Read,
    /// Advance the held read: consumed and examined as fractions of its
    /// length (examined >= consumed).
    Advance { consumed: u8, extra: u8 },
    /// Drop the held read.
    Release,
    /// Poll `read_at_least(n)` once; if it waits, write `more` bytes, poll
    /// it again, and drop it (a timeout): a cancelled wait must change
    /// nothing the model sees.
    ReadAtLeast { n: usize, more: usize },
    /// `read_vectored_from(source, max)` from a source that offers `len`
    /// bytes, at most `limit` per read.
    ReadVectored { len: usize, limit: usize, max: usize },
    /// Poll one fresh flush once.
    Flush,
    /// Close the writer (once).
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Mostly small writes (to land exactly on the thresholds), some
        // spanning several blocks.
        3 => prop_oneof![0..8usize, 0..300usize].prop_map(Op::Write),
        2 => (0..=BLOCK, 0..=BLOCK).prop_map(|(min, n)| Op::Commit { min, n }),
        3 => Just(Op::Read),
        3 => (any::<u8>(), any::<u8>()).prop_map(|(consumed, extra)| Op::Advance { consumed, extra }),
        1 => Just(Op::Release),
        2 => (0..120usize, 0..8usize).prop_map(|(n, more)| Op::ReadAtLeast { n, more }),
        2 => (0..600usize, 1..400usize, 0..300usize)
            .prop_map(|(len, limit, max)| Op::ReadVectored { len, limit, max }),
        1 => Just(Op::Flush),
        1 => Just(Op::Close),
    ]
}

/// The sequential model: buffered bytes, how many of them are examined,
/// whether the writer closed.
#[derive(Default)]
struct Model {
    bytes: VecDeque<u8>,
    examined: usize,
    closed: bool,
    next: u8,
}

impl Model {
    fn unexamined(&self) -> usize {
        self.bytes.len() - self.examined
    }

    fn produce(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.next = self.next.wrapping_add(1);
                self.bytes.push_back(self.next);
                self.next
            })
            .collect()
    }
}

fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    poll_pinned(pin!(future))
}

fn poll_pinned<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let pool = Pool::builder()
        .block_size(BLOCK)
        .blocks_per_slab(8)
        .thread_cache(0)
        .max_bytes(1 << 20)
        .build()
        .unwrap();
    let options = Options::new().pause_at(PAUSE_AT).resume_at(RESUME_AT).min_read_space(16);
    let (writer, reader) = pipe(&pool, options).unwrap();
    let mut writer = Some(writer);
    let mut model = Model::default();
    let mut held: Option<ReadGuard<'_>> = None;
    for op in ops {
        match op {
            Op::Write(len) => {
                let Some(writer) = writer.as_mut() else { continue };
                let data = model.produce(len);
                writer.put_slice(&data).unwrap();
            }
            Op::Commit { min, n } => {
                let Some(writer) = writer.as_mut() else { continue };
                let buffer = writer.buffer(min).unwrap();
                prop_assert!(buffer.len() >= min.max(1));
                let n = n.min(buffer.len());
                let data = model.produce(n);
                buffer[..n].copy_from_slice(&data);
                writer.commit(n).unwrap();
            }
            Op::Read => {
                let result = reader.try_read();
                if held.is_some() {
                    prop_assert_eq!(result.unwrap_err(), ReadError::ConcurrentRead);
                    continue;
                }
                let read = result.unwrap();
                let ready = model.unexamined() > 0 || model.closed;
                prop_assert_eq!(read.is_some(), ready, "read readiness");
                if let Some(read) = read {
                    prop_assert_eq!(read.to_vec(), model.bytes.iter().copied().collect::<Vec<_>>());
                    prop_assert_eq!(read.is_completed(), model.closed);
                    held = Some(read);
                }
            }
            Op::Advance { consumed, extra } => {
                let Some(read) = held.take() else { continue };
                let len = read.len();
                let consumed = len * usize::from(consumed) / 255;
                let examined = consumed + (len - consumed) * usize::from(extra) / 255;
                read.advance_to(consumed, examined).unwrap();
                model.bytes.drain(..consumed);
                model.examined = model.examined.max(examined) - consumed;
            }
            Op::Release => drop(held.take()),
            Op::ReadAtLeast { n, more } => {
                let mut read = pin!(reader.read_at_least(n));
                // 0 counts as 1: an empty read is the end of the stream.
                let n = n.max(1);
                let mut polled = poll_pinned(read.as_mut());
                if held.is_some() {
                    let Poll::Ready(result) = polled else { panic!("a held read fails at once") };
                    prop_assert_eq!(result.unwrap_err(), ReadError::ConcurrentRead);
                    continue;
                }
                if polled.is_pending() {
                    prop_assert!(model.bytes.len() < n && !model.closed, "read_at_least waits");
                    if let Some(writer) = writer.as_mut() {
                        let data = model.produce(more);
                        writer.put_slice(&data).unwrap();
                    }
                    polled = poll_pinned(read.as_mut());
                }
                match polled {
                    Poll::Ready(result) => {
                        let guard = result.unwrap();
                        prop_assert!(model.bytes.len() >= n || model.closed);
                        prop_assert_eq!(
                            guard.to_vec(),
                            model.bytes.iter().copied().collect::<Vec<_>>()
                        );
                        held = Some(guard);
                    }
                    // Dropped while waiting: nothing examined or consumed.
                    Poll::Pending => prop_assert!(model.bytes.len() < n && !model.closed),
                }
            }
            Op::ReadVectored { len, limit, max } => {
                let Some(writer) = writer.as_mut() else { continue };
                let data: Vec<u8> = (1..=len).map(|i| model.next.wrapping_add(i as u8)).collect();
                let mut source = Trickle { data: &data, limit };
                let n = writer.read_vectored_from(&mut source, max).unwrap().read;
                prop_assert!(n <= len.min(limit), "read more than offered");
                prop_assert!(len.min(limit) == 0 || n > 0, "a read that took nothing");
                prop_assert_eq!(model.produce(n), &data[..n]);
            }
            Op::Flush => {
                let Some(writer) = writer.as_mut() else { continue };
                let ready = poll_once(writer.flush()).is_ready();
                prop_assert_eq!(ready, (model.unexamined() as u64) < PAUSE_AT, "flush readiness");
            }
            Op::Close => {
                if let Some(writer) = writer.take() {
                    writer.close();
                    model.closed = true;
                }
            }
        }
    }
    // Drain: every byte exactly once, in order.
    drop(held.take());
    if let Some(writer) = writer.take() {
        writer.close();
    }
    let read = reader.try_read().unwrap().expect("a closed pipe always reads");
    prop_assert_eq!(read.to_vec(), model.bytes.iter().copied().collect::<Vec<_>>());
    let len = read.len();
    read.consume(len).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    prop_assert!(read.is_empty() && read.is_completed());
    drop(read);
    drop(held);
    drop(reader);
    prop_assert_eq!(pool.stats().leased, 0, "the pipe returned every block");
    Ok(())
}

proptest! {
    #![proptest_config(if cfg!(miri) {
        // Miri: few cases, and no failure file (no file system access).
        ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig { cases: 512, ..ProptestConfig::default() }
    })]

    #[test]
    fn pipe_matches_a_vecdeque(ops in prop::collection::vec(op(), 1..if cfg!(miri) { 30 } else { 200 })) {
        run(ops)?;
    }
}

#[test]
fn write_errors_are_typed() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(1)
        .thread_cache(0)
        .max_bytes(128)
        .build()
        .unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    // Two blocks in the pool: the third lease fails, and what fit is kept.
    let error = writer.put_slice(&[1; 200]).unwrap_err();
    assert!(matches!(
        error.error(),
        WriteError::Lease(falconet_pool::LeaseError::Exhausted { .. })
    ));
    assert_eq!(error.committed(), 128);
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 128);
}
