//! RFC 9112 strictness over real TCP: what a smuggling suite sends (chunk
//! sizes a proxy could read another way, chunk extensions and trailers,
//! Host values, request-target forms, framing a server MUST refuse) gets
//! `400` and a graceful close, and nothing pipelined behind it is
//! answered; what the RFC requires a server to accept (absolute-form,
//! valid extensions and trailers, an empty Host beside an absolute-form
//! target) is served. The table of
//! requirements that points at these tests: `docs/rfc9112.md`.

mod common;

use std::net::SocketAddr;

use common::{Client, Echo, Reply, echo_of, options, refused, serve};

/// A valid request pipelined behind a refused one: it must not be answered
/// (RFC 9112 §9.6: after a response with "close", no further request is
/// processed).
const FOLLOW_UP: &[u8] = b"GET /after HTTP/1.1\r\nHost: t\r\n\r\n";

/// `request` is refused with `status`, and the request pipelined behind it
/// is not answered.
fn refused_alone(addr: SocketAddr, request: &[u8], status: u16) {
    refused(addr, &[request, FOLLOW_UP].concat(), status);
}

/// `request` is answered with 200, and the connection goes on serving.
fn served(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut client = Client::connect(addr);
    client.send(request);
    let reply =
        client.reply().unwrap_or_else(|e| panic!("{e} for {:?}", String::from_utf8_lossy(request)));
    assert_eq!(reply.status, 200, "for {:?}: {}", String::from_utf8_lossy(request), reply.text());
    assert!(!reply.closes(), "for {:?}", String::from_utf8_lossy(request));
    assert_eq!(client.get("/next").text(), "/next", "the connection goes on");
    reply
}

/// A chunked POST to `/echo` with `body` (the chunked body, raw).
fn chunked(body: &[u8]) -> Vec<u8> {
    [&b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"[..], body].concat()
}

/// RFC 9112 §7.1: `chunk = chunk-size [ chunk-ext ] CRLF ...`. After the
/// hex digits only a chunk extension (`BWS ";" ...`) or CRLF may follow;
/// a proxy in front could read `5 0` as 0x50 or `5\t` as 5.
#[test]
fn chunk_sizes_follow_the_grammar() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for body in [
        &b"5 0\r\nhello\r\n0\r\n\r\n"[..],
        b"5 \r\nhello\r\n0\r\n\r\n",
        b"5\t\r\nhello\r\n0\r\n\r\n",
        b"5x\r\nhello\r\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\rhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"+5\r\nhello\r\n0\r\n\r\n",
        b"-5\r\nhello\r\n0\r\n\r\n",
        b" 5\r\nhello\r\n0\r\n\r\n",
        b"5,5\r\nhello\r\n0\r\n\r\n",
        // 17 hex digits: past a u64 (an overflow would wrap to 5).
        b"10000000000000005\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\r\n0 \r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r \n",
    ] {
        refused_alone(addr, &chunked(body), 400);
    }
    server.stop();
}

