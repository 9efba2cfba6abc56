//! A tokio server of length-prefixed frames on falconet's primitives, which
//! drives itself and checks every byte.
//!
//! ```text
//! cargo run --release --example tokio_frames            # serve, test, summarise, exit 0
//! cargo run --release --example tokio_frames -- serve   # serve on 127.0.0.1:7000 until Ctrl-C
//! ```
//!
//! A frame is a 4-byte big-endian length and that many bytes; the server
//! echoes each frame back. What each primitive does here:
//!
//! - **falconet-pool**: every byte read from a socket lands in a pool block.
//! - **falconet-pipe**: per connection, the socket task reads the tokio
//!   `TcpStream` straight into the pipe (`read_from_async`, back-pressured:
//!   the socket is not read while 64 KiB wait to be parsed), and the parser
//!   task takes each frame out as a `Bytes` that shares the pool block
//!   (`ReadGuard::bytes`: no copy when the frame lies in one block).
//! - **falconet-registry**: the connection table. An accepted connection
//!   gets its id before its state exists (`vacant_entry`); a sweep every
//!   100 ms removes connections that neither read nor wrote for 1 s, and the removal closes the
//!   connection's task: the entry's value holds a oneshot sender whose drop
//!   the task awaits (a registry has no poll token to deregister here).
//! - **falconet-flow**: a receive window per connection counts payload
//!   parsed but not yet echoed (`try_advance`), and echoing gives it back
//!   (`release`), announcing credit past half the window, as HTTP/2 would
//!   send WINDOW_UPDATE. A client that runs ahead of the window is refused.
//!
//! Run without arguments, it serves on a free loopback port, then drives
//! itself: thousands of pipelined frames written in random splits and
//! checked byte for byte, an idle connection that the sweep closes, and an
//! oversized frame that is refused. It prints a summary and exits 0, or
//! panics on the first wrong byte.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use falconet::flow::{InputWindow, Release};
use falconet::pipe::{Options, pipe};
use falconet::pool::Pool;
use falconet::registry::{ConnectionId, Registry};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The largest payload a frame may carry; a longer one closes the
/// connection.
const MAX_FRAME: usize = 64 * 1024;
/// Payload a connection may have parsed and not yet echoed.
const WINDOW: u32 = 1 << 20;
/// A connection silent this long is swept.
const IDLE: Duration = Duration::from_secs(1);
/// How often the sweep runs.
const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// A connection's entry in the registry.
struct Connection {
    /// Milliseconds since the server started, at the last socket read or
    /// echo written.
    last_active: AtomicU64,
    /// Dropped when the entry is removed (by the sweep, or the connection's
    /// own end): the task awaiting the receiver closes the connection.
    _closer: oneshot::Sender<()>,
}

/// What the whole server did, for the summary.
#[derive(Default)]
struct Stats {
    frames: AtomicU64,
    payload: AtomicU64,
    shared_frames: AtomicU64,
    window_updates: AtomicU64,
    swept: AtomicU64,
    refused: AtomicU64,
}

struct Server {
    pool: Pool,
    registry: Registry<Connection>,
    started: Instant,
    stats: Stats,
}

impl Server {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let serve_only = std::env::args().nth(1).as_deref() == Some("serve");
    let addr = if serve_only { "127.0.0.1:7000" } else { "127.0.0.1:0" };
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let server = Arc::new(Server {
        pool: Pool::new(),
        registry: Registry::new(),
        started: Instant::now(),
        stats: Stats::default(),
    });
    tokio::spawn(accept(listener, Arc::clone(&server)));
    tokio::spawn(sweep(Arc::clone(&server)));
    if serve_only {
        println!("serving frames on {addr} (Ctrl-C stops)");
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }

    let began = Instant::now();
    let (pipelined, idle, oversized) =
        tokio::join!(pipelined_frames(addr, 4000, 7), idle_connection(addr), oversized_frame(addr));
    let (frames, bytes) = pipelined?;
    idle?;
    oversized?;
    // Every connection has ended: the table is empty again.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.registry.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(server.registry.is_empty(), "{} connections left", server.registry.len());

