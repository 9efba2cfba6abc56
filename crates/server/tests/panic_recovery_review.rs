//! Review of a5525e6 (and its fixes): handler panic recovery over HTTP/1.1 (`answering`,
//! `Session::after_panic`) and the worker's `polling` scope
//! (`waits_forever`, `RequestBody::poll_read_into`'s `Deadlock`).
//!
//! Every step that might hang is behind a timeout.
#![cfg(feature = "tower")]

mod common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body as AxumBody;
use axum::routing::{get, post};
use bytes::Bytes;
use common::{End, block_on, connect, current_thread, options, read_for, runtime, serve, text};
use falconet_server::tower::{TowerHandler, TowerState};
use falconet_server::{Handler, Request, Response, Status};
use http_body::Frame;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Reads until `pred(got)` or `limit`.
fn read_until(stream: &mut TcpStream, limit: Duration, pred: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while !pred(&got) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1)))).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    got
}

/// A short view of a long reply (the heads, not megabytes of body).
fn shown(bytes: &[u8]) -> String {
    let t = text(bytes);
    if t.len() < 600 {
        return format!("{t:?}");
    }
    let heads: Vec<_> =
        t.match_indices("HTTP/1.").map(|(i, _)| &t[i..(i + 120).min(t.len())]).collect();
    format!("{} bytes; heads: {heads:?}; tail: {:?}", t.len(), &t[t.len() - 200..])
}

/// Splits `bytes` into HTTP/1.1 responses framed by Content-Length (or a
/// bodiless head); returns (head, body) pairs and any leftover bytes.
fn split_responses(bytes: &[u8]) -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = text(&rest[..end + 4]);
        if !head.starts_with("HTTP/1.") {
            break;
        }
        let status: u16 = head[9..12].parse().unwrap_or(0);
        let length = if status < 200 {
            0
        } else {
            head.lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0)
        };
        if rest.len() < end + 4 + length {
            break;
        }
        out.push((head, rest[end + 4..end + 4 + length].to_vec()));
        rest = &rest[end + 4 + length..];
    }
    (out, rest.to_vec())
}

// ---------------------------------------------------------------------------
// 1. Handler panic recovery (HTTP/1.1)
// ---------------------------------------------------------------------------

/// Routes by path:
/// - `/head-panic`: `head` panics; `/body-panic`: `body` panics;
///   `/respond-panic`: `respond` panics.
/// - `/big?N`: a body of N bytes `b`.
/// - `/big-then-panic`: writes 1 MiB of body (over max_pending_output),
///   then panics.
/// - `/defer-panic`: defers, writes "PARTIAL" through the responder, then
///   panics; `/defer-only-panic`: defers then panics.
/// - `/stream-ignore`: takes the body as a stream, answers without reading
///   it (the server drains it).
/// - `/bomb...`: the state panics when dropped (not while unwinding);
///   `/bomb-body-panic` also panics in `body`.
/// - anything else: answers its path.
struct Panicky;

struct St {
    path: String,
    bomb: bool,
}

impl Drop for St {
    fn drop(&mut self) {
        if self.bomb && !thread::panicking() {
            panic!("the state's drop panicked on purpose ({})", self.path);
        }
    }
}

impl Handler for Panicky {
    type State = St;

    fn head(&self, request: &Request<'_>) -> St {
        let path = request.path();
        assert!(path != "/head-panic", "head panicked on purpose");
        if path == "/stream-ignore" {
            request.stream_body();
        }
        St { path: request.target().to_string(), bomb: path.starts_with("/bomb") }
    }

    fn body(&self, state: &mut St, _: &[u8]) {
        assert!(
            state.path != "/body-panic" && state.path != "/bomb-body-panic",
            "body panicked on purpose"
        );
    }

