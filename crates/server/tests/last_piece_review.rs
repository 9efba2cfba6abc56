//! Polled HTTP/1 bodies whose last piece carries the end (`Step::Last`), at their edges: HTTP/1.0, HEAD/204/304, trailers and empty frames, blocked and trickling clients, wakes while the piece is staged, failures after it, timeouts, shutdown, and HTTP/2 unchanged. Written by an adversarial review of the change (none failed).
#![cfg(feature = "tower")]

mod common;

use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body as AxumBody;
use axum::http::StatusCode;
use axum::routing::{get, post};
use bytes::Bytes;
use common::{Client, End, options, read_for, serve};
use falconet_server::Options;
use falconet_server::tower::TowerHandler;
use http_body::Frame;

#[derive(Clone, Copy, Debug)]
enum S {
    /// Pending, woken at once (same thread).
    Wait,
    /// Pending, woken from a std thread after `ms`.
    WaitThread(u64),
    /// Pending, never woken.
    Never,
    Empty,
    /// `n` patterned bytes.
    Data(usize),
    Trailers,
    Err,
    Panic,
}

struct Plan {
    steps: Vec<S>,
    at: usize,
    offset: usize,
    woken: Option<Arc<AtomicBool>>,
}

fn pat(i: usize) -> u8 {
    (i % 251) as u8
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(pat).collect()
}

impl http_body::Body for Plan {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let Some(&step) = self.steps.get(self.at) else { return Poll::Ready(None) };
        match step {
            S::Wait => {
                self.at += 1;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            S::WaitThread(ms) => {
                if let Some(flag) = &self.woken {
                    if flag.load(Ordering::SeqCst) {
                        self.woken = None;
                        self.at += 1;
                        return self.poll_frame(cx);
                    }
                    return Poll::Pending;
                }
                let flag = Arc::new(AtomicBool::new(false));
                self.woken = Some(flag.clone());
                let waker = cx.waker().clone();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(ms));
                    flag.store(true, Ordering::SeqCst);
                    waker.wake();
                });
                Poll::Pending
            }
            S::Never => Poll::Pending,
            S::Empty => {
                self.at += 1;
                Poll::Ready(Some(Ok(Frame::data(Bytes::new()))))
            }
            S::Data(n) => {
                self.at += 1;
                let start = self.offset;
                self.offset += n;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(
                    (start..start + n).map(pat).collect::<Vec<u8>>(),
                )))))
            }
            S::Trailers => {
                self.at += 1;
                let mut map = http::HeaderMap::new();
                map.insert("x-t", http::HeaderValue::from_static("1"));
                Poll::Ready(Some(Ok(Frame::trailers(map))))
            }
            S::Err => Poll::Ready(Some(Err(std::io::Error::other("planned failure")))),
            S::Panic => panic!("planned panic"),
        }
    }
}

fn plan(steps: &[S]) -> AxumBody {
    AxumBody::new(Plan { steps: steps.to_vec(), at: 0, offset: 0, woken: None })
}

const MB8: usize = 8 << 20;

