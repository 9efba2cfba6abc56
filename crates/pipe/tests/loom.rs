//! loom models of the pipe's races, one per race, each named for it.
//!
//! ```text
//! RUSTFLAGS="--cfg falconet_pipe_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p falconet-pipe --test loom --release
//! ```
//! (`scripts/loom.sh` runs them.) loom explores every interleaving of the
//! atomics up to the preemption bound and reports a deadlock when every
//! thread sleeps, which is exactly what a lost wakeup looks like.
#![cfg(falconet_pipe_loom)]

use std::io;

use std::sync::atomic::AtomicUsize;
use std::task::{Wake, Waker};

use falconet_pipe::{Options, ReadError, Reader, WakerSlot, Writer, pipe};
use falconet_pool::Pool;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    check(f, None);
}

/// A model whose state space grows fastest with the bound: at bound 2 each
/// takes one to four minutes, at bound 3 far longer. `FALCONET_LOOM_HEAVY_BOUND`
/// sets their bound apart from the others' (`LOOM_MAX_PREEMPTIONS`): CI's
/// quick run sets 1 to stay within its time; `scripts/loom.sh` leaves it
/// unset, so they run at the full bound there.
fn heavy_model(f: impl Fn() + Sync + Send + 'static) {
    let bound = std::env::var("FALCONET_LOOM_HEAVY_BOUND").ok().map(|bound| {
        bound.parse().expect("FALCONET_LOOM_HEAVY_BOUND is a preemption bound: a number")
    });
    check(f, bound);
}

fn check(f: impl Fn() + Sync + Send + 'static, bound: Option<usize>) {
    let mut builder = loom::model::Builder::new();
    // A blocking wait polls twice (no-op waker first), so paths are long.
    builder.max_branches = 10_000;
    if bound.is_some() {
        builder.preemption_bound = bound;
    }
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

fn new_pipe(options: Options) -> (Writer, Reader) {
    let pool = Pool::builder().block_size(64).blocks_per_slab(4).thread_cache(0).max_bytes(1 << 16);
    pipe(&pool.build().unwrap(), options).unwrap()
}

/// Reads until the stream completes; returns the bytes and the error kind.
fn drain(reader: &Reader) -> (Vec<u8>, Option<io::ErrorKind>) {
    let mut bytes = Vec::new();
    loop {
        let read = reader.read_blocking().unwrap();
        bytes.extend(read.to_vec());
        let (len, done) = (read.len(), read.is_completed());
        let error = read.error().map(io::Error::kind);
        read.consume(len).unwrap();
        if done {
            return (bytes, error);
        }
    }
}

/// Kestrel's lost wakeup: the reader examines everything and goes to sleep
/// while the writer commits. The read must return the new byte.
#[test]
fn commit_vs_reader_examining_everything_and_sleeping() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        writer.put_slice(b"a").unwrap();
        reader.try_read().unwrap().unwrap().advance_to(0, 1).unwrap();
        let writer = thread::spawn(move || {
            writer.put_slice(b"b").unwrap();
            writer
        });
        let read = loom::future::block_on(reader.read()).unwrap();
        assert_eq!(read.to_vec(), b"ab");
        drop(read);
        drop(writer.join().unwrap());
    });
}

/// Two readers race: each read either gets the bytes or fails with
/// `ConcurrentRead`; a pending read a second read ran into is woken (no
/// deadlock); no byte is lost or duplicated, and the pipe works afterwards.
#[test]
fn two_readers_race() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        let reader = Arc::new(reader);
        let racer = |reader: Arc<Reader>| {
            thread::spawn(move || match reader.read_blocking() {
                Ok(read) => {
                    let byte = read.to_vec()[0];
                    read.advance_to(1, 1).unwrap();
                    Some(byte)
                }
                Err(error) => {
                    assert_eq!(error, ReadError::ConcurrentRead);
                    None
                }
            })
        };
        let first = racer(reader.clone());
        let second = racer(reader.clone());
        writer.put_slice(b"xy").unwrap();
        writer.close();
        // The racers may finish in either order; each took the first byte
        // left, so the bytes they took, sorted, then the rest, are "xy".
        let mut got: Vec<u8> =
            [first.join().unwrap(), second.join().unwrap()].into_iter().flatten().collect();
        got.sort_unstable();
        let (rest, error) = drain(&reader);
        assert_eq!(error, None);
        got.extend(rest);
        assert_eq!(got, b"xy", "every byte exactly once");
    });
}