/// RFC 9112 §7.1.1: `chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "="
/// BWS chunk-ext-val ] )`, a name a token, a value a token or a
/// quoted-string. Valid ones are ignored; the rest is 400, and so are
/// extensions past their bounds (a known DoS: bytes that never count
/// against the body limit).
#[test]
fn chunk_extensions_are_validated_and_bounded() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for body in [
        &b"5;a\r\nhello\r\n0\r\n\r\n"[..],
        b"5;a=b\r\nhello\r\n0\r\n\r\n",
        b"5 ; a = b ;c\r\nhello\r\n0;last\r\n\r\n",
        b"5;a=\"quoted \\\" string; with = signs\"\r\nhello\r\n0\r\n\r\n",
        b"5\t;\ta\t=\t\"\"\r\nhello\r\n0\r\n\r\n",
    ] {
        let reply = served(addr, &chunked(body));
        assert_eq!(reply.text(), echo_of(b"hello"), "{:?}", String::from_utf8_lossy(body));
    }
    for body in [
        &b"5;\r\nhello\r\n0\r\n\r\n"[..],
        b"5;;a\r\nhello\r\n0\r\n\r\n",
        b"5;a=\r\nhello\r\n0\r\n\r\n",
        b"5;a b\r\nhello\r\n0\r\n\r\n",
        b"5;a=b c\r\nhello\r\n0\r\n\r\n",
        b"5;a \r\nhello\r\n0\r\n\r\n",
        b"5;a=b \r\nhello\r\n0\r\n\r\n",
        b"5;a=\"b\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"b\"c\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"\x01\"\r\nhello\r\n0\r\n\r\n",
        b"5;a@b\r\nhello\r\n0\r\n\r\n",
        b"5;a=b\rc\r\nhello\r\n0\r\n\r\n",
        b"5;a=b\nhello\r\n0\r\n\r\n",
    ] {
        refused_alone(addr, &chunked(body), 400);
    }
    // One size line with 5000 bytes of extensions.
    let long = format!("5;a={}\r\nhello\r\n0\r\n\r\n", "x".repeat(5000));
    refused_alone(addr, &chunked(long.as_bytes()), 400);
    // Many size lines, each within bounds, over 64 KiB in the body.
    let mut many = Vec::new();
    for _ in 0..40 {
        many.extend_from_slice(format!("1;a={}\r\nx\r\n", "y".repeat(2000)).as_bytes());
    }
    many.extend_from_slice(b"0\r\n\r\n");
    refused_alone(addr, &chunked(&many), 400);
    server.stop();
}

/// RFC 9112 §7.1.2: `trailer-section = *( field-line CRLF )`: trailer
/// lines are header field lines (a token, a colon with no whitespace
/// before it, a value without CTLs, no obs-fold), bounded like a head.
/// They are read and discarded (never merged into the header section).
#[test]
fn trailer_fields_are_validated_and_bounded() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for trailers in [
        &b"X-Sum: 1\r\n"[..],
        b"X-Sum:1\r\nX-Other: a b\tc\r\n",
        b"X-Empty:\r\n",
        b"X-Obs: caf\xc3\xa9\r\n",
    ] {
        let body = [&b"5\r\nhello\r\n0\r\n"[..], trailers, b"\r\n"].concat();
        assert_eq!(served(addr, &chunked(&body)).text(), echo_of(b"hello"));
    }
    for trailers in [
        &b"bad trailer\r\n"[..],
        b"X-Sum : 1\r\n",
        b": no name\r\n",
        b"X-Sum: 1\r\n folded\r\n",
        b" X-Sum: 1\r\n",
        b"X-Sum: a\x00b\r\n",
        b"X-Sum: a\rb\r\n",
        b"X-Sum: a\x7fb\r\n",
        b"X\x01: 1\r\n",
    ] {
        let body = [&b"5\r\nhello\r\n0\r\n"[..], trailers, b"\r\n"].concat();
        refused_alone(addr, &chunked(&body), 400);
    }
    let big = format!("5\r\nhello\r\n0\r\nX-Big: {}\r\n\r\n", "b".repeat(9000));
    refused_alone(addr, &chunked(big.as_bytes()), 400);
    let many: String = (0..200).map(|i| format!("X-{i}: v\r\n")).collect();
    let body = format!("5\r\nhello\r\n0\r\n{many}\r\n");
    refused_alone(addr, &chunked(body.as_bytes()), 400);
    server.stop();
}

