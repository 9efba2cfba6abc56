//! Review of `Options::min_request_body_rate`: tests that try to break it.
//! False positives (an honest client cut off), false negatives (a slow
//! client that escapes), interactions with the other timeouts, and the
//! meter's extremes.
//!
//! Five of them failed against the change as first written (each says
//! why); all pass since the fix.

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, block, data_frames, frame_bytes, req};
use common::{Client, options, pieces, serve, trickle};
use falconet_server::h2::frame::{self, ErrorCode, kind};
use falconet_server::{
    Handler, MAX_TIMEOUT, MIN_TIMEOUT, MinDataRate, Options, Request, RequestBody, Responder,
    Response, Status,
};

/// 1,000 bytes a second, a second behind.
const RATE: MinDataRate = MinDataRate::new(1000, Duration::from_secs(1));

type KeptItem = (Responder, Option<RequestBody>);

/// Routes:
/// - `/read?chunk=N&every=MS`: reads its body on a thread, N bytes every MS
///   ms, then answers `len=N`;
/// - `/hold`: takes its body, never reads it (kept until the test ends);
/// - `/early`: asks for the body, does not take it, answers `early` at once
///   (the server drains the body);
/// - `/partial?chunk=N&every=MS`: takes its body, writes `partial` to its
///   response at once, then reads the body as `/read` and ends the response;
/// - `/big?n=N`: answers N bytes;
/// - anything else: counts its body on the worker, answers `len=N`.
struct Review {
    kept: mpsc::Sender<KeptItem>,
}

fn query(target: &str) -> (usize, u64) {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let mut chunk = 1024;
    let mut every = 100;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("chunk", v)) => chunk = v.parse().unwrap(),
            Some(("every", v)) => every = v.parse().unwrap(),
            _ => {}
        }
    }
    (chunk, every)
}

/// Reads `body` `chunk` bytes every `every` ms; the bytes read, or None on
/// an error.
fn read_slowly(body: &mut RequestBody, chunk: usize, every: u64) -> Option<u64> {
    let mut buf = vec![0u8; chunk];
    let mut read = 0u64;
    loop {
        thread::sleep(Duration::from_millis(every));
        // Fill the chunk (a read returns what one pipe read holds).
        let mut got = 0;
        while got < chunk {
            match body.read(&mut buf[got..]) {
                Ok(0) => return Some(read + got as u64),
                Ok(n) => got += n,
                Err(_) => return None,
            }
        }
        read += got as u64;
    }
}

impl Handler for Review {
    type State = (String, u64);

    fn head(&self, request: &Request<'_>) -> (String, u64) {
        if matches!(request.path(), "/read" | "/hold" | "/early" | "/partial") {
            request.stream_body();
        }
        (request.target().to_string(), 0)
    }

    fn body(&self, state: &mut (String, u64), chunk: &[u8]) {
        state.1 += chunk.len() as u64;
    }

    fn respond(&self, (target, len): (String, u64), response: &mut Response<'_>) {
        let path = target.split_once('?').map_or(target.as_str(), |(p, _)| p);
        match path {
            "/read" => {
                let (chunk, every) = query(&target);
                let body = response.take_body();
                let Ok(responder) = response.defer() else { return };
                thread::spawn(move || {
                    let mut body = body.expect("a streamed body");
                    match read_slowly(&mut body, chunk, every) {
                        Some(read) => {
                            let _ = responder.body(format!("len={read}").as_bytes());
                        }
                        None => {
                            let mut responder = responder;
                            let _ = responder.status(Status::INTERNAL_SERVER_ERROR);
                        }
                    }
                });
            }
            "/partial" => {
                let (chunk, every) = query(&target);
                let body = response.take_body();
                let Ok(mut responder) = response.defer() else { return };
                thread::spawn(move || {
                    let mut body = body.expect("a streamed body");
                    if responder.write_blocking(b"partial").is_err() {
                        return;
                    }
                    let read = read_slowly(&mut body, chunk, every);
                    if let Some(read) = read {
                        let _ = responder.write_blocking(format!(" len={read}").as_bytes());
                        let _ = responder.finish();
                    }
                });
            }
            "/hold" => {
                let body = response.take_body();
                let Ok(responder) = response.defer() else { return };
                let _ = self.kept.send((responder, body));
            }
            "/early" => {
                response.body(b"early").unwrap();
            }
            "/big" => {
                let n: usize = target.split_once("n=").map_or(0, |(_, n)| n.parse().unwrap());
                response.body(&vec![b'y'; n]).unwrap();
            }
            _ => response.body(format!("len={len}").as_bytes()).unwrap(),
        }
    }
}

type Kept = mpsc::Receiver<KeptItem>;

fn review(options: Options) -> (common::TestServer<Review>, Kept) {
    let (kept, held) = mpsc::channel();
    (serve(options, Review { kept }), held)
}

/// One worker, the test rate, an I/O timeout far past every test.
fn rated() -> Options {
    options().workers(1).io_timeout(Duration::from_secs(60)).min_request_body_rate(Some(RATE))
}

