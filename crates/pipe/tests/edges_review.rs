//! Day-one edge probes of the public API, from an outside review: every
//! argument at and just past the ends of its range, and calls in the
//! order a new user tries them. Each edge gets its typed error or its
//! documented result; none panics, hangs or loses bytes.
#![cfg(not(falconet_pipe_loom))]

use core::pin::pin;
use core::task::{Context, Poll, Waker};
use std::future::Future;
use std::io::{self, Read, Write};

use falconet_pipe::{AdvanceError, Options, OptionsError, WriteError, pipe};
use falconet_pool::Pool;

fn poll_once<F: Future>(f: core::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn options_at_their_edges() {
    let pool = Pool::new(); // 4096-byte blocks
    let ok = |o: Options| pipe(&pool, o).map(|_| ());
    assert_eq!(ok(Options::new().pause_at(0)), Err(OptionsError::PauseAtZero));
    assert_eq!(ok(Options::new().pause_at(0).resume_at(0)), Err(OptionsError::PauseAtZero));
    assert_eq!(ok(Options::new().resume_at(0)), Err(OptionsError::ResumeAtZero));
    assert!(ok(Options::new().pause_at(1)).is_ok());
    assert_eq!(Options::new().pause_at(1).resume_threshold(), Some(1));
    assert_eq!(Options::new().pause_at(3).resume_threshold(), Some(1));
    assert!(ok(Options::new().pause_at(1).resume_at(1)).is_ok());
    assert_eq!(
        ok(Options::new().pause_at(1).resume_at(2)),
        Err(OptionsError::ResumeAbovePause { pause_at: 1, resume_at: 2 })
    );
    assert!(ok(Options::new().pause_at(u64::MAX)).is_ok());
    assert!(ok(Options::new().pause_at(u64::MAX).resume_at(u64::MAX)).is_ok());
    assert_eq!(
        ok(Options::new().resume_at(u64::MAX)),
        Err(OptionsError::ResumeAbovePause { pause_at: 65536, resume_at: u64::MAX })
    );
    // Documented: resume_at has no effect without back-pressure, 0 included.
    assert!(ok(Options::new().without_back_pressure().resume_at(0)).is_ok());
    assert!(ok(Options::new().without_back_pressure().resume_at(u64::MAX)).is_ok());
    assert_eq!(
        ok(Options::new().min_read_space(0)),
        Err(OptionsError::ReadSpace { requested: 0, block_size: 4096 })
    );
    assert!(ok(Options::new().min_read_space(1)).is_ok());
    assert!(ok(Options::new().min_read_space(4096)).is_ok());
    assert_eq!(
        ok(Options::new().min_read_space(4097)),
        Err(OptionsError::ReadSpace { requested: 4097, block_size: 4096 })
    );
    assert_eq!(
        ok(Options::new().min_read_space(usize::MAX)),
        Err(OptionsError::ReadSpace { requested: usize::MAX, block_size: 4096 })
    );
    // A 64-byte block: the derived read space is 16. (`max_bytes` keeps
    // the pool's slot table small: by default, slabs this small get a
    // million slots, a 64 MiB zeroed table that costs nothing natively
    // and took Miri over ten minutes under Tree Borrows.)
    let tiny =
        Pool::builder().block_size(64).blocks_per_slab(1).max_bytes(1 << 16).build().unwrap();
    assert!(pipe(&tiny, Options::new()).is_ok());
}

#[test]
fn buffer_and_commit_at_their_edges() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    // Nothing buffered yet: a commit has no buffer to commit into.
    assert_eq!(writer.commit(1), Err(WriteError::CommitPastBuffer { committed: 1, available: 0 }));
    assert_eq!(writer.commit(0), Ok(()));
    assert!(!writer.buffer(0).unwrap().is_empty());
    assert_eq!(writer.buffer(4096).unwrap().len(), 4096);
    assert_eq!(
        writer.buffer(4097).unwrap_err(),
        WriteError::TooLarge { requested: 4097, block_size: 4096 }
    );
    assert_eq!(
        writer.buffer(usize::MAX).unwrap_err(),
        WriteError::TooLarge { requested: usize::MAX, block_size: 4096 }
    );
    assert_eq!(
        writer.commit(usize::MAX),
        Err(WriteError::CommitPastBuffer { committed: usize::MAX, available: 4096 })
    );
    writer.buffer(1).unwrap()[..4096].fill(9);
    writer.commit(4096).unwrap();
    assert_eq!(writer.commit(1), Err(WriteError::CommitPastBuffer { committed: 1, available: 0 }));
    assert_eq!(writer.written(), 4096);
    // Empty put_slice: nothing to read, nothing wakes.
    writer.put_slice(&[]).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.len(), 4096);
    read.consume(4096).unwrap();
    writer.put_slice(&[]).unwrap();
    assert!(reader.try_read().unwrap().is_none());
}

