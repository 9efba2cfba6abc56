//! A lent HTTP/2 request body the application never takes gives its
//! connection credit back (two independent reviews' findings).
//!
//! A handler that calls `stream_body` in `head` and answers without
//! `take_body` (a 401 before an upload), or whose `respond` panics, left
//! the bytes already in the body's pipe counted against the connection's
//! receive window: once the whole body had arrived, nothing released them,
//! and the stream's receive side was kept for reuse with its unread bytes
//! still counted. They came back only if that spare was reused, so a
//! connection that then ran fewer streams at once stalled for good (with a
//! 64 KiB connection window, after three such uploads). The client here
//! keeps to its connection credit, as a real one does: 65,535 plus the
//! server's connection WINDOW_UPDATEs, less the DATA it sent
//! (`common::h2raw::Credit`).

mod common;

use std::time::Duration;

use common::h2raw::{Credit, Raw, req};
use common::serve;
use falconet_server::h2::frame::{FrameHeader, flag, kind};
use falconet_server::{Handler, Request, Response};

/// `/lend` lends its body and never takes it: answered, or panicking in
/// `respond` when `panic`; `/count` reads its body in `body`.
#[derive(Clone, Copy)]
struct Untaken {
    panic: bool,
}

impl Handler for Untaken {
    type State = bool;
    fn head(&self, request: &Request<'_>) -> bool {
        let lend = request.path() == "/lend";
        if lend {
            request.stream_body();
        }
        lend
    }
    fn body(&self, _: &mut bool, _: &[u8]) {}
    fn respond(&self, lent: bool, response: &mut Response<'_>) {
        if lent && self.panic {
            panic!("a handler bug, its lent body never taken");
        }
        response.body(if lent { b"refused unread" } else { b"counted" }).unwrap();
    }
}

/// What each upload to `/lend` sends.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// 16 KiB and END_STREAM.
    Whole,
    /// 8,000 bytes, 2,001 more (past a `max_body` of 10,000), and an empty
    /// END_STREAM, in the same read: the stream is refused (413) before
    /// `respond` runs, with 8,000 bytes in its lent body's pipe.
    PastMaxBody,
}

/// `burst` uploads to `/lend` in one write (all open before any ends, so
/// none reuses another's receive side), while stream 1 (when `hold`) stays
/// open across them; then 100 uploads of 8 KiB to `/count` one at a time
/// within the client's credit. The credit must never run out, and a
/// server that releases what it should announces again before the credit
/// falls much below half the window.
fn untaken_bodies_then_uploads(
    untaken: Untaken,
    window: u32,
    burst: u32,
    hold: bool,
    shape: Shape,
) {
    let config = falconet_server::h2::connection::Config {
        connection_window_size: window,
        ..Default::default()
    };
    let mut options = common::options().http2(config);
    if shape == Shape::PastMaxBody {
        options = options.max_body(10_000);
    }
    let server = serve(options, untaken);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut credit = Credit::new();
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    // The server's connection WINDOW_UPDATE past 65,535, if any.
    credit.until(&mut raw, Duration::from_millis(300), |_| false);
    if hold {
        raw.headers(1, &req("POST", "/count"), false);
    }
    let mut burst_bytes = Vec::new();
    let first = 3;
    let mut id = first;
    for _ in 0..burst {
        let block = req("POST", "/lend");
        let header = FrameHeader {
            length: block.len() as u32,
            kind: kind::HEADERS,
            flags: flag::END_HEADERS,
            stream: id,
        };
        header.encode(&mut burst_bytes).unwrap();
        burst_bytes.extend_from_slice(&block);
        let pieces: &[(usize, u8)] = match shape {
            Shape::Whole => &[(16_384, flag::END_STREAM)],
            Shape::PastMaxBody => &[(8_000, 0), (2_001, 0), (0, flag::END_STREAM)],
        };
        for &(length, flags) in pieces {
            FrameHeader { length: length as u32, kind: kind::DATA, flags, stream: id }
                .encode(&mut burst_bytes)
                .unwrap();
            burst_bytes.resize(burst_bytes.len() + length, b'y');
            credit.connection -= length as i64;
        }
        id += 2;
    }
    raw.send(&burst_bytes);
    for stream in (first..id).step_by(2) {
        credit.wait_done(&mut raw, stream);
    }
    if hold {
        raw.data(1, &[], true);
        assert_eq!(credit.wait_done(&mut raw, 1), 200);
    }
    let window = i64::from(window);
    let mut lowest = credit.connection;
    for n in 0..100 {
        if credit.connection < 8_192 {
            credit.until(&mut raw, Duration::from_secs(2), |f| {
                f.kind == kind::WINDOW_UPDATE && f.stream == 0
            });
        }
        assert!(
            credit.connection >= 8_192,
            "upload {n}: the client may send {} bytes of a {window}-byte connection window \
             and no WINDOW_UPDATE comes",
            credit.connection,
        );
        raw.headers(id, &req("POST", "/count"), false);
        raw.data(id, &[b'x'; 8_192], true);
        credit.connection -= 8_192;
        lowest = lowest.min(credit.connection);
        assert_eq!(credit.wait_done(&mut raw, id), 200, "upload {n}");
        id += 2;
    }
    // The server announces once more than half its window is pending.
    assert!(lowest > window / 2 - 2 * 16_384, "the credit fell to {lowest} of {window}");
    server.stop();
}

#[test]
fn an_untaken_lent_body_gives_its_credit_back() {
    untaken_bodies_then_uploads(Untaken { panic: false }, 65_535, 3, false, Shape::Whole);
}

#[test]
fn a_panicking_respond_gives_its_lent_body_credit_back() {
    untaken_bodies_then_uploads(Untaken { panic: true }, 65_535, 3, false, Shape::Whole);
}

/// A lent body refused past `max_body` before `respond` ran (a second
/// review, hunting credit along every body path): the 413 did not look at
/// the body's offer, and the bytes in its pipe stayed counted.
#[test]
fn a_lent_body_refused_past_max_body_gives_its_credit_back() {
    untaken_bodies_then_uploads(Untaken { panic: false }, 65_535, 6, false, Shape::PastMaxBody);
}

/// The default 1 MiB window, 60 untaken bodies: before, a quarter of the
/// window stayed counted for good.
#[test]
fn sixty_untaken_bodies_leave_the_default_window_whole() {
    untaken_bodies_then_uploads(Untaken { panic: false }, 1 << 20, 60, true, Shape::Whole);
    untaken_bodies_then_uploads(Untaken { panic: true }, 1 << 20, 60, true, Shape::Whole);
}
