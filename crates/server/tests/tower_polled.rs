//! Response bodies the worker polls (the tower path), at their edges: order behind them, framing of HEAD/204/304/1.0, wake-ups from other threads, huge frames, a drained request body, timeouts, shutdown and drops. Written by an adversarial review of the change; each failure it found is a test here.
#![cfg(feature = "tower")]

mod common;

use std::convert::Infallible;
use std::future::Future as _;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body as AxumBody;
use axum::http::{StatusCode, header};
use axum::routing::{get, post};
use bytes::Bytes;
use common::{Client, options, serve};
use falconet_server::Options;
use falconet_server::tower::TowerHandler;
use http_body::Frame;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// `wait` once (a tokio sleep), then `frames` frames of `size` bytes, all
/// ready back to back, then the end.
struct Burst {
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    frames: usize,
    size: usize,
}

impl Burst {
    fn new(wait_ms: u64, frames: usize, size: usize) -> Self {
        Self {
            wait: Some(Box::pin(tokio::time::sleep(Duration::from_millis(wait_ms)))),
            frames,
            size,
        }
    }
}

impl http_body::Body for Burst {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(wait) = &mut self.wait {
            std::task::ready!(wait.as_mut().poll(cx));
            self.wait = None;
        }
        if self.frames == 0 {
            return Poll::Ready(None);
        }
        self.frames -= 1;
        let n = self.frames as u8;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'a' + n % 26; self.size])))))
    }
}

/// Timed frames: `frames` frames of `size` bytes, each after a sleep.
struct Timed {
    frames: usize,
    size: usize,
    every: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl http_body::Body for Timed {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let every = self.every;
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
        std::task::ready!(sleep.as_mut().poll(cx));
        self.sleep = None;
        if self.frames == 0 {
            return Poll::Ready(None);
        }
        self.frames -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; self.size])))))
    }
}

fn timed(frames: usize, size: usize, ms: u64) -> AxumBody {
    AxumBody::new(Timed { frames, size, every: Duration::from_millis(ms), sleep: None })
}

/// Pending (woken at once), then one frame of `size` bytes.
struct Huge {
    paused: bool,
    size: usize,
}

impl http_body::Body for Huge {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if !self.paused {
            self.paused = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if self.size == 0 {
            return Poll::Ready(None);
        }
        let size = std::mem::take(&mut self.size);
        let data: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(data)))))
    }
}

/// A script of steps: Pending (woken at once), empty frames, data, trailers.
#[derive(Clone, Copy)]
enum S {
    Wait,
    Empty,
    Data(&'static [u8]),
    Trailers,
}

struct Script(Vec<S>);

impl http_body::Body for Script {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.0.is_empty() {
            return Poll::Ready(None);
        }
        match self.0.remove(0) {
            S::Wait => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            S::Empty => Poll::Ready(Some(Ok(Frame::data(Bytes::new())))),
            S::Data(d) => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(d))))),
            S::Trailers => {
                let mut map = http::HeaderMap::new();
                map.insert("x-t", http::HeaderValue::from_static("1"));
                Poll::Ready(Some(Ok(Frame::trailers(map))))
            }
        }
    }
}

static DROPS: AtomicUsize = AtomicUsize::new(0);

/// A body whose Drop panics (after one wait).
struct PanicOnDrop {
    waited: bool,
}

impl http_body::Body for PanicOnDrop {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if !self.waited {
            self.waited = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(None)
    }
}

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
        panic!("the body panicked in drop");
    }
}

/// Pending forever (never woken); its Drop needs the tokio runtime
/// (spawns a clean-up task), or panics.
struct NeedsRuntimeOnDrop {
    panic: bool,
}

static CLEANUPS: AtomicUsize = AtomicUsize::new(0);

impl http_body::Body for NeedsRuntimeOnDrop {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Pending
    }
}

impl Drop for NeedsRuntimeOnDrop {
    fn drop(&mut self) {
        if self.panic {
            panic!("the body panicked in drop");
        }
        tokio::spawn(async {
            CLEANUPS.fetch_add(1, Ordering::SeqCst);
        });
    }
}

