//! Blocks kept for a writer that waits on back-pressure (`segment.rs`,
//! "Kept blocks"), at their edges: ownership (shared blocks, full tails,
//! drops), bounds (pause cycles, `trim`, close, a pool with no block to
//! spare) and byte order on every write path. From an adversarial review.
#![cfg(not(falconet_pipe_loom))]

mod common;

use common::{Rng, Trickle, byte_at, small_pool};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::thread;

use bytes::Bytes;
use falconet_pipe::{Options, Reader, WriteError, Writer, pipe};
use falconet_pool::Pool;

fn poll_once<F: std::future::Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// Polls a flush once and drops it: `true` when it would wait (the
/// writer's sleep bit is then set, as the server's `wants_input` leaves it).
fn flush_would_wait(writer: &mut Writer) -> bool {
    let mut flush = writer.flush();
    poll_once(Pin::new(&mut flush)).is_pending()
}

fn leased(pool: &Pool) -> usize {
    pool.stats().leased
}

fn stream(from: u64, n: usize) -> Vec<u8> {
    (0..n as u64).map(|i| byte_at(from + i)).collect()
}

/// After the writer's close: every byte left in the pipe, into `got`.
fn read_to_end(reader: &Reader, got: &mut Vec<u8>) {
    loop {
        let read = reader.try_read().unwrap().unwrap();
        let done = read.is_completed();
        let len = read.len();
        got.extend(read.to_vec());
        read.consume(len).unwrap();
        if done {
            return;
        }
    }
}

/// The `Bytes` handed out (with their stream positions) still hold their
/// bytes; checked, then let go.
fn check_shares(held: &mut Vec<(u64, Bytes)>) {
    for (start, frame) in held.drain(..) {
        assert_eq!(&frame[..], &stream(start, frame.len())[..], "shared bytes changed");
    }
}

/// A pool of exactly four 64-byte blocks.
fn four_block_pool() -> Pool {
    Pool::builder()
        .block_size(64)
        .blocks_per_slab(4)
        .thread_cache(0)
        .max_bytes(256)
        .build()
        .unwrap()
}

/// A pipe of `pool` that pauses at `pause` (resumes at half) holding the
/// first `n` stream bytes, with the writer's sleep bit set by a flush that
/// would wait.
fn paused(pool: &Pool, pause: u64, n: usize) -> (Writer, Reader) {
    let (mut writer, reader) =
        pipe(pool, Options::new().pause_at(pause).resume_at(pause / 2)).unwrap();
    writer.put_slice(&stream(0, n)).unwrap();
    assert!(flush_would_wait(&mut writer));
    (writer, reader)
}

/// [`paused`], then every byte consumed while the writer waits: the
/// emptied blocks are kept.
fn paused_then_emptied(pool: &Pool, pause: u64, n: usize) -> (Writer, Reader) {
    let (writer, reader) = paused(pool, pause, n);
    reader.try_read().unwrap().unwrap().consume(n).unwrap();
    (writer, reader)
}

// ---------------------------------------------------------------------------
// 1. Ownership: shared blocks, full tails, drops.
// ---------------------------------------------------------------------------

