//! The read_at_least credit under a real writer thread, with
//! cancellations, partial examines, second readers and threshold edges.
#![cfg(not(falconet_pipe_loom))]

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use falconet_pipe::{Options, ReadError, ReadGuard, Reader, WriteError, pipe};
use falconet_pool::Pool;

fn pool() -> Pool {
    Pool::builder()
        .block_size(64)
        .blocks_per_slab(8)
        .thread_cache(0)
        .max_bytes(1 << 24)
        .build()
        .unwrap()
}

fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Bytes per run: a few hundred under Miri (~1000x slower).
const TOTAL: u64 = if cfg!(miri) { 300 } else { 200_000 };
/// Seeds per test: fewer under Miri.
const SEEDS: u64 = if cfg!(miri) { 2 } else { 40 };

fn byte(at: u64) -> u8 {
    (at * 7 + at / 251) as u8
}

/// Checks the guard's bytes against the stream from `pos`, then advances
/// it by a random (consumed, examined); returns (consumed, completed).
fn check_and_advance(guard: ReadGuard<'_>, pos: u64, rng: &mut Rng) -> (u64, bool) {
    let bytes = guard.to_vec();
    for (i, &b) in bytes.iter().enumerate() {
        assert_eq!(b, byte(pos + i as u64), "byte {} wrong", pos + i as u64);
    }
    let len = bytes.len() as u64;
    let completed = guard.is_completed();
    let examined = match rng.below(4) {
        0 => len,
        1 => rng.below(len + 1),
        2 => 0,
        _ => len - len.min(rng.below(3)),
    };
    let consumed =
        if rng.below(3) == 0 { examined } else { examined - rng.below(examined + 1) / 2 };
    // Make progress eventually: consume everything every so often.
    let (consumed, examined) = if rng.below(5) == 0 { (len, len) } else { (consumed, examined) };
    guard.advance_to(consumed as usize, examined as usize).unwrap();
    (consumed, completed && consumed == len)
}

fn reader_loop(reader: &Reader, seed: u64) {
    let mut rng = Rng(seed | 1);
    let mut pos = 0u64;
    loop {
        let op = rng.below(6);
        let result = match op {
            0 => {
                let n = 1 + rng.below(400) as usize;
                let guard = reader.read_at_least_blocking(n).unwrap();
                assert!(guard.len() >= n || guard.is_completed(), "{} < {n}", guard.len());
                Some(guard)
            }
            1 => {
                // A timed-out read_at_least: polled once or twice, dropped.
                let n = 1 + rng.below(4000) as usize;
                let mut read = pin!(reader.read_at_least(n));
                let mut got = None;
                for _ in 0..1 + rng.below(2) {
                    if let Poll::Ready(result) = poll_once(read.as_mut()) {
                        got = Some(result.unwrap());
                        break;
                    }
                    thread::yield_now();
                }
                got
            }
            2 => reader.try_read().unwrap(),
            _ => Some(reader.read_blocking().unwrap()),
        };
        if let Some(guard) = result {
            let (consumed, done) = check_and_advance(guard, pos, &mut rng);
            pos += consumed;
            if done {
                assert_eq!(pos, TOTAL);
                return;
            }
        }
    }
}

fn run(options: Options, seed: u64, io_write: bool) {
    let pool = pool();
    let (mut writer, reader) = pipe(&pool, options).unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let w = thread::spawn(move || {
        let mut rng = Rng(seed.wrapping_mul(31) | 1);
        let mut at = 0u64;
        while at < TOTAL {
            let n = (1 + rng.below(300)).min(TOTAL - at);
            let data: Vec<u8> = (at..at + n).map(byte).collect();
            if io_write {
                let mut off = 0;
                while off < data.len() {
                    off += std::io::Write::write(&mut writer, &data[off..]).unwrap();
                }
            } else {
                writer.flush_blocking().unwrap();
                writer.put_slice(&data).unwrap();
            }
            at += n;
        }
        writer.close();
    });
    let r = thread::spawn(move || {
        reader_loop(&reader, seed);
        done_tx.send(()).unwrap();
    });
    match done_rx.recv_timeout(Duration::from_secs(if cfg!(miri) { 3600 } else { 60 })) {
        Ok(()) => {}
        Err(_) => panic!("stalled: seed {seed} (writer or reader parked forever)"),
    }
    w.join().unwrap();
    r.join().unwrap();
}

#[test]
fn random_reads_cancels_and_advances_with_a_writer_thread() {
    let thresholds =
        [(1, 1), (2, 1), (64, 1), (64, 64), (1000, 999), (u64::MAX, u64::MAX), (300, 10)];
    for seed in 1..=SEEDS {
        for &(pause, resume) in &thresholds {
            let options = Options::new().pause_at(pause).resume_at(resume);
            run(options, seed * 977 + (pause % 1000), seed % 2 == 0);
        }
    }
}

