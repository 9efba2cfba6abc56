//! An independent review of the 5 Dec changes: a body the application reads after a response that ends the
//! exchange (HTTP/1 `closing`, HTTP/2 `keep_reading`), the errors a body's
//! read sees when its connection ends (`fail_input`), HTTP/2's FIN giving
//! up what the application owes (`drop_unanswerable`), and tower's 1xx.
//! Each test states what it would catch.
#![cfg(feature = "tower")]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::h2raw::{self, Raw};
use common::{End, read_for, serve};
use falconet_server::h2::frame::{ErrorCode, kind};
use falconet_server::{Handler, Options, Request, Response, Status};

type Report = Result<(usize, u64), ErrorKind>;

/// What `/take?...` does, from its query: `close` (the response asks to
/// close), `defer` (answered from the thread), `hold=ms` (wait before the
/// first read), `read=n` (read at most n bytes, then drop the body),
/// `keep=ms` (hold the body that long after reading), `wait` (HTTP/2:
/// defer and wait for `closed()`).
#[derive(Clone, Copy, Default, Debug)]
struct Params {
    close: bool,
    defer: bool,
    hold: u64,
    read: Option<usize>,
    keep: u64,
    wait: bool,
}

impl Params {
    fn parse(target: &str) -> Self {
        let mut p = Self::default();
        let query = target.split_once('?').map_or("", |(_, q)| q);
        for part in query.split('&') {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            match k {
                "close" => p.close = true,
                "defer" => p.defer = true,
                "hold" => p.hold = v.parse().unwrap(),
                "read" => p.read = Some(v.parse().unwrap()),
                "keep" => p.keep = v.parse().unwrap(),
                "wait" => p.wait = true,
                _ => {}
            }
        }
        p
    }
}

/// Answers `202 accepted` at once (or deferred), reads the request body on
/// a thread afterwards as `Params` says, and reports what the read gave.
struct Probe {
    reports: Mutex<mpsc::Sender<Report>>,
    /// `wait`: whether the responder saw `closed()` (within 5 s).
    closed: Mutex<mpsc::Sender<bool>>,
}

fn probe() -> (Probe, mpsc::Receiver<Report>, mpsc::Receiver<bool>) {
    let (tx, rx) = mpsc::channel();
    let (ctx, crx) = mpsc::channel();
    (Probe { reports: Mutex::new(tx), closed: Mutex::new(ctx) }, rx, crx)
}

impl Handler for Probe {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        if request.path() == "/take" {
            request.stream_body();
        }
        request.target().to_string()
    }

    fn respond(&self, target: String, response: &mut Response<'_>) {
        let p = Params::parse(&target);
        if p.wait {
            let responder = response.defer().unwrap();
            let closed = self.closed.lock().unwrap().clone();
            thread::spawn(move || {
                let rt = common::current_thread();
                let seen = rt
                    .block_on(async {
                        tokio::time::timeout(Duration::from_secs(5), responder.closed()).await
                    })
                    .is_ok();
                let _ = closed.send(seen);
            });
            return;
        }
        let Some(mut body) = response.take_body() else {
            response.body(b"no body").unwrap();
            return;
        };
        let report = self.reports.lock().unwrap().clone();
        let responder = if p.defer {
            Some(response.defer().unwrap())
        } else {
            response.status(Status::new(202).unwrap()).unwrap();
            if p.close {
                response.close().unwrap();
            }
            response.body(b"accepted").unwrap();
            None
        };
        thread::spawn(move || {
            if let Some(mut responder) = responder {
                responder.status(Status::new(202).unwrap()).unwrap();
                if p.close {
                    responder.close().unwrap();
                }
                responder.body(b"accepted").unwrap();
            }
            thread::sleep(Duration::from_millis(p.hold));
            let limit = p.read.unwrap_or(usize::MAX);
            let mut got = (0usize, common::FNV_START);
            let mut buf = vec![0u8; 16 * 1024];
            let result = loop {
                if got.0 >= limit {
                    break Ok(got);
                }
                let want = buf.len().min(limit - got.0);
                match body.read(&mut buf[..want]) {
                    Ok(0) => break Ok(got),
                    Ok(n) => got = (got.0 + n, common::fnv(got.1, &buf[..n])),
                    Err(error) => break Err(error.kind()),
                }
            };
            let _ = report.send(result);
            thread::sleep(Duration::from_millis(p.keep));
            drop(body);
        });
    }
}

