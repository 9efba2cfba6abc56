//! A day-one tokio user's programs against falconet-pipe (outside review).
//! Everything that might hang runs under a timeout and fails with a message.
//!
//! Not under Miri: real sockets and multi-thread runtimes, which it does
//! not run (the unsafe paths these programs drive are Miri's in the
//! crate's other tests). Not under ThreadSanitizer (`scripts/tsan.sh`
//! sets `falconet_tsan`): tokio's I/O driver hands its readiness over
//! through epoll, which TSan cannot see, and reports races inside tokio
//! (tokio itself stopped running TSan for them: tokio-rs/tokio#7299).
#![cfg(all(feature = "tokio", not(falconet_pipe_loom), not(miri), not(falconet_tsan)))]

use std::io;
use std::sync::Arc;
use std::time::Duration;

use falconet_pipe::{Options, ReadError, Reader, WriteError, pipe};
use falconet_pool::Pool;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

fn multi() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// The byte at stream position `i`.
fn byte_at(i: usize) -> u8 {
    (i % 251) as u8
}

fn stream(len: usize) -> Vec<u8> {
    (0..len).map(byte_at).collect()
}

/// The futures a user moves into `tokio::spawn` are `Send`.
#[test]
fn pipe_types_and_futures_are_send_for_tokio_spawn() {
    fn send<T: Send>(_: &T) {}
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    {
        let read = reader.read();
        send(&read);
        let at_least = reader.read_at_least(4);
        send(&at_least);
    }
    {
        let flush = writer.flush();
        send(&flush);
    }
    let mut src: &[u8] = b"x";
    {
        let fut = writer.read_from_async(&mut src);
        send(&fut);
    }
    let io = reader.into_io();
    send(&io);
    send(&writer);
}

/// A line protocol over real TCP on a multi-thread runtime: one task reads
/// the socket into the pipe with `read_from_async`, another parses lines
/// through `IoReader`'s `AsyncBufRead` (`lines()`), answering on the
/// socket's write half (`tokio::io::split`). Lines cross block boundaries
/// and some are longer than a block; the client sends far past the pause
/// threshold before reading any answer.
#[test]
fn tcp_line_server_with_split_socket_read_from_async_and_lines() {
    multi().block_on(async {
        timeout(LIMIT, async {
            let pool = Pool::new();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let lines: Vec<String> = (0..3000)
                .map(|i| {
                    let len = if i % 97 == 0 { 5000 } else { i % 130 };
                    let c = (b'a' + (i % 26) as u8) as char;
                    format!("{i}:{}", c.to_string().repeat(len))
                })
                .collect();
            let expected: usize = lines.iter().map(|l| l.len()).sum();
            let client = tokio::spawn({
                let lines = lines.clone();
                async move {
                    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
                    let (mut rd, mut wr) = stream.into_split();
                    let sender = tokio::spawn(async move {
                        for line in &lines {
                            wr.write_all(line.as_bytes()).await.unwrap();
                            wr.write_all(b"\n").await.unwrap();
                        }
                        wr.shutdown().await.unwrap();
                    });
                    let mut answers = String::new();
                    rd.read_to_string(&mut answers).await.unwrap();
                    sender.await.unwrap();
                    answers
                }
            });
            let (socket, _) = listener.accept().await.unwrap();
            let (mut rd, mut wr) = tokio::io::split(socket);
            let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
            let transport = tokio::spawn(async move {
                let mut total = 0;
                loop {
                    let n = writer.read_from_async(&mut rd).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    total += n;
                }
                writer.close();
                total
            });
            let parser = tokio::spawn(async move {
                let mut lines_in = reader.into_io().lines();
                let mut sum = 0usize;
                let mut count = 0usize;
                while let Some(line) = lines_in.next_line().await.unwrap() {
                    sum += line.len();
                    count += 1;
                    wr.write_all(format!("{}\n", line.len()).as_bytes()).await.unwrap();
                }
                wr.shutdown().await.unwrap();
                (count, sum)
            });
            let transported = transport.await.unwrap();
            let (count, sum) = parser.await.unwrap();
            let answers = client.await.unwrap();
            assert_eq!(transported, expected + lines.len());
            assert_eq!((count, sum), (lines.len(), expected));
            let want: String = lines.iter().map(|l| format!("{}\n", l.len())).collect();
            assert_eq!(answers, want);
        })
        .await
        .expect("the line server hung");
    });
}

