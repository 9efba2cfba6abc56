//! [`Options::h2c`]: which ways a connection may become HTTP/2. Each mode
//! against the same two openings: the preface as the first bytes (prior
//! knowledge) and an HTTP/1.1 `Upgrade: h2c` request.

mod common;

use std::io::Write;
use std::time::Duration;

use common::h2raw::{Event, Raw, answered_within, frame_bytes, req};
use common::{End, connect, exchange, options, read_for, serve, text};
use falconet_server::h2::frame::{self, PREFACE, kind};
use falconet_server::hello::Hello;
use falconet_server::{Context, H2c, Options, Progress, Session};

/// An upgrade as `curl --http2` sends it (SETTINGS_MAX_CONCURRENT_STREAMS
/// 100). Alone: with a request pipelined behind it, no mode upgrades.
const UPGRADE: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\
    Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n";
/// The request sent after the upgrade's answer, on the same connection.
const NEXT: &[u8] = b"GET /json HTTP/1.1\r\nHost: t\r\n\r\n";

const QUIET: Duration = Duration::from_millis(500);

/// The client's preface and an empty SETTINGS.
fn preface() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    frame::encode_settings(&mut out, &[]).unwrap();
    out
}

/// Whether a prior-knowledge client gets the server's SETTINGS and an
/// answer on stream 1.
fn serves_prior_knowledge(h2c: H2c) -> bool {
    let server = serve(options().h2c(h2c), Hello);
    let mut raw = Raw::connect(server.addr);
    raw.send(&preface());
    match raw.next(Duration::from_secs(3)) {
        Event::Frame(f) if f.kind == kind::SETTINGS => {}
        _ => return false,
    }
    raw.headers(1, &req("GET", "/plaintext"), true);
    answered_within(&mut raw, 1, Duration::from_secs(3))
}

/// What the server sends to [`UPGRADE`], and then, unless that was a
/// `101`, to [`NEXT`] on the same connection, as text.
fn answer_to_upgrade(h2c: H2c) -> String {
    let server = serve(options().h2c(h2c), Hello);
    let mut stream = connect(server.addr);
    stream.write_all(UPGRADE).unwrap();
    let (mut got, end) = read_for(&mut stream, QUIET);
    assert_eq!(end, End::Quiet, "{h2c:?}: {}", text(&got));
    if !got.starts_with(b"HTTP/1.1 101 ") {
        stream.write_all(NEXT).unwrap();
        let (more, end) = read_for(&mut stream, QUIET);
        assert_eq!(end, End::Quiet, "{h2c:?}: {}", text(&more));
        got.extend_from_slice(&more);
    }
    text(&got)
}

