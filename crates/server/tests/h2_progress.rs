//! What counts as an HTTP/2 client's progress for the I/O and response
//! timeouts: frames that carry part of a request (HEADERS, CONTINUATION,
//! DATA) and response bytes it takes. Its PINGs, SETTINGS, WINDOW_UPDATEs
//! and ignored frames move nothing on, nor do our acknowledgements of
//! them: before this, a PING every 100 ms kept a client that owed a body
//! or withheld credit connected for as long as it liked (with the rate
//! limits off), and kept a response the application never gave from its
//! `503`. A reviewer's cases since: frames that open or end nothing
//! (refused streams' HEADERS, a reset stream's, DATA on it whose credit we
//! give back) move nothing either, a frame arriving slowly over a slow
//! link does, and a client without credit to send owes nothing.

mod common;

use std::time::{Duration, Instant};

use common::h2raw::{self, Credit, Event, Frame, Raw};
use common::timed_app::App;
use common::{options, serve};
use falconet_server::Options;
use falconet_server::h2::connection::Config;
use falconet_server::h2::frame::{self, kind};

/// The I/O timeout of these tests.
const IO_TIMEOUT: Duration = Duration::from_millis(400);
/// How often the client sends its frame that moves nothing.
const EVERY: Duration = Duration::from_millis(100);

/// Rate limits off: only the I/O timeout judges a silent client.
fn timers_only() -> Options {
    options().workers(1).io_timeout(IO_TIMEOUT).min_request_body_rate(None).min_response_rate(None)
}

/// Frames that move no request on, each as the client would send it.
fn idle_frames() -> Vec<(&'static str, Vec<u8>)> {
    let mut settings = Vec::new();
    frame::encode_settings(&mut settings, &[]).unwrap();
    vec![
        ("PING", h2raw::frame_bytes(kind::PING, 0, 0, &[7; 8])),
        ("SETTINGS", settings),
        (
            "connection WINDOW_UPDATE",
            h2raw::frame_bytes(kind::WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()),
        ),
        (
            "stream WINDOW_UPDATE",
            h2raw::frame_bytes(kind::WINDOW_UPDATE, 0, 1, &1u32.to_be_bytes()),
        ),
        ("PRIORITY", h2raw::frame_bytes(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 16])),
        ("an unknown type", h2raw::frame_bytes(0xfa, 0, 0, b"x")),
        (
            "RST_STREAM on a closed stream",
            h2raw::frame_bytes(kind::RST_STREAM, 0, 99, &8u32.to_be_bytes()),
        ),
        ("empty DATA", h2raw::frame_bytes(kind::DATA, 0, 1, &[])),
        ("padded empty DATA", h2raw::frame_bytes(kind::DATA, 0x8, 1, &[4, 0, 0, 0, 0])),
    ]
}

/// Sends `frames`, one every `every` (until the connection closes),
/// reading meanwhile for 4 s; returns what ended the connection (GOAWAY
/// or its end) and when, or `None` if nothing did.
fn ended_behind(
    raw: &mut Raw,
    frames: Vec<Vec<u8>>,
    every: Duration,
) -> Option<(Option<Frame>, Duration)> {
    let began = Instant::now();
    let sender = common::trickle(&raw.tcp, frames, every);
    let mut ended = None;
    while ended.is_none() && began.elapsed() < Duration::from_secs(4) {
        match raw.next(Duration::from_millis(50)) {
            Event::Frame(f) if f.kind == kind::GOAWAY => ended = Some((Some(f), began.elapsed())),
            Event::Frame(f) if f.kind == kind::HEADERS => {
                let _ = raw.decoder.decode(&f.payload, |_| {});
            }
            Event::Eof => ended = Some((None, began.elapsed())),
            _ => {}
        }
    }
    let _ = raw.tcp.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    ended
}

#[test]
fn a_client_owing_a_body_is_timed_out_whatever_else_it_sends() {
    for (name, frame) in idle_frames() {
        let ended = owed_body_behind(timers_only(), |_| {}, vec![frame; 40], EVERY);
        assert!(ended.is_some(), "{name} every {EVERY:?} kept a stalled upload open for 4 s");
    }
}

#[test]
fn a_client_withholding_credit_is_timed_out_whatever_else_it_sends() {
    // The connection's frames only: a stream WINDOW_UPDATE's byte of
    // credit takes a byte of the response (progress by design, which
    // `min_response_rate` judges), and DATA on the answered stream 1 (its
    // request ended) resets it, leaving nothing owed.
    let connection_frames = idle_frames().into_iter().filter(|(_, frame)| frame[5..9] == [0; 4]);
    for (name, frame) in connection_frames {
        let (app, _held, _read) = App::new();
        let server = serve(timers_only(), app);
        // No stream credit: the response waits on the client.
        let mut raw = Raw::handshake(server.addr, &[(0x4, 0)]);
        raw.headers(1, &h2raw::req("GET", "/big?n=100000"), true);
        let ended = ended_behind(&mut raw, vec![frame; 40], EVERY);
        assert!(ended.is_some(), "{name} every {EVERY:?} kept a withheld response open for 4 s");
    }
}

