//! Adversarial review (2026-12-06) of four fixes: the defer hand-off,
//! HTTP/2 deferred heads, polled bodies at zero credit, tower's
//! `fail_later` and 1xx. Found: `fail_later` answering `500` itself hid
//! the client's error that failed the request body (400, 413); it drops
//! the responder again, so the worker answers. The rest held.
#![cfg(feature = "tower")]

mod common;

use common::exchange;

use std::future::Future;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::h2raw::{Raw, req, req_with};
use common::serve;
use falconet_server::h2::frame::{kind, setting};
use falconet_server::tower::Body;
use falconet_server::{Handler, Options, Request, Response, ResponseError};
use http_body::{Frame, SizeHint};

fn opts() -> Options {
    Options::new().workers(1)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (status, body) of each HTTP/1.1 response with Content-Length framing
/// (or no body); stops at anything else.
fn statuses(mut bytes: &[u8]) -> (Vec<(u16, String)>, String) {
    let mut out = Vec::new();
    loop {
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            return (out, text(bytes));
        };
        let head = text(&bytes[..end]);
        let Some(status) = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|r| r.get(..3))
            .and_then(|c| c.parse::<u16>().ok())
        else {
            return (out, text(bytes));
        };
        let length = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        let rest = &bytes[end + 4..];
        if status / 100 == 1 {
            bytes = rest;
            continue;
        }
        if rest.len() < length {
            return (out, text(bytes));
        }
        out.push((status, text(&rest[..length])));
        bytes = &rest[length..];
    }
}

// ---------------------------------------------------------------------------
// 4. Tower: a service that fails later, having taken (part of) the body.

/// How `/fail` fails.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// `poll_ready` pending once, then a call that reads one frame and errs.
    SlowReady,
    /// `poll_ready` ready; the call's future pends, reads one frame, errs.
    LateFuture,
    /// As `LateFuture`, but reads nothing of the body.
    LateNoRead,
    /// As `LateFuture`, but reads the whole body (to its end or error).
    LateReadAll,
    /// `poll_ready` pending once; then reads the whole body and errs.
    SlowReadyReadAll,
}

#[derive(Clone)]
struct Failing {
    way: Way,
    polled: bool,
}

type BoxFut =
    Pin<Box<dyn Future<Output = Result<http::Response<axum::body::Body>, std::io::Error>> + Send>>;

impl tower_service::Service<http::Request<Body>> for Failing {
    type Response = http::Response<axum::body::Body>;
    type Error = std::io::Error;
    type Future = BoxFut;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        if matches!(self.way, Way::SlowReady | Way::SlowReadyReadAll) && !self.polled {
            self.polled = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let way = self.way;
        Box::pin(async move {
            let path = request.uri().path().to_string();
            let mut body = request.into_body();
            if path != "/fail" {
                // Read the whole body, answer with its length.
                let mut n = 0;
                while let Some(frame) =
                    std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx))
                        .await
                {
                    if let Ok(data) =
                        frame.map_err(|_| ()).and_then(|f| f.into_data().map_err(drop))
                    {
                        n += data.len();
                    }
                }
                return Ok(http::Response::new(axum::body::Body::from(format!("ok {n}"))));
            }
            // Pend once (a task's answer).
            let mut once = false;
            std::future::poll_fn(|cx| {
                if once {
                    Poll::Ready(())
                } else {
                    once = true;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
            .await;
            if matches!(way, Way::LateReadAll | Way::SlowReadyReadAll) {
                loop {
                    match std::future::poll_fn(|cx| {
                        http_body::Body::poll_frame(Pin::new(&mut body), cx)
                    })
                    .await
                    {
                        Some(Ok(_)) => {}
                        Some(Err(e)) => return Err(std::io::Error::other(e.to_string())),
                        None => break,
                    }
                }
            } else if !matches!(way, Way::LateNoRead) {
                let _ =
                    std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx))
                        .await;
            }
            Err(std::io::Error::other("failed half way"))
        })
    }
}