/// A second read against a read that is pending on an empty pipe: both
/// fail (the pending one is woken, and a `try_read` flagged while it gives
/// up fails rather than say "nothing yet"), and the next read works. Whichever
/// begins first, the other runs into it: the pending read can only end
/// with the error, since nothing is written.
#[test]
fn second_read_wakes_a_pending_read_with_the_error() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        let reader = Arc::new(reader);
        let done = Arc::new(AtomicBool::new(false));
        let pending = {
            let (reader, done) = (reader.clone(), done.clone());
            thread::spawn(move || {
                let result = reader.read_blocking().map(|read| read.len());
                done.store(true, Ordering::Release);
                result
            })
        };
        loop {
            match reader.try_read() {
                Err(error) => {
                    assert_eq!(error, ReadError::ConcurrentRead);
                    break;
                }
                Ok(Some(_)) => unreachable!("nothing was written"),
                // The first read has not begun. (If it had run into this
                // one and failed, this one fails too: never "nothing yet",
                // which would leave a caller polling forever.)
                Ok(None) => {
                    assert!(!done.load(Ordering::Acquire), "a conflicted try_read said Ok(None)");
                    thread::yield_now();
                }
            }
        }
        assert_eq!(pending.join().unwrap(), Err(ReadError::ConcurrentRead));
        writer.put_slice(b"z").unwrap();
        assert_eq!(reader.try_read().unwrap().unwrap().to_vec(), b"z");
    });
}

/// A fast read that finds its bytes taken by a read that ended meanwhile
/// gives the read back: a second read that ran into it in that moment
/// failed, so the fast read must fail too, never end "nothing yet"
/// unfailed. (Found by review of the split-word protocol.)
#[test]
fn fast_read_finding_its_bytes_taken_vs_a_second_read() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        writer.put_slice(b"a").unwrap();
        let reader = Arc::new(reader);
        let other = {
            let reader = reader.clone();
            thread::spawn(move || {
                if let Ok(Some(read)) = reader.try_read() {
                    read.consume(1).unwrap();
                }
                matches!(reader.try_read(), Err(ReadError::ConcurrentRead))
            })
        };
        let racer = match reader.try_read() {
            Ok(Some(read)) => {
                drop(read);
                "held"
            }
            Ok(None) => "none",
            Err(ReadError::ConcurrentRead) => "failed",
            Err(e) => panic!("{e}"),
        };
        if other.join().unwrap() {
            // The only read the second one can have met is the racer's.
            assert_ne!(racer, "none", "a read failed against a read that neither held nor failed");
        }
        drop(writer);
    });
}

/// close and close_with against a pending read: the reader sees the bytes,
/// then "completed" with the writer's error, never a hang.
#[test]
fn close_with_error_vs_pending_read() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        let writer = thread::spawn(move || {
            writer.put_slice(b"q").unwrap();
            writer.close_with(io::Error::new(io::ErrorKind::ConnectionReset, "reset"));
        });
        let (bytes, error) = drain(&reader);
        assert_eq!(bytes, b"q");
        assert_eq!(error, Some(io::ErrorKind::ConnectionReset));
        writer.join().unwrap();
    });
}

#[test]
fn close_vs_pending_read() {
    model(|| {
        let (writer, reader) = new_pipe(Options::new());
        let writer = thread::spawn(move || writer.close());
        let read = loom::future::block_on(reader.read()).unwrap();
        assert!(read.is_completed() && read.is_empty() && read.error().is_none());
        drop(read);
        writer.join().unwrap();
    });
}