/// `tokio::io::copy(&mut tcp, &mut writer)` (the generic path) then
/// `read_exact` / `read_until` / `read_to_end` on the adapter.
#[test]
fn tokio_io_copy_into_the_writer_and_read_exact_read_until_read_to_end() {
    multi().block_on(async {
        timeout(LIMIT, async {
            let pool = Pool::new();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let payload = stream(300_000);
            let client = tokio::spawn({
                let payload = payload.clone();
                async move {
                    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                    s.write_all(b"HEAD\r\n").await.unwrap();
                    s.write_all(&payload).await.unwrap();
                    s.shutdown().await.unwrap();
                }
            });
            let (mut socket, _) = listener.accept().await.unwrap();
            let (mut writer, reader) = pipe(&pool, Options::new().pause_at(8192)).unwrap();
            let copier = tokio::spawn(async move {
                let n = tokio::io::copy(&mut socket, &mut writer).await.unwrap();
                writer.close();
                n
            });
            let mut io = reader.into_io();
            let mut head = Vec::new();
            io.read_until(b'\n', &mut head).await.unwrap();
            assert_eq!(head, b"HEAD\r\n");
            let mut first = vec![0; 10_000];
            io.read_exact(&mut first).await.unwrap();
            assert_eq!(first, payload[..10_000]);
            let mut rest = Vec::new();
            io.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, payload[10_000..]);
            assert_eq!(copier.await.unwrap(), 300_006);
            client.await.unwrap();
        })
        .await
        .expect("copy/read hung");
    });
}

/// Every await point cancelled again and again (a `timeout` that keeps
/// firing) on both sides of a pipe, on a multi-thread runtime where the
/// tasks migrate: the writer uses `write` (cancel-safe), `flush`,
/// `read_from_async`; the reader uses `read`, `read_at_least`. No byte
/// lost, duplicated or reordered; the pipe keeps working after each cancel.
#[test]
fn every_await_point_cancelled_repeatedly_loses_and_duplicates_nothing() {
    const TOTAL: usize = 400_000;
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) =
            pipe(&pool, Options::new().pause_at(3000).resume_at(1000)).unwrap();
        let reader = Arc::new(reader);
        let data = stream(TOTAL);
        let producer = tokio::spawn(async move {
            let tiny = Duration::from_micros(50);
            let mut sent = 0;
            let mut round = 0usize;
            let (mut src_w, mut src_r) = tokio::io::duplex(1024);
            while sent < TOTAL {
                round += 1;
                let end = (sent + 1 + round % 700).min(TOTAL);
                match round % 3 {
                    0 => {
                        if let Ok(r) = timeout(tiny, writer.write(&data[sent..end])).await {
                            sent += r.unwrap();
                        }
                    }
                    1 => {
                        // Through a source: the duplex is the "socket".
                        src_w.write_all(&data[sent..end]).await.unwrap();
                        let mut got = 0;
                        while got < end - sent {
                            if let Ok(r) = timeout(tiny, writer.read_from_async(&mut src_r)).await {
                                got += r.unwrap();
                            }
                        }
                        sent = end;
                    }
                    _ => {
                        let _ = timeout(tiny, writer.flush()).await;
                        if let Ok(r) = timeout(tiny, AsyncWriteExt::flush(&mut writer)).await {
                            r.unwrap();
                        }
                    }
                }
                if round.is_multiple_of(50) {
                    tokio::task::yield_now().await;
                }
            }
            writer.close();
        });
        let consumer = tokio::spawn({
            let reader = Arc::clone(&reader);
            async move {
                let tiny = Duration::from_micros(70);
                let mut received = 0usize;
                let mut round = 0usize;
                loop {
                    round += 1;
                    let attempt = if round.is_multiple_of(2) {
                        timeout(tiny, reader.read()).await
                    } else {
                        timeout(tiny, reader.read_at_least(1 + round % 5000)).await
                    };
                    let Ok(read) = attempt else { continue };
                    let read = read.unwrap();
                    let bytes = read.to_vec();
                    for (i, b) in bytes.iter().enumerate() {
                        assert_eq!(*b, byte_at(received + i), "byte {} wrong", received + i);
                    }
                    let done = read.is_completed();
                    assert!(read.error().is_none());
                    // Consume part, examine part: the rest comes again.
                    let consumed = if done { bytes.len() } else { bytes.len() - bytes.len() / 3 };
                    let examined = if round.is_multiple_of(4) { consumed } else { bytes.len() };
                    read.advance_to(consumed, examined).unwrap();
                    received += consumed;
                    if done {
                        return received;
                    }
                }
            }
        });
        let all = async {
            producer.await.unwrap();
            consumer.await.unwrap()
        };
        let received = timeout(Duration::from_secs(60), all)
            .await
            .expect("cancelled awaits hung the pipe (lost wakeup?)");
        assert_eq!(received, TOTAL);
    });
}

