//! `Options::min_request_body_rate` over real sockets: a client that sends
//! a body slower than the rate (each byte well within `io_timeout`, the
//! slow-body attack) is answered `408` over HTTP/1.1, sized or chunked,
//! and gets GOAWAY(ENHANCE_YOUR_CALM) over HTTP/2, where padding does not
//! pay; one that sends at the rate is served; an application that reads
//! slowly, or a stream without credit, is not blamed on the client; with
//! the rate off the same trickle is served.

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, data_frames, frame_bytes, req};
use common::{Client, options, pieces, serve, trickle};
use falconet_server::h2::frame::{self, ErrorCode, kind};
use falconet_server::{Handler, MinDataRate, Options, Request, Response, Status};

/// The rate the tests judge by: 1,000 bytes a second, a second behind.
const RATE: MinDataRate = MinDataRate::new(1000, Duration::from_secs(1));

/// `/read?chunk=N&every=MS` reads its body on a thread, N bytes every MS
/// ms, and answers its length; `/hold` takes its body and never reads it
/// (both are kept until the test ends); anything else counts its body on
/// the worker and answers `len=N`.
struct Uploads {
    kept: mpsc::Sender<(falconet_server::Responder, Option<falconet_server::RequestBody>)>,
}

impl Handler for Uploads {
    type State = (String, u64);

    fn head(&self, request: &Request<'_>) -> (String, u64) {
        if request.path() == "/read" || request.path() == "/hold" {
            request.stream_body();
        }
        (request.target().to_string(), 0)
    }

    fn body(&self, state: &mut (String, u64), chunk: &[u8]) {
        state.1 += chunk.len() as u64;
    }

    fn respond(&self, (target, len): (String, u64), response: &mut Response<'_>) {
        if let Some(query) = target.strip_prefix("/read?") {
            let (chunk, every) = query.split_once('&').unwrap();
            let chunk: usize = chunk.strip_prefix("chunk=").unwrap().parse().unwrap();
            let every: u64 = every.strip_prefix("every=").unwrap().parse().unwrap();
            let body = response.take_body();
            let Ok(mut responder) = response.defer() else { return };
            thread::spawn(move || {
                let mut body = body.expect("a streamed body");
                let mut buf = vec![0u8; chunk];
                let mut read = 0u64;
                loop {
                    thread::sleep(Duration::from_millis(every));
                    match body.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => read += n as u64,
                        Err(_) => {
                            let _ = responder.status(Status::INTERNAL_SERVER_ERROR);
                            return;
                        }
                    }
                }
                let _ = responder.body(format!("len={read}").as_bytes());
            });
        } else if target == "/hold" {
            let body = response.take_body();
            let Ok(responder) = response.defer() else { return };
            let _ = self.kept.send((responder, body));
        } else {
            response.body(format!("len={len}").as_bytes()).unwrap();
        }
    }
}

type Kept = mpsc::Receiver<(falconet_server::Responder, Option<falconet_server::RequestBody>)>;

fn uploads(options: Options) -> (common::TestServer<Uploads>, Kept) {
    let (kept, held) = mpsc::channel();
    (serve(options, Uploads { kept }), held)
}

/// One worker, the test rate, and an I/O timeout far past every test's
/// length: whatever closes a client here is the rate.
fn rated() -> Options {
    options().workers(1).io_timeout(Duration::from_secs(60)).min_request_body_rate(Some(RATE))
}