fn app() -> Router {
    Router::new()
        .route(
            "/spawn-on-drop",
            get(|| async { AxumBody::new(NeedsRuntimeOnDrop { panic: false }) }),
        )
        .route(
            "/panic-on-drop-pending",
            get(|| async { AxumBody::new(NeedsRuntimeOnDrop { panic: true }) }),
        )
        .route(
            "/never",
            get(|| async {
                AxumBody::new(Timed {
                    frames: 1,
                    size: 1,
                    every: Duration::from_secs(3600),
                    sleep: None,
                })
            }),
        )
        .route("/plaintext", get(|| async { "Hello, World!" }))
        .route("/timed", get(|| async { timed(3, 4, 30) }))
        .route("/slow", get(|| async { timed(3, 4, 300) }))
        .route("/burst", get(|| async { AxumBody::new(Burst::new(20, 5, 100_000)) }))
        .route("/ignore-burst", post(|| async { AxumBody::new(Burst::new(20, 5, 100_000)) }))
        .route("/ignore-timed", post(|| async { timed(3, 4, 30) }))
        .route("/s204", get(|| async { (StatusCode::NO_CONTENT, timed(2, 4, 10)) }))
        .route("/s304", get(|| async { (StatusCode::NOT_MODIFIED, timed(2, 4, 10)) }))
        .route(
            "/close-stream",
            get(|| async { ([(header::CONNECTION, "close")], timed(2, 4, 10)) }),
        )
        .route(
            "/echo",
            post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
        )
        .route(
            "/mpsc",
            get(|| async {
                let (tx, body) = channel();
                tokio::spawn(async move {
                    for i in 0..200u32 {
                        if i % 7 == 0 {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        tx.send(Bytes::from(format!("{i},")));
                    }
                });
                AxumBody::new(body)
            }),
        )
        .route(
            "/thread-oneshot",
            get(|| async {
                let (tx, body) = channel();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(50));
                    tx.send(Bytes::from_static(b"from a thread"));
                });
                AxumBody::new(body)
            }),
        )
        .route("/huge", get(|| async { AxumBody::new(Huge { paused: false, size: 64 << 20 }) }))
        .route(
            "/script",
            get(|| async {
                AxumBody::new(Script(vec![
                    S::Wait,
                    S::Empty,
                    S::Data(b"a"),
                    S::Empty,
                    S::Wait,
                    S::Empty,
                    S::Data(b"b"),
                    S::Trailers,
                ]))
            }),
        )
        .route(
            "/empty-stream",
            get(|| async { AxumBody::new(Script(vec![S::Wait, S::Empty, S::Wait])) }),
        )
        .route("/panic-drop", get(|| async { AxumBody::new(PanicOnDrop { waited: false }) }))
}

#[derive(Default)]
struct Chan {
    queue: std::collections::VecDeque<Bytes>,
    done: bool,
    waker: Option<std::task::Waker>,
}

/// A channel body fed from anywhere; the sender's drop ends it.
struct Tx(std::sync::Arc<std::sync::Mutex<Chan>>);
struct Rx(std::sync::Arc<std::sync::Mutex<Chan>>);

fn channel() -> (Tx, Rx) {
    let chan = std::sync::Arc::new(std::sync::Mutex::new(Chan::default()));
    (Tx(chan.clone()), Rx(chan))
}

