//! Defects a black-box HTTP/2 probe found (2026-12-02), one test each,
//! over real TCP with hand-built frames.

mod common;

use std::time::{Duration, Instant};

use common::h2raw::{Frame, Raw, req};
use common::serve;
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Options, Request, Response};

/// `/big` answers 100,000 bytes at once; anything else `small`.
struct Sizes;

impl Handler for Sizes {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        request.path() == "/big"
    }

    fn respond(&self, big: bool, response: &mut Response<'_>) {
        let body = if big { vec![b'x'; 100_000] } else { b"small".to_vec() };
        let _ = response.body(&body);
    }
}

/// SETTINGS_INITIAL_WINDOW_SIZE.
const INITIAL_WINDOW_SIZE: u16 = 4;

/// Frames until `until` says stop (or `timeout`); HEADERS decoded to keep
/// HPACK in step.
fn frames_until(raw: &mut Raw, timeout: Duration, until: impl Fn(&Frame) -> bool) -> Vec<Frame> {
    let deadline = Instant::now() + timeout;
    let mut frames = Vec::new();
    while let Some(frame) = raw.next_frame(deadline.saturating_duration_since(Instant::now())) {
        if frame.kind == kind::HEADERS {
            let _ = raw.decoder.decode(&frame.payload, |_| {});
        }
        let stop = until(&frame);
        frames.push(frame);
        if stop {
            break;
        }
    }
    frames
}

/// Head-of-line blocking: a response held back by its own stream's window
/// (the client granted 100 bytes) kept every later stream from being
/// answered at all, because the bytes it held counted as output the
/// socket would not take. RFC 9113 §5.2: flow control keeps streams from
/// interfering with each other; §6.9: HEADERS need no credit.
#[test]
fn a_stream_held_by_its_window_does_not_block_the_others() {
    let server = serve(Options::new().workers(1), Sizes);
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 100)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.window_update(0, 1 << 30);
    raw.headers(1, &req("GET", "/big"), true);
    let first =
        frames_until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::DATA && f.stream == 1);
    let sent: usize = first.iter().filter(|f| f.kind == kind::DATA).map(|f| f.payload.len()).sum();
    assert_eq!(sent, 100, "stream 1 sends what its window allows: {first:?}");
    for stream in [3, 5, 7] {
        raw.headers(stream, &req("GET", "/small"), true);
        let frames = frames_until(&mut raw, Duration::from_secs(3), |f| {
            f.stream == stream && f.end_stream()
        });
        assert!(
            frames.iter().any(|f| f.stream == stream && f.kind == kind::DATA && f.end_stream()),
            "stream {stream} answered while stream 1 waits for credit: {frames:?}"
        );
    }
    // And stream 1 finishes once it has credit.
    raw.window_update(1, 1 << 20);
    let rest = frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    let more: usize = rest
        .iter()
        .filter(|f| f.kind == kind::DATA && f.stream == 1)
        .map(|f| f.payload.len())
        .sum();
    assert_eq!(sent + more, 100_000);
}

/// The same with the connection's window spent: later streams still get
/// their HEADERS (not flow-controlled), and their bodies once credit
/// comes.
#[test]
fn a_spent_connection_window_still_lets_heads_out() {
    let server = serve(Options::new().workers(1), Sizes);
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 1 << 20)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    // The connection window stays at 65,535: /big spends it.
    raw.headers(1, &req("GET", "/big"), true);
    let first = frames_until(&mut raw, Duration::from_secs(3), |f| {
        f.kind == kind::DATA && f.stream == 1 && f.payload.len() < 16_384
    });
    let sent: usize = first.iter().filter(|f| f.kind == kind::DATA).map(|f| f.payload.len()).sum();
    assert_eq!(sent, 65_535, "{first:?}");
    raw.headers(3, &req("GET", "/small"), true);
    let frames = frames_until(&mut raw, Duration::from_secs(3), |f| {
        f.stream == 3 && f.kind == kind::HEADERS
    });
    assert!(frames.iter().any(|f| f.stream == 3 && f.kind == kind::HEADERS), "{frames:?}");
    raw.window_update(0, 1 << 20);
    let rest = frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 3 && f.end_stream());
    assert!(rest.iter().any(|f| f.stream == 3 && f.end_stream()), "{rest:?}");
}