/// What an HTTP/2 connection did within a time.
#[derive(Debug, PartialEq, Eq)]
enum H2End {
    /// A GOAWAY with this code (the frames after it are not read).
    Goaway(u32),
    /// The connection ended without a GOAWAY.
    Eof,
    /// Still open at the deadline.
    Open,
}

/// Reads frames (PINGing every 250 ms, so a live connection answers) until
/// a GOAWAY, the end, or `within`; `on_frame` sees every other frame.
fn watch(
    raw: &mut Raw,
    within: Duration,
    mut on_frame: impl FnMut(&mut Raw, &common::h2raw::Frame),
) -> H2End {
    let deadline = Instant::now() + within;
    let mut next_ping = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline {
            return H2End::Open;
        }
        if now >= next_ping {
            if raw.try_send(&frame_bytes(kind::PING, 0, 0, &[7; 8])).is_err() {
                return H2End::Eof;
            }
            next_ping = now + Duration::from_millis(250);
        }
        let wait = deadline.min(next_ping).saturating_duration_since(Instant::now());
        match raw.next(wait.max(Duration::from_millis(1))) {
            Event::Frame(f) if f.kind == kind::GOAWAY => return H2End::Goaway(f.code()),
            Event::Frame(f) => on_frame(raw, &f),
            Event::Eof => return H2End::Eof,
            Event::Timeout => {}
        }
    }
}

/// Watches `raw` for `within` and asserts that stream `stream` was
/// answered `expected` and the connection stayed open.
fn served(raw: &mut Raw, stream: u32, expected: &[u8], within: Duration) {
    let mut answered = false;
    let end = watch(raw, within, |_, f| {
        if f.kind == kind::DATA && f.stream == stream && f.end_stream() {
            assert_eq!(f.payload, expected);
            answered = true;
        }
    });
    assert_eq!(end, H2End::Open);
    assert!(answered, "stream {stream} not answered");
}

fn calm() -> H2End {
    H2End::Goaway(u32::from(ErrorCode::ENHANCE_YOUR_CALM))
}

// ---------------------------------------------------------------------------
// False positives: honest clients.
// ---------------------------------------------------------------------------

/// HTTP/1.1, a Content-Length body lent to an application that reads it at
/// 80 KB/s (80 times the rate); the client sends it all at once. The input
/// pipe pauses at 256 KiB unexamined and the application's reads wake the
/// worker only below 128 KiB (the pipe's resume threshold). The body was
/// counted owed as soon as it was below 256 KiB: for the 128 KiB in
/// between (1.6 s here) the server read nothing, and the client was billed
/// for it (`408`). Now it is owed only below the resume threshold.
#[test]
fn h1_lent_body_read_fast_in_the_pipes_resume_band_is_served() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    const BODY: usize = 700 * 1024;
    client.send(
        format!(
            "POST /read?chunk=8192&every=100 HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\n\r\n"
        )
        .as_bytes(),
    );
    let sender = trickle(client.stream(), pieces(BODY / 1024, 1024), Duration::ZERO);
    client.stream().set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!(
        (reply.status, reply.text()),
        (200, format!("len={BODY}")),
        "an application reading 80x faster than the rate got its client cut off"
    );
    drop(client);
    let _ = sender.join();
    server.stop();
}

/// Contrast: the same at 640 KB/s (64 KiB every 100 ms) crosses the
/// 128 KiB band in 0.2 s, within the grace: served.
#[test]
fn h1_lent_body_read_fast_enough_to_cross_the_band_within_the_grace_is_served() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    const BODY: usize = 700 * 1024;
    client.send(
        format!(
            "POST /read?chunk=65536&every=100 HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\n\r\n"
        )
        .as_bytes(),
    );
    let sender = trickle(client.stream(), pieces(BODY / 1024, 1024), Duration::ZERO);
    client.stream().set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text()), (200, format!("len={BODY}")));
    drop(client);
    let _ = sender.join();
    server.stop();
}

/// The same body chunked: owed only once the application has looked at
/// everything, so no resume band.
#[test]
fn h1_chunked_lent_body_read_at_a_moderate_pace_is_served() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(
        b"POST /read?chunk=8192&every=100 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let mut body = Vec::new();
    for _ in 0..700 {
        body.extend_from_slice(b"400\r\n");
        body.extend_from_slice(&[b'x'; 1024]);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let sender = trickle(client.stream(), vec![body], Duration::ZERO);
    client.stream().set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text()), (200, format!("len={}", 700 * 1024)));
    drop(client);
    let _ = sender.join();
    server.stop();
}

/// `Expect: 100-continue`: the client waits for the 100, then sends at
/// three times the rate.
#[test]
fn h1_expect_continue_client_is_served() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(
        b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 6000\r\nExpect: 100-continue\r\n\r\n",
    );
    // The client waits a while for the 100 (as curl does, up to 1 s).
    let cont = client.reply().unwrap();
    assert_eq!(cont.status, 100);
    thread::sleep(Duration::from_millis(300));
    let sender = trickle(client.stream(), pieces(20, 300), Duration::from_millis(100));
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "len=6000"));
    assert_eq!(sender.join().unwrap(), 20);
    server.stop();
}

