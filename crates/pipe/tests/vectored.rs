//! `Writer::read_vectored_from` at its edges: a source claiming more than it was offered, an interrupted read, a concurrent reader under stress. From an adversarial review.
#![cfg(not(falconet_pipe_loom))]

mod common;

use common::small_pool;
use std::future::Future;
use std::io::{self, Read};
use std::sync::Arc;
use std::thread;

use falconet_pipe::{Options, Reader, Writer, pipe};
use falconet_pool::Pool;

/// A safe `Read` that claims more bytes than it was offered (a buggy
/// source; std treats this as possible and guards against it).
struct Liar;
impl Read for Liar {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(buf.len() + 4096)
    }
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        Ok(total + 4096)
    }
}

#[test]
fn read_vectored_from_rejects_a_source_claiming_more_than_offered() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    writer.put_slice(&[1u8; 10]).unwrap();
    // read_from (commit) rejects this with CommitPastBuffer; read_vectored_from must too.
    let result = writer.read_vectored_from(&mut Liar, 128);
    let written = writer.written();
    let visible = reader.try_read().unwrap().map_or(0, |r| r.len());
    assert!(
        result.is_err(),
        "accepted a read of more than offered: {result:?}, written {written}, reader sees {visible}"
    );
    assert_eq!(visible as u64, written, "the reader sees bytes the writer never wrote");
}

#[test]
fn read_vectored_from_interrupted_commits_nothing_and_returns_blocks() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    struct Intr;
    impl Read for Intr {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::ErrorKind::Interrupted.into())
        }
    }
    let before = pool.stats().leased;
    let e = writer.read_vectored_from(&mut Intr, 1000).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Interrupted);
    assert_eq!(pool.stats().leased, before);
    assert_eq!(writer.written(), 0);
    assert!(reader.try_read().unwrap().is_none());
    // max 0 with a full tail: one block leased, read into it.
    writer.put_slice(&[7u8; 64]).unwrap();
    let mut src: &[u8] = &[9u8; 100];
    let r = writer.read_vectored_from(&mut src, 0).unwrap();
    assert_eq!((r.read, r.offered), (64, 64));
    let g = reader.try_read().unwrap().unwrap();
    assert_eq!(g.len(), 128);
}

/// Real threads: a writer doing vectored reads of random sizes while a
/// reader consumes concurrently; byte-exact.
#[test]
fn read_vectored_from_stress_with_a_concurrent_reader() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(8)
        .thread_cache(0)
        .max_bytes(8 << 20)
        .build()
        .unwrap();
    let (writer, reader) = pipe(&pool, Options::new()).unwrap();
    const TOTAL: usize = if cfg!(miri) { 8 << 10 } else { 32 << 20 };
    let data: Arc<Vec<u8>> =
        Arc::new((0..TOTAL).map(|i| (i % 251) as u8 ^ (i >> 9) as u8).collect());
    let d2 = Arc::clone(&data);
    let producer = thread::spawn(move || {
        let mut writer: Writer = writer;
        let mut pos = 0;
        let mut seed = 12345u64;
        while pos < TOTAL {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let limit = 1 + (seed >> 33) as usize % 5000;
            let max = (seed >> 20) as usize % 9000;
            let end = (pos + limit).min(TOTAL);
            let mut src = &d2[pos..end];
            match writer.read_vectored_from(&mut src, max) {
                Ok(r) => pos += r.read,
                Err(e) => panic!("{e}"),
            }
            writer.flush_blocking().unwrap();
        }
        writer.close();
    });
    let consumer = thread::spawn(move || {
        let reader: Reader = reader;
        let mut got = Vec::with_capacity(TOTAL);
        let mut r = reader.into_io();
        let mut buf = vec![0u8; 3000];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    producer.join().unwrap();
    let got = consumer.join().unwrap();
    assert_eq!(got.len(), TOTAL);
    assert!(
        got == *data,
        "bytes differ at {:?}",
        got.iter().zip(data.iter()).position(|(a, b)| a != b)
    );
}

/// The same lie, then the reader reads what it was told is there: under
/// Miri, an out-of-bounds / uninitialized read from safe code.
#[test]
fn read_vectored_from_liar_then_read_is_sound() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    struct SmallLiar;
    impl Read for SmallLiar {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(1);
            Ok(buf.len() + 100)
        }
    }
    // Tail full, max 0: one fresh block of 64 offered, 164 claimed.
    writer.put_slice(&[7u8; 64]).unwrap();
    let result = writer.read_vectored_from(&mut SmallLiar, 0);
    if let Ok(Some(guard)) = reader.try_read() {
        let bytes = guard.to_vec();
        assert_eq!(bytes.len() as u64, writer.written(), "{result:?}");
    }
}

/// The lie exposes another pipe's bytes (same pool) to this pipe's reader.
#[test]
fn read_vectored_from_liar_exposes_another_pipes_block() {
    let pool = small_pool();
    // A block freed before ours, so the fresh block is leased next to others.
    let (mut pw, pr) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    pw.put_slice(&[0u8; 64]).unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    writer.put_slice(&[7u8; 64]).unwrap();
    struct SmallLiar;
    impl Read for SmallLiar {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(1);
            Ok(buf.len() + 64 * 3)
        }
    }
    let mut others = Vec::new();
    for _ in 0..4 {
        let (mut w, r) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
        w.put_slice(b"SECRET-OF-ANOTHER-CONNECTION-SECRET-OF-ANOTHER-CONNECTION-012345").unwrap();
        others.push((w, r));
    }
    drop((pw, pr));
    let _ = writer.read_vectored_from(&mut SmallLiar, 0);
    let guard = reader.try_read().unwrap().unwrap();
    let bytes = guard.to_vec();
    let leaked = bytes.windows(6).any(|w| w == b"SECRET");
    assert!(
        !leaked,
        "this pipe's reader sees another pipe's bytes: {:?}",
        String::from_utf8_lossy(&bytes)
    );
}

/// A vectored read after a pause fills the blocks the reader emptied while
/// the writer waited, whichever spare nodes hold them, before it leases.
#[test]
fn read_vectored_from_reuses_the_blocks_kept_for_a_paused_writer() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(256).resume_at(128)).unwrap();
    writer.put_slice(&[1u8; 256]).unwrap();
    let mut flush = writer.flush();
    let pending = std::pin::Pin::new(&mut flush)
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        .is_pending();
    assert!(pending, "paused at 256");
    drop(flush);
    let read = reader.try_read().unwrap().unwrap();
    read.consume(256).unwrap();
    assert_eq!(pool.stats().leased, 4, "the emptied blocks are kept");
    let leases = |pool: &Pool| pool.stats().cache_leases + pool.stats().store_leases;
    let before = leases(&pool);
    // Three blocks wanted: the list's first node never held one, the next
    // three kept theirs, and those three are taken; 130 bytes reach all
    // three.
    let data: Vec<u8> = (0..130u8).collect();
    let read = writer.read_vectored_from(&mut &data[..], 192).unwrap();
    assert_eq!(read.read, 130);
    // The three, and the old full tail's block.
    assert_eq!(pool.stats().leased, 4);
    assert_eq!(leases(&pool) - before, 0);
    let got = reader.try_read().unwrap().unwrap();
    assert_eq!(got.to_vec(), data);
    drop(got);
    // The read moved past the old full tail, and no writer waits any
    // more: its block went back.
    assert_eq!(pool.stats().leased, 3);
    writer.close();
    drop(reader);
    assert_eq!(pool.stats().leased, 0);
}
