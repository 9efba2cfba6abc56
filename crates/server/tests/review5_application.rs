//! Adversarial review (2026-12-06): an application that misbehaves or lies
//! must never corrupt a connection's framing or another request's
//! response. Found: a `Response` written after `defer` put a second
//! response on the wire; an HTTP/2 deferred head larger than the stream's
//! window never went out; a tower 1xx answered after `poll_ready` was
//! pending went out as 200. A `poll_ready` error after pending closes the
//! connection after its 500 (not after an error on the worker): kept, and
//! documented, since only the worker knows a body's client error (a
//! second review). The rest held.
#![cfg(feature = "tower")]

mod common;

use common::exchange;

use std::convert::Infallible;
use std::future::Future as _;
use std::future::{Ready, ready};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::mpsc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, serve};
use falconet_server::tower::{Body, TowerHandler};
use falconet_server::{Handler, Options, Request, Responder, Response, ResponseError};
use http_body::{Frame, SizeHint};

fn opts() -> Options {
    Options::new().workers(1)
}

// ---------------------------------------------------------------------------
// Native handler with routes by path.

type Route = fn(&mut Response<'_>, &Probe);

#[derive(Default)]
struct Shared {
    /// Responders a route hands to the test.
    parked: Mutex<Option<mpsc::Sender<Responder>>>,
    /// Results a route reports.
    seen: Mutex<Vec<String>>,
    results: Mutex<Vec<std::thread::JoinHandle<Result<(), ResponseError>>>>,
}

struct Probe {
    routes: Vec<(&'static str, Route)>,
    shared: std::sync::Arc<Shared>,
}

impl std::ops::Deref for Probe {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Probe {
    fn new(routes: Vec<(&'static str, Route)>) -> Self {
        Self { routes, shared: Default::default() }
    }
    fn park(&self, responder: Responder) {
        let sender = self.parked.lock().unwrap().clone().expect("a receiver");
        sender.send(responder).unwrap();
    }
    fn note(&self, what: String) {
        self.seen.lock().unwrap().push(what);
    }
}

impl Handler for Probe {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        request.path().to_string()
    }

    fn respond(&self, path: String, response: &mut Response<'_>) {
        for (name, route) in &self.routes {
            if *name == path {
                return route(response, self);
            }
        }
        response.body(path.as_bytes()).unwrap();
    }
}

/// A parsed response: status, fields (names lowercased), body.
type Reply = (u16, Vec<(String, String)>, Vec<u8>);

/// Parses `bytes` as a sequence of HTTP/1.1 responses (status, body),
/// returning what it parsed and whatever trailing bytes did not parse.
fn parse_all(mut bytes: &[u8], heads: &[bool]) -> (Vec<Reply>, Vec<u8>) {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        if bytes.is_empty() {
            return (out, Vec::new());
        }
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            return (out, bytes.to_vec());
        };
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let Some(status) = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|r| r.get(..3))
            .and_then(|c| c.parse::<u16>().ok())
        else {
            return (out, bytes.to_vec());
        };
        let fields: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let mut rest = &bytes[end + 4..];
        let head_only = heads.get(i).copied().unwrap_or(false);
        let mut body = Vec::new();
        if status / 100 == 1 {
            bytes = rest;
            continue;
        }
        if head_only || status == 204 || status == 304 {
        } else if let Some(te) = get("transfer-encoding") {
            if te != "chunked" {
                return (out, bytes.to_vec());
            }
            loop {
                let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") else {
                    return (out, bytes.to_vec());
                };
                let size_text = String::from_utf8_lossy(&rest[..nl]).into_owned();
                let Ok(size) =
                    usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                else {
                    return (out, bytes.to_vec());
                };
                rest = &rest[nl + 2..];
                if size == 0 {
                    // trailers
                    loop {
                        let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") else {
                            return (out, bytes.to_vec());
                        };
                        let line = &rest[..nl];
                        rest = &rest[nl + 2..];
                        if line.is_empty() {
                            break;
                        }
                    }
                    break;
                }
                if rest.len() < size + 2 {
                    return (out, bytes.to_vec());
                }
                body.extend_from_slice(&rest[..size]);
                if &rest[size..size + 2] != b"\r\n" {
                    return (out, bytes.to_vec());
                }
                rest = &rest[size + 2..];
            }
        } else if let Some(len) = get("content-length") {
            let len: usize = len.parse().unwrap();
            if rest.len() < len {
                return (out, bytes.to_vec());
            }
            body.extend_from_slice(&rest[..len]);
            rest = &rest[len..];
        } else {
            body.extend_from_slice(rest);
            rest = &[];
        }
        out.push((status, fields, body));
        bytes = rest;
        i += 1;
    }
}