    fn respond(&self, state: St, response: &mut Response<'_>) {
        let path = state.path.clone();
        let (route, query) = path.split_once('?').unwrap_or((&path, ""));
        match route {
            "/respond-panic" => panic!("respond panicked on purpose"),
            "/big" => {
                let n: usize = query.parse().unwrap();
                response.body(&vec![b'b'; n]).unwrap();
            }
            "/big-then-panic" => {
                for _ in 0..16 {
                    response.write(&[b'p'; 64 * 1024]).unwrap();
                }
                panic!("respond panicked after a large body");
            }
            "/defer-panic" => {
                let mut responder = response.defer().unwrap();
                responder.write_blocking(b"PARTIAL").unwrap();
                panic!("respond panicked after defer and a write");
            }
            "/defer-only-panic" => {
                let _responder = response.defer().unwrap();
                panic!("respond panicked after defer");
            }
            _ => {
                response.status(Status::OK).unwrap();
                response.body(route.as_bytes()).unwrap();
            }
        }
        // A bomb state is disarmed once answered normally... except where
        // the test wants it to go off later (it is already moved here, so
        // it drops at the end of respond: disarm it).
        let mut state = state;
        state.bomb = false;
    }
}

/// Asserts the reply is: the answers to `paths` (each `200` with its path
/// as the body), then one `500` with `Connection: close`, then the close.
fn assert_answers_then_500(name: &str, got: &[u8], end: End, paths: &[&str]) {
    assert_eq!(end, End::Eof, "{name}: closed after the panic: {}", shown(got));
    let (responses, rest) = split_responses(got);
    assert!(rest.is_empty(), "{name}: bytes after the last response: {:?}", text(&rest));
    assert_eq!(responses.len(), paths.len() + 1, "{name}: {}", shown(got));
    for ((head, body), path) in responses.iter().zip(paths) {
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{name}: {head:?}");
        assert_eq!(text(body), *path, "{name}");
    }
    let (last, body) = responses.last().unwrap();
    assert!(last.starts_with("HTTP/1.1 500 "), "{name}: {last:?}");
    assert!(last.contains("Connection: close\r\n"), "{name}: {last:?}");
    assert!(body.is_empty(), "{name}");
}

