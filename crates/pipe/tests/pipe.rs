//! The pipe's contract, one behaviour per test.
#![cfg(not(falconet_pipe_loom))]

mod common;

use common::{Trickle, small_pool};
use std::io::{self, BufRead, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use bytes::Buf;
use falconet_pipe::{
    AdvanceError, Options, OptionsError, ReadError, Reader, WriteError, Writer, pipe,
};
use falconet_pool::Pool;

fn new_pipe(pool: &Pool, options: Options) -> (Writer, Reader) {
    pipe(pool, options).unwrap()
}

#[test]
fn bytes_arrive_in_order_across_blocks() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    writer.put_slice(&data[..10]).unwrap();
    writer.put_slice(&data[10..]).unwrap();
    let read = reader.try_read().unwrap().expect("bytes are buffered");
    assert_eq!(read.len(), 1000);
    assert_eq!(read.to_vec(), data);
    // Chunks are per block: the first fills a 64-byte block.
    let chunks: Vec<usize> = read.chunks().map(<[u8]>::len).collect();
    assert_eq!(chunks.iter().sum::<usize>(), 1000);
    assert!(chunks.iter().all(|&len| len <= 64 && len > 0));
    // The Buf view walks the same bytes.
    let mut buf = read.buf();
    let mut copy = vec![0; 1000];
    buf.copy_to_slice(&mut copy);
    assert_eq!(copy, data);
    read.advance_to(500, 500).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), &data[500..]);
}

#[test]
fn buffer_and_commit_write_in_place_and_small_writes_share_a_block() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().min_read_space(16));
    let space = writer.buffer(8).unwrap();
    assert_eq!(space.len(), 64);
    space[..3].copy_from_slice(b"abc");
    writer.commit(3).unwrap();
    // The rest of the tail block is offered next.
    assert_eq!(writer.buffer(8).unwrap().len(), 61);
    // More than is left: a fresh block.
    assert_eq!(writer.buffer(62).unwrap().len(), 64);
    assert_eq!(
        writer.commit(65),
        Err(WriteError::CommitPastBuffer { committed: 65, available: 64 })
    );
    assert_eq!(
        writer.buffer(65).unwrap_err(),
        WriteError::TooLarge { requested: 65, block_size: 64 }
    );
    writer.put_slice(b"de").unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), b"abcde");
    // "abc" sits alone in the first block; "de" went to the tail block, which
    // the 62-byte buffer leased.
    assert_eq!(read.chunks().collect::<Vec<_>>(), [&b"abc"[..], &b"de"[..]]);
    assert_eq!(pool.stats().leased, 2);
    read.consume(5).unwrap();
    // The first block is consumed and not the tail: back in the pool.
    assert_eq!(pool.stats().leased, 1);
}

#[test]
fn examined_bytes_do_not_wake_the_next_read() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"GET / HT").unwrap();
    let read = reader.try_read().unwrap().unwrap();
    // A parser needs more: consume nothing, examine everything.
    read.advance_to(0, 8).unwrap();
    assert!(reader.try_read().unwrap().is_none(), "nothing new to examine");
    writer.put_slice(b"TP/1.1").unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), b"GET / HTTP/1.1", "unconsumed bytes come back");
    // Examining only part leaves the rest to wake the next read at once.
    read.advance_to(4, 6).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), b"/ HTTP/1.1");
    // Dropping a guard consumes and examines nothing.
    drop(read);
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 10);
}

#[test]
fn bad_positions_are_typed_errors_and_lose_nothing() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"hello").unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(
        read.advance_to(3, 2),
        Err(AdvanceError::ConsumedPastExamined { consumed: 3, examined: 2 })
    );
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.advance_to(1, 6), Err(AdvanceError::ExaminedPastEnd { examined: 6, len: 5 }));
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(
        read.consume(6),
        Err(AdvanceError::ConsumedPastExamined { consumed: 6, examined: 5 })
    );
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"hello");
}

#[test]
fn close_completes_the_stream_after_the_last_byte() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"bye").unwrap();
    writer.close();
    let read = reader.read_blocking().unwrap();
    assert!(read.is_completed());
    assert!(read.error().is_none());
    assert_eq!(read.to_vec(), b"bye");
    read.consume(3).unwrap();
    let read = reader.read_blocking().unwrap();
    assert!(read.is_completed() && read.is_empty());
}

#[test]
fn close_with_error_reaches_the_reader_with_the_bytes() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"partial").unwrap();
    writer.close_with(io::Error::new(io::ErrorKind::ConnectionReset, "peer reset"));
    let read = reader.read_blocking().unwrap();
    assert_eq!(read.to_vec(), b"partial");
    assert!(read.is_completed());
    let error = read.error().expect("the writer's error");
    assert_eq!(error.kind(), io::ErrorKind::ConnectionReset);
    assert_eq!(error.to_string(), "peer reset");
}

#[test]
fn a_dropped_writer_is_not_a_clean_end_of_stream() {
    let pool = small_pool();
    let (writer, reader) = new_pipe(&pool, Options::new());
    drop(writer);
    let read = reader.read_blocking().unwrap();
    assert!(read.is_completed());
    assert_eq!(read.error().map(io::Error::kind), Some(io::ErrorKind::BrokenPipe));
}