/// A body at the rate with requests pipelined behind it, in the same
/// segment as its last piece: all answered, and a later body on the same
/// connection gets its own grace.
#[test]
fn h1_pipelined_requests_after_a_body_are_served() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 3000\r\n\r\n");
    let mut last = vec![b'x'; 300];
    last.extend_from_slice(b"GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
    last.extend_from_slice(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 3000\r\n\r\n");
    let mut all = pieces(9, 300);
    all.push(last);
    all.extend(pieces(10, 300));
    let sender = trickle(client.stream(), all, Duration::from_millis(100));
    assert_eq!(client.reply().unwrap().text(), "len=3000");
    assert_eq!(client.reply().unwrap().text(), "len=0");
    assert_eq!(client.reply().unwrap().text(), "len=3000");
    assert_eq!(sender.join().unwrap(), 20);
    server.stop();
}

/// A body answered early (not taken) and drained by the server: a client
/// that goes on sending at the rate keeps its connection, and the next
/// request is served.
#[test]
fn h1_early_answer_drained_at_the_rate_is_served() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 6000\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "early"));
    let mut all = pieces(20, 300);
    all.push(b"GET /after HTTP/1.1\r\nHost: t\r\n\r\n".to_vec());
    let sender = trickle(client.stream(), all, Duration::from_millis(100));
    assert_eq!(client.reply().unwrap().text(), "len=0");
    assert_eq!(sender.join().unwrap(), 21);
    server.stop();
}

/// The drain is judged too: trickled at a tenth of the rate, the
/// connection closes. The request was answered (`200 early`, complete),
/// so nothing may follow but the close (the doc: "408, or a close once a
/// response started"). The server used to send a second, unsolicited
/// response to the same request, `408 Request Timeout`, which a client
/// that pipelined would take as the answer to its next request.
#[test]
fn h1_early_answer_drained_below_the_rate_is_cut_without_a_second_response() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.text(), "early");
    let began = Instant::now();
    let sender = trickle(client.stream(), pieces(100, 10), Duration::from_millis(100));
    client.stream().set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let rest = client.read_to_end();
    let elapsed = began.elapsed();
    drop(client);
    sender.join().unwrap();
    server.stop();
    assert!(elapsed < Duration::from_secs(5), "closed by the rate, not io_timeout: {elapsed:?}");
    let rest = rest.map(|b| String::from_utf8_lossy(&b).into_owned());
    assert!(
        matches!(&rest, Ok(b) if b.is_empty()) || rest.is_err(),
        "nothing after the complete response but the close: {rest:?}"
    );
}

/// The same with the rate off and a short `io_timeout`: the second
/// response predated the rate (the timer's `Session::refuse` looked only
/// at a deferred response in flight).
#[test]
fn h1_early_answer_drain_stalled_past_io_timeout_is_cut_without_a_second_response() {
    let (server, _kept) = review(
        options().workers(1).io_timeout(Duration::from_millis(500)).min_request_body_rate(None),
    );
    let mut client = Client::connect(server.addr);
    client.send(b"POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "early");
    client.stream().set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let rest = client.read_to_end().map(|b| String::from_utf8_lossy(&b).into_owned());
    drop(client);
    server.stop();
    assert!(
        matches!(&rest, Ok(b) if b.is_empty()) || rest.is_err(),
        "nothing after the complete response but the close: {rest:?}"
    );
}

/// h2c `Upgrade` with a body is served as HTTP/1.1 (no upgrade): the rate
/// applies to its body like any other.
#[test]
fn h1_upgrade_request_with_a_body_is_judged_as_http1() {
    let (server, _kept) = review(rated());
    let head = "POST /count HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n";
    // At three times the rate: served.
    let mut client = Client::connect(server.addr);
    client.send(format!("{head}Content-Length: 3000\r\n\r\n").as_bytes());
    let sender = trickle(client.stream(), pieces(10, 300), Duration::from_millis(100));
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "len=3000"));
    sender.join().unwrap();
    // At a tenth: 408.
    let mut client = Client::connect(server.addr);
    client.send(format!("{head}Content-Length: 100000\r\n\r\n").as_bytes());
    let sender = trickle(client.stream(), pieces(100, 10), Duration::from_millis(100));
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    drop(client);
    sender.join().unwrap();
    server.stop();
}