impl Tx {
    fn send(&self, data: Bytes) {
        let waker = {
            let mut chan = self.0.lock().unwrap();
            chan.queue.push_back(data);
            chan.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        let waker = {
            let mut chan = self.0.lock().unwrap();
            chan.done = true;
            chan.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl http_body::Body for Rx {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let mut chan = self.0.lock().unwrap();
        if let Some(data) = chan.queue.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if chan.done {
            return Poll::Ready(None);
        }
        chan.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn server_with(
    options: Options,
) -> (tokio::runtime::Runtime, common::TestServer<TowerHandler<Router>>) {
    let runtime = runtime();
    let server = serve(options, TowerHandler::new(app(), runtime.handle().clone()));
    (runtime, server)
}

fn server() -> (tokio::runtime::Runtime, common::TestServer<TowerHandler<Router>>) {
    server_with(options().workers(1))
}

fn short(client: &Client, secs: u64) {
    client.stream().set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
}

// ---------------------------------------------------------------- wake-ups

#[test]
fn burst_without_request_body_is_complete() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    let reply = client.get("/burst");
    assert_eq!(reply.body.len(), 500_000);
}

/// The service ignores the request body, which has not all arrived; its
/// response body is Pending once, then its frames are ready back to back.
/// After the first frame is staged and written, nothing polls the body again.
#[test]
fn ready_frames_after_a_staged_one_while_the_request_body_is_drained() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    // 20 bytes announced, 10 sent: the client waits for the answer first.
    client.send(b"POST /ignore-burst HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n0123456789");
    let started = Instant::now();
    let reply = client.reply();
    let reply =
        reply.unwrap_or_else(|e| panic!("no complete reply after {:?}: {e}", started.elapsed()));
    assert_eq!(reply.body.len(), 500_000);
}

#[test]
fn frames_from_a_spawned_task_through_mpsc() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    for _ in 0..5 {
        let reply = client.get("/mpsc");
        let expected: String = (0..200).map(|i| format!("{i},")).collect();
        assert_eq!(reply.text(), expected);
    }
}

#[test]
fn a_frame_woken_from_a_std_thread() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    let reply = client.get("/thread-oneshot");
    assert_eq!(reply.text(), "from a thread");
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

// ---------------------------------------------------------------- ordering

#[test]
fn pipelined_behind_polled_streams_head_204_304() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(
        b"GET /timed HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n\
          HEAD /timed HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /s204 HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /s304 HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /script HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /empty-stream HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = client.reply().unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "xxxxxxxxxxxx"));
    assert_eq!(client.reply().unwrap().text(), "Hello, World!");
    let r = client.reply_to(true).unwrap();
    assert_eq!(r.status, 200);
    let r = client.reply().unwrap();
    assert_eq!(r.status, 204);
    assert_eq!(r.header("transfer-encoding"), None, "{r:?}");
    assert_eq!(r.header("content-length"), None, "{r:?}");
    let r = client.reply().unwrap();
    assert_eq!(r.status, 304);
    assert_eq!(r.header("transfer-encoding"), None, "{r:?}");
    let r = client.reply().unwrap();
    assert_eq!(r.text(), "ab", "{r:?}");
    let r = client.reply().unwrap();
    assert_eq!(r.text(), "", "{r:?}");
    assert_eq!(client.reply().unwrap().text(), "Hello, World!");
}

#[test]
fn connection_close_from_the_service_on_a_polled_stream() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(
        b"GET /close-stream HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = client.reply().unwrap();
    assert_eq!(r.text(), "xxxxxxxx");
    assert!(r.closes(), "{r:?}");
    client.expect_closed();
}

#[test]
fn http10_huge_frame_close_delimited_and_http11_huge_frame() {
    let (_rt, server) = server();
    for version in ["1.1", "1.0"] {
        let mut client = Client::connect(server.addr);
        short(&client, 20);
        client.send(format!("GET /huge HTTP/{version}\r\nHost: t\r\n\r\n").as_bytes());
        // Read slowly at first: partial writes of the staged frame.
        thread::sleep(Duration::from_millis(200));
        let r = client.reply().unwrap();
        assert_eq!(r.body.len(), 64 << 20, "{version}");
        let wrong = r.body.iter().enumerate().position(|(i, &b)| b != (i % 253) as u8);
        assert_eq!(wrong, None, "{version}");
        if version == "1.1" {
            assert_eq!(client.get("/plaintext").text(), "Hello, World!");
        }
    }
}

// ---------------------------------------------------------------- drain error

/// Ignored chunked request body that turns out malformed while a polled
/// response streams: the drain's 400 must not land inside the stream.
#[test]
fn malformed_drained_body_during_a_polled_stream() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(b"POST /ignore-timed HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    thread::sleep(Duration::from_millis(45));
    client.send(b"zz\r\nbad\r\n");
    let bytes = client.read_to_end().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "two status lines on one exchange: {text:?}");
}

// ---------------------------------------------------------------- echo

#[test]
fn echo_chunked_with_trailers_then_pipelined() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n\
          GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(client.reply().unwrap().text(), "hello world");
    assert_eq!(client.reply().unwrap().text(), "Hello, World!");
}

