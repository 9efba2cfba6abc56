//! Review of 5f94a77: when the connection's timers find the client late
//! on request bodies while streams it does not hold up are open (ones the
//! application holds), only the owing streams end: `io_timeout` leaves
//! them to their own clocks (`Session::defers_to_streams`), the minimum
//! body rate ends them (`Session::expire_slow_bodies`); the rest go on.

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::h2raw::{self, Credit, Event, Raw};
use common::{options, serve};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, MinDataRate, Options, Request, Responder, Response};

const IO_TIMEOUT: Duration = Duration::from_millis(400);
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(1_500);
const CANCEL: u32 = 0x8;

fn timers_only() -> Options {
    options()
        .workers(1)
        .io_timeout(IO_TIMEOUT)
        .response_timeout(Some(RESPONSE_TIMEOUT))
        .min_request_body_rate(None)
        .min_response_rate(None)
}

/// `/never` holds its responder (sent to the test); `/echo-start` lends
/// its body, starts its response at once ("started"), then reads the body
/// (what the read said goes to the test); `/big?n=N` answers N bytes;
/// anything else answers `ok` once the body is read.
struct App {
    kept: mpsc::Sender<Responder>,
    reads: mpsc::Sender<String>,
}

fn app() -> (App, mpsc::Receiver<Responder>, mpsc::Receiver<String>) {
    let (kept, held) = mpsc::channel();
    let (reads, read) = mpsc::channel();
    (App { kept, reads }, held, read)
}

impl Handler for App {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        if request.path() == "/echo-start" {
            request.stream_body();
        }
        request.target().to_string()
    }

    fn body(&self, _: &mut String, _: &[u8]) {}

    fn respond(&self, target: String, response: &mut Response<'_>) {
        if target == "/echo-start" {
            let body = response.take_body();
            let Ok(mut responder) = response.defer() else { return };
            let reads = self.reads.clone();
            std::thread::spawn(move || {
                let _ = responder.write_blocking(b"started");
                let mut all = Vec::new();
                let said = match body.map(|mut body| body.read_to_end(&mut all)) {
                    Some(Ok(n)) => format!("got {n}"),
                    Some(Err(error)) => format!("read failed: {:?}", error.kind()),
                    None => "no body".to_string(),
                };
                let _ = reads.send(said);
                let _ = responder.finish();
            });
        } else if target == "/never" {
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

/// What the client saw until `until` held or `limit` passed: the frames
/// (kind, stream, code) with when they came; GOAWAY and EOF recorded, not
/// panicked on.
#[derive(Default, Debug)]
struct Seen {
    done: Vec<(u32, u16, Duration)>,
    resets: Vec<(u32, u32, Duration)>,
    goaway: Option<(u32, Duration)>,
    eof: Option<Duration>,
}

fn watch(
    raw: &mut Raw,
    seen: &mut Seen,
    began: Instant,
    limit: Duration,
    until: impl Fn(&Seen) -> bool,
) {
    let end = Instant::now() + limit;
    while !until(seen) && Instant::now() < end && seen.eof.is_none() {
        match raw.next(Duration::from_millis(10)) {
            Event::Frame(f) => match f.kind {
                kind::GOAWAY => seen.goaway = Some((f.code(), began.elapsed())),
                kind::RST_STREAM => seen.resets.push((f.stream, f.code(), began.elapsed())),
                kind::HEADERS => {
                    let mut status = 0;
                    let _ = raw.decoder.decode(&f.payload, |field| {
                        if field.name == b":status" {
                            status = String::from_utf8_lossy(field.value).parse().unwrap_or(0);
                        }
                    });
                    if status >= 200 {
                        seen.done.push((f.stream, status, began.elapsed()));
                    }
                }
                _ => {}
            },
            Event::Eof => seen.eof = Some(began.elapsed()),
            Event::Timeout => {}
        }
    }
}

fn statuses(seen: &Seen) -> Vec<(u32, u16)> {
    seen.done.iter().map(|&(s, st, _)| (s, st)).collect()
}

fn stalled_upload(raw: &mut Raw, id: u32) {
    let mut block = h2raw::req("POST", "/stalled");
    h2raw::literal(&mut block, b"content-length", b"100");
    raw.headers(id, &block, false);
    raw.data(id, b"ten bytes.", false);
}

/// Two stalled uploads (1 and 5) beside a held stream (3): both 408, the
/// connection goes on, stream 3 answered.
#[test]
fn review_two_stalled_uploads_beside_a_held_stream_both_get_408() {
    let (app, held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    stalled_upload(&mut raw, 5);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() >= 2);
    assert!(seen.goaway.is_none() && seen.eof.is_none(), "{seen:?}");
    let mut got = statuses(&seen);
    got.sort();
    assert_eq!(got, [(1, 408), (5, 408)], "{seen:?}");
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() >= 3);
    assert!(statuses(&seen).contains(&(3, 200)), "{seen:?}");
}

/// A stalled upload whose response began (the application streams it
/// back while reading): reset with CANCEL alone, its reader fails with
/// TimedOut, the held stream is still answered.
#[test]
fn review_a_stalled_upload_whose_response_began_is_reset_alone() {
    let (app, held, read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    raw.headers(1, &h2raw::req("POST", "/echo-start"), false);
    raw.data(1, b"a piece, then nothing", false);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| !s.resets.is_empty());
    assert!(seen.goaway.is_none() && seen.eof.is_none(), "{seen:?}");
    assert_eq!(statuses(&seen), [(1, 200)], "the echo's head: {seen:?}");
    assert_eq!(seen.resets.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(1, CANCEL)]);
    let said = read.recv_timeout(Duration::from_secs(1));
    assert_eq!(said.as_deref(), Ok("read failed: TimedOut"));
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() >= 2);
    assert!(statuses(&seen).contains(&(3, 200)), "{seen:?}");
}