#[test]
fn pings_do_not_hold_off_the_response_timeout() {
    let (app, _held, _read) = App::new();
    let options = options().workers(1).response_timeout(Some(Duration::from_millis(800)));
    let server = serve(options, app);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("GET", "/never"), true);
    let began = Instant::now();
    let sender =
        common::trickle(&raw.tcp, vec![h2raw::frame_bytes(kind::PING, 0, 0, &[7; 8]); 40], EVERY);
    let answer = h2raw::frames_until(&mut raw, Duration::from_secs(4), |f| {
        f.stream == 1 && f.kind == kind::HEADERS
    });
    let elapsed = began.elapsed();
    let _ = raw.tcp.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    assert!(
        answer.iter().any(|f| f.stream == 1 && f.kind == kind::HEADERS && f.end_stream()),
        "no 503 within {elapsed:?} (response timeout 800 ms) while the client PINGs"
    );
}

/// The other side: a slow upload that moves within the I/O timeout is not
/// cut, PINGs or not.
#[test]
fn a_slow_upload_that_moves_is_served() {
    let (app, _held, _read) = App::new();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/upload"), false);
    // A piece every quarter of the timeout (a client thread late by half of
    // it on a loaded machine is still on time), for twice the timeout.
    for _ in 0..8 {
        std::thread::sleep(IO_TIMEOUT / 4);
        raw.frame(kind::PING, 0, 0, &[1; 8]);
        raw.data(1, b"piece", false);
    }
    raw.data(1, b"", true);
    assert!(h2raw::answered_within(&mut raw, 1, Duration::from_secs(5)), "the upload was cut");
}

/// Owes stream 1's body, then after `setup` sends `frames`, one every
/// `every`: what ended the connection within 4 s, if anything.
fn owed_body_behind(
    options: Options,
    setup: impl FnOnce(&mut Raw),
    frames: Vec<Vec<u8>>,
    every: Duration,
) -> Option<(Option<Frame>, Duration)> {
    let (app, _held, _read) = App::new();
    let server = serve(options, app);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/upload"), false);
    raw.data(1, b"part", false);
    setup(&mut raw);
    ended_behind(&mut raw, frames, every)
}

/// The pace of the frames in the tests below.
const SLOWER: Duration = Duration::from_millis(150);

/// HEADERS past `max_concurrent_streams` are refused and open nothing.
#[test]
fn refused_streams_do_not_keep_an_owed_body_open() {
    let config = Config { max_concurrent_streams: 1, ..Config::default() };
    let frames = (0..26u32)
        .map(|i| h2raw::frame_bytes(kind::HEADERS, 0x5, 3 + 2 * i, &h2raw::req("GET", "/")))
        .collect();
    let ended = owed_body_behind(timers_only().http2(config), |_| {}, frames, SLOWER);
    assert!(ended.is_some(), "refused HEADERS every 150 ms kept a stalled upload open for 4 s");
}

/// Stream 3 opened with a malformed request (no `:path`), and reset.
fn reset_stream_3(raw: &mut Raw) {
    let bad = h2raw::block(&[(":method", "GET"), (":scheme", "http"), (":authority", "a")]);
    raw.headers(3, &bad, true);
    let reset = h2raw::frames_until(raw, Duration::from_secs(2), |f| {
        f.kind == kind::RST_STREAM && f.stream == 3
    });
    assert!(reset.iter().any(|f| f.kind == kind::RST_STREAM), "{reset:?}");
}

/// A malformed request (no `:path`) reset on stream 3, then HEADERS on it
/// again and again: decoded for the table and dropped.
#[test]
fn headers_on_a_reset_stream_do_not_keep_an_owed_body_open() {
    let frames = (0..26)
        .map(|_| h2raw::frame_bytes(kind::HEADERS, 0x4, 3, &h2raw::req("GET", "/")))
        .collect();
    let ended = owed_body_behind(timers_only(), reset_stream_3, frames, SLOWER);
    assert!(ended.is_some(), "HEADERS on a reset stream every 150 ms kept a stalled upload open");
}