fn statuses(bytes: &[u8]) -> Vec<String> {
    let text = common::text(bytes);
    text.match_indices("HTTP/1.")
        .map(|(at, _)| text[at..].lines().next().unwrap_or_default().to_string())
        .collect()
}

/// A server with the probe, and a connection that sent `request`.
fn post(
    options: Options,
    request: &[u8],
) -> (common::TestServer<Probe>, TcpStream, mpsc::Receiver<Report>) {
    let (probe, reports, _) = probe();
    let server = serve(options, probe);
    let mut stream = common::connect(server.addr);
    stream.write_all(request).unwrap();
    (server, stream, reports)
}

fn hash(bytes: &[u8]) -> u64 {
    common::fnv(common::FNV_START, bytes)
}

// ---------------------------------------------------------------------------
// HTTP/1: a response that ends with `Connection: close` while the body is lent
// ---------------------------------------------------------------------------

/// A request answered in full with `Connection: close` (asked by the
/// client, or by a deferred response), its body lent to an application
/// that holds it past `response_timeout`, and a request pipelined behind
/// the body: nothing may follow the closing response (no `503` for the
/// request after it, which must never be parsed).
fn closing_then_pipelined(target: &str, close: &str) {
    let (probe, reports, _) = probe();
    let options = Options::new().workers(1).response_timeout(Some(Duration::from_millis(300)));
    let server = serve(options, probe);
    let mut stream = common::connect(server.addr);
    let request = format!(
        "POST {target} HTTP/1.1\r\nHost: t\r\n{close}Content-Length: 10\r\n\r\n0123456789\
         GET /x HTTP/1.1\r\nHost: t\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(4));
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Ok((10, hash(b"0123456789"))), "{target}");
    assert_eq!(statuses(&got), ["HTTP/1.1 202 Accepted"], "{target}: {}", common::text(&got));
    assert_eq!(end, End::Eof, "{target}");
}

#[test]
fn h1_closing_response_then_pipelined_request_gets_no_second_status() {
    closing_then_pipelined("/take?hold=1500", "Connection: close\r\n");
}

/// The same, the close asked by a deferred response.
#[test]
fn h1_deferred_closing_response_then_pipelined_request_gets_no_second_status() {
    closing_then_pipelined("/take?defer&close&hold=1500", "");
}

/// The client stalls mid-body after a closing response: the I/O timeout
/// still ends the connection, without a `408` after the complete response,
/// and the application's read fails with `TimedOut` (the client keeps its
/// socket open meanwhile, as the commit's test does).
#[test]
fn h1_closing_response_client_stalls_no_408_and_read_times_out() {
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_millis(300))
        .linger_timeout(Duration::from_millis(300));
    let (_server, mut stream, reports) = post(options, b"POST /take HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 1000\r\n\r\n0123456789");
    let started = Instant::now();
    let (got, end) = read_for(&mut stream, Duration::from_secs(4));
    assert_eq!(statuses(&got), ["HTTP/1.1 202 Accepted"], "{}", common::text(&got));
    assert_eq!(end, End::Eof, "closed by the I/O timeout");
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Err(ErrorKind::TimedOut));
    assert!(started.elapsed() < Duration::from_secs(4));
}

/// The same stall, but the client closes its socket as soon as it sees
/// the server's FIN (what most clients do on EOF): the read still fails
/// with `TimedOut`, as RequestBody's docs promise for a connection the
/// timer closed.
#[test]
fn h1_stall_then_client_closes_on_eof_read_still_times_out() {
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_millis(300))
        .linger_timeout(Duration::from_secs(5));
    let (_server, mut stream, reports) =
        post(options, b"POST /take HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n0123456789");
    let (got, end) = read_for(&mut stream, Duration::from_secs(4));
    assert!(statuses(&got).len() == 1, "{}", common::text(&got));
    assert_eq!(end, End::Eof);
    thread::sleep(Duration::from_millis(500));
    drop(stream); // the client leaves on EOF
    let left = Instant::now();
    let report = reports.recv_timeout(Duration::from_secs(8)).expect("read");
    eprintln!("read failed {:?} after the client left", left.elapsed());
    assert_eq!(report, Err(ErrorKind::TimedOut), "the timer closed this connection");
}