/// Every block handed out as `Bytes` is consumed while the writer waits;
/// the writer then writes over everything it can take. The `Bytes` must
/// keep their content (a shared block is never kept for reuse).
#[test]
fn shared_blocks_are_never_kept_for_the_writer() {
    let pool = small_pool();
    let (mut writer, reader) = paused(&pool, 256, 256);
    let data = stream(0, 256);
    let mut read = reader.try_read().unwrap().unwrap();
    // One zero-copy `Bytes` per block, plus one in the (full) tail.
    let frames: Vec<Bytes> = (0..4).map(|i| read.bytes(i * 64 + 1..i * 64 + 63).unwrap()).collect();
    read.consume(256).unwrap();
    // Nothing kept: all four blocks are shared, held by the `Bytes` only.
    assert_eq!(leased(&pool), 4);
    assert_eq!(writer.trim(), 0, "no shared block may be kept");
    writer.put_slice(&[0xAA; 512]).unwrap();
    for (i, frame) in frames.iter().enumerate() {
        assert_eq!(&frame[..], &data[i * 64 + 1..i * 64 + 63], "frame {i} overwritten");
    }
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), [0xAA; 512]);
    read.consume(512).unwrap();
    drop(frames);
    writer.close();
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// A block shared only after part of it was consumed, then its node (the
/// tail, later full) consumed while the writer waits.
#[test]
fn a_tail_shared_then_filled_and_kept_is_not_reused() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(64).resume_at(32)).unwrap();
    writer.put_slice(&stream(0, 40)).unwrap();
    let mut read = reader.try_read().unwrap().unwrap();
    let frame = read.bytes(0..40).unwrap();
    read.consume(40).unwrap();
    writer.put_slice(&stream(40, 24)).unwrap(); // the tail is full now
    writer.put_slice(&stream(64, 64)).unwrap();
    assert!(flush_would_wait(&mut writer));
    let read = reader.try_read().unwrap().unwrap();
    read.consume(88).unwrap(); // passes the shared node, keeps the next
    writer.put_slice(&[0x55; 300]).unwrap();
    assert_eq!(&frame[..], &stream(0, 40)[..]);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), [0x55; 300]);
    read.consume(300).unwrap();
    drop(frame);
    drop(writer);
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// A full tail kept in place while the writer waits: a later read must
/// neither see nor share it, and it must go back once passed.
#[test]
fn a_kept_full_tail_is_not_shared_later() {
    let pool = small_pool();
    let (mut writer, reader) = paused_then_emptied(&pool, 128, 128);
    // sentinel (no block), one passed node kept, full tail kept.
    assert_eq!(leased(&pool), 2);
    writer.put_slice(&stream(128, 100)).unwrap();
    let mut read = reader.try_read().unwrap().unwrap();
    let frame = read.bytes(0..50).unwrap();
    let empty = read.bytes(0..0).unwrap();
    assert!(empty.is_empty());
    read.consume(100).unwrap();
    writer.put_slice(&stream(228, 500)).unwrap();
    assert_eq!(&frame[..], &stream(128, 50)[..]);
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), stream(228, 500));
    read.consume(500).unwrap();
    drop(frame);
    writer.close();
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// The writer dropped (not closed) while blocks are kept gives them back;
/// the reader still sees every byte and the broken-pipe error.
#[test]
fn writer_dropped_unclosed_gives_back_kept_blocks() {
    let pool = small_pool();
    let (writer, reader) = paused(&pool, 256, 300);
    let read = reader.try_read().unwrap().unwrap();
    read.advance_to(256, 300).unwrap(); // four full blocks emptied
    assert_eq!(leased(&pool), 5, "four kept + the partly read tail");
    drop(writer);
    assert_eq!(leased(&pool), 1, "only the tail with unread bytes");
    let read = reader.try_read().unwrap().unwrap();
    assert!(read.is_completed());
    assert_eq!(read.to_vec(), stream(256, 44));
    assert!(read.error().is_some());
    read.consume(44).unwrap();
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// The reader dropped while blocks are kept: the writer fails its next
/// write and the kept blocks come back when it goes.
#[test]
fn reader_dropped_while_blocks_are_kept() {
    let pool = small_pool();
    let (mut writer, reader) = paused(&pool, 256, 320);
    let read = reader.try_read().unwrap().unwrap();
    read.consume(200).unwrap();
    drop(reader);
    let mut flush = writer.flush();
    assert_eq!(poll_once(Pin::new(&mut flush)), Poll::Ready(Err(WriteError::ReaderClosed)));
    drop(flush);
    let err = writer.put_slice(&[1; 100]).unwrap_err();
    assert_eq!(err.error(), WriteError::ReaderClosed);
    drop(writer);
    assert_eq!(leased(&pool), 0);
}

// ---------------------------------------------------------------------------
// 2. Bounds, trim, close.
// ---------------------------------------------------------------------------

/// Many pause cycles in which the writer writes far less than the reader
/// frees: kept blocks must stay bounded, and trim must give back all of
/// them.
#[test]
fn kept_blocks_stay_bounded_over_many_pause_cycles() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(512).resume_at(256)).unwrap();
    let mut pos = 0u64;
    let mut peak = 0;
    for cycle in 0..if cfg!(miri) { 20 } else { 200 } {
        // Up to the pause, then one byte per cycle after a resume.
        let n = if cycle % 2 == 0 { 700 } else { 1 + cycle % 7 };
        writer.put_slice(&stream(pos, n)).unwrap();
        flush_would_wait(&mut writer);
        let read = reader.try_read().unwrap().unwrap();
        assert_eq!(read.to_vec(), stream(pos, read.len()));
        let len = read.len();
        read.consume(len).unwrap();
        pos += n as u64;
        peak = peak.max(leased(&pool));
    }
    // 700 bytes over 64-byte blocks: at most 12 blocks live, plus slack.
    assert!(peak <= 16, "peak leased {peak}");
    writer.trim();
    assert!(leased(&pool) <= 1, "after trim: {}", leased(&pool));
    writer.close();
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// `read_vectored_from` takes kept blocks and drops those the read did
/// not reach, over many cycles: no block lost, bounded.
#[test]
fn read_vectored_from_over_kept_blocks_many_cycles() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(256).resume_at(128)).unwrap();
    let mut rng = Rng(0xC0FFEE);
    let total = if cfg!(miri) { 4_000 } else { 300_000 };
    let data = stream(0, total);
    let mut source = &data[..];
    let (mut got, mut peak) = (Vec::new(), 0);
    while got.len() < total {
        if !source.is_empty() {
            let limit = 1 + rng.below(300) as usize;
            let max = 1 + rng.below(600) as usize;
            let mut trickle = Trickle { data: source, limit };
            writer.read_vectored_from(&mut trickle, max).unwrap();
            source = trickle.data;
            let _ = flush_would_wait(&mut writer);
        }
        if let Some(read) = reader.try_read().unwrap() {
            let len = read.len();
            let consumed = if rng.below(3) == 0 { len } else { rng.below(len as u64 + 1) as usize };
            got.extend(read.to_vec().into_iter().take(consumed));
            read.advance_to(consumed, len).unwrap();
        } else if source.is_empty() {
            // Everything examined but not consumed: consume it.
            let read = reader.try_read().unwrap();
            assert!(read.is_none());
            break;
        }
        peak = peak.max(leased(&pool));
        if rng.below(50) == 0 {
            writer.trim();
        }
    }
    eprintln!("read_vectored_from cycles: peak leased {peak}");
    writer.close();
    read_to_end(&reader, &mut got);
    assert_eq!(got.len(), total);
    assert!(got == data, "bytes differ");
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// A read taken before the writer closes, consumed after (the sleep bit of
/// a dropped flush still set, the snapshot saying "not completed"): the
/// close already ran its trim, so the consume must keep nothing.
#[test]
fn blocks_kept_after_close_stay_until_the_reader_drops() {
    let pool = small_pool();
    let (writer, reader) = paused(&pool, 128, 256);
    let read = reader.try_read().unwrap().unwrap();
    writer.close();
    read.consume(256).unwrap();
    let end = reader.try_read().unwrap().unwrap();
    assert!(end.is_completed() && end.is_empty());
    drop(end);
    assert_eq!(leased(&pool), 0, "blocks held by a pipe whose writer is gone");
    drop(reader);
}