#[test]
fn the_writer_learns_that_the_reader_is_gone() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    assert!(!writer.is_reader_closed());
    drop(reader);
    assert!(writer.is_reader_closed());
    assert_eq!(writer.flush_blocking(), Err(WriteError::ReaderClosed));
    assert_eq!(writer.put_slice(b"x").map_err(|e| e.error()), Err(WriteError::ReaderClosed));
}

/// Once the writer has learnt that the reader is gone, every later call
/// says so: flushes (the fast path's last look included the drop), and
/// writes, which lease and copy nothing. Before, the second flush said
/// `Ok` and `io::Write` took 10,000 blocks for a reader that was gone.
#[test]
fn the_reader_stays_gone() {
    for back_pressure in [true, false] {
        let pool = Pool::new();
        let options =
            if back_pressure { Options::new() } else { Options::new().without_back_pressure() };
        // Learnt by a flush, by a commit into the tail, by a write that
        // needs a block.
        for learn in 0..3 {
            let (mut writer, reader) = new_pipe(&pool, options);
            writer.put_slice(b"tail").unwrap();
            drop(reader);
            match learn {
                0 => assert_eq!(writer.flush_blocking(), Err(WriteError::ReaderClosed)),
                // Nothing yet: the write below, into the tail, learns it.
                1 => {}
                _ => assert!(writer.put_slice(&[7; 10_000]).is_err()),
            }
            assert!(writer.put_slice(b"x").is_err());
            for _ in 0..1_000 {
                assert_eq!(writer.flush_blocking(), Err(WriteError::ReaderClosed));
                let error = writer.put_slice(&[7; 4096]).unwrap_err();
                assert_eq!((error.committed(), error.error()), (0, WriteError::ReaderClosed));
                assert_eq!(writer.write(&[7; 4096]).unwrap_err().kind(), io::ErrorKind::BrokenPipe);
                assert!(writer.buffer(1).is_err());
            }
            assert!(pool.stats().leased <= 1, "the tail block at most: {:?}", pool.stats());
        }
        // A vectored read after the drop takes nothing from its source
        // and leases nothing (it does not go through `grow`).
        let (mut writer, reader) = new_pipe(&pool, options);
        drop(reader);
        let data = vec![7u8; 300_000];
        let mut source: &[u8] = &data;
        let error = writer.read_vectored_from(&mut source, 256 * 1024).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!((source.len(), pool.stats().leased), (data.len(), 0));
    }
}

#[test]
fn thresholds_are_validated() {
    let pool = small_pool();
    assert_eq!(pipe(&pool, Options::new().resume_at(0)).unwrap_err(), OptionsError::ResumeAtZero);
    assert_eq!(
        pipe(&pool, Options::new().pause_at(10).resume_at(11)).unwrap_err(),
        OptionsError::ResumeAbovePause { pause_at: 10, resume_at: 11 }
    );
    assert_eq!(
        pipe(&pool, Options::new().min_read_space(65)).unwrap_err(),
        OptionsError::ReadSpace { requested: 65, block_size: 64 }
    );
    assert!(pipe(&pool, Options::new().pause_at(10).resume_at(10)).is_ok());
    assert!(pipe(&pool, Options::new().without_back_pressure()).is_ok());
    assert_eq!(pipe(&pool, Options::new().pause_at(0)).unwrap_err(), OptionsError::PauseAtZero);
}

#[test]
fn pause_at_alone_derives_resume_at_and_without_back_pressure_stays() {
    let pool = small_pool();
    // A day-one call: pause_at below the default resume_at, resume_at unset.
    let options = Options::new().pause_at(16 * 1024);
    assert_eq!(options.resume_threshold(), Some(8 * 1024));
    assert!(pipe(&pool, options).is_ok());
    // The edges of the range: 1 resumes below 1, u64::MAX below half of it.
    assert_eq!(Options::new().pause_at(1).resume_threshold(), Some(1));
    assert_eq!(Options::new().pause_at(3).resume_threshold(), Some(1));
    assert!(pipe(&pool, Options::new().pause_at(1)).is_ok());
    assert_eq!(Options::new().pause_at(u64::MAX).resume_threshold(), Some(u64::MAX / 2));
    assert!(pipe(&pool, Options::new().pause_at(u64::MAX)).is_ok());
    // The defaults are the derived pair.
    assert_eq!(Options::new().pause_threshold(), Some(falconet_pipe::DEFAULT_PAUSE_AT));
    assert_eq!(Options::new().resume_threshold(), Some(falconet_pipe::DEFAULT_RESUME_AT));
    // Set explicitly, resume_at is kept, in either order.
    assert_eq!(Options::new().resume_at(5).pause_at(100).resume_threshold(), Some(5));
    // without_back_pressure is not undone by a later resume_at ...
    let options = Options::new().without_back_pressure().resume_at(10);
    assert_eq!((options.pause_threshold(), options.resume_threshold()), (None, None));
    let (mut writer, reader) = new_pipe(&pool, options);
    writer.put_slice(&[1; 1000]).unwrap();
    assert!(futures_ready(writer.flush()), "no back-pressure: flush never waits");
    drop(reader);
    // ... but a later pause_at turns it back on.
    let options = Options::new().without_back_pressure().pause_at(100);
    assert_eq!(options.resume_threshold(), Some(50));
    let (mut writer, _reader) = new_pipe(&pool, options);
    writer.put_slice(&[1; 100]).unwrap();
    assert!(!futures_ready(writer.flush()), "paused at 100");
}