/// A closing response, then the client's FIN mid-body: the read fails with
/// `UnexpectedEof`, the connection closes at once, one status.
#[test]
fn h1_closing_response_client_fin_mid_body() {
    let (_server, mut stream, reports) = post(Options::new().workers(1), b"POST /take?hold=100 HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 1000\r\n\r\n0123456789");
    stream.shutdown(Shutdown::Write).unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_eq!(statuses(&got), ["HTTP/1.1 202 Accepted"], "{}", common::text(&got));
    assert_eq!(end, End::Eof);
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Err(ErrorKind::UnexpectedEof));
}

/// A closing response, then a lent chunked body that fails (malformed;
/// past `max_body`): the read fails with its kind, no `400`/`413` follows
/// the complete response, and the connection closes.
#[test]
fn h1_closing_response_failed_chunked_body_gets_no_second_status() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1).max_body(100), probe);
    for (chunks, kind) in [
        (&b"5\r\nhello\r\nzz\r\n"[..], ErrorKind::InvalidData),
        (&b"c8\r\n"[..], ErrorKind::FileTooLarge),
    ] {
        let mut stream = common::connect(server.addr);
        let mut request = b"POST /take?hold=100 HTTP/1.1\r\nHost: t\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        request.extend_from_slice(chunks);
        if kind == ErrorKind::FileTooLarge {
            request.extend_from_slice(&[b'x'; 200]);
        }
        stream.write_all(&request).unwrap();
        let (got, end) = read_for(&mut stream, Duration::from_secs(3));
        let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
        assert_eq!(report, Err(kind));
        assert_eq!(statuses(&got), ["HTTP/1.1 202 Accepted"], "{kind:?}: {}", common::text(&got));
        assert_eq!(end, End::Eof, "{kind:?}");
    }
}

/// A closing response whose body the application drops half read: the
/// connection closes (the rest is the linger's), one status, nothing hangs.
#[test]
fn h1_closing_response_body_dropped_half_read_closes() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1).linger_timeout(Duration::from_millis(500)), probe);
    let stream = common::connect(server.addr);
    let head = b"POST /take?read=1000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 4000000\r\n\r\n";
    let mut pieces = vec![head.to_vec()];
    pieces.extend(common::pieces(40, 100_000));
    let writer = common::trickle(&stream, pieces, Duration::from_millis(5));
    let mut reader = stream.try_clone().unwrap();
    let (got, end) = read_for(&mut reader, Duration::from_secs(5));
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert!(matches!(report, Ok((1000, _))), "{report:?}");
    assert_eq!(statuses(&got), ["HTTP/1.1 202 Accepted"], "{}", common::text(&got));
    assert!(matches!(end, End::Eof | End::Reset), "closed: {end:?}");
    let _ = writer.join();
}

/// `Expect: 100-continue`, answered at once before the application reads
/// (so no 100 and `Connection: close`): a client that sends no body and
/// waits for the server's close is closed promptly (as before 97ea18e),
/// and no `100 Continue` follows the final response.
#[test]
fn h1_expect_continue_answered_before_read_closes_promptly() {
    let (_server, mut stream, reports) = post(Options::new().workers(1).io_timeout(Duration::from_secs(10)), b"POST /take?hold=100 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n");
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    let seen = statuses(&got);
    assert_eq!(seen, ["HTTP/1.1 202 Accepted"], "{}", common::text(&got));
    assert!(common::text(&got).to_ascii_lowercase().contains("connection: close"));
    assert_eq!(end, End::Eof, "the server closes after its closing answer");
    drop(stream);
    let _ = reports.recv_timeout(Duration::from_secs(15));
}

/// A deferred response that ends with `close` while the application still
/// reads, and a request pipelined after the body: the body arrives whole,
/// the pipelined request is not answered, the connection closes.
#[test]
fn h1_deferred_closing_response_pipelined_request_not_parsed() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1), probe);
    let mut stream = common::connect(server.addr);
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut request = format!(
        "POST /take?defer&close&hold=100 HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request.extend_from_slice(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    let writer = common::trickle(&stream, vec![request], Duration::ZERO);
    let report = reports.recv_timeout(Duration::from_secs(10)).expect("read");
    assert_eq!(report, Ok((body.len(), hash(&body))));
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    assert_eq!(statuses(&got), ["HTTP/1.1 202 Accepted"], "{}", common::text(&got));
    assert_eq!(end, End::Eof);
    writer.join().unwrap();
}