/// All data consumed while the writer waits, then the writer closes: the
/// full tail's kept block is not in a spare node, out of `trim`'s reach,
/// and goes back when the next read moves past it.
#[test]
fn a_kept_full_tail_survives_close() {
    let pool = small_pool();
    let (mut writer, reader) = paused_then_emptied(&pool, 128, 256);
    assert_eq!(writer.trim(), 3);
    writer.close();
    assert!(reader.try_read().unwrap().unwrap().is_completed());
    assert_eq!(leased(&pool), 0, "the consumed full tail's block is still leased");
    drop(reader);
}

/// A pool exactly as large as the pipe's peak: the writer paused with it
/// full, the reader empties it, and the writer writes again. The emptied
/// blocks sit in the spare nodes, but the first spare node (the list's
/// first, which never held a block) has none and the pool is dry: the
/// writer must find a kept block further along, not fail.
#[test]
fn a_tight_pool_put_slice_after_a_pause() {
    let pool = four_block_pool();
    let (mut writer, _reader) = paused_then_emptied(&pool, 128, 256);
    let result = writer.put_slice(&stream(256, 64));
    assert!(result.is_ok(), "{result:?} with {} blocks kept in the pipe", leased(&pool));
}

/// As above, through `read_vectored_from`.
#[test]
fn a_tight_pool_read_vectored_from_after_a_pause() {
    let pool = four_block_pool();
    let (mut writer, _reader) = paused_then_emptied(&pool, 128, 256);
    let data = stream(256, 64);
    let result = writer.read_vectored_from(&mut &data[..], 64);
    assert!(result.is_ok(), "{result:?} with {} blocks kept in the pipe", leased(&pool));
}

