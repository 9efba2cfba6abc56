//! tower services on falconet over real TCP: an axum `Router` (and a few
//! hand-written services) behind `tower::TowerHandler`.
#![cfg(feature = "tower")]

mod common;

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::io::Write;
use std::net::TcpStream;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use axum::body::Body as AxumBody;
use axum::http::{StatusCode, Uri, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use common::{Client, options, serve};
use falconet_server::tower::{Body, TowerHandler};
use falconet_server::{Handler, Options, Request, Response};
use http_body::{Frame, SizeHint};

#[global_allocator]
static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

fn app() -> Router {
    Router::new()
        .route(
            "/plaintext",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "Hello, World!") }),
        )
        .route("/json", get(|| async { Json(Message { message: "Hello, World!" }) }))
        .route(
            "/echo",
            post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
        )
        .route(
            "/sleep",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                "slept"
            }),
        )
        .route("/big-now", get(|| async { vec![b'b'; BIG] }))
        .route(
            "/big-later",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                vec![b'b'; BIG]
            }),
        )
        .route("/query", get(|uri: Uri| async move { uri.query().unwrap_or_default().to_string() }))
        .route("/uri", get(|uri: Uri| async move { uri.to_string() }))
        .route(
            "/host",
            get(|headers: http::HeaderMap| async move {
                String::from_utf8_lossy(headers["host"].as_bytes()).into_owned()
            }),
        )
        .route("/error", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "broken") }))
        .route("/teapot", get(|| async { StatusCode::IM_A_TEAPOT }))
        .route(
            "/informational",
            get(|| async {
                (StatusCode::SWITCHING_PROTOCOLS, [(header::CONTENT_TYPE, "x/y")], "z")
            }),
        )
        .route(
            "/informational-later",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                (StatusCode::CONTINUE, [(header::CONTENT_TYPE, "x/y")], "z")
            }),
        )
        .route("/panic", get(panics))
        .route("/panic-later", get(panics_later))
        .route(
            "/reserved",
            get(|| async {
                (
                    [
                        (header::DATE, "Thu, 01 Jan 1970 00:00:00 GMT"),
                        (header::CONNECTION, "keep-alive"),
                        (header::TRANSFER_ENCODING, "identity"),
                        (header::CONTENT_LENGTH, "99"),
                        (header::HeaderName::from_static("x-kept"), "yes"),
                    ],
                    "reserved",
                )
            }),
        )
        .route("/close", get(|| async { ([(header::CONNECTION, "close")], "bye") }))
        .route(
            "/slow-body",
            get(|| async { AxumBody::new(Staggered::new(&[b"one ", b"two ", b"three"], true)) }),
        )
        .route(
            "/ready-pieces",
            get(|| async { AxumBody::new(Staggered::new(&[b"one ", b"two ", b"three"], false)) }),
        )
        .route(
            "/sized-slow-body",
            get(|| async {
                let mut body = Staggered::new(&[b"sized ", b"but ", b"slow"], true);
                body.exact = true;
                AxumBody::new(body)
            }),
        )
        .route("/huge-vec", get(|| async { vec![b'h'; HUGE] }))
        .route("/claims-more", get(|| async { AxumBody::new(Staggered::claiming(100)) }))
        .route("/claims-less", get(|| async { AxumBody::new(Staggered::claiming(5)) }))
}

/// `/huge-vec`'s length: past the 1 MiB written at once.
const HUGE: usize = 2 << 20;

async fn panics() -> &'static str {
    panic!("the handler panicked on purpose")
}

async fn panics_later() -> &'static str {
    tokio::time::sleep(Duration::from_millis(5)).await;
    panic!("the task panicked on purpose")
}

/// A response body of a few frames; with `pause`, each frame after the
/// first is `Pending` once first (woken at once).
struct Staggered {
    frames: Vec<&'static [u8]>,
    pause: bool,
    paused: bool,
    exact: bool,
    /// An exact size to claim whatever the frames are (a lying body),
    /// less what it has yielded.
    claim: Option<u64>,
    yielded: u64,
}

impl Staggered {
    fn new(frames: &[&'static [u8]], pause: bool) -> Self {
        let mut frames = frames.to_vec();
        frames.reverse();
        Self { frames, pause, paused: false, exact: false, claim: None, yielded: 0 }
    }

    /// "one two three", staggered, claiming an exact size of `claim`.
    fn claiming(claim: u64) -> Self {
        Self { claim: Some(claim), ..Self::new(&[b"one ", b"two ", b"three"], true) }
    }
}

impl http_body::Body for Staggered {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let first = self.frames.len() == 3;
        if self.pause && !first && !self.paused {
            self.paused = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.paused = false;
        let frame = self.frames.pop();
        self.yielded += frame.map_or(0, |frame| frame.len() as u64);
        Poll::Ready(frame.map(|frame| Ok(Frame::data(Bytes::from_static(frame)))))
    }

    fn size_hint(&self) -> SizeHint {
        if let Some(claim) = self.claim {
            SizeHint::with_exact(claim.saturating_sub(self.yielded))
        } else if self.exact {
            SizeHint::with_exact(self.frames.iter().map(|f| f.len() as u64).sum())
        } else {
            SizeHint::default()
        }
    }
}

/// `/big-now` and `/big-later`'s length: past the 64 KiB a task collects
/// of a body of unknown size, within the 1 MiB written at once.
const BIG: usize = 300_000;

fn server() -> (tokio::runtime::Runtime, common::TestServer<TowerHandler<Router>>) {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    (runtime, server)
}

#[test]
fn plaintext_and_json_are_byte_correct() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let reply = client.get("/plaintext");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "Hello, World!");
    assert_eq!(reply.header("content-length"), Some("13"));
    assert_eq!(reply.header("content-type"), Some("text/plain"));
    assert!(reply.header("date").is_some());
    let reply = client.get("/json");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), r#"{"message":"Hello, World!"}"#);
    assert_eq!(reply.header("content-length"), Some("27"));
    assert_eq!(reply.header("content-type"), Some("application/json"));
}