/// Answers `/held` never: its responder is kept until the test ends.
#[derive(Clone, Default)]
struct Held(std::sync::Arc<std::sync::Mutex<Vec<falconet_server::Responder>>>);

impl Handler for Held {
    type State = ();

    fn head(&self, _: &Request<'_>) {}

    fn respond(&self, (): (), response: &mut Response<'_>) {
        if let Ok(responder) = response.defer() {
            self.0.lock().unwrap().push(responder);
        }
    }
}

/// Opens stream 1 on a server that never answers it, shuts the server down
/// with `shutdown_timeout`, and returns the GOAWAYs the connection gets, as
/// (last stream id, error code), until it ends; PINGs are never answered.
fn goaways_of_a_shutdown(shutdown_timeout: Duration) -> Vec<(u32, u32)> {
    let options = Options::new().workers(1).shutdown_timeout(shutdown_timeout);
    let server = serve(options, Held::default());
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.headers(1, &req("GET", "/held"), true);
    std::thread::sleep(Duration::from_millis(200));
    server.handle().shutdown();
    let frames = frames_until(&mut raw, Duration::from_secs(5), |_| false);
    frames
        .iter()
        .filter(|f| f.kind == kind::GOAWAY)
        .map(|f| (u32::from_be_bytes(f.payload[..4].try_into().unwrap()), f.code()))
        .collect()
}

/// A client that never answers the shutdown's PING still gets the final
/// GOAWAY naming the last stream the server saw (RFC 9113 §6.8), a second
/// or so into the shutdown, not only the first GOAWAY of 2^31-1.
#[test]
fn the_final_goaway_comes_without_the_ping_ack() {
    let goaways = goaways_of_a_shutdown(Duration::from_secs(6));
    assert_eq!(goaways.first(), Some(&(0x7fff_ffff, 0)), "{goaways:?}");
    assert_eq!(goaways.get(1), Some(&(1, 0)), "the final GOAWAY names stream 1: {goaways:?}");
}

/// At the shutdown deadline the connections still open get a GOAWAY
/// before the socket closes (here the deadline comes before the second
/// the final GOAWAY waits for).
#[test]
fn the_shutdown_deadline_closes_with_a_goaway() {
    let goaways = goaways_of_a_shutdown(Duration::from_millis(300));
    assert_eq!(goaways.last().map(|g| g.0), Some(1), "{goaways:?}");
}

/// The attack limits are options (`Options::http2`), not constants: a
/// server told to allow 2 concurrent streams advertises 2 in its SETTINGS,
/// and one with a reset budget of 3 closes the connection at the 4th
/// client reset (GOAWAY ENHANCE_YOUR_CALM), as the defaults do at theirs.
#[test]
fn the_http2_limits_are_options() {
    use falconet_server::h2::connection::Config;
    use falconet_server::h2::frame::{ErrorCode, setting};
    let config = Config { max_concurrent_streams: 2, reset_budget: 3, ..Config::default() };
    let server = serve(Options::new().workers(1).http2(config), Held::default());
    let mut raw = Raw::connect(server.addr);
    let mut out = falconet_server::h2::frame::PREFACE.to_vec();
    falconet_server::h2::frame::encode_settings(&mut out, &[]);
    raw.send(&out);
    let settings = frames_until(&mut raw, Duration::from_secs(3), |f| {
        f.kind == kind::SETTINGS && f.flags & 1 == 0
    });
    let ours = settings.last().expect("the server's SETTINGS");
    let advertised: Vec<(u16, u32)> = ours
        .payload
        .chunks_exact(6)
        .map(|p| (u16::from_be_bytes([p[0], p[1]]), u32::from_be_bytes([p[2], p[3], p[4], p[5]])))
        .collect();
    assert!(advertised.contains(&(setting::MAX_CONCURRENT_STREAMS, 2)), "{advertised:?}");
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    for stream in (1..).step_by(2).take(4) {
        raw.headers(stream, &req("GET", "/held"), true);
        raw.frame(kind::RST_STREAM, 0, stream, &8u32.to_be_bytes());
    }
    let frames = frames_until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::GOAWAY);
    let goaway = frames.iter().find(|f| f.kind == kind::GOAWAY).expect("a GOAWAY");
    assert_eq!(goaway.code(), u32::from(ErrorCode::ENHANCE_YOUR_CALM), "{frames:?}");
}