/// The same tight pool in steady state (the list's first node long
/// reused): a node passed while the writer did not wait has no block, the
/// ones after it keep theirs, and with the pool dry the writer must take
/// theirs.
#[test]
fn a_tight_pool_steady_state_after_a_pause() {
    let pool = four_block_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(192).resume_at(64)).unwrap();
    let mut pos = 0u64;
    // Warm up: the sentinel and every node get reused.
    for _ in 0..10 {
        writer.put_slice(&stream(pos, 64)).unwrap();
        let read = reader.try_read().unwrap().unwrap();
        assert_eq!(read.to_vec(), stream(pos, 64));
        read.consume(64).unwrap();
        pos += 64;
    }
    // The pool is at most 4 blocks; fill 3 plus the partly read tail.
    writer.put_slice(&stream(pos, 200)).unwrap();
    assert!(flush_would_wait(&mut writer));
    let read = reader.try_read().unwrap().unwrap();
    read.consume(200).unwrap();
    pos += 200;
    let result = writer.put_slice(&stream(pos, 190));
    assert!(result.is_ok(), "{result:?} with {} blocks leased", leased(&pool));
}

/// Spare nodes passed before the writer waited (no block) ahead of nodes
/// passed while it waited (a kept block each): a writer that wakes
/// writes into the kept blocks, whichever node they sit in, and leases
/// none from the pool (the pipe's pool use stays its unread peak, not that
/// plus what it keeps), on each write path.
#[test]
fn a_waking_writer_uses_kept_blocks_before_the_pool() {
    for path in ["put_slice", "buffer", "read_vectored_from"] {
        let pool = small_pool();
        let (mut writer, reader) =
            pipe(&pool, Options::new().pause_at(640).resume_at(320)).unwrap();
        let write = |writer: &mut Writer, pos: u64, n: usize| {
            let data = stream(pos, n);
            match path {
                "put_slice" => writer.put_slice(&data).unwrap(),
                "buffer" => {
                    for piece in data.chunks(64) {
                        let space = writer.buffer(piece.len()).unwrap();
                        space[..piece.len()].copy_from_slice(piece);
                        writer.commit(piece.len()).unwrap();
                    }
                }
                _ => {
                    let mut source = &data[..];
                    while !source.is_empty() {
                        writer.read_vectored_from(&mut source, 640).unwrap();
                    }
                }
            }
        };
        let drain = |pos: u64, n: usize| {
            let read = reader.try_read().unwrap().unwrap();
            assert_eq!(read.to_vec()[..n], stream(pos, n), "{path}");
            read.advance_to(n, n).unwrap();
        };
        // Twenty blocks' worth; the reader empties the first ten before the
        // writer waits (their blocks go back), the other ten while it
        // waits (kept): ten spare nodes without a block, then ten with.
        write(&mut writer, 0, 1279);
        drain(0, 639);
        assert!(flush_would_wait(&mut writer), "{path}");
        drain(639, 640);
        let held = leased(&pool);
        assert!(held >= 10, "{path}: {held} leased, the kept blocks among them");
        // The woken writer's next ten blocks: the kept ones.
        write(&mut writer, 1279, 640);
        assert!(
            leased(&pool) <= held,
            "{path}: {} leased after the write, {held} before",
            leased(&pool)
        );
        drain(1279, 640);
        writer.close();
        drop(reader);
        assert_eq!(leased(&pool), 0, "{path}");
    }
}

// ---------------------------------------------------------------------------
// 3. Bytes: single thread, every write path, pause/resume cycles.
// ---------------------------------------------------------------------------

fn drain_some(reader: &Reader, rng: &mut Rng, got: &mut Vec<u8>) {
    let Some(read) = reader.try_read().unwrap() else { return };
    let len = read.len();
    let examined = rng.below(len as u64 + 1) as usize;
    let consumed = match rng.below(4) {
        0 => examined,
        1 => 0,
        _ => rng.below(examined as u64 + 1) as usize,
    };
    let bytes = read.to_vec();
    got.extend_from_slice(&bytes[..consumed]);
    read.advance_to(consumed, examined).unwrap();
}

