//! What counts as an HTTP/2 client's progress for the I/O and response
//! timeouts: frames that carry part of a request (HEADERS, CONTINUATION,
//! DATA) and response bytes it takes. Its PINGs, SETTINGS, WINDOW_UPDATEs
//! and ignored frames move nothing on, nor do our acknowledgements of
//! them: before this, a PING every 100 ms kept a client that owed a body
//! or withheld credit connected for as long as it liked (with the rate
//! limits off), and kept a response the application never gave from its
//! `503`.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::h2raw::{self, Frame, Raw};
use common::{options, serve};
use falconet_server::h2::frame::{self, kind};
use falconet_server::{Handler, Options, Request, Responder, Response};

/// The I/O timeout of these tests.
const IO_TIMEOUT: Duration = Duration::from_millis(400);
/// How often the client sends its frame that moves nothing.
const EVERY: Duration = Duration::from_millis(100);

/// `/never` holds its responder (sent to the test); `/big?n=N` answers N
/// bytes; anything else answers `ok` once the worker has read the body.
struct App {
    kept: mpsc::Sender<Responder>,
}

impl Handler for App {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        request.target().to_string()
    }

    fn body(&self, _: &mut String, _: &[u8]) {}

    fn respond(&self, target: String, response: &mut Response<'_>) {
        if target == "/never" {
            if let Ok(responder) = response.defer() {
                let _ = self.kept.send(responder);
            }
        } else if target.starts_with("/big") {
            let n = common::query_arg(&target, "n") as usize;
            let _ = response.body(&vec![b'b'; n]);
        } else {
            let _ = response.body(b"ok");
        }
    }
}

/// Rate limits off: only the I/O timeout judges a silent client.
fn timers_only() -> Options {
    options().workers(1).io_timeout(IO_TIMEOUT).min_request_body_rate(None).min_response_rate(None)
}

/// Frames that move no request on, each as the client would send it.
fn idle_frames() -> Vec<(&'static str, Vec<u8>)> {
    let mut settings = Vec::new();
    frame::encode_settings(&mut settings, &[]);
    vec![
        ("PING", h2raw::frame_bytes(kind::PING, 0, 0, &[7; 8])),
        ("SETTINGS", settings),
        (
            "connection WINDOW_UPDATE",
            h2raw::frame_bytes(kind::WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()),
        ),
    ]
}

/// Sends `frame` every [`EVERY`] for 4 s at most (until the connection
/// closes), reading meanwhile; returns what ended it (GOAWAY or the
/// connection's end) and when, or `None` if nothing did.
fn ended_behind(raw: &mut Raw, frame: Vec<u8>) -> Option<(Option<Frame>, Duration)> {
    let began = Instant::now();
    let sender = common::trickle(&raw.tcp, vec![frame; 40], EVERY);
    let mut ended = None;
    while began.elapsed() < Duration::from_secs(4) {
        match raw.next(Duration::from_millis(50)) {
            h2raw::Event::Frame(f) if f.kind == kind::GOAWAY => {
                ended = Some((Some(f), began.elapsed()));
                break;
            }
            h2raw::Event::Eof => {
                ended = Some((None, began.elapsed()));
                break;
            }
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
        let (kept, _held) = mpsc::channel();
        let server = serve(timers_only(), App { kept });
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.headers(1, &h2raw::req("POST", "/upload"), false);
        raw.data(1, b"part", false);
        let ended = ended_behind(&mut raw, frame);
        assert!(ended.is_some(), "{name} every {EVERY:?} kept a stalled upload open for 4 s");
    }
}

#[test]
fn a_client_withholding_credit_is_timed_out_whatever_else_it_sends() {
    for (name, frame) in idle_frames() {
        let (kept, _held) = mpsc::channel();
        let server = serve(timers_only(), App { kept });
        // No stream credit: the response waits on the client.
        let mut raw = Raw::handshake(server.addr, &[(0x4, 0)]);
        raw.headers(1, &h2raw::req("GET", "/big?n=100000"), true);
        let ended = ended_behind(&mut raw, frame);
        assert!(ended.is_some(), "{name} every {EVERY:?} kept a withheld response open for 4 s");
    }
}

#[test]
fn pings_do_not_hold_off_the_response_timeout() {
    let (kept, _held) = mpsc::channel();
    let options = options().workers(1).response_timeout(Some(Duration::from_millis(800)));
    let server = serve(options, App { kept });
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
    let (kept, _held) = mpsc::channel();
    let server = serve(timers_only(), App { kept });
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/upload"), false);
    for _ in 0..8 {
        std::thread::sleep(IO_TIMEOUT / 2);
        raw.frame(kind::PING, 0, 0, &[1; 8]);
        raw.data(1, b"piece", false);
    }
    raw.data(1, b"", true);
    assert!(h2raw::answered_within(&mut raw, 1, Duration::from_secs(5)), "the upload was cut");
}
