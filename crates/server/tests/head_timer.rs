//! The header timeout times each request head from its own first byte:
//! not from an earlier request's (whose answer was still unsent when the
//! connection was last looked at), not from the head that ended in the
//! same read. And an HTTP/2 field block left open while the application
//! holds another stream is the client's debt (the I/O timeout), not the
//! application's. (An independent review's findings.)
mod common;

use std::time::Duration;
#[cfg(feature = "tokio")]
use std::time::Instant;

#[cfg(feature = "tokio")]
use common::h2raw::{Event, frames_until};
use common::h2raw::{Raw, answered_within, frame_bytes, req};
use common::{Client, serve};
use falconet_server::Options;
use falconet_server::h2::frame::{flag, kind};
use falconet_server::hello::Hello;

fn options() -> Options {
    Options::new()
        .workers(1)
        .header_timeout(Duration::from_secs(1))
        .keep_alive_timeout(Duration::from_secs(20))
}

/// Whether stream `id` was answered (rather than the connection ended).
fn answered(raw: &mut Raw, id: u32) -> bool {
    answered_within(raw, id, Duration::from_secs(3))
}

#[test]
fn an_http1_head_after_an_earlier_request_gets_its_own_timeout() {
    let server = serve(options(), Hello);
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/plaintext").status, 200);
    std::thread::sleep(Duration::from_millis(1500));
    // 300 ms for a head, against a 1 s limit: the first request's start
    // is 1.5 s old.
    client.send(b"GET /plaintext HTTP/1.1\r\nHo");
    std::thread::sleep(Duration::from_millis(300));
    client.send(b"st: a\r\n\r\n");
    assert_eq!(client.reply().unwrap().status, 200);
}

#[test]
fn an_h2_head_after_an_earlier_request_gets_its_own_timeout() {
    let server = serve(options(), Hello);
    for split_block in [true, false] {
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
        raw.headers(1, &req("GET", "/plaintext"), true);
        assert!(answered(&mut raw, 1));
        std::thread::sleep(Duration::from_millis(1500));
        let block = req("GET", "/plaintext");
        if split_block {
            // HEADERS, then its CONTINUATION 300 ms later.
            raw.frame(kind::HEADERS, flag::END_STREAM, 3, &block[..1]);
            std::thread::sleep(Duration::from_millis(300));
            raw.frame(kind::CONTINUATION, flag::END_HEADERS, 3, &block[1..]);
        } else {
            // One HEADERS frame in two writes 300 ms apart.
            let frame = frame_bytes(kind::HEADERS, flag::END_STREAM | flag::END_HEADERS, 3, &block);
            raw.send(&frame[..5]);
            std::thread::sleep(Duration::from_millis(300));
            raw.send(&frame[5..]);
        }
        assert!(answered(&mut raw, 3), "split block: {split_block}");
    }
}

/// Block 7 ends in the same write that begins block 9: each takes 800 ms
/// of a 1 s limit, so 9 must be timed from its own first byte.
#[test]
fn a_head_begun_as_the_last_one_ended_gets_its_own_timeout() {
    let server = serve(options(), Hello);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    let (seven, nine) = (req("GET", "/plaintext"), req("GET", "/plaintext"));
    raw.frame(kind::HEADERS, flag::END_STREAM, 7, &seven[..1]);
    std::thread::sleep(Duration::from_millis(800));
    let mut both = frame_bytes(kind::CONTINUATION, flag::END_HEADERS, 7, &seven[1..]);
    both.extend(frame_bytes(kind::HEADERS, flag::END_STREAM, 9, &nine[..1]));
    raw.send(&both);
    std::thread::sleep(Duration::from_millis(800));
    raw.frame(kind::CONTINUATION, flag::END_HEADERS, 9, &nine[1..]);
    assert!(answered(&mut raw, 9));
}

/// The application may take its time on stream 1 (no response timeout);
/// the client's unfinished block on stream 3 is its own debt: the
/// connection is cut (header timeout 0.5 s, I/O timeout 1 s), not kept
/// until the application answers.
#[cfg(feature = "tokio")]
#[test]
fn a_block_left_open_beside_a_held_stream_is_cut() {
    use falconet_server::hello::Demo;

    let runtime = common::runtime();
    let options = Options::new()
        .workers(1)
        .header_timeout(Duration::from_millis(500))
        .io_timeout(Duration::from_secs(1))
        .response_timeout(None);
    let server = serve(options, Demo::new(runtime.handle().clone()));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    raw.headers(1, &req("GET", "/delay?ms=6000"), true);
    std::thread::sleep(Duration::from_millis(100));
    raw.frame(kind::HEADERS, flag::END_STREAM, 3, &req("GET", "/plaintext")[..1]);
    let started = Instant::now();
    loop {
        match raw.next(Duration::from_secs(10)) {
            Event::Frame(_) => {}
            Event::Eof => break,
            Event::Timeout => panic!("still open after {:?}", started.elapsed()),
        }
    }
    let held = started.elapsed();
    assert!(
        held < Duration::from_millis(2500),
        "held for {held:?} (header timeout 0.5 s, I/O 1 s)"
    );
}