#[test]
fn every_write_path_under_pause_cycles_single_thread() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(128).resume_at(64)).unwrap();
    let total: u64 = if cfg!(miri) { 4_000 } else { 2_000_000 };
    let mut rng = Rng(0xDEAD_BEEF);
    let (mut pos, mut got) = (0u64, Vec::new());
    let mut held: Vec<(u64, Bytes)> = Vec::new();
    let mut peak = 0;
    while pos < total {
        let n = (1 + rng.below(300)).min(total - pos) as usize;
        match rng.below(3) {
            0 => writer.put_slice(&stream(pos, n)).unwrap(),
            1 => {
                let n = n.min(64);
                let space = writer.buffer(rng.below(n as u64 + 1) as usize).unwrap();
                let n = n.min(space.len());
                space[..n].copy_from_slice(&stream(pos, n));
                writer.commit(n).unwrap();
                pos += n as u64;
                continue;
            }
            _ => {
                let data = stream(pos, n);
                let mut trickle = Trickle { data: &data, limit: 1 + rng.below(n as u64) as usize };
                let read =
                    writer.read_vectored_from(&mut trickle, rng.below(400) as usize).unwrap();
                pos += read.read as u64;
                let _ = flush_would_wait(&mut writer);
                continue;
            }
        }
        pos += n as u64;
        // Pause as often as possible; the reader lags.
        while flush_would_wait(&mut writer) {
            // Share some bytes now and then, and check them later.
            if rng.below(4) == 0
                && let Some(mut read) = reader.try_read().unwrap()
            {
                let len = read.len();
                if len > 0 {
                    let a = rng.below(len as u64) as usize;
                    let b = a + 1 + rng.below((len - a) as u64) as usize;
                    let start = got.len() as u64 + a as u64;
                    held.push((start, read.bytes(a..b).unwrap()));
                }
                drop(read);
            }
            drain_some(&reader, &mut rng, &mut got);
        }
        if rng.below(5) == 0 {
            drain_some(&reader, &mut rng, &mut got);
        }
        if rng.below(97) == 0 {
            writer.trim();
        }
        if held.len() > 16 {
            check_shares(&mut held);
        }
        peak = peak.max(leased(&pool));
    }
    writer.close();
    read_to_end(&reader, &mut got);
    assert_eq!(got.len() as u64, total);
    let first_bad = got.iter().enumerate().find(|&(i, &b)| b != byte_at(i as u64));
    assert!(first_bad.is_none(), "wrong byte at {first_bad:?}");
    check_shares(&mut held);
    drop(reader);
    assert_eq!(leased(&pool), 0);
    eprintln!("every write path: peak leased {peak}");
}

/// Zero-byte consumes pass a kept full tail once the writer links past
/// it; `advance_to(consumed < examined)` while the writer waits.
#[test]
fn zero_byte_consumes_and_partial_advances_while_paused() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(128).resume_at(64)).unwrap();
    writer.put_slice(&stream(0, 192)).unwrap();
    assert!(flush_would_wait(&mut writer));
    // Consume one block, examine all: kept node (sentinel has no block).
    let read = reader.try_read().unwrap().unwrap();
    read.advance_to(64, 192).unwrap();
    assert_eq!(leased(&pool), 3);
    assert!(!flush_would_wait(&mut writer), "resumed");
    // Consume the rest while nobody waits: full tail goes back.
    let read = reader.try_read();
    assert!(read.unwrap().is_none(), "everything examined");
    writer.put_slice(&stream(192, 64)).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), stream(64, 192));
    read.advance_to(128, 192).unwrap(); // consumed < examined
    // Now pause for real and consume the rest: the full tail is kept.
    writer.put_slice(&stream(256, 128)).unwrap();
    assert!(flush_would_wait(&mut writer));
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), stream(192, 192));
    read.consume(192).unwrap();
    // Link past the kept full tail, then pass it with a zero-byte consume.
    writer.put_slice(&stream(384, 10)).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    read.consume(0).unwrap();
    let read = reader.try_read();
    assert!(read.unwrap().is_none());
    writer.put_slice(&stream(394, 54)).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    assert_eq!(read.to_vec(), stream(384, 64));
    read.consume(64).unwrap();
    writer.trim();
    // Only the full tail (just consumed) may still hold a block.
    assert!(leased(&pool) <= 1, "leased {}", leased(&pool));
    writer.close();
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

// ---------------------------------------------------------------------------
// 3b. Real threads.
// ---------------------------------------------------------------------------