/// Whether `future` is ready at its first poll.
fn futures_ready<F: std::future::Future>(future: F) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::pin!(future).poll(&mut cx).is_ready()
}

#[test]
fn flush_pauses_at_the_threshold_and_resumes_below_the_other() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(100).resume_at(50));
    writer.put_slice(&[7; 99]).unwrap();
    writer.flush_blocking().unwrap(); // 99 < 100: no wait
    writer.put_slice(&[7; 1]).unwrap();
    let resumed = Arc::new(AtomicBool::new(false));
    let flusher = {
        let resumed = resumed.clone();
        thread::spawn(move || {
            writer.flush_blocking().unwrap();
            resumed.store(true, Ordering::SeqCst);
            writer
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert!(!resumed.load(Ordering::SeqCst), "100 unexamined: the writer waits");
    // Consuming without examining changes nothing: back-pressure counts
    // unexamined bytes... (consumed <= examined, so examine 50: 50 left, not < 50).
    reader.try_read().unwrap().unwrap().advance_to(0, 50).unwrap();
    thread::sleep(Duration::from_millis(50));
    assert!(!resumed.load(Ordering::SeqCst), "50 unexamined is not below resume_at");
    reader.try_read().unwrap().unwrap().advance_to(0, 51).unwrap();
    let writer = flusher.join().unwrap();
    assert!(resumed.load(Ordering::SeqCst));
    drop(writer);
}

#[test]
fn read_at_least_above_the_pause_threshold_does_not_deadlock() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(64).resume_at(32));
    let producer = thread::spawn(move || {
        for _ in 0..40 {
            writer.put_slice(&[1; 10]).unwrap();
            writer.flush_blocking().unwrap();
        }
        writer.close();
    });
    // 300 bytes is far above pause_at (64): the wait examines everything, so
    // the writer keeps going instead of pausing forever.
    let read = reader.read_at_least_blocking(300).unwrap();
    assert!(read.len() >= 300);
    let mut total = read.len();
    read.consume(total).unwrap();
    loop {
        let read = reader.read_blocking().unwrap();
        let (len, done) = (read.len(), read.is_completed());
        total += len;
        read.consume(len).unwrap();
        if done {
            break;
        }
    }
    assert_eq!(total, 400);
    producer.join().unwrap();
}

#[test]
fn a_second_read_while_one_is_held_fails_and_the_holder_is_untouched() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"abcdef").unwrap();
    let held = reader.try_read().unwrap().unwrap();
    assert_eq!(reader.try_read().unwrap_err(), ReadError::ConcurrentRead);
    assert_eq!(reader.read_blocking().unwrap_err(), ReadError::ConcurrentRead);
    // The holder's advance applies; no byte lost or duplicated.
    held.advance_to(2, 2).unwrap();
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"cdef");
}

#[test]
fn a_second_read_fails_a_pending_read_too_and_the_pipe_keeps_working() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let reader = Arc::new(reader);
    let pending = {
        let reader = reader.clone();
        thread::spawn(move || reader.read_blocking().map(|read| read.to_vec()))
    };
    // Wait until the first read is pending (a second read then conflicts).
    let second = loop {
        thread::sleep(Duration::from_millis(5));
        match reader.try_read() {
            Err(error) => break error,
            Ok(None) => continue, // the first read has not started yet
            Ok(Some(_)) => unreachable!("nothing was written"),
        }
    };
    assert_eq!(second, ReadError::ConcurrentRead);
    assert_eq!(pending.join().unwrap(), Err(ReadError::ConcurrentRead));
    writer.put_slice(b"still here").unwrap();
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"still here");
}

#[test]
fn async_read_wakes_on_commit() {
    let pool = Pool::new();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let producer = thread::spawn(move || {
        for i in 0..100u8 {
            writer.put_slice(&[i; 100]).unwrap();
            writer.flush_blocking().unwrap();
        }
        writer.close();
    });
    let total = runtime.block_on(async {
        let mut total = 0u64;
        loop {
            let read = reader.read().await.unwrap();
            let mut sum = 0u64;
            read.chunks().flatten().for_each(|&b| sum += u64::from(b));
            total += sum;
            let (len, done) = (read.len(), read.is_completed());
            read.consume(len).unwrap();
            if done {
                return total;
            }
        }
    });
    producer.join().unwrap();
    assert_eq!(total, (0..100u64).map(|i| i * 100).sum::<u64>());
}

#[test]
fn std_io_adapters_round_trip() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let producer = thread::spawn(move || {
        for line in 0..200 {
            writeln!(writer, "line {line}").unwrap();
        }
        writer.close_with(io::Error::new(io::ErrorKind::TimedOut, "slow peer"));
    });
    let mut io = io::BufReader::new(reader.into_io());
    let mut line = String::new();
    for expected in 0..200 {
        line.clear();
        io.read_line(&mut line).unwrap();
        assert_eq!(line, format!("line {expected}\n"));
    }
    let mut rest = Vec::new();
    let error = io.read_to_end(&mut rest).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    producer.join().unwrap();
}

#[test]
fn io_reader_fill_buf_and_consume() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(&[5; 100]).unwrap();
    writer.close();
    let mut io = reader.into_io();
    assert_eq!(io.fill_buf().unwrap(), &[5; 64][..]);
    io.consume(60);
    assert_eq!(io.fill_buf().unwrap(), &[5; 4][..]);
    io.consume(4);
    assert_eq!(io.fill_buf().unwrap(), &[5; 36][..]);
    io.consume(36);
    assert!(io.fill_buf().unwrap().is_empty(), "end of stream");
    let reader = io.into_inner();
    assert!(reader.is_writer_closed());
}