/// The same through the adapters: `AsyncReadExt::read` and `fill_buf`
/// cancelled repeatedly on `IoReader` (both documented cancel-safe by tokio).
#[test]
fn io_reader_reads_cancelled_repeatedly_lose_nothing() {
    const TOTAL: usize = 200_000;
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new().pause_at(2000)).unwrap();
        let data = stream(TOTAL);
        let producer = tokio::spawn(async move {
            for chunk in data.chunks(777) {
                writer.write_all(chunk).await.unwrap();
            }
            writer.close();
        });
        let consumer = tokio::spawn(async move {
            let mut io = reader.into_io();
            let tiny = Duration::from_micros(40);
            let mut out = Vec::new();
            let mut buf = [0u8; 1000];
            let mut round = 0;
            loop {
                round += 1;
                if round % 2 == 0 {
                    match timeout(tiny, AsyncReadExt::read(&mut io, &mut buf)).await {
                        Ok(Ok(0)) => break,
                        Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                        Ok(Err(e)) => panic!("read failed: {e}"),
                        Err(_) => {}
                    }
                } else {
                    let n = match timeout(tiny, io.fill_buf()).await {
                        Ok(Ok(chunk)) => {
                            out.extend_from_slice(chunk);
                            chunk.len()
                        }
                        Ok(Err(e)) => panic!("fill_buf failed: {e}"),
                        Err(_) => continue,
                    };
                    if n == 0 {
                        break;
                    }
                    io.consume(n);
                }
            }
            out
        });
        let out = timeout(Duration::from_secs(60), async {
            producer.await.unwrap();
            consumer.await.unwrap()
        })
        .await
        .expect("adapter reads hung");
        assert_eq!(out.len(), TOTAL);
        assert!(out == stream(TOTAL), "bytes differ");
    });
}

/// An async read on `IoReader` that a timeout cancelled, then the blocking
/// `std::io::Read` of the same adapter (in `spawn_blocking`, as the docs
/// say): the adapter owns its reader, so there is nobody to conflict with.
#[test]
fn io_reader_blocking_read_after_a_cancelled_async_read_is_not_a_concurrent_read() {
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let mut io = reader.into_io();
        let mut buf = [0u8; 8];
        // Nothing written yet: the async read waits and is cancelled.
        assert!(
            timeout(Duration::from_millis(20), AsyncReadExt::read(&mut io, &mut buf))
                .await
                .is_err()
        );
        writer.put_slice(b"hello").unwrap();
        writer.close();
        let result = timeout(
            LIMIT,
            tokio::task::spawn_blocking(move || {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut io, &mut out).map(|_| out)
            }),
        )
        .await
        .expect("blocking read hung")
        .unwrap();
        match result {
            Ok(out) => assert_eq!(out, b"hello"),
            Err(e) => panic!("the blocking read on the adapter's own reader failed: {e:?}"),
        }
    });
}

