//! Defects a second black-box HTTP/2 probe found (2026-12-03), one test
//! each, over real TCP with hand-built frames: connection credit lost to a
//! `content-length` mismatch, frames in flight for streams we reset
//! answered with a second RST_STREAM (or a GOAWAY) once more than 32 were
//! reset, and a SETTINGS acknowledged after the GOAWAY it caused.

mod common;

use std::time::{Duration, Instant};

use common::h2raw::{Frame, Raw, block, frames_until, req};
use common::serve;
use falconet_server::h2::frame::{ErrorCode, flag, kind};
use falconet_server::{Handler, Options, Request, Response};

/// `/early` answers at once, before its body (which it never takes);
/// anything else answers `done` after its body.
struct Early;

impl Handler for Early {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        if request.path() == "/early" {
            request.stream_body();
        }
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let _ = response.body(b"done");
    }
}

fn post(path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut fields =
        vec![(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "t")];
    fields.extend_from_slice(extra);
    block(&fields)
}

fn is_goaway(frame: &Frame) -> bool {
    frame.kind == kind::GOAWAY
}

/// RFC 9113 §5.1 and §6.9: DATA on a stream reset for a body longer than
/// its `content-length` (8.1.1) still counts against the connection
/// window, and its credit must come back. It did not: each such frame
/// lost its credit for good, and after a connection window's worth every
/// upload on the connection stalled. Here 100 streams each send 16,000
/// bytes against `content-length: 5` (1.6 MB, past the 1 MiB window the
/// server grants), the client tracking the connection window exactly.
#[test]
fn a_content_length_mismatch_gives_its_connection_credit_back() {
    let server = serve(Options::new().workers(1), Early);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut window: i64 = 65_535;
    let piece = vec![b'x'; 16_000];
    for i in 0..100u32 {
        let id = 1 + 2 * i;
        // Take every credit the server sent, waiting for more if needed.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let wait = if window >= piece.len() as i64 {
                Duration::from_millis(1)
            } else {
                deadline.saturating_duration_since(Instant::now())
            };
            let Some(frame) = raw.next_frame(wait) else { break };
            if frame.kind == kind::HEADERS {
                let _ = raw.decoder.decode(&frame.payload, |_| {});
            }
            assert!(!is_goaway(&frame), "stream {id}: GOAWAY {:?}", frame.payload);
            if frame.kind == kind::WINDOW_UPDATE && frame.stream == 0 {
                window += i64::from(u32::from_be_bytes(frame.payload[..4].try_into().unwrap()));
            }
        }
        assert!(
            window >= piece.len() as i64,
            "stream {id}: the connection window stalled at {window}"
        );
        raw.headers(id, &post("/x", &[("content-length", "5")]), false);
        raw.data(id, &piece, false);
        window -= piece.len() as i64;
    }
    // A good upload on the same connection is still served.
    raw.headers(301, &post("/x", &[]), false);
    raw.data(301, b"hello", true);
    let frames =
        frames_until(&mut raw, Duration::from_secs(5), |f| f.stream == 301 && f.end_stream());
    assert!(frames.iter().any(|f| f.stream == 301 && f.kind == kind::DATA), "{frames:?}");
}

/// RFC 9113 §5.1: frames the client sent before it saw our RST_STREAM are
/// discarded, and §5.4.2: one RST_STREAM per stream. 100 uploads (the
/// concurrency limit) are each answered at once and reset with NO_ERROR
/// (8.1: the body is not needed); then their DATA and trailers arrive. Only
/// the last 32 resets were remembered: the rest drew a second
/// RST_STREAM(STREAM_CLOSED) each (spending the reset budget), and
/// trailers on them a GOAWAY(PROTOCOL_ERROR).
#[test]
fn frames_in_flight_for_many_reset_streams_are_discarded() {
    let server = serve(Options::new().workers(1), Early);
    let mut raw = Raw::handshake(server.addr, &[]);
    let ids: Vec<u32> = (0..100).map(|i| 1 + 2 * i).collect();
    let mut out = Vec::new();
    for &id in &ids {
        let fields = post("/early", &[]);
        out.extend(common::h2raw::frame_bytes(kind::HEADERS, flag::END_HEADERS, id, &fields));
    }
    raw.send(&out);
    // Every answer and its reset.
    let seen = std::cell::Cell::new(0);
    let frames = frames_until(&mut raw, Duration::from_secs(10), |f| {
        seen.set(seen.get() + usize::from(f.kind == kind::RST_STREAM));
        seen.get() == ids.len()
    });
    let mut resets = 0;
    for frame in &frames {
        assert!(!is_goaway(frame), "{frame:?}");
        if frame.kind == kind::RST_STREAM {
            assert_eq!(frame.code(), ErrorCode::NO_ERROR.value(), "{frame:?}");
            resets += 1;
        }
    }
    assert_eq!(resets, ids.len(), "one reset per answered upload");
    // What the client had in flight: DATA for each, trailers for half.
    let mut out = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        let trailers = i % 2 == 0;
        out.extend(common::h2raw::frame_bytes(
            kind::DATA,
            if trailers { 0 } else { flag::END_STREAM },
            id,
            &[b'y'; 2000],
        ));
        if trailers {
            let fields = block(&[("x-checksum", "1")]);
            let flags = flag::END_HEADERS | flag::END_STREAM;
            out.extend(common::h2raw::frame_bytes(kind::HEADERS, flags, id, &fields));
        }
    }
    raw.send(&out);
    // Then a request that must be answered on the same connection.
    raw.headers(301, &req("GET", "/after"), true);
    let frames =
        frames_until(&mut raw, Duration::from_secs(5), |f| f.stream == 301 && f.end_stream());
    let extra: Vec<_> =
        frames.iter().filter(|f| f.kind == kind::RST_STREAM || is_goaway(f)).collect();
    assert!(extra.is_empty(), "frames in flight drew: {extra:?}");
    assert!(frames.iter().any(|f| f.stream == 301 && f.end_stream()), "{frames:?}");
}

