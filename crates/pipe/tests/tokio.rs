//! The tokio adapters: `AsyncWrite` for the writer, `AsyncRead` and
//! `AsyncBufRead` for `IoReader`, on one current-thread runtime so that
//! back-pressure must hand control back and forth through the wakers.
#![cfg(all(feature = "tokio", not(falconet_pipe_loom)))]

use std::io;

use falconet_pipe::{Options, pipe};
use falconet_pool::Pool;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

#[test]
fn async_write_and_buf_read_under_back_pressure() {
    let pool = Pool::new();
    // A tiny window: the writer must yield to the reader many times.
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(256).resume_at(128)).unwrap();
    let mut reader = reader.into_io();
    runtime().block_on(async {
        let write = async {
            for line in 0..2000 {
                writer.write_all(format!("line {line}\n").as_bytes()).await.unwrap();
            }
            let space = writer.buffer(1).unwrap().len();
            writer.shutdown().await.unwrap();
            // After shutdown nothing more reaches the reader.
            assert_eq!(writer.commit(space.min(1)), Err(falconet_pipe::WriteError::Closed));
            assert_eq!(writer.buffer(1).unwrap_err(), falconet_pipe::WriteError::Closed);
            assert_eq!(
                writer.write_all(b"late").await.unwrap_err().kind(),
                io::ErrorKind::BrokenPipe
            );
        };
        let read = async {
            let mut line = String::new();
            for expected in 0..2000 {
                line.clear();
                reader.read_line(&mut line).await.unwrap();
                assert_eq!(line, format!("line {expected}\n"));
            }
            line.clear();
            assert_eq!(reader.read_line(&mut line).await.unwrap(), 0, "end of stream");
        };
        tokio::join!(write, read);
    });
}

/// `AsyncBufRead::consume` takes at most what `poll_fill_buf` showed, as
/// the blocking adapter: a larger `amt` never drops unseen bytes.
#[test]
fn async_consume_takes_at_most_what_fill_buf_showed() {
    let pool = Pool::builder().block_size(64).build().unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let data: Vec<u8> = (0..200u8).collect();
    writer.put_slice(&data).unwrap();
    writer.close();
    let mut reader = reader.into_io();
    runtime().block_on(async {
        assert_eq!(reader.fill_buf().await.unwrap(), &data[..64]);
        std::pin::Pin::new(&mut reader).consume(usize::MAX);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, &data[64..], "only the 64 shown were consumed");
    });
}

#[test]
fn async_read_returns_the_writer_error_after_the_bytes() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let mut reader = reader.into_io();
    runtime().block_on(async {
        let write = async move {
            writer.write_all(&[9; 10_000]).await.unwrap();
            writer.close_with(io::Error::new(io::ErrorKind::ConnectionAborted, "aborted"));
        };
        let read = async {
            let mut bytes = Vec::new();
            let error = reader.read_to_end(&mut bytes).await.unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::ConnectionAborted);
            assert_eq!(bytes, vec![9; 10_000]);
        };
        tokio::join!(write, read);
    });
}

#[test]
fn poll_write_of_what_the_pool_can_only_partly_hold_is_ok_n() {
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    use tokio::io::AsyncWrite;

    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(1)
        .thread_cache(0)
        .max_bytes(64)
        .build()
        .unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let written = Pin::new(&mut writer).poll_write(&mut cx, &[7; 100]);
    assert!(matches!(written, Poll::Ready(Ok(64))), "{written:?}");
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 64);
    let Poll::Ready(Err(error)) = Pin::new(&mut writer).poll_write(&mut cx, &[8; 10]) else {
        panic!("nothing fits: an error");
    };
    assert_eq!(error.kind(), io::ErrorKind::OutOfMemory);
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), [7; 64]);
}

/// An `AsyncRead` that hands out `data` at most `limit` bytes per read and
/// is `Pending` (waking itself) every other poll, as a socket would be.
struct Socket<'a> {
    data: &'a [u8],
    limit: usize,
    ready: bool,
    reads: usize,
}