/// The same with `into_inner`: after a cancelled async adapter read, the
/// reader back in hand reads at once.
#[test]
fn into_inner_after_a_cancelled_async_adapter_read_reads_normally() {
    current().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let mut io = reader.into_io();
        let mut buf = [0u8; 8];
        assert!(
            timeout(Duration::from_millis(5), AsyncReadExt::read(&mut io, &mut buf)).await.is_err()
        );
        let reader = io.into_inner();
        writer.put_slice(b"abc").unwrap();
        let read = timeout(LIMIT, reader.read()).await.expect("hung").unwrap();
        assert_eq!(read.to_vec(), b"abc");
        read.consume(3).unwrap();
    });
}

/// A writer task dropped (a panic, an aborted task) without `close`: the
/// adapter's `read_to_end` gets every byte and then `BrokenPipe`, not a
/// clean end.
#[test]
fn an_aborted_writer_task_reads_as_broken_pipe_after_every_byte() {
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            writer.write_all(b"partial request").await.unwrap();
            tx.send(()).unwrap();
            std::future::pending::<()>().await; // waits for ever, holding the writer
        });
        rx.await.unwrap();
        task.abort();
        let _ = task.await;
        let mut io = reader.into_io();
        let mut out = Vec::new();
        let err = timeout(LIMIT, io.read_to_end(&mut out)).await.expect("hung").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(out, b"partial request");
    });
}

/// The reader's task goes away while the writer waits on back-pressure in
/// each of its waits: `write_all`, `flush`, `read_from_async`. Each wakes
/// with a typed error.
#[test]
fn reader_dropped_while_the_writer_waits_wakes_every_wait() {
    multi().block_on(async {
        for wait in 0..3 {
            let pool = Pool::new();
            let (mut writer, reader) = pipe(&pool, Options::new().pause_at(1024)).unwrap();
            writer.put_slice(&[1; 4096]).unwrap(); // over the threshold
            let (started, go) = tokio::sync::oneshot::channel::<()>();
            let reader_task = tokio::spawn(async move {
                let _ = go.await;
                drop(reader);
            });
            let waiting = tokio::spawn(async move {
                let result: io::Result<()> = match wait {
                    0 => writer.write_all(&[2; 100]).await,
                    1 => writer.flush().await.map_err(io::Error::from),
                    _ => {
                        let mut src: &[u8] = &[3; 100];
                        writer.read_from_async(&mut src).await.map(|_| ())
                    }
                };
                result
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "wait {wait} did not wait");
            started.send(()).unwrap();
            reader_task.await.unwrap();
            let result = timeout(LIMIT, waiting)
                .await
                .unwrap_or_else(|_| panic!("wait {wait} hung"))
                .unwrap();
            let err = result.expect_err("the reader is gone");
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "wait {wait}: {err}");
        }
    });
}

/// The runtime shuts down while a task waits in `flush` holding the
/// writer; a reader on a plain thread (blocking API) then sees the bytes
/// and a `BrokenPipe` end, and does not hang. And the other way: a task
/// waiting in `read()` dies with the runtime; the writer on a thread is
/// told the reader is gone.
#[test]
fn runtime_shutdown_while_tasks_wait_ends_the_other_side() {
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(100)).unwrap();
    let rt = multi();
    rt.spawn(async move {
        writer.put_slice(&[9; 500]).unwrap();
        writer.flush().await.unwrap(); // waits: 500 > 100, nobody reads yet
        unreachable!("nobody reads");
    });
    std::thread::sleep(Duration::from_millis(30));
    rt.shutdown_timeout(Duration::from_secs(5));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let read = reader.read_blocking().unwrap();
        let r = (read.len(), read.is_completed(), read.error().map(|e| e.kind()));
        tx.send(r).unwrap();
    });
    let (len, done, err) = rx.recv_timeout(LIMIT).expect("blocking read hung after shutdown");
    assert_eq!((len, done, err), (500, true, Some(io::ErrorKind::BrokenPipe)));

    let (mut writer, reader) = pipe(&pool, Options::new().pause_at(100)).unwrap();
    let rt = multi();
    rt.spawn(async move {
        let read = reader.read_at_least(1_000_000).await;
        drop(read);
        unreachable!();
    });
    std::thread::sleep(Duration::from_millis(30));
    drop(rt);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let put = writer.put_slice(&[1; 300]);
        let flushed = writer.flush_blocking();
        tx.send((put.map_err(|e| e.error()), flushed)).unwrap();
    });
    let (put, flushed) =
        rx.recv_timeout(LIMIT).expect("writer hung after the reader's runtime died");
    assert!(writer_saw_reader_gone(put, flushed));
}