/// RFC 9112 §3.2: a server MUST respond 400 to an HTTP/1.1 request without
/// Host, and to any request with more than one Host line or an invalid
/// Host value; valid is `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986
/// §3.2.2), and empty when the target URI has no authority.
#[test]
fn host_values_are_validated() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for host in [
        &b"example.com"[..],
        b"example.com:8080",
        b"example.com:",
        b"127.0.0.1",
        b"127.0.0.1:80",
        b"[::1]",
        b"[::1]:8080",
        b"[2001:db8::7]",
        b"[v1.fe80::a+en1]",
        b"xn--bcher-kva.example",
        b"a-b_c~d.e!$&'()*+,;=",
        b"%41%62c",
    ] {
        let request = [&b"GET /h HTTP/1.1\r\nHost: "[..], host, b"\r\n\r\n"].concat();
        assert_eq!(served(addr, &request).text(), "/h", "{:?}", String::from_utf8_lossy(host));
    }
    for host in [
        &b"a b"[..],
        b"a/b",
        b"a?b",
        b"a#b",
        b"user@a",
        b"user:pass@a",
        b"a:b",
        b"a:80:80",
        b"a:80a",
        b"http://a",
        b"[::1",
        b"::1",
        b"[::1]x",
        b"[::1]:a",
        b"[zz::1]",
        b"[1.2.3.4]",
        b"[v1.]",
        b"a%zz",
        b"a%4",
        b"a\"b",
        b"a\\b",
        b"a<b>",
        b"caf\xc3\xa9",
        b"a\tb",
        // No host: the target URI would be an `http` URI with an empty
        // host, which RFC 9110 §4.2.1 has a recipient reject (§3.3 allows
        // it; Http11Probe's COMP-HOST-EMPTY-VALUE expects it).
        b"",
        b":80",
    ] {
        let request = [&b"GET /h HTTP/1.1\r\nHost: "[..], host, b"\r\n\r\n"].concat();
        refused_alone(addr, &request, 400);
    }
    // Over HTTP/1.0 as well; an absolute-form target names the host, so
    // the empty Host beside it is ignored (§3.2.2), and an HTTP/1.0
    // request without Host leaves the authority unknown: both served.
    refused_alone(addr, b"GET /h HTTP/1.0\r\nHost: \r\n\r\n", 400);
    assert_eq!(served(addr, b"GET http://a/h HTTP/1.1\r\nHost: \r\n\r\n").text(), "/h");
    assert_eq!(served(addr, b"GET /h HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").text(), "/h");
    // More than one Host line, in HTTP/1.1 and in HTTP/1.0 alike ("any
    // request message"), even when they agree; an invalid Host in 1.0.
    for request in [
        &b"GET /h HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"[..],
        b"GET /h HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET /h HTTP/1.0\r\nHost: a b\r\n\r\n",
        b"GET /h HTTP/1.1\r\n\r\n",
    ] {
        refused_alone(addr, request, 400);
    }
    server.stop();
}

/// RFC 9112 §3.2.2: a server MUST accept the absolute-form; the handler
/// sees the path and query, the authority comes from the target, and the
/// Host field's value is ignored (it must still be there, and valid, in
/// HTTP/1.1: §3.2). §3.2.3-3.2.4: authority-form only with CONNECT, which
/// this server does not tunnel (501); asterisk-form only with OPTIONS.
#[test]
fn request_target_forms() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for (request, target) in [
        (&b"GET http://a/x?y=1 HTTP/1.1\r\nHost: a\r\n\r\n"[..], "/x?y=1"),
        (b"GET http://a/x HTTP/1.1\r\nHost: other.example\r\n\r\n", "/x"),
        (b"GET HTTP://A:8080/x HTTP/1.1\r\nHost: a:8080\r\n\r\n", "/x"),
        (b"GET https://a/x HTTP/1.1\r\nHost: a\r\n\r\n", "/x"),
        (b"GET http://a HTTP/1.1\r\nHost: a\r\n\r\n", "/"),
        (b"GET http://[::1]:80/x HTTP/1.1\r\nHost: \r\n\r\n", "/x"),
        (b"GET http://a/x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "/x"),
        (b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "*"),
    ] {
        assert_eq!(served(addr, request).text(), target, "{:?}", String::from_utf8_lossy(request));
    }
    for request in [
        // Not a form at all.
        &b"GET x HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"GET ?x HTTP/1.1\r\nHost: a\r\n\r\n",
        // absolute-form: another scheme, no authority, an empty host,
        // userinfo, a bad port, a fragment; and no Host in HTTP/1.1.
        b"GET ftp://a/x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http:/x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http:x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://:80/x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://u@a/x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://a:x/x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://a/x#f HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET http://a/x HTTP/1.1\r\n\r\n",
        b"GET http://a/x HTTP/1.1\r\nHost: a b\r\n\r\n",
        // asterisk-form with another method; authority-form without CONNECT.
        b"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET a:80 HTTP/1.1\r\nHost: a\r\n\r\n",
        // CONNECT with anything but a valid authority-form.
        b"CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n",
        b"CONNECT a HTTP/1.1\r\nHost: a\r\n\r\n",
        b"CONNECT a: HTTP/1.1\r\nHost: a\r\n\r\n",
        b"CONNECT http://a:80 HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        refused_alone(addr, request, 400);
    }
    refused_alone(addr, b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501);
    server.stop();
}