#[test]
fn echo_client_resets_mid_body_server_survives() {
    let (_rt, server) = server();
    for _ in 0..3 {
        let stream = std::net::TcpStream::connect(server.addr).unwrap();
        let mut w = stream.try_clone().unwrap();
        w.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n").unwrap();
        w.write_all(&vec![1u8; 600_000]).unwrap();
        thread::sleep(Duration::from_millis(50));
        // A reset, not a clean close: linger 0.
        socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)).unwrap();
        drop(w);
        drop(stream);
    }
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
    // An echo across the 256 KiB pause with the client reading as it sends.
    let stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut w = stream.try_clone().unwrap();
    let len = 3_000_001usize;
    let producer = thread::spawn(move || {
        write!(w, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n").unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i % 241) as u8).collect();
        for piece in data.chunks(333_333) {
            w.write_all(piece).unwrap();
            thread::sleep(Duration::from_millis(5));
        }
    });
    let mut c = Client { reader: std::io::BufReader::new(stream) };
    let r = c.reply().unwrap();
    producer.join().unwrap();
    assert_eq!(r.body.len(), len);
    assert!(r.body.iter().enumerate().all(|(i, &b)| b == (i % 241) as u8));
}

// ---------------------------------------------------------------- timeouts, shutdown

#[test]
fn io_timeout_with_a_staged_frame_closes() {
    let (_rt, server) = server_with(options().workers(1).io_timeout(Duration::from_millis(500)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /huge HTTP/1.1\r\nHost: t\r\n\r\n");
    thread::sleep(Duration::from_secs(3));
    short(&client, 5);
    let started = Instant::now();
    let mut sink = Vec::new();
    let result = client.reader.read_to_end(&mut sink);
    assert!(
        result.is_ok()
            || result.as_ref().unwrap_err().kind() == std::io::ErrorKind::ConnectionReset,
        "not closed: {result:?} after {:?}, {} bytes",
        started.elapsed(),
        sink.len()
    );
    assert!(sink.len() < 64 << 20, "the whole response went out after the timeout");
}

#[test]
fn graceful_shutdown_waits_for_a_polled_body() {
    let (_rt, server) = server_with(options().workers(1).shutdown_timeout(Duration::from_secs(5)));
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    thread::sleep(Duration::from_millis(100));
    let handle = server.handle().clone();
    handle.shutdown();
    let r = client.reply().unwrap();
    assert_eq!(r.text(), "xxxxxxxxxxxx");
    server.join().unwrap();
}

#[test]
fn a_body_that_panics_in_drop_does_not_take_the_worker_down() {
    let (_rt, server) = server();
    for _ in 0..2 {
        let mut client = Client::connect(server.addr);
        short(&client, 3);
        client.send(b"GET /panic-drop HTTP/1.1\r\nHost: t\r\n\r\n");
        let _ = client.read_to_end();
    }
    let mut client = Client::connect(server.addr);
    short(&client, 3);
    client.send(b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = client.reply();
    assert!(
        r.is_ok(),
        "the worker no longer serves: {r:?} (drops: {})",
        DROPS.load(Ordering::SeqCst)
    );
}

/// A body waits (never woken) and the client leaves: the I/O timeout
/// closes the connection, dropping the body on the worker thread (in the
/// timer's sweep: outside the runtime's context and outside the worker's
/// catch_unwind). Before c31f9c0 the body lived in a tokio task.
#[test]
fn a_body_dropped_by_the_io_timeout_may_need_the_runtime() {
    for path in ["/spawn-on-drop", "/panic-on-drop-pending"] {
        let (_rt, server) =
            server_with(options().workers(1).io_timeout(Duration::from_millis(300)));
        {
            let mut client = Client::connect(server.addr);
            short(&client, 3);
            client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            let mut head = [0u8; 17];
            client.reader.read_exact(&mut head).unwrap();
            assert_eq!(&head, b"HTTP/1.1 200 OK\r\n");
        }
        // Past the I/O timeout: the connection is swept.
        thread::sleep(Duration::from_millis(1500));
        let mut client = Client::connect(server.addr);
        short(&client, 3);
        client.send(b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = client.reply();
        assert!(
            r.is_ok(),
            "{path}: the (only) worker no longer serves after the body's drop: {r:?}"
        );
        drop(client);
        let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.stop()));
        assert!(joined.is_ok(), "{path}: the worker did not stop cleanly");
    }
}

/// A body that never ends: the shutdown deadline ends it.
#[test]
fn shutdown_deadline_ends_a_body_that_never_wakes() {
    let (_rt, server) =
        server_with(options().workers(1).shutdown_timeout(Duration::from_millis(500)));
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(b"GET /never HTTP/1.1\r\nHost: t\r\n\r\n");
    thread::sleep(Duration::from_millis(100));
    server.handle().shutdown();
    let started = Instant::now();
    server.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

/// Control: the same request with its whole body sent is answered.
#[test]
fn control_ignored_body_fully_sent() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(b"POST /ignore-burst HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789");
    assert_eq!(client.reply().unwrap().body.len(), 500_000);
}

// ------------------------------------------------- the last piece and the end

/// An echo (axum's body streamed back) driven without sockets: the piece
/// of each poll is what one vectored write sends, in order.
fn echo_session() -> (
    tokio::runtime::Runtime,
    TowerHandler<Router>,
    falconet_pool::Pool,
    falconet_server::Context,
    falconet_server::Session<TowerHandler<Router>>,
) {
    let runtime = runtime();
    let router = Router::new().route(
        "/echo",
        post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
    );
    let handler = TowerHandler::new(router, runtime.handle().clone());
    let pool = falconet_pool::Pool::new();
    let cx = falconet_server::Context::new(&Options::new()).unwrap();
    let session = falconet_server::Session::new(&pool).unwrap();
    (runtime, handler, pool, cx, session)
}

/// Everything the session has to send, piece by piece (each `output()`
/// is the start of the next write; `consume_output` sends it).
fn drain(session: &mut falconet_server::Session<TowerHandler<Router>>) -> Vec<Vec<u8>> {
    let mut pieces = Vec::new();
    while !session.output().is_empty() {
        pieces.push(session.output().to_vec());
        let n = session.output().len();
        session.consume_output(n);
    }
    pieces
}

/// A streamed body's last piece carries the chunked body's end: the last
/// chunk goes out in the write that sends the piece, not in a write of
/// its own after the body is polled once more (as it did: one more
/// system call per response, and a segment of five bytes). A piece under
/// 64 KiB is copied into the output with its framing (one slice); a
/// larger one goes out in place, between its chunk's size and its CRLF.
#[test]
fn the_last_piece_carries_the_chunked_end() {
    for (first_len, last_len) in [(3, 2), (70_000, 66_000)] {
        let (_rt, handler, _pool, mut cx, mut session) = echo_session();
        let (first_part, last_part) = (vec![b'a'; first_len], vec![b'b'; last_len]);
        let length = first_len + last_len;
        session
            .receive(
                format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        session.receive(&first_part).unwrap();
        session.process(&handler, &mut cx);
        let first = drain(&mut session);
        let head = String::from_utf8_lossy(&first[0]).to_string();
        assert!(head.to_ascii_lowercase().contains("transfer-encoding: chunked\r\n"), "{head}");
        let size = |n: usize| format!("{n:x}\r\n").into_bytes();
        let in_place = first_len >= 64 * 1024;
        let head_end = first[0].windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let mut wanted = vec![[&first[0][..head_end], &size(first_len)].concat()];
        if in_place {
            wanted.extend([first_part.clone(), b"\r\n".to_vec()]);
        } else {
            wanted[0].extend([&first_part[..], b"\r\n"].concat());
        }
        assert!(first == wanted, "{first_len}: a piece that is not the last");
        session.receive(&last_part).unwrap();
        session.process(&handler, &mut cx);
        let second = drain(&mut session);
        let wanted = if in_place {
            vec![size(last_len), last_part.clone(), b"\r\n0\r\n\r\n".to_vec()]
        } else {
            vec![[&size(last_len)[..], &last_part, b"\r\n0\r\n\r\n"].concat()]
        };
        assert!(
            second == wanted,
            "{last_len}: the last piece, then its CRLF and the last chunk, in one write"
        );
        // The response is settled on the next turn; nothing more is sent.
        session.process(&handler, &mut cx);
        assert!(session.output().is_empty(), "{:?}", session.output());
        // The connection goes on: the next request is answered after it.
        session.receive(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok").unwrap();
        session.process(&handler, &mut cx);
        let third: Vec<u8> = drain(&mut session).concat();
        let third = String::from_utf8_lossy(&third);
        assert!(third.starts_with("HTTP/1.1 200"), "{third}");
        assert!(third.ends_with("\r\n\r\nok"), "{third:?}");
    }
}

/// A request pipelined behind an echo whose last piece is staged (or, under
/// 64 KiB, copied) waits for that piece: its response never overtakes the
/// body's end.
#[test]
fn a_pipelined_request_waits_behind_the_staged_last_piece() {
    for (first_len, last_len) in [(3, 2), (70_000, 66_000)] {
        let (_rt, handler, _pool, mut cx, mut session) = echo_session();
        let length = first_len + last_len;
        session
            .receive(
                format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        session.receive(&vec![b'a'; first_len]).unwrap();
        session.process(&handler, &mut cx);
        let mut all: Vec<u8> = drain(&mut session).concat();
        let mut rest = vec![b'b'; last_len];
        rest.extend_from_slice(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
        session.receive(&rest).unwrap_or_else(|e| panic!("{e}"));
        // Only part of what is ready is sent at a time: the rest stays
        // staged while the parser runs again.
        for _ in 0..8 {
            session.process(&handler, &mut cx);
            let piece = session.output().to_vec();
            let n = piece.len().min(1);
            all.extend_from_slice(&piece[..n]);
            session.consume_output(n);
        }
        for _ in 0..4 {
            session.process(&handler, &mut cx);
            all.extend(drain(&mut session).concat());
        }
        let all = String::from_utf8_lossy(&all);
        let last = format!("{last_len:x}\r\n{}\r\n0\r\n\r\n", "b".repeat(last_len));
        let end = all.find(&last).unwrap_or_else(|| panic!("{last_len}: {all:?}"));
        let next = all.rfind("HTTP/1.1 200").unwrap();
        assert!(end < next, "the next response came after the body's end: {all:?}");
    }
}

/// A body that wakes once, then hands out one piece and, at once, an
/// error or a panic: the look ahead that finds it fails the response only
/// after that piece went out.
struct PieceThenBreak {
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    piece: bool,
    panic: bool,
}

impl http_body::Body for PieceThenBreak {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(wait) = &mut self.wait {
            std::task::ready!(wait.as_mut().poll(cx));
            self.wait = None;
        }
        if std::mem::take(&mut self.piece) {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"abc")))));
        }
        if self.panic {
            panic!("the body panicked on purpose");
        }
        Poll::Ready(Some(Err(std::io::Error::other("the body failed on purpose"))))
    }
}

