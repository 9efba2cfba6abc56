//! Defects a black-box HTTP/2 probe found (2026-12-02), one test each,
//! over real TCP with hand-built frames.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::h2raw::{Raw, frames_until, req};
use common::serve;
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Options, Request, Response};

/// `/big` answers 100,000 bytes at once, `/huge` 4 MiB (more than a
/// connection may hold back for all its streams); anything else `small`.
struct Sizes;

/// `/huge`'s length.
const HUGE: usize = 4 << 20;

impl Handler for Sizes {
    type State = usize;

    fn head(&self, request: &Request<'_>) -> usize {
        match request.path() {
            "/big" => 100_000,
            "/huge" => HUGE,
            _ => 0,
        }
    }

    fn respond(&self, size: usize, response: &mut Response<'_>) {
        let body = if size > 0 { vec![b'x'; size] } else { b"small".to_vec() };
        let _ = response.body(&body);
    }
}

/// SETTINGS_INITIAL_WINDOW_SIZE.
const INITIAL_WINDOW_SIZE: u16 = 4;

/// Head-of-line blocking: a response held back by its own stream's window
/// (the client granted 100 bytes) kept every later stream from being
/// answered at all, because the bytes it held counted as output the
/// socket would not take. RFC 9113 §5.2: flow control keeps streams from
/// interfering with each other; §6.9: HEADERS need no credit.
#[test]
fn a_stream_held_by_its_window_does_not_block_the_others() {
    held_stream_does_not_block_the_others("/big", 100_000);
}

/// The same with a response larger than all a connection may hold back
/// (1 MiB): one paused download, however large, stops no other stream
/// (an outside probe saw none answered past 1 MiB).
#[test]
fn a_huge_stream_held_by_its_window_does_not_block_the_others() {
    held_stream_does_not_block_the_others("/huge", HUGE);
}

fn held_stream_does_not_block_the_others(path: &str, size: usize) {
    let server = serve(Options::new().workers(1), Sizes);
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 100)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.window_update(0, 1 << 30);
    raw.headers(1, &req("GET", path), true);
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
    raw.window_update(1, 1 << 30);
    let rest = frames_until(&mut raw, Duration::from_secs(3), |f| f.stream == 1 && f.end_stream());
    let more: usize = rest
        .iter()
        .filter(|f| f.kind == kind::DATA && f.stream == 1)
        .map(|f| f.payload.len())
        .sum();
    assert_eq!(sent + more, size);
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
    falconet_server::h2::frame::encode_settings(&mut out, &[]).unwrap();
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

// ------------------------------------- from an adversarial review of the fixes