/// A stalled upload beside a response waiting for the client's credit
/// (it never sends WINDOW_UPDATE): as documented, GOAWAY (the connection
/// timeout is the answer to both), and within a bound.
#[test]
fn review_a_stalled_upload_beside_a_response_waiting_for_credit_gets_goaway() {
    let (app, _held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/big?n=200000"), true);
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(4), |s| s.goaway.is_some());
    let (_, at) = seen.goaway.expect("GOAWAY");
    assert!(at < Duration::from_secs(2), "GOAWAY after {at:?}");
}

/// Repeated stalls beside one held stream: each stalled upload ends
/// alone, each within about the I/O timeout of its last byte, and the
/// held stream still gets its answer.
#[test]
fn review_repeated_stalls_beside_a_held_stream() {
    let (app, held, _read) = app();
    let server = serve(timers_only().response_timeout(Some(Duration::from_secs(5))), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    raw.headers(1, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 1 held");
    let mut seen = Seen::default();
    for (n, id) in [3u32, 5, 7].into_iter().enumerate() {
        let at = began.elapsed();
        stalled_upload(&mut raw, id);
        watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() > n);
        assert!(seen.goaway.is_none() && seen.eof.is_none(), "{seen:?}");
        let (stream, status, when) = *seen.done.last().expect("an answer");
        assert_eq!((stream, status), (id, 408), "{seen:?}");
        let took = when - at;
        assert!(took >= IO_TIMEOUT && took < IO_TIMEOUT * 3, "stream {id}: 408 after {took:?}");
    }
    responder.body(b"held").expect("stream 1 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() > 3);
    assert!(statuses(&seen).contains(&(1, 200)), "{seen:?}");
}

/// After the 408 the held stream is still bounded: the application never
/// answers, it gets 503 within about the response timeout, and the
/// connection is not kept open for ever.
#[test]
fn review_the_held_stream_still_meets_its_response_timeout_after_the_408() {
    let (app, held, _read) = app();
    let server = serve(timers_only().keep_alive_timeout(Duration::from_secs(1)), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let _responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(5), |s| s.done.len() >= 2);
    assert_eq!(statuses(&seen), [(1, 408), (3, 503)], "{seen:?}");
    let at = seen.done[1].2;
    assert!(at < RESPONSE_TIMEOUT + Duration::from_millis(700), "503 after {at:?}");
    // Then idle: closed by keep-alive, not held for ever.
    watch(&mut raw, &mut seen, began, Duration::from_secs(5), |s| s.eof.is_some());
    assert!(seen.eof.is_some(), "still open: {seen:?}");
}

/// A stalled upload beside a held stream while a HEADERS block for stream
/// 5 is left unfinished (no END_HEADERS): the 408 may come, but the
/// header timeout still ends the connection (bounded).
#[test]
fn review_a_stalled_upload_beside_a_held_stream_and_an_unfinished_head_is_bounded() {
    let (app, held, _read) = app();
    let server = serve(timers_only().header_timeout(Duration::from_millis(1_200)), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let _responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    // HEADERS without END_HEADERS: a field block under way.
    raw.frame(kind::HEADERS, 0x1, 5, &h2raw::req("GET", "/x"));
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(5), |s| s.goaway.is_some());
    eprintln!("{seen:?}");
    let (_, at) = seen.goaway.expect("GOAWAY");
    assert!(at < Duration::from_millis(2_200), "GOAWAY after {at:?}");
}

/// Graceful shutdown while a stalled upload sits beside a held stream:
/// the stalled one still ends (408) within a bound and the held one is
/// answered; the connection ends.
#[test]
fn review_shutdown_during_a_stall_beside_a_held_stream() {
    let (app, held, _read) = app();
    let server = serve(timers_only().shutdown_timeout(Duration::from_secs(5)), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    server.handle().shutdown();
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| !s.done.is_empty());
    assert_eq!(statuses(&seen), [(1, 408)], "{seen:?}");
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(5), |s| s.eof.is_some());
    assert!(statuses(&seen).contains(&(3, 200)), "{seen:?}");
    assert!(seen.eof.is_some(), "{seen:?}");
}

/// The default request-body rate (240 B/s, here with a 1 s grace) is on:
/// the same stall beside a held stream. The change says the stalled
/// stream ends alone; the rate meter judges first and ends the whole
/// connection (GOAWAY ENHANCE_YOUR_CALM), losing the held stream.
#[test]
fn review_with_the_body_rate_on_a_stall_beside_a_held_stream_ends_alone() {
    let (app, held, _read) = app();
    let options = timers_only()
        .io_timeout(Duration::from_secs(3))
        .response_timeout(Some(Duration::from_secs(10)))
        .min_request_body_rate(Some(MinDataRate::new(240, Duration::from_secs(1))));
    let server = serve(options, app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(6), |s| {
        !s.done.is_empty() || s.goaway.is_some()
    });
    let _ = responder.body(b"held");
    watch(&mut raw, &mut seen, began, Duration::from_secs(2), |s| s.done.len() >= 2);
    assert!(seen.goaway.is_none(), "the connection ended: {seen:?}");
    assert_eq!(statuses(&seen), [(1, 408), (3, 200)], "{seen:?}");
}

/// The stalled stream's client keeps the rest of the connection alive
/// with a second, moving upload (progress every 100 ms) and a held
/// stream: the stalled one still ends (its own clock), and nothing panics.
#[test]
fn review_a_stall_beside_a_held_and_a_moving_stream() {
    let (app, held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut credit = Credit::new();
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    raw.headers(5, &h2raw::req("POST", "/busy"), false);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    for _ in 0..10 {
        raw.data(5, b"busy", false);
        watch(&mut raw, &mut seen, began, Duration::from_millis(100), |_| false);
    }
    raw.data(5, b"end", true);
    let _ = &mut credit;
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() >= 3);
    assert!(seen.goaway.is_none(), "{seen:?}");
    let mut got = statuses(&seen);
    got.sort();
    assert_eq!(got, [(1, 408), (3, 200), (5, 200)], "{seen:?}");
}

/// After the connection's timer answers the stalled stream 408, nothing
/// more is said on it but an optional RST_STREAM(NO_ERROR); in particular
/// no second end (a CANCEL after the 408).
#[test]
fn review_the_408_is_the_stalled_streams_only_end() {
    let (app, held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| !s.done.is_empty());
    assert_eq!(statuses(&seen), [(1, 408)], "{seen:?}");
    // Another two I/O timeouts with nothing moving.
    watch(&mut raw, &mut seen, began, IO_TIMEOUT * 2 + Duration::from_millis(200), |_| false);
    let bad: Vec<_> = seen.resets.iter().filter(|r| r.1 != 0).collect();
    assert!(bad.is_empty(), "resets after the 408: {seen:?}");
    assert!(seen.goaway.is_none(), "{seen:?}");
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() >= 2);
    assert!(statuses(&seen).contains(&(3, 200)), "{seen:?}");
}