/// RFC 9110 §2.5: a later HTTP/1 minor version is served as HTTP/1.1
/// (keep-alive included) and answered in HTTP/1.1; another major version
/// is 505; a malformed version 400. RFC 9112 §3.2: a target with `"`,
/// `<` or `>` is 400; the bytes browsers send unencoded are served.
#[test]
fn later_minor_versions_and_target_bytes() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for (request, target) in [
        (&b"GET /x HTTP/1.2\r\nHost: a\r\n\r\n"[..], "/x"),
        (b"GET /y?z HTTP/1.9\r\nHost: a\r\nX-A: b\r\n\r\n", "/y?z"),
    ] {
        // `served` reads an `HTTP/1.1` status line, then the next request.
        let reply = served(addr, request);
        assert_eq!(reply.text(), target, "{:?}", String::from_utf8_lossy(request));
    }
    // A head that arrives a byte at a time (parsed again as each piece
    // comes, the version judged once its line has ended), then the next
    // request on the connection.
    let mut client = Client::connect(addr);
    client.send_bytewise(b"GET /bytewise HTTP/1.2\r\nHost: a\r\nX-A: b\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "/bytewise");
    assert_eq!(client.get("/next").text(), "/next");
    // A body, framed as HTTP/1.1 frames it.
    let body = b"3\r\nabc\r\n0\r\n\r\n";
    let request =
        [&b"POST /echo HTTP/1.3\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"[..], body]
            .concat();
    assert_eq!(served(addr, &request).text(), echo_of(b"abc"));
    refused_alone(addr, b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
    refused_alone(addr, b"GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400);
    // RFC 9112 §2.3: `HTTP/` DIGIT `.` DIGIT; anything else in the slot is
    // a malformed line (§3: 400), not another version.
    for version in ["HTTP/1.", "HTTP/1.a", "HTTP/1.2.3", "HTTP/01.1", "HTTP/1", "HTTP/9"] {
        refused_alone(addr, format!("GET / {version}\r\nHost: a\r\n\r\n").as_bytes(), 400);
    }
    refused_alone(addr, b"GET / HTTP/1.2 \r\nHost: a\r\n\r\n", 400);
    // Still HTTP/1.1's rules: Host is required.
    refused_alone(addr, b"GET / HTTP/1.2\r\n\r\n", 400);
    for target in ["/a\"b", "/a<b", "/a>b", "/?q=<script>"] {
        let request = format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n");
        refused_alone(addr, request.as_bytes(), 400);
    }
    // What browsers send unencoded (as hyper, the server takes it).
    for target in ["/a|b", "/?q={a}", "/?f=a|b^c`d", "/g?query={me{name}}", "/a\\b"] {
        let request = format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(served(addr, request.as_bytes()).text(), target);
    }
    // A URI holds no byte past ASCII (RFC 3986 §2: `/caf%C3%A9`), so raw
    // UTF-8 is 400 (RFC 9112 §3's SHOULD; Http11Probe's MAL-NON-ASCII-URL),
    // in the path, the query and an absolute-form's path, and so are a
    // lone Latin-1 byte, a cut sequence and a stray continuation byte.
    let utf8: [&[u8]; 4] =
        [b"/caf\xc3\xa9", b"/plaintext?x=\xc3\xa9", b"http://a/caf\xc3\xa9", b"/\xe2\x82\xac"];
    for target in utf8.into_iter().chain([&b"/caf\xe9"[..], b"/?q=\xff", b"/\x80", b"/\xc3"]) {
        let mut request = b"GET ".to_vec();
        request.extend_from_slice(target);
        request.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
        refused_alone(addr, &request, 400);
    }
    server.stop();
}

/// The handler's `Request::authority`: the absolute-form target's, not
/// the Host field's (RFC 9112 §3.2.2); otherwise the Host field's value.
#[test]
fn the_authority_comes_from_an_absolute_target_then_from_host() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for (request, authority) in [
        (&b"GET /authority HTTP/1.1\r\nHost: host.example:81\r\n\r\n"[..], "host.example:81"),
        (
            b"GET http://target.example:8080/authority HTTP/1.1\r\nHost: host.example\r\n\r\n",
            "target.example:8080",
        ),
        (b"GET http://[::1]/authority?x HTTP/1.1\r\nHost: \r\n\r\n", "[::1]"),
        (b"GET /authority HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", ""),
    ] {
        assert_eq!(
            served(addr, request).text(),
            authority,
            "{:?}",
            String::from_utf8_lossy(request)
        );
    }
    server.stop();
}

/// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
/// framing; §6.3: a request whose Transfer-Encoding does not end in
/// chunked cannot be framed: 400 and close (a MUST, over §6.1's SHOULD of
/// 501 for an unknown coding).
#[test]
fn framing_a_server_must_refuse() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for request in [
        &b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..],
        b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
    ] {
        refused_alone(addr, request, 400);
    }
    // A known-but-unsupported coding under a final chunked is framed: 501.
    refused_alone(
        addr,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        501,
    );
    server.stop();
}