#[test]
fn the_whole_response_bytes_for_plaintext() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    client.send(b"GET /plaintext HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let text = String::from_utf8(client.read_to_end().unwrap()).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert_eq!(body, "Hello, World!");
    let lines: Vec<&str> = head.split("\r\n").collect();
    assert_eq!(lines[0], "HTTP/1.1 200 OK");
    assert!(lines.contains(&"content-type: text/plain"), "{head}");
    assert!(lines.contains(&"Content-Length: 13"), "{head}");
    assert!(lines.contains(&"Connection: close"), "{head}");
    assert_eq!(lines.iter().filter(|l| l.to_ascii_lowercase().starts_with("date:")).count(), 1);
}

#[test]
fn a_hundred_pipelined_requests_are_answered_in_order() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let mut batch = String::new();
    for i in 0..100 {
        let path = match i % 4 {
            0 | 2 => "/plaintext".to_string(),
            1 => format!("/query?{i}"),
            _ => "/sleep".to_string(),
        };
        batch.push_str(&format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    client.send(batch.as_bytes());
    for i in 0..100 {
        let reply = client.reply().unwrap();
        assert_eq!(reply.status, 200, "{i}");
        match i % 4 {
            0 | 2 => assert_eq!(reply.text(), "Hello, World!", "{i}"),
            1 => assert_eq!(reply.text(), i.to_string()),
            _ => assert_eq!(reply.text(), "slept", "{i}"),
        }
    }
}

#[test]
fn a_hundred_pipelined_plaintexts() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    client.send(b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n".repeat(100).as_slice());
    for _ in 0..100 {
        assert_eq!(client.reply().unwrap().text(), "Hello, World!");
    }
}

fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ (i >> 12) as u8
}