/// The client goes on sending the stalled stream's body after its 408:
/// the bytes still count against (and must be given back to) the
/// connection's window, so a later upload of more than a window's worth
/// on another stream completes; the held stream is still answered.
#[test]
fn review_data_after_the_408_does_not_leak_the_connection_window() {
    let (app, held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut credit = Credit::new();
    raw.headers(1, &h2raw::req("POST", "/stalled"), false);
    credit.upload(&mut raw, 1, 10, 0, false);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    assert!(credit.until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::HEADERS));
    assert_eq!(credit.done, [(1, 408)]);
    // The rest of a window on stream 1, after its answer.
    // (Within stream 1's window as the server announced it.)
    let sent = credit.upload_ignoring_resets(&mut raw, 1, 1_040_000);
    eprintln!("sent {sent} after the 408; connection credit left {}", credit.connection);
    raw.headers(5, &h2raw::req("POST", "/after"), false);
    credit.upload(&mut raw, 5, 200_000, 0, true);
    assert_eq!(credit.wait_done(&mut raw, 5), 200);
    responder.body(b"held").expect("stream 3 still open");
    assert_eq!(credit.wait_done(&mut raw, 3), 200);
}

trait UploadIgnoringResets {
    fn upload_ignoring_resets(&mut self, raw: &mut Raw, stream: u32, total: usize) -> usize;
}