#[test]
fn io_reader_consume_takes_at_most_what_fill_buf_showed() {
    // `BufRead` asks for `amt <= fill_buf().len()`; a caller that passes
    // more (up to `usize::MAX`) must not lose the bytes it never saw.
    let pool = small_pool(); // 64-byte blocks
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let data: Vec<u8> = (0..200u8).collect();
    writer.put_slice(&data).unwrap();
    writer.close();
    let mut io = reader.into_io();
    assert_eq!(io.fill_buf().unwrap(), &data[..64]);
    io.consume(100);
    assert_eq!(io.fill_buf().unwrap(), &data[64..128], "only the 64 shown were consumed");
    io.consume(usize::MAX);
    let mut rest = Vec::new();
    io.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, &data[128..]);
    // With nothing shown, nothing is consumed.
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(&data[..10]).unwrap();
    writer.close();
    let mut io = reader.into_io();
    io.consume(5);
    let mut all = Vec::new();
    io.read_to_end(&mut all).unwrap();
    assert_eq!(all, &data[..10]);
}

#[test]
fn read_from_fills_pool_memory_with_the_read_space_rule() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().min_read_space(32));
    let mut source: &[u8] = &[9; 40];
    assert_eq!(writer.read_from(&mut source).unwrap(), 40);
    // 24 bytes free in the tail: below 32, so the next read takes a new block.
    let mut source: &[u8] = &[8; 10];
    assert_eq!(writer.read_from(&mut source).unwrap(), 10);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.chunks().map(<[u8]>::len).collect::<Vec<_>>(), [40, 10]);
    let mut empty: &[u8] = &[];
    drop(read);
    assert_eq!(writer.read_from(&mut empty).unwrap(), 0);
}

#[test]
fn read_vectored_from_fills_the_tail_then_fresh_blocks_in_one_read() {
    let pool = small_pool(); // 64-byte blocks
    let (mut writer, reader) = new_pipe(&pool, Options::new().without_back_pressure());
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    writer.put_slice(&data[..10]).unwrap();
    // 54 bytes of tail, then 200 asked: 4 fresh blocks; one read of 150.
    let mut source = Trickle { data: &data[10..], limit: 150 };
    let read = writer.read_vectored_from(&mut source, 200).unwrap();
    assert_eq!(read, falconet_pipe::VectoredRead { read: 150, offered: 54 + 4 * 64 });
    assert!(!read.filled(), "a short read drained the source");
    assert_eq!(writer.written(), 160);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), &data[..160]);
    assert_eq!(read.chunks().map(<[u8]>::len).collect::<Vec<_>>(), [64, 64, 32]);
    // The fourth fresh block, which the read did not reach, went back.
    assert_eq!(pool.stats().leased, 3);
    drop(read);
    // Exactly to a block's end, then a read that lands in fresh blocks
    // only (the tail is full).
    let mut source = Trickle { data: &data[160..], limit: 32 };
    assert_eq!(writer.read_vectored_from(&mut source, 0).unwrap().read, 32);
    let mut source = Trickle { data: &data[192..], limit: 1000 };
    assert_eq!(writer.read_vectored_from(&mut source, 128).unwrap().read, 128);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), &data[..320]);
    assert_eq!(read.chunks().map(<[u8]>::len).collect::<Vec<_>>(), [64, 64, 64, 64, 64]);
    drop(read);
    // At most MAX_READ_BLOCKS blocks, whatever `max` says.
    let big = vec![5u8; 64 * 100];
    let mut source = Trickle { data: &big, limit: usize::MAX };
    let n = writer.read_vectored_from(&mut source, usize::MAX).unwrap().read;
    assert_eq!(n, 64 * falconet_pipe::MAX_READ_BLOCKS);
    // The end of the stream: 0, nothing committed, nothing kept.
    let leased = pool.stats().leased;
    assert_eq!(writer.read_vectored_from(&mut &[][..], 1000).unwrap().read, 0);
    assert_eq!(pool.stats().leased, leased);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.len(), 320 + n);
}

#[test]
fn read_vectored_from_with_a_short_pool_reads_less_and_a_failed_read_commits_nothing() {
    // Three 64-byte blocks in all.
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(1)
        .thread_cache(0)
        .max_bytes(192)
        .build()
        .unwrap();
    let (mut writer, reader) = new_pipe(&pool, Options::new().without_back_pressure());
    let data = [3u8; 1000];
    // Asked for 640 bytes: the pool has three blocks, the read is shorter.
    let read = writer.read_vectored_from(&mut Trickle { data: &data, limit: 1000 }, 640).unwrap();
    assert_eq!((read.read, read.offered), (192, 192));
    assert!(read.filled(), "the source may hold more");
    // Tail full, pool empty: the typed lease error, nothing lost.
    let error =
        writer.read_vectored_from(&mut Trickle { data: &data, limit: 1000 }, 64).unwrap_err();
    assert!(
        matches!(
            error.get_ref().and_then(|e| e.downcast_ref::<WriteError>()),
            Some(WriteError::Lease(_))
        ),
        "{error:?}"
    );
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.len(), 192);
    read.consume(192).unwrap();
    // A source that fails: nothing committed, the leased blocks go back.
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }
    let leased = pool.stats().leased;
    let error = writer.read_vectored_from(&mut Failing, 128).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::WouldBlock);
    assert_eq!(pool.stats().leased, leased);
    assert_eq!(writer.written(), 192);
    assert!(reader.try_read().unwrap().is_none());
    // After close, a typed error.
    drop(reader);
    let error = writer.read_vectored_from(&mut Trickle { data: &data, limit: 10 }, 64).unwrap_err();
    assert!(
        matches!(
            error.get_ref().and_then(|e| e.downcast_ref::<WriteError>()),
            Some(WriteError::ReaderClosed)
        ),
        "{error:?}"
    );
}

