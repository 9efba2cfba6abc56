//! Adversarial review: cancellation and drop at the pipe's await points,
//! as a tokio user writes them (a `timeout` around each await, a task
//! aborted mid-wait, a runtime dropped).
#![cfg(all(feature = "tokio", not(falconet_pipe_loom), not(miri), not(falconet_tsan)))]

use std::time::Duration;

use falconet_pipe::{Options, pipe};
use falconet_pool::Pool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn byte_at(i: usize) -> u8 {
    (i % 251) as u8
}

/// A `flush` cancelled while it waits (its sleep bit stays set), then a
/// writer that only `put_slice`s and closes: every byte arrives once, and
/// once both ends are gone every block is back in the pool (no kept block
/// stranded by the abandoned wait).
#[test]
fn flush_cancelled_while_paused_strands_no_block() {
    let pool = Pool::new();
    {
        let (mut writer, reader) =
            pipe(&pool, Options::new().pause_at(16 * 1024).resume_at(4 * 1024)).unwrap();
        let data: Vec<u8> = (0..200_000).map(byte_at).collect();
        writer.put_slice(&data[..40_000]).unwrap();
        let runtime = rt();
        let waited =
            runtime.block_on(async { timeout(Duration::from_millis(20), writer.flush()).await });
        assert!(waited.is_err(), "the flush should wait: 40 KB over a 16 KB threshold");
        // The reader consumes block by block while the abandoned wait's bit
        // is set (the reader keeps what it empties for the writer).
        let mut got = Vec::new();
        while got.len() < 40_000 {
            let guard = reader.try_read().unwrap().expect("bytes");
            let n = guard.len().min(1000);
            got.extend_from_slice(&guard.to_vec()[..n]);
            guard.advance_to(n, n).unwrap();
        }
        writer.put_slice(&data[40_000..]).unwrap();
        writer.close();
        loop {
            let guard = reader.try_read().unwrap().expect("bytes or the end");
            if guard.is_empty() {
                break;
            }
            let n = guard.len();
            got.extend_from_slice(&guard.to_vec());
            guard.advance_to(n, n).unwrap();
        }
        assert!(got == data, "bytes lost or duplicated");
        drop(reader);
    }
    assert_eq!(pool.stats().leased, 0, "a block stayed leased after both ends dropped");
}

/// `read_from_async` around a tokio duplex whose peer writes slowly, in a
/// `timeout` that keeps firing: nothing committed twice or lost, no block
/// left leased by the cancelled reads into fresh blocks.
#[test]
fn read_from_async_cancelled_while_the_source_waits_loses_nothing() {
    let pool = Pool::new();
    {
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let (mut near, mut far) = tokio::io::duplex(1024);
        let data: Vec<u8> = (0..100_000).map(byte_at).collect();
        let runtime = rt();
        let send = data.clone();
        let feeder = runtime.spawn(async move {
            for piece in send.chunks(700) {
                far.write_all(piece).await.unwrap();
                tokio::time::sleep(Duration::from_micros(300)).await;
            }
        });
        let reader_task = runtime.spawn(async move {
            let mut io = reader.into_io();
            let mut got = Vec::new();
            io.read_to_end(&mut got).await.map(|_| got)
        });
        let cancels = runtime.block_on(async {
            let mut cancels = 0;
            loop {
                match timeout(Duration::from_micros(200), writer.read_from_async(&mut near)).await {
                    Err(_) => cancels += 1,
                    Ok(Ok(0)) => break,
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => panic!("{e}"),
                }
            }
            cancels
        });
        writer.close();
        runtime.block_on(feeder).unwrap();
        let got = runtime.block_on(reader_task).unwrap().unwrap();
        assert!(cancels > 0);
        assert!(got == data, "bytes lost or duplicated ({} of {})", got.len(), data.len());
    }
    assert_eq!(pool.stats().leased, 0);
}

/// `AsyncWrite` on the writer, `write` (cancel-safe per tokio) in a
/// `timeout` against a slow `IoReader` task; the writer task aborted in
/// the end while it waits: the reader sees every byte that a completed
/// `write` reported, then `BrokenPipe` (the writer was dropped unclosed).
#[test]
fn aborted_async_writer_task_mid_wait_reports_exactly_the_written_bytes() {
    let pool = Pool::new();
    let (mut writer, reader) =
        pipe(&pool, Options::new().pause_at(8 * 1024).resume_at(2 * 1024)).unwrap();
    let runtime = rt();
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let task = runtime.spawn(async move {
        let mut at = 0usize;
        let data: Vec<u8> = (0..1_000_000).map(byte_at).collect();
        loop {
            match timeout(Duration::from_micros(300), writer.write(&data[at..at + 3000])).await {
                Err(_) => {}
                Ok(Ok(n)) => {
                    at += n;
                    tx.send(at).unwrap();
                }
                Ok(Err(e)) => panic!("{e}"),
            }
        }
    });
    // Nobody reads yet: the writer pauses and its writes keep timing out.
    std::thread::sleep(Duration::from_millis(100));
    task.abort();
    assert!(runtime.block_on(task).unwrap_err().is_cancelled());
    let written = rx.try_iter().last().expect("some writes completed");
    let got = runtime.block_on(async move {
        let mut io = reader.into_io();
        let mut got = Vec::new();
        let end = io.read_to_end(&mut got).await;
        (got, end)
    });
    assert_eq!(got.0.len(), written, "the reader saw another count than the writes reported");
    assert!(got.0.iter().enumerate().all(|(i, &b)| b == byte_at(i)));
    assert_eq!(got.1.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
}