/// RFC 9112 §2.2, §3 and §5: the message syntax a server MUST reject
/// (whitespace before the first field line, whitespace between a field
/// name and its colon, obs-fold, a bare CR) and request-line separators
/// other than one SP (lenient parsing is a smuggling vector).
#[test]
fn message_syntax_a_server_must_reject() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    for request in [
        &b"GET / HTTP/1.1\r\n Host: t\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\n\tHost: t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost\t: t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n",
        b"GET / HTTP/1.1\rHost: t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\rb\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /  HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET\t/ HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET / HTTP/1.1 \r\nHost: t\r\n\r\n",
        b" GET / HTTP/1.1\r\nHost: t\r\n\r\n",
    ] {
        refused_alone(addr, request, 400);
    }
    server.stop();
}

#[test]
fn every_status_rfc_9110_defines_has_its_reason_phrase() {
    // RFC 9112 §4: the reason phrase is optional on the wire, but clients
    // and logs show it; a 415 sent as `HTTP/1.1 415 ` reads as broken.
    // Codes `http` names from other RFCs (WebDAV's 102, 207, 208, 423,
    // 424, 507, 508; 226, 418, 506, 510) may stay without one.
    let elsewhere = [102, 207, 208, 226, 418, 423, 424, 506, 507, 508, 510];
    // The whole range `Status::new` accepts, its ends included.
    for code in 100..=999u16 {
        let named = http::StatusCode::from_u16(code).ok().and_then(|s| s.canonical_reason());
        let ours = falconet_server::Status::new(code).unwrap().reason();
        if named.is_some() && !elsewhere.contains(&code) {
            assert!(!ours.is_empty(), "{code} ({named:?}) has no reason phrase");
        }
        assert!(ours.bytes().all(|b| b == b' ' || b.is_ascii_graphic()), "{code}: {ours:?}");
    }
    assert_eq!(falconet_server::Status::new(415).unwrap().reason(), "Unsupported Media Type");
}

/// RFC 9112 §6.3: `Content-Length = 1*DIGIT`. Leading zeros are digits
/// like any other (`0…05` is 5, in any number, as Go and hyper read it);
/// a value past what a `u64` is sure to hold is 400, never wrapped, and a
/// sign, space or list inside the value is 400.
#[test]
fn content_length_is_any_run_of_digits() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let post = |length: &str, body: &str| {
        format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n{body}")
    };
    for zeros in [1, 19, 20, 100] {
        let length = format!("{}5", "0".repeat(zeros));
        let reply = served(addr, post(&length, "hello").as_bytes());
        assert_eq!(reply.text(), echo_of(b"hello"), "Content-Length: {length}");
        let reply = served(addr, post(&"0".repeat(zeros), "").as_bytes());
        assert_eq!(reply.text(), echo_of(b""), "Content-Length: {}", "0".repeat(zeros));
    }
    for length in ["18446744073709551621", "100000000000000000005", "+5", "5 5", "5,5", "0x5"] {
        refused_alone(addr, post(length, "hello").as_bytes(), 400);
    }
    server.stop();
}