impl tokio::io::AsyncRead for Socket<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        if !self.ready {
            self.ready = true;
            cx.waker().wake_by_ref();
            return std::task::Poll::Pending;
        }
        self.ready = false;
        self.reads += 1;
        let n = buf.remaining().min(self.limit).min(self.data.len());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        std::task::Poll::Ready(Ok(()))
    }
}

#[test]
fn async_read_from_lands_in_pool_memory_under_back_pressure() {
    let pool = Pool::builder().block_size(256).build().unwrap();
    // A 1 KiB window against 64 KiB of input: the socket reads must stop
    // while the pipe is full and go on as the reader drains it.
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(1024)).unwrap();
    let data: Vec<u8> = (0..64 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut socket = Socket { data: &data, limit: 300, ready: false, reads: 0 };
    let most_unread = std::cell::Cell::new(0usize);
    runtime().block_on(async {
        let write = async {
            loop {
                let n = writer.read_from_async(&mut socket).await.unwrap();
                if n == 0 {
                    break;
                }
            }
            writer.close();
        };
        let read = async {
            let mut received = Vec::new();
            loop {
                let guard = reader.read().await.unwrap();
                most_unread.set(most_unread.get().max(guard.len()));
                // A slow reader: a few bytes at a time, yielding between.
                let n = guard.len().min(100);
                received.extend_from_slice(&guard.to_vec()[..n]);
                let done = guard.is_completed() && n == guard.len();
                // Examined no further than consumed: the rest stays
                // unexamined and holds the writer back.
                guard.advance_to(n, n).unwrap();
                if done {
                    return received;
                }
                tokio::task::yield_now().await;
            }
        };
        let ((), received) = tokio::join!(write, read);
        assert_eq!(received, data, "every byte, in order, once");
    });
    // Reads of at most 300 bytes into 256-byte blocks with a quarter-block
    // (64-byte) read space: each read lands in one block.
    assert!(socket.reads >= data.len() / 256, "{} reads", socket.reads);
    // Back-pressure: the writer stopped reading at the 1 KiB threshold (one
    // read may land past it).
    assert!(most_unread.get() < 1024 + 256, "{} bytes unread at once", most_unread.get());
}

#[test]
fn async_read_from_returns_the_source_error_and_end_of_stream() {
    struct Failing;
    impl tokio::io::AsyncRead for Failing {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()))
        }
    }
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    runtime().block_on(async {
        let error = writer.read_from_async(&mut Failing).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(writer.written(), 0);
        assert_eq!(writer.read_from_async(&mut &[][..]).await.unwrap(), 0);
        drop(reader);
        let error = writer.read_from_async(&mut &b"x"[..]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe, "{error}");
    });
}

#[test]
fn a_read_from_async_dropped_while_waiting_commits_nothing_and_the_next_one_works() {
    use std::future::Future;
    use std::task::{Context, Waker};

    let pool = Pool::new();
    // Dropped at each of its waits: on the source (no bytes yet) and on
    // back-pressure (the pipe full).
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(100)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut socket = Socket { data: b"hello", limit: 100, ready: false, reads: 0 };
    {
        let read = std::pin::pin!(writer.read_from_async(&mut socket));
        assert!(read.poll(&mut cx).is_pending(), "the source has nothing yet");
    }
    assert_eq!(writer.written(), 0);
    assert!(reader.try_read().unwrap().is_none(), "nothing committed by the dropped read");
    writer.put_slice(&[1; 100]).unwrap();
    {
        let read = std::pin::pin!(writer.read_from_async(&mut socket));
        assert!(read.poll(&mut cx).is_pending(), "100 bytes unexamined: paused");
    }
    assert_eq!(socket.reads, 0, "the paused read did not touch the socket");
    let read = reader.try_read().unwrap().unwrap();
    let len = read.len();
    read.consume(len).unwrap();
    let n = runtime().block_on(writer.read_from_async(&mut socket)).unwrap();
    assert_eq!(n, 5);
    assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"hello");
}