#[test]
fn threads_with_small_thresholds_move_every_byte_and_return_every_block() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(128).resume_at(64)).unwrap();
    let total: u64 = if cfg!(miri) { 4 << 10 } else { 4 << 20 };
    let producer = thread::spawn(move || {
        let mut rng = Rng(0x5EED_1234);
        let mut pos = 0u64;
        while pos < total {
            let n = (1 + rng.below(300)).min(total - pos) as usize;
            match rng.below(3) {
                0 => {
                    writer.put_slice(&stream(pos, n)).unwrap();
                    pos += n as u64;
                }
                1 => {
                    let n = n.min(64);
                    let space = writer.buffer(n).unwrap();
                    space[..n].copy_from_slice(&stream(pos, n));
                    writer.commit(n).unwrap();
                    pos += n as u64;
                }
                _ => {
                    let data = stream(pos, n);
                    let mut src = Trickle { data: &data, limit: n };
                    let read = writer.read_vectored_from(&mut src, n).unwrap();
                    pos += read.read as u64;
                }
            }
            writer.flush_blocking().unwrap();
            if rng.below(200) == 0 {
                writer.trim();
            }
        }
        writer.close();
    });
    let mut rng = Rng(0xFEED);
    let mut got = 0u64;
    let mut held: Vec<(u64, Bytes)> = Vec::new();
    loop {
        let mut read = reader.read_blocking().unwrap();
        let done = read.is_completed();
        let len = read.len();
        let mut at = got;
        for chunk in read.chunks() {
            for &b in chunk {
                assert_eq!(b, byte_at(at), "byte {at}");
                at += 1;
            }
        }
        if len > 0 && rng.below(8) == 0 {
            let a = rng.below(len as u64) as usize;
            let b = a + 1 + rng.below((len - a) as u64) as usize;
            held.push((got + a as u64, read.bytes(a..b).unwrap()));
        }
        let consumed =
            if done || rng.below(2) == 0 { len } else { rng.below(len as u64 + 1) as usize };
        read.advance_to(consumed, len).unwrap();
        got += consumed as u64;
        if held.len() > 8 {
            check_shares(&mut held);
        }
        if done {
            break;
        }
    }
    producer.join().unwrap();
    assert_eq!(got, total);
    check_shares(&mut held);
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// `trim` while a read holds bytes (and has handed one block out as
/// `Bytes`): only blocks in passed nodes go back; the held bytes, the
/// shared block and the partly read ones stay as they are.
#[test]
fn trim_while_a_read_holds_bytes_touches_only_passed_nodes() {
    let pool = small_pool();
    let (mut writer, reader) = paused(&pool, 256, 320);
    let read = reader.try_read().unwrap().unwrap();
    read.advance_to(192, 320).unwrap(); // three blocks emptied and kept
    writer.put_slice(&stream(320, 100)).unwrap();
    let mut held = reader.try_read().unwrap().unwrap();
    let frame = held.bytes(0..64).unwrap();
    // Three kept; the write's two blocks are two of them (the list's first
    // node had none, the next two had theirs): one goes back, nothing the
    // read holds.
    let leased_before = leased(&pool);
    assert_eq!(writer.trim(), 1);
    assert_eq!(leased(&pool), leased_before - 1);
    assert_eq!(held.to_vec(), stream(192, 228));
    assert_eq!(&frame[..], &stream(192, 64)[..]);
    held.consume(228).unwrap();
    drop(frame);
    writer.close();
    drop(reader);
    assert_eq!(leased(&pool), 0);
}

/// Reads the next `n` stream bytes from `pos` (of what is there), checks
/// them, and consumes and examines exactly those.
fn take_exactly(reader: &Reader, pos: u64, n: usize) {
    let read = reader.try_read().unwrap().unwrap();
    assert!(read.len() >= n);
    assert_eq!(read.to_vec()[..n], stream(pos, n));
    read.advance_to(n, n).unwrap();
}