#[test]
fn a_body_that_breaks_right_after_a_piece_sends_the_piece_then_closes() {
    let runtime = runtime();
    let router = Router::new().route(
        "/break",
        get(|axum::extract::RawQuery(query): axum::extract::RawQuery| async move {
            AxumBody::new(PieceThenBreak {
                wait: Some(Box::pin(tokio::time::sleep(Duration::from_millis(20)))),
                piece: true,
                panic: query.as_deref() == Some("panic"),
            })
        }),
    );
    let server = serve(options().workers(1), TowerHandler::new(router, runtime.handle().clone()));
    for path in ["/break", "/break?panic"] {
        let mut stream = common::connect(server.addr);
        stream
            .write_all(
                format!(
                    "GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /break HTTP/1.1\r\nHost: t\r\n\r\n"
                )
                .as_bytes(),
            )
            .unwrap();
        let (got, end) = common::read_for(&mut stream, Duration::from_secs(5));
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("HTTP/1.1 200"), "{path}: {got:?}");
        assert!(got.ends_with("\r\n\r\n3\r\nabc\r\n"), "{path}: the piece, and no end: {got:?}");
        assert_eq!(got.matches("HTTP/1.1").count(), 1, "{path}: nothing after the cut: {got:?}");
        assert!(matches!(end, common::End::Eof | common::End::Reset), "{path}: closed");
    }
    // The worker serves on.
    let mut stream = common::connect(server.addr);
    stream.write_all(b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut reply = [0u8; 12];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"HTTP/1.1 404");
}