/// A pending read_at_least with credit, failed by a second reader, and a
/// read_at_least that completes through WRITER_CLOSED: every credit comes
/// back exactly once (the writer's back-pressure sees the right count).
#[test]
fn credit_returns_on_the_conflict_path_and_on_close() {
    let pool = pool();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(10).resume_at(5)).unwrap();
    writer.put_slice(&[1; 8]).unwrap();
    {
        let mut read = pin!(reader.read_at_least(100));
        assert!(poll_once(read.as_mut()).is_pending());
        writer.put_slice(&[2; 8]).unwrap();
        assert!(poll_once(read.as_mut()).is_pending()); // credit 16 now
        assert!(poll_once(pin!(writer.flush())).is_ready());
        // A second reader fails and fails the pending one.
        assert!(matches!(reader.try_read(), Err(ReadError::ConcurrentRead)));
        assert!(matches!(poll_once(read.as_mut()), Poll::Ready(Err(ReadError::ConcurrentRead))));
    }
    // 16 unexamined again: over pause_at.
    assert!(poll_once(pin!(writer.flush())).is_pending());
    let guard = reader.try_read().unwrap().unwrap();
    assert_eq!(guard.len(), 16);
    guard.advance_to(0, 12).unwrap(); // 4 unexamined < resume_at
    assert!(poll_once(pin!(writer.flush())).is_ready());
    // read_at_least that completes through the close, guard dropped.
    {
        let mut read = pin!(reader.read_at_least(100));
        assert!(poll_once(read.as_mut()).is_pending());
        writer.put_slice(&[3; 9]).unwrap();
        assert!(poll_once(read.as_mut()).is_pending()); // credit 4 + 9
        writer.close();
        let Poll::Ready(Ok(guard)) = poll_once(read.as_mut()) else { panic!("closed") };
        assert!(guard.is_completed());
        assert_eq!(guard.len(), 25);
        drop(guard);
    }
    // Still 13 unexamined past the mark at 12: a plain read returns all 25.
    let guard = reader.try_read().unwrap().unwrap();
    assert_eq!(guard.len(), 25);
    guard.consume(25).unwrap();
    let guard = reader.try_read().unwrap().unwrap();
    assert!(guard.is_completed() && guard.is_empty());
}

/// `put_slice` after the reader left mid-write and the `io::Write` contract.
#[test]
fn io_write_never_reports_err_after_committing() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(2)
        .thread_cache(0)
        .max_bytes(128)
        .build()
        .unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new().without_back_pressure()).unwrap();
    // 10 bytes first: the 2-block pool takes 128 in all.
    assert_eq!(std::io::Write::write(&mut writer, &[1; 10]).unwrap(), 10);
    assert_eq!(std::io::Write::write(&mut writer, &[2; 200]).unwrap(), 118);
    let e = std::io::Write::write(&mut writer, &[3; 1]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory);
    let guard = reader.try_read().unwrap().unwrap();
    assert_eq!(guard.len(), 128);
    guard.consume(128).unwrap();
    // Blocks are back; the writer goes on.
    assert_eq!(std::io::Write::write(&mut writer, &[4; 5]).unwrap(), 5);
    drop(reader);
    let e = writer.put_slice(&[5; 3]).unwrap_err();
    assert_eq!(e.error(), WriteError::ReaderClosed);
}

/// Two threads share the reader: every read either gets the bytes or
/// fails with ConcurrentRead; cancellations carry credit. No stall, no
/// byte lost or duplicated, no debug assertion.
#[test]
fn two_reader_threads_with_credit_and_conflicts() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    for seed in 1..=SEEDS.min(30) {
        let pool = pool();
        let (pause, resume) = [(1, 1), (64, 8), (500, 499)][(seed % 3) as usize];
        let (mut writer, reader) =
            pipe(&pool, Options::new().pause_at(pause).resume_at(resume)).unwrap();
        let pos = AtomicU64::new(0);
        let done = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<()>();
        thread::scope(|s| {
            s.spawn(move || {
                let mut rng = Rng((seed * 13) | 1);
                let mut at = 0u64;
                while at < TOTAL {
                    let n = (1 + rng.below(300)).min(TOTAL - at);
                    let data: Vec<u8> = (at..at + n).map(byte).collect();
                    writer.flush_blocking().unwrap();
                    writer.put_slice(&data).unwrap();
                    at += n;
                }
                writer.close();
            });
            for t in 0..2u64 {
                let (reader, pos, done, tx) = (&reader, &pos, &done, tx.clone());
                s.spawn(move || {
                    let mut rng = Rng((seed * 101 + t) | 1);
                    while !done.load(Ordering::SeqCst) {
                        let got = match rng.below(3) {
                            0 => {
                                let mut read =
                                    pin!(reader.read_at_least(1 + rng.below(2000) as usize));
                                let mut got = None;
                                for _ in 0..3 {
                                    match poll_once(read.as_mut()) {
                                        Poll::Ready(r) => {
                                            got = Some(r);
                                            break;
                                        }
                                        Poll::Pending => thread::yield_now(),
                                    }
                                }
                                got
                            }
                            1 => reader.try_read().transpose(),
                            _ => {
                                let mut read = pin!(reader.read());
                                let mut got = None;
                                for _ in 0..3 {
                                    match poll_once(read.as_mut()) {
                                        Poll::Ready(r) => {
                                            got = Some(r);
                                            break;
                                        }
                                        Poll::Pending => thread::yield_now(),
                                    }
                                }
                                got
                            }
                        };
                        match got {
                            Some(Ok(guard)) => {
                                let at = pos.load(Ordering::SeqCst);
                                let bytes = guard.to_vec();
                                for (i, &b) in bytes.iter().enumerate() {
                                    assert_eq!(b, byte(at + i as u64));
                                }
                                let len = bytes.len() as u64;
                                let completed = guard.is_completed();
                                let c = if rng.below(2) == 0 { len } else { rng.below(len + 1) };
                                pos.store(at + c, Ordering::SeqCst);
                                if completed && c == len {
                                    assert_eq!(at + c, TOTAL);
                                    done.store(true, Ordering::SeqCst);
                                }
                                guard.advance_to(c as usize, len as usize).unwrap();
                            }
                            Some(Err(ReadError::ConcurrentRead)) | None => {}
                            Some(Err(e)) => panic!("{e}"),
                        }
                    }
                    drop(tx);
                });
            }
            drop(tx);
            if rx.recv_timeout(Duration::from_secs(if cfg!(miri) { 3600 } else { 60 }))
                != Err(mpsc::RecvTimeoutError::Disconnected)
            {
                panic!("stalled: seed {seed}");
            }
        });
    }
}