/// Answers `small`.
struct Small;
impl Handler for Small {
    type State = ();
    fn head(&self, _: &Request<'_>) {}
    fn respond(&self, (): (), response: &mut Response<'_>) {
        let _ = response.body(b"small");
    }
}

fn priority(stream: u32, weight: u8) -> Vec<u8> {
    let mut p = 0u32.to_be_bytes().to_vec();
    p.push(weight);
    let _ = stream;
    p
}

/// A browser-like client (RFC 7540 priorities) that reprioritizes each
/// request twice over 150 requests: valid PRIORITY frames, 300 of them.
#[test]
fn a_reprioritizing_client_is_not_cut_off() {
    let server = serve(Options::new().workers(1), Small);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    let mut answered = 0;
    for i in 0..150u32 {
        let stream = 2 * i + 1;
        raw.headers(stream, &req("GET", "/small"), true);
        raw.frame(kind::PRIORITY, 0, stream, &priority(stream, 100));
        raw.frame(kind::PRIORITY, 0, stream, &priority(stream, 200));
        let frames = frames_until(&mut raw, Duration::from_secs(3), |f| {
            (f.stream == stream && f.end_stream()) || f.kind == kind::GOAWAY
        });
        if let Some(g) = frames.iter().find(|f| f.kind == kind::GOAWAY) {
            panic!(
                "GOAWAY code {:#x} after {answered} requests ({} PRIORITY frames)",
                g.code(),
                2 * (i + 1)
            );
        }
        answered += 1;
    }
    assert_eq!(answered, 150);
}

/// One long-lived stream (an upload in progress) reprioritized 101 times.
#[test]
fn one_stream_reprioritized_101_times_is_served() {
    let server = serve(Options::new().workers(1), Small);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.headers(1, &req("POST", "/up"), false);
    for w in 0..101u32 {
        raw.frame(kind::PRIORITY, 0, 1, &priority(1, w as u8));
    }
    raw.data(1, b"x", true);
    let frames = frames_until(&mut raw, Duration::from_secs(3), |f| {
        (f.stream == 1 && f.end_stream()) || f.kind == kind::GOAWAY
    });
    let goaway = frames.iter().find(|f| f.kind == kind::GOAWAY).map(|g| g.code());
    assert_eq!(goaway, None, "{frames:?}");
}

/// RFC 9113 6.8: "Endpoints MUST NOT increase the value they send in the
/// last stream identifier". A stream that crossed the final GOAWAY (sent
/// without the PING's round trip, so a client with a long RTT sends one)
/// is ignored, but bumps `last_stream`, and a later GOAWAY (the I/O
/// timeout's abort) names it.
#[test]
fn the_goaway_last_stream_never_increases() {
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_secs(2))
        .shutdown_timeout(Duration::from_secs(8));
    let held = Held::default();
    let server = serve(options, held.clone());
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.headers(1, &req("GET", "/held"), true);
    std::thread::sleep(Duration::from_millis(200));
    server.handle().shutdown();
    let mut frames = frames_until(&mut raw, Duration::from_secs(4), |f| {
        f.kind == kind::GOAWAY && u32::from_be_bytes(f.payload[..4].try_into().unwrap()) == 1
    });
    // A request the client sent before it saw any GOAWAY (long RTT).
    raw.headers(3, &req("GET", "/held"), true);
    frames.extend(frames_until(&mut raw, Duration::from_secs(6), |_| false));
    let goaways: Vec<(u32, u32)> = frames
        .iter()
        .filter(|f| f.kind == kind::GOAWAY)
        .map(|f| (u32::from_be_bytes(f.payload[..4].try_into().unwrap()), f.code()))
        .collect();
    eprintln!("goaways: {goaways:?}");
    assert!(goaways.windows(2).all(|w| w[1].0 <= w[0].0), "last stream id increased: {goaways:?}");
    drop(held);
}

#[derive(Clone, Default)]
struct Mixed {
    written: Arc<AtomicUsize>,
}

const CHUNK: usize = 64 * 1024;
const TOTAL: usize = 64 << 20;

impl Handler for Mixed {
    type State = bool;
    fn head(&self, request: &Request<'_>) -> bool {
        request.path() == "/stream"
    }
    fn respond(&self, stream: bool, response: &mut Response<'_>) {
        if !stream {
            let _ = response.body(&vec![b'a'; 48 << 20]);
            return;
        }
        let mut responder = response.defer().unwrap();
        let written = Arc::clone(&self.written);
        std::thread::spawn(move || {
            let chunk = vec![b'b'; CHUNK];
            let mut n = 0;
            while n < TOTAL {
                if responder.write_blocking(&chunk).is_err() {
                    return;
                }
                n += CHUNK;
                written.store(n, Ordering::SeqCst);
            }
            let _ = responder.finish();
        });
    }
}