/// Pause and resume at the thresholds: the writer's flush waits at 2
/// unexamined bytes and resumes below 1, while the reader examines.
#[test]
fn pause_resume_at_the_thresholds() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new().pause_at(2).resume_at(1));
        let writer = thread::spawn(move || {
            writer.put_slice(b"ab").unwrap();
            writer.flush_blocking().unwrap(); // pauses until "ab" is examined
            writer.put_slice(b"c").unwrap();
            writer.close();
        });
        let (bytes, _) = drain(&reader);
        assert_eq!(bytes, b"abc");
        writer.join().unwrap();
    });
}

/// The reader returns consumed blocks (and publishes its head) while the
/// writer leases blocks and recycles nodes.
#[test]
fn blocks_returned_while_the_writer_leases() {
    heavy_model(|| {
        let (mut writer, reader) = new_pipe(Options::new().without_back_pressure());
        let writer = thread::spawn(move || {
            for byte in 0..3u8 {
                // Each write fills one 64-byte block: every write leases.
                writer.put_slice(&[byte; 64]).unwrap();
            }
            writer.close();
        });
        let (bytes, _) = drain(&reader);
        let expected: Vec<u8> = (0..3u8).flat_map(|byte| [byte; 64]).collect();
        assert_eq!(bytes, expected);
        writer.join().unwrap();
    });
}

/// The reader empties blocks while the writer waits on back-pressure, so
/// it leaves them in the nodes it passes, and the writer, woken, takes
/// them out again for its next write while the reader reads on: every
/// byte arrives once, in order, and every block is back in the pool at
/// the end (`segment`, "Kept blocks").
#[test]
fn blocks_kept_for_a_paused_writer_vs_the_reader() {
    model(|| {
        let pool = Pool::builder().block_size(64).blocks_per_slab(4).thread_cache(0);
        let pool = pool.max_bytes(1 << 16).build().unwrap();
        let (mut writer, reader) = pipe(&pool, Options::new().pause_at(128).resume_at(64)).unwrap();
        let writer = thread::spawn(move || {
            writer.put_slice(&[1; 128]).unwrap();
            writer.flush_blocking().unwrap(); // pauses until the reader examines
            writer.put_slice(&[2; 128]).unwrap();
            writer.close();
        });
        let (bytes, _) = drain(&reader);
        let expected: Vec<u8> = [[1; 128], [2; 128]].concat();
        assert_eq!(bytes, expected);
        writer.join().unwrap();
        drop(reader);
        assert_eq!(pool.stats().leased, 0);
    });
}

/// A block passed before the writer waits (given back) ahead of blocks
/// passed while it waits (kept), in a pool with no block to spare: the
/// woken writer walks past the node that holds none to the kept ones
/// while the reader reads on. Every byte arrives once, in order; every
/// block is back in the pool at the end.
#[test]
fn kept_blocks_behind_a_given_back_one_vs_the_reader() {
    heavy_model(|| {
        let pool = Pool::builder().block_size(64).blocks_per_slab(3).thread_cache(0);
        let pool = pool.max_bytes(192).build().unwrap();
        let (mut writer, reader) = pipe(&pool, Options::new().pause_at(128).resume_at(64)).unwrap();
        let writer = thread::spawn(move || {
            writer.put_slice(&[1; 64]).unwrap();
            writer.put_slice(&[2; 128]).unwrap(); // the pool's last two blocks
            writer.flush_blocking().unwrap(); // pauses until the reader examines
            writer.put_slice(&[3; 128]).unwrap();
            writer.close();
        });
        let (bytes, _) = drain(&reader);
        let expected: Vec<u8> = [&[1; 64][..], &[2; 128], &[3; 128]].concat();
        assert_eq!(bytes, expected);
        writer.join().unwrap();
        drop(reader);
        assert_eq!(pool.stats().leased, 0);
    });
}