/// Two HTTP/1.1 answers, `/plaintext`'s then `/json`'s, and no 101.
fn answered_over_http1(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(!answer.contains(" 101 "), "{answer}");
    assert_eq!(answer.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{answer}");
    let plaintext = answer.find("Hello, World!").expect("the first answer");
    let json = answer.find("{\"message\"").expect("the second answer");
    assert!(plaintext < json, "{answer}");
}

#[test]
fn both_is_the_default_and_takes_either_way() {
    assert_eq!(falconet_server::Options::new(), falconet_server::Options::new().h2c(H2c::Both));
    assert!(serves_prior_knowledge(H2c::Both));
    let answer = answer_to_upgrade(H2c::Both);
    assert!(answer.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{answer}");
}

#[test]
fn prior_knowledge_only_answers_an_upgrade_over_http1() {
    assert!(serves_prior_knowledge(H2c::PriorKnowledge));
    answered_over_http1(&answer_to_upgrade(H2c::PriorKnowledge));
}

#[test]
fn off_answers_the_preface_505_and_an_upgrade_over_http1() {
    assert!(!serves_prior_knowledge(H2c::Off));
    let server = serve(options().h2c(H2c::Off), Hello);
    // The preface is the request line `PRI * HTTP/2.0`: an HTTP version
    // this server does not speak, then the close.
    let (got, closed) = exchange(server.addr, &preface(), Duration::from_secs(3));
    let answer = text(&got);
    assert!(answer.starts_with("HTTP/1.1 505 HTTP Version Not Supported\r\n"), "{answer}");
    assert!(closed, "{answer}");
    drop(server);
    answered_over_http1(&answer_to_upgrade(H2c::Off));
}

/// The preface's first 18 bytes, `PRI * HTTP/2.0\r\n\r\n`, make a whole
/// HTTP/1 head. With prior knowledge on, the server waits for the rest
/// (they may begin the preface); with it off, it answers them at once.
#[test]
fn off_answers_a_head_that_could_begin_the_preface() {
    let head = &PREFACE[..18];
    assert_eq!(head, b"PRI * HTTP/2.0\r\n\r\n");
    let server = serve(options().h2c(H2c::Off), Hello);
    let (got, closed) = exchange(server.addr, head, QUIET);
    assert!(text(&got).starts_with("HTTP/1.1 505 "), "{}", text(&got));
    assert!(closed);
    drop(server);
    let server = serve(options(), Hello);
    let (got, closed) = exchange(server.addr, head, QUIET);
    assert!(got.is_empty() && !closed, "{}", text(&got));
}

// From the adversarial review of this option (2026-12-07).

/// Preface, empty SETTINGS, HEADERS(1, END_STREAM) for GET /json: what a
/// client that sends the preface optimistically behind its upgrade sends.
fn h2_opening() -> Vec<u8> {
    let mut out = preface();
    out.extend_from_slice(&frame_bytes(kind::HEADERS, 0x5, 1, &req("GET", "/json")));
    out
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// An upgrade with [`h2_opening`] sent right behind it on a new
/// connection: what came back within `limit`, and how it ended.
fn optimistic_upgrade(addr: std::net::SocketAddr, limit: Duration) -> (Vec<u8>, End) {
    let mut stream = connect(addr);
    let mut bytes = UPGRADE.to_vec();
    bytes.extend_from_slice(&h2_opening());
    stream.write_all(&bytes).unwrap();
    read_for(&mut stream, limit)
}

/// RFC 9931 (the preface is a fixed preamble that ends HTTP/1.1): under
/// PriorKnowledge or Off, an upgrade request with the preface right
/// behind it (an optimistic client) is answered over HTTP/1.1; the
/// preface is a `PRI * HTTP/2.0` request line, answered 505, then the
/// close. Nothing after the preface (the HEADERS for /json) is answered,
/// and no HTTP/2 frame is sent.
#[test]
fn upgrade_with_the_preface_behind_it_ends_at_the_preface() {
    for mode in [H2c::PriorKnowledge, H2c::Off] {
        let server = serve(options().h2c(mode), Hello);
        let (got, end) = optimistic_upgrade(server.addr, Duration::from_secs(3));
        let answer = text(&got);
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{mode:?}: {answer}");
        assert!(answer.contains("Hello, World!"), "{mode:?}: {answer}");
        assert!(!answer.contains(" 101 "), "{mode:?}: {answer}");
        assert_eq!(count(&answer, "HTTP/1.1 505 "), 1, "{mode:?}: {answer}");
        assert!(!answer.contains("\"message\""), "{mode:?}: /json answered: {answer}");
        let after_505 = &answer[answer.find("HTTP/1.1 505 ").unwrap()..];
        assert!(
            after_505.contains("Connection: close") || after_505.contains("connection: close"),
            "{mode:?}: {after_505}"
        );
        // The 505's head ends the output: no HTTP/2 frame behind it.
        assert!(got.ends_with(b"\r\n\r\n"), "{mode:?}: {got:?}");
        assert_eq!(end, End::Eof, "{mode:?}: {answer}");
    }
}

/// Off, sans-IO: the preface fed a byte at a time. Every step before the
/// request line's end returns NeedInput with no output; by the end of
/// `PRI * HTTP/2.0\r\n\r\n` the 505 is out and the session closes.
/// PriorKnowledge, sans-IO: the same bytes make the session HTTP/2 (its
/// SETTINGS), never an HTTP/1 answer.
#[test]
fn sans_io_preface_bytewise_per_mode() {
    let pool = falconet_pool::Pool::new();
    let mut bytes = PREFACE.to_vec();
    frame::encode_settings(&mut bytes, &[]).unwrap();

    let mut cx = Context::new(&Options::new().h2c(H2c::Off)).unwrap();
    let mut session = Session::<Hello>::new(&pool).unwrap();
    let mut closed_at = None;
    for (i, b) in bytes.iter().enumerate() {
        session.receive(std::slice::from_ref(b)).unwrap();
        let progress = session.process(&Hello, &mut cx);
        if progress == Progress::Close {
            closed_at = Some(i);
            break;
        }
        assert_eq!(progress, Progress::NeedInput, "byte {i}");
        assert!(session.output().is_empty(), "byte {i}: {}", text(session.output()));
    }
    let closed_at = closed_at.expect("never closed");
    assert!(closed_at < 18, "closed at byte {closed_at}");
    assert!(text(session.output()).starts_with("HTTP/1.1 505 "), "{}", text(session.output()));
    assert!(session.is_closed());
    assert!(!session.must_reset());

    let mut cx = Context::new(&Options::new().h2c(H2c::PriorKnowledge)).unwrap();
    let mut session = Session::<Hello>::new(&pool).unwrap();
    for (i, b) in bytes.iter().enumerate() {
        session.receive(std::slice::from_ref(b)).unwrap();
        let progress = session.process(&Hello, &mut cx);
        assert_ne!(progress, Progress::Close, "byte {i}");
        if i + 1 < PREFACE.len() {
            assert!(session.output().is_empty(), "byte {i}: {:?}", session.output());
            assert!(!session.is_idle(), "byte {i}: a possible preface is not idle");
        }
    }
    let out = session.output();
    assert!(out.len() >= 9 && out[3] == kind::SETTINGS, "{out:?}");
}

#[cfg(feature = "tower")]
mod tower_path {
    use super::*;
    use axum::routing::get;
    use common::serve_tower;

    fn router() -> axum::Router {
        axum::Router::new().route("/plaintext", get(|| async { "tower hello" }))
    }

    #[test]
    fn tower_off_and_prior_knowledge() {
        for mode in [H2c::PriorKnowledge, H2c::Off] {
            let (server, _rt) = serve_tower(options().h2c(mode), router());
            // Upgrade: answered over HTTP/1.1.
            let mut stream = connect(server.addr);
            stream.write_all(UPGRADE).unwrap();
            let (got, end) = read_for(&mut stream, Duration::from_millis(500));
            let answer = text(&got);
            assert_eq!(end, End::Quiet, "{mode:?}: {answer}");
            assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{mode:?}: {answer}");
            assert!(answer.ends_with("tower hello"), "{mode:?}: {answer}");
            // Preface.
            let mut stream = connect(server.addr);
            let mut bytes = PREFACE.to_vec();
            frame::encode_settings(&mut bytes, &[]).unwrap();
            stream.write_all(&bytes).unwrap();
            let (got, end) = read_for(&mut stream, Duration::from_secs(2));
            if mode == H2c::Off {
                assert!(text(&got).starts_with("HTTP/1.1 505 "), "{}", text(&got));
                assert_eq!(end, End::Eof);
            } else {
                assert!(got.len() >= 9 && got[3] == kind::SETTINGS, "{got:?}");
            }
            // Upgrade + preface behind it: 200, 505, close.
            let (got, end) = optimistic_upgrade(server.addr, Duration::from_secs(2));
            let answer = text(&got);
            assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{mode:?}: {answer}");
            assert_eq!(count(&answer, "HTTP/1.1 505 "), 1, "{mode:?}: {answer}");
            assert_eq!(end, End::Eof, "{mode:?}: {answer}");
        }
    }
}