/// A sized body at a tenth of the rate gets `408` and the connection
/// closes, though each piece comes within a tenth of a second.
#[test]
fn a_sized_body_sent_below_the_rate_is_408() {
    let (server, _kept) = uploads(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    let began = Instant::now();
    let sender = trickle(client.stream(), pieces(1000, 10), Duration::from_millis(100));
    client.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reply = client.reply().expect("an answer, not a silent close");
    assert_eq!(reply.status, 408);
    assert!(reply.closes(), "{:?}", reply.headers);
    assert!(began.elapsed() >= Duration::from_millis(900), "a grace period first");
    assert!(client.reply().is_err(), "nothing follows the 408");
    drop(client);
    assert!(sender.join().unwrap() < 1000, "the server stopped taking the body");
    server.stop();
}

/// The same for a chunked body (the chunks' framing counts as sent).
#[test]
fn a_chunked_body_sent_below_the_rate_is_408() {
    let (server, _kept) = uploads(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = b"5\r\nxxxxx\r\n".to_vec();
    let sender = trickle(client.stream(), vec![chunk; 1000], Duration::from_millis(100));
    client.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reply = client.reply().expect("an answer, not a silent close");
    assert_eq!(reply.status, 408);
    assert!(reply.closes());
    drop(client);
    sender.join().unwrap();
    server.stop();
}

/// A body sent at three times the rate, a piece every tenth of a second,
/// is served, and so is one that pauses for less than the grace.
#[test]
fn a_body_sent_at_the_rate_is_served_and_may_pause_within_its_grace() {
    let (server, _kept) = uploads(rated());
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 9000\r\n\r\n");
    let sender = trickle(client.stream(), pieces(30, 300), Duration::from_millis(100));
    client.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "len=9000"));
    assert_eq!(sender.join().unwrap(), 30);

    // Half, a pause of half the grace, then the rest: banked at the rate.
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 2000\r\n\r\n");
    client.send(&[b'x'; 1000]);
    thread::sleep(Duration::from_millis(500));
    client.send(&[b'x'; 1000]);
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "len=2000"));
    drop(client);
    server.stop();
}

/// With the rate off, the trickle that got `408` is served (the I/O
/// timeout sees a byte every tenth of a second).
#[test]
fn with_the_rate_off_a_trickle_is_served() {
    let (server, _kept) = uploads(rated().min_request_body_rate(None));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 300\r\n\r\n");
    let sender = trickle(client.stream(), pieces(30, 10), Duration::from_millis(100));
    client.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "len=300"));
    assert_eq!(sender.join().unwrap(), 30);
    drop(client);
    server.stop();
}

/// An application that reads its body slower than the rate pushes the
/// client back: that is the application's time, and the client, which
/// sends as fast as it may, is served.
#[test]
fn an_application_reading_slower_than_the_rate_is_not_the_clients_fault() {
    // 1 MiB a second, and an application reading 64 KiB every 200 ms (a
    // third of it): 2 MiB take it six seconds.
    let rate = MinDataRate::new(1 << 20, Duration::from_secs(1));
    let (server, _kept) = uploads(rated().min_request_body_rate(Some(rate)));
    let mut client = Client::connect(server.addr);
    const BODY: usize = 2 << 20;
    client.send(
        format!(
            "POST /read?chunk=65536&every=200 HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\n\r\n"
        )
        .as_bytes(),
    );
    let sender = trickle(client.stream(), pieces(BODY / 65536, 65536), Duration::ZERO);
    client.stream().set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text()), (200, format!("len={BODY}")));
    assert_eq!(sender.join().unwrap(), BODY / 65536);
    drop(client);
    server.stop();
}

/// Reads frames until a GOAWAY (its code) or the end of the connection
/// (`None`), for at most `within`.
fn goaway_within(raw: &mut Raw, within: Duration) -> Option<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no GOAWAY within {within:?}");
        match raw.next(left) {
            Event::Frame(f) if f.kind == kind::GOAWAY => return Some(f.code()),
            Event::Frame(_) => {}
            Event::Eof => return None,
            Event::Timeout => panic!("no GOAWAY within {within:?}"),
        }
    }
}

/// A server with the test rate, a client that opened stream 1 with
/// `POST /count`, and a thread sending it `frames` one every tenth of a
/// second.
fn trickled_h2(frames: Vec<Vec<u8>>) -> (common::TestServer<Uploads>, Raw, JoinHandle<usize>) {
    let (server, _kept) = uploads(rated());
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/count"), false);
    let sender = trickle(&raw.tcp, frames, Duration::from_millis(100));
    (server, raw, sender)
}