/// Posts `len` bytes to `/echo` from one thread while this one reads the
/// echo; checks it byte for byte.
fn echo(addr: std::net::SocketAddr, len: usize, chunked: bool) {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let producer = thread::spawn(move || {
        let framing = if chunked {
            "Transfer-Encoding: chunked".into()
        } else {
            format!("Content-Length: {len}")
        };
        write!(writer, "POST /echo HTTP/1.1\r\nHost: t\r\n{framing}\r\n\r\n").unwrap();
        let mut sent = 0;
        let mut piece = vec![0u8; 45_001];
        while sent < len {
            let n = piece.len().min(len - sent);
            for (i, b) in piece[..n].iter_mut().enumerate() {
                *b = pattern(sent + i);
            }
            if chunked {
                write!(writer, "{n:x}\r\n").unwrap();
                writer.write_all(&piece[..n]).unwrap();
                writer.write_all(b"\r\n").unwrap();
            } else {
                writer.write_all(&piece[..n]).unwrap();
            }
            sent += n;
        }
        if chunked {
            writer.write_all(b"0\r\n\r\n").unwrap();
        }
    });
    let mut client = Client { reader: std::io::BufReader::new(stream) };
    let reply = client.reply().unwrap();
    producer.join().unwrap();
    assert_eq!(reply.status, 200);
    if len > 1 << 20 {
        assert_eq!(reply.header("transfer-encoding"), Some("chunked"), "streamed back");
    }
    assert_eq!(reply.body.len(), len, "the whole body came back");
    let first_wrong = reply.body.iter().enumerate().position(|(i, &b)| b != pattern(i));
    assert_eq!(first_wrong, None, "byte-exact");
    // The connection goes on.
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

#[test]
fn an_8_mib_echo_sized_and_chunked_is_byte_exact() {
    let (_runtime, server) = server();
    echo(server.addr, 8 << 20, false);
    echo(server.addr, 8 << 20, true);
    echo(server.addr, 1, false);
    echo(server.addr, 0, false);
    echo(server.addr, 0, true);
}

/// A malformed chunked body that the service streams back fails before
/// the response's head: the answer is the client's error (400, or 413
/// for a chunk past `max_body`), not 500, and the connection closes, so
/// the request smuggled behind the body is never answered.
#[test]
fn a_malformed_body_the_service_streams_is_the_clients_error() {
    use std::io::Read;
    let (_runtime, server) = server();
    let cases: [(&[u8], &str); 5] = [
        (b"zz\r\nhello\r\n0\r\n\r\n", "400"),
        (b"5\r\nhelloXX0\r\n\r\n", "400"),
        (b"5;a\x00b\r\nhello\r\n0\r\n\r\n", "400"),
        (b"5\nhello\r\n0\r\n\r\n", "400"),
        (b"ffffffffffffffff\r\nhello\r\n0\r\n\r\n", "413"),
    ];
    for (body, status) in cases {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut request =
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        request.extend_from_slice(body);
        request.extend_from_slice(b"GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n");
        stream.write_all(&request).unwrap();
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap();
        let reply = String::from_utf8_lossy(&reply).to_ascii_lowercase();
        let shown = String::from_utf8_lossy(body);
        assert!(reply.starts_with(&format!("http/1.1 {status} ")), "{shown:?}: {reply}");
        assert!(reply.contains("connection: close\r\n"), "{shown:?}: {reply}");
        assert_eq!(reply.matches("http/1.1 ").count(), 1, "{shown:?}: {reply}");
    }
    // The server goes on.
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

#[test]
fn a_handler_that_waits_is_answered_later() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let reply = client.get("/sleep");
    assert_eq!((reply.status, reply.text().as_str()), (200, "slept"));
    assert_eq!(reply.header("content-length"), Some("5"), "a body ready at once is sized");
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

/// A body of exact size up to 1 MiB, all ready, has its `Content-Length`
/// whether the handler answered at once or after an `.await` (a `Json`
/// after a database call); the second was streamed chunked past 64 KiB
/// (an outside review's new axum user).
#[test]
fn a_sized_body_after_an_await_keeps_its_length() {
    let (runtime, server) = server();
    let mut client = Client::connect(server.addr);
    for path in ["/big-now", "/big-later"] {
        let reply = client.get(path);
        assert_eq!((reply.status, reply.body.len()), (200, BIG), "{path}");
        assert_eq!(reply.header("content-length"), Some(BIG.to_string().as_str()), "{path}");
        assert_eq!(reply.header("transfer-encoding"), None, "{path}");
    }
    if cfg!(falconet_tsan) {
        // The HTTP/2 client's tokio socket: TSan reports tokio's epoll
        // hand-off inside tokio (tokio-rs/tokio#7299).
        return;
    }
    runtime.block_on(async {
        let send = common::h2_client(server.addr).await;
        for path in ["/big-now", "/big-later"] {
            let request = http::Request::get(format!("http://t{path}")).body(()).unwrap();
            let (answer, _) =
                send.clone().ready().await.unwrap().send_request(request, true).unwrap();
            let answer = answer.await.unwrap();
            let length = answer.headers().get("content-length").map(|v| v.to_str().unwrap());
            assert_eq!(length, Some(BIG.to_string().as_str()), "h2 {path}");
        }
    });
}

/// A body of exact size past 1 MiB (a `Vec`, a file a service knows the
/// size of) streams with `Content-Length`, over HTTP/1.1, 1.0 and 2, as
/// hyper sends it: it was chunked (an outside review's new axum user). A
/// `HEAD` to it has the length and no body.
#[test]
fn a_body_of_exact_size_streams_with_its_length() {
    let (runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let huge = HUGE.to_string();
    for _ in 0..2 {
        let reply = client.get("/huge-vec");
        assert_eq!((reply.status, reply.body.len()), (200, HUGE));
        assert!(reply.body.iter().all(|&b| b == b'h'));
        assert_eq!(reply.header("content-length"), Some(huge.as_str()));
        assert_eq!(reply.header("transfer-encoding"), None);
    }
    client.send(b"HEAD /huge-vec HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = client.reply_to(true).unwrap();
    assert_eq!((reply.status, reply.body.len()), (200, 0));
    assert_eq!(reply.header("content-length"), Some(huge.as_str()));
    assert_eq!(reply.header("transfer-encoding"), None);
    assert_eq!(client.get("/plaintext").text(), "Hello, World!", "framed right");
    // HTTP/1.0 has no chunked coding: a length keeps the connection open.
    client.send(b"GET /huge-vec HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!((reply.body.len(), reply.header("content-length")), (HUGE, Some(huge.as_str())));
    assert_eq!(client.get("/plaintext").text(), "Hello, World!", "still open");
    if cfg!(falconet_tsan) {
        // The HTTP/2 client's tokio socket: TSan reports tokio's epoll
        // hand-off inside tokio (tokio-rs/tokio#7299).
        return;
    }
    runtime.block_on(async {
        let send = common::h2_client(server.addr).await;
        let request = http::Request::get("http://t/huge-vec").body(()).unwrap();
        let (answer, _) = send.ready().await.unwrap().send_request(request, true).unwrap();
        let answer = answer.await.unwrap();
        let length = answer.headers().get("content-length").map(|v| v.to_str().unwrap());
        assert_eq!(length, Some(huge.as_str()));
        let mut body = answer.into_body();
        let mut got = 0;
        while let Some(piece) = body.data().await {
            let piece = piece.expect("the h2 client checks the length against the DATA");
            let _ = body.flow_control().release_capacity(piece.len());
            got += piece.len();
        }
        assert_eq!(got, HUGE);
    });
}

/// A body whose exact size is a lie (100 or 5 claimed, 13 sent) is cut
/// where the lie shows: the client gets the declared length and fewer
/// bytes, then the close, so it knows the answer is incomplete (RFC 9112
/// §6.3); never more bytes than declared, never a completed response.
/// Over HTTP/2 the stream is reset (or, when the lie shows before the
/// head went out, answered `500`).
#[test]
fn a_body_that_lies_about_its_exact_size_is_cut() {
    let (runtime, server) = server();
    for (path, claim, most) in [("/claims-more", "100", 13), ("/claims-less", "5", 5)] {
        let mut client = Client::connect(server.addr);
        client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let bytes = client.read_to_end().unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let (head, body) = text.split_once("\r\n\r\n").expect("a head");
        let fields: Vec<&str> = head.split("\r\n").collect();
        assert!(fields.contains(&format!("Content-Length: {claim}").as_str()), "{path}: {head}");
        assert!(!head.contains("Transfer-Encoding"), "{path}: {head}");
        assert!(body.len() < claim.parse().unwrap() && body.len() <= most, "{path}: {body:?}");
    }
    if cfg!(falconet_tsan) {
        // The HTTP/2 client's tokio socket: TSan reports tokio's epoll
        // hand-off inside tokio (tokio-rs/tokio#7299).
        return;
    }
    runtime.block_on(async {
        let send = common::h2_client(server.addr).await;
        for path in ["/claims-more", "/claims-less"] {
            let request = http::Request::get(format!("http://t{path}")).body(()).unwrap();
            let (answer, _) =
                send.clone().ready().await.unwrap().send_request(request, true).unwrap();
            let failed = match answer.await {
                // Caught before the head went out: a whole `500` instead.
                Ok(answer) if answer.status() == 500 => true,
                Ok(answer) => {
                    let mut body = answer.into_body();
                    let mut failed = false;
                    while let Some(piece) = body.data().await {
                        if piece.is_err() {
                            failed = true;
                            break;
                        }
                    }
                    failed
                }
                Err(_) => true,
            };
            assert!(failed, "{path}: completed over HTTP/2");
        }
    });
}

#[test]
fn bodies_that_wait_are_streamed() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let reply = client.get("/slow-body");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    assert_eq!(reply.header("content-length"), None);
    // A body of exact size streams with its length, as hyper sends it.
    let reply = client.get("/sized-slow-body");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), None);
    assert_eq!(reply.header("content-length"), Some("14"));
    // Frames all ready but no exact size: collected into one sized body.
    let reply = client.get("/ready-pieces");
    assert_eq!(reply.text(), "one two three");
    assert_eq!(reply.header("content-length"), Some("13"));
    let reply = client.get("/slow-body");
    assert_eq!(reply.text(), "one two three");
    let reply = client.get("/sized-slow-body");
    assert_eq!(reply.text(), "sized but slow");
}

#[test]
fn statuses_pass_through() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let reply = client.get("/nowhere");
    assert_eq!(reply.status, 404);
    let reply = client.get("/error");
    assert_eq!((reply.status, reply.text().as_str()), (500, "broken"));
    assert_eq!(client.get("/teapot").status, 418);
    // A 1xx is no final answer: the service failed (as hyper does, the
    // connection closes after), and nothing of its answer goes out
    // (answered now, and from a task).
    for path in ["/informational", "/informational-later"] {
        let reply = Client::connect(server.addr).get(path);
        assert_eq!((reply.status, reply.text().as_str()), (500, ""), "{path}");
        assert_eq!(reply.header("content-type"), None, "{path}");
    }
    // A known path with another method: axum's 405 and its Allow field.
    client.send(b"DELETE /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 405);
    assert!(reply.header("allow").is_some_and(|allow| allow.contains("GET")), "{reply:?}");
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
}

#[test]
fn a_panicking_handler_gets_500() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    // On the worker's inline poll.
    assert_eq!(client.get("/panic").status, 500);
    assert_eq!(client.get("/plaintext").text(), "Hello, World!", "the connection goes on");
    // In the task that finishes a future that waited.
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/panic-later").status, 500);
    // The server goes on.
    assert_eq!(Client::connect(server.addr).get("/plaintext").text(), "Hello, World!");
}

#[test]
fn head_has_the_length_and_no_body() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    client.send(b"HEAD /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = client.reply_to(true).unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-length"), Some("13"));
    assert_eq!(reply.header("content-type"), Some("text/plain"));
    // No body bytes came: the next response starts right after the head.
    assert_eq!(client.get("/json").text(), r#"{"message":"Hello, World!"}"#);
}