/// RFC 9112 §9.3 / §6.3: once the server answers a request whose body it
/// did not read, it must either read (discard) the rest of the body or
/// close; the next pipelined request must be parsed where it begins.
/// `fail_later` now keeps the connection open after the 500.
#[test]
fn tower_fail_later_with_a_half_read_body_then_pipelined() {
    let mut failures = Vec::new();
    for way in [Way::SlowReady, Way::LateFuture, Way::LateNoRead] {
        for size in [10usize, 5_000, 200_000] {
            let (server, _rt) = common::serve_tower(opts(), Failing { way, polled: false });
            let body = vec![b'G'; size];
            let mut request =
                format!("POST /fail HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n")
                    .into_bytes();
            request.extend_from_slice(&body);
            request.extend_from_slice(
                b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
            );
            let (bytes, closed) = exchange(server.addr, &request, Duration::from_secs(3));
            let (replies, rest) = statuses(&bytes);
            eprintln!("half {way:?} {size}: {replies:?} closed {closed}");
            let ok = match replies.as_slice() {
                [(500, _), (200, b)] => b == "ok 3" && rest.is_empty(),
                // A close after the 500 is fine too.
                [(500, _)] => closed && rest.is_empty(),
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{way:?} size {size}: {replies:?} rest {:?} closed {closed}",
                    &rest[..rest.len().min(200)]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The same with `Expect: 100-continue`: the client sends the body only
/// after a 100 (RFC 9110 §10.1.1); if the server answers 500 without one,
/// it must not take the next request's bytes for the body.
#[test]
fn tower_fail_later_with_expect_continue() {
    let mut failures = Vec::new();
    for way in [Way::SlowReady, Way::LateFuture, Way::LateNoRead] {
        let (server, _rt) = common::serve_tower(opts(), Failing { way, polled: false });
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .write_all(
                b"POST /fail HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
            )
            .unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        // Read until a final response.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
            if statuses(&got).0.iter().any(|(s, _)| *s >= 200) {
                break;
            }
        }
        let saw_100 = text(&got).starts_with("HTTP/1.1 100");
        // A client that got a 100 sends the body; one that did not may
        // send its next request instead.
        if saw_100 {
            let _ = stream.write_all(b"hello");
        }
        let _ = stream.write_all(
            b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        );
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        let (replies, rest) = statuses(&got);
        eprintln!("expect {way:?}: saw_100 {saw_100} {replies:?}");
        let ok = match replies.as_slice() {
            [(500, _), (200, b)] => b == "ok 3" && rest.is_empty(),
            [(500, _)] => rest.is_empty(),
            _ => false,
        };
        if !ok {
            failures.push(format!("{way:?}: saw_100 {saw_100} {replies:?} {:?}", text(&got)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Over HTTP/2: the failed stream gets 500, the connection stays usable.
#[test]
fn tower_fail_later_over_h2_with_a_half_read_body() {
    for way in [Way::SlowReady, Way::LateFuture, Way::LateNoRead] {
        let (server, _rt) = common::serve_tower(opts(), Failing { way, polled: false });
        common::current_thread().block_on(async {
            let send = common::h2_client(server.addr).await;
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::post("http://x/fail").body(()).unwrap();
            let (response, mut upload) = ready.send_request(request, false).unwrap();
            upload.reserve_capacity(100_000);
            let _ = upload.send_data(Bytes::from(vec![b'x'; 100_000]), true);
            let response =
                tokio::time::timeout(Duration::from_secs(5), response).await.unwrap().unwrap();
            assert_eq!(response.status().as_u16(), 500, "{way:?}");
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::post("http://x/ok").body(()).unwrap();
            let (response, mut upload) = ready.send_request(request, false).unwrap();
            upload.send_data(Bytes::from_static(b"abcd"), true).unwrap();
            let response =
                tokio::time::timeout(Duration::from_secs(5), response).await.unwrap().unwrap();
            assert_eq!(response.status().as_u16(), 200, "{way:?}");
        });
    }
}

/// HEAD answered 500 by `fail_later`: a head alone (no body bytes), then
/// the connection closes (a dropped responder's answer over HTTP/1), so
/// nothing of the pipelined request is misread.
#[test]
fn tower_fail_later_head_then_pipelined() {
    for way in [Way::SlowReady, Way::LateFuture] {
        let (server, _rt) = common::serve_tower(opts(), Failing { way, polled: false });
        let request = b"HEAD /fail HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let (bytes, closed) = exchange(server.addr, request, Duration::from_secs(3));
        let t = text(&bytes);
        assert!(closed, "{way:?}: {t:?}");
        assert!(t.starts_with("HTTP/1.1 500") && t.ends_with("\r\n\r\n"), "{way:?}: {t:?}");
        assert_eq!(t.matches("HTTP/1.1").count(), 1, "{way:?}: {t:?}");
    }
}

// ---------------------------------------------------------------------------
// 2. HTTP/2 deferred heads at zero credit.

/// A native handler: `/big?n=N&b=B` defers, and a thread answers with a
/// field of N bytes and a body of B bytes in one `body` call.
struct Big;

impl Handler for Big {
    type State = (usize, usize);

    fn head(&self, request: &Request<'_>) -> (usize, usize) {
        let target = request.target();
        (common::query_arg(target, "n") as usize, common::query_arg(target, "b") as usize)
    }

    fn respond(&self, (n, b): (usize, usize), response: &mut Response<'_>) {
        let Ok(mut responder) = response.defer() else { return };
        std::thread::spawn(move || {
            if n > 0 {
                let _ = responder.header("x-big", vec![b'v'; n]);
            }
            let body: Vec<u8> = (0..b).map(|i| (i % 251) as u8).collect();
            let _ = responder.body(&body);
        });
    }
}

/// Reads frames for `within`; returns (HEADERS seen on `id`, DATA bytes on
/// `id`, END_STREAM seen, any GOAWAY/RST).
fn watch(raw: &mut Raw, id: u32, within: Duration) -> (bool, usize, bool, Option<(u8, u32)>) {
    let deadline = Instant::now() + within;
    let (mut headers, mut data, mut ended, mut bad) = (false, 0, false, None);
    while let Some(f) = raw.next_frame(deadline.saturating_duration_since(Instant::now())) {
        if f.stream == id && f.kind == kind::HEADERS {
            headers = true;
        }
        if f.stream == id && f.kind == kind::DATA {
            data += f.payload.len();
        }
        if f.stream == id && f.end_stream() {
            ended = true;
        }
        if f.kind == kind::GOAWAY || f.kind == kind::RST_STREAM {
            bad = Some((f.kind, f.code()));
        }
        if ended || bad.is_some() {
            break;
        }
    }
    (headers, data, ended, bad)
}

/// RFC 9113 §6.9.1: "A sender MUST NOT send a flow-controlled frame with
/// a length that exceeds the space available in either of the flow-control
/// windows". With a stream window of 0, a deferred answer's head goes out
/// (HEADERS need no credit), whatever its size and wherever its blank line
/// falls in the pipe's blocks, and no byte of its body, until credit.
#[test]
fn h2_deferred_head_at_zero_credit_every_offset() {
    let server = serve(opts(), Big);
    let mut failures = Vec::new();
    // Field sizes putting the head's end around block (4 KiB) boundaries
    // and past HEAD_ROOM (16 KiB).
    let mut sizes: Vec<usize> = Vec::new();
    for base in [0usize, 4096, 8192, 16_384, 20_480, 65_536] {
        // The blank line's four bytes across a boundary at each offset
        // (`h2/serve/staged.rs` tests `head_end_in` at every split).
        for d in 0..4 {
            sizes.push((base + d).saturating_sub(120));
        }
    }
    for (i, &n) in sizes.iter().enumerate() {
        let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
        let body = 3000;
        raw.headers(1, &req("GET", &format!("/big?n={n}&b={body}")), true);
        let (headers, data, ended, bad) = watch(&mut raw, 1, Duration::from_millis(400));
        if !headers || data > 0 || ended || bad.is_some() {
            failures.push(format!(
                "#{i} n={n}: at zero credit headers={headers} data={data} ended={ended} bad={bad:?}"
            ));
            continue;
        }
        raw.window_update(1, 1000);
        let (_, data, ended, bad) = watch(&mut raw, 1, Duration::from_millis(400));
        if data != 1000 || ended || bad.is_some() {
            failures.push(format!("#{i} n={n}: after 1000 data={data} ended={ended} bad={bad:?}"));
            continue;
        }
        raw.window_update(1, 2000);
        let (_, data, ended, bad) = watch(&mut raw, 1, Duration::from_secs(2));
        if data != 2000 || !ended || bad.is_some() {
            failures.push(format!("#{i} n={n}: after 3000 data={data} ended={ended} bad={bad:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// An empty body at zero credit: HEADERS with END_STREAM (or an empty
/// DATA with it) comes without any credit.
#[test]
fn h2_deferred_empty_body_at_zero_credit() {
    let server = serve(opts(), Big);
    for n in [0usize, 30_000] {
        let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
        raw.headers(1, &req("GET", &format!("/big?n={n}&b=0")), true);
        let (headers, data, ended, bad) = watch(&mut raw, 1, Duration::from_secs(2));
        assert!(
            headers && data == 0 && ended && bad.is_none(),
            "n={n}: {headers} {data} {ended} {bad:?}"
        );
    }
}

/// Many streams at once, each deferring a head of 256 KiB at zero credit:
/// every head is answered (and the connection is not torn down).
#[test]
fn h2_many_big_deferred_heads_at_zero_credit() {
    let server = serve(opts(), Big);
    let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    let streams = 20u32;
    for k in 0..streams {
        raw.headers(1 + 2 * k, &req("GET", "/big?n=262144&b=10"), true);
    }
    let mut heads = std::collections::HashSet::new();
    let mut data = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while heads.len() < streams as usize {
        let Some(f) = raw.next_frame(deadline.saturating_duration_since(Instant::now())) else {
            break;
        };
        match f.kind {
            kind::HEADERS => {
                heads.insert(f.stream);
            }
            kind::DATA => data += f.payload.len(),
            kind::GOAWAY => panic!("GOAWAY {}", f.code()),
            _ => {}
        }
    }
    assert_eq!(heads.len(), streams as usize, "heads answered; data {data}");
    assert_eq!(data, 0);
}

// ---------------------------------------------------------------------------
// 3. Polled bodies at zero credit.

/// A body: `size` bytes in one frame, then pending once (woken), then
/// trailers (when `trailers`), else the end.
struct DataThenTrailers {
    size: usize,
    step: u8,
    trailers: bool,
}

impl http_body::Body for DataThenTrailers {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.step += 1;
        match self.step {
            1 => Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'z'; self.size]))))),
            2 => {
                let waker = cx.waker().clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    waker.wake();
                });
                Poll::Pending
            }
            3 if self.trailers => {
                let mut map = http::HeaderMap::new();
                map.insert("x-sum", http::HeaderValue::from_static("7"));
                Poll::Ready(Some(Ok(Frame::trailers(map))))
            }
            _ => Poll::Ready(None),
        }
    }
    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[derive(Clone)]
struct Trailing;

impl tower_service::Service<http::Request<Body>> for Trailing {
    type Response = http::Response<DataThenTrailers>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let size = request
            .uri()
            .query()
            .and_then(|q| q.strip_prefix("size="))
            .and_then(|s| s.parse().ok())
            .unwrap_or(100);
        let trailers = request.uri().path() == "/trailers";
        std::future::ready(Ok(http::Response::new(DataThenTrailers { size, step: 0, trailers })))
    }
}

/// A client whose stream window is exactly the body's length owes no more
/// credit: the trailers (a HEADERS frame, no credit needed, RFC 9113
/// §6.9) or the end come without a WINDOW_UPDATE.
#[test]
fn h2_polled_trailers_at_exactly_the_window() {
    let (server, _rt) = common::serve_tower(opts(), Trailing);
    for (path, size) in
        [("/trailers", 100usize), ("/trailers", 20_000), ("/end", 100), ("/end", 20_000)]
    {
        let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, size as u32)]);
        raw.window_update(0, 1 << 20);
        raw.headers(1, &req("GET", &format!("{path}?size={size}")), true);
        let (headers, data, ended, bad) = watch(&mut raw, 1, Duration::from_secs(3));
        assert!(
            headers && data == size && ended && bad.is_none(),
            "{path} {size}: {headers} {data} {ended} {bad:?}"
        );
    }
}

/// The rate guard still judges a client that withholds credit from many
/// polled bodies (each now polled once at zero credit).
#[test]
fn h2_many_zero_window_polled_bodies_still_closed_by_the_rate() {
    let (server, _rt) = common::serve_tower(
        opts().min_response_rate(Some(falconet_server::MinDataRate::new(
            1024,
            Duration::from_secs(1),
        ))),
        Trailing,
    );
    let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    for k in 0..20u32 {
        raw.headers(1 + 2 * k, &req("GET", "/end?size=100000"), true);
    }
    let began = Instant::now();
    let deadline = began + Duration::from_secs(15);
    let mut data = 0;
    let mut away = None;
    while let Some(f) = raw.next_frame(deadline.saturating_duration_since(Instant::now())) {
        if f.kind == kind::DATA {
            data += f.payload.len();
        }
        if f.kind == kind::GOAWAY {
            away = Some(f.code());
            break;
        }
    }
    assert_eq!(data, 0);
    assert!(away.is_some(), "not closed after {:?}", began.elapsed());
}

// ---------------------------------------------------------------------------
// 1. Writes after defer: the worker's own settling.

struct DeferExpect {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Handler for DeferExpect {
    type State = String;
    fn head(&self, request: &Request<'_>) -> String {
        if request.path() == "/lend" {
            request.stream_body();
        }
        request.path().to_string()
    }
    fn respond(&self, path: String, response: &mut Response<'_>) {
        if path == "/next" {
            let _ = response.body(b"next");
            return;
        }
        let body = response.take_body();
        let Ok(responder) = response.defer() else { return };
        let r = response.close().map(drop);
        let s = response.status(falconet_server::Status::NOT_FOUND).map(drop);
        let d = response.defer().map(drop);
        self.seen.lock().unwrap().push(format!("{r:?} {s:?} {d:?}"));
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            if let Some(mut body) = body {
                let mut v = Vec::new();
                let _ = body.read_to_end(&mut v);
            }
            let _ = responder.body(b"late");
        });
    }
}