/// HTTP/2, eight uploads at once, each at three times the rate (the
/// connection owes eight rates): all served.
#[test]
fn h2_many_concurrent_uploads_each_at_the_rate_are_served() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    let ids: Vec<u32> = (0..8).map(|i| 1 + 2 * i).collect();
    for &id in &ids {
        raw.headers(id, &req("POST", "/count"), false);
    }
    let mut frames = Vec::new();
    for round in 0..20 {
        let mut batch = Vec::new();
        for &id in &ids {
            let flags = if round == 19 { frame::flag::END_STREAM } else { 0 };
            batch.extend(frame_bytes(kind::DATA, flags, id, &[b'x'; 300]));
        }
        frames.push(batch);
    }
    let sender = trickle(&raw.tcp, frames, Duration::from_millis(100));
    let mut done = 0;
    let end = watch(&mut raw, Duration::from_secs(6), |_, f| {
        if f.kind == kind::DATA && f.end_stream() {
            assert_eq!(f.payload, b"len=6000");
            done += 1;
        }
    });
    assert_eq!(end, H2End::Open, "closed with {done} of 8 answered");
    assert_eq!(done, 8);
    sender.join().unwrap();
    drop(raw);
    server.stop();
}

/// HTTP/2: stream 1 holds a body the application does not read, which
/// spends most of the connection's window (65,535 here); stream 3's body
/// is counted on the worker, so its 1,000 bytes use up the rest of the
/// connection window and are given back at once, but only into *pending*
/// credit (below the update threshold of half the window: no
/// WINDOW_UPDATE). The client has no credit; `Connection::receive_credit`
/// counted the pending credit as window, so stream 3 was owed and the
/// honest client (which sends whenever it gets credit) was sent GOAWAY.
/// Now credit not announced is not counted.
#[test]
fn h2_credit_given_back_but_not_announced_is_not_owed() {
    let window = 65_535u32;
    let config = falconet_server::h2::connection::Config {
        connection_window_size: window,
        ..Default::default()
    };
    let (server, kept) = review(rated().http2(config));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/hold"), false);
    // 64,535 bytes in five frames.
    for frame in data_frames(1, 5, (window as usize - 1000) / 5, false) {
        raw.send(&frame);
    }
    let (_responder, _body) = kept.recv_timeout(Duration::from_secs(5)).unwrap();
    raw.headers(3, &req("POST", "/count"), false);
    raw.data(3, &[b'x'; 1000], false);
    // The client's connection credit is 0 now; it sends whenever the
    // server gives it some.
    let mut credit = 0u64;
    let mut sent = 1000u64;
    let end = watch(&mut raw, Duration::from_millis(3500), |raw, f| {
        if f.kind == kind::WINDOW_UPDATE && f.stream == 0 {
            credit += u64::from(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
            while credit > 0 {
                let n = credit.min(16_384) as usize;
                raw.data(3, &vec![b'x'; n], false);
                credit -= n as u64;
                sent += n as u64;
            }
        }
    });
    assert_eq!(end, H2End::Open, "GOAWAY to a client with no credit (it sent {sent} on stream 3)");
    drop(raw);
    server.stop();
}

/// HTTP/2 with a tiny stream window (16 bytes): a client that sends as
/// fast as its credit allows (one round trip per 16 bytes, on loopback) is
/// served.
#[test]
fn h2_tiny_initial_window_client_at_its_credit_is_served() {
    let config =
        falconet_server::h2::connection::Config { initial_window_size: 16, ..Default::default() };
    let (server, _kept) = review(rated().http2(config));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/count"), false);
    const BODY: u64 = 4000;
    let mut credit = 16u64;
    let mut sent = 0u64;
    let send = |raw: &mut Raw, credit: &mut u64, sent: &mut u64| {
        while *credit > 0 && *sent < BODY {
            let n = (*credit).min(BODY - *sent);
            raw.data(1, &vec![b'x'; n as usize], *sent + n == BODY);
            *credit -= n;
            *sent += n;
        }
    };
    send(&mut raw, &mut credit, &mut sent);
    let mut answered = false;
    let end = watch(&mut raw, Duration::from_secs(3), |raw, f| {
        if f.kind == kind::WINDOW_UPDATE && f.stream == 1 {
            credit += u64::from(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
            send(raw, &mut credit, &mut sent);
        }
        if f.kind == kind::DATA && f.stream == 1 && f.end_stream() {
            assert_eq!(f.payload, format!("len={BODY}").as_bytes());
            answered = true;
        }
    });
    assert_eq!(end, H2End::Open);
    assert!(answered, "sent {sent} of {BODY}");
    drop(raw);
    server.stop();
}

/// HTTP/2: an upload at three times the rate on stream 3 while stream 1's
/// response waits for credit the client has not given yet (the response
/// rate off, to look at the body rate alone): served.
#[test]
fn h2_upload_while_another_response_waits_for_credit_is_served() {
    let (server, _kept) = review(rated().min_response_rate(None));
    // A stream window of 0: no response byte may go until we say so.
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 0)]);
    raw.headers(1, &req("GET", "/big?n=100000"), true);
    raw.headers(3, &req("POST", "/count"), false);
    // Room for stream 3's short answer only.
    raw.window_update(3, 100);
    let data = data_frames(3, 30, 300, true);
    let sender = trickle(&raw.tcp, data, Duration::from_millis(100));
    served(&mut raw, 3, b"len=9000", Duration::from_secs(4));
    sender.join().unwrap();
    drop(raw);
    server.stop();
}