/// A vectored read links blocks it filled before publishing them, while
/// the reader consumes (and the writer reuses) the blocks before: every
/// byte arrives once, in order, each block's bytes its own.
#[test]
fn vectored_read_links_filled_blocks_while_the_reader_consumes() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new().without_back_pressure());
        let writer = thread::spawn(move || {
            writer.put_slice(&[9; 60]).unwrap();
            // 4 bytes of tail, then two fresh blocks, in one read.
            let source: Vec<u8> = (0..100u8).collect();
            assert_eq!(writer.read_vectored_from(&mut &source[..], 128).unwrap().read, 100);
            writer.close();
        });
        let (bytes, _) = drain(&reader);
        let expected: Vec<u8> = [9; 60].into_iter().chain(0..100u8).collect();
        assert_eq!(bytes, expected);
        writer.join().unwrap();
    });
}

/// The reader shares the tail block as `Bytes` while the writer goes on
/// filling that block and the next, and the `Bytes` drops on a third
/// thread: the bytes stay what they were, and the block goes back once.
#[test]
fn shared_tail_block_vs_writer_and_a_foreign_drop() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new().without_back_pressure());
        writer.put_slice(b"abc").unwrap();
        let mut read = reader.try_read().unwrap().unwrap();
        let shared = read.bytes(0..3).unwrap();
        read.consume(3).unwrap();
        let writer = thread::spawn(move || {
            writer.put_slice(&[7; 100]).unwrap(); // the rest of the block, and a new one
            writer.close();
        });
        let holder = thread::spawn(move || {
            assert_eq!(&shared[..], b"abc");
            drop(shared);
        });
        let (bytes, _) = drain(&reader);
        assert_eq!(bytes, [7; 100]);
        writer.join().unwrap();
        holder.join().unwrap();
    });
}

/// Polls `future` once with a no-op waker.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(Waker::noop()))
}

/// A `read_at_least` that waits (examining everything on loan) is dropped
/// while the writer commits: the cancel must give back exactly the loan, so
/// every committed byte is unexamined again and a plain read returns it at
/// once, and nothing is lost or duplicated.
#[test]
fn cancelled_read_at_least_vs_commit() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        writer.put_slice(b"a").unwrap();
        let writer = thread::spawn(move || {
            writer.put_slice(b"b").unwrap();
            writer
        });
        {
            let mut read = std::pin::pin!(reader.read_at_least(3));
            assert!(poll_once(read.as_mut()).is_pending(), "at most 2 bytes exist");
        }
        let read = reader.try_read().unwrap().expect("the cancelled wait left 'a' unexamined");
        let seen = read.to_vec();
        assert!(seen == b"a" || seen == b"ab", "{seen:?}");
        read.consume(seen.len()).unwrap();
        let writer = writer.join().unwrap();
        writer.close();
        let (rest, error) = drain(&reader);
        assert_eq!([seen, rest].concat(), b"ab");
        assert_eq!(error, None);
    });
}

/// The same cancel against a writer paused at the threshold: the wait's loan
/// wakes the writer, the cancel takes the loan back (the writer may pause
/// again), and the reader's next reads let it finish. No lost wake.
#[test]
fn cancelled_read_at_least_vs_paused_writer() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new().pause_at(2).resume_at(1));
        let writer = thread::spawn(move || {
            writer.put_slice(b"ab").unwrap();
            writer.flush_blocking().unwrap(); // pauses while "ab" is unexamined
            writer.put_slice(b"c").unwrap();
            writer.close();
        });
        {
            let mut read = std::pin::pin!(reader.read_at_least(4));
            assert!(poll_once(read.as_mut()).is_pending(), "at most 3 bytes exist");
        }
        let (bytes, _) = drain(&reader);
        assert_eq!(bytes, b"abc");
        writer.join().unwrap();
    });
}