#[test]
fn bytes_within_a_block_share_it_and_outlive_the_pipe() {
    let pool = small_pool(); // 64-byte blocks
    let (mut writer, reader) = new_pipe(&pool, Options::new().without_back_pressure());
    let data: Vec<u8> = (0..150u8).collect();
    writer.put_slice(&data[..100]).unwrap(); // blocks [0, 64), [64, 100)
    let mut read = reader.try_read().unwrap().unwrap();
    let in_first = read.bytes(10..60).unwrap();
    let chunk_start = read.chunks().next().unwrap().as_ptr();
    assert_eq!(&in_first[..], &data[10..60]);
    // SAFETY: only comparing addresses, both inside the first block.
    assert_eq!(in_first.as_ptr(), unsafe { chunk_start.add(10) }, "no copy");
    let across = read.bytes(60..70).unwrap();
    assert_eq!(&across[..], &data[60..70], "across a block boundary: copied");
    let in_tail = read.bytes(70..100).unwrap();
    let again = read.bytes(0..64).unwrap(); // the first block, shared twice
    assert_eq!(read.bytes(0..101), None, "past the read");
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = read.bytes(5..4);
    assert_eq!(backwards, None);
    assert!(read.bytes(100..100).unwrap().is_empty());
    read.consume(100).unwrap();
    // The writer goes on filling the tail block the `Bytes` shares.
    writer.put_slice(&data[100..]).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), &data[100..]);
    read.consume(50).unwrap();
    assert_eq!(&in_tail[..], &data[70..100], "later writes to the block leave it be");
    // Both shared blocks stay out after the pipe is gone.
    drop((writer, reader));
    assert_eq!(pool.stats().leased, 2);
    assert_eq!(&again[..], &data[..64]);
    drop((in_first, again));
    assert_eq!(pool.stats().leased, 1, "the first block went back with its last Bytes");
    std::thread::spawn(move || assert_eq!(&in_tail[..], &data[70..100])).join().unwrap();
    assert_eq!(pool.stats().leased, 0, "dropped on another thread: back too");
    drop(across);
}

#[test]
fn blocks_go_back_to_the_pool_and_the_pipe_frees_everything() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    for _ in 0..10 {
        writer.put_slice(&[1; 640]).unwrap();
        let read = reader.try_read().unwrap().unwrap();
        assert_eq!(pool.stats().leased, 10);
        read.consume(640).unwrap();
        // Every block is back, the full tail too.
        assert_eq!(pool.stats().leased, 0);
    }
    writer.put_slice(&[1; 300]).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    read.consume(100).unwrap();
    // A partly consumed tail stays: the writer is still filling it.
    assert_eq!(pool.stats().leased, 4);
    drop(reader);
    drop(writer);
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn the_default_read_space_is_a_quarter_block() {
    let pool = small_pool(); // 64-byte blocks: 16 bytes of read space
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.read_from(&mut &[1u8; 48][..]).unwrap();
    writer.read_from(&mut &[2u8; 4][..]).unwrap(); // 16 free: same block
    writer.read_from(&mut &[3u8; 4][..]).unwrap(); // 12 free: a fresh block
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.chunks().map(<[u8]>::len).collect::<Vec<_>>(), [52, 4]);
}

/// A pool of exactly one 64-byte block.
fn one_block_pool() -> Pool {
    Pool::builder().block_size(64).blocks_per_slab(1).thread_cache(0).max_bytes(64).build().unwrap()
}

#[test]
fn a_write_the_pool_can_only_partly_hold_is_ok_n_and_err_means_nothing_written() {
    let pool = one_block_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().without_back_pressure());
    // std's contract: `Err` means nothing was written. 64 of the 100 bytes
    // fit, so this is `Ok(64)`, and the reader sees exactly those.
    assert_eq!(Write::write(&mut writer, &[7; 100]).unwrap(), 64);
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), [7; 64]);
    // Now nothing fits: `Err`, and nothing more reaches the reader.
    let error = Write::write(&mut writer, &[8; 10]).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::OutOfMemory);
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), [7; 64]);
    // `write_all` therefore never duplicates a prefix: it fails with the
    // pool's error after exactly what fit.
    let (mut writer, reader) = {
        drop((writer, reader));
        new_pipe(&pool, Options::new().without_back_pressure())
    };
    assert_eq!(writer.write_all(&[9; 100]).unwrap_err().kind(), io::ErrorKind::OutOfMemory);
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), [9; 64]);
}