// ---------------------------------------------------------------------------
// False negatives: slow clients.
// ---------------------------------------------------------------------------

/// HTTP/2: HEADERS without END_STREAM, then no DATA at all (PINGs only):
/// GOAWAY(ENHANCE_YOUR_CALM) after the grace.
#[test]
fn h2_headers_and_a_body_never_sent_get_goaway() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/count"), false);
    let began = Instant::now();
    assert_eq!(watch(&mut raw, Duration::from_secs(5), |_, _| {}), calm());
    assert!(began.elapsed() >= Duration::from_millis(900));
    drop(raw);
    server.stop();
}

/// HTTP/2: a request answered early (its body not taken) has no exchange
/// left once its response is sent. Suspicion: its stream stays open
/// (half-closed, local) and a trickle on it escapes the rate. It does
/// not: the server resets the stream (RST_STREAM) once the client sends
/// on it, so nothing is held but an idle connection.
#[test]
fn h2_early_answer_then_a_trickle_on_its_stream_holds_no_stream() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut fields = req("POST", "/early");
    fields.extend(block(&[("content-length", "100000")]));
    raw.headers(1, &fields, false);
    // The answer, whole.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut reset = false;
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) if f.kind == kind::DATA && f.stream == 1 && f.end_stream() => break,
            Event::Frame(f) if f.kind == kind::RST_STREAM && f.stream == 1 => {
                reset = true;
                break;
            }
            Event::Frame(_) => {}
            other => panic!("no answer: {other:?}"),
        }
    }
    let data = data_frames(1, 80, 10, false);
    let sender = trickle(&raw.tcp, data, Duration::from_millis(100));
    let mut rst = false;
    let end = watch(&mut raw, Duration::from_secs(5), |_, f| {
        rst |= f.kind == kind::RST_STREAM && f.stream == 1;
    });
    drop(raw);
    sender.join().unwrap();
    server.stop();
    assert!(
        reset || rst || end != H2End::Open,
        "a 100 B/s trickle on the open stream of an answered request held the connection 5 s \
         (the rate is 1000 B/s, a second of grace)"
    );
}

/// HTTP/2, ten streams owed, the client paying 2,000 bytes a second
/// between them (twice one rate, a fifth of the ten it owes): GOAWAY.
/// Opening more streams buys nothing.
#[test]
fn h2_many_streams_paying_less_than_their_rates_get_goaway() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    let ids: Vec<u32> = (0..10).map(|i| 1 + 2 * i).collect();
    for &id in &ids {
        raw.headers(id, &req("POST", "/count"), false);
    }
    // 20 bytes on each of the ten streams every 100 ms.
    let frames = (0..60)
        .map(|_| ids.iter().flat_map(|&id| frame_bytes(kind::DATA, 0, id, &[b'x'; 20])).collect())
        .collect();
    let sender = trickle(&raw.tcp, frames, Duration::from_millis(100));
    assert_eq!(watch(&mut raw, Duration::from_secs(5), |_, _| {}), calm());
    drop(raw);
    sender.join().unwrap();
    server.stop();
}

/// Failed on 66bf1b1 (fixed). The timer judged the response rate first and
/// returned when that meter asked for the connection to be driven (the
/// client within its rate but short since the last tick, nothing to
/// write: a download waiting for credit), so the body rate's meter skipped
/// that tick; and a late tick bills at most half a grace (`meter.rs`). A
/// client paying a download's rate in bursts 2 s apart then held a silent
/// upload beside it at a quarter of the body rate: cut off after some
/// 6 s, not 1.5 s (with bursts 1 s apart, 3.3 s). Both meters now run at
/// every tick.
#[test]
fn h2_a_download_paid_in_bursts_does_not_shield_a_silent_upload() {
    // The response rate's grace is 4 s, the body rate's 1 s: the timer
    // ticks every 250 ms, and a burst pays for 4 s.
    let response_rate = MinDataRate::new(1000, Duration::from_secs(4));
    // A download with no credit but 4,000 bytes every 2 s, in one burst;
    // with `upload`, a body owed beside it and never sent. How the
    // connection ended within `within`, when, and the bytes downloaded.
    let bursts = |upload: bool, within: Duration| {
        let (server, _kept) = review(rated().min_response_rate(Some(response_rate)));
        let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 0)]);
        raw.headers(1, &req("GET", "/big?n=1000000"), true);
        if upload {
            let mut head = req("POST", "/count");
            head.extend(block(&[("content-length", "100000")]));
            raw.headers(3, &head, false);
        }
        let began = Instant::now();
        let mut next_burst = began;
        let mut downloaded = 0;
        let end = loop {
            let now = Instant::now();
            if now >= began + within {
                break H2End::Open;
            }
            if now >= next_burst {
                let credit = frame_bytes(kind::WINDOW_UPDATE, 0, 1, &4000u32.to_be_bytes());
                if raw.try_send(&credit).is_err() {
                    break H2End::Eof;
                }
                next_burst += Duration::from_secs(2);
            }
            let wait = (began + within).min(next_burst).saturating_duration_since(now);
            match raw.next(wait.max(Duration::from_millis(1))) {
                Event::Frame(f) if f.kind == kind::GOAWAY => break H2End::Goaway(f.code()),
                Event::Frame(f) if f.kind == kind::DATA && f.stream == 1 => {
                    downloaded += f.payload.len();
                }
                Event::Frame(_) | Event::Timeout => {}
                Event::Eof => break H2End::Eof,
            }
        };
        let at = began.elapsed();
        drop(raw);
        server.stop();
        (end, at, downloaded)
    };
    // The bursts alone keep within the response rate, and are taken.
    let (end, _, downloaded) = bursts(false, Duration::from_secs(5));
    assert_eq!(end, H2End::Open);
    assert_eq!(downloaded, 12_000, "three bursts of credit, each taken");
    // The silent upload is cut off at the body rate: its first tick starts
    // the meter, a grace later it is a second behind.
    let (end, at, downloaded) = bursts(true, Duration::from_secs(8));
    assert_eq!(end, calm());
    assert!(at < Duration::from_secs(4), "the silent upload held out {at:?}");
    assert!(downloaded > 0, "the download never waited on its credit");
}