/// A read_at_least holding credit is failed by a second reader on another
/// thread while the writer (pause_at 1) pauses and commits: the credit comes
/// back once, the writer is never stuck, every byte arrives once.
#[test]
fn conflict_on_a_read_at_least_with_credit_vs_paused_writer() {
    heavy_model(|| {
        let (mut writer, reader) = new_pipe(Options::new().pause_at(1).resume_at(1));
        writer.put_slice(b"a").unwrap();
        let reader = Arc::new(reader);
        let writer = thread::spawn(move || {
            writer.flush_blocking().unwrap();
            writer.put_slice(b"b").unwrap();
            writer.close();
        });
        let second = {
            let reader = reader.clone();
            thread::spawn(move || match reader.try_read() {
                Ok(Some(guard)) => drop(guard),
                Ok(None) | Err(ReadError::ConcurrentRead) => {}
                Err(e) => panic!("{e}"),
            })
        };
        {
            let mut read = std::pin::pin!(reader.read_at_least(5));
            match poll_once(read.as_mut()) {
                std::task::Poll::Pending => {
                    let _ = poll_once(read.as_mut());
                }
                std::task::Poll::Ready(Err(ReadError::ConcurrentRead)) => {}
                std::task::Poll::Ready(r) => panic!("{:?}", r.map(|g| g.len())),
            }
        }
        second.join().unwrap();
        assert_eq!(drain(&reader).0, b"ab");
        writer.join().unwrap();
    });
}

/// read_at_least that completes through the writer's close with credit,
/// its guard dropped unadvanced: the next read sees every byte, and the
/// writer, paused at resume_at 1 meanwhile, finished.
#[test]
fn read_at_least_completed_by_close_returns_its_credit() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new().pause_at(1).resume_at(1));
        writer.put_slice(b"a").unwrap();
        let writer = thread::spawn(move || {
            writer.flush_blocking().unwrap();
            writer.put_slice(b"b").unwrap();
            writer.close();
        });
        let guard = loom::future::block_on(reader.read_at_least(5)).unwrap();
        assert!(guard.is_completed());
        assert_eq!(guard.to_vec(), b"ab");
        drop(guard);
        let guard = reader.try_read().unwrap().expect("2 bytes unexamined");
        assert_eq!(guard.to_vec(), b"ab");
        guard.consume(2).unwrap();
        writer.join().unwrap();
    });
}

/// `readable` (the owned wait an event loop keeps across polls) against a
/// commit and a close on another thread: the wait is woken (no lost
/// wakeup), takes nothing, and the reads after it see every byte once.
#[test]
fn readable_vs_commit_and_close() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        let reader = Arc::new(reader);
        let writer = thread::spawn(move || {
            writer.put_slice(b"a").unwrap();
            writer.close();
        });
        let mut bytes = Vec::new();
        loop {
            loom::future::block_on(falconet_pipe::Readable::new(&reader)).unwrap();
            let read = reader.try_read().unwrap().expect("readable means a read returns");
            bytes.extend(read.to_vec());
            let (len, done) = (read.len(), read.is_completed());
            read.consume(len).unwrap();
            if done {
                break;
            }
        }
        assert_eq!(bytes, b"a");
        writer.join().unwrap();
    });
}

/// `Readable` takes the read for a moment when the bytes arrive while it
/// waits (it begins, sees them, gives them back): a second read that runs
/// into it then fails, and so does the wait, as for a pending one: a
/// second read never fails alone.
#[test]
fn readable_vs_a_second_read() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        let reader = Arc::new(reader);
        let writer = thread::spawn(move || {
            writer.put_slice(b"a").unwrap();
            writer
        });
        let second = {
            let reader = reader.clone();
            thread::spawn(move || match reader.try_read() {
                Ok(read) => {
                    drop(read);
                    false
                }
                Err(error) => {
                    assert_eq!(error, ReadError::ConcurrentRead);
                    true
                }
            })
        };
        let waited = loom::future::block_on(falconet_pipe::Readable::new(&reader));
        if second.join().unwrap() {
            assert_eq!(waited, Err(ReadError::ConcurrentRead), "the second read failed alone");
        }
        drop(writer.join().unwrap());
    });
}