#[test]
fn advance_positions_at_their_edges_lose_nothing() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    writer.put_slice(b"hello").unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(
        read.advance_to(usize::MAX, usize::MAX),
        Err(AdvanceError::ExaminedPastEnd { examined: usize::MAX, len: 5 })
    );
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(
        read.consume(6),
        Err(AdvanceError::ConsumedPastExamined { consumed: 6, examined: 5 })
    );
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(
        read.advance_to(1, 0),
        Err(AdvanceError::ConsumedPastExamined { consumed: 1, examined: 0 })
    );
    let read = reader.try_read().unwrap().unwrap();
    read.advance_to(0, 0).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), b"hello");
    read.advance_to(5, 5).unwrap();
    assert!(reader.try_read().unwrap().is_none());
}

#[test]
#[allow(clippy::reversed_empty_ranges)]
fn bytes_ranges_at_their_edges() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    writer.put_slice(b"hello").unwrap();
    let mut read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.bytes(5..5).unwrap().len(), 0);
    assert_eq!(read.bytes(0..0).unwrap().len(), 0);
    assert!(read.bytes(0..6).is_none());
    assert!(read.bytes(6..6).is_none());
    assert!(read.bytes(3..2).is_none());
    assert!(read.bytes(usize::MAX..usize::MAX).is_none());
    assert_eq!(&read.bytes(0..5).unwrap()[..], b"hello");
    read.consume(5).unwrap();
}

/// `ReadGuard::is_empty` says an empty read means the stream completed.
/// `read_at_least(0)` on an open, empty pipe returned an empty read at
/// once (a loop that takes empty for the end stopped early); it now waits
/// as `read_at_least(1)` does: for a byte or the end.
#[test]
fn read_at_least_zero_waits_for_a_byte_or_the_end() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    {
        let mut read = pin!(reader.read_at_least(0));
        assert!(poll_once(read.as_mut()).is_pending(), "an open, empty pipe");
    }
    writer.put_slice(b"a").unwrap();
    let read = reader.read_at_least_blocking(0).unwrap();
    assert_eq!((read.to_vec(), read.is_completed()), (b"a".to_vec(), false));
    read.advance_to(0, 1).unwrap(); // examined, kept
    // Buffered but examined: `read` would wait; at least 0 (so 1) buffered
    // bytes are there.
    let read = reader.read_at_least_blocking(0).unwrap();
    assert_eq!(read.to_vec(), b"a");
    read.consume(1).unwrap();
    writer.close();
    let read = reader.read_at_least_blocking(0).unwrap();
    assert!(read.is_empty() && read.is_completed());
}

#[test]
fn read_at_least_usize_max_returns_at_the_end_of_the_stream() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    writer.put_slice(b"abc").unwrap();
    {
        let mut read = pin!(reader.read_at_least(usize::MAX));
        assert!(poll_once(read.as_mut()).is_pending());
    }
    writer.close();
    let read = reader.read_at_least_blocking(usize::MAX).unwrap();
    assert!(read.is_completed());
    assert_eq!(read.to_vec(), b"abc");
    read.consume(3).unwrap();
    // After the end: every read returns at once, empty and completed.
    for _ in 0..3 {
        let read = reader.try_read().unwrap().unwrap();
        assert!(read.is_empty() && read.is_completed() && read.error().is_none());
    }
}

#[test]
fn a_one_byte_pause_threshold_pauses_on_one_byte_and_resumes_at_zero() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(1)).unwrap();
    writer.put_slice(b"x").unwrap();
    {
        let mut flush = pin!(writer.flush());
        assert!(poll_once(flush.as_mut()).is_pending());
        let read = reader.try_read().unwrap().unwrap();
        read.advance_to(0, 1).unwrap(); // examined, not consumed
        assert_eq!(poll_once(flush.as_mut()), Poll::Ready(Ok(())));
    }
    assert_eq!(writer.unexamined(), 0);
}