/// A deferred (pipe) response stages no more than its window allows
/// while another stream keeps the socket busy (the review's find: its
/// bytes past its credit went uncounted, 14-30 MB staged).
#[test]
fn a_deferred_response_past_its_window_stays_bounded() {
    let mut worst = 0;
    for attempt in 0..4 {
        let handler = Mixed::default();
        let written = Arc::clone(&handler.written);
        let server = serve(Options::new().workers(1), handler);
        // Streams get no credit; the connection plenty.
        let mut raw = Raw::handshake(server.addr, &[(4, 0)]);
        raw.frame(kind::SETTINGS, 1, 0, &[]);
        raw.window_update(0, 1 << 30);
        raw.headers(1, &req("GET", "/stream"), true);
        std::thread::sleep(Duration::from_millis(200));
        // One byte of credit: stream 1's head goes out (and one byte).
        raw.window_update(1, 1);
        let f = frames_until(&mut raw, Duration::from_secs(3), |f| {
            f.stream == 1 && f.kind == kind::HEADERS
        });
        assert!(f.iter().any(|f| f.stream == 1 && f.kind == kind::HEADERS), "{f:?}");
        raw.headers(3, &req("GET", "/big"), true);
        let f = frames_until(&mut raw, Duration::from_secs(3), |f| {
            f.stream == 3 && f.kind == kind::HEADERS
        });
        assert!(f.iter().any(|f| f.stream == 3 && f.kind == kind::HEADERS), "{f:?}");
        std::thread::sleep(Duration::from_millis(200));
        // Stream 1 gets 32 KiB once; stream 3 64 KiB at a time as it is read.
        let mut out = Vec::new();
        for (stream, n) in [(1u32, 32_768u32), (3, 65_536)] {
            falconet_server::h2::frame::FrameHeader {
                length: 4,
                kind: kind::WINDOW_UPDATE,
                flags: 0,
                stream,
            }
            .encode(&mut out)
            .unwrap();
            out.extend_from_slice(&n.to_be_bytes());
        }
        raw.send(&out);
        let (mut got1, mut got3, mut granted) = (0usize, 0usize, 65_536usize);
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            let Some(frame) = raw.next_frame(Duration::from_millis(200)) else { continue };
            if frame.kind == kind::DATA {
                if frame.stream == 1 {
                    got1 += frame.payload.len();
                }
                if frame.stream == 3 {
                    got3 += frame.payload.len();
                }
            }
            if got3 + 32_768 >= granted {
                raw.window_update(3, 65_536);
                granted += 65_536;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let after = written.load(Ordering::SeqCst);
        eprintln!(
            "attempt {attempt}: the application wrote {after} bytes of stream 1; the client got {got1} of them and {got3} of stream 3"
        );
        worst = worst.max(after.saturating_sub(got1));
        drop(raw);
        drop(server);
    }
    // Stream 1 may send 32 KiB; the pipe holds ~256 KiB; the connection
    // may stage max_pending_output (64 KiB) sendable + 16x that held.
    assert!(
        worst < 4 << 20,
        "{worst} bytes of stream 1 staged by the server past its 32 KiB of credit"
    );
}

/// A `:path` with bytes browsers send raw (`{` `}` `|` `^`) is answered,
/// as HTTP/1 answers such a target; one with `<` (always percent-encoded
/// by clients) or raw UTF-8 (no URI holds a byte past ASCII, RFC 3986 §2;
/// HTTP/1 answers it 400) is malformed (RFC 9113 §8.3.1): a stream error,
/// and the connection goes on.
#[test]
fn paths_with_bytes_browsers_send_raw() {
    let server = serve(Options::new().workers(1), Sizes);
    let mut raw = Raw::handshake(server.addr, &[]);
    let answered = |raw: &mut Raw, stream: u32| {
        frames_until(raw, Duration::from_secs(5), |f| {
            f.stream == stream && (f.end_stream() || f.kind == kind::RST_STREAM)
        })
        .into_iter()
        .filter(|f| f.stream == stream)
        .map(|f| f.kind)
        .collect::<Vec<_>>()
    };
    raw.headers(1, &req("GET", "/?q={a}|b^c"), true);
    let kinds = answered(&mut raw, 1);
    assert!(kinds.contains(&kind::HEADERS) && !kinds.contains(&kind::RST_STREAM), "{kinds:?}");
    raw.headers(3, &req("GET", "/caf\u{e9}"), true);
    assert_eq!(answered(&mut raw, 3), [kind::RST_STREAM]);
    raw.headers(5, &req("GET", "/<x>"), true);
    assert_eq!(answered(&mut raw, 5), [kind::RST_STREAM]);
    raw.headers(7, &req("GET", "/small"), true);
    assert!(answered(&mut raw, 7).contains(&kind::HEADERS));
}

/// RFC 9112 9.6: `Connection: close` on an `Upgrade: h2c` request means
/// no request after it is processed, so there is no switch: the request
/// is answered over HTTP/1.1 and the connection closed, and HTTP/2 frames
/// sent after it (a client that assumed the switch) are never answered.
/// (A second probe, 2026-12-02.)
#[test]
fn an_upgrade_request_with_connection_close_is_not_switched() {
    use std::io::{Read, Write};
    let server = serve(Options::new().workers(1), Sizes);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = b"GET /small HTTP/1.1\r\nHost: a\r\n\
        Connection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\n\
        HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
        .to_vec();
    out.extend_from_slice(falconet_server::h2::frame::PREFACE);
    out.extend_from_slice(&[0, 0, 0, kind::SETTINGS, 0, 0, 0, 0, 0]);
    tcp.write_all(&out).unwrap();
    let mut reply = Vec::new();
    tcp.read_to_end(&mut reply).expect("the connection closes");
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200 "), "{reply}");
    assert!(reply.ends_with("small"), "one HTTP/1.1 response, nothing after: {reply}");
}

/// RFC 9110 §7.8: "If a server receives both an Upgrade and an Expect
/// header field with the 100-continue expectation, the server MUST send a
/// 100 (Continue) response before sending a 101 (Switching Protocols)
/// response." The upgrade has no body (it would not be switched with
/// one), yet the 100 still comes first; without the expectation, none.
/// (An outside probe, 2026-12-03.)
#[test]
fn an_upgrade_that_expects_100_continue_gets_100_before_101() {
    use std::io::{Read, Write};
    let server = serve(Options::new().workers(1), Sizes);
    for (expect, length) in [(true, ""), (true, "Content-Length: 0\r\n"), (false, "")] {
        let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let expectation = if expect { "Expect: 100-continue\r\n" } else { "" };
        let request = format!(
            "GET /small HTTP/1.1\r\nHost: a\r\n{expectation}{length}\
             Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n\
             HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
        );
        tcp.write_all(request.as_bytes()).unwrap();
        let switching = "HTTP/1.1 101 Switching Protocols\r\n";
        let continued = "HTTP/1.1 100 Continue\r\n\r\n";
        let want = if expect { continued.len() + switching.len() } else { switching.len() };
        let mut got = vec![0; want];
        tcp.read_exact(&mut got).unwrap();
        let got = String::from_utf8_lossy(&got);
        let expected =
            if expect { format!("{continued}{switching}") } else { switching.to_string() };
        assert_eq!(got, expected, "expect={expect} {length:?}");
    }
}

/// `/huge` answers 4 MiB at once and counts the answers it made.
struct CountedHuge(Arc<AtomicUsize>);

impl Handler for CountedHuge {
    type State = ();

    fn head(&self, _: &Request<'_>) {}

    fn respond(&self, (): (), response: &mut Response<'_>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        let _ = response.body(&vec![b'x'; HUGE]);
    }
}

/// What the largest held-back response left aside costs (a review): a
/// zero-window client asking for twenty 4 MiB answers gets two staged
/// (the largest, aside, and one that passes the 1 MiB bound), not twenty.
/// The bound is the two largest answers plus 16 x `max_pending_output`.
#[test]
fn a_zero_window_client_gets_at_most_two_huge_answers_staged() {
    let answered = Arc::new(AtomicUsize::new(0));
    let server = serve(Options::new().workers(1), CountedHuge(Arc::clone(&answered)));
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    for stream in (1..=39).step_by(2) {
        raw.headers(stream, &req("GET", "/huge"), true);
    }
    let _ = frames_until(&mut raw, Duration::from_secs(2), |_| false);
    let staged = answered.load(Ordering::SeqCst);
    assert!(staged <= 2, "{staged} answers of 4 MiB staged for a zero-window client");
}

/// A client may send DATA before it has processed our SETTINGS (RFC 9113
/// §3.4 lets it send at once; §6.9.3: the receiver "MUST be prepared to
/// receive data that exceeds this window size"). With a stream window
/// set below the default 65,535, an upload sent with the preface was
/// reset FLOW_CONTROL_ERROR (nghttp -d, every time; a 2026-12-04 probe).
/// Now it is answered, and once the client acknowledges our SETTINGS the
/// smaller window binds streams opened after.
#[test]
fn data_sent_before_our_settings_are_acknowledged_is_within_the_default_window() {
    let config = falconet_server::h2::connection::Config {
        initial_window_size: 1_000,
        ..Default::default()
    };
    let server = serve(Options::new().workers(1).http2(config), common::Echo);
    let mut raw = Raw::connect(server.addr);
    let mut first = falconet_server::h2::frame::PREFACE.to_vec();
    first.extend(common::h2raw::frame_bytes(kind::SETTINGS, 0, 0, &[]));
    first.extend(common::h2raw::frame_bytes(kind::HEADERS, 0x4, 1, &req("POST", "/echo")));
    first.extend(common::h2raw::frame_bytes(kind::DATA, 0x1, 1, &[b'a'; 5_000]));
    raw.send(&first);
    let frames = frames_until(&mut raw, Duration::from_secs(5), |f| {
        f.kind == kind::RST_STREAM || f.kind == kind::GOAWAY || f.kind == kind::DATA
    });
    let last = frames.last().expect("an answer");
    assert_eq!(last.kind, kind::DATA, "{frames:?}");
    let expected = format!("len=5000 fnv={:x}", common::fnv(common::FNV_START, &[b'a'; 5_000]));
    assert_eq!(last.payload, expected.as_bytes());
    // Acknowledged: a stream opened now gets our 1,000 bytes.
    raw.frame(kind::SETTINGS, 0x1, 0, &[]);
    raw.headers(3, &req("POST", "/echo"), false);
    raw.data(3, &[b'a'; 1_001], true);
    let frames = frames_until(&mut raw, Duration::from_secs(5), |f| f.kind == kind::RST_STREAM);
    let reset = frames.last().filter(|f| f.kind == kind::RST_STREAM && f.stream == 3);
    assert_eq!(reset.map(|f| &f.payload[..]), Some(&3u32.to_be_bytes()[..]), "{frames:?}");
}

/// h2spec run with its default path `/` (2026-12-05): `Hello`'s `404` had
/// no body, so its HEADERS ended the stream at once, and the cases that
/// judge a stream by its DATA (generic/2/2: a WINDOW_UPDATE on a
/// half-closed stream; http2/5.1.2/1: the 101st stream past
/// MAX_CONCURRENT_STREAMS, which needs 100 streams kept open by a zero
/// window) failed against a server that was right. A `404` now carries a
/// short body, as Go's and nginx's do: with the client's window at 0 its
/// HEADERS come alone and a WINDOW_UPDATE of one byte brings one byte.
#[test]
fn a_404_has_a_body_that_waits_for_credit() {
    let server = serve(Options::new().workers(1), falconet_server::hello::Hello);
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.headers(1, &req("GET", "/"), true);
    let head = frames_until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::HEADERS);
    let head = head.last().expect("a response");
    assert_eq!((head.kind, head.stream), (kind::HEADERS, 1), "{head:?}");
    assert!(!head.end_stream(), "a 404's body keeps the stream open: {head:?}");
    raw.window_update(1, 1);
    let data = frames_until(&mut raw, Duration::from_secs(3), |f| f.kind == kind::DATA);
    let data = data.last().expect("a DATA frame");
    assert_eq!((data.kind, data.stream, data.payload.as_slice()), (kind::DATA, 1, &b"N"[..]));
    // The rest once credit comes, and the stream ends.
    raw.window_update(1, 100);
    let rest = frames_until(&mut raw, Duration::from_secs(3), |f| f.end_stream());
    let body: Vec<u8> =
        rest.iter().filter(|f| f.kind == kind::DATA).flat_map(|f| f.payload.clone()).collect();
    assert_eq!(body, b"ot Found\n");
}

/// h2spec http2/5.1.2/1 at its default path: 101 requests for `/` on a
/// zero window, one frame each: the 100 answered ones stay open (their
/// bodies wait for credit), so the 101st is refused (RFC 9113 §5.1.2).
#[test]
fn the_stream_past_max_concurrent_streams_is_refused_at_the_default_path() {
    let server = serve(Options::new().workers(1), falconet_server::hello::Hello);
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    for i in 0..101u32 {
        raw.headers(1 + 2 * i, &req("GET", "/"), true);
    }
    let frames = frames_until(&mut raw, Duration::from_secs(5), |f| {
        f.kind == kind::RST_STREAM || f.kind == kind::GOAWAY
    });
    let refusal = frames.last().expect("frames");
    assert!(
        matches!(refusal.kind, kind::RST_STREAM | kind::GOAWAY),
        "no refusal of the 101st stream: {} frames, last {refusal:?}",
        frames.len()
    );
    if refusal.kind == kind::RST_STREAM {
        assert_eq!(refusal.stream, 201);
    }
    // REFUSED_STREAM (7) or PROTOCOL_ERROR (1), as h2spec accepts (not,
    // say, the response rate's ENHANCE_YOUR_CALM).
    assert!(matches!(refusal.code(), 1 | 7), "{refusal:?}");
}