/// Control for the HTTP/2 test below: over HTTP/1.1 an application that
/// answered and reads the body only after `io_timeout` (the client is
/// held back by it, owing nothing) still gets the whole body.
#[test]
fn h1_application_behind_after_response_is_not_timed_out() {
    let (probe, reports, _) = probe();
    let options =
        Options::new().workers(1).io_timeout(Duration::from_millis(500)).response_timeout(None);
    let server = serve(options, probe);
    let stream = common::connect(server.addr);
    let len = 3 << 20;
    let head = format!("POST /take?hold=2000 HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n");
    let body = vec![b'x'; len];
    let writer = common::trickle(&stream, vec![head.into_bytes(), body.clone()], Duration::ZERO);
    let report = reports.recv_timeout(Duration::from_secs(15)).expect("read");
    assert_eq!(report, Ok((len, hash(&body))));
    writer.join().unwrap();
}

// ---------------------------------------------------------------------------
// HTTP/2: keep_reading
// ---------------------------------------------------------------------------

fn rsts(frames: &[h2raw::Frame], stream: u32) -> Vec<ErrorCode> {
    frames
        .iter()
        .filter(|f| f.kind == kind::RST_STREAM && f.stream == stream)
        .map(|f| ErrorCode::from(f.code()))
        .collect()
}

fn kinds(frames: &[h2raw::Frame]) -> Vec<(u8, u32, u8)> {
    frames.iter().map(|f| (f.kind, f.stream, f.flags)).collect()
}

/// The application drops the body half read after the response ended, the
/// client sending nothing more meanwhile: RST_STREAM(NO_ERROR) comes (the
/// client is told to stop), once, and the connection serves on.
#[test]
fn h2_body_dropped_after_response_resets_once_without_more_data() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1), probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take?read=5"), false);
    raw.data(1, b"hello", false);
    let mut frames =
        h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(5)).expect("read"),
        Ok((5, hash(b"hello")))
    );
    // The body is dropped right after the report; the client is idle.
    frames.extend(h2raw::frames_until(&mut raw, Duration::from_millis(1500), |f| {
        f.kind == kind::RST_STREAM
    }));
    let early = rsts(&frames, 1);
    // More DATA after the drop.
    raw.data(1, b"world", false);
    frames.extend(h2raw::frames_until(&mut raw, Duration::from_millis(800), |_| false));
    raw.headers(3, &h2raw::req("GET", "/x"), true);
    frames.extend(h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| {
        f.stream == 3 && f.end_stream()
    }));
    assert!(frames.iter().all(|f| f.kind != kind::GOAWAY), "{:?}", kinds(&frames));
    assert!(frames.iter().any(|f| f.stream == 3 && f.end_stream()), "{:?}", kinds(&frames));
    assert_eq!(rsts(&frames, 1), [ErrorCode::NO_ERROR], "exactly one reset: {:?}", kinds(&frames));
    assert_eq!(
        early,
        [ErrorCode::NO_ERROR],
        "the reset came without more DATA: {:?}",
        kinds(&frames)
    );
}

/// Sends a POST of `len` bytes with the h2 crate; Some(true) when it all
/// went, Some(false) when the stream was reset, None when it stalled for
/// `patience`.
async fn upload(
    send: &h2::client::SendRequest<Bytes>,
    path: &str,
    body: Bytes,
    patience: Duration,
) -> (http::StatusCode, Option<bool>) {
    upload_after(send, path, body, patience, false).await
}