#[test]
fn head_of_a_body_of_unknown_length_claims_no_length() {
    // axum sets content-length from the body's exact size before emptying
    // it for HEAD; without one, GET streams (chunked), and HEAD must not
    // say `Content-Length: 0` (the resource is not empty).
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let get = client.get("/slow-body");
    assert_eq!(get.text(), "one two three");
    assert_eq!(get.header("content-length"), None);
    client.send(b"HEAD /slow-body HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = client.reply_to(true).unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), None, "{head:?}");
    // Nor `chunked`: an emptied body cannot say how GET's is framed.
    assert_eq!(head.header("transfer-encoding"), None, "{head:?}");
    assert!(head.body.is_empty());
    // In step: the next response starts right after the head.
    assert_eq!(client.get("/json").text(), r#"{"message":"Hello, World!"}"#);
}

#[test]
fn fields_falconet_writes_are_not_duplicated() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    let reply = client.get("/reserved");
    assert_eq!(reply.text(), "reserved");
    let count =
        |name: &str| reply.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).count();
    assert_eq!(count("date"), 1, "{reply:?}");
    assert_eq!(count("content-length"), 1, "{reply:?}");
    assert_eq!(reply.header("content-length"), Some("8"), "the body's own length");
    assert!(count("connection") <= 1, "{reply:?}");
    assert_eq!(count("transfer-encoding"), 0, "{reply:?}");
    assert_ne!(reply.header("date"), Some("Thu, 01 Jan 1970 00:00:00 GMT"));
    assert_eq!(reply.header("x-kept"), Some("yes"));
    // `connection: close` from the service closes after the response.
    let reply = client.get("/close");
    assert_eq!(reply.text(), "bye");
    assert!(reply.closes(), "{reply:?}");
    client.expect_closed();
}