    let stats = &server.stats;
    let pool = server.pool.stats();
    println!("tokio_frames: all checks passed in {:.2?}", began.elapsed());
    println!("  client: {frames} frames, {bytes} payload bytes echoed and checked byte for byte");
    println!(
        "  server: {} frames, {} payload bytes; {} frames handed out without a copy (ReadGuard::bytes)",
        stats.frames.load(Ordering::Relaxed),
        stats.payload.load(Ordering::Relaxed),
        stats.shared_frames.load(Ordering::Relaxed),
    );
    println!(
        "  flow: {} credit announcements of a {} KiB window",
        stats.window_updates.load(Ordering::Relaxed),
        WINDOW / 1024
    );
    println!(
        "  registry: {} connection(s) swept idle, {} refused an oversized frame, 0 left",
        stats.swept.load(Ordering::Relaxed),
        stats.refused.load(Ordering::Relaxed),
    );
    println!(
        "  pool: {} blocks leased now, {} KiB in {} slabs",
        pool.leased,
        pool.bytes() / 1024,
        pool.slabs
    );
    assert_eq!(stats.swept.load(Ordering::Relaxed), 1, "the idle connection, and only it");
    assert_eq!(stats.refused.load(Ordering::Relaxed), 1);
    assert_eq!(pool.leased, 0, "every block went back");
    Ok(())
}

/// Accepts connections: each gets its id first, then its entry, then a task.
async fn accept(listener: TcpListener, server: Arc<Server>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else { continue };
        let entry = match server.registry.vacant_entry() {
            Ok(entry) => entry,
            // Full: refuse by dropping the socket (it closes).
            Err(_) => continue,
        };
        let id = entry.id();
        let (closer, closed) = oneshot::channel();
        entry.insert(Connection { last_active: AtomicU64::new(server.now_ms()), _closer: closer });
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            tokio::select! {
                result = serve(socket, id, &server) => {
                    if let Err(error) = result {
                        eprintln!("connection {}: {error}", id.as_u64());
                    }
                }
                // The entry was removed (swept): close the connection.
                _ = closed => {}
            }
            // A no-op when the sweep removed it already.
            server.registry.remove(id);
        });
    }
}

/// Removes connections idle for [`IDLE`]; dropping their values closes them.
async fn sweep(server: Arc<Server>) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let now = server.now_ms();
        let swept = server.registry.sweep(|_, connection| {
            now.saturating_sub(connection.last_active.load(Ordering::Relaxed))
                < IDLE.as_millis() as u64
        });
        server.stats.swept.fetch_add(swept as u64, Ordering::Relaxed);
    }
}

/// One connection: the socket side feeds the pipe, the parser side echoes
/// frames, both in this task.
async fn serve(socket: TcpStream, id: ConnectionId, server: &Server) -> std::io::Result<()> {
    let (mut socket_in, mut socket_out) = socket.into_split();
    let (mut writer, reader) = pipe(&server.pool, Options::new()).map_err(std::io::Error::other)?;
    let window = InputWindow::new(WINDOW).map_err(std::io::Error::other)?;

    let transport = async {
        while writer.read_from_async(&mut socket_in).await? > 0 {
            if let Some(connection) = server.registry.get(id) {
                connection.last_active.store(server.now_ms(), Ordering::Relaxed);
            }
        }
        writer.close();
        Ok::<(), std::io::Error>(())
    };

    let parser = async {
        let mut frames: Vec<Bytes> = Vec::new();
        loop {
            let mut read = reader.read().await.map_err(std::io::Error::other)?;
            let (len, completed) = (read.len(), read.is_completed());
            let mut at = 0;
            while let Some(header) = read.bytes(at..at + 4) {
                let size = u32::from_be_bytes(header[..].try_into().expect("4 bytes")) as usize;
                if size > MAX_FRAME {
                    server.stats.refused.fetch_add(1, Ordering::Relaxed);
                    return Ok::<(), std::io::Error>(());
                }
                let Some(payload) = read.bytes(at + 4..at + 4 + size) else { break };
                // Parsed, not yet echoed: counted against the window.
                window.try_advance(size as u32).map_err(std::io::Error::other)?;
                let shared = payload.is_empty() || is_in_pool_block(&read, at + 4, size);
                server.stats.shared_frames.fetch_add(u64::from(shared), Ordering::Relaxed);
                frames.push(payload);
                at += 4 + size;
            }
            read.advance_to(at, len).map_err(std::io::Error::other)?;
            for frame in frames.drain(..) {
                socket_out.write_all(&(frame.len() as u32).to_be_bytes()).await?;
                socket_out.write_all(&frame).await?;
                server.stats.frames.fetch_add(1, Ordering::Relaxed);
                if let Some(connection) = server.registry.get(id) {
                    connection.last_active.store(server.now_ms(), Ordering::Relaxed);
                }
                server.stats.payload.fetch_add(frame.len() as u64, Ordering::Relaxed);
                if let Release::Update(_) =
                    window.release(frame.len() as u32).map_err(std::io::Error::other)?
                {
                    server.stats.window_updates.fetch_add(1, Ordering::Relaxed);
                }
            }
            if completed {
                return Ok(());
            }
        }
    };
    // The parser's end (after the client's end of stream, or a refusal)
    // ends the connection; the transport's end only ends the input, and its
    // error ends everything.
    {
        tokio::pin!(transport, parser);
        let mut input_open = true;
        loop {
            tokio::select! {
                result = &mut parser => break result?,
                result = &mut transport, if input_open => {
                    result?;
                    input_open = false;
                }
            }
        }
    }
    socket_out.shutdown().await
}