/// HTTP/2 trailers trickled: the body's DATA, then a trailers HEADERS
/// (END_STREAM, without END_HEADERS) and its CONTINUATION a byte every
/// 100 ms. The request has not ended, nothing pays: GOAWAY.
#[test]
fn h2_trailers_trickled_in_continuation_get_goaway() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/count"), false);
    raw.data(1, &[b'x'; 100], false);
    let trailer = block(&[("x-trailer", &"t".repeat(200))]);
    raw.frame(kind::HEADERS, frame::flag::END_STREAM, 1, &trailer[..1]);
    let rest: Vec<_> = trailer[1..trailer.len() - 1]
        .iter()
        .map(|&b| frame_bytes(kind::CONTINUATION, 0, 1, &[b]))
        .collect();
    let sender = trickle(&raw.tcp, rest, Duration::from_millis(100));
    let end = watch(&mut raw, Duration::from_secs(5), |_, _| {});
    assert_ne!(end, H2End::Open, "trailers trickled held the connection");
    drop(raw);
    sender.join().unwrap();
    server.stop();
}

/// HTTP/2, out of the change's scope but on the brief's list: a request
/// *head* trickled in CONTINUATION frames a byte every 100 ms (no stream
/// yet, so no body owed). `header_timeout` (2 s here) should end it.
#[test]
fn h2_request_head_trickled_in_continuation_is_ended() {
    let (server, _kept) = review(rated().header_timeout(Duration::from_secs(2)));
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut head = req("POST", "/count");
    head.extend(block(&[("x-pad", &"p".repeat(200))]));
    raw.frame(kind::HEADERS, 0, 1, &head[..1]);
    let rest: Vec<_> =
        head[1..].iter().map(|&b| frame_bytes(kind::CONTINUATION, 0, 1, &[b])).collect();
    let sender = trickle(&raw.tcp, rest, Duration::from_millis(100));
    let end = watch(&mut raw, Duration::from_secs(6), |_, _| {});
    assert_ne!(end, H2End::Open, "a head trickled in CONTINUATION held the connection 6 s");
    drop(raw);
    sender.join().unwrap();
    server.stop();
}

/// HTTP/1.1: chunk extensions count as pay (documented: "chunk framing
/// included"), unlike HTTP/2 padding. A chunked body of one data byte per
/// chunk, each chunk with a 300-byte extension, three chunks a second:
/// 900 bytes a second on the wire (almost the rate), 3 bytes of body.
/// Not a failure of the documented behaviour; kept to show the asymmetry
/// with `over_http2_padding_does_not_pay`.
#[test]
fn h1_chunk_extensions_pay_unlike_h2_padding() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let ext = "e".repeat(400);
    let chunk = format!("1;{ext}\r\nx\r\n").into_bytes();
    let mut all = vec![chunk; 30];
    all.push(b"0\r\n\r\n".to_vec());
    let sender = trickle(client.stream(), all, Duration::from_millis(300));
    client.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reply = client.reply().unwrap();
    // Either outcome is defensible; what the server does today:
    eprintln!("chunk extensions as pay: {} {:?}", reply.status, reply.text());
    assert!(reply.status == 200 || reply.status == 408 || reply.status == 400);
    drop(client);
    sender.join().unwrap();
    server.stop();
}

/// HTTP/1: a response already started (the application wrote `partial`
/// and reads the body) and a body below the rate: the connection closes,
/// and no `408` lands inside the response.
#[test]
fn h1_slow_body_after_the_response_started_closes_without_408() {
    let (server, _kept) = review(rated());
    let mut client = Client::connect(server.addr);
    client.send(
        b"POST /partial?chunk=1&every=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
    );
    let began = Instant::now();
    let sender = trickle(client.stream(), pieces(100, 10), Duration::from_millis(100));
    client.stream().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut all = Vec::new();
    let _ = client.reader.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("partial"), "{text}");
    assert!(!text.contains("408"), "{text}");
    assert!(began.elapsed() < Duration::from_secs(6), "closed by the rate: {:?}", began.elapsed());
    drop(client);
    sender.join().unwrap();
    server.stop();
}