#[test]
fn put_slice_says_how_much_it_committed_when_it_fails() {
    let pool = one_block_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().without_back_pressure());
    writer.put_slice(b"abc").unwrap();
    let error = writer.put_slice(&[1; 100]).unwrap_err();
    assert_eq!(error.committed(), 61, "the rest of the one block");
    assert!(matches!(error.error(), WriteError::Lease(_)));
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 64);
    // Nothing fits at all: committed 0.
    assert_eq!(writer.put_slice(b"x").unwrap_err().committed(), 0);
    // The reader is gone: no block is leased for bytes nobody will read.
    let (mut writer, reader) = {
        drop((writer, reader));
        new_pipe(&pool, Options::new().without_back_pressure())
    };
    drop(reader);
    let error = writer.put_slice(b"late").unwrap_err();
    assert_eq!((error.committed(), error.error()), (0, WriteError::ReaderClosed));
    assert_eq!(pool.stats().leased, 0);
    // As an `io::Error` it keeps the cause's kind.
    assert_eq!(io::Error::from(error).kind(), io::ErrorKind::BrokenPipe);
}

/// Polls `future` once with a no-op waker.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

#[test]
fn a_cancelled_read_at_least_leaves_the_buffered_bytes_unexamined() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"hello").unwrap();
    {
        // A parser's `timeout(read_at_least(100))` that times out.
        let mut read = std::pin::pin!(reader.read_at_least(100));
        assert!(poll_once(read.as_mut()).is_pending());
    }
    // The five bytes are still unexamined: a plain read returns them now
    // (before the fix it waited for a sixth byte, forever on an idle peer).
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"hello");
    let mut read = std::pin::pin!(reader.read());
    match poll_once(read.as_mut()) {
        std::task::Poll::Ready(guard) => assert_eq!(guard.unwrap().to_vec(), b"hello"),
        std::task::Poll::Pending => panic!("read() waits although 5 bytes are unexamined"),
    }
}

#[test]
fn a_cancelled_read_at_least_keeps_the_callers_examined_mark() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"abcdef").unwrap();
    // The caller examined 2 bytes of 6.
    reader.try_read().unwrap().unwrap().advance_to(0, 2).unwrap();
    {
        let mut read = std::pin::pin!(reader.read_at_least(100));
        assert!(poll_once(read.as_mut()).is_pending());
        writer.put_slice(b"gh").unwrap(); // a commit while it waits
        assert!(poll_once(read.as_mut()).is_pending());
    }
    // Bytes 2.. are unexamined again; everything is still there.
    let read = reader.try_read().unwrap().expect("4 + 2 bytes are unexamined");
    assert_eq!(read.to_vec(), b"abcdefgh");
    // Examine all: now a read waits for new bytes, as usual.
    read.advance_to(0, 8).unwrap();
    assert!(reader.try_read().unwrap().is_none());
}

#[test]
fn the_examined_mark_after_read_at_least_is_the_callers() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    writer.put_slice(b"abc").unwrap();
    let mut read = std::pin::pin!(reader.read_at_least(5));
    assert!(poll_once(read.as_mut()).is_pending());
    writer.put_slice(b"de").unwrap();
    let std::task::Poll::Ready(guard) = poll_once(read.as_mut()) else { panic!("5 are here") };
    // The caller looked at 1 byte: the other 4 are unexamined, and the next
    // read does not wait for a sixth.
    guard.unwrap().advance_to(0, 1).unwrap();
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"abcde");
    // A guard dropped without advancing examines nothing either.
    let mut read = std::pin::pin!(reader.read_at_least(6));
    assert!(poll_once(read.as_mut()).is_pending());
    writer.put_slice(b"f").unwrap();
    let std::task::Poll::Ready(guard) = poll_once(read.as_mut()) else { panic!("6 are here") };
    drop(guard);
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"abcdef");
}

#[test]
fn a_cancelled_read_at_least_above_the_pause_threshold_pauses_the_writer_again() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(16).resume_at(8));
    writer.put_slice(&[1; 20]).unwrap();
    assert!(poll_once(std::pin::pin!(writer.flush())).is_pending(), "20 >= pause_at");
    {
        let mut read = std::pin::pin!(reader.read_at_least(100));
        assert!(poll_once(read.as_mut()).is_pending());
        // While it waits, the bytes count as examined: the writer may go on.
        assert!(poll_once(std::pin::pin!(writer.flush())).is_ready());
    }
    // Cancelled: the 20 bytes are unexamined again, and back-pressure says so.
    assert!(poll_once(std::pin::pin!(writer.flush())).is_pending());
    reader.try_read().unwrap().unwrap().consume(20).unwrap();
    assert!(poll_once(std::pin::pin!(writer.flush())).is_ready());
}

#[test]
fn readable_waits_for_bytes_or_the_end_and_takes_nothing() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let reader = Arc::new(reader);
    let mut wait = std::pin::pin!(falconet_pipe::Readable::new(&reader));
    assert!(poll_once(wait.as_mut()).is_pending(), "nothing written");
    // While it waits it is a pending read: a second read conflicts, and
    // the wait fails too.
    assert_eq!(reader.try_read().unwrap_err(), ReadError::ConcurrentRead);
    assert_eq!(poll_once(wait.as_mut()), std::task::Poll::Ready(Err(ReadError::ConcurrentRead)));
    let mut wait = std::pin::pin!(falconet_pipe::Readable::new(&reader));
    assert!(poll_once(wait.as_mut()).is_pending());
    writer.put_slice(b"abc").unwrap();
    assert_eq!(poll_once(wait.as_mut()), std::task::Poll::Ready(Ok(())));
    // Nothing was taken: the read sees every byte; a wait after bytes
    // that are there is ready at once.
    assert!(poll_once(std::pin::pin!(falconet_pipe::Readable::new(&reader))).is_ready());
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), b"abc");
    read.consume(3).unwrap();
    // Dropped while waiting: the next read works.
    assert!(poll_once(std::pin::pin!(falconet_pipe::Readable::new(&reader))).is_pending());
    assert!(reader.try_read().unwrap().is_none());
    // The end of the stream makes it ready too.
    let mut wait = std::pin::pin!(falconet_pipe::Readable::new(&reader));
    assert!(poll_once(wait.as_mut()).is_pending());
    writer.close();
    assert_eq!(poll_once(wait.as_mut()), std::task::Poll::Ready(Ok(())));
    assert!(reader.try_read().unwrap().unwrap().is_completed());
}