/// From a review: a sleep bit that stays set after the writer's walk (a
/// flush polled once and dropped, as the server's `wants_input` does, then
/// writes once a later flush is Ready above `resume_at`).
/// The writer pauses (sleep bit set, `kept_ahead` set) with ten empty spare
/// nodes ahead of it; the reader examines one byte (the bit stays: still
/// above `resume_at`); a flush is now Ready and the writer writes two
/// blocks: the first takes the one kept block, the second walks to the
/// reader's head and clears `kept_ahead`, though the bit is still set. The
/// reader then empties eleven blocks with the bit still set (kept), and
/// the writer, woken, writes ten blocks: it leases ten fresh ones for the
/// empty spare nodes while eleven kept blocks wait behind them.
#[test]
fn kept_blocks_after_the_walk_while_the_bit_stays_set_come_before_the_pool() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(640).resume_at(320)).unwrap();
    writer.put_slice(&stream(0, 1279)).unwrap();
    take_exactly(&reader, 0, 639); // ten nodes passed before any wait: blocks given back
    assert!(flush_would_wait(&mut writer)); // bit set
    take_exactly(&reader, 639, 1); // passes one node while the bit is set: kept
    assert!(!flush_would_wait(&mut writer), "639 unexamined < pause_at");
    // 1 byte into the tail, 64 into the kept block, 1 into a fresh one.
    writer.put_slice(&stream(1279, 66)).unwrap();
    let written = 1279 + 66;
    // The reader empties everything with the bit still set (it keeps), and
    // wakes the writer on the way below resume_at.
    take_exactly(&reader, 640, written - 640);
    let held = leased(&pool);
    assert!(held >= 11, "{held}");
    // Ten blocks' worth: the eleven kept blocks are enough.
    writer.put_slice(&stream(written as u64, 640)).unwrap();
    let after = leased(&pool);
    take_exactly(&reader, written as u64, 640);
    writer.close();
    drop(reader);
    assert_eq!(leased(&pool), 0);
    assert!(after <= held, "{after} leased after the write, {held} before");
}

/// From the same review: the server's flush pattern, randomised, checking every byte, shared `Bytes`, and
/// the pool's use against what the pipe held at the last pause plus one
/// write's worth.
#[test]
fn server_like_flush_pattern_every_path_random() {
    let pool = small_pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(512).resume_at(128)).unwrap();
    let total: u64 = if cfg!(miri) { 6_000 } else { 3_000_000 };
    let mut rng = Rng(0x1234_5678_9ABC);
    let (mut pos, mut got) = (0u64, Vec::<u8>::new());
    let mut held: Vec<(u64, Bytes)> = Vec::new();
    while pos < total {
        // The server: writes only when a fresh flush is Ready.
        if flush_would_wait(&mut writer) || rng.below(3) == 0 {
            // The reader: some of what is there, maybe sharing bytes.
            if let Some(mut read) = reader.try_read().unwrap() {
                let len = read.len();
                if len > 0 && rng.below(3) == 0 {
                    let a = rng.below(len as u64) as usize;
                    let b = a + 1 + rng.below((len - a) as u64) as usize;
                    held.push((got.len() as u64 + a as u64, read.bytes(a..b).unwrap()));
                }
                let examined = rng.below(len as u64 + 1) as usize;
                let consumed = if rng.below(2) == 0 {
                    examined
                } else {
                    rng.below(examined as u64 + 1) as usize
                };
                got.extend_from_slice(&read.to_vec()[..consumed]);
                read.advance_to(consumed, examined).unwrap();
            }
            if held.len() > 8 {
                check_shares(&mut held);
            }
            continue;
        }
        let n = (1 + rng.below(400)).min(total - pos) as usize;
        match rng.below(4) {
            0 => {
                writer.put_slice(&stream(pos, n)).unwrap();
                pos += n as u64;
            }
            1 => {
                let min = rng.below(65) as usize;
                let space = writer.buffer(min).unwrap();
                let k = n.min(space.len());
                space[..k].copy_from_slice(&stream(pos, k));
                writer.commit(k).unwrap();
                pos += k as u64;
            }
            2 => {
                let data = stream(pos, n);
                let mut src = Trickle { data: &data, limit: n };
                let k = writer.read_from(&mut src).unwrap();
                pos += k as u64;
            }
            _ => {
                let data = stream(pos, n);
                let mut src = Trickle { data: &data, limit: 1 + rng.below(n as u64) as usize };
                let r = writer.read_vectored_from(&mut src, rng.below(700) as usize).unwrap();
                pos += r.read as u64;
            }
        }
        if rng.below(200) == 0 {
            writer.trim();
        }
    }
    writer.close();
    read_to_end(&reader, &mut got);
    assert_eq!(got.len() as u64, total);
    let bad = got.iter().enumerate().find(|&(i, &b)| b != byte_at(i as u64));
    assert!(bad.is_none(), "wrong byte at {bad:?}");
    check_shares(&mut held);
    drop(reader);
    assert_eq!(leased(&pool), 0);
}