/// A zero-length `AsyncWrite::write` is `Ok(0)` at once, as
/// `io::Write::write`'s, even while the reader is over the pause threshold
/// (it waited for the reader before; tokio's `write_all(&[])` never polls).
#[test]
fn an_empty_write_does_not_wait_for_the_reader() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let pool = Pool::new();
    let (mut writer, _reader) = pipe(&pool, Options::new().pause_at(10)).unwrap();
    writer.put_slice(&[0; 100]).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let written = std::pin::pin!(writer.write(&[])).poll(&mut cx);
    assert!(matches!(written, Poll::Ready(Ok(0))), "{written:?}");
    let all = std::pin::pin!(writer.write_all(&[])).poll(&mut cx);
    assert!(matches!(all, Poll::Ready(Ok(()))), "{all:?}");
    // A byte still waits for the reader.
    assert!(std::pin::pin!(writer.write(b"x")).poll(&mut cx).is_pending());
    assert_eq!(io::Write::write(&mut writer, &[]).unwrap(), 0);
}

/// `poll_write` takes at most what brings the pipe up to its pause
/// threshold, then is `Pending` until the reader examines: one large
/// `write` does not lease blocks for all of it.
#[test]
fn a_large_async_write_stops_at_the_pause_threshold() {
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    use tokio::io::AsyncWrite;

    let pool = Pool::new();
    let pause = falconet_pipe::DEFAULT_PAUSE_AT;
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let data = vec![5u8; if cfg!(miri) { 256 << 10 } else { 10 << 20 }];
    let mut cx = Context::from_waker(Waker::noop());
    let written = Pin::new(&mut writer).poll_write(&mut cx, &data);
    assert!(matches!(written, Poll::Ready(Ok(n)) if n as u64 == pause), "{written:?}");
    assert!(Pin::new(&mut writer).poll_write(&mut cx, &data).is_pending());
    assert_eq!(writer.unexamined(), pause);
    // `write_all` finishes once a reader takes the bytes, and drops
    // none: 10 MiB (256 KiB under Miri) through a 64 KiB threshold.
    let (mut writer, reader) = {
        drop((writer, reader));
        pipe(&pool, Options::new()).unwrap()
    };
    let mut reader = reader.into_io();
    runtime().block_on(async {
        let write = async {
            writer.write_all(&data).await.unwrap();
            writer.shutdown().await.unwrap();
        };
        let read = async {
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes).await.unwrap();
            assert!(bytes == data, "every byte");
        };
        tokio::join!(write, read);
    });
}

/// A write the threshold cut short leaves the adapter paused until the
/// reader is below `resume_at`: the next write waits for room worth
/// taking, not for the first few bytes the reader examines.
#[test]
fn a_write_cut_at_the_threshold_resumes_below_resume_at() {
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    use tokio::io::AsyncWrite;

    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(8192).resume_at(4096)).unwrap();
    let data = vec![5u8; 100_000];
    let mut cx = Context::from_waker(Waker::noop());
    let written = Pin::new(&mut writer).poll_write(&mut cx, &data);
    assert!(matches!(written, Poll::Ready(Ok(8192))), "{written:?}");
    // 64 bytes examined: 8,128 unexamined, still over resume_at.
    reader.try_read().unwrap().unwrap().advance_to(64, 64).unwrap();
    assert!(Pin::new(&mut writer).poll_write(&mut cx, &data).is_pending(), "a 64-byte sliver");
    // 4,028 unexamined: below resume_at, and the write fills to 8,192.
    reader.try_read().unwrap().unwrap().advance_to(4100, 4100).unwrap();
    let written = Pin::new(&mut writer).poll_write(&mut cx, &data);
    assert!(matches!(written, Poll::Ready(Ok(4164))), "{written:?}");
    // A write that fits is not cut and does not pause.
    reader.try_read().unwrap().unwrap().advance_to(8192, 8192).unwrap();
    let written = Pin::new(&mut writer).poll_write(&mut cx, &data[..100]);
    assert!(matches!(written, Poll::Ready(Ok(100))), "{written:?}");
    let written = Pin::new(&mut writer).poll_write(&mut cx, &data[..100]);
    assert!(matches!(written, Poll::Ready(Ok(100))), "{written:?}");
}