/// A flush future dropped while it waits at the pause threshold (a
/// timeout, a `select!`) leaves its sleep bit behind: the reader's next
/// advance wakes a waker nobody polls, and nothing else changes. The next
/// flush judges afresh: at once below the threshold, the error once the
/// reader is gone, and never a hang.
#[test]
fn a_flush_dropped_while_paused_leaves_the_pipe_working() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(4).resume_at(2)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    writer.put_slice(b"abcd").unwrap();
    {
        let mut flush = std::pin::pin!(writer.flush());
        assert!(flush.as_mut().poll(&mut cx).is_pending(), "4 unexamined, pause_at 4");
    }
    // Dropped while waiting: the reader examines everything.
    let read = reader.try_read().unwrap().expect("4 bytes");
    assert_eq!(read.to_vec(), b"abcd");
    read.consume(4).unwrap();
    assert_eq!(std::pin::pin!(writer.flush()).poll(&mut cx), Poll::Ready(Ok(())));
    // Paused again, dropped again, then the reader leaves.
    writer.put_slice(b"efgh").unwrap();
    {
        let mut flush = std::pin::pin!(writer.flush());
        assert!(flush.as_mut().poll(&mut cx).is_pending(), "4 unexamined again");
    }
    drop(reader);
    assert_eq!(writer.flush_blocking(), Err(WriteError::ReaderClosed));
}

/// While the writer waits on back-pressure, the blocks the reader empties
/// stay in the pipe for the writer's next writes instead of going back
/// through the pool; `trim` and `close` give back those it did not reuse,
/// and without a waiting writer every emptied block goes back at once.
#[test]
fn a_paused_writer_reuses_the_blocks_the_reader_empties() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(256).resume_at(128));
    writer.put_slice(&[1; 256]).unwrap(); // four 64-byte blocks
    let mut flush = writer.flush();
    assert!(poll_once(std::pin::Pin::new(&mut flush)).is_pending(), "paused at 256");
    let read = reader.try_read().unwrap().unwrap();
    read.consume(256).unwrap();
    // The writer waited: the four emptied blocks stay in the pipe.
    assert_eq!(pool.stats().leased, 4);
    assert!(poll_once(std::pin::Pin::new(&mut flush)).is_ready());
    drop(flush);
    let leases = |pool: &Pool| pool.stats().cache_leases + pool.stats().store_leases;
    let before = leases(&pool);
    writer.put_slice(&[2; 128]).unwrap();
    // Two blocks, both kept ones, though the first spare node is the
    // list's start, which never held a block: no lease. The third kept
    // block waits in its node; the fourth is still in the full tail the
    // reader has not passed.
    assert_eq!(leases(&pool) - before, 0);
    assert_eq!(pool.stats().leased, 4);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), [2; 128]);
    read.consume(128).unwrap();
    // No writer waits now: every block this consume emptied (the old full
    // tail's and the two new ones) went back at once; the one kept
    // block the writer did not reuse goes back on `trim`.
    assert_eq!(pool.stats().leased, 1);
    assert_eq!(writer.trim(), 1);
    assert_eq!(pool.stats().leased, 0);
    assert_eq!(writer.trim(), 0, "nothing left to give back");
    writer.put_slice(&[3; 64]).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), [3; 64]);
    drop(read);
    writer.close();
    drop(reader);
    assert_eq!(pool.stats().leased, 0);
}

/// Blocks kept for a paused writer go back to the pool when the writer is
/// closed, while the reader lives on.
#[test]
fn closing_the_writer_gives_back_the_kept_blocks() {
    let pool = small_pool();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(128).resume_at(64));
    writer.put_slice(&[1; 200]).unwrap(); // four blocks, the last partly filled
    let mut flush = writer.flush();
    assert!(poll_once(std::pin::Pin::new(&mut flush)).is_pending());
    drop(flush);
    let read = reader.try_read().unwrap().unwrap();
    read.consume(200).unwrap();
    // Three emptied blocks kept, the partly filled tail in use.
    assert_eq!(pool.stats().leased, 4);
    writer.close();
    assert_eq!(pool.stats().leased, 1, "only the tail's block is left");
    assert!(reader.try_read().unwrap().unwrap().is_completed());
}

/// `Options::keep_blocks(false)`: emptied blocks go back to the pool at
/// once even while the writer waits.
#[test]
fn without_kept_blocks_a_paused_writers_emptied_blocks_go_back() {
    let pool = small_pool();
    let options = Options::new().pause_at(256).resume_at(128).keep_blocks(false);
    let (mut writer, reader) = new_pipe(&pool, options);
    writer.put_slice(&[1; 256]).unwrap();
    let mut flush = writer.flush();
    assert!(poll_once(std::pin::Pin::new(&mut flush)).is_pending(), "paused at 256");
    drop(flush);
    let read = reader.try_read().unwrap().unwrap();
    read.consume(256).unwrap();
    // Every emptied block is back, the full tail's too.
    assert_eq!(pool.stats().leased, 0);
    assert_eq!(writer.trim(), 0);
}