// ---------------------------------------------------------------------------
// Interactions.
// ---------------------------------------------------------------------------

/// An `io_timeout` shorter than the grace still answers a silent body 408
/// at the I/O timeout.
#[test]
fn io_timeout_shorter_than_the_grace_still_applies() {
    let rate = MinDataRate::new(1000, Duration::from_secs(10));
    let (server, _kept) = review(
        options()
            .workers(1)
            .io_timeout(Duration::from_millis(600))
            .min_request_body_rate(Some(rate)),
    );
    let mut client = Client::connect(server.addr);
    let began = Instant::now();
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    assert!(began.elapsed() < Duration::from_secs(3), "{:?}", began.elapsed());
    server.stop();
}

/// Graceful shutdown with a slow body owed (HTTP/1): the rate still ends
/// it (408) long before `shutdown_timeout`.
#[test]
fn shutdown_with_a_slow_h1_body_gets_408_within_the_grace() {
    let (server, _kept) = review(rated().shutdown_timeout(Duration::from_secs(30)));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    let sender = trickle(client.stream(), pieces(100, 10), Duration::from_millis(100));
    thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    server.handle().shutdown();
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    assert!(began.elapsed() < Duration::from_secs(4), "{:?}", began.elapsed());
    drop(client);
    sender.join().unwrap();
    server.join().unwrap();
}

/// Graceful shutdown with a body at three times the rate (HTTP/1): served,
/// with `Connection: close`.
#[test]
fn shutdown_with_an_h1_body_at_the_rate_is_served() {
    let (server, _kept) = review(rated().shutdown_timeout(Duration::from_secs(30)));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 6000\r\n\r\n");
    let sender = trickle(client.stream(), pieces(20, 300), Duration::from_millis(100));
    thread::sleep(Duration::from_millis(200));
    server.handle().shutdown();
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "len=6000"));
    assert!(reply.closes());
    assert_eq!(sender.join().unwrap(), 20);
    server.join().unwrap();
}

/// Graceful shutdown with a slow body owed (HTTP/2): the shutdown's
/// GOAWAY(NO_ERROR), then the rate's GOAWAY(ENHANCE_YOUR_CALM).
#[test]
fn shutdown_with_a_slow_h2_body_gets_calm_goaway() {
    let (server, _kept) = review(rated().shutdown_timeout(Duration::from_secs(30)));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/count"), false);
    let data = data_frames(1, 100, 10, false);
    let sender = trickle(&raw.tcp, data, Duration::from_millis(100));
    thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    server.handle().shutdown();
    let mut codes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) if f.kind == kind::GOAWAY => {
                codes.push(f.code());
                if f.code() != 0 {
                    break;
                }
            }
            Event::Frame(f) if f.kind == kind::PING && f.flags & frame::flag::ACK == 0 => {
                // Answer the shutdown's PING, as a client does.
                raw.frame(kind::PING, frame::flag::ACK, 0, &f.payload);
            }
            Event::Frame(_) => {}
            Event::Eof | Event::Timeout => break,
        }
    }
    assert_eq!(codes.last(), Some(&u32::from(ErrorCode::ENHANCE_YOUR_CALM)), "{codes:?}");
    assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
    drop(raw);
    sender.join().unwrap();
    server.join().unwrap();
}

// ---------------------------------------------------------------------------
// The meter's extremes.
// ---------------------------------------------------------------------------

/// u32::MAX bytes a second with the shortest grace (20 ms): a body sent in
/// one write may be served or refused, but the timer must not panic (the
/// server stops cleanly), and the 408 comes fast.
#[test]
fn the_highest_rate_with_the_shortest_grace_does_not_panic() {
    let rate = MinDataRate::new(u32::MAX, MIN_TIMEOUT);
    let (server, _kept) = review(rated().min_request_body_rate(Some(rate)));
    let mut client = Client::connect(server.addr);
    let mut request = b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n".to_vec();
    request.extend_from_slice(&[b'x'; 1000]);
    client.send(&request);
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 200, "a body sent whole in one segment");
    // A body that never comes: 408 within a few ticks.
    let began = Instant::now();
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n");
    assert_eq!(client.reply().unwrap().status, 408);
    assert!(began.elapsed() < Duration::from_secs(1), "{:?}", began.elapsed());
    server.stop();
}