// ------------------------------------------- the polled echo against a model

/// One response parsed off the wire: its status and its body (sized or
/// de-chunked); `None` until all of it is there.
fn parse_response(wire: &[u8]) -> Option<(u16, Vec<u8>, usize)> {
    let end = wire.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&wire[..end]).expect("an ASCII head");
    let status: u16 = head[9..12].parse().expect("a status code");
    let lower = head.to_ascii_lowercase();
    if let Some(at) = lower.find("content-length: ") {
        let digits: String = lower[at + 16..].chars().take_while(|c| c.is_ascii_digit()).collect();
        let length: usize = digits.parse().unwrap();
        let body = wire.get(end..end + length)?;
        return Some((status, body.to_vec(), end + length));
    }
    assert!(lower.contains("transfer-encoding: chunked\r\n"), "neither sized nor chunked: {head}");
    let mut body = Vec::new();
    let mut at = end;
    loop {
        let line = wire[at..].windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&wire[at..at + line]).unwrap(), 16)
            .expect("a chunk size");
        at += line + 2;
        if size == 0 {
            // No trailers: the empty line ends the body.
            (wire.get(at..at + 2)? == b"\r\n").then_some(())?;
            return Some((status, body, at + 2));
        }
        body.extend_from_slice(wire.get(at..at + size)?);
        assert_eq!(wire.get(at + size..at + size + 2)?, b"\r\n", "a chunk's CRLF");
        at += size + 2;
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Pipelined echoes (sized and chunked bodies, empty to a few KiB)
    /// through a session, the input cut at random and the output taken a
    /// random number of bytes at a time (so a staged piece, and the end
    /// after it, go out in parts): every body comes back whole, in order,
    /// and nothing else is sent (the sequential model: a queue of bodies).
    #[test]
    fn polled_echoes_match_the_model(
        bodies in proptest::collection::vec(
            (proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000), proptest::prelude::any::<bool>()),
            1..6,
        ),
        cuts in proptest::collection::vec(1usize..2000, 1..20),
        takes in proptest::collection::vec(1usize..5000, 1..20),
    ) {
        let (_rt, handler, _pool, mut cx, mut session) = echo_session();
        let mut input = Vec::new();
        for (body, chunked) in &bodies {
            if *chunked {
                input.extend_from_slice(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
                for piece in body.chunks(700) {
                    input.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                    input.extend_from_slice(piece);
                    input.extend_from_slice(b"\r\n");
                }
                input.extend_from_slice(b"0\r\n\r\n");
            } else {
                input.extend_from_slice(
                    format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
                );
                input.extend_from_slice(body);
            }
        }
        let mut wire = Vec::new();
        let mut fed = 0;
        let mut step = 0;
        let mut idle = 0;
        while idle < 8 {
            step += 1;
            proptest::prop_assert!(step < 100_000, "no end after {step} steps");
            let before = (fed, wire.len());
            if fed < input.len() && session.wants_input(&cx) {
                let n = cuts[step % cuts.len()].min(input.len() - fed);
                session.receive(&input[fed..fed + n]).unwrap();
                fed += n;
            }
            session.process(&handler, &mut cx);
            let take = takes[step % takes.len()].min(session.output().len());
            wire.extend_from_slice(&session.output()[..take]);
            session.consume_output(take);
            idle = if (fed, wire.len()) == before { idle + 1 } else { 0 };
        }
        proptest::prop_assert_eq!(fed, input.len(), "all the input was taken");
        let mut at = 0;
        for (i, (body, _)) in bodies.iter().enumerate() {
            let parsed = parse_response(&wire[at..]);
            proptest::prop_assert!(parsed.is_some(), "response {} incomplete: {:?}", i, String::from_utf8_lossy(&wire[at..]));
            let (status, echoed, used) = parsed.unwrap();
            proptest::prop_assert_eq!(status, 200);
            proptest::prop_assert_eq!(&echoed, body, "response {}", i);
            at += used;
        }
        proptest::prop_assert_eq!(at, wire.len(), "nothing after the last response");
    }
}
