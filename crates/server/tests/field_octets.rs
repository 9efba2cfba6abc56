//! A field value's octets get the same verdict over HTTP/1.1 (`400`) and
//! HTTP/2 (RST_STREAM PROTOCOL_ERROR): every control octet but tab, and
//! DEL, refused; tab inside and obs-text taken (RFC 9110 5.5, RFC 9113
//! 8.2.1). In plain fields, pseudo-fields, trailers, cookie crumbs and the
//! h2c upgrade.

mod common;

use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, literal};
use common::{Client, Echo, serve};
use falconet_server::Options;
use falconet_server::h2::frame::{self, PREFACE, kind};

/// Status of an HTTP/2 answer on `stream`, or `RST(code)` / `GOAWAY(code)`.
fn h2_fate(raw: &mut Raw, stream: u32) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match raw.next(left) {
            Event::Frame(f) if f.kind == kind::HEADERS => {
                let mut status = String::new();
                raw.decoder
                    .decode(&f.payload, |field| {
                        if field.name == b":status" {
                            status = String::from_utf8_lossy(field.value).into_owned();
                        }
                    })
                    .unwrap();
                if f.stream == stream {
                    return status;
                }
            }
            Event::Frame(f) if f.stream == stream && f.kind == kind::RST_STREAM => {
                return format!("RST({})", f.code());
            }
            Event::Frame(f) if f.kind == kind::GOAWAY => return format!("GOAWAY({})", f.code()),
            Event::Frame(_) => {}
            other => return format!("{other:?}"),
        }
    }
}

fn h2_request(addr: std::net::SocketAddr, fields: &[(&[u8], &[u8])]) -> String {
    let mut raw = Raw::handshake(addr, &[]);
    let mut block = Vec::new();
    for (n, v) in fields {
        literal(&mut block, n, v);
    }
    raw.headers(1, &block, true);
    h2_fate(&mut raw, 1)
}

fn http1_request(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut client = Client::connect(addr);
    client.send(request);
    match client.reply() {
        Ok(reply) => reply.status.to_string(),
        Err(e) => format!("{e}"),
    }
}

/// HTTP/1.1 `400` and HTTP/2 reset, or both served: never one of each.
fn same_verdict(http1: &str, h2: &str) -> bool {
    match (http1, h2) {
        ("200", "200") => true,
        ("400", h2) => h2 == "RST(1)" || h2 == "400",
        _ => false,
    }
}

const BASE: [(&[u8], &[u8]); 4] =
    [(b":method", b"GET"), (b":scheme", b"http"), (b":path", b"/x"), (b":authority", b"h")];

