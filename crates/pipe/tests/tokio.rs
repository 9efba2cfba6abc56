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