fn writer_saw_reader_gone(put: Result<(), WriteError>, flushed: Result<(), WriteError>) -> bool {
    put == Err(WriteError::ReaderClosed) || flushed == Err(WriteError::ReaderClosed)
}

/// The blocking API in `spawn_blocking` against the async API in a task.
#[test]
fn blocking_writer_in_spawn_blocking_async_reader_in_a_task() {
    const TOTAL: usize = 1 << 20;
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let w = tokio::task::spawn_blocking(move || {
            let data = stream(TOTAL);
            for chunk in data.chunks(3000) {
                std::io::Write::write_all(&mut writer, chunk).unwrap();
            }
            writer.flush_blocking().unwrap();
            writer.close();
        });
        let r = tokio::spawn(async move {
            let mut at = 0;
            loop {
                let read = reader.read().await.unwrap();
                let v = read.to_vec();
                assert!(
                    v.iter().enumerate().all(|(i, b)| *b == byte_at(at + i)),
                    "wrong bytes at {at}"
                );
                at += v.len();
                let done = read.is_completed();
                read.consume(v.len()).unwrap();
                if done {
                    return at;
                }
            }
        });
        let got = timeout(LIMIT, async {
            w.await.unwrap();
            r.await.unwrap()
        })
        .await
        .expect("blocking/async pair hung");
        assert_eq!(got, TOTAL);
    });
}