/// `io::Write::write` takes at most what brings the pipe up to its pause
/// threshold: a buffer of 10 MiB into a pipe nobody reads leases blocks
/// for 64 KiB, not 10 MiB, and the rest waits for the reader.
#[test]
fn one_large_write_stops_at_the_pause_threshold() {
    let pool = Pool::new();
    let pause = falconet_pipe::DEFAULT_PAUSE_AT;
    let (mut writer, reader) = new_pipe(&pool, Options::new());
    let data = vec![5u8; if cfg!(miri) { 256 << 10 } else { 10 << 20 }];
    assert_eq!(Write::write(&mut writer, &data).unwrap() as u64, pause);
    assert_eq!(writer.unexamined(), pause);
    assert_eq!((pool.stats().leased * pool.block_size()) as u64, pause);
    // Cut short, the writer waits until the reader is below resume_at
    // (32 KiB), then fills to the threshold again: 40,000 examined.
    let read = reader.try_read().unwrap().unwrap();
    read.advance_to(40_000, 40_000).unwrap();
    assert_eq!(Write::write(&mut writer, &data).unwrap(), 40_000);
    // The edges: an empty write takes nothing; without back-pressure one
    // write takes all.
    assert_eq!(Write::write(&mut writer, &[]).unwrap(), 0);
    let (mut free, _reader) = new_pipe(&pool, Options::new().without_back_pressure());
    assert_eq!(Write::write(&mut free, &data).unwrap(), data.len());
}

/// `write_all` of a buffer far over the threshold moves every byte, in
/// order, while the pipe never holds much more than the threshold; and a
/// reader dropped while it waits fails it with `BrokenPipe`.
#[test]
fn write_all_of_a_large_buffer_keeps_to_the_threshold() {
    let pool = Pool::new();
    let options = Options::new().pause_at(8192).resume_at(4096);
    let (mut writer, reader) = new_pipe(&pool, options);
    let total: u32 = if cfg!(miri) { 64 << 10 } else { 1 << 20 };
    let data: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
    let expected = data.clone();
    let producer = thread::spawn(move || {
        writer.write_all(&data).unwrap();
        writer.close();
    });
    let mut received = Vec::new();
    let mut most_leased = 0;
    loop {
        let read = reader.read_blocking().unwrap();
        most_leased = most_leased.max(pool.stats().leased);
        let done = read.is_completed();
        received.extend(read.to_vec());
        let len = read.len();
        read.consume(len).unwrap();
        if done {
            break;
        }
    }
    producer.join().unwrap();
    assert!(received == expected, "every byte, in order");
    // 8 KiB unexamined at most: two 4 KiB blocks, plus one partly read.
    assert!(most_leased <= 3, "at most {most_leased} blocks leased");

    let (mut writer, reader) = new_pipe(&pool, options);
    let waiting = thread::spawn(move || writer.write_all(&vec![1u8; 64 << 10]));
    thread::sleep(Duration::from_millis(50));
    drop(reader);
    assert_eq!(waiting.join().unwrap().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
}

/// The edges of the threshold's hysteresis through `io::Write` (an
/// independent review's findings): `flush` waits only at the threshold,
/// as `Writer::flush` does, even when the next write would wait for
/// `resume_at`; and a write the pool, not the threshold, cut short does
/// not pause the next, which returns the pool's error.
#[test]
fn io_write_flush_and_a_pool_cut_write_do_not_wait_for_resume_at() {
    let pool = Pool::new();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(8192).resume_at(4096));
    assert_eq!(Write::write(&mut writer, &[1; 100_000]).unwrap(), 8192);
    // 6,000 unexamined: under the threshold, over resume_at.
    reader.try_read().unwrap().unwrap().advance_to(2192, 2192).unwrap();
    Write::flush(&mut writer).unwrap();

    let small = Pool::builder().block_size(4096).blocks_per_slab(1).thread_cache(0);
    let small = small.max_bytes(48 << 10).build().unwrap();
    let (mut writer, reader) = new_pipe(&small, Options::new());
    assert_eq!(Write::write(&mut writer, &[2; 200_000]).unwrap(), 48 << 10);
    let error = Write::write(&mut writer, &[3; 10]).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::OutOfMemory);
    drop(reader);
}

/// The threshold at its lowest: `pause_at(1)` makes each write take one
/// byte (never `Ok(0)`), and one thread that reads after each write moves
/// every byte in order.
#[test]
fn a_one_byte_threshold_takes_a_byte_per_write() {
    let pool = Pool::new();
    let (mut writer, reader) = new_pipe(&pool, Options::new().pause_at(1).resume_at(1));
    let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let mut received = Vec::new();
    let mut rest = &data[..];
    while !rest.is_empty() {
        assert_eq!(Write::write(&mut writer, rest).unwrap(), 1);
        rest = &rest[1..];
        let read = reader.try_read().unwrap().unwrap();
        received.extend(read.to_vec());
        let len = read.len();
        read.consume(len).unwrap();
    }
    assert_eq!(received, data);
}