impl UploadIgnoringResets for Credit {
    /// Sends up to `total` bytes on `stream` within the connection's
    /// window, whatever the stream's state; returns how many.
    fn upload_ignoring_resets(&mut self, raw: &mut Raw, stream: u32, total: usize) -> usize {
        let n = total.min(self.connection.max(0) as usize);
        let mut sent = 0;
        while sent < n {
            let k = (n - sent).min(16_384);
            raw.data(stream, &vec![b'x'; k], false);
            sent += k;
        }
        self.connection -= n as i64;
        n
    }
}

/// After the 408 and the held stream's answer, the connection is quiet
/// (the client sent nothing since the start): it must stay usable (no
/// GOAWAY for the old stall), and serve a new request.
#[test]
fn review_the_connection_serves_on_after_the_408_and_the_held_answer() {
    let (app, held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| !s.done.is_empty());
    assert_eq!(statuses(&seen), [(1, 408)], "{seen:?}");
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| s.done.len() >= 2);
    // Quiet for a while: the stall is over, nothing is owed.
    watch(&mut raw, &mut seen, began, Duration::from_millis(600), |_| false);
    assert!(seen.goaway.is_none() && seen.eof.is_none(), "{seen:?}");
    raw.headers(5, &h2raw::req("GET", "/small"), true);
    watch(&mut raw, &mut seen, began, Duration::from_secs(2), |s| s.done.len() >= 3);
    assert_eq!(statuses(&seen), [(1, 408), (3, 200), (5, 200)], "{seen:?}");
    assert!(seen.goaway.is_none(), "{seen:?}");
}