/// Two tasks share one `Arc<Reader>` (a user's mistake): the rule says both
/// reads fail with `ConcurrentRead` and the next one works; nothing hangs.
#[test]
fn two_tasks_reading_one_reader_get_concurrent_read_and_recover() {
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        let reader: Arc<Reader> = Arc::new(reader);
        let first = tokio::spawn({
            let reader = Arc::clone(&reader);
            async move { reader.read().await.map(|g| g.len()) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = reader.read().await.map(|g| g.len());
        assert_eq!(second, Err(ReadError::ConcurrentRead));
        let first = timeout(LIMIT, first).await.expect("the pending read was not woken").unwrap();
        assert_eq!(first, Err(ReadError::ConcurrentRead));
        writer.put_slice(b"ok").unwrap();
        let read = timeout(LIMIT, reader.read()).await.expect("hung").unwrap();
        assert_eq!(read.to_vec(), b"ok");
    });
}

/// A small bounded pool shared by several connections' pipes, each with a
/// pause threshold, `keep_blocks(false)` and no thread cache: the docs say
/// the pipe's pool use is then its unread bytes, so with every reader
/// consuming all it examines, the pipes' thresholds fit in the pool and no
/// write should ever see the pool run dry.
#[test]
fn several_pipes_on_a_small_pool_within_their_thresholds_never_run_it_dry() {
    // 4 pipes x pause_at 4 KiB: at most 2 KiB-per-read write overshoot,
    // a straddled head block and the tail: 4 blocks each, 16 in the pool.
    let pool = Pool::builder()
        .block_size(4096)
        .blocks_per_slab(16)
        .max_bytes(16 * 4096)
        .thread_cache(0)
        .build()
        .unwrap();
    pipes_on_a_small_pool(pool);
}

/// The same with thread caches on and the headroom pool's README asks for
/// on tokio: one slab per thread that may return a block (2 workers and the
/// `block_on` thread): slabs of 4 blocks, 16 blocks + 3 slabs.
#[test]
fn several_pipes_on_a_pool_with_one_slab_of_headroom_per_thread_never_run_it_dry() {
    let pool = Pool::builder()
        .block_size(4096)
        .blocks_per_slab(4)
        .max_bytes((16 + 3 * 4) * 4096)
        .build()
        .unwrap();
    pipes_on_a_small_pool(pool);
}

fn pipes_on_a_small_pool(pool: Pool) {
    const PIPES: usize = 4;
    const TOTAL: usize = 500_000;
    multi().block_on(async {
        let mut tasks = Vec::new();
        for p in 0..PIPES {
            let options = Options::new().pause_at(4096).resume_at(2048).keep_blocks(false);
            let (mut writer, reader) = pipe(&pool, options).unwrap();
            tasks.push(tokio::spawn(async move {
                let data = stream(TOTAL);
                let mut sent = 0;
                while sent < TOTAL {
                    let end = (sent + 1500).min(TOTAL);
                    let mut src = &data[sent..end];
                    while !src.is_empty() {
                        let n = writer
                            .read_from_async(&mut src)
                            .await
                            .unwrap_or_else(|e| panic!("pipe {p} at {sent}: {e}"));
                        sent += n;
                    }
                }
                writer.close();
                Ok::<usize, String>(sent)
            }));
            tasks.push(tokio::spawn(async move {
                let mut at = 0;
                loop {
                    let read = reader.read().await.unwrap();
                    let len = read.len();
                    let done = read.is_completed();
                    read.consume(len).unwrap();
                    at += len;
                    if done {
                        return Ok(at);
                    }
                }
            }));
        }
        let results = timeout(Duration::from_secs(60), async {
            let mut r = Vec::new();
            for t in tasks {
                r.push(t.await);
            }
            r
        })
        .await
        .expect("pipes on a small pool hung");
        for r in results {
            match r {
                Ok(Ok(n)) => assert_eq!(n, TOTAL),
                Ok(Err(e)) => panic!("{e}"),
                Err(join) => panic!("a task failed: {join}"),
            }
        }
        assert_eq!(pool.stats().leased, 0, "every block back");
    });
}

/// The pool runs dry while async writes are in flight: the write that
/// cannot get a block fails (typed `OutOfMemory`), bytes already written
/// stay readable, and once the reader frees blocks the writer goes on.
#[test]
fn pool_running_dry_under_async_writes_is_typed_and_recoverable() {
    current().block_on(async {
        let pool = Pool::builder()
            .block_size(1024)
            .blocks_per_slab(4)
            .max_bytes(4 * 1024)
            .thread_cache(0)
            .build()
            .unwrap();
        let (mut writer, reader) =
            pipe(&pool, Options::new().without_back_pressure().keep_blocks(false)).unwrap();
        let data = stream(10_000);
        let mut sent = 0;
        let err = loop {
            match timeout(LIMIT, writer.write(&data[sent..])).await.expect("write hung") {
                Ok(n) => sent += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(sent, 4096);
        let read = reader.try_read().unwrap().unwrap();
        assert_eq!(read.to_vec(), data[..4096]);
        read.consume(4096).unwrap();
        // The blocks are back: the rest goes in.
        while sent < data.len() {
            let n = timeout(LIMIT, writer.write(&data[sent..(sent + 1000).min(data.len())]))
                .await
                .expect("write hung")
                .unwrap();
            sent += n;
            let read = reader.try_read().unwrap().unwrap();
            let len = read.len();
            read.consume(len).unwrap();
        }
    });
}

/// `AsyncWriteExt::shutdown` and then each write path: typed errors, never
/// a panic; the reader sees a clean end.
#[test]
fn every_write_path_after_shutdown_is_an_error_not_a_panic() {
    current().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        writer.write_all(b"abc").await.unwrap();
        writer.shutdown().await.unwrap();
        let mut src: &[u8] = b"more";
        let e = writer.read_from_async(&mut src).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(src, b"more", "nothing taken from the source");
        assert_eq!(writer.put_slice(b"x").unwrap_err().error(), WriteError::Closed);
        assert_eq!(writer.write(b"x").await.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        writer.shutdown().await.unwrap();
        writer.close();
        let mut out = Vec::new();
        reader.into_io().read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"abc");
    });
}

/// A `ReadGuard` held across an `.await` in a spawned task on a multi-
/// thread runtime (it is `Send`), and `bytes()` frames kept past the pipe.
#[test]
fn read_guard_across_await_and_bytes_outliving_the_pipe_on_other_threads() {
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
        writer.put_slice(b"\x00\x05hello\x00\x05world").unwrap();
        writer.close();
        let frames = tokio::spawn(async move {
            let mut read = reader.read().await.unwrap();
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
            let a = read.bytes(2..7).unwrap();
            let b = read.bytes(9..14).unwrap();
            read.consume(14).unwrap();
            drop(reader);
            (a, b)
        })
        .await
        .unwrap();
        let (a, b) = tokio::spawn(async move { frames }).await.unwrap();
        assert_eq!((&a[..], &b[..]), (&b"hello"[..], &b"world"[..]));
        drop((a, b));
        assert_eq!(pool.stats().leased, 0);
    });
}