/// `GET path` with `GET next` pipelined behind it (which closes), read
/// until the server closes or goes quiet for 3 s.
fn then_next(addr: std::net::SocketAddr, path: &str, next: &str) -> (Vec<u8>, bool) {
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\n\r\nGET {next} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    exchange(addr, request.as_bytes(), Duration::from_secs(3))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------------------
// 1. A `Response` written after `defer()`.

fn defer_then_body(response: &mut Response<'_>, probe: &Probe) {
    let responder = response.defer().unwrap();
    let r = response.body(b"sync");
    probe.note(format!("body after defer: {r:?}"));
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        let _ = responder.body(b"late");
    });
}

fn defer_then_write(response: &mut Response<'_>, probe: &Probe) {
    let responder = response.defer().unwrap();
    let r = response.header("X-Sync", "1").map(drop).and_then(|()| response.write(b"sync"));
    probe.note(format!("write after defer: {r:?}"));
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        let _ = responder.body(b"late");
    });
}

/// The docs of `Response::defer`: "after `defer` it writes nothing more".
/// A handler that (wrongly) writes to the `Response` after deferring must
/// get an error, and the wire must carry one response per request.
#[test]
fn h1_response_written_after_defer_is_one_response_per_request() {
    let probe = Probe::new(vec![
        ("/defer-body", defer_then_body as Route),
        ("/defer-write", defer_then_write),
    ]);
    let shared = probe.shared.clone();
    let server = serve(opts(), probe);
    let mut failures = Vec::new();
    for path in ["/defer-body", "/defer-write"] {
        let (bytes, _) = then_next(server.addr, path, "/next");
        let (replies, rest) = parse_all(&bytes, &[]);
        let bodies: Vec<String> = replies.iter().map(|r| text(&r.2)).collect();
        let seen = shared.seen.lock().unwrap().last().cloned().unwrap_or_default();
        if !seen.ends_with("Err(Deferred)") {
            failures.push(format!("{path}: the write after defer gave {seen}"));
        }
        if !rest.is_empty() || bodies != ["late", "/next"] {
            failures.push(format!(
                "{path}: bodies {bodies:?} rest {:?}; wire {:?}; app saw {:?}",
                text(&rest),
                text(&bytes),
                shared.seen.lock().unwrap()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The same over HTTP/2: the stream must carry one well-formed response.
#[test]
fn h2_response_written_after_defer_is_one_response() {
    let server = serve(
        opts(),
        Probe::new(vec![
            ("/defer-body", defer_then_body as Route),
            ("/defer-write", defer_then_write),
        ]),
    );
    common::current_thread().block_on(async {
        let send = common::h2_client(server.addr).await;
        for path in ["/defer-body", "/defer-write", "/next"] {
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::get(format!("http://x{path}")).body(()).unwrap();
            let (response, _) = ready.send_request(request, true).unwrap();
            let response =
                tokio::time::timeout(Duration::from_secs(5), response).await.expect("answered");
            let response = response.unwrap_or_else(|e| panic!("{path}: {e}"));
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(piece) = body.data().await {
                got.extend_from_slice(&piece.unwrap_or_else(|e| panic!("{path}: {e}")));
            }
            let expected: &[u8] = if path == "/next" { b"/next" } else { b"late" };
            assert_eq!(text(&got), text(expected), "{path}");
        }
    });
}

// ---------------------------------------------------------------------------
// 2. Deferred responders: after the connection is gone; huge pieces.

fn park(response: &mut Response<'_>, probe: &Probe) {
    let responder = response.defer().unwrap();
    probe.park(responder);
}

/// A client resets its connection while the application streams: the
/// writes fail with `Closed` within a few seconds (never hang), and
/// `closed()` is ready.
#[test]
fn h1_responder_after_client_reset_fails_with_closed() {
    let probe = Probe::new(vec![("/park", park as Route)]);
    let (tx, rx) = mpsc::channel();
    *probe.parked.lock().unwrap() = Some(tx);
    let server = serve(opts(), probe);
    let stream = TcpStream::connect(server.addr).unwrap();
    (&stream).write_all(b"GET /park HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut responder = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    // A reset: SO_LINGER 0.
    socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)).unwrap();
    drop(stream);
    let began = Instant::now();
    let piece = vec![b'x'; 64 * 1024];
    let outcome = loop {
        match responder.write_blocking(&piece) {
            Ok(()) if began.elapsed() < Duration::from_secs(10) => {}
            other => break other,
        }
    };
    assert_eq!(outcome, Err(ResponseError::Closed), "after {:?}", began.elapsed());
    assert!(responder.is_closed());
    common::block_on(responder.closed());
    assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
}

fn huge_write(response: &mut Response<'_>, probe: &Probe) {
    let mut responder = response.defer().unwrap();
    probe.park_result(std::thread::spawn(move || {
        let piece = vec![b'h'; 256 << 20];
        let r = responder.write_blocking(&piece);
        if r.is_ok() { responder.finish() } else { r }
    }));
}

impl Shared {
    fn park_result(&self, handle: std::thread::JoinHandle<Result<(), ResponseError>>) {
        self.results.lock().unwrap().push(handle);
    }
}

// ---------------------------------------------------------------------------
// 3. Tower services that lie.

/// Whether `poll_ready` is pending this time: once (woken at once) when
/// `slow`, then never.
fn pending_once(slow: bool, polled: &mut bool, cx: &mut Context<'_>) -> bool {
    if slow && !*polled {
        *polled = true;
        cx.waker().wake_by_ref();
        return true;
    }
    false
}

/// A service: `poll_ready` pending once (woken at once) when `slow_ready`,
/// then `answer` for every path but `/ok`.
#[derive(Clone)]
struct Svc {
    slow_ready: bool,
    polled: bool,
    answer: fn() -> http::Response<Lying>,
}

impl tower_service::Service<http::Request<Body>> for Svc {
    type Response = http::Response<Lying>;
    type Error = std::io::Error;
    type Future = Ready<Result<http::Response<Lying>, std::io::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        if pending_once(self.slow_ready, &mut self.polled, cx) {
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if request.uri().path() == "/ok" {
            return ready(Ok(http::Response::new(Lying::data(vec![b"ok"]))));
        }
        ready(Ok((self.answer)()))
    }
}

/// A body of scripted frames, with a size hint that may lie.
struct Lying {
    frames: std::collections::VecDeque<Result<Frame<Bytes>, std::io::Error>>,
    hint: SizeHint,
}

impl Lying {
    fn data(pieces: Vec<&'static [u8]>) -> Self {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        Self {
            frames: pieces.into_iter().map(|p| Ok(Frame::data(Bytes::from_static(p)))).collect(),
            hint: SizeHint::with_exact(total as u64),
        }
    }
}

impl http_body::Body for Lying {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(self.frames.pop_front())
    }
    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

fn serve_svc(
    options: Options,
    slow_ready: bool,
    answer: fn() -> http::Response<Lying>,
) -> (common::TestServer<TowerHandler<Svc>>, tokio::runtime::Runtime) {
    common::serve_tower(options, Svc { slow_ready, polled: false, answer })
}

fn switching() -> http::Response<Lying> {
    http::Response::builder()
        .status(101)
        .header("upgrade", "websocket")
        .header("connection", "upgrade")
        .header("x-service", "mine")
        .body(Lying::data(vec![b"zz"]))
        .unwrap()
}

/// The tower docs: "A 1xx answer is no final response ...: the service
/// failed, and its head and body are not sent" (500). A service whose
/// `poll_ready` was pending once and that then answers 101 must get the
/// same 500, and the pipelined request its own answer.
#[test]
fn tower_1xx_after_poll_ready_pending_is_a_clean_500() {
    for slow_ready in [false, true] {
        let (server, _rt) = serve_svc(opts(), slow_ready, switching);
        let (bytes, _) = then_next(server.addr, "/up", "/ok");
        let (replies, rest) = parse_all(&bytes, &[]);
        assert!(rest.is_empty(), "slow_ready={slow_ready}: {:?}", text(&bytes));
        let first = &replies[0];
        assert_eq!(first.0, 500, "slow_ready={slow_ready}: {:?}", text(&bytes));
        assert!(
            !first.1.iter().any(|(n, _)| n == "x-service" || n == "upgrade"),
            "slow_ready={slow_ready}: {:?}",
            text(&bytes)
        );
    }
}

/// The same over HTTP/2.
#[test]
fn tower_1xx_after_poll_ready_pending_over_h2_is_a_clean_500() {
    let (server, _rt) = serve_svc(opts(), true, switching);
    common::current_thread().block_on(async {
        let send = common::h2_client(server.addr).await;
        let mut ready = send.clone().ready().await.unwrap();
        let request = http::Request::get("http://x/up").body(()).unwrap();
        let (response, _) = ready.send_request(request, true).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status().as_u16(), 500, "{response:?}");
        assert!(response.headers().get("x-service").is_none(), "{response:?}");
    });
}

fn exact_10_yields_20() -> http::Response<Lying> {
    let mut body = Lying::data(vec![b"0123456789", b"abcdefghij"]);
    body.hint = SizeHint::with_exact(10);
    http::Response::new(body)
}

fn exact_10_yields_5() -> http::Response<Lying> {
    let mut body = Lying::data(vec![b"01234"]);
    body.hint = SizeHint::with_exact(10);
    http::Response::new(body)
}

/// The tower docs: a body of exact size "goes out with Content-Length ...
/// and cut (a close, an HTTP/2 reset) if it yields more or less than it
/// said". Whatever the outcome, the bytes must parse as one response per
/// request (or stop before an ambiguous one).
#[test]
fn tower_size_hint_lies_keep_framing() {
    let mut failures = Vec::new();
    for (name, answer) in [("more", exact_10_yields_20 as fn() -> _), ("less", exact_10_yields_5)] {
        for slow_ready in [false, true] {
            let (server, _rt) = serve_svc(opts(), slow_ready, answer);
            let (bytes, closed) = then_next(server.addr, "/lie", "/ok");
            let (replies, rest) = parse_all(&bytes, &[]);
            let case = format!(
                "{name} slow_ready={slow_ready}: {:?} rest {:?} closed={closed}",
                text(&bytes),
                text(&rest)
            );
            let bodies: Vec<String> = replies.iter().map(|r| text(&r.2)).collect();
            match bodies.as_slice() {
                // Cut before a second response: what the docs say.
                [] => assert!(closed, "{case}"),
                // All ready at once: sent whole, with the length of what
                // it yielded (the tower module's docs).
                [first, second] => {
                    assert!(second == "ok" && rest.is_empty(), "{case}");
                    let yielded = if name == "more" { 20 } else { 5 };
                    if first.len() != yielded {
                        failures.push(format!(
                            "{} bytes, not the {yielded} yielded: {case}",
                            first.len()
                        ));
                    }
                }
                _ => failures.push(format!("unexpected: {case}")),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

fn bad_trailers() -> http::Response<Lying> {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("content-length", "99".parse().unwrap());
    trailers.insert("transfer-encoding", "chunked".parse().unwrap());
    trailers.insert("connection", "close".parse().unwrap());
    trailers.insert("host", "evil".parse().unwrap());
    trailers.insert("x-ok", "1".parse().unwrap());
    let body = Lying {
        frames: vec![
            Ok(Frame::data(Bytes::from_static(b"abc"))),
            Ok(Frame::trailers(trailers)),
            Ok(Frame::data(Bytes::from_static(b"after"))),
        ]
        .into(),
        hint: SizeHint::default(),
    };
    http::Response::new(body)
}

/// Trailers with forbidden fields, then data after the trailers: HTTP/1.1
/// framing stays valid, forbidden fields are left out, and the pipelined
/// request is answered.
#[test]
fn tower_trailers_forbidden_and_data_after_trailers_h1() {
    for slow_ready in [false, true] {
        let (server, _rt) = serve_svc(opts(), slow_ready, bad_trailers);
        let (bytes, _) = exchange(
            server.addr,
            b"GET /t HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(3),
        );
        let wire = text(&bytes);
        let (replies, rest) = parse_all(&bytes, &[]);
        assert!(rest.is_empty(), "{slow_ready}: {wire:?}");
        assert_eq!(replies.len(), 2, "{slow_ready}: {wire:?}");
        assert_eq!(text(&replies[1].2), "ok", "{wire:?}");
        let lower = wire.to_ascii_lowercase();
        assert!(!lower.contains("evil") && !lower.contains("content-length: 99"), "{wire:?}");
        eprintln!("trailers slow_ready={slow_ready}: {wire:?}");
    }
}

fn version_2() -> http::Response<Lying> {
    http::Response::builder()
        .version(http::Version::HTTP_2)
        .header("x-a", "b")
        .body(Lying::data(vec![b"v2"]))
        .unwrap()
}

/// A response whose `version` says HTTP/2 on an HTTP/1.1 or HTTP/1.0
/// connection: written in the connection's own version.
#[test]
fn tower_response_version_is_ignored() {
    let (server, _rt) = serve_svc(opts(), false, version_2);
    let (bytes, _) = then_next(server.addr, "/v", "/ok");
    let (replies, rest) = parse_all(&bytes, &[]);
    assert!(rest.is_empty() && replies.len() == 2, "{:?}", text(&bytes));
    let (bytes, _) = exchange(server.addr, b"GET /v HTTP/1.0\r\n\r\n", Duration::from_secs(3));
    assert!(
        text(&bytes).starts_with("HTTP/1.1 200 OK\r\n") && text(&bytes).ends_with("v2"),
        "{:?}",
        text(&bytes)
    );
}

/// Never ready: `response_timeout` answers 503, nothing hangs.
#[derive(Clone)]
struct NeverReady;

impl tower_service::Service<http::Request<Body>> for NeverReady {
    type Response = http::Response<String>;
    type Error = Infallible;
    type Future = Ready<Result<http::Response<String>, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Pending
    }
    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        unreachable!()
    }
}

#[test]
fn tower_never_ready_is_503_at_the_response_timeout() {
    let (server, _rt) =
        common::serve_tower(opts().response_timeout(Some(Duration::from_secs(1))), NeverReady);
    let (bytes, closed) = exchange(
        server.addr,
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(5),
    );
    let (replies, rest) = parse_all(&bytes, &[]);
    assert!(rest.is_empty(), "{:?}", text(&bytes));
    assert_eq!(replies.iter().map(|r| r.0).collect::<Vec<_>>(), [503], "{:?}", text(&bytes));
    assert!(closed, "{:?}", text(&bytes));
}

/// `poll_ready` errors (at once, and after pending once): 500; the
/// pipelined request is answered after the first, not after the second.
#[derive(Clone)]
struct ReadyFails {
    slow: bool,
    polled: bool,
}

impl tower_service::Service<http::Request<Body>> for ReadyFails {
    type Response = http::Response<String>;
    type Error = std::io::Error;
    type Future = Ready<Result<http::Response<String>, std::io::Error>>;
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        if pending_once(self.slow, &mut self.polled, cx) {
            return Poll::Pending;
        }
        Poll::Ready(Err(std::io::Error::other("not ready, ever")))
    }
    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        unreachable!()
    }
}

#[test]
fn tower_poll_ready_error_is_500_either_way() {
    for slow in [false, true] {
        let (server, _rt) = common::serve_tower(opts(), ReadyFails { slow, polled: false });
        let (bytes, closed) = then_next(server.addr, "/a", "/b");
        let (replies, rest) = parse_all(&bytes, &[]);
        eprintln!("ready error slow={slow}: {:?} closed={closed}", text(&bytes));
        assert!(rest.is_empty(), "{:?}", text(&bytes));
        assert!(replies.iter().all(|r| r.0 == 500), "{:?}", text(&bytes));
        // On the worker the connection goes on; in the request's task
        // the dropped responder's 500 closes it (the tower docs).
        let expected = if slow { 1 } else { 2 };
        assert_eq!(replies.len(), expected, "slow={slow}: {:?}", text(&bytes));
        assert!(closed, "slow={slow}: {:?}", text(&bytes));
    }
}

// ---------------------------------------------------------------------------
// 4. Very long field values.

fn long_value(response: &mut Response<'_>, _: &Probe) {
    let value = vec![b'v'; 1 << 20];
    response.header("X-Long", &value).unwrap();
    response.body(b"long").unwrap();
}

fn long_value_later(response: &mut Response<'_>, _: &Probe) {
    let mut responder = response.defer().unwrap();
    std::thread::spawn(move || {
        let value = vec![b'v'; 1 << 20];
        responder.header("X-Long", &value).unwrap();
        responder.body(b"long").unwrap();
    });
}

#[test]
fn a_one_mib_field_value_h1_and_h2() {
    let server = serve(
        opts(),
        Probe::new(vec![("/long", long_value as Route), ("/long-later", long_value_later)]),
    );
    for path in ["/long", "/long-later"] {
        let (bytes, _) = then_next(server.addr, path, "/next");
        let (replies, rest) = parse_all(&bytes, &[]);
        assert!(rest.is_empty(), "{path}");
        let bodies: Vec<String> = replies.iter().map(|r| text(&r.2)).collect();
        assert_eq!(bodies, ["long", "/next"], "{path}");
    }
    common::current_thread().block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (send, connection): (h2::client::SendRequest<Bytes>, _) =
            h2::client::Builder::new().max_header_list_size(4 << 20).handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        for path in ["/long", "/long-later", "/next"] {
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::get(format!("http://x{path}")).body(()).unwrap();
            let (response, _) = ready.send_request(request, true).unwrap();
            let response = tokio::time::timeout(Duration::from_secs(5), response)
                .await
                .unwrap_or_else(|_| panic!("{path}: no answer in 5 s"))
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            if path != "/next" {
                assert_eq!(
                    response.headers().get("x-long").map(|v| v.len()),
                    Some(1 << 20),
                    "{path}"
                );
            }
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(piece) = body.data().await {
                got.extend_from_slice(&piece.unwrap());
            }
            assert_eq!(text(&got), if path == "/next" { "/next" } else { "long" }, "{path}");
        }
    });
}