fn app() -> Router {
    use S::*;
    Router::new()
        .route("/plaintext", get(|| async { "Hello, World!" }))
        .route("/one", get(|| async { plan(&[Wait, Data(100)]) }))
        .route("/two", get(|| async { plan(&[Wait, Data(100), Data(200)]) }))
        .route("/trailers", get(|| async { plan(&[Wait, Data(1), Trailers]) }))
        .route("/empty-end", get(|| async { plan(&[Wait, Data(1), Empty, Empty]) }))
        .route("/empty-trailers", get(|| async { plan(&[Wait, Data(1), Empty, Trailers, Empty]) }))
        .route("/wait-end", get(|| async { plan(&[Wait, Data(1), Wait]) }))
        .route("/s204", get(|| async { (StatusCode::NO_CONTENT, plan(&[Wait, Data(4)])) }))
        .route(
            "/s304",
            get(|| async { (StatusCode::NOT_MODIFIED, plan(&[Wait, Data(4), Data(4)])) }),
        )
        .route("/big-last", get(|| async { plan(&[Wait, Data(MB8)]) }))
        .route("/big-then-never", get(|| async { plan(&[Wait, Data(MB8), Never]) }))
        .route("/small-then-never", get(|| async { plan(&[Wait, Data(10), Never]) }))
        .route("/big-thread-end", get(|| async { plan(&[Wait, Data(MB8), WaitThread(50)]) }))
        .route(
            "/big-thread-data",
            get(|| async { plan(&[Wait, Data(MB8), WaitThread(50), Data(10)]) }),
        )
        .route(
            "/big-thread0-data",
            get(|| async { plan(&[Wait, Data(MB8), WaitThread(0), Data(10), WaitThread(0)]) }),
        )
        .route("/big-selfwake", get(|| async { plan(&[Wait, Data(MB8), Wait, Data(10), Wait]) }))
        .route("/big-err", get(|| async { plan(&[Wait, Data(MB8), Err]) }))
        .route("/big-panic", get(|| async { plan(&[Wait, Data(MB8), Panic]) }))
        .route(
            "/echo",
            post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
        )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
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

fn raw(addr: std::net::SocketAddr, request: &[u8], limit: Duration) -> (String, End) {
    let mut stream = common::connect(addr);
    stream.write_all(request).unwrap();
    let (got, end) = read_for(&mut stream, limit);
    (String::from_utf8_lossy(&got).into_owned(), end)
}

// ------------------------------------------------------------ HTTP/1.0

#[test]
fn http10_last_piece_is_close_delimited() {
    let (_rt, server) = server();
    for path in ["/one", "/two", "/trailers", "/empty-end", "/wait-end"] {
        for keep in ["", "Connection: keep-alive\r\n"] {
            let mut stream = common::connect(server.addr);
            stream
                .write_all(
                    format!("GET {path} HTTP/1.0\r\nHost: t\r\n{keep}\r\nGET /plaintext HTTP/1.0\r\n\r\n")
                        .as_bytes(),
                )
                .unwrap();
            let (got, end) = read_for(&mut stream, Duration::from_secs(3));
            let at = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
            let head = String::from_utf8_lossy(&got[..at]).into_owned();
            let body = &got[at + 4..];
            assert!(head.contains("Connection: close"), "{path} {keep:?}: {head}");
            assert!(!head.to_ascii_lowercase().contains("transfer-encoding"), "{head}");
            let want = match path {
                "/one" => pattern(100),
                "/two" => pattern(300),
                _ => pattern(1),
            };
            assert_eq!(body, &want[..], "{path} {keep:?}");
            assert_eq!(end, End::Eof, "{path} {keep:?}: closed");
        }
    }
}

// ------------------------------------------------------------ HEAD, 204, 304, ends

#[test]
fn pipelined_head_204_304_and_odd_ends_exact_bytes() {
    let (_rt, server) = server();
    for version in ["1.1", "1.0"] {
        let keep = if version == "1.0" { "Connection: keep-alive\r\n" } else { "" };
        let mut req = String::new();
        for (m, p) in [
            ("HEAD", "/one"),
            ("HEAD", "/two"),
            ("GET", "/s204"),
            ("GET", "/s304"),
            ("HEAD", "/trailers"),
            ("GET", "/plaintext"),
        ] {
            req.push_str(&format!("{m} {p} HTTP/{version}\r\nHost: t\r\n{keep}\r\n"));
        }
        let (got, end) = raw(server.addr, req.as_bytes(), Duration::from_millis(1500));
        assert_eq!(got.matches("HTTP/1.1 ").count(), 6, "{version}: {got:?}");
        assert!(got.ends_with("\r\n\r\nHello, World!"), "{version}: stray bytes: {got:?}");
        // every head ends right before the next status line
        for part in got.split("HTTP/1.1 ").skip(1).take(5) {
            assert!(
                part.ends_with("\r\n\r\n"),
                "{version}: body bytes after a bodiless head: {part:?}"
            );
        }
        assert_eq!(end, End::Quiet, "{version}: kept open");
    }
}

#[test]
fn trailers_and_empty_frames_at_the_end_http11_exact() {
    let (_rt, server) = server();
    for path in ["/trailers", "/empty-end", "/empty-trailers", "/wait-end", "/one"] {
        let (got, end) = raw(
            server.addr,
            format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            .as_bytes(),
            Duration::from_millis(1500),
        );
        let first = got.split("HTTP/1.1 ").nth(1).unwrap_or_else(|| panic!("{got:?}"));
        let body = first.split_once("\r\n\r\n").unwrap().1;
        let want = if path == "/one" {
            format!("64\r\n{}\r\n0\r\n\r\n", String::from_utf8_lossy(&pattern(100)))
        } else {
            "1\r\n\0\r\n0\r\n\r\n".to_string()
        };
        assert_eq!(body, want, "{path}: {got:?}");
        assert!(got.ends_with("Hello, World!"), "{path}: {got:?}");
        assert_eq!(end, End::Quiet);
    }
}

#[test]
fn client_connection_close_with_a_last_piece() {
    let (_rt, server) = server();
    let (got, end) = raw(
        server.addr,
        b"GET /one HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
        Duration::from_secs(3),
    );
    assert!(got.contains("Connection: close"), "{got:?}");
    assert!(got.ends_with("\r\n0\r\n\r\n"), "{got:?}");
    assert_eq!(got.matches("HTTP/1.1").count(), 1);
    assert_eq!(end, End::Eof);
}

// ------------------------------------------------------------ slow clients

fn check_big(reply: &common::Reply, len: usize) {
    assert_eq!(reply.body.len(), len);
    let wrong = reply.body.iter().enumerate().position(|(i, &b)| b != pat(i));
    assert_eq!(wrong, None);
}

#[test]
fn pipelined_behind_a_big_last_piece_with_a_blocked_client() {
    let (_rt, server) = server();
    for path in ["/big-last", "/big-thread-end", "/big-thread-data", "/big-thread0-data"] {
        let mut client = Client::connect(server.addr);
        short(&client, 10);
        client.send(
            format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            .as_bytes(),
        );
        // The client does not read: the piece stays staged while a thread wakes the body.
        thread::sleep(Duration::from_millis(400));
        let started = Instant::now();
        let r =
            client.reply().unwrap_or_else(|e| panic!("{path}: {e} after {:?}", started.elapsed()));
        let len = if path.ends_with("data") { MB8 + 10 } else { MB8 };
        check_big(&r, len);
        let r = client.reply().unwrap_or_else(|e| panic!("{path}: second: {e}"));
        assert_eq!(r.text(), "Hello, World!", "{path}");
    }
}

#[test]
fn slow_trickle_reader_of_a_big_last_piece() {
    let (_rt, server) = server();
    let mut stream = common::connect(server.addr);
    stream
        .write_all(
            b"GET /big-last HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut all = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let want_tail = b"Hello, World!";
    while !all.ends_with(want_tail) {
        let n = stream.read(&mut buf).expect("read");
        assert!(n > 0, "EOF after {} bytes", all.len());
        all.extend_from_slice(&buf[..n]);
        thread::sleep(Duration::from_millis(2));
    }
    let text = String::from_utf8_lossy(&all);
    let end = text.find("\r\n0\r\n\r\nHTTP/1.1 200").expect("end before the next response");
    assert!(end > MB8);
}

#[test]
fn body_error_and_panic_after_a_big_piece_with_a_blocked_client() {
    let (_rt, server) = server();
    for path in ["/big-err", "/big-panic"] {
        let mut stream = common::connect(server.addr);
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        thread::sleep(Duration::from_millis(300));
        let (got, end) = read_for(&mut stream, Duration::from_secs(10));
        let at = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let body = &got[at..];
        let prefix = format!("{:x}\r\n", MB8);
        assert!(body.starts_with(prefix.as_bytes()), "{path}");
        assert_eq!(body.len(), prefix.len() + MB8 + 2, "{path}: piece + CRLF, no last chunk");
        assert!(body.ends_with(b"\r\n"));
        assert!(matches!(end, End::Eof | End::Reset), "{path}: {end:?}");
    }
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

// ------------------------------------------------------------ timeouts, shutdown

#[test]
fn io_timeout_closes_a_blocked_client_of_a_big_piece_then_pending_forever() {
    let (_rt, server) = server_with(options().workers(1).io_timeout(Duration::from_millis(500)));
    let mut stream = common::connect(server.addr);
    stream.write_all(b"GET /big-then-never HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    thread::sleep(Duration::from_secs(2));
    let (got, end) = read_for(&mut stream, Duration::from_secs(5));
    assert!(matches!(end, End::Eof | End::Reset), "{end:?} after {} bytes", got.len());
    assert!(got.len() < MB8);
}

#[test]
fn response_timeout_cuts_a_body_pending_forever_after_its_piece() {
    let (_rt, server) =
        server_with(options().workers(1).response_timeout(Some(Duration::from_millis(500))));
    let started = Instant::now();
    let (got, end) = raw(
        server.addr,
        b"GET /small-then-never HTTP/1.1\r\nHost: t\r\n\r\n",
        Duration::from_secs(5),
    );
    assert!(
        got.ends_with(&format!("a\r\n{}\r\n", String::from_utf8_lossy(&pattern(10)))),
        "{got:?}"
    );
    assert!(matches!(end, End::Eof | End::Reset), "{end:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn graceful_shutdown_with_a_staged_last_piece() {
    let (_rt, server) = server_with(options().workers(1).shutdown_timeout(Duration::from_secs(10)));
    let mut client = Client::connect(server.addr);
    short(&client, 10);
    client.send(b"GET /big-last HTTP/1.1\r\nHost: t\r\n\r\n");
    thread::sleep(Duration::from_millis(200));
    server.handle().shutdown();
    thread::sleep(Duration::from_millis(200));
    let r = client.reply().unwrap();
    check_big(&r, MB8);
    client.expect_closed();
    let started = Instant::now();
    server.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn min_response_rate_with_a_staged_last_piece_steady_reader() {
    use falconet_server::MinDataRate;
    let (_rt, server) = server_with(
        options()
            .workers(1)
            .min_response_rate(Some(MinDataRate::new(100_000, Duration::from_secs(1)))),
    );
    let mut stream = common::connect(server.addr);
    stream.write_all(b"GET /big-last HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut total = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    let mut all = Vec::new();
    while !all.ends_with(b"\r\n0\r\n\r\n") {
        let n = stream.read(&mut buf).expect("read");
        assert!(n > 0, "closed after {total}");
        total += n;
        all.extend_from_slice(&buf[..n]);
        thread::sleep(Duration::from_millis(5));
    }
    assert!(total > MB8);
}

// ------------------------------------------------------------ echo, expect

#[test]
fn echo_with_expect_continue_and_pipelined() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    );
    let r = client.reply().unwrap();
    assert_eq!(r.status, 100);
    client.send(b"hello");
    let r = client.reply().unwrap();
    assert_eq!(r.text(), "hello");
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

/// HTTP/1.0 echo driven without sockets: the last piece has nothing after it
/// and the session closes after it, with nothing more.
#[test]
fn http10_echo_session_closes_after_the_last_piece() {
    let runtime = runtime();
    let router = Router::new().route(
        "/echo",
        post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
    );
    let handler = TowerHandler::new(router, runtime.handle().clone());
    let pool = falconet_pool::Pool::new();
    let mut cx = falconet_server::Context::new(&Options::new()).unwrap();
    let mut session = falconet_server::Session::new(&pool).unwrap();
    session
        .receive(b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhel")
        .unwrap();
    session.process(&handler, &mut cx);
    let mut all = Vec::new();
    for _ in 0..20 {
        while !session.output().is_empty() {
            let n = session.output().len();
            all.extend_from_slice(session.output());
            session.consume_output(n);
        }
        thread::sleep(Duration::from_millis(10));
        session.process(&handler, &mut cx);
    }
    session.receive(b"lo").unwrap();
    let mut last = None;
    for _ in 0..20 {
        last = Some(session.process(&handler, &mut cx));
        while !session.output().is_empty() {
            let n = session.output().len().min(1);
            all.extend_from_slice(&session.output()[..n]);
            session.consume_output(n);
        }
        thread::sleep(Duration::from_millis(10));
    }
    let text = String::from_utf8_lossy(&all);
    assert!(text.ends_with("\r\n\r\nhello"), "{text:?}");
    assert!(text.contains("Connection: close"), "{text:?}");
    assert!(session.is_closed(), "{last:?}");
}

// ------------------------------------------------------------ HTTP/2

async fn fetch(
    send: &h2::client::SendRequest<Bytes>,
    method: http::Method,
    path: &str,
) -> Result<(u16, Vec<u8>), String> {
    let mut send = send.clone().ready().await.unwrap();
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .body(())
        .unwrap();
    let (response, _) = send.send_request(request, true).unwrap();
    let mut body = Vec::new();
    let mut status = 0;
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        let response = response.await.unwrap();
        status = response.status().as_u16();
        let mut incoming = response.into_body();
        while let Some(piece) = incoming.data().await {
            let piece = piece.map_err(|e| e.to_string())?;
            incoming.flow_control().release_capacity(piece.len()).unwrap();
            body.extend_from_slice(&piece);
        }
        Ok::<(), String>(())
    })
    .await;
    match got {
        Ok(Ok(())) => Ok((status, body)),
        Ok(Err(e)) => Err(format!("{path}: {e} after {} bytes", body.len())),
        Err(_) => Err(format!("{path}: stalled after {} bytes", body.len())),
    }
}

#[test]
fn h2_plans_unchanged() {
    let (_rt, server) = server();
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client_window(server.addr, 16 << 20).await;
        for (path, len) in [
            ("/one", 100),
            ("/two", 300),
            ("/trailers", 1),
            ("/empty-end", 1),
            ("/empty-trailers", 1),
            ("/wait-end", 1),
            ("/big-last", MB8),
            ("/big-thread-end", MB8),
            ("/big-thread-data", MB8 + 10),
            ("/big-thread0-data", MB8 + 10),
        ] {
            let (status, body) = fetch(&send, http::Method::GET, path).await.unwrap();
            assert_eq!(status, 200, "{path}");
            assert_eq!(body.len(), len, "{path}");
            assert!(body.iter().enumerate().all(|(i, &b)| b == pat(i)), "{path}");
        }
        assert_eq!(fetch(&send, http::Method::HEAD, "/one").await, Ok((200, vec![])));
        assert_eq!(fetch(&send, http::Method::GET, "/s204").await, Ok((204, vec![])));
        let r = fetch(&send, http::Method::GET, "/big-err").await;
        assert!(r.is_err(), "a failed body is reset: {:?}", r.as_ref().map(|x| x.1.len()));
        assert_eq!(
            fetch(&send, http::Method::GET, "/plaintext").await.unwrap().1,
            b"Hello, World!"
        );
    });
}

#[test]
fn self_wake_on_the_look_ahead_while_the_piece_is_staged() {
    let (_rt, server) = server();
    let mut client = Client::connect(server.addr);
    short(&client, 10);
    client.send(
        b"GET /big-selfwake HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    thread::sleep(Duration::from_millis(300));
    let r = client.reply().unwrap();
    check_big(&r, MB8 + 10);
    assert_eq!(client.reply().unwrap().text(), "Hello, World!");
}

/// A client that sends a chunk and waits for its echo before the next.
#[test]
fn interactive_echo_lockstep() {
    let (_rt, server) = server();
    let mut stream = common::connect(server.addr);
    stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    for i in 0..5u8 {
        let word = [b'a' + i; 3];
        stream.write_all(b"3\r\n").unwrap();
        stream.write_all(&word).unwrap();
        stream.write_all(b"\r\n").unwrap();
        let want = format!("3\r\n{}\r\n", String::from_utf8_lossy(&word));
        while !String::from_utf8_lossy(&got).ends_with(&want) {
            let n = stream.read(&mut buf).unwrap_or_else(|e| {
                panic!("round {i}: {e}; got {:?}", String::from_utf8_lossy(&got))
            });
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
    }
    stream.write_all(b"0\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    while !got.ends_with(b"Hello, World!") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("3\r\neee\r\n0\r\n\r\nHTTP/1.1 200"), "{text:?}");
}

#[test]
fn graceful_shutdown_with_a_staged_last_piece_and_a_pipelined_request() {
    let (_rt, server) = server_with(options().workers(1).shutdown_timeout(Duration::from_secs(10)));
    let mut client = Client::connect(server.addr);
    short(&client, 10);
    client.send(
        b"GET /big-last HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    thread::sleep(Duration::from_millis(200));
    server.handle().shutdown();
    thread::sleep(Duration::from_millis(200));
    let r = client.reply().unwrap();
    check_big(&r, MB8);
    let second = client.reply();
    eprintln!(
        "second after shutdown: {:?}",
        second.as_ref().map(|r| (r.status, r.text(), r.closes()))
    );
    let started = Instant::now();
    server.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

/// h2c: the upgraded request (stream 1) is answered by the HTTP/2 side:
/// no chunked framing may leak into its DATA.
#[test]
fn h2c_upgrade_stream_one_polled_body() {
    use common::h2raw::{Raw, frames_until};
    use falconet_server::h2::frame::{PREFACE, kind};
    let (_rt, server) = server();
    for path in ["/one", "/two", "/trailers", "/big-thread-data"] {
        let mut raw = Raw::connect(server.addr);
        raw.send(
            format!(
                "GET {path} HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                 Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n"
            )
            .as_bytes(),
        );
        raw.read_switch();
        let mut bytes = PREFACE.to_vec();
        falconet_server::h2::frame::encode_settings(&mut bytes, &[(4, 0x7fff_ffff)]).unwrap();
        raw.send(&bytes);
        raw.window_update(0, 0x7fff_0000);
        let frames =
            frames_until(&mut raw, Duration::from_secs(10), |f| f.stream == 1 && f.end_stream());
        let data: Vec<u8> = frames
            .iter()
            .filter(|f| f.kind == kind::DATA && f.stream == 1)
            .flat_map(|f| f.payload.clone())
            .collect();
        let len = match path {
            "/one" => 100,
            "/two" => 300,
            "/trailers" => 1,
            _ => MB8 + 10,
        };
        assert!(frames.iter().any(|f| f.stream == 1 && f.end_stream()), "{path}: not ended");
        assert_eq!(data.len(), len, "{path}");
        assert!(data.iter().enumerate().all(|(i, &b)| b == pat(i)), "{path}");
    }
}

/// The response timeout must not cut a response whose last piece (with
/// the end) waits on a slow client: the application is done.
#[test]
fn response_timeout_does_not_cut_a_staged_last_piece_waiting_on_the_client() {
    let (_rt, server) = server_with(
        options()
            .workers(1)
            .response_timeout(Some(Duration::from_millis(300)))
            .io_timeout(Duration::from_secs(5)),
    );
    let mut client = Client::connect(server.addr);
    short(&client, 10);
    client.send(
        b"GET /big-last HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    thread::sleep(Duration::from_millis(1500));
    let r = client.reply().unwrap();
    check_big(&r, MB8);
    assert_eq!(client.reply().unwrap().text(), "Hello, World!");
}

#[test]
fn http10_big_last_piece_blocked_client() {
    let (_rt, server) = server();
    let mut stream = common::connect(server.addr);
    stream.write_all(b"GET /big-last HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap();
    thread::sleep(Duration::from_millis(400));
    let (got, end) = read_for(&mut stream, Duration::from_secs(10));
    let at = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(got.len() - at, MB8);
    assert!(got[at..].iter().enumerate().all(|(i, &b)| b == pat(i)));
    assert_eq!(end, End::Eof);
}