/// Every octet inside a regular field's value (CR and LF left out: they
/// end an HTTP/1 line): HTTP/2 decides as HTTP/1.1 does.
#[test]
fn every_octet_in_a_value_gets_the_same_verdict_over_both_versions() {
    let server = serve(Options::new().workers(1), Echo);
    let mut differ = Vec::new();
    for b in 0u8..=255 {
        if b == b'\r' || b == b'\n' {
            continue;
        }
        let value = [b'a', b, b'b'];
        let mut request = b"GET /x HTTP/1.1\r\nHost: h\r\nx-v: ".to_vec();
        request.extend_from_slice(&value);
        request.extend_from_slice(b"\r\n\r\n");
        let http1 = http1_request(server.addr, &request);
        let mut fields = BASE.to_vec();
        fields.push((b"x-v", &value));
        let h2 = h2_request(server.addr, &fields);
        if !same_verdict(&http1, &h2) {
            differ.push(format!("{b:#04x}: http1 {http1}, h2 {h2}"));
        }
        // CTL but tab, and DEL: refused; tab and obs-text: served.
        let refused = (b < 0x20 && b != b'\t') || b == 0x7f;
        assert_eq!(h2 != "200", refused, "{b:#04x}: h2 {h2}");
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

/// The same for the request target (`:path` against the request line),
/// over the control octets and DEL that the commit is about, and obs-text.
#[test]
fn control_octets_in_the_path_get_the_same_verdict_over_both_versions() {
    let server = serve(Options::new().workers(1), Echo);
    let mut differ = Vec::new();
    for b in (0u8..0x20).chain([0x7f, 0x80, 0xe9, 0xff]) {
        if b == b'\r' || b == b'\n' || b == b'\t' {
            continue; // the request line's own delimiters (tab: a separator for some parsers)
        }
        let path = [b'/', b'a', b, b'b'];
        let mut request = b"GET ".to_vec();
        request.extend_from_slice(&path);
        request.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\n\r\n");
        let http1 = http1_request(server.addr, &request);
        let mut fields = BASE.to_vec();
        fields[2] = (b":path", &path);
        let h2 = h2_request(server.addr, &fields);
        if !same_verdict(&http1, &h2) {
            differ.push(format!("{b:#04x}: http1 {http1}, h2 {h2}"));
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

/// Cookie crumbs are checked like any value (before they are joined): a
/// crumb with 0x01 resets the stream, a crumb with obs-text or an inner
/// tab is served.
#[test]
fn cookie_crumbs_are_checked_like_any_value() {
    let server = serve(Options::new().workers(1), Echo);
    let cases: [(&[u8], &str); 4] = [
        (b"a=\x01", "RST(1)"),
        (b"a=\x7f", "RST(1)"),
        (b"a=caf\xc3\xa9", "200"),
        (b"a=1\tb", "200"),
    ];
    for (crumb, want) in cases {
        let mut fields = BASE.to_vec();
        fields.push((b"cookie", b"z=0"));
        fields.push((b"cookie", crumb));
        assert_eq!(h2_request(server.addr, &fields), want, "{crumb:?}");
    }
}

/// Trailers over HTTP/2: a control octet resets the stream (PROTOCOL_ERROR,
/// 8.1 and 8.2.1); tab and obs-text are served.
#[test]
fn h2_trailer_values_are_checked_as_header_values() {
    let server = serve(Options::new().workers(1), Echo);
    let cases: [(&[u8], &str); 5] = [
        (b"a\x01b", "RST(1)"),
        (b"a\x7fb", "RST(1)"),
        (b"a\x00b", "RST(1)"),
        (b"a\tb", "200"),
        (b"a\xe9b", "200"),
    ];
    for (value, want) in cases {
        let mut raw = Raw::handshake(server.addr, &[]);
        let mut head = Vec::new();
        for (n, v) in [
            (&b":method"[..], &b"POST"[..]),
            (b":scheme", b"http"),
            (b":path", b"/echo"),
            (b":authority", b"h"),
        ] {
            literal(&mut head, n, v);
        }
        raw.headers(1, &head, false);
        raw.data(1, b"abc", false);
        let mut trailers = Vec::new();
        literal(&mut trailers, b"x-t", value);
        raw.headers(1, &trailers, true);
        assert_eq!(h2_fate(&mut raw, 1), want, "{value:?}");
    }
}

/// HTTP/1.1 trailers with the same octets, for the comparison (reported,
/// asserted only for the verdict the h2 side gives).
#[test]
fn http1_trailer_values_compared() {
    let server = serve(Options::new().workers(1), Echo);
    let mut got = Vec::new();
    for value in [&b"a\x01b"[..], b"a\x7fb", b"a\x00b", b"a\tb", b"a\xe9b"] {
        let mut request =
            b"POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-t: "
                .to_vec();
        request.extend_from_slice(value);
        request.extend_from_slice(b"\r\n\r\n");
        got.push((
            String::from_utf8_lossy(value).into_owned(),
            http1_request(server.addr, &request),
        ));
    }
    eprintln!("HTTP/1.1 trailers: {got:?}");
    let verdict = |i: usize| got[i].1.as_str();
    assert!(verdict(0) != "200" && verdict(1) != "200" && verdict(2) != "200", "{got:?}");
    assert_eq!((verdict(3), verdict(4)), ("200", "200"), "{got:?}");
}

/// What an h2c upgrade request with `value` in a field gets: the HTTP/1
/// status line's code, and for a 101 the status on stream 1.
fn upgrade_with(addr: std::net::SocketAddr, value: &[u8]) -> (String, String) {
    let mut raw = Raw::connect(addr);
    let mut out = b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\nx-v: ".to_vec();
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(PREFACE);
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    let head = raw.read_http1_head();
    let code = head.get(9..12).unwrap_or("").to_string();
    if code != "101" {
        return (code, String::new());
    }
    (code, h2_fate(&mut raw, 1))
}

/// The h2c upgrade: the request is parsed as HTTP/1 (control octets: 400,
/// never a 101), and a value HTTP/1 takes (tab inside, obs-text) upgrades
/// and is served on stream 1 (the converted head does not refuse it).
#[test]
fn the_upgrade_path_agrees() {
    let server = serve(Options::new().workers(1), Echo);
    assert_eq!(upgrade_with(server.addr, b"a\x01b").0, "400");
    assert_eq!(upgrade_with(server.addr, b"a\x7fb").0, "400");
    assert_eq!(upgrade_with(server.addr, b"a\tb"), ("101".into(), "200".into()));
    assert_eq!(upgrade_with(server.addr, b"caf\xe9"), ("101".into(), "200".into()));
    assert_eq!(upgrade_with(server.addr, b"caf\xc3\xa9"), ("101".into(), "200".into()));
    // A field whose value is only whitespace: empty after trimming, which
    // both sides take.
    assert_eq!(upgrade_with(server.addr, b"  "), ("101".into(), "200".into()));
}