/// Expect: 100-continue, a lent body, a defer then (wrong) writes to the
/// Response: each fails Deferred (second defer CannotDefer), and the wire
/// has the 100 (if any), one response, and the next request's.
#[test]
fn h1_defer_with_expect_continue_then_writes() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = serve(opts(), DeferExpect { seen: seen.clone() });
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
        .write_all(
            b"POST /lend HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
        )
        .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).unwrap();
    assert!(text(&buf[..n]).starts_with("HTTP/1.1 100"), "{:?}", text(&buf[..n]));
    stream.write_all(b"hello").unwrap();
    stream.write_all(b"GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut got = buf[..n].to_vec();
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let (replies, rest) = statuses(&got);
    assert_eq!(
        replies,
        vec![(200, "late".to_string()), (200, "next".to_string())],
        "{:?} rest {rest:?}",
        text(&got)
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [format!(
            "{:?} {:?} {:?}",
            Err::<(), _>(ResponseError::Deferred),
            Err::<(), _>(ResponseError::Deferred),
            Err::<(), _>(ResponseError::CannotDefer)
        )]
    );
}

/// h2c upgrade's first request, deferred and then (wrongly) written to:
/// one answer on stream 1.
#[test]
fn h2c_upgrade_first_request_deferred_then_written() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = serve(opts(), DeferExpect { seen: seen.clone() });
    let mut raw = Raw::connect(server.addr);
    raw.send(b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n");
    raw.read_switch();
    let mut preface = falconet_server::h2::frame::PREFACE.to_vec();
    falconet_server::h2::frame::encode_settings(&mut preface, &[]).unwrap();
    raw.send(&preface);
    let (headers, data, ended, bad) = watch(&mut raw, 1, Duration::from_secs(3));
    assert!(headers && data == 4 && ended && bad.is_none(), "{headers} {data} {ended} {bad:?}");
    let _ = req_with;
}