/// `upload`; with `after_response`, the body is sent only once the
/// response's head has come (the server answers at once).
async fn upload_after(
    send: &h2::client::SendRequest<Bytes>,
    path: &str,
    body: Bytes,
    patience: Duration,
    after_response: bool,
) -> (http::StatusCode, Option<bool>) {
    let mut ready = send.clone().ready().await.unwrap();
    let request = http::Request::post(format!("http://localhost{path}")).body(()).unwrap();
    let (response, mut stream) = ready.send_request(request, false).unwrap();
    let (head_tx, head_rx) = tokio::sync::oneshot::channel::<()>();
    let response = async move {
        let status = response.await.unwrap().status();
        let _ = head_tx.send(());
        status
    };
    let sender = tokio::spawn(async move {
        if after_response {
            let _ = head_rx.await;
        }
        let mut rest = body;
        while !rest.is_empty() {
            stream.reserve_capacity(rest.len().min(1 << 20));
            let Some(Ok(granted)) = std::future::poll_fn(|cx| stream.poll_capacity(cx)).await
            else {
                return false;
            };
            let piece = rest.split_to(granted.min(rest.len()));
            if stream.send_data(piece, rest.is_empty()).is_err() {
                return false;
            }
        }
        true
    });
    let status = response.await;
    let sent = tokio::time::timeout(patience, sender).await.ok().map(Result::unwrap);
    (status, sent)
}

/// A lent body that goes past `max_body` after its response ended: the
/// read fails with `FileTooLarge`, and the client is stopped (its stream
/// reset), not left stalled on a stream nobody reads.
#[test]
fn h2_body_over_max_body_after_response_stops_the_client() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1).max_body(10_000), probe);
    common::current_thread().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        let body = Bytes::from(vec![b'x'; 4 << 20]);
        let (status, sent) = upload_after(&send, "/take", body, Duration::from_secs(5), true).await;
        assert_eq!(status, http::StatusCode::ACCEPTED);
        let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
        assert_eq!(report, Err(ErrorKind::FileTooLarge));
        assert_eq!(sent, Some(false), "None: the upload stalled, never reset");
    });
}

/// An application that answered at once and reads the body only after
/// `io_timeout` (the client waits for its window, owing nothing): the body
/// arrives whole, as over HTTP/1.1 (control test above); the connection is
/// not aborted.
#[test]
fn h2_application_behind_after_response_is_not_timed_out() {
    let (probe, reports, _) = probe();
    let options =
        Options::new().workers(1).io_timeout(Duration::from_millis(500)).response_timeout(None);
    let server = serve(options, probe);
    common::current_thread().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        let body = Bytes::from(vec![b'x'; 3 << 20]);
        let (status, sent) =
            upload(&send, "/take?hold=2000", body.clone(), Duration::from_secs(10)).await;
        assert_eq!(status, http::StatusCode::ACCEPTED);
        let report = reports.recv_timeout(Duration::from_secs(10)).expect("read");
        assert_eq!(report, Ok((body.len(), hash(&body))));
        assert_eq!(sent, Some(true));
    });
}

/// A client that stalls mid-body after the response: the I/O timeout still
/// ends it, and the read fails with `TimedOut`.
#[test]
fn h2_client_stalls_after_response_times_out() {
    let (probe, reports, _) = probe();
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_millis(300))
        .linger_timeout(Duration::from_millis(300));
    let server = serve(options, probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take"), false);
    raw.data(1, b"0123456789", false);
    let started = Instant::now();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(4), |_| false);
    assert!(frames.iter().any(|f| f.kind == kind::GOAWAY), "{:?}", kinds(&frames));
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Err(ErrorKind::TimedOut));
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Graceful shutdown with a stream whose response ended and whose body the
/// application still reads: the client, told GOAWAY, finishes its body,
/// which arrives whole; then the connection closes.
#[test]
fn h2_graceful_shutdown_lets_a_body_being_read_finish() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1).shutdown_timeout(Duration::from_secs(5)), probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take"), false);
    raw.data(1, b"0123456789", false);
    let frames =
        h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    assert!(frames.iter().any(|f| f.stream == 1 && f.end_stream()), "{:?}", kinds(&frames));
    let handle = server.handle().clone();
    handle.shutdown();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::GOAWAY);
    assert!(frames.iter().any(|f| f.kind == kind::GOAWAY), "{:?}", kinds(&frames));
    raw.data(1, b"abcdefghij", true);
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Ok((20, hash(b"0123456789abcdefghij"))));
    let started = Instant::now();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(4), |_| false);
    assert!(started.elapsed() < Duration::from_secs(3), "closed: {:?}", kinds(&frames));
    assert_eq!(rsts(&frames, 1), [], "{:?}", kinds(&frames));
}