/// HTTP/2: DATA at a tenth of the rate ends the connection with
/// GOAWAY(ENHANCE_YOUR_CALM), and then the connection ends.
#[test]
fn over_http2_a_body_sent_below_the_rate_gets_goaway() {
    let data = data_frames(1, 1000, 10, false);
    let (server, mut raw, sender) = trickled_h2(data);
    let code = goaway_within(&mut raw, Duration::from_secs(20));
    assert_eq!(code, Some(u32::from(ErrorCode::ENHANCE_YOUR_CALM)));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Eof => break,
            Event::Frame(_) => {}
            Event::Timeout => panic!("open after its GOAWAY"),
        }
    }
    drop(raw);
    sender.join().unwrap();
    server.stop();
}

/// Padding is not body: DATA frames of one byte of data and 200 of
/// padding, twice the rate in frame bytes, a tenth in data, get the GOAWAY.
#[test]
fn over_http2_padding_does_not_pay() {
    let mut padded = vec![200u8, b'x'];
    padded.extend_from_slice(&[0u8; 200]);
    let data =
        (0..1000).map(|_| frame_bytes(kind::DATA, frame::flag::PADDED, 1, &padded)).collect();
    let (server, mut raw, sender) = trickled_h2(data);
    let code = goaway_within(&mut raw, Duration::from_secs(20));
    assert_eq!(code, Some(u32::from(ErrorCode::ENHANCE_YOUR_CALM)));
    drop(raw);
    sender.join().unwrap();
    server.stop();
}

/// HTTP/2 DATA at three times the rate is served.
#[test]
fn over_http2_a_body_sent_at_the_rate_is_served() {
    let data = data_frames(1, 30, 300, true);
    let (server, mut raw, sender) = trickled_h2(data);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut body = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match raw.next(left) {
            Event::Frame(f) if f.kind == kind::DATA && f.stream == 1 => {
                body.extend_from_slice(&f.payload);
                if f.end_stream() {
                    break;
                }
            }
            Event::Frame(f) => assert_ne!(f.kind, kind::GOAWAY, "closed at the rate"),
            other => panic!("no answer: {other:?}"),
        }
    }
    assert_eq!(body, b"len=9000");
    assert_eq!(sender.join().unwrap(), 30);
    drop(raw);
    server.stop();
}

/// HTTP/2: a stream whose body the application holds unread has spent the
/// connection's window; another stream's body, which the client cannot
/// send without credit, is not owed, and the connection stays open past
/// many grace periods (a PING is still answered).
#[test]
fn over_http2_a_stream_without_credit_owes_nothing() {
    let window = 65_535u32;
    let config = falconet_server::h2::connection::Config {
        connection_window_size: window,
        ..Default::default()
    };
    let (server, kept) = uploads(rated().http2(config));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("POST", "/hold"), false);
    // Spend the connection's whole window on stream 1, in five frames.
    for frame in data_frames(1, 5, window as usize / 5, false) {
        raw.send(&frame);
    }
    let (_responder, _body) = kept.recv_timeout(Duration::from_secs(5)).unwrap();
    // Stream 3 owes a body, but no byte of it may be sent.
    raw.headers(3, &req("POST", "/count"), false);
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(3500) {
        raw.frame(kind::PING, 0, 0, &[7; 8]);
        let pong = loop {
            match raw.next(Duration::from_secs(5)) {
                Event::Frame(f) if f.kind == kind::PING => break f,
                Event::Frame(f) => assert_ne!(f.kind, kind::GOAWAY, "closed without credit"),
                other => panic!("closed without credit: {other:?}"),
            }
        };
        assert_eq!(pong.flags & frame::flag::ACK, frame::flag::ACK);
        thread::sleep(Duration::from_millis(250));
    }
    drop(raw);
    server.stop();
}