/// A panic in `head`, `body` or `respond` of a request pipelined behind
/// answered ones (in the same read): the answers before it go out intact,
/// then `500`, then the close. `answering` must be None again by the time
/// the next head/body runs.
#[test]
fn a_panic_anywhere_after_answers_in_the_same_read_keeps_them() {
    let server = serve(options().workers(1), Panicky);
    let cases: [(&str, &[u8]); 4] = [
        ("head", b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\nGET /head-panic HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("body", b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nxyPOST /body-panic HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"),
        ("respond", b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nxyGET /respond-panic HTTP/1.1\r\nHost: t\r\n\r\nGET /never HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("respond after a large body", b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\nGET /big-then-panic HTTP/1.1\r\nHost: t\r\n\r\n"),
    ];
    for (name, request) in cases {
        let mut stream = connect(server.addr);
        stream.write_all(request).unwrap();
        let (got, end) = read_for(&mut stream, Duration::from_secs(3));
        assert_answers_then_500(name, &got, end, &["/a", "/b"]);
    }
    // The server serves on.
    let mut stream = connect(server.addr);
    stream.write_all(b"GET /fine HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let (got, _) = read_for(&mut stream, Duration::from_secs(3));
    assert!(text(&got).ends_with("/fine"), "{}", shown(&got));
    server.stop();
}

/// A panic in `respond` after `defer()` (and a write through the
/// responder): `500`, and nothing of the deferred response.
#[test]
fn a_panic_after_defer_is_500_and_nothing_else() {
    let server = serve(options().workers(1), Panicky);
    for path in ["/defer-panic", "/defer-only-panic"] {
        let mut stream = connect(server.addr);
        stream
            .write_all(
                format!("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        let (got, end) = read_for(&mut stream, Duration::from_secs(3));
        assert_answers_then_500(path, &got, end, &["/a"]);
    }
    server.stop();
}

/// As above, but the answers before the panic are too large for the socket
/// to take at once (the client reads late): after the 500 the connection
/// flushes over several turns, and each turn runs `Session::process`,
/// which still finds the panicked `respond`'s deferred output pipe in
/// `app.deferred` and appends it (its bytes, or a second 500 for a
/// responder dropped unfinished) after the 500.
#[test]
fn a_panic_after_defer_behind_unflushed_output_adds_nothing() {
    const BIG: usize = 24 << 20;
    let server = serve(options().workers(1).max_pending_output(64 << 20), Panicky);
    let mut wrong = Vec::new();
    for path in ["/defer-panic", "/defer-only-panic"] {
        let mut stream = connect(server.addr);
        stream
            .write_all(
                format!("GET /big?{BIG} HTTP/1.1\r\nHost: t\r\n\r\nGET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        thread::sleep(Duration::from_millis(300));
        let (got, end) = read_for(&mut stream, Duration::from_secs(10));
        let (responses, rest) = split_responses(&got);
        let ok = end == End::Eof
            && rest.is_empty()
            && responses.len() == 2
            && responses[0].1.len() == BIG
            && responses[1].0.starts_with("HTTP/1.1 500 ");
        if !ok {
            let heads: Vec<_> = responses
                .iter()
                .map(|(h, b)| (h.lines().next().unwrap().to_string(), b.len()))
                .collect();
            wrong.push(format!(
                "{path}: responses {heads:?}, then {} stray bytes {:?}, then {end:?}",
                rest.len(),
                text(&rest[..rest.len().min(200)])
            ));
        }
    }
    assert!(wrong.is_empty(), "after the 500:\n{}", wrong.join("\n"));
    server.stop();
}

/// The output partly sent when the panic comes (`sent` > 0): a large
/// answer the client is slow to read, then (a separate write) a request
/// whose `respond` panics. The large answer arrives intact, then 500.
#[test]
fn a_panic_with_output_partly_sent_keeps_the_unsent_rest() {
    const BIG: usize = 16 << 20;
    let server = serve(options().workers(1).max_pending_output(64 << 20), Panicky);
    let mut stream = connect(server.addr);
    stream.write_all(format!("GET /big?{BIG} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
    thread::sleep(Duration::from_millis(300));
    stream.write_all(b"GET /respond-panic HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    thread::sleep(Duration::from_millis(300));
    let (got, end) = read_for(&mut stream, Duration::from_secs(10));
    assert_eq!(end, End::Eof, "{}", shown(&got));
    let (responses, rest) = split_responses(&got);
    assert!(rest.is_empty(), "stray bytes: {}", rest.len());
    assert_eq!(responses.len(), 2, "{}", shown(&got));
    assert_eq!(responses[0].1.len(), BIG);
    assert!(responses[0].1.iter().all(|&b| b == b'b'), "the large body is intact");
    assert!(responses[1].0.starts_with("HTTP/1.1 500 "), "{}", responses[1].0);
    server.stop();
}

/// `Expect: 100-continue`, HEAD, HTTP/1.0 and a request behind a body
/// being drained: the panicking request gets one 500 (the 100 is interim),
/// nothing else follows.
#[test]
fn a_panic_with_expect_continue_head_http10_and_a_drained_body() {
    let server = serve(options().workers(1), Panicky);

    // Expect: 100-continue, the panic in respond once the body came.
    let mut stream = connect(server.addr);
    stream
        .write_all(b"POST /respond-panic HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    let interim = read_until(&mut stream, Duration::from_secs(2), |g| g.ends_with(b"\r\n\r\n"));
    assert_eq!(text(&interim), "HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(b"hello").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_answers_then_500("expect/respond", &got, end, &[]);

    // Expect: 100-continue, the panic in body.
    let mut stream = connect(server.addr);
    stream
        .write_all(b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST /body-panic HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello")
        .unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    let got_text = text(&got);
    let without_100 = got_text.replacen("HTTP/1.1 100 Continue\r\n\r\n", "", 1);
    assert_answers_then_500("expect/body", without_100.as_bytes(), end, &["/a"]);

    // HEAD and HTTP/1.0.
    for request in [
        &b"HEAD /respond-panic HTTP/1.1\r\nHost: t\r\n\r\n"[..],
        b"GET /respond-panic HTTP/1.0\r\n\r\n",
        b"GET /respond-panic HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ] {
        let mut stream = connect(server.addr);
        stream.write_all(request).unwrap();
        let (got, end) = read_for(&mut stream, Duration::from_secs(3));
        assert_answers_then_500(&text(&request[..20]), &got, end, &[]);
    }

    // Behind a body being drained (answered at once, not read by the
    // handler): its rest arrives with the next request, which panics.
    let mut stream = connect(server.addr);
    stream
        .write_all(b"POST /stream-ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n1234")
        .unwrap();
    let first = read_until(&mut stream, Duration::from_secs(2), |g| g.ends_with(b"/stream-ignore"));
    assert!(text(&first).starts_with("HTTP/1.1 200 OK\r\n"), "{}", shown(&first));
    stream.write_all(b"567890GET /head-panic HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_answers_then_500("drained/head", &got, end, &[]);

    let mut stream = connect(server.addr);
    stream
        .write_all(b"POST /stream-ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n1234")
        .unwrap();
    let _ = read_until(&mut stream, Duration::from_secs(2), |g| g.ends_with(b"/stream-ignore"));
    stream.write_all(b"567890GET /respond-panic HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_answers_then_500("drained/respond", &got, end, &[]);
    server.stop();
}

/// A second panic in `after_panic`: `body` panics, and the request's
/// state (which `Http1::after_panic` drops when it sets `Phase::Closed`)
/// panics when dropped. The answer pipelined before it should still go out.
#[test]
fn a_second_panic_in_after_panic_keeps_the_answers_before() {
    let server = serve(options().workers(1), Panicky);
    let mut stream = connect(server.addr);
    stream
        .write_all(b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST /bomb-body-panic HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_ne!(end, End::Quiet, "hung: {}", shown(&got));
    let (responses, _) = split_responses(&got);
    assert!(
        responses.first().is_some_and(|(h, b)| h.starts_with("HTTP/1.1 200") && b == b"/a"),
        "the answer to /a before the panic was lost: got {} then {end:?}",
        shown(&got)
    );
    server.stop();
}

/// A request answered with an error (a malformed chunked body: 400) whose
/// state then panics when dropped (`Phase::Closed` drops it after the 400
/// is queued): `answering` is None, so `after_panic` keeps the 400 and
/// adds a 500 for the same request: two answers to one request.
#[test]
fn a_state_drop_panic_after_a_400_adds_no_second_answer() {
    let server = serve(options().workers(1), Panicky);
    let mut stream = connect(server.addr);
    stream
        .write_all(b"POST /bomb HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
        .unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_ne!(end, End::Quiet, "hung: {}", shown(&got));
    let (responses, rest) = split_responses(&got);
    let statuses: Vec<_> = responses.iter().map(|(h, _)| h[9..12].to_string()).collect();
    assert!(
        statuses == ["400"] && rest.is_empty(),
        "one request, answers {statuses:?} (then {} stray bytes): {}",
        rest.len(),
        shown(&got)
    );
    server.stop();
}

/// The timer's path: a stalled body gets `408`; `refuse` queues it, then
/// `http.close()` drops the request's state, which panics. The check is
/// contained (the worker survives) but the connection is dropped with the
/// queued 408 unsent.
#[test]
fn a_panic_in_the_timers_check_still_sends_the_408() {
    let server = serve(
        options()
            .workers(1)
            .io_timeout(Duration::from_millis(300))
            .header_timeout(Duration::from_millis(300)),
        Panicky,
    );
    let mut stream = connect(server.addr);
    stream.write_all(b"POST /bomb HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n123").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_ne!(end, End::Quiet, "never closed: {}", shown(&got));
    // The worker (also the timer's) still serves.
    let mut other = connect(server.addr);
    other.write_all(b"GET /fine HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let (fine, _) = read_for(&mut other, Duration::from_secs(3));
    assert!(text(&fine).ends_with("/fine"), "{}", shown(&fine));
    assert!(
        text(&got).starts_with("HTTP/1.1 408 "),
        "the 408 was lost: {} then {end:?}",
        shown(&got)
    );
    server.stop();
}

/// Other connections of the same worker are unaffected by a panic.
#[test]
fn other_connections_are_unaffected() {
    let server = serve(options().workers(1), Panicky);
    let mut idle = connect(server.addr);
    idle.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let _ = read_until(&mut idle, Duration::from_secs(2), |g| g.ends_with(b"/x"));
    let mut stream = connect(server.addr);
    stream.write_all(b"GET /respond-panic HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_answers_then_500("panic", &got, end, &[]);
    idle.write_all(b"GET /y HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let got = read_until(&mut idle, Duration::from_secs(2), |g| g.ends_with(b"/y"));
    assert!(text(&got).ends_with("/y"), "{}", shown(&got));
    server.stop();
}

// --- tower: a response body whose Drop panics, dropped by OnWorker's
// `poll_write` at the body's end (outside `polling`).

struct DropBomb {
    sent: bool,
}

impl http_body::Body for DropBomb {
    type Data = Bytes;
    type Error = io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if self.sent {
            return Poll::Ready(None);
        }
        self.sent = true;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"bomb")))))
    }
}

impl Drop for DropBomb {
    fn drop(&mut self) {
        if !thread::panicking() {
            panic!("the response body's drop panicked on purpose");
        }
    }
}

/// A tower response body (polled by the worker) that panics when dropped
/// at its end. The panic used to escape `OnWorker::poll_write` (its
/// `self.body.set(None)` was outside `polling`) to the worker's
/// `contained`, and `/bomb` got no answer. Now the drop is contained as
/// the polls are: `/bomb` is answered whole (or `500`), and the
/// connection may go on.
#[test]
fn a_tower_body_panicking_on_drop_gets_500() {
    let runtime = runtime();
    let app = Router::new()
        .route("/plain", get(|| async { "plain" }))
        .route("/bomb", get(|| async { AxumBody::new(DropBomb { sent: false }) }));
    let server = serve(options().workers(1), TowerHandler::new(app, runtime.handle().clone()));
    let mut stream = connect(server.addr);
    stream
        .write_all(b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\nGET /bomb HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    let (responses, rest) = split_responses(&got);
    assert!(
        responses.first().is_some_and(|(_, b)| b == b"plain"),
        "the answer before was lost: {}",
        shown(&got)
    );
    let statuses: Vec<_> = responses.iter().map(|(h, _)| h[9..12].to_string()).collect();
    assert!(
        statuses == ["200", "500"] || (statuses == ["200", "200"] && responses[1].1 == b"bomb"),
        "/bomb got no answer: statuses {statuses:?}, stray {:?}, {end:?}",
        text(&rest)
    );
    server.stop();
}

// ---------------------------------------------------------------------------
// 2. The worker polling scope
// ---------------------------------------------------------------------------

fn echo_app() -> Router {
    Router::new()
        .route(
            "/echo",
            post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
        )
        .route("/plain", get(|| async { "plain" }))
        .route("/panic", get(panics))
        .route(
            "/collect",
            post(|body: axum::body::Bytes| async move { format!("len={}", body.len()) }),
        )
}

async fn panics() -> &'static str {
    panic!("the service panicked on purpose")
}

const PIECES: usize = 6;

fn piece(i: usize) -> String {
    format!("<piece {i} {}>", "x".repeat(200))
}

/// An axum echo that streams the request body back, the body arriving a
/// piece at a time, each piece sent only once the previous one came back
/// (reads return Pending between): over HTTP/1.1, sized and chunked.
#[test]
fn a_streaming_echo_with_a_slow_body_over_http1() {
    let runtime = runtime();
    let server =
        serve(options().workers(1), TowerHandler::new(echo_app(), runtime.handle().clone()));
    for chunked in [false, true] {
        let total: usize = (0..PIECES).map(|i| piece(i).len()).sum();
        let framing = if chunked {
            "Transfer-Encoding: chunked".to_string()
        } else {
            format!("Content-Length: {total}")
        };
        let mut stream = connect(server.addr);
        stream
            .write_all(format!("POST /echo HTTP/1.1\r\nHost: t\r\n{framing}\r\n\r\n").as_bytes())
            .unwrap();
        let mut got = Vec::new();
        for i in 0..PIECES {
            let p = piece(i);
            if chunked {
                stream.write_all(format!("{:x}\r\n{p}\r\n", p.len()).as_bytes()).unwrap();
            } else {
                stream.write_all(p.as_bytes()).unwrap();
            }
            let want = p.clone();
            let more = read_until(&mut stream, Duration::from_secs(3), |g| {
                text(&[&got[..], g].concat()).contains(&want)
            });
            got.extend_from_slice(&more);
            assert!(
                text(&got).contains(&p),
                "chunked={chunked}: piece {i} never came back (a read failed with Deadlock, or no wake): {}",
                shown(&got)
            );
            thread::sleep(Duration::from_millis(30));
        }
        if chunked {
            stream.write_all(b"0\r\n\r\n").unwrap();
        }
        let more = read_until(&mut stream, Duration::from_secs(3), |g| g.ends_with(b"0\r\n\r\n"));
        got.extend_from_slice(&more);
        let t = text(&got);
        assert!(
            t.starts_with("HTTP/1.1 200 OK\r\n") && t.ends_with("0\r\n\r\n"),
            "{}",
            shown(&got)
        );
        // The connection goes on.
        stream.write_all(b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let next = read_until(&mut stream, Duration::from_secs(3), |g| g.ends_with(b"plain"));
        assert!(text(&next).ends_with("plain"), "{}", shown(&next));
    }
    // A body collected (axum's Bytes extractor) that arrives slowly.
    let mut stream = connect(server.addr);
    stream
        .write_all(b"POST /collect HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n12345")
        .unwrap();
    thread::sleep(Duration::from_millis(100));
    stream.write_all(b"67890").unwrap();
    let got = read_until(&mut stream, Duration::from_secs(3), |g| g.ends_with(b"len=10"));
    assert!(text(&got).ends_with("len=10"), "{}", shown(&got));
    server.stop();
}

/// The same echo over HTTP/2 (h2 client), the body sent a DATA frame at a
/// time, each once the previous came back.
#[test]
fn a_streaming_echo_with_a_slow_body_over_http2() {
    let runtime = runtime();
    let server =
        serve(options().workers(1), TowerHandler::new(echo_app(), runtime.handle().clone()));
    let addr = server.addr;
    let outcome = current_thread().block_on(async move {
        tokio::time::timeout(Duration::from_secs(10), async move {
            let send = common::h2_client(addr).await;
            let mut results = Vec::new();
            for round in 0..2 {
                let request = http::Request::post("http://t/echo").body(()).unwrap();
                let (answer, mut body_out) =
                    send.clone().ready().await.unwrap().send_request(request, false).unwrap();
                body_out.send_data(Bytes::from(piece(0)), false).unwrap();
                let answer = tokio::time::timeout(Duration::from_secs(3), answer)
                    .await
                    .map_err(|_| format!("round {round}: no response head"))?
                    .map_err(|e| e.to_string())?;
                let status = answer.status().as_u16();
                let mut body_in = answer.into_body();
                let mut got = String::new();
                for i in 0..PIECES {
                    while !got.contains(&piece(i)) {
                        let data = tokio::time::timeout(Duration::from_secs(3), body_in.data())
                            .await
                            .map_err(|_| {
                                format!("round {round}: piece {i} never came back: {got:?}")
                            })?;
                        match data {
                            Some(Ok(data)) => {
                                let _ = body_in.flow_control().release_capacity(data.len());
                                got.push_str(&text(&data));
                            }
                            other => return Err(format!("round {round}: piece {i}: {other:?}")),
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    if i + 1 < PIECES {
                        body_out.send_data(Bytes::from(piece(i + 1)), false).unwrap();
                    }
                }
                body_out.send_data(Bytes::new(), true).unwrap();
                loop {
                    let end = tokio::time::timeout(Duration::from_secs(3), body_in.data())
                        .await
                        .map_err(|_| format!("round {round}: no end of stream"))?;
                    match end {
                        None => break,
                        // An empty DATA frame carrying END_STREAM.
                        Some(Ok(data)) if data.is_empty() => {}
                        other => {
                            return Err(format!("round {round}: more after the echo: {other:?}"));
                        }
                    }
                }
                results.push(status);
            }
            Ok::<_, String>(results)
        })
        .await
    });
    match outcome {
        Ok(Ok(statuses)) => assert_eq!(statuses, [200, 200]),
        Ok(Err(error)) => panic!("{error}"),
        Err(_) => {
            std::mem::forget(server);
            panic!("HTTP/2 echo timed out");
        }
    }
    server.stop();
}

/// A handler that serves a tower app, except `/block`, which reads its
/// body with a `block_on` inside `respond` (a Deadlock error expected).
struct Mixed {
    tower: TowerHandler<Router>,
}

enum MixedState {
    Tower(Box<TowerState>),
    Block,
}

impl Handler for Mixed {
    type State = MixedState;
    fn head(&self, request: &Request<'_>) -> MixedState {
        if request.path() == "/block" {
            request.stream_body();
            MixedState::Block
        } else {
            MixedState::Tower(Box::new(self.tower.head(request)))
        }
    }
    fn body(&self, state: &mut MixedState, chunk: &[u8]) {
        if let MixedState::Tower(state) = state {
            self.tower.body(state, chunk);
        }
    }
    fn respond(&self, state: MixedState, response: &mut Response<'_>) {
        match state {
            MixedState::Tower(state) => self.tower.respond(*state, response),
            MixedState::Block => {
                let mut body = response.take_body().unwrap();
                let started = Instant::now();
                let read = block_on(async {
                    let mut buf = [0u8; 64];
                    tokio::io::AsyncReadExt::read(&mut body, &mut buf).await
                });
                let answer =
                    format!("{:?} after {:?}", read.map_err(|e| e.kind()), started.elapsed());
                let _ = response.body(answer.as_bytes());
            }
        }
    }
    fn blocking_here_stalls(&self) -> bool {
        self.tower.blocking_here_stalls()
    }
}

/// After a tower service panicked inside `polling` (its first poll), the
/// flag is restored: a `block_on` read in a plain `respond` on the same
/// worker fails with Deadlock at once, it does not wait for good.
#[test]
fn a_panic_inside_polling_leaves_no_flag_set() {
    let runtime = runtime();
    let handler = Mixed { tower: TowerHandler::new(echo_app(), runtime.handle().clone()) };
    let server = serve(options().workers(1), handler);
    let mut stream = connect(server.addr);
    stream.write_all(b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let got = read_until(&mut stream, Duration::from_secs(3), |g| g.ends_with(b"\r\n\r\n"));
    assert!(text(&got).starts_with("HTTP/1.1 500 "), "{}", shown(&got));
    // Then a streamed echo (polling with Pending), then the block_on.
    stream.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab").unwrap();
    thread::sleep(Duration::from_millis(50));
    stream.write_all(b"cd").unwrap();
    let got = read_until(&mut stream, Duration::from_secs(3), |g| g.ends_with(b"0\r\n\r\n"));
    assert!(text(&got).contains("abcd") || text(&got).contains("ab\r\n"), "{}", shown(&got));
    stream.write_all(b"POST /block HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n").unwrap();
    let got = read_until(&mut stream, Duration::from_secs(3), |g| {
        let t = text(g);
        t.contains("\r\n\r\n") && (t.contains("Deadlock") || t.contains("Ok("))
    });
    if got.is_empty() {
        std::mem::forget(server);
        panic!("the worker hung in block_on: the polling flag stayed set");
    }
    assert!(text(&got).contains("Err(Deadlock)"), "{}", shown(&got));
    drop(stream);
    server.stop();
}