/// The same for frames whose own fault would be a stream error (a zero
/// WINDOW_UPDATE, 6.9; a PRIORITY of the wrong length, 6.3, or depending on
/// itself, 5.3.1) on a stream already reset: discarded, not reset again.
#[test]
fn a_malformed_frame_on_a_stream_we_reset_is_not_reset_again() {
    let server = serve(Options::new().workers(1), Early);
    let mut raw = Raw::handshake(server.addr, &[]);
    // An uppercase field name: a malformed request (8.2.1), reset.
    let mut out = common::h2raw::frame_bytes(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &block(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "t"),
            ("X-Upper", "1"),
        ]),
    );
    out.extend(common::h2raw::frame_bytes(kind::WINDOW_UPDATE, 0, 1, &0u32.to_be_bytes()));
    out.extend(common::h2raw::frame_bytes(kind::WINDOW_UPDATE, 0, 1, &0u32.to_be_bytes()));
    out.extend(common::h2raw::frame_bytes(kind::PRIORITY, 0, 1, &[0, 0, 0, 0]));
    out.extend(common::h2raw::frame_bytes(kind::PRIORITY, 0, 1, &[0, 0, 0, 1, 16]));
    raw.send(&out);
    raw.headers(3, &req("GET", "/after"), true);
    let frames =
        frames_until(&mut raw, Duration::from_secs(5), |f| f.stream == 3 && f.end_stream());
    let resets: Vec<_> = frames.iter().filter(|f| f.kind == kind::RST_STREAM).collect();
    assert_eq!(resets.len(), 1, "{resets:?}");
    assert_eq!((resets[0].stream, resets[0].code()), (1, ErrorCode::PROTOCOL_ERROR.value()));
    assert!(!frames.iter().any(is_goaway), "{frames:?}");
    assert!(frames.iter().any(|f| f.stream == 3 && f.end_stream()), "{frames:?}");
}

/// RFC 9113 §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE that takes an open
/// stream's window past 2^31-1 is a connection error; the connection ends
/// with that GOAWAY (5.4.1), so the SETTINGS is not acknowledged (it was
/// ACKed after the GOAWAY).
#[test]
fn a_settings_that_fails_the_connection_is_not_acknowledged() {
    let server = serve(Options::new().workers(1), Early);
    let mut raw = Raw::handshake(server.addr, &[]);
    // Stream 1 stays open (its body pending), its window at the top.
    raw.headers(1, &post("/x", &[]), false);
    raw.window_update(1, 0x7fff_ffff - 65_535);
    let mut settings = Vec::new();
    falconet_server::h2::frame::encode_settings(&mut settings, &[(4, 65_536)]).unwrap();
    raw.send(&settings);
    let frames = frames_until(&mut raw, Duration::from_secs(5), |_| false);
    let goaway = frames.iter().position(is_goaway).expect("a GOAWAY");
    assert_eq!(frames[goaway].code(), ErrorCode::FLOW_CONTROL_ERROR.value());
    let acks: Vec<_> =
        frames.iter().filter(|f| f.kind == kind::SETTINGS && f.flags & flag::ACK != 0).collect();
    // The handshake's own SETTINGS was acknowledged before (in `handshake`
    // or here); none may follow the GOAWAY.
    assert!(
        frames[goaway..].iter().all(|f| f.kind != kind::SETTINGS),
        "an ACK after the GOAWAY: {acks:?}"
    );
}
