//! Review of d8173ad (a request-target byte past ASCII is 400 / malformed)
//! and 954d164 (a Host naming no host beside an origin-form or
//! asterisk-form target is 400; HTTP/2 `:authority: :80`, an empty `host`
//! standing for `:authority`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::h2raw::{self, Event, Raw};
use common::{Client, Echo, options, serve};
use falconet_server::h2::frame::kind;

/// The status line and body of the first answer to `request` on a fresh
/// connection (the connection is then dropped).
fn answer(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut client = Client::connect(addr);
    client.send(request);
    match client.reply() {
        Ok(reply) => (reply.status, reply.text()),
        Err(e) => (0, format!("{e}")),
    }
}

/// The first bytes the server answers `request` with (for 101s and the
/// like, which `Client::reply` does not read).
fn first_line(addr: SocketAddr, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(request).unwrap();
    let mut buf = [0u8; 64];
    let n = tcp.read(&mut buf).unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    text.lines().next().unwrap_or("").to_string()
}

fn get(target: &[u8], version: &str, host: Option<&[u8]>) -> Vec<u8> {
    let mut r = b"GET ".to_vec();
    r.extend_from_slice(target);
    r.extend_from_slice(format!(" HTTP/{version}\r\n").as_bytes());
    if let Some(host) = host {
        r.extend_from_slice(b"Host: ");
        r.extend_from_slice(host);
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(b"\r\n");
    r
}

#[test]
fn review_percent_encoded_and_browser_bytes_are_still_served() {
    let server = serve(options(), Echo);
    for target in ["/caf%C3%A9", "/%FF", "/?q=%E2%82%AC", "/a|b^c`d{e}\\f", "/?x=~!$&'()*+,;=:@/?"]
    {
        let got = answer(server.addr, &get(target.as_bytes(), "1.1", Some(b"a")));
        assert_eq!(got, (200, target.to_string()), "{target}");
    }
}

#[test]
fn review_bytes_past_ascii_are_400_on_every_path() {
    let server = serve(options(), Echo);
    let cases: &[&[u8]] = &[
        b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET /caf\xc3\xa9 HTTP/1.0\r\n\r\n",
        b"GET /?q=\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://a/?q=\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://caf\xc3\xa9/ HTTP/1.1\r\nHost: a\r\n\r\n",
        b"OPTIONS *\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"HEAD /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"POST /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
        // A single non-UTF-8 byte in the middle of an otherwise fine target.
        b"GET /a\x80b HTTP/1.1\r\nHost: a\r\n\r\n",
    ];
    for request in cases {
        let (status, _) = answer(server.addr, request);
        assert_eq!(status, 400, "{:?}", String::from_utf8_lossy(request));
    }
    // CONNECT's authority-form with a byte past ASCII: 400, not 501.
    let (status, _) = answer(server.addr, b"CONNECT caf\xc3\xa9:443 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(status, 400);
}

/// The h2c upgrade turns the request into stream 1: a target with a byte
/// past ASCII, or a Host naming no host, must be refused, not upgraded.
#[test]
fn review_h2c_upgrade_does_not_bypass_the_checks() {
    let server = serve(options(), Echo);
    let upgrade = |target: &[u8], host: &[u8]| {
        let mut r = b"GET ".to_vec();
        r.extend_from_slice(target);
        r.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        r.extend_from_slice(host);
        r.extend_from_slice(
            b"\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n",
        );
        r
    };
    // The control: a clean request is upgraded.
    assert!(first_line(server.addr, &upgrade(b"/x", b"a")).starts_with("HTTP/1.1 101"));
    for (target, host) in
        [(&b"/caf\xc3\xa9"[..], &b"a"[..]), (b"/x", b""), (b"/x", b":80"), (b"/x", b":")]
    {
        let line = first_line(server.addr, &upgrade(target, host));
        assert!(
            line.starts_with("HTTP/1.1 400"),
            "{:?} Host {:?}: {line}",
            String::from_utf8_lossy(target),
            String::from_utf8_lossy(host)
        );
    }
}

#[test]
fn review_host_forms() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    // Served, the authority as sent.
    for host in [&b"[::1]"[..], b"[::1]:80", b"a:", b"a:80", b"127.0.0.1:0"] {
        let got = answer(addr, &get(b"/authority", "1.1", Some(host)));
        assert_eq!(got, (200, String::from_utf8_lossy(host).into_owned()), "{host:?}");
    }
    // No host named: 400, in 1.1 and 1.0, origin-form and asterisk-form.
    for host in [&b""[..], b":", b":80", b":0"] {
        for version in ["1.1", "1.0"] {
            let got = answer(addr, &get(b"/authority", version, Some(host)));
            assert_eq!(got.0, 400, "{version} Host {:?}: {got:?}", String::from_utf8_lossy(host));
        }
        let mut options = b"OPTIONS * HTTP/1.1\r\nHost: ".to_vec();
        options.extend_from_slice(host);
        options.extend_from_slice(b"\r\n\r\n");
        let got = answer(addr, &options);
        assert_eq!(got.0, 400, "OPTIONS * Host {:?}: {got:?}", String::from_utf8_lossy(host));
    }
    // Beside an absolute-form target, ignored (1.1 and 1.0).
    for host in [&b""[..], b":80"] {
        for version in ["1.1", "1.0"] {
            let got = answer(addr, &get(b"http://t.example/authority", version, Some(host)));
            assert_eq!(got, (200, "t.example".to_string()), "{version} {host:?}");
        }
    }
    // HTTP/1.0 without Host: served, authority empty.
    assert_eq!(answer(addr, &get(b"/authority", "1.0", None)), (200, String::new()));
    // CONNECT with an empty Host: still 501 (no tunnels), not 400.
    let got = answer(addr, b"CONNECT a:443 HTTP/1.1\r\nHost: \r\n\r\n");
    assert_eq!(got.0, 501, "{got:?}");
}

/// What became of stream `id`: its status, or `Err(code)` for a reset,
/// or `Err(u32::MAX)` for a GOAWAY / close / nothing in 3 s.
fn fate(raw: &mut Raw, id: u32) -> Result<(u16, Vec<u8>), u32> {
    let end = Instant::now() + Duration::from_secs(3);
    let mut status = None;
    let mut body = Vec::new();
    while Instant::now() < end {
        match raw.next(Duration::from_millis(50)) {
            Event::Frame(f) => {
                if f.kind == kind::HEADERS {
                    let mut s = 0;
                    let _ = raw.decoder.decode(&f.payload, |field| {
                        if field.name == b":status" {
                            s = String::from_utf8_lossy(field.value).parse().unwrap_or(0);
                        }
                    });
                    if f.stream == id {
                        status = Some(s);
                    }
                }
                if f.kind == kind::GOAWAY {
                    return Err(u32::MAX);
                }
                if f.stream != id {
                    continue;
                }
                if f.kind == kind::RST_STREAM && status.is_none() {
                    return Err(f.code());
                }
                if f.kind == kind::DATA {
                    body.extend_from_slice(&f.payload);
                }
                if f.end_stream() {
                    return Ok((status.unwrap_or(0), body));
                }
            }
            Event::Eof => return Err(u32::MAX),
            Event::Timeout => {}
        }
    }
    Err(u32::MAX)
}

const PROTOCOL_ERROR: u32 = 1;

#[test]
fn review_h2_authority_and_host_shapes() {
    let server = serve(options(), Echo);
    let mut raw = Raw::handshake(server.addr, &[]);
    let base = [(":method", "GET"), (":scheme", "http"), (":path", "/authority")];
    let mut id = 1;
    let mut run = |extra: &[(&str, &str)]| {
        let mut fields: Vec<(&str, &str)> = base.to_vec();
        fields.extend_from_slice(extra);
        raw.headers(id, &h2raw::block(&fields), true);
        let got = fate(&mut raw, id);
        id += 2;
        got
    };
    let ok = |a: &str| Ok((200, a.as_bytes().to_vec()));
    assert_eq!(run(&[(":authority", ":80")]), Err(PROTOCOL_ERROR));
    assert_eq!(run(&[(":authority", ":")]), Err(PROTOCOL_ERROR));
    assert_eq!(run(&[(":authority", "")]), Err(PROTOCOL_ERROR));
    assert_eq!(run(&[("host", "")]), Err(PROTOCOL_ERROR));
    assert_eq!(run(&[("host", ":80")]), Err(PROTOCOL_ERROR));
    assert_eq!(run(&[(":authority", "a"), ("host", "")]), Err(PROTOCOL_ERROR));
    assert_eq!(run(&[(":authority", "[::1]")]), ok("[::1]"));
    assert_eq!(run(&[(":authority", "a:")]), ok("a:"));
    assert_eq!(run(&[("host", "[::1]:8")]), ok("[::1]:8"));
    assert_eq!(run(&[(":authority", "a"), ("host", "a")]), ok("a"));
    // Neither :authority nor host: served, the authority empty (the
    // handler docs say "empty only when there is neither (an HTTP/1.0
    // request without Host)").
    assert_eq!(run(&[]), ok(""));
}

#[test]
fn review_h2_paths() {
    let server = serve(options(), Echo);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut id = 1;
    let mut run = |method: &str, path: &str| {
        raw.headers(id, &h2raw::req(method, path), true);
        let got = fate(&mut raw, id);
        id += 2;
        got
    };
    assert_eq!(run("GET", "/caf%C3%A9"), Ok((200, b"/caf%C3%A9".to_vec())));
    assert_eq!(run("GET", "/caf\u{e9}"), Err(PROTOCOL_ERROR));
    assert_eq!(run("GET", "/?q=\u{20ac}"), Err(PROTOCOL_ERROR));
    assert_eq!(run("GET", "/a|b^c`d{e}\\f"), Ok((200, b"/a|b^c`d{e}\\f".to_vec())));
    assert_eq!(run("GET", "/after"), Ok((200, b"/after".to_vec())));
}

/// An empty Host with `Expect: 100-continue`: 400 first, never a 100
/// (the client must not send its body into a refused request).
#[test]
fn review_empty_host_with_expect_gets_400_not_100() {
    let server = serve(options(), Echo);
    let line = first_line(
        server.addr,
        b"POST /echo HTTP/1.1\r\nHost: \r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    );
    assert!(line.starts_with("HTTP/1.1 400"), "{line}");
}

/// HTTP/1.0 without Host, asterisk-form and origin-form: served.
#[test]
fn review_http10_without_host_is_served() {
    let server = serve(options(), Echo);
    let (status, _) = answer(server.addr, b"OPTIONS * HTTP/1.0\r\n\r\n");
    assert!(status < 400, "{status}");
    assert_eq!(answer(server.addr, b"GET /x HTTP/1.0\r\n\r\n"), (200, "/x".to_string()));
}

/// HTTP/2 `OPTIONS` with `:path: *` and a byte past ASCII after it.
#[test]
fn review_h2_asterisk_paths() {
    let server = serve(options(), Echo);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("OPTIONS", "*\u{e9}"), true);
    assert_eq!(fate(&mut raw, 1).err(), Some(PROTOCOL_ERROR));
    raw.headers(3, &h2raw::req("OPTIONS", "*"), true);
    assert!(fate(&mut raw, 3).is_ok_and(|(status, _)| status < 400));
}