/// Graceful shutdown where the client never finishes the body: the server
/// stops by `shutdown_timeout`, and the read fails with
/// `ConnectionAborted`.
#[test]
fn h2_graceful_shutdown_with_a_stalled_body_ends_by_the_deadline() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1).shutdown_timeout(Duration::from_secs(1)), probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take"), false);
    raw.data(1, b"0123456789", false);
    let _ =
        h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    let started = Instant::now();
    let stopper = thread::spawn(move || server.stop());
    let report = reports.recv_timeout(Duration::from_secs(6)).expect("read");
    assert_eq!(report, Err(ErrorKind::ConnectionAborted));
    stopper.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
}

/// Many bodies dropped half read after their responses on one connection,
/// then a large upload on the same connection: the connection's window
/// has not leaked (the upload arrives whole, in time).
#[test]
fn h2_connection_window_survives_many_bodies_dropped_after_response() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1), probe);
    common::current_thread().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        for i in 0..30 {
            let (status, sent) = upload(
                &send,
                "/take?read=1000",
                Bytes::from(vec![b'y'; 300_000]),
                Duration::from_secs(10),
            )
            .await;
            assert_eq!(status, http::StatusCode::ACCEPTED, "{i}");
            assert!(sent.is_some(), "{i}: the upload stalled");
            assert!(matches!(reports.recv_timeout(Duration::from_secs(5)), Ok(Ok((1000, _)))));
        }
        let body = Bytes::from(vec![b'z'; 3 << 20]);
        let (status, sent) = upload(&send, "/take", body.clone(), Duration::from_secs(10)).await;
        assert_eq!(status, http::StatusCode::ACCEPTED);
        assert_eq!(sent, Some(true));
        let report = reports.recv_timeout(Duration::from_secs(10)).expect("read");
        assert_eq!(report, Ok((body.len(), hash(&body))));
    });
}

/// `max_concurrent_streams` 1: a stream whose response ended while its
/// body is read still counts (half-closed (local)), so a second is refused;
/// once the body ends, the slot is free again.
#[test]
fn h2_stream_read_after_response_holds_its_slot_until_the_body_ends() {
    let (probe, reports, _) = probe();
    let config =
        falconet_server::h2::connection::Config { max_concurrent_streams: 1, ..Default::default() };
    let server = serve(Options::new().workers(1).http2(config), probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take"), false);
    raw.data(1, b"0123456789", false);
    let _ =
        h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    raw.headers(3, &h2raw::req("GET", "/x"), true);
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(2), |f| f.stream == 3);
    assert_eq!(rsts(&frames, 3), [ErrorCode::REFUSED_STREAM], "{:?}", kinds(&frames));
    raw.data(1, b"", true);
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(5)).expect("read"),
        Ok((10, hash(b"0123456789")))
    );
    thread::sleep(Duration::from_millis(100));
    raw.headers(5, &h2raw::req("GET", "/x"), true);
    let frames =
        h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 5 && f.end_stream());
    assert!(
        frames.iter().any(|f| f.stream == 5 && f.kind == kind::HEADERS),
        "{:?}",
        kinds(&frames)
    );
    assert_eq!(rsts(&frames, 5), [], "{:?}", kinds(&frames));
}

// ---------------------------------------------------------------------------
// HTTP/2 FIN: drop_unanswerable
// ---------------------------------------------------------------------------

/// A client sends requests answered at once and its FIN in the same write:
/// every answer still goes out whole before the close.
#[test]
fn h2_fin_synchronous_answers_still_go_out() {
    let server = serve(Options::new().workers(1), common::Echo);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut out = Vec::new();
    for id in [1u32, 3, 5] {
        out.extend(h2raw::frame_bytes(kind::HEADERS, 0x5, id, &h2raw::req("GET", "/x")));
    }
    raw.send(&out);
    raw.tcp.shutdown(Shutdown::Write).unwrap();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(3), |_| false);
    for id in [1u32, 3, 5] {
        assert!(
            frames.iter().any(|f| f.stream == id && f.end_stream()),
            "{id}: {:?}",
            kinds(&frames)
        );
        assert_eq!(rsts(&frames, id), [], "{:?}", kinds(&frames));
    }
}