/// DATA on a stream we reset moves no request; the connection credit we
/// give back for it is an answer, not a response the client takes.
#[test]
fn data_on_a_reset_stream_does_not_keep_an_owed_body_open() {
    let (app, _held, _read) = App::new();
    let config = Config { connection_window_size: 65535, ..Config::default() };
    let server = serve(timers_only().http2(config), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/upload"), false);
    raw.data(1, b"part", false);
    let bad = h2raw::block(&[(":method", "GET"), (":scheme", "http"), (":authority", "a")]);
    raw.headers(3, &bad, false);
    let mut credit: i64 = 65535 - 4;
    let began = Instant::now();
    let mut ended = None;
    while ended.is_none() && began.elapsed() < Duration::from_secs(4) {
        if credit >= 16000 {
            if raw.try_send(&h2raw::frame_bytes(kind::DATA, 0, 3, &[0u8; 16000])).is_err() {
                ended = Some("the server closed the connection");
            }
            credit -= 16000;
        }
        let until = Instant::now() + Duration::from_millis(100);
        while ended.is_none() {
            match raw.next(until.saturating_duration_since(Instant::now())) {
                Event::Frame(f) if f.kind == kind::GOAWAY => ended = Some("GOAWAY"),
                Event::Frame(f) if f.kind == kind::WINDOW_UPDATE && f.stream == 0 => {
                    credit += i64::from(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
                }
                Event::Frame(_) => {}
                Event::Eof => ended = Some("EOF"),
                Event::Timeout => break,
            }
        }
    }
    assert!(ended.is_some(), "DATA on a reset stream every 100 ms kept a stalled upload open 4 s");
}

/// A slow link: one DATA frame whose bytes keep coming, 200 every 50 ms,
/// but which takes longer than the I/O timeout to come whole.
#[test]
fn a_frame_arriving_slowly_is_progress() {
    let (app, _held, _read) = App::new();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/upload"), false);
    let frame = h2raw::frame_bytes(kind::DATA, 0, 1, &[b'x'; 6000]);
    let pieces: Vec<Vec<u8>> = frame.chunks(200).map(<[u8]>::to_vec).collect();
    let sender = common::trickle(&raw.tcp, pieces, Duration::from_millis(50));
    let ended =
        h2raw::frames_until(&mut raw, Duration::from_millis(1700), |f| f.kind == kind::GOAWAY);
    let _ = sender.join();
    assert!(!ended.iter().any(|f| f.kind == kind::GOAWAY), "cut while the frame came: {ended:?}");
    raw.data(1, b"", true);
    assert!(h2raw::answered_within(&mut raw, 1, Duration::from_secs(5)), "the upload was cut");
}

/// Stream 3's application reads 2.5 s late and its unread bytes hold the
/// whole connection window: the client cannot send the rest of stream 1's
/// body (whose application has read all that came) and owes nothing.
#[test]
fn a_client_whose_credit_another_streams_reader_holds_owes_nothing() {
    let (app, _held, _read) = App::new();
    let config =
        Config { connection_window_size: 65535, initial_window_size: 65535, ..Config::default() };
    let server = serve(timers_only().http2(config), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut credit = Credit::new();
    raw.headers(1, &h2raw::req("POST", "/late?first=0"), false);
    raw.headers(3, &h2raw::req("POST", "/late?first=2500"), false);
    credit.streams.insert(1, 65535);
    credit.streams.insert(3, 65535);
    credit.upload(&mut raw, 1, 100, 0, false);
    credit.upload(&mut raw, 3, 65535 - 100, 0, true);
    // Stream 1's rest waits for credit only stream 3's reader brings.
    credit.upload(&mut raw, 1, 1000, 0, true);
    assert_eq!(credit.wait_done(&mut raw, 1), 200);
    assert_eq!(credit.wait_done(&mut raw, 3), 200);
}

/// Each frame in two pieces (its header and a byte, then the rest), so
/// that every frame is still arriving at the end of some read.
fn split(frames: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    frames.into_iter().flat_map(|frame| [frame[..10].to_vec(), frame[10..].to_vec()]).collect()
}

/// Frames that will not count when whole are not progress while they
/// come either: refused HEADERS, HEADERS on a reset stream, padded empty
/// DATA, each split across reads.
#[test]
fn frames_that_will_not_count_are_not_progress_while_they_come() {
    let refused = (0..13u32)
        .map(|i| h2raw::frame_bytes(kind::HEADERS, 0x5, 3 + 2 * i, &h2raw::req("GET", "/")))
        .collect();
    let config = Config { max_concurrent_streams: 1, ..Config::default() };
    let ended = owed_body_behind(timers_only().http2(config), |_| {}, split(refused), SLOWER);
    assert!(ended.is_some(), "refused HEADERS, split, kept a stalled upload open for 4 s");

    let again = (0..13)
        .map(|_| h2raw::frame_bytes(kind::HEADERS, 0x4, 3, &h2raw::req("GET", "/")))
        .collect();
    let ended = owed_body_behind(timers_only(), reset_stream_3, split(again), SLOWER);
    assert!(ended.is_some(), "HEADERS on a reset stream, split, kept a stalled upload open");

    let padded = vec![h2raw::frame_bytes(kind::DATA, 0x8, 1, &[4, 0, 0, 0, 0]); 13];
    let ended = owed_body_behind(timers_only(), |_| {}, split(padded), SLOWER);
    assert!(ended.is_some(), "padded empty DATA, split, kept a stalled upload open for 4 s");
}