/// u32::MAX bytes a second with a day of grace, over HTTP/2 with 100
/// streams owed: the products saturate; the timer does not panic, and a
/// silent client is a day of grace away from being cut.
#[test]
fn the_highest_rate_with_the_longest_grace_over_many_streams_does_not_panic() {
    let rate = MinDataRate::new(u32::MAX, MAX_TIMEOUT);
    let (server, _kept) = review(
        rated()
            .min_request_body_rate(Some(rate))
            .min_response_rate(Some(MinDataRate::new(u32::MAX, MAX_TIMEOUT))),
    );
    let mut raw = Raw::handshake(server.addr, &[]);
    for i in 0..100u32 {
        raw.headers(1 + 2 * i, &req("POST", "/count"), false);
    }
    let end = watch(&mut raw, Duration::from_millis(1500), |_, _| {});
    assert_eq!(end, H2End::Open);
    drop(raw);
    server.stop();
}

/// A rate of one byte a second with the shortest grace (20 ms, which
/// `validate` accepts): a client may bank a period at most (0.02 bytes)
/// and fall a period behind, so any pause over about twice the grace is
/// fatal however far above the rate it sends. Here one byte every 100 ms
/// (ten times the rate) gets 408. As documented ("it may pause for less
/// than that"), but sharp: see the report.
#[test]
fn the_shortest_grace_cuts_any_pause_longer_than_twice_it_even_far_above_the_rate() {
    let rate = MinDataRate::new(1, MIN_TIMEOUT);
    let (server, _kept) = review(rated().min_request_body_rate(Some(rate)));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n");
    let sender = trickle(client.stream(), pieces(3, 1), Duration::from_millis(100));
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408, "{:?}", reply.text());
    drop(client);
    sender.join().unwrap();
    server.stop();
}

/// HTTP/2 `expect: 100-continue`: the client waits for the 100, then
/// sends at three times the rate: served.
#[test]
fn h2_expect_continue_client_is_served() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut fields = req("POST", "/count");
    fields.extend(block(&[("expect", "100-continue")]));
    raw.headers(1, &fields, false);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) if f.kind == kind::HEADERS && f.stream == 1 => break,
            Event::Frame(_) => {}
            other => panic!("no 100: {other:?}"),
        }
    }
    thread::sleep(Duration::from_millis(300));
    let data = data_frames(1, 20, 300, true);
    let sender = trickle(&raw.tcp, data, Duration::from_millis(100));
    served(&mut raw, 1, b"len=6000", Duration::from_secs(3));
    sender.join().unwrap();
    drop(raw);
    server.stop();
}

/// h2c by `Upgrade` (a GET, no body), then the client's own stream 3 with
/// a body at a tenth of the rate: GOAWAY(ENHANCE_YOUR_CALM).
#[test]
fn h2c_upgraded_connection_slow_body_gets_goaway() {
    let (server, _kept) = review(rated());
    let mut raw = Raw::connect(server.addr);
    raw.send(
        b"GET /a HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\n\
          Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n",
    );
    raw.read_switch();
    let mut out = falconet_server::h2::frame::PREFACE.to_vec();
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    raw.headers(3, &req("POST", "/count"), false);
    let data = data_frames(3, 100, 10, false);
    let sender = trickle(&raw.tcp, data, Duration::from_millis(100));
    assert_eq!(watch(&mut raw, Duration::from_secs(5), |_, _| {}), calm());
    drop(raw);
    sender.join().unwrap();
    server.stop();
}

// ---------------------------------------------------------------------------
// tower.
// ---------------------------------------------------------------------------

/// An axum handler that reads its body at 80 KB/s on average (80 times
/// the rate; it sleeps 100 ms per 8 KiB after each frame), the client
/// sending it all at once: the resume band of
/// `h1_lent_body_read_fast_in_the_pipes_resume_band_is_served`
/// through tower. A frame is whatever the pipe holds, so whether a frame
/// leaves the pipe in the band (and the sleep after it is spent there) is
/// timing: this failed 2 runs in 5 before the fix.
#[cfg(feature = "tower")]
#[test]
fn tower_service_reading_fast_in_the_resume_band_is_served() {
    use axum::Router;
    use axum::body::Body as AxumBody;
    use axum::routing::post;
    use falconet_server::tower::TowerHandler;

    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let app = Router::new().route(
        "/slow",
        post(|body: AxumBody| async move {
            let mut body = std::pin::pin!(body);
            let mut total = 0usize;
            let mut since = 0usize;
            while let Some(frame) =
                std::future::poll_fn(|cx| http_body::Body::poll_frame(body.as_mut(), cx)).await
            {
                let Ok(frame) = frame else { return "error".to_string() };
                if let Ok(data) = frame.into_data() {
                    total += data.len();
                    since += data.len();
                    while since >= 8192 {
                        since -= 8192;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
            format!("len={total}")
        }),
    );
    let server = serve(rated(), TowerHandler::new(app, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    const BODY: usize = 700 * 1024;
    client.send(
        format!("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\n\r\n").as_bytes(),
    );
    let sender = trickle(client.stream(), pieces(BODY / 1024, 1024), Duration::ZERO);
    client.stream().set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!(
        (reply.status, reply.text()),
        (200, format!("len={BODY}")),
        "a service reading 80x faster than the rate got its client cut off"
    );
    drop(client);
    let _ = sender.join();
    drop(server);
    drop(runtime);
}
