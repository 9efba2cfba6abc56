//! The sans-IO APIs called as a library user may call them on day one:
//! output consumed past its end, and an upgrade of a connection already
//! in use (a reviewer's probes: the first overflowed, the second returned
//! `Ok` and put frames before the `101`, lost its first bytes, reopened
//! stream 1 or let a skipped stream id through).

mod common;

use std::sync::Arc;

use common::Echo;
use common::h2raw::{frame_bytes as frame, req};
use falconet_server::h2::connection::{Config, Connection, StreamInput, Streams, UpgradeError};
use falconet_server::h2::frame::{PREFACE, kind};
use falconet_server::h2::head::Head;
use falconet_server::{Context, Options, Session};

/// What a [`Connection`] told its streams.
#[derive(Default)]
struct Seen(Vec<String>);

impl Streams for Seen {
    fn headers(&mut self, stream: u32, _: &Head, end: bool, _: &Arc<StreamInput>) {
        self.0.push(format!("headers {stream} {end}"));
    }
    fn data(&mut self, stream: u32, data: &[u8], end: bool) -> bool {
        self.0.push(format!("data {stream} {} {end}", data.len()));
        true
    }
    fn reset(&mut self, stream: u32) {
        self.0.push(format!("reset {stream}"));
    }
    fn writable(&mut self, _: u32) {}
}

/// Everything the connection has to send, consumed.
fn take_all(conn: &mut Connection) -> Vec<u8> {
    let mut out = Vec::new();
    while !conn.output().is_empty() {
        let piece = conn.output().to_vec();
        conn.consume_output(piece.len());
        out.extend_from_slice(&piece);
    }
    out
}

const PREFIX: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

#[test]
fn connection_output_consumed_past_its_end_is_all_of_it() {
    for first in [0, 1, 5] {
        let mut conn = Connection::new(Config::default()).unwrap();
        let queued = conn.output_len();
        assert!(queued > first, "our SETTINGS are queued");
        conn.consume_output(first);
        assert_eq!(conn.output_len(), queued - first);
        conn.consume_output(usize::MAX);
        assert_eq!(conn.output_len(), 0, "after {first}");
        assert!(conn.output().is_empty());
        conn.consume_output(usize::MAX);
        assert_eq!(conn.output_len(), 0);
    }
}

#[test]
fn session_output_consumed_past_its_end_is_all_of_it() {
    let pool = falconet_pool::Pool::new();
    let mut cx = Context::new(&Options::new()).unwrap();
    for input in [&b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"[..], PREFACE] {
        let mut session = Session::<Echo>::new(&pool).unwrap();
        session.consume_output(usize::MAX);
        session.receive(input).unwrap();
        session.process(&Echo, &mut cx);
        assert!(!session.output().is_empty());
        session.consume_output(1);
        session.consume_output(usize::MAX);
        session.consume_output(usize::MAX);
        assert!(session.output().is_empty());
        // The session goes on: the next request is answered.
        if input != PREFACE {
            session.receive(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            session.process(&Echo, &mut cx);
            let answer = String::from_utf8_lossy(session.output()).into_owned();
            assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("/b"), "{answer}");
        }
    }
}

/// A fresh connection upgrades: the `101` first, then our SETTINGS, and
/// the request is stream 1.
#[test]
fn a_fresh_connection_upgrades() {
    let mut conn = Connection::new(Config::default()).unwrap();
    let settings = conn.output().to_vec();
    let mut seen = Seen::default();
    conn.upgrade(PREFIX, &[], Head::default(), &mut seen).unwrap();
    let wire = take_all(&mut conn);
    assert!(wire.starts_with(PREFIX) && wire[PREFIX.len()..].starts_with(&settings));
    assert_eq!(seen.0, ["headers 1 true"]);
    assert_eq!(conn.open_streams(), 1);
}

/// Refused, with nothing changed, once the connection is in use.
#[test]
fn a_connection_in_use_is_not_upgraded() {
    type Use = fn(&mut Connection, &mut Seen);
    let uses: [(&str, Use); 5] = [
        ("part of our SETTINGS written", |conn, _| conn.consume_output(5)),
        ("our SETTINGS written", |conn, _| {
            take_all(conn);
        }),
        ("the preface received", |conn, seen| {
            conn.receive(PREFACE, seen);
        }),
        ("streams opened", |conn, seen| {
            let mut input = PREFACE.to_vec();
            input.extend(frame(kind::SETTINGS, 0, 0, &[]));
            input.extend(frame(kind::HEADERS, 0x4, 1, &req("GET", "/a")));
            input.extend(frame(kind::HEADERS, 0x5, 5, &req("GET", "/b")));
            assert_eq!(conn.receive(&input, seen), input.len());
            conn.send_headers(5, 200, [], true);
        }),
        ("a graceful shutdown begun", |conn, _| conn.shutdown()),
    ];
    for (what, use_it) in uses {
        let mut conn = Connection::new(Config::default()).unwrap();
        let mut seen = Seen::default();
        use_it(&mut conn, &mut seen);
        let (before, events) = (conn.output().to_vec(), seen.0.len());
        let refused = conn.upgrade(PREFIX, &[], Head::default(), &mut seen);
        assert_eq!(refused, Err(UpgradeError::NotFresh), "{what}");
        assert_eq!(conn.output(), before, "{what}: the output changed");
        assert_eq!(seen.0.len(), events, "{what}: a stream opened");
        assert!(refused.unwrap_err().to_string().contains("cannot be upgraded"));
    }
    // After streams: a skipped id is still a protocol error, not a stream.
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut seen = Seen::default();
    let mut input = PREFACE.to_vec();
    input.extend(frame(kind::SETTINGS, 0, 0, &[]));
    input.extend(frame(kind::HEADERS, 0x5, 5, &req("GET", "/b")));
    conn.receive(&input, &mut seen);
    let _ = conn.upgrade(PREFIX, &[], Head::default(), &mut seen);
    conn.receive(&frame(kind::HEADERS, 0x5, 3, &req("GET", "/skipped")), &mut seen);
    assert!(!seen.0.iter().any(|e| e.starts_with("headers 3")), "{:?}", seen.0);
    assert!(conn.error().is_some());
}

/// A bad `HTTP2-Settings` payload is the settings error, nothing changed.
#[test]
fn bad_upgrade_settings_change_nothing() {
    let mut conn = Connection::new(Config::default()).unwrap();
    let before = conn.output().to_vec();
    let mut seen = Seen::default();
    // A length that is not a multiple of 6, and ENABLE_PUSH = 2.
    for settings in [&[0u8, 2, 0, 0][..], &[0, 2, 0, 0, 0, 2]] {
        let refused = conn.upgrade(PREFIX, settings, Head::default(), &mut seen);
        assert!(matches!(refused, Err(UpgradeError::Settings(_))), "{refused:?}");
        assert_eq!(conn.output(), before);
        assert!(seen.0.is_empty());
    }
    conn.upgrade(PREFIX, &[0, 4, 0, 0, 0, 1], Head::default(), &mut seen).unwrap();
    assert!(take_all(&mut conn).starts_with(PREFIX));
}