#[test]
fn the_uri_is_the_target_as_hyper_builds_it() {
    let (_runtime, server) = server();
    let mut client = Client::connect(server.addr);
    // An origin-form target: the URI as it came, its authority in the
    // Host field (as hyper gives it: a redirect built from it stays
    // relative, whatever scheme a proxy in front spoke).
    assert_eq!(client.get("/uri?a=b").text(), "/uri?a=b");
    client.send(b"GET /host HTTP/1.1\r\nHost: test:8080\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "test:8080");
    // An absolute-form target: absolute, its authority wins over Host.
    client.send(b"GET http://other:81/uri HTTP/1.1\r\nHost: other:81\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "http://other:81/uri");
    // HTTP/1.0 without Host: the path alone.
    client.send(b"GET /uri HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "/uri");
    // A percent-encoded host is a valid reg-name (RFC 3986 3.2.2) that
    // `http::uri::Authority` refuses: the path alone, not a 400 (hyper's
    // origin-form URIs serve it too), and the Host field as sent.
    client.send(b"GET /uri HTTP/1.1\r\nHost: a%2Db:8080\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "/uri");
    client.send(b"GET /host HTTP/1.1\r\nHost: a%2Db\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "a%2Db");
    // Absolute-form: the target's authority wins over Host (RFC 9112
    // §3.2.2), also when the URI cannot hold it.
    client.send(b"GET http://a%2Db/host HTTP/1.1\r\nHost: other\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "a%2Db");
    // HTTP/2 has no Host field: one is made from `:authority` (RFC 9113
    // §8.3.1).
    let mut raw = common::h2raw::Raw::handshake(server.addr, &[]);
    let head = common::h2raw::block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/host"),
        (":authority", "a%2Db"),
    ]);
    raw.headers(1, &head, true);
    use falconet_server::h2::frame::kind;
    let frames = common::h2raw::frames_until(&mut raw, std::time::Duration::from_secs(5), |f| {
        f.end_stream() && f.kind == kind::DATA || [kind::RST_STREAM, kind::GOAWAY].contains(&f.kind)
    });
    let data: Vec<u8> =
        frames.iter().filter(|f| f.kind == kind::DATA).flat_map(|f| f.payload.clone()).collect();
    assert_eq!(common::text(&data), "a%2Db", "{frames:?}");
}

#[test]
fn uris_and_fields_a_service_keeps_stay_intact() {
    // The worker copies each head's URI and field values into pieces of a
    // shared chunk, reused once no piece of it is alive: a service that
    // keeps them across many later requests must still see its own bytes.
    type Kept = std::sync::Arc<std::sync::Mutex<Vec<(Uri, http::HeaderValue)>>>;
    let kept = Kept::default();
    let keep = kept.clone();
    let router = Router::new().route(
        "/keep/{n}",
        get(move |uri: Uri, headers: http::HeaderMap| {
            let value = headers["x-n"].clone();
            keep.lock().unwrap().push((uri, value));
            async { "kept" }
        }),
    );
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(router, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    const REQUESTS: usize = 1000;
    for n in 0..REQUESTS {
        // Lengths vary so that pieces straddle where chunks end.
        let tail = "z".repeat(n % 97);
        client.send(
            format!("GET /keep/{n}?{tail} HTTP/1.1\r\nHost: test\r\nX-N: {n}-{tail}\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(client.reply().unwrap().text(), "kept");
    }
    let kept = kept.lock().unwrap();
    assert_eq!(kept.len(), REQUESTS);
    for (n, (uri, value)) in kept.iter().enumerate() {
        let tail = "z".repeat(n % 97);
        assert_eq!(uri.to_string(), format!("/keep/{n}?{tail}"));
        assert_eq!(value.as_bytes(), format!("{n}-{tail}").as_bytes());
    }
}

#[test]
fn a_request_sees_only_its_own_fields() {
    // The field map of one answer is emptied and reused for the next
    // request's fields: nothing of the answer may show in the request.
    let router = Router::new()
        .route("/answer", get(|| async { ([("x-answer", "secret")], "answered") }))
        .route(
            "/fields",
            get(|headers: http::HeaderMap| async move {
                let mut names: Vec<_> = headers
                    .iter()
                    .map(|(name, value)| format!("{name}={}", value.to_str().unwrap()))
                    .collect();
                names.sort();
                names.join(",")
            }),
        );
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(router, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for _ in 0..3 {
        let reply = client.get("/answer");
        assert_eq!(reply.header("x-answer"), Some("secret"));
        client.send(b"GET /fields HTTP/1.1\r\nHost: test\r\nX-A: 1\r\nx-a: 2\r\n\r\n");
        assert_eq!(client.reply().unwrap().text(), "host=test,x-a=1,x-a=2");
    }
}

/// A hand-written service: `poll_ready` pending once (woken at once) when
/// `slow_ready`, then an error or a fixed answer.
#[derive(Clone)]
struct Custom {
    fail: bool,
    slow_ready: bool,
    polled: bool,
}

impl tower_service::Service<http::Request<Body>> for Custom {
    type Response = http::Response<String>;
    type Error = std::io::Error;
    type Future = Ready<Result<http::Response<String>, std::io::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        if self.slow_ready && !self.polled {
            self.polled = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if self.fail {
            return ready(Err(std::io::Error::other("the service failed on purpose")));
        }
        ready(Ok(http::Response::new(format!("{} {}", request.method(), request.uri().path()))))
    }
}

#[test]
fn a_service_error_is_500_and_a_service_not_ready_is_waited_for() {
    let runtime = runtime();
    let failing = Custom { fail: true, slow_ready: false, polled: false };
    let server = serve(options(), TowerHandler::new(failing, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/x").status, 500);
    assert_eq!(client.get("/x").status, 500, "the connection goes on");

    let failing_later = Custom { fail: true, slow_ready: true, polled: false };
    let server = serve(options(), TowerHandler::new(failing_later, runtime.handle().clone()));
    assert_eq!(Client::connect(server.addr).get("/x").status, 500);

    let slow = Custom { fail: false, slow_ready: true, polled: false };
    let server = serve(options(), TowerHandler::new(slow, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for _ in 0..3 {
        let reply = client.get("/slow");
        assert_eq!((reply.status, reply.text().as_str()), (200, "GET /slow"));
    }
}

#[test]
fn the_request_body_is_an_http_body() {
    use http_body::Body as _;
    let empty = Body::empty();
    assert!(empty.is_end_stream());
    assert_eq!(empty.size_hint().exact(), Some(0));
    // A service that reads it: the sized hint and the bytes.
    let runtime = runtime();
    let app = Router::new().route(
        "/len",
        post(|body: AxumBody| async move {
            let hint = http_body::Body::size_hint(&body).exact();
            let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            format!("{hint:?} {}", bytes.len())
        }),
    );
    let server = serve(options(), TowerHandler::new(app, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /len HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(client.reply().unwrap().text(), "Some(5) 5");
    client.send(
        b"POST /len HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    );
    assert_eq!(client.reply().unwrap().text(), "None 3");
    client.send(b"POST /len HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "Some(0) 0");
    // A body the service never reads is drained: the next request is served.
    client.send(b"POST /plaintext HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(client.reply().unwrap().status, 404);
    client.send(b"POST /len HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi");
    assert_eq!(client.reply().unwrap().text(), "Some(2) 2");
}

/// Counts the allocations of `head` and `respond` (on the worker thread).
struct Counted<H>(H);

impl<H: Handler> Handler for Counted<H> {
    type State = H::State;

    fn head(&self, request: &Request<'_>) -> H::State {
        falconet_testkit::set_under_test(true);
        let state = self.0.head(request);
        falconet_testkit::set_under_test(false);
        state
    }

    fn respond(&self, state: H::State, response: &mut Response<'_>) {
        falconet_testkit::set_under_test(true);
        self.0.respond(state, response);
        falconet_testkit::set_under_test(false);
    }

    fn blocking_here_stalls(&self) -> bool {
        self.0.blocking_here_stalls()
    }
}

/// One `GET /plaintext` with a Host field, as `http` values; built before
/// the count starts, as falconet builds its requests without allocating
/// (in steady state: pieces of a shared chunk and a recycled field map).
fn plaintext_request() -> http::Request<Body> {
    let mut request = http::Request::new(Body::empty());
    *request.uri_mut() = http::Uri::from_static("http://t/plaintext");
    request.headers_mut().append(http::header::HOST, http::HeaderValue::from_static("t"));
    request
}

/// What axum allocates for `request`, done by hand: the Router's call and
/// its response body polled to the end.
fn by_hand(router: &Router, request: http::Request<Body>) {
    use tower_service::Service as _;
    let mut router = router.clone();
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut future = std::pin::pin!(router.call(request));
    let Poll::Ready(Ok(response)) = future.as_mut().poll(&mut cx) else { panic!("ready") };
    let mut body = std::pin::pin!(response.into_body());
    while let Poll::Ready(Some(_)) = http_body::Body::poll_frame(body.as_mut(), &mut cx) {}
}

#[test]
fn the_inline_path_allocates_only_what_axum_does() {
    let runtime = runtime();
    let handler = Counted(TowerHandler::new(app(), runtime.handle().clone()));
    let server = serve(Options::new().workers(1), handler);
    let mut client = Client::connect(server.addr);
    const ROUNDS: usize = 200;
    let request = b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
    // Warm up: the worker's places, buffers, head cache and the date.
    for _ in 0..ROUNDS {
        client.send(request);
        client.reply().unwrap();
    }
    let _serial = falconet_testkit::serial();
    falconet_testkit::start_counting();
    for _ in 0..ROUNDS {
        client.send(request);
        assert_eq!(client.reply().unwrap().text(), "Hello, World!");
    }
    let ours = falconet_testkit::stop_counting();

    let router = app();
    let _enter = runtime.enter();
    for _ in 0..ROUNDS {
        by_hand(&router, plaintext_request());
    }
    let requests: Vec<_> = (0..ROUNDS).map(|_| plaintext_request()).collect();
    let theirs = falconet_testkit::count_allocations(|| {
        for request in requests {
            by_hand(&router, request);
        }
    });
    eprintln!(
        "GET /plaintext: {} allocations per request through falconet, {} by axum alone",
        ours as f64 / ROUNDS as f64,
        theirs as f64 / ROUNDS as f64
    );
    assert!(theirs > 0, "the count sees axum");
    assert_eq!(ours, theirs, "falconet's inline path allocates nothing of its own");
}

// Bodies polled on the worker: a ready answer whose body is not ready is
// written by the worker as its frames come (module docs, `OnWorker`).

/// A response body: `frames` frames of `size` bytes, each after a tokio
/// sleep of `every` (so the worker polls it inside the runtime's
/// context), then `end`: the end, an error, or a panic.
struct Timed {
    frames: usize,
    size: usize,
    every: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    end: End,
    produced: Option<&'static std::sync::atomic::AtomicU64>,
}

#[derive(Clone, Copy)]
enum End {
    Clean,
    Error,
    Panic,
}

impl Timed {
    fn new(frames: usize, size: usize, every: Duration, end: End) -> Self {
        Self { frames, size, every, sleep: None, end, produced: None }
    }
}

impl http_body::Body for Timed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if !self.every.is_zero() {
            let every = self.every;
            let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
            std::task::ready!(sleep.as_mut().poll(cx));
            self.sleep = None;
        }
        if self.frames == 0 {
            return match self.end {
                End::Clean => Poll::Ready(None),
                End::Error => Poll::Ready(Some(Err(std::io::Error::other("the body failed")))),
                End::Panic => panic!("the body panicked on purpose"),
            };
        }
        self.frames -= 1;
        if let Some(produced) = self.produced {
            produced.fetch_add(self.size as u64, std::sync::atomic::Ordering::Relaxed);
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; self.size])))))
    }
}

use std::future::Future as _;

static ENDLESS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn timed_app() -> Router {
    let ms = Duration::from_millis;
    Router::new()
        .route("/plaintext", get(|| async { "Hello, World!" }))
        .route(
            "/timed",
            get(move || async move { AxumBody::new(Timed::new(3, 4, ms(30), End::Clean)) }),
        )
        .route(
            "/fail-at-once",
            get(|| async { AxumBody::new(Timed::new(0, 1, Duration::ZERO, End::Error)) }),
        )
        .route(
            "/panic-at-once",
            get(|| async { AxumBody::new(Timed::new(0, 1, Duration::ZERO, End::Panic)) }),
        )
        .route(
            "/fail-early",
            get(move || async move { AxumBody::new(Timed::new(0, 1, ms(5), End::Error)) }),
        )
        .route(
            "/panic-early",
            get(move || async move { AxumBody::new(Timed::new(0, 1, ms(5), End::Panic)) }),
        )
        .route(
            "/fail-late",
            get(move || async move { AxumBody::new(Timed::new(2, 100_000, ms(5), End::Error)) }),
        )
        .route(
            "/panic-late",
            get(move || async move { AxumBody::new(Timed::new(2, 100_000, ms(5), End::Panic)) }),
        )
        .route(
            "/endless",
            get(|| async {
                let mut body = Timed::new(usize::MAX, 64 * 1024, Duration::ZERO, End::Clean);
                body.produced = Some(&ENDLESS);
                AxumBody::new(body)
            }),
        )
}

fn timed_server() -> (tokio::runtime::Runtime, common::TestServer<TowerHandler<Router>>) {
    let runtime = runtime();
    let handler = TowerHandler::new(timed_app(), runtime.handle().clone());
    // One worker: the body polled on it must not hold up other connections.
    let server = serve(options().workers(1), handler);
    (runtime, server)
}

#[test]
fn a_body_that_waits_on_timers_is_streamed_while_the_worker_serves_others() {
    let (_runtime, server) = timed_server();
    let mut slow = Client::connect(server.addr);
    slow.send(b"GET /timed HTTP/1.1\r\nHost: t\r\n\r\n");
    // Three frames 30 ms apart: meanwhile the one worker answers others.
    let started = std::time::Instant::now();
    let mut other = Client::connect(server.addr);
    for _ in 0..10 {
        assert_eq!(other.get("/plaintext").text(), "Hello, World!");
    }
    let reply = slow.reply().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60), "the frames waited");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    assert_eq!(reply.text(), "xxxxxxxxxxxx");
    // The connection goes on.
    assert_eq!(slow.get("/plaintext").text(), "Hello, World!");
}

#[test]
fn a_body_that_fails_at_once_gets_500_and_after_a_wait_a_cut_response() {
    let (_runtime, server) = timed_server();
    for path in ["/fail-at-once", "/panic-at-once"] {
        let mut client = Client::connect(server.addr);
        let reply = client.get(path);
        assert_eq!(reply.status, 500, "{path}");
        // Answered on the worker's first poll: the connection goes on.
        assert_eq!(client.get("/plaintext").text(), "Hello, World!", "{path}");
    }
    // A body that waits has its head sent at once (a stream's client, say
    // server-sent events, sees it before the first frame): its failure
    // can only cut the response.
    for path in ["/fail-early", "/panic-early"] {
        let mut client = Client::connect(server.addr);
        client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let text = String::from_utf8(client.read_to_end().unwrap()).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {text}");
        assert!(text.contains("\r\nTransfer-Encoding: chunked\r\n"), "{path}: {text}");
        assert!(text.ends_with("\r\n\r\n"), "{path}: the head alone: {text}");
    }
    assert_eq!(Client::connect(server.addr).get("/plaintext").text(), "Hello, World!");
}

#[test]
fn a_body_that_fails_midway_cuts_the_response_and_closes() {
    let (_runtime, server) = timed_server();
    for path in ["/fail-late", "/panic-late"] {
        let mut client = Client::connect(server.addr);
        client.send(
            format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            .as_bytes(),
        );
        let text = client.read_to_end().unwrap();
        let text = String::from_utf8_lossy(&text);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{path}");
        assert!(text.contains("Transfer-Encoding: chunked\r\n"), "{path}");
        // Both frames went out, then the connection closed: no last
        // chunk, and the pipelined request after it is not answered.
        assert_eq!(text.matches('x').count(), 200_000, "{path}");
        assert!(!text.ends_with("0\r\n\r\n"), "{path}: the cut response looks complete");
        assert!(!text.contains("Hello, World!"), "{path}");
    }
    assert_eq!(Client::connect(server.addr).get("/plaintext").text(), "Hello, World!");
}

#[test]
fn an_http10_client_gets_a_streamed_body_delimited_by_the_close() {
    let (_runtime, server) = timed_server();
    let mut client = Client::connect(server.addr);
    client.send(b"GET /timed HTTP/1.0\r\n\r\n");
    let text = String::from_utf8(client.read_to_end().unwrap()).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(!head.contains("Transfer-Encoding"), "{head}");
    assert!(!head.contains("Content-Length"), "{head}");
    assert_eq!(body, "xxxxxxxxxxxx");
}

#[test]
fn a_client_that_does_not_read_stops_an_endless_body() {
    let (_runtime, server) = timed_server();
    let mut client = Client::connect(server.addr);
    client.send(b"GET /endless HTTP/1.1\r\nHost: t\r\n\r\n");
    let produced = || ENDLESS.load(std::sync::atomic::Ordering::Relaxed);
    // Polled only while the output has room: once the socket buffers are
    // full, the body is not polled again.
    let mut last = produced();
    for _ in 0..50 {
        thread::sleep(Duration::from_millis(100));
        let now = produced();
        if now == last && now > 0 {
            break;
        }
        last = now;
    }
    thread::sleep(Duration::from_millis(300));
    let stopped = produced();
    assert_eq!(stopped, last, "the body is still polled while nothing is sent");
    // The kernel's socket buffers, our output buffer and one frame.
    assert!(stopped < 64 << 20, "{stopped} bytes produced for a client that reads nothing");
    // Reading lets it go on.
    let mut sink = vec![0; 1 << 20];
    for _ in 0..16 {
        std::io::Read::read_exact(&mut client.stream(), &mut sink).unwrap();
    }
    thread::sleep(Duration::from_millis(100));
    assert!(produced() > stopped, "reading did not resume the body");
    // Other connections were served all along.
    assert_eq!(Client::connect(server.addr).get("/plaintext").text(), "Hello, World!");
    eprintln!("an endless body stopped after {stopped} bytes for a client that read nothing");
}

/// At the smallest pool, what a runtime thread did with pool blocks (a body
/// it read, a response it wrote) leaves none in that thread's cache: the
/// server goes on serving. Every connection after the first upload was
/// reset when the idle thread kept the free blocks for itself.
#[test]
fn the_smallest_pool_serves_on_after_bodies_read_and_written_on_runtime_threads() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let app = Router::new()
        .route("/plaintext", get(|| async { "Hello, World!" }))
        .route("/count", post(|body: Bytes| async move { body.len().to_string() }))
        .route(
            "/later",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                vec![b'x'; 1 << 20]
            }),
        );
    let options = options().workers(1).max_pool_bytes(falconet_server::MIN_POOL_BYTES);
    let server = serve(options, TowerHandler::new(app, runtime.handle().clone()));
    for round in 0..3 {
        let mut client = Client::connect(server.addr);
        let body = vec![b'q'; 300_000];
        let head =
            format!("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", body.len());
        client.send(head.as_bytes());
        client.send(&body);
        let reply = client.reply().unwrap();
        assert_eq!((reply.status, reply.text()), (200, "300000".to_string()), "round {round}");
        let reply = client.get("/later");
        assert_eq!(reply.status, 200, "round {round}");
        assert_eq!(reply.body.len(), 1 << 20, "round {round}: the whole response");
        // A new connection after the runtime's threads went quiet.
        thread::sleep(Duration::from_millis(50));
        assert_eq!(Client::connect(server.addr).get("/plaintext").text(), "Hello, World!");
    }
    common::only_the_worker_caches(&server, "after three rounds");
}

/// A router whose `/never` future waits for ever, counted in `live` while
/// it exists.
fn never_app(live: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Router {
    struct Alive(std::sync::Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Alive {
        fn drop(&mut self) {
            self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    /// One frame, then none ever, holding `Alive`.
    struct OnceThenNever(Option<Bytes>, #[allow(dead_code)] Alive);
    impl http_body::Body for OnceThenNever {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            match self.0.take() {
                Some(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                None => Poll::Pending,
            }
        }
    }
    let (never, events) = (live.clone(), live.clone());
    Router::new()
        .route(
            "/never",
            get(move || {
                let live = never.clone();
                async move {
                    live.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let _alive = Alive(live);
                    std::future::pending::<()>().await;
                    "never"
                }
            }),
        )
        .route(
            // A stream of events that stops after the first: its future
            // waits first, so the body is polled in the task.
            "/events",
            get(move || {
                let live = events.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    live.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    AxumBody::new(OnceThenNever(Some(Bytes::from_static(b"event")), Alive(live)))
                }
            }),
        )
}

/// Waits up to 5 s for `live` to reach `n`; returns what it last saw.
fn settles_at(live: &std::sync::atomic::AtomicUsize, n: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = live.load(std::sync::atomic::Ordering::SeqCst);
        if now == n || std::time::Instant::now() > deadline {
            return now;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A service future that waits (and a response body waiting in its task)
/// is dropped once its answer can go nowhere, as hyper drops it with its
/// connection: after `response_timeout`'s 503, after the server's shutdown
/// closed its connection, and over HTTP/2 when the client resets its
/// stream. It lived on (with all it held) after its
/// client, its connection and the server.
#[test]
fn a_waiting_service_future_is_dropped_when_its_answer_can_go_nowhere() {
    let live = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runtime = runtime();
    let handler = || TowerHandler::new(never_app(&live), runtime.handle().clone());

    // response_timeout answers 503.
    let timed = options().response_timeout(Some(Duration::from_millis(300)));
    let server = serve(timed, handler());
    for _ in 0..3 {
        assert_eq!(Client::connect(server.addr).get("/never").status, 503);
    }
    assert_eq!(settles_at(&live, 0), 0, "futures alive after their 503");
    server.stop();

    // The shutdown's deadline closes the connections.
    let untimed = options().response_timeout(None).shutdown_timeout(Duration::from_millis(200));
    let server = serve(untimed.clone(), handler());
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let mut client = Client::connect(server.addr);
            client.send(b"GET /never HTTP/1.1\r\nHost: t\r\n\r\n");
            client
        })
        .collect();
    assert_eq!(settles_at(&live, 3), 3);
    server.stop();
    assert_eq!(settles_at(&live, 0), 0, "futures alive after the server stopped");
    drop(clients);

    // So does a response body waiting in the task for its next frame.
    let server = serve(untimed, handler());
    let mut client = Client::connect(server.addr);
    client.send(
        b"GET /events HTTP/1.1
Host: t

",
    );
    assert_eq!(settles_at(&live, 1), 1);
    server.stop();
    assert_eq!(settles_at(&live, 0), 0, "a body alive after the server stopped");
    drop(client);

    // An HTTP/2 client resets its stream.
    let server = serve(options().response_timeout(None), handler());
    let client = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client.block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (mut send, connection) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let request = http::Request::get("http://t/never").body(()).unwrap();
        let (response, _) = send.send_request(request, true).unwrap();
        while live.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(response); // RST_STREAM(CANCEL)
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while live.load(std::sync::atomic::Ordering::SeqCst) != 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0, "alive after its reset");
        // The connection goes on.
        let request = http::Request::get("http://t/never").body(()).unwrap();
        assert!(send.send_request(request, true).is_ok());
    });
    server.stop();
}

/// An axum handler that answers `202` at once and reads the body in a task
/// it spawns (a fire-and-forget upload): with `Connection: close` too, the
/// task reads the whole body (the connection closes once it is back), as
/// it does on a connection kept alive.
#[test]
fn a_body_read_by_a_task_after_a_closing_202_arrives_whole() {
    use http_body_util::BodyExt;
    let runtime = runtime();
    let (read, reports) = std::sync::mpsc::channel::<Result<(usize, u64), String>>();
    let app = Router::new().route(
        "/upload",
        post(move |body: AxumBody| {
            let report = read.clone();
            async move {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let mut body = body;
                    let mut got = (0, common::FNV_START);
                    let result = loop {
                        match body.frame().await {
                            Some(Ok(frame)) => {
                                if let Some(data) = frame.data_ref() {
                                    got = (got.0 + data.len(), common::fnv(got.1, data));
                                }
                            }
                            Some(Err(error)) => break Err(error.to_string()),
                            None => break Ok(got),
                        }
                    };
                    let _ = report.send(result);
                });
                StatusCode::ACCEPTED
            }
        }),
    );
    let server = serve(options(), TowerHandler::new(app, runtime.handle().clone()));
    let body: Vec<u8> = (0..1_000_000).map(pattern).collect();
    let expected = (body.len(), common::fnv(common::FNV_START, &body));
    for close in ["Connection: close\r\n", ""] {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let head = format!(
            "POST /upload HTTP/1.1\r\nHost: t\r\n{close}Content-Length: {}\r\n\r\n",
            body.len()
        );
        let mut pieces = vec![head.into_bytes(), body.clone()];
        if close.is_empty() {
            pieces
                .push(b"GET /plaintext HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".to_vec());
        }
        let writer = common::trickle(&stream, pieces, Duration::ZERO);
        let report = reports.recv_timeout(Duration::from_secs(30)).expect("the task read");
        assert_eq!(report.unwrap_or_else(|e| panic!("{close:?}: {e}")), expected, "{close:?}");
        writer.join().unwrap();
        let mut reply = Vec::new();
        std::io::Read::read_to_end(&mut stream, &mut reply).expect("the connection closes");
        let reply = String::from_utf8_lossy(&reply);
        assert!(reply.starts_with("HTTP/1.1 202 Accepted\r\n"), "{close:?}: {reply}");
    }
}