/// A malformed chunked body (or one past `max_body`) read by a service
/// that then fails in its task: the parser cannot resume after such a
/// body (tower docs: "over HTTP/1.1 the connection then closes: the next
/// request's start is unknown"). The bytes after it must not be answered
/// as a request.
#[test]
fn tower_fail_later_after_a_malformed_body_closes() {
    let mut failures = Vec::new();
    for way in [Way::LateReadAll, Way::SlowReadyReadAll] {
        for (what, request) in [
            (
                "malformed",
                b"POST /fail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            ),
            (
                "past max_body",
                {
                    let mut r = b"POST /fail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                    for _ in 0..3 {
                        r.extend_from_slice(b"400\r\n");
                        r.extend_from_slice(&[b'a'; 0x400]);
                        r.extend_from_slice(b"\r\n");
                    }
                    r.extend_from_slice(b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n");
                    r
                },
            ),
        ] {
            let (server, _rt) = common::serve_tower(
                opts().max_body(2048),
                Failing { way, polled: false },
            );
            let (bytes, closed) = exchange(server.addr, &request, Duration::from_secs(3));
            let (replies, rest) = statuses(&bytes);
            eprintln!("{way:?} {what}: {replies:?} closed {closed}");
            let ok = replies.len() == 1 && replies[0].0 >= 400 && closed && rest.is_empty();
            if !ok {
                failures.push(format!("{way:?} {what}: {replies:?} closed {closed} {:?}", text(&bytes)));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Deferred heads of MiBs go out whole, with their bodies (the review
/// timed them: 10 / 30 / 121 ms for 1 / 4 / 16 MiB, linear in the size).
#[test]
fn h2_deferred_huge_heads_go_out() {
    let server = serve(opts().max_pool_bytes(256 << 20), Big);
    for mib in [1usize, 4] {
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.headers(1, &req("GET", &format!("/big?n={}&b=10", mib << 20)), true);
        let (headers, data, ended, bad) = watch(&mut raw, 1, Duration::from_secs(30));
        assert!(headers && ended && bad.is_none(), "{mib} MiB: {headers} {data} {ended} {bad:?}");
        assert_eq!(data, 10, "{mib} MiB");
    }
}

/// The task path's service propagates the request body's error (past
/// `max_body`: `LengthLimitError`): the dropped responder has the worker
/// answer the client's error (413) and close, as the worker's own path
/// does (tower docs: "answered with the client's error instead of 500:
/// ... 413 past max_body").
#[test]
fn tower_fail_later_after_body_past_max_body_is_413() {
    let mut request =
        b"POST /fail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        request.extend_from_slice(b"400\r\n");
        request.extend_from_slice(&[b'a'; 0x400]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let (server, _rt) = common::serve_tower(
        opts().max_body(2048),
        Failing { way: Way::LateReadAll, polled: false },
    );
    let (bytes, _) = exchange(server.addr, &request, Duration::from_secs(3));
    let (replies, _) = statuses(&bytes);
    assert_eq!(replies.first().map(|r| r.0), Some(413), "{:?}", text(&bytes));
}

/// As above, a malformed chunked body: the client's 400.
#[test]
fn tower_fail_later_after_a_malformed_body_is_400() {
    let request =
        b"POST /fail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n";
    let (server, _rt) =
        common::serve_tower(opts(), Failing { way: Way::SlowReadyReadAll, polled: false });
    let (bytes, _) = exchange(server.addr, request, Duration::from_secs(3));
    let (replies, _) = statuses(&bytes);
    assert_eq!(replies.first().map(|r| r.0), Some(400), "{:?}", text(&bytes));
}

/// Over HTTP/2: DATA past `max_body` on a stream whose service reads the
/// body in its task and propagates the error: 413.
#[test]
fn tower_fail_later_h2_body_past_max_body_is_413() {
    let (server, _rt) = common::serve_tower(
        opts().max_body(2048),
        Failing { way: Way::LateReadAll, polled: false },
    );
    common::current_thread().block_on(async {
        let send = common::h2_client(server.addr).await;
        let mut ready = send.clone().ready().await.unwrap();
        let request = http::Request::post("http://x/fail").body(()).unwrap();
        let (response, mut upload) = ready.send_request(request, false).unwrap();
        upload.reserve_capacity(10_000);
        let _ = upload.send_data(Bytes::from(vec![b'x'; 10_000]), true);
        let response =
            tokio::time::timeout(Duration::from_secs(5), response).await.unwrap().unwrap();
        assert_eq!(response.status().as_u16(), 413);
    });
}