/// A FIN gives up a deferred response: its responder's `closed()`
/// resolves, its stream gets one well-formed RST_STREAM(CANCEL), and a
/// stream whose body was being read fails with `UnexpectedEof`.
#[test]
fn h2_fin_tells_deferred_responders_and_fails_bodies() {
    let (probe, reports, closed) = probe();
    let server = serve(Options::new().workers(1), probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("GET", "/wait?wait"), true);
    raw.headers(3, &h2raw::req("POST", "/take"), false);
    raw.data(3, b"0123456789", false);
    let _ =
        h2raw::frames_until(&mut raw, Duration::from_secs(2), |f| f.stream == 3 && f.end_stream());
    thread::sleep(Duration::from_millis(100));
    raw.tcp.shutdown(Shutdown::Write).unwrap();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(3), |_| false);
    assert_eq!(closed.recv_timeout(Duration::from_secs(6)), Ok(true), "closed() resolved");
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(5)).expect("read"),
        Err(ErrorKind::UnexpectedEof)
    );
    let resets: Vec<_> = frames.iter().filter(|f| f.kind == kind::RST_STREAM).collect();
    assert_eq!(resets.len(), 1, "{:?}", kinds(&frames));
    assert_eq!((resets[0].stream, resets[0].payload.len()), (1, 4));
    assert_eq!(ErrorCode::from(resets[0].code()), ErrorCode::CANCEL);
}

/// A tower body that gives one frame and then never ends, with a guard
/// that reports its drop.
struct Forever {
    sent: bool,
    dropped: Option<mpsc::Sender<()>>,
}

impl Drop for Forever {
    fn drop(&mut self) {
        if let Some(tx) = self.dropped.take() {
            let _ = tx.send(());
        }
    }
}

impl http_body::Body for Forever {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.sent {
            return std::task::Poll::Pending;
        }
        self.sent = true;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(b"first")))))
    }
}

/// A FIN gives up a polled tower body (it is dropped, its stream gets
/// CANCEL) while a sync answer on another stream still goes out; the
/// connection closes.
#[test]
fn h2_fin_drops_polled_tower_bodies() {
    use axum::Router;
    use axum::routing::get;
    let runtime = common::runtime();
    let (tx, dropped) = mpsc::channel();
    let tx = Arc::new(Mutex::new(tx));
    let router = Router::new()
        .route(
            "/forever",
            get(move || {
                let tx = tx.lock().unwrap().clone();
                async move { axum::body::Body::new(Forever { sent: false, dropped: Some(tx) }) }
            }),
        )
        .route("/hi", get(|| async { "hi" }));
    let handler = falconet_server::tower::TowerHandler::new(router, runtime.handle().clone());
    let server = serve(Options::new().workers(1), handler);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("GET", "/forever"), true);
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::DATA);
    assert!(frames.iter().any(|f| f.kind == kind::DATA && f.stream == 1), "{:?}", kinds(&frames));
    let mut out = h2raw::frame_bytes(kind::HEADERS, 0x5, 3, &h2raw::req("GET", "/hi"));
    out.extend(h2raw::frame_bytes(kind::PING, 0, 0, &[0; 8]));
    raw.send(&out);
    raw.tcp.shutdown(Shutdown::Write).unwrap();
    let started = Instant::now();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(4), |_| false);
    assert!(started.elapsed() < Duration::from_secs(3), "closed at once: {:?}", kinds(&frames));
    assert_eq!(dropped.recv_timeout(Duration::from_secs(3)), Ok(()), "the body was dropped");
    assert_eq!(rsts(&frames, 1), [ErrorCode::CANCEL], "{:?}", kinds(&frames));
    assert!(frames.iter().any(|f| f.stream == 3 && f.end_stream()), "{:?}", kinds(&frames));
}

// ---------------------------------------------------------------------------
// fail_input
// ---------------------------------------------------------------------------