/// The server's deferred response against its connection's close: the
/// responder (writer) flushes and writes while the connection drops the
/// output pipe's reader. The writer learns that the reader is gone (its
/// flush or its next write fails, or it finished first) and never waits
/// for ever.
#[test]
fn responder_vs_connection_close() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new().pause_at(1).resume_at(1));
        let responder = thread::spawn(move || {
            let first = writer.put_slice(b"head").map_err(|e| e.error());
            let flushed = writer.flush_blocking();
            let second = writer.put_slice(b"body").map_err(|e| e.error());
            (first, flushed, second)
        });
        drop(reader); // the client went away
        let (first, flushed, second) = responder.join().unwrap();
        // The reader is gone: the flush (paused at 1 byte) must end, with
        // the error, and the write after it fails.
        assert!(first.is_ok() || first == Err(falconet_pipe::WriteError::ReaderClosed));
        assert_eq!(flushed, Err(falconet_pipe::WriteError::ReaderClosed));
        assert_eq!(second, Err(falconet_pipe::WriteError::ReaderClosed));
    });
}

/// The reader's drop against a writer below its pause threshold, whose
/// flushes take the fast path: once a call has said that the reader is
/// gone, every later one says so. (Before: the flush that found the drop
/// stored its news as seen, so the next flush's fast path said `Ok`, and
/// writes went on leasing blocks for nobody.)
#[test]
fn reader_drop_vs_a_writer_below_its_threshold() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        let writes = thread::spawn(move || {
            let mut told = false;
            for _ in 0..2 {
                let flushed = writer.flush_blocking();
                // Past one 64-byte block: the write needs a fresh one.
                let put = writer.put_slice(&[1; 100]).map_err(|e| e.error());
                for result in [flushed, put] {
                    if told {
                        assert_eq!(result, Err(falconet_pipe::WriteError::ReaderClosed));
                    }
                    told |= result.is_err();
                }
            }
        });
        drop(reader);
        writes.join().unwrap();
    });
}

/// The server's request body hand-back: the application reads part of the
/// body from the shared reader on its thread and hands the reader back
/// (here an atomic flag; the server's link is a lock); the parser then
/// reads on another thread while the socket side still commits. Every byte
/// is read once: the application's, then the parser's.
#[test]
fn body_hand_back_vs_parser() {
    model(|| {
        let (mut writer, reader) = new_pipe(Options::new());
        writer.put_slice(b"ab").unwrap();
        let reader = Arc::new(reader);
        let returned = Arc::new(AtomicBool::new(false));
        let socket = thread::spawn(move || {
            writer.put_slice(b"cd").unwrap();
            writer.close();
        });
        let application = {
            let (reader, returned) = (reader.clone(), returned.clone());
            thread::spawn(move || {
                let read = reader.read_blocking().unwrap();
                let body = read.to_vec()[..2].to_vec();
                read.advance_to(2, 2).unwrap();
                // Release pairs with the parser's Acquire.
                returned.store(true, Ordering::Release);
                body
            })
        };
        while !returned.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let (rest, error) = drain(&reader);
        assert_eq!(application.join().unwrap(), b"ab");
        assert_eq!(rest, b"cd");
        assert_eq!(error, None);
        socket.join().unwrap();
    });
}

/// Counts its wakes (a plain std atomic: read after the model's joins).
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The waker slot's hand-off: a wake that lands while the waker is being
/// registered must not lose it. Either that wake wakes it, or it stays in
/// the slot for the next wake; never neither.
#[test]
fn waker_slot_wake_during_registration() {
    model(|| {
        let slot = Arc::new(WakerSlot::new());
        let counter = std::sync::Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let waking = {
            let slot = slot.clone();
            thread::spawn(move || slot.wake())
        };
        slot.register(&waker);
        waking.join().unwrap();
        slot.wake();
        assert!(counter.0.load(std::sync::atomic::Ordering::SeqCst) >= 1, "the waker was lost");
    });
}