/// After the failure above, is the adapter usable for blocking reads at
/// all? Retry the blocking read a few times: the pipe's rule promises that
/// "once no read is outstanding the next read works normally".
#[test]
fn io_reader_blocking_reads_keep_failing_after_one_cancelled_async_read() {
    let rt = current();
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let mut io = reader.into_io();
    rt.block_on(async {
        let mut buf = [0u8; 8];
        assert!(
            timeout(Duration::from_millis(5), AsyncReadExt::read(&mut io, &mut buf)).await.is_err()
        );
    });
    drop(rt);
    writer.put_slice(b"hello").unwrap();
    writer.close();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut errors = Vec::new();
        for _ in 0..5 {
            let mut buf = [0u8; 8];
            match std::io::Read::read(&mut io, &mut buf) {
                Ok(n) => {
                    tx.send((errors, Some(buf[..n].to_vec()))).unwrap();
                    return;
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        tx.send((errors, None)).unwrap();
    });
    let (errors, got) = rx.recv_timeout(LIMIT).expect("blocking read hung");
    assert_eq!(got.as_deref(), Some(&b"hello"[..]), "5 blocking reads all failed: {errors:?}");
    assert!(errors.is_empty(), "blocking reads failed first: {errors:?}");
}

/// `read_at_least(n)` with `n` far above the pause threshold, the writer on
/// the tokio paths (`write_all` through `AsyncWrite`, and `read_from_async`
/// from a socket-like source), which keep their own pause hysteresis: "`n`
/// above the threshold cannot deadlock".
#[test]
fn read_at_least_above_the_threshold_with_async_write_and_read_from_async() {
    const N: usize = 300_000;
    for path in 0..2 {
        multi().block_on(async {
            let pool = Pool::new();
            let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
            let producer = tokio::spawn(async move {
                let data = stream(N);
                if path == 0 {
                    writer.write_all(&data).await.unwrap();
                } else {
                    let (mut tx, mut rx) = tokio::io::duplex(16 * 1024);
                    let feed = tokio::spawn(async move {
                        tx.write_all(&data).await.unwrap();
                    });
                    let mut got = 0;
                    while got < N {
                        got += writer.read_from_async(&mut rx).await.unwrap();
                    }
                    feed.await.unwrap();
                }
                writer // kept open: only read_at_least's loan lets it finish
            });
            let read = timeout(LIMIT, reader.read_at_least(N))
                .await
                .unwrap_or_else(|_| panic!("path {path}: read_at_least({N}) deadlocked"))
                .unwrap();
            assert_eq!(read.len(), N);
            assert!(read.to_vec() == stream(N));
            read.consume(N).unwrap();
            let writer = timeout(LIMIT, producer).await.expect("producer hung").unwrap();
            writer.close();
        });
    }
}

/// `Options::keep_blocks(false)`: pool use is the unread bytes' blocks,
/// the one the writer fills, and the reader's last until it reads past it.
/// A keep-alive connection whose requests were read in full, and whose
/// transport task waits in `read_from_async` for the next, holds one block,
/// or two where that wait began a fresh block (the tail had less than the
/// minimum read space left) before the reader left the old one; request
/// after request across many blocks, never more, and `trim` has nothing to
/// give (an outside review read the docs' earlier "the unread bytes at
/// every moment" as none: the docs now say this).
#[test]
fn an_idle_connection_with_keep_blocks_false_holds_at_most_two_blocks() {
    current().block_on(async {
        let pool = Pool::builder().thread_cache(0).build().unwrap();
        let (mut writer, reader) = pipe(&pool, Options::new().keep_blocks(false)).unwrap();
        let (mut client, mut socket) = tokio::io::duplex(4096);
        let mut idle_with_two = 0;
        for request in 0..1000 {
            client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
            assert_eq!(writer.read_from_async(&mut socket).await.unwrap(), 18);
            let read = reader.read().await.unwrap();
            read.consume(18).unwrap();
            // Idle: the transport waits for the next request.
            assert!(
                timeout(Duration::from_millis(1), writer.read_from_async(&mut socket))
                    .await
                    .is_err()
            );
            let leased = pool.stats().leased;
            assert!((1..=2).contains(&leased), "request {request}: {leased} blocks leased");
            idle_with_two += usize::from(leased == 2);
            assert_eq!(writer.trim(), 0, "request {request}");
            assert_eq!(pool.stats().leased, leased, "request {request}");
        }
        // 18,000 bytes went through about five 4 KiB blocks: each move to a
        // fresh block left one idle moment with two.
        assert!((3..=6).contains(&idle_with_two), "{idle_with_two} idle moments with two");
        writer.close();
        drop(reader);
        assert_eq!(pool.stats().leased, 0, "closed and dropped: every block back");
    });
}

/// `Readable` (the owned wait for an `Arc<Reader>`) in a `select!` loop with
/// a ticking timer on a multi-thread runtime, then `try_read`: every byte
/// arrives once, in order, and a cancelled `Readable` leaves nothing behind.
#[test]
fn readable_in_a_select_loop_with_a_ticker_moves_every_byte() {
    const TOTAL: usize = 300_000;
    multi().block_on(async {
        let pool = Pool::new();
        let (mut writer, reader) = pipe(&pool, Options::new().pause_at(5000)).unwrap();
        let reader = Arc::new(reader);
        let producer = tokio::spawn(async move {
            let data = stream(TOTAL);
            for chunk in data.chunks(999) {
                writer.write_all(chunk).await.unwrap();
            }
            writer.close();
        });
        let consumer = tokio::spawn({
            let reader = Arc::clone(&reader);
            async move {
                let mut ticker = tokio::time::interval(Duration::from_micros(100));
                let mut at = 0usize;
                let mut ticks = 0u64;
                loop {
                    tokio::select! {
                        r = falconet_pipe::Readable::new(&reader) => r.unwrap(),
                        _ = ticker.tick() => { ticks += 1; continue; }
                    }
                    let Some(read) = reader.try_read().unwrap() else {
                        panic!("Readable said ready, try_read found nothing at {at}");
                    };
                    let v = read.to_vec();
                    assert!(
                        v.iter().enumerate().all(|(i, b)| *b == byte_at(at + i)),
                        "wrong bytes at {at}"
                    );
                    at += v.len();
                    let done = read.is_completed();
                    read.consume(v.len()).unwrap();
                    if done {
                        return (at, ticks);
                    }
                }
            }
        });
        let (got, _ticks) = timeout(LIMIT, async {
            producer.await.unwrap();
            consumer.await.unwrap()
        })
        .await
        .expect("Readable loop hung");
        assert_eq!(got, TOTAL);
    });
}