/// A complete body whose client then sends its FIN (HTTP/1.1) or resets
/// (HTTP/1.1) still reads whole and `Ok`; a client's RST_STREAM fails an
/// HTTP/2 read with `ConnectionReset`; its FIN mid-body with
/// `UnexpectedEof`.
#[test]
fn fail_input_kinds_and_complete_bodies() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1), probe);
    let body = b"0123456789";
    for end in ["fin", "reset"] {
        let stream = common::connect(server.addr);
        (&stream)
            .write_all(
                b"POST /take?hold=300 HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789",
            )
            .unwrap();
        thread::sleep(Duration::from_millis(50));
        if end == "fin" {
            stream.shutdown(Shutdown::Write).unwrap();
        } else {
            socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)).unwrap();
            drop(stream);
        }
        let report = reports.recv_timeout(Duration::from_secs(5)).expect(end);
        assert_eq!(report, Ok((10, hash(body))), "{end}");
    }
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take?hold=100"), false);
    raw.data(1, b"01234", false);
    let _ =
        h2raw::frames_until(&mut raw, Duration::from_secs(2), |f| f.stream == 1 && f.end_stream());
    raw.frame(kind::RST_STREAM, 0, 1, &u32::from(ErrorCode::CANCEL).to_be_bytes());
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(5)).expect("rst"),
        Err(ErrorKind::ConnectionReset)
    );
    raw.headers(3, &h2raw::req("POST", "/take?hold=100"), false);
    raw.data(3, b"01234", false);
    let _ =
        h2raw::frames_until(&mut raw, Duration::from_secs(2), |f| f.stream == 3 && f.end_stream());
    raw.tcp.shutdown(Shutdown::Write).unwrap();
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(5)).expect("fin"),
        Err(ErrorKind::UnexpectedEof)
    );
}

/// HTTP/1.1: the server's shutdown deadline closes a connection whose body
/// is still being read: `ConnectionAborted`.
#[test]
fn h1_shutdown_deadline_fails_the_read_with_connection_aborted() {
    let (probe, reports, _) = probe();
    let server =
        serve(Options::new().workers(1).shutdown_timeout(Duration::from_millis(500)), probe);
    let stream = common::connect(server.addr);
    (&stream)
        .write_all(b"POST /take HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n0123456789")
        .unwrap();
    thread::sleep(Duration::from_millis(100));
    let stopper = thread::spawn(move || server.stop());
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Err(ErrorKind::ConnectionAborted));
    stopper.join().unwrap();
    drop(stream);
}

// ---------------------------------------------------------------------------
// tower: 1xx
// ---------------------------------------------------------------------------

/// A 1xx answer over HTTP/2 (now and from a task): a clean 500 (no field
/// or body of the service's), and the connection serves on.
#[test]
fn tower_1xx_over_h2_is_a_clean_500() {
    use axum::Router;
    use axum::routing::get;
    let runtime = common::runtime();
    let router = Router::new()
        .route(
            "/early",
            get(|| async { (http::StatusCode::from_u16(103).unwrap(), [("x-a", "b")], "z") }),
        )
        .route(
            "/early-later",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                (http::StatusCode::SWITCHING_PROTOCOLS, [("x-a", "b")], "z")
            }),
        )
        .route("/hi", get(|| async { "hi" }));
    let handler = falconet_server::tower::TowerHandler::new(router, runtime.handle().clone());
    let server = serve(Options::new().workers(1), handler);
    common::current_thread().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        for path in ["/early", "/early-later", "/hi"] {
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::get(format!("http://localhost{path}")).body(()).unwrap();
            let (response, _) = ready.send_request(request, true).unwrap();
            let response = response.await.unwrap();
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(piece) = body.data().await {
                got.extend_from_slice(&piece.unwrap());
            }
            if path == "/hi" {
                assert_eq!((status.as_u16(), &got[..]), (200, &b"hi"[..]));
            } else {
                assert_eq!((status.as_u16(), &got[..]), (500, &b""[..]), "{path}");
                assert!(headers.get("x-a").is_none(), "{path}: {headers:?}");
            }
        }
    });
}

#[allow(dead_code)]
fn unused(_: TcpStream) {}

/// Raw-frame form of the max_body case: which frames the server sends
/// once a lent body passes `max_body` after its response ended.
#[test]
fn h2_body_over_max_body_after_response_raw_frames() {
    let (probe, reports, _) = probe();
    let server = serve(Options::new().workers(1).max_body(10_000), probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/take"), false);
    let _ =
        h2raw::frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    for _ in 0..4 {
        raw.data(1, &[b'x'; 16_000], false);
    }
    let report = reports.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(report, Err(ErrorKind::FileTooLarge));
    let frames =
        h2raw::frames_until(&mut raw, Duration::from_secs(2), |f| f.kind == kind::RST_STREAM);
    eprintln!("frames after the overflow: {:?} rsts {:?}", kinds(&frames), rsts(&frames, 1));
    assert_eq!(rsts(&frames, 1).len(), 1, "{:?}", kinds(&frames));
}