/// A write that fills the pipe exactly to the threshold pauses the next as
/// a cut one does: `std::io::copy`'s 8 KiB writes against a threshold of a
/// multiple of them would otherwise go a sliver at a time.
#[test]
fn a_write_that_fills_to_the_threshold_pauses_the_next() {
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    use tokio::io::AsyncWrite;

    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(8192).resume_at(4096)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let written = Pin::new(&mut writer).poll_write(&mut cx, &[5; 8192]);
    assert!(matches!(written, Poll::Ready(Ok(8192))), "{written:?}");
    reader.try_read().unwrap().unwrap().advance_to(64, 64).unwrap();
    assert!(Pin::new(&mut writer).poll_write(&mut cx, &[5; 8192]).is_pending(), "a sliver");
}

/// A `write_all` dropped while it waits on the threshold (a timeout
/// around it) leaves the writer usable: the bytes it wrote stay written
/// once, and the next write goes on when the reader makes room.
#[test]
fn a_write_all_dropped_while_it_waits_leaves_the_writer_usable() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(4096).resume_at(1024)).unwrap();
    let mut reader = reader.into_io();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut waiting = std::pin::pin!(writer.write_all(&data));
        let polled = std::future::Future::poll(waiting.as_mut(), &mut cx);
        assert!(polled.is_pending(), "no reader: it waits at 4 KiB");
    }
    assert_eq!(writer.unexamined(), 4096);
    runtime().block_on(async {
        let write = async {
            writer.write_all(&data[4096..]).await.unwrap();
            writer.shutdown().await.unwrap();
        };
        let read = async {
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes).await.unwrap();
            assert!(bytes == data, "every byte once, in order");
        };
        tokio::join!(write, read);
    });
}

/// An `IoReader`'s async read polled once (pending) and then abandoned, as
/// a timeout leaves it, stays the adapter's own read: the blocking
/// `std::io` read that comes next goes on with it, whether the bytes came
/// before it (returned at once) or come while it waits (on another
/// thread), through `Read` and `BufRead` alike. It began a second read
/// instead, which failed with `ConcurrentRead` on every call (an outside
/// review's tokio program: a timed async read of a head, then the body
/// read in `spawn_blocking`).
#[test]
fn a_blocking_read_goes_on_with_a_cancelled_async_read() {
    use std::io::{BufRead, Read};
    use std::pin::Pin;
    use std::task::{Context, Waker};

    use tokio::io::{AsyncRead, ReadBuf};

    for (buf_read, bytes_first) in [(false, true), (false, false), (true, true), (true, false)] {
        let case = format!("BufRead {buf_read}, bytes first {bytes_first}");
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let mut io = reader.into_io();
        let mut space = [0u8; 8];
        let mut cx = Context::from_waker(Waker::noop());
        let polled = Pin::new(&mut io).poll_read(&mut cx, &mut ReadBuf::new(&mut space));
        assert!(polled.is_pending(), "{case}");
        let write = move || {
            writer.put_slice(b"hello").unwrap();
            writer.close();
        };
        let writer = if bytes_first {
            write();
            None
        } else {
            Some(std::thread::spawn(write))
        };
        let got = if buf_read {
            let got = BufRead::fill_buf(&mut io).unwrap().to_vec();
            BufRead::consume(&mut io, got.len());
            got
        } else {
            let mut got = Vec::new();
            Read::read_to_end(&mut io, &mut got).unwrap();
            got
        };
        assert_eq!(got, b"hello", "{case}");
        if let Some(writer) = writer {
            writer.join().unwrap();
        }
        let mut rest = Vec::new();
        assert_eq!(Read::read_to_end(&mut io, &mut rest).unwrap(), 0, "{case}: then the end");
    }
}