#[test]
fn a_huge_pause_threshold_never_waits() {
    let pool = Pool::new();
    let (mut writer, _reader) =
        pipe(&pool, Options::new().pause_at(u64::MAX).resume_at(u64::MAX)).unwrap();
    writer.put_slice(&vec![1u8; 1 << 20]).unwrap();
    assert_eq!(writer.flush_blocking(), Ok(()));
}

/// A source that claims to have read more than it was given.
struct Liar;
impl Read for Liar {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(buf.len() + 1)
    }
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        Ok(bufs.iter().map(|b| b.len()).sum::<usize>() + 1)
    }
}

#[test]
fn a_source_that_claims_more_than_its_buffer_commits_nothing() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let err = writer.read_from(&mut Liar).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert_eq!(writer.written(), 0);
    let err = writer.read_vectored_from(&mut Liar, 10_000).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert_eq!(writer.written(), 0);
    assert!(reader.try_read().unwrap().is_none());
    // The pipe still works.
    writer.put_slice(b"ok").unwrap();
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"ok");
}

#[test]
fn read_vectored_from_with_zero_and_huge_max() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    let data = vec![5u8; 300_000];
    // max 0 with no tail: one fresh block.
    let mut src: &[u8] = &data;
    let r = writer.read_vectored_from(&mut src, 0).unwrap();
    assert_eq!(r.offered, 4096);
    // max usize::MAX: at most MAX_READ_BLOCKS fresh blocks, no overflow.
    let r = writer.read_vectored_from(&mut src, usize::MAX).unwrap();
    assert!(r.offered <= (falconet_pipe::MAX_READ_BLOCKS + 1) * 4096);
    let mut total = 0;
    loop {
        let n = writer.read_vectored_from(&mut src, usize::MAX).unwrap().read;
        if n == 0 {
            break;
        }
        total += n;
    }
    writer.close();
    let read = reader.read_blocking().unwrap();
    assert_eq!(read.len(), 300_000);
    assert!(read.to_vec().iter().all(|&b| b == 5));
    let _ = total;
}

#[test]
fn io_adapters_with_empty_buffers() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    assert_eq!(writer.write(&[]).unwrap(), 0);
    writer.put_slice(b"ab").unwrap();
    let mut io = reader.into_io();
    assert_eq!(io.read(&mut []).unwrap(), 0);
    let mut two = [0u8; 2];
    io.read_exact(&mut two).unwrap();
    assert_eq!(&two, b"ab");
    writer.close();
    assert_eq!(io.read(&mut [0u8; 8]).unwrap(), 0);
    assert_eq!(io.read(&mut [0u8; 8]).unwrap(), 0);
}

#[test]
fn writer_errors_after_the_reader_is_gone_and_after_the_pool_runs_dry() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(1)
        .max_bytes(64)
        .thread_cache(0)
        .build()
        .unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    let err = writer.put_slice(&[1u8; 100]).unwrap_err();
    assert_eq!(err.committed(), 64);
    assert!(matches!(err.error(), WriteError::Lease(_)));
    assert!(matches!(writer.buffer(1).unwrap_err(), WriteError::Lease(_)));
    drop(reader);
    assert_eq!(writer.put_slice(b"x").unwrap_err().error(), WriteError::ReaderClosed);
    assert_eq!(writer.flush_blocking(), Err(WriteError::ReaderClosed));
    assert_eq!(writer.commit(0), Err(WriteError::ReaderClosed));
    assert!(writer.is_reader_closed());
    writer.close();
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn io_reader_consume_usize_max_and_into_inner_keep_unshown_bytes() {
    use std::io::BufRead;
    // A small `max_bytes`: see `options_at_their_edges`.
    let pool =
        Pool::builder().block_size(64).blocks_per_slab(4).max_bytes(1 << 16).build().unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let data: Vec<u8> = (0..100u8).collect();
    writer.put_slice(&data).unwrap();
    let mut io = reader.into_io();
    let shown = io.fill_buf().unwrap().len();
    assert_eq!(shown, 64);
    io.consume(usize::MAX); // against the contract: capped to what was shown
    let reader = io.into_inner();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), &data[64..]);
    read.consume(36).unwrap();
    assert_eq!(writer.trim(), 0);
    writer.close();
}