/// Writes `bytes` one every 100 ms on its own thread, until one fails.
#[cfg(feature = "tokio")]
fn trickle(stream: &std::net::TcpStream, bytes: Vec<u8>) {
    use std::io::Write;
    let mut stream = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        for byte in bytes {
            std::thread::sleep(Duration::from_millis(100));
            if stream.write_all(&[byte]).is_err() {
                return;
            }
        }
    });
}

/// A head that never ends, to trickle.
#[cfg(feature = "tokio")]
fn endless_head() -> Vec<u8> {
    let mut head = b"GET /plaintext HTTP/1.1\r\nHost: a\r\nX-Pad: ".to_vec();
    head.extend([b'a'; 3000]);
    head
}

/// A pipelined head begun while a deferred answer is pending is timed
/// from when the answer went out, not from the first request's start
/// (the application's wait is the response timeout's).
#[cfg(feature = "tokio")]
#[test]
fn a_head_begun_during_a_deferred_answer_is_timed_from_the_answer() {
    use falconet_server::hello::Demo;
    let runtime = common::runtime();
    let server = serve(options(), Demo::new(runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /delay?ms=1500 HTTP/1.1\r\nHost: a\r\n\r\n");
    std::thread::sleep(Duration::from_millis(1100));
    client.send(b"GET /plaintext HTTP/1.1\r\nHo");
    std::thread::sleep(Duration::from_millis(700));
    client.send(b"st: a\r\n\r\n");
    assert_eq!(client.reply().unwrap().status, 200);
    assert_eq!(client.reply().unwrap().status, 200, "the second head, 700 ms of a 1 s limit");
}

/// An HTTP/2 HEADERS frame trickled a byte at a time beside a stream the
/// application holds (no response timeout) is cut at the header timeout:
/// no other frame can come until it ends.
#[cfg(feature = "tokio")]
#[test]
fn a_headers_frame_trickled_beside_a_held_stream_meets_the_header_timeout() {
    use falconet_server::hello::Demo;
    let runtime = common::runtime();
    let options = options().header_timeout(Duration::from_millis(500)).response_timeout(None);
    let server = serve(options, Demo::new(runtime.handle().clone()));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    raw.headers(1, &req("GET", "/delay?ms=10000"), true);
    std::thread::sleep(Duration::from_millis(100));
    let block = common::h2raw::block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/plaintext"),
        ("x-pad", &"a".repeat(300)),
    ]);
    trickle(&raw.tcp, frame_bytes(kind::HEADERS, flag::END_STREAM | flag::END_HEADERS, 3, &block));
    let started = Instant::now();
    let frames = frames_until(&mut raw, Duration::from_secs(8), |f| f.kind == kind::GOAWAY);
    assert!(frames.iter().any(|f| f.kind == kind::GOAWAY), "not cut");
    assert!(started.elapsed() < Duration::from_millis(1500), "cut after {:?}", started.elapsed());
}

/// The demo handler with a 500 ms header timeout, a 2 s I/O timeout and
/// no minimum response rate (only the I/O timeout judges output).
#[cfg(feature = "tokio")]
fn demo_without_rate() -> (common::TestServer<falconet_server::hello::Demo>, tokio::runtime::Runtime)
{
    let runtime = common::runtime();
    let options = options()
        .header_timeout(Duration::from_millis(500))
        .io_timeout(Duration::from_secs(2))
        .min_response_rate(None);
    (serve(options, falconet_server::hello::Demo::new(runtime.handle().clone())), runtime)
}

/// A client that never reads a large answer but keeps sending (a head
/// trickled behind it) is closed at the I/O timeout with the minimum
/// response rate off: what it sends does not count as taking output.
#[cfg(feature = "tokio")]
#[test]
fn a_client_that_sends_but_never_reads_meets_the_io_timeout() {
    use std::io::Write;
    let (server, _runtime) = demo_without_rate();
    let socket = common::connect(server.addr);
    (&socket).write_all(b"GET /bytes?n=50000000 HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    trickle(&socket, endless_head());
    let closed = common::closed_within(&server, Duration::from_secs(15));
    assert!(closed.is_some(), "held past 15 s with io_timeout 2 s");
}

/// A late field block ends an HTTP/2 connection whose client reads
/// nothing of a large download: its GOAWAY cannot be sent, and the I/O
/// timeout closes it (the late head, once answered, no longer holds the
/// timer's judgement every tick).
#[cfg(feature = "tokio")]
#[test]
fn a_late_block_beside_an_unread_download_still_closes() {
    use falconet_server::h2::frame::setting;
    let (server, _runtime) = demo_without_rate();
    let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, (1 << 31) - 1)]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    raw.window_update(0, (1 << 31) - 1 - 65_535);
    raw.headers(1, &req("GET", "/bytes?n=50000000"), true);
    std::thread::sleep(Duration::from_millis(300));
    raw.frame(kind::HEADERS, flag::END_STREAM, 3, &req("GET", "/plaintext")[..1]);
    let closed = common::closed_within(&server, Duration::from_secs(10));
    assert!(closed.is_some(), "held past 10 s with io_timeout 2 s");
}