fn cookies_later(response: &mut Response<'_>, _: &Probe) {
    let mut responder = response.defer().unwrap();
    std::thread::spawn(move || {
        // Ten 10 KiB cookies: a 100 KiB head.
        for i in 0..10 {
            let value = format!("c{i}={}", "k".repeat(10 * 1024));
            responder.header("Set-Cookie", value).unwrap();
        }
        responder.body(b"cookies").unwrap();
    });
}

fn cookies_now(response: &mut Response<'_>, _: &Probe) {
    for i in 0..10 {
        let value = format!("c{i}={}", "k".repeat(10 * 1024));
        response.header("Set-Cookie", value).unwrap();
    }
    response.body(b"cookies").unwrap();
}

/// A deferred HTTP/2 response whose head is larger than the stream's send
/// window (100 KiB of Set-Cookie against the default 65,535): HEADERS are
/// not flow-controlled (RFC 9113 §6.9), so it must be answered; the same
/// head answered synchronously is.
#[test]
fn h2_deferred_head_larger_than_the_window_is_answered() {
    let probe = Probe::new(vec![("/now", cookies_now as Route), ("/later", cookies_later)]);
    let server = serve(opts().response_timeout(Some(Duration::from_secs(3))), probe);
    common::current_thread().block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (send, connection): (h2::client::SendRequest<Bytes>, _) =
            h2::client::Builder::new().max_header_list_size(4 << 20).handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut failures = Vec::new();
        for path in ["/now", "/later"] {
            let began = Instant::now();
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::get(format!("http://x{path}")).body(()).unwrap();
            let (response, _) = ready.send_request(request, true).unwrap();
            match tokio::time::timeout(Duration::from_secs(10), response).await {
                Err(_) => failures.push(format!("{path}: no answer in 10 s")),
                Ok(Err(e)) => failures.push(format!("{path}: {e} after {:?}", began.elapsed())),
                Ok(Ok(response)) => {
                    let status = response.status();
                    let cookies = response.headers().get_all("set-cookie").iter().count();
                    if (status.as_u16(), cookies) != (200, 10) {
                        failures.push(format!(
                            "{path}: {status} with {cookies} cookies after {:?}",
                            began.elapsed()
                        ));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    });
}

/// The tower task path (a handler that awaits, then answers with a
/// 100 KiB head) over HTTP/2: answered, not held until the timeout.
#[test]
fn tower_h2_answer_with_a_big_head_after_an_await() {
    use axum::routing::get;
    let app = axum::Router::new().route(
        "/later",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let mut headers = http::HeaderMap::new();
            for i in 0..10 {
                let value = format!("c{i}={}", "k".repeat(10 * 1024));
                headers.append("set-cookie", value.parse().unwrap());
            }
            (headers, "cookies")
        }),
    );
    let (server, _rt) =
        common::serve_tower(opts().response_timeout(Some(Duration::from_secs(3))), app);
    common::current_thread().block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (send, connection): (h2::client::SendRequest<Bytes>, _) =
            h2::client::Builder::new().max_header_list_size(4 << 20).handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let began = Instant::now();
        let mut ready = send.clone().ready().await.unwrap();
        let request = http::Request::get("http://x/later").body(()).unwrap();
        let (response, _) = ready.send_request(request, true).unwrap();
        let response =
            tokio::time::timeout(Duration::from_secs(10), response).await.unwrap().unwrap();
        assert_eq!(
            (response.status().as_u16(), response.headers().get_all("set-cookie").iter().count()),
            (200, 10),
            "after {:?}",
            began.elapsed()
        );
    });
}

