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
use common::{Echo, connect, options, serve};
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