/// The held stream is answered right after the stall's 408 (same tick
/// or so): one 408, one 200, no GOAWAY, and the client's late DATA on
/// stream 1 after the 408 changes nothing.
#[test]
fn review_late_data_on_the_stalled_stream_after_its_408() {
    let (app, held, _read) = app();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 3 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_secs(3), |s| !s.done.is_empty());
    raw.data(
        1,
        b"the rest of the body: ninety bytes, more or less, arriving too late to matter...",
        true,
    );
    responder.body(b"held").expect("stream 3 still open");
    watch(&mut raw, &mut seen, began, Duration::from_secs(2), |s| s.done.len() >= 2);
    watch(&mut raw, &mut seen, began, Duration::from_millis(600), |_| false);
    assert_eq!(statuses(&seen), [(1, 408), (3, 200)], "{seen:?}");
    assert!(seen.goaway.is_none() && seen.eof.is_none(), "{seen:?}");
}

/// Stream 3's body is lent and the application reads it only 350 ms in
/// (till then the body is not owed: the application is behind on it);
/// stream 1 has stalled since the start; stream 5 is held. At 400 ms the
/// connection's timer ends the owing streams, stream 3 among them,
/// although its client came to owe only 50 ms before: its own clock
/// would give it until about 750 ms. Its client sends the rest at 550 ms.
#[test]
fn review_a_stream_that_just_came_to_owe_is_not_ended_with_the_stalled_one() {
    let (app, held, read) = common::timed_app::App::new();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    stalled_upload(&mut raw, 1);
    raw.headers(3, &h2raw::req("POST", "/late?first=350"), false);
    raw.data(3, &[b'x'; 1000], false);
    raw.headers(5, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 5 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_millis(550), |_| false);
    raw.data(3, b"the rest", true);
    watch(&mut raw, &mut seen, began, Duration::from_secs(2), |s| s.done.iter().any(|d| d.0 == 3));
    let said = read.recv_timeout(Duration::from_secs(1));
    assert!(seen.goaway.is_none(), "{seen:?}");
    assert!(statuses(&seen).contains(&(1, 408)), "{seen:?}");
    assert_eq!(said.as_deref(), Ok("got 1008"), "{seen:?}");
    assert!(statuses(&seen).contains(&(3, 200)), "{seen:?}");
    drop(responder);
}

/// The control for the test above: without the stalled stream 1, stream
/// 3 (owing from 350 ms, the rest sent at 550 ms) is served.
#[test]
fn review_control_a_stream_that_just_came_to_owe_alone_is_served() {
    let (app, held, read) = common::timed_app::App::new();
    let server = serve(timers_only(), app);
    let mut raw = Raw::handshake(server.addr, &[]);
    let began = Instant::now();
    raw.headers(3, &h2raw::req("POST", "/late?first=350"), false);
    raw.data(3, &[b'x'; 1000], false);
    raw.headers(5, &h2raw::req("GET", "/never"), true);
    let responder = held.recv_timeout(Duration::from_secs(1)).expect("stream 5 held");
    let mut seen = Seen::default();
    watch(&mut raw, &mut seen, began, Duration::from_millis(550), |_| false);
    raw.data(3, b"the rest", true);
    watch(&mut raw, &mut seen, began, Duration::from_secs(2), |s| s.done.iter().any(|d| d.0 == 3));
    let said = read.recv_timeout(Duration::from_secs(1));
    assert!(seen.goaway.is_none(), "{seen:?}");
    assert_eq!(said.as_deref(), Ok("got 1008"), "{seen:?}");
    assert!(statuses(&seen).contains(&(3, 200)), "{seen:?}");
    drop(responder);
}