// ---------------------------------------------------------------------------
// 5. HTTP/1.0 clients.

fn stream_later(response: &mut Response<'_>, _: &Probe) {
    let mut responder = response.defer().unwrap();
    std::thread::spawn(move || {
        responder.write_blocking(b"one,").unwrap();
        responder.write_blocking(b"").unwrap();
        responder.write_blocking(b"two").unwrap();
        responder.finish().unwrap();
    });
}

fn drop_mid_body(response: &mut Response<'_>, _: &Probe) {
    let mut responder = response.defer().unwrap();
    std::thread::spawn(move || {
        responder.write_blocking(b"partial").unwrap();
        drop(responder);
    });
}

/// An HTTP/1.0 keep-alive client: a streamed deferred answer is
/// close-delimited, so the connection closes after it and a pipelined
/// request gets nothing; one dropped mid-body closes too.
#[test]
fn http10_streamed_deferred_then_pipelined() {
    let server = serve(
        opts(),
        Probe::new(vec![("/stream", stream_later as Route), ("/drop", drop_mid_body)]),
    );
    for path in ["/stream", "/drop"] {
        let request = format!(
            "GET {path} HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /next HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        );
        let (bytes, closed) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let wire = text(&bytes);
        assert!(closed, "{path}: {wire:?}");
        assert_eq!(wire.matches("HTTP/1.1 ").count(), 1, "{path}: {wire:?}");
        assert!(wire.contains("Connection: close\r\n"), "{path}: {wire:?}");
        let expected = if path == "/stream" { "\r\n\r\none,two" } else { "\r\n\r\npartial" };
        assert!(wire.ends_with(expected), "{path}: {wire:?}");
    }
}

/// The polled path (an answer ready at once whose body waits) over
/// HTTP/2 with a 100 KiB head.
#[test]
fn tower_h2_polled_body_with_a_big_head() {
    use axum::routing::get;
    let app = axum::Router::new().route(
        "/polled",
        get(|| async {
            let mut headers = http::HeaderMap::new();
            for i in 0..10 {
                let value = format!("c{i}={}", "k".repeat(10 * 1024));
                headers.append("set-cookie", value.parse().unwrap());
            }
            let stream = async_stream_once();
            (headers, axum::body::Body::from_stream(stream))
        }),
    );
    let (server, _rt) =
        common::serve_tower(opts().response_timeout(Some(Duration::from_secs(3))), app);
    common::current_thread().block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (send, connection): (h2::client::SendRequest<Bytes>, _) =
            h2::client::Builder::new().max_header_list_size(4 << 20).handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut ready = send.clone().ready().await.unwrap();
        let request = http::Request::get("http://x/polled").body(()).unwrap();
        let (response, _) = ready.send_request(request, true).unwrap();
        let response =
            tokio::time::timeout(Duration::from_secs(10), response).await.unwrap().unwrap();
        assert_eq!(
            (response.status().as_u16(), response.headers().get_all("set-cookie").iter().count()),
            (200, 10)
        );
        let mut body = response.into_body();
        let mut got = Vec::new();
        while let Some(piece) = body.data().await {
            got.extend_from_slice(&piece.unwrap());
        }
        assert_eq!(text(&got), "later");
    });
}