/// Whether `size` bytes at `at` lie in one block of the read (then
/// `ReadGuard::bytes` shared the block instead of copying).
fn is_in_pool_block(read: &falconet::pipe::ReadGuard<'_>, at: usize, size: usize) -> bool {
    let mut start = 0;
    for chunk in read.chunks() {
        let end = start + chunk.len();
        if at >= start && at + size <= end {
            return true;
        }
        start = end;
    }
    false
}

/// A small deterministic generator (xorshift), so runs are reproducible.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The byte at position `i` of frame `frame`.
fn pattern(frame: usize, i: usize) -> u8 {
    (frame.wrapping_mul(31) ^ i.wrapping_mul(7)) as u8
}

/// Writes `count` frames of random sizes (0 to 4 KiB) in random splits,
/// without waiting for echoes, while reading the echoes and checking each
/// byte against what was sent. Returns the frames and payload bytes checked.
async fn pipelined_frames(
    addr: std::net::SocketAddr,
    count: usize,
    seed: u64,
) -> std::io::Result<(usize, usize)> {
    let stream = TcpStream::connect(addr).await?;
    let (mut from_server, mut to_server) = stream.into_split();
    let mut random = Random(seed);
    let sizes: Vec<usize> = (0..count).map(|_| random.below(4097)).collect();
    let mut wire = Vec::new();
    for (frame, &size) in sizes.iter().enumerate() {
        wire.extend_from_slice(&(size as u32).to_be_bytes());
        wire.extend((0..size).map(|i| pattern(frame, i)));
    }
    // The echo is the same byte stream: frames in order, lengths and all.
    let expected = wire.clone();
    let send = async move {
        let mut rest = &wire[..];
        while !rest.is_empty() {
            let n = (1 + random.below(3000)).min(rest.len());
            to_server.write_all(&rest[..n]).await?;
            rest = &rest[n..];
        }
        to_server.shutdown().await
    };
    let receive = async {
        let mut at = 0;
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = from_server.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            assert!(
                at + n <= expected.len(),
                "{} bytes past the last echo",
                at + n - expected.len()
            );
            if buf[..n] != expected[at..at + n] {
                let wrong =
                    at + buf[..n].iter().zip(&expected[at..]).position(|(a, b)| a != b).unwrap();
                panic!("echo byte {wrong} differs (frame {})", frame_at(&sizes, wrong));
            }
            at += n;
        }
        assert_eq!(at, expected.len(), "the echo ended early");
        Ok::<usize, std::io::Error>(sizes.iter().sum())
    };
    let (sent, received) = tokio::join!(send, receive);
    sent?;
    Ok((count, received?))
}

/// The frame that byte `at` of the stream belongs to.
fn frame_at(sizes: &[usize], at: usize) -> usize {
    let mut end = 0;
    sizes
        .iter()
        .position(|size| {
            end += 4 + size;
            at < end
        })
        .unwrap_or(sizes.len())
}

/// Sends one frame, gets its echo, then goes silent: the sweep must close
/// the connection within a few sweep periods past [`IDLE`].
async fn idle_connection(addr: std::net::SocketAddr) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(&[0, 0, 0, 2, b'h', b'i']).await?;
    let mut echo = [0; 6];
    stream.read_exact(&mut echo).await?;
    assert_eq!(&echo, &[0, 0, 0, 2, b'h', b'i']);
    // (That it is not closed early shows in the busy connection, which must
    // survive every sweep: the server counts exactly one swept.)
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(IDLE * 10, stream.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0))), "the idle connection was not closed: {closed:?}");
    Ok(())
}

/// A frame longer than [`MAX_FRAME`]: the server closes without an echo.
async fn oversized_frame(addr: std::net::SocketAddr) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(&(MAX_FRAME as u32 + 1).to_be_bytes()).await?;
    let mut rest = Vec::new();
    let answered =
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(matches!(answered, Ok(Ok(0))), "an oversized frame was not refused: {answered:?}");
    Ok(())
}
