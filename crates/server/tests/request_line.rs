//! [`Options::max_request_line`] over both protocols. HTTP/2 has no
//! request line: a request is held to the HTTP/1.1 line of its `:method`
//! and `:path` (`METHOD SP path SP HTTP/1.1`), as Kestrel holds HTTP/2 to
//! its request-line limit, so one URL gets one answer either way: within
//! the limit it is served, one byte over it gets `414`, and a method too
//! long for a line with any target gets `501`. Over HTTP/2 the refusal is
//! the stream's answer; the connection goes on.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::h2raw::{Credit, Raw, req, req_with};
use common::{Echo, connect, options, serve, text};
use falconet_server::h2::frame::kind;
use falconet_server::hello::Hello;
use falconet_server::{DEFAULT_MAX_REQUEST_LINE, MIN_REQUEST_LINE};

/// `METHOD SP` and `SP HTTP/1.1`: the line's bytes besides its method and
/// target.
const AROUND: usize = " HTTP/1.1".len() + 1;

/// The status an HTTP/1.1 request gets (the server closes after a
/// refusal; `Connection: close` ends an answered one).
fn over_http1(addr: std::net::SocketAddr, method: &str, path: &str) -> u16 {
    let mut stream = connect(addr);
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let head = String::from_utf8_lossy(&answer);
    head.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP/1.1 answer: {head:.200}"))
}

/// The status an HTTP/2 request on stream 1 gets; then stream 3, a
/// `GET /plaintext`, must be answered 200 on the same connection.
fn over_http2(addr: std::net::SocketAddr, method: &str, path: &str) -> u16 {
    let mut raw = Raw::handshake(addr, &[]);
    let mut credit = Credit::new();
    raw.headers(1, &req_with(method, path, &[]), true);
    let status = credit.wait_done(&mut raw, 1);
    raw.headers(3, &req("GET", "/plaintext"), true);
    assert_eq!(credit.wait_done(&mut raw, 3), 200, "the connection goes on after {status}");
    assert!(credit.resets.is_empty(), "{:?}", credit.resets);
    status
}

/// A path that makes `method`'s line `len` bytes long.
fn path_for(method: &str, len: usize) -> String {
    format!("/{}", "a".repeat(len - method.len() - AROUND - 1))
}

#[test]
fn a_url_gets_the_same_answer_over_http1_and_http2_at_each_edge_of_the_limit() {
    for limit in [MIN_REQUEST_LINE, 1000, DEFAULT_MAX_REQUEST_LINE] {
        // Echo answers 200 to any method and path it is given.
        let server = serve(options().max_request_line(limit), Echo);
        // The longest method a line with `/` still holds.
        let longest = "M".repeat(limit - AROUND - 1);
        let cases = [
            // Exactly at the limit: served.
            ("GET", path_for("GET", limit), 200),
            ("POST", path_for("POST", limit), 200),
            // A byte over it.
            ("GET", path_for("GET", limit + 1), 414),
            ("POST", path_for("POST", limit + 1), 414),
            // The longest method, then one byte more: too long for a line
            // with any target.
            (longest.as_str(), "/".to_string(), 200),
            (&*format!("{longest}M"), "/".to_string(), 501),
        ];
        for (method, path, expected) in &cases {
            let what = format!("limit {limit}, {} + {} bytes", method.len(), path.len());
            assert_eq!(over_http1(server.addr, method, path), *expected, "HTTP/1.1, {what}");
            assert_eq!(over_http2(server.addr, method, path), *expected, "HTTP/2, {what}");
        }
        server.stop();
    }
}

#[test]
fn the_default_limit_refuses_a_9_kib_path_over_http2() {
    let server = serve(options(), Hello);
    let path = format!("/{}", "a".repeat(9 * 1024));
    assert_eq!(over_http2(server.addr, "GET", &path), 414);
    assert_eq!(over_http1(server.addr, "GET", &path), 414);
    server.stop();
}

/// A field block with END_STREAM, in frames of 16,000 bytes at most.
fn send_block(raw: &mut Raw, id: u32, block: &[u8]) {
    let pieces: Vec<&[u8]> = block.chunks(16_000).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let end_headers = if i + 1 == pieces.len() { 0x4 } else { 0 };
        let (kind, end_stream) =
            if i == 0 { (kind::HEADERS, 0x1) } else { (kind::CONTINUATION, 0) };
        raw.frame(kind, end_stream | end_headers, id, piece);
    }
}

/// A request past both the line and the head limits gets what HTTP/1.1
/// judges first, the line's `414` (or `501` for the method). A `:path`
/// too long for the header list itself is not kept, and HTTP/2 answers
/// that `431`, on the stream, where HTTP/1.1 still reads the line and
/// answers `414`: a status either way, and the connection goes on.
#[test]
fn the_line_is_judged_before_the_head() {
    let server = serve(options(), Echo);
    // 90 fields of 250 bytes: the block (about 31 KB with the line) fits
    // the compressed cap, while the header list, each field +32, passes
    // the 32 KiB limit. HTTP/1.1 counts 91 lines (under 100) and 31 KB.
    let filler: Vec<(String, String)> =
        (0..90).map(|i| (format!("x-{i}"), "v".repeat(250))).collect();
    let fields: Vec<(&str, &str)> = filler.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let long_path = path_for("GET", DEFAULT_MAX_REQUEST_LINE + 1);
    let long_method = "M".repeat(DEFAULT_MAX_REQUEST_LINE - AROUND);
    for (method, path, expected) in [("GET", long_path.as_str(), 414), (&*long_method, "/", 501)] {
        let mut raw = Raw::handshake(server.addr, &[]);
        let mut credit = Credit::new();
        send_block(&mut raw, 1, &req_with(method, path, &fields));
        assert_eq!(
            credit.wait_done(&mut raw, 1),
            expected,
            "HTTP/2, {} + {}",
            method.len(),
            path.len()
        );
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: x\r\n");
        for (name, value) in &fields {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        let mut stream = connect(server.addr);
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.write_all(format!("{request}\r\n").as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let status = format!("HTTP/1.1 {expected} ");
        assert!(answer.starts_with(status.as_bytes()), "HTTP/1.1: {:.80}", text(&answer));
    }
    // Past the header list (32 KiB by default) in CONTINUATIONs.
    let huge = format!("/{}", "a".repeat(32_700));
    let mut raw = Raw::handshake(server.addr, &[]);
    send_block(&mut raw, 1, &req("GET", &huge));
    let mut credit = Credit::new();
    assert_eq!(credit.wait_done(&mut raw, 1), 431);
    raw.headers(3, &req("GET", "/plaintext"), true);
    assert_eq!(credit.wait_done(&mut raw, 3), 200, "the connection goes on");
    assert!(credit.resets.is_empty(), "{:?}", credit.resets);
    assert_eq!(over_http1(server.addr, "GET", &huge), 414);
    server.stop();
}