fn async_stream_once() -> impl futures_like::Stream {
    futures_like::Once::default()
}

mod futures_like {
    use super::*;
    pub trait Stream:
        tokio_stream::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
    {
    }
    impl<T: tokio_stream::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static> Stream for T {}

    /// One piece, after 20 ms.
    #[derive(Default)]
    pub struct Once {
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
        done: bool,
    }
    impl tokio_stream::Stream for Once {
        type Item = Result<Bytes, std::io::Error>;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            if self.done {
                return Poll::Ready(None);
            }
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(20))));
            std::task::ready!(sleep.as_mut().poll(cx));
            self.done = true;
            Poll::Ready(Some(Ok(Bytes::from_static(b"later"))))
        }
    }
}

/// Zero-byte writes in a chunked HTTP/1.1 stream never end it early.
#[test]
fn h11_zero_byte_writes_keep_chunked_framing() {
    let server = serve(opts(), Probe::new(vec![("/stream", stream_later as Route)]));
    let (bytes, _) = then_next(server.addr, "/stream", "/next");
    let (replies, rest) = parse_all(&bytes, &[]);
    let bodies: Vec<String> = replies.iter().map(|r| text(&r.2)).collect();
    assert!(rest.is_empty(), "{:?}", text(&bytes));
    assert_eq!(bodies, ["one,two", "/next"]);
}

/// The same 256 MiB write against a 32 MiB pool: a typed `NoMemory`, the
/// response cut (never completed), and another connection still served.
#[test]
fn h1_huge_responder_write_past_the_pool_is_no_memory() {
    let probe = Probe::new(vec![("/huge", huge_write as Route)]);
    let shared = probe.shared.clone();
    let server = serve(opts().max_pool_bytes(32 << 20), probe);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.write_all(b"GET /huge HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let handle = loop {
        if let Some(h) = shared.results.lock().unwrap().pop() {
            break h;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    };
    let result = handle.join().unwrap();
    assert_eq!(result, Err(ResponseError::NoMemory));
    let mut other = Client::connect(server.addr);
    assert_eq!(other.get("/other").text(), "/other");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    let wire = text(&got[..got.len().min(200)]);
    assert!(
        wire.starts_with("HTTP/1.1 200 OK") && !got.ends_with(b"0\r\n\r\n"),
        "{wire:?} {}",
        got.len()
    );
}
