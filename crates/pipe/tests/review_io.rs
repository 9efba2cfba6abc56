//! Review of `IoReader::fill_blocking` going on with a cancelled async read.
#![cfg(all(feature = "tokio", not(falconet_pipe_loom)))]

use std::io::{self, BufRead, Read};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use falconet_pipe::{IoReader, Options, pipe};
use falconet_pool::Pool;
use tokio::io::{AsyncRead, ReadBuf};

fn cancel_an_async_read(io: &mut IoReader) {
    let mut space = [0u8; 8];
    let mut cx = Context::from_waker(Waker::noop());
    let polled = Pin::new(io).poll_read(&mut cx, &mut ReadBuf::new(&mut space));
    assert!(polled.is_pending());
}

/// The writer ends with an error while the blocking read goes on with
/// the cancelled one (bytes first, or while it waits): the bytes, then the
/// error with its kind and message, then the same again.
#[test]
fn an_error_close_reaches_the_continued_read() {
    for (bytes, later) in [(false, false), (false, true), (true, false), (true, true)] {
        let case = format!("bytes {bytes} later {later}");
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let mut io = reader.into_io();
        cancel_an_async_read(&mut io);
        let end = move || {
            if bytes {
                writer.put_slice(b"ab").unwrap();
            }
            writer.close_with(io::Error::new(io::ErrorKind::ConnectionAborted, "gone"));
        };
        let t = if later {
            Some(std::thread::spawn(end))
        } else {
            end();
            None
        };
        let mut got = Vec::new();
        let err = io.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionAborted, "{case}");
        assert!(err.to_string().contains("gone"), "{case}: {err}");
        assert_eq!(got, if bytes { &b"ab"[..] } else { b"" }, "{case}");
        let again = io.read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::ConnectionAborted, "{case}");
        if let Some(t) = t {
            t.join().unwrap();
        }
    }
}

/// After the continued blocking read, async reads work again (the
/// adapter's flag was reset), and so does `into_inner`'s reader.
#[test]
fn async_then_blocking_then_async_then_into_inner() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let mut io = reader.into_io();
    cancel_an_async_read(&mut io);
    writer.put_slice(b"one").unwrap();
    let mut buf = [0u8; 3];
    io.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"one");
    // An async read now: pending, cancelled again, then a BufRead.
    cancel_an_async_read(&mut io);
    writer.put_slice(b"two").unwrap();
    let shown = io.fill_buf().unwrap().to_vec();
    assert_eq!(shown, b"two");
    io.consume(1);
    // A polled async read sees the rest at once.
    let mut space = [0u8; 8];
    let mut rb = ReadBuf::new(&mut space);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(Pin::new(&mut io).poll_read(&mut cx, &mut rb), Poll::Ready(Ok(()))));
    assert_eq!(rb.filled(), b"wo");
    // Cancelled once more, then into_inner: the reader reads on.
    cancel_an_async_read(&mut io);
    let reader = io.into_inner();
    writer.put_slice(b"three").unwrap();
    writer.close();
    let guard = reader.read_blocking().unwrap();
    assert_eq!(guard.to_vec(), b"three");
}

/// A continued read under back-pressure: the writer pauses at the
/// threshold on another thread (blocking `std::io::Write`), the reader's
/// continued blocking reads drain it; every byte arrives once.
#[test]
fn continued_read_under_back_pressure() {
    use std::io::Write;
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(256).resume_at(128)).unwrap();
    let mut io = reader.into_io();
    cancel_an_async_read(&mut io);
    let t = std::thread::spawn(move || {
        for i in 0..2000u32 {
            writer.write_all(format!("{i:05}\n").as_bytes()).unwrap();
        }
        writer.close();
    });
    let mut got = String::new();
    io.read_to_string(&mut got).unwrap();
    t.join().unwrap();
    let expected: String = (0..2000u32).map(|i| format!("{i:05}\n")).collect();
    assert_eq!(got, expected);
}

/// The reader dropped after a cancelled async read and a continued
/// blocking read that was itself interrupted by nothing: the writer sees
/// the reader gone.
#[test]
fn drop_after_continued_read_frees_the_writer() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let mut io = reader.into_io();
    cancel_an_async_read(&mut io);
    writer.put_slice(b"x").unwrap();
    let _ = io.fill_buf().unwrap(); // held, not consumed
    drop(io);
    assert!(writer.is_reader_closed());
}
