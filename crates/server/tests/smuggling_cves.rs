//! An outside conformance table: HTTP/1.1 request-smuggling and parsing
//! flaws drawn from published CVEs in other servers and parsers, each sent
//! over a fresh TCP connection to a real server, with a valid request
//! (`GET /after`, `Connection: close`) pipelined behind it.
//!
//! Every case names its source (CVE or well-known advisory) and the RFC
//! 9112 / RFC 9110 rule that decides the answer. Each is checked for the
//! status code(s), the framing of what comes back (number of responses,
//! `Connection: close`, end of stream), and that nothing hidden in the
//! request (`/smuggled`) is ever answered.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{Echo, End, connect, echo_of, options, read_for, serve, text};

/// The request pipelined behind every case.
const AFTER: &[u8] = b"GET /after HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
/// A request hidden in a body, an extension or a trailer: it must never
/// be answered (the Echo handler would answer `/smuggled`).
const HIDDEN: &[u8] = b"GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";

/// What a response's body must be.
#[derive(Clone, Debug)]
enum Body {
    /// `/echo`'s answer for this request body.
    Echo(Vec<u8>),
    /// This exact text (the Echo handler answers other paths with their
    /// target, or `/authority` with the authority).
    Text(&'static str),
    /// Anything.
    Any,
}

/// The outcome a case accepts.
#[derive(Clone, Debug)]
enum Want {
    /// Exactly one response, its status one of these, `Connection: close`,
    /// then the end of stream: the pipelined `/after` is not answered
    /// (RFC 9112 §9.6).
    Refuse(&'static [u16]),
    /// These responses in order, then `/after` (200), then the end of
    /// stream (it asked for close): exact framing, the connection goes on.
    Serve(Vec<(u16, Body)>),
    /// These responses, the last with `Connection: close`, then the end
    /// of stream (`/after` is not answered).
    ServeClose(Vec<(u16, Body)>),
    /// Any of these (the RFC allows each).
    Either(Vec<Want>),
}

struct Case {
    label: &'static str,
    rule: &'static str,
    request: Vec<u8>,
    want: Want,
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

const POST: &[u8] = b"POST /echo HTTP/1.1\r\nHost: t\r\n";
const TE: &[u8] = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";

fn echo(body: &[u8]) -> Want {
    Want::Serve(vec![(200, Body::Echo(body.to_vec()))])
}

fn cases() -> Vec<Case> {
    let cl = |n: usize| format!("Content-Length: {n}\r\n").into_bytes();
    let hidden_len = HIDDEN.len();
    let mut big_ext = b"1;".to_vec();
    big_ext.extend(std::iter::repeat_n(b'a', 64 * 1024));
    big_ext.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
    let mut many_ext = Vec::new();
    for _ in 0..2000 {
        many_ext.extend_from_slice(b"1;");
        many_ext.extend(std::iter::repeat_n(b'e', 100));
        many_ext.extend_from_slice(b"\r\nx\r\n");
    }
    many_ext.extend_from_slice(b"0\r\n\r\n");
    // TE.CL / CL.TE: a chunk whose payload is a request a CL reader would
    // see as the next one.
    let te_cl_payload: &[u8] =
        b"GPOST /smuggled HTTP/1.1\r\nHost: t\r\nContent-Length: 15\r\n\r\nx=1";
    let te_cl_chunk = cat(&[
        format!("{:x}\r\n", te_cl_payload.len()).as_bytes(),
        te_cl_payload,
        b"\r\n0\r\n\r\n",
    ]);

    vec![
        // ---- hyper ----
        Case {
            label: "hyper CVE-2021-32715: Content-Length with a '+' sign",
            rule: "RFC 9110 §8.6 Content-Length = 1*DIGIT; RFC 9112 §6.3 invalid CL -> 400 + close",
            request: cat(&[POST, b"Content-Length: +5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "hyper CVE-2021-32714: chunk size overflowing u64 (17 hex digits, wraps to 3)",
            rule: "RFC 9112 §7.1 MUST prevent integer overflow of chunk-size",
            request: cat(&[TE, b"f0000000000000003\r\nabc\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400, 413]),
        },
        Case {
            label: "hyper CVE-2021-32714 (edge): chunk size u64::MAX",
            rule: "RFC 9112 §7.1 overflow; §6.3/RFC 9110 §15.5.14 a body over the limit -> 413",
            request: cat(&[TE, b"ffffffffffffffff\r\nabc\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400, 413]),
        },
        Case {
            label: "hyper CVE-2021-21299: Transfer-Encoding on two lines, chunked then gzip",
            rule: "RFC 9112 §6.3: chunked not the final coding in a request -> 400 + close",
            request: cat(&[POST, b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        // ---- Node.js llhttp ----
        Case {
            label: "llhttp CVE-2022-32214: LF-only line ends in the head",
            rule: "RFC 9112 §2.2: a recipient MAY recognize a bare LF as a line terminator (debatable: serve or 400)",
            request: b"POST /echo HTTP/1.1\nHost: t\nContent-Length: 5\n\nhello".to_vec(),
            want: Want::Either(vec![Want::Refuse(&[400]), echo(b"hello")]),
        },
        Case {
            label: "llhttp CVE-2022-32214: LF-only line ends in chunked framing",
            rule: "RFC 9112 §7.1 chunk = chunk-size [chunk-ext] CRLF chunk-data CRLF (§2.2's bare-LF MAY covers start-line and fields only)",
            request: cat(&[TE, b"5\nhello\n0\n\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2022-32215: Transfer-Encoding continued on an obs-fold line",
            rule: "RFC 9112 §5.2: obs-fold -> 400, or replace with SP ('identity chunked' is then no valid list -> 400)",
            request: cat(&[POST, b"Transfer-Encoding: identity\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2022-32213: Transfer-Encoding 'chunked' then a second TE line",
            rule: "RFC 9112 §6.3 / RFC 9110 §5.3 (lines combine to 'chunked, x'): chunked not final -> 400",
            request: cat(&[POST, b"Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2022-35256: field line ended by a bare CR",
            rule: "RFC 9112 §2.2: a bare CR is invalid (or replaced by SP, leaving TE 'chunked X-A: b' invalid) -> 400",
            request: cat(&[POST, b"Transfer-Encoding: chunked\rX-A: b\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2023-30589: CR-only line ends",
            rule: "RFC 9112 §2.2: bare CR invalid -> 400",
            request: b"GET /cr HTTP/1.1\rHost: t\r\r".to_vec(),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2025-23167: head ended by CRLF CR X (\\r\\n\\rX)",
            rule: "RFC 9112 §2.1/§2.2: the head ends with CRLF CRLF; a bare CR is invalid -> 400",
            request: cat(&[b"GET /crx HTTP/1.1\r\nHost: t\r\n\rX", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2021-22959: space between field name and colon (Content-Length)",
            rule: "RFC 9112 §5.1: MUST reject with 400",
            request: cat(&[POST, b"Content-Length : 5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "llhttp CVE-2021-22960: chunk extension with a bare CR",
            rule: "RFC 9112 §2.2 bare CR invalid; §7.1.1 chunk-ext grammar -> 400",
            request: cat(&[TE, b"2;\rxx\r\nhi\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Node CVE-2024-22019 / Puma CVE-2024-21647: one unbounded chunk extension (64 KiB)",
            rule: "RFC 9112 §7.1.1: a server ought to limit chunk extensions and answer 4xx",
            request: cat(&[TE, &big_ext]),
            want: Want::Refuse(&[400, 413, 431]),
        },
        Case {
            label: "Node CVE-2024-22019: 2000 one-byte chunks with 100-byte extensions each",
            rule: "RFC 9112 §7.1.1: limit the total length of extensions in a request -> 4xx",
            request: cat(&[TE, &many_ext]),
            want: Want::Refuse(&[400, 413, 431]),
        },
        Case {
            label: "Node CVE-2024-27982: space before the first field name (Content-Length)",
            rule: "RFC 9112 §2.2: whitespace between start-line and first field: reject, or consume that line",
            request: b"POST /echo HTTP/1.1\r\n Content-Length: 5\r\nHost: t\r\n\r\nhello".to_vec(),
            want: Want::Refuse(&[400]),
        },
        // ---- netty ----
        Case {
            label: "netty CVE-2019-16869: 'Transfer-Encoding : chunked' with Content-Length",
            rule: "RFC 9112 §5.1: whitespace before colon -> MUST 400",
            request: cat(&[POST, b"Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "netty CVE-2020-7238: '[SP]Transfer-Encoding: chunked' line and Content-Length",
            rule: "RFC 9112 §5.2 obs-fold -> 400 (or SP, making Host invalid -> §3.2 400)",
            request: cat(&[POST, b" Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "netty CVE-2021-43797: control character before a field name",
            rule: "RFC 9110 §5.1 field-name = token; RFC 9112 §5 -> 400",
            request: cat(&[POST, b"\x01Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "netty CVE-2021-43797: control character (VT) after a field name",
            rule: "RFC 9110 §5.1 field-name = token -> 400",
            request: cat(&[POST, b"Transfer-Encoding\x0b: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "netty CVE-2019-20445: Content-Length and Transfer-Encoding together (CL.TE, trailing 'G')",
            rule: "RFC 9112 §6.1: MAY reject; MUST close after responding either way",
            request: cat(&[POST, b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG"]),
            want: Want::Either(vec![
                Want::Refuse(&[400]),
                Want::ServeClose(vec![(200, Body::Echo(Vec::new()))]),
            ]),
        },
        Case {
            label: "netty CVE-2019-20445: two differing Content-Length fields",
            rule: "RFC 9112 §6.3: invalid Content-Length -> 400 + close",
            request: cat(&[POST, b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "netty CVE-2019-20444: field line without a colon",
            rule: "RFC 9112 §5 field-line = field-name ':' OWS field-value OWS -> 400",
            request: cat(&[POST, b"Transfer-Encoding\r\nContent-Length: 5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "netty CVE-2025-58056 ('funky chunks'): LF inside a chunk extension hides a chunk",
            rule: "RFC 9112 §7.1 chunk line ends with CRLF; §7.1.1 chunk-ext grammar -> 400",
            request: cat(&[TE, b"2;\nxx\r\n23\r\n", HIDDEN, b"\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        // ---- Go net/http ----
        Case {
            label: "Go CVE-2019-16276: 'Transfer-Encoding<TAB>: chunked'",
            rule: "RFC 9112 §5.1: whitespace before colon -> MUST 400",
            request: cat(&[POST, b"Transfer-Encoding\t: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Go CVE-2022-1705: Transfer-Encoding value with leading VT (stripped by TrimSpace)",
            rule: "RFC 9110 §5.5 field-value has no CTLs but HTAB; -> 400",
            request: cat(&[POST, b"Transfer-Encoding: \x0bchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Go CVE-2015-5739: 'Content Length' (space inside the field name)",
            rule: "RFC 9110 §5.1 field-name = token -> 400",
            request: cat(&[POST, b"Content Length: 5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Go CVE-2015-5740: two identical Content-Length fields",
            rule: "RFC 9110 §8.6: a recipient MAY reject or MAY use the one value (debatable)",
            request: cat(&[POST, b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"]),
            want: Want::Either(vec![Want::Refuse(&[400]), echo(b"hello")]),
        },
        // ---- waitress ----
        Case {
            label: "waitress CVE-2019-16785: LF-only line end in the middle of a CRLF head",
            rule: "RFC 9112 §2.2 MAY take bare LF as a line end (then CL=5 frames the body), or reject",
            request: cat(&[POST, b"X-A: b\nContent-Length: 5\r\n\r\nhello"]),
            want: Want::Either(vec![Want::Refuse(&[400]), echo(b"hello")]),
        },
        Case {
            label: "waitress CVE-2019-16786: Transfer-Encoding other than chunked (identity)",
            rule: "RFC 9112 §6.3: chunked not final in a request -> MUST 400 + close",
            request: cat(&[POST, b"Transfer-Encoding: identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "waitress CVE-2019-16789: 'chunked' followed by NBSP (obs-text Python strip() removes)",
            rule: "RFC 9112 §6.3: coding 'chunked\\xa0' is not chunked -> chunked not final -> 400",
            request: cat(&[POST, b"Transfer-Encoding: chunked\xa0\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "waitress CVE-2022-24761: chunk size with '0x' prefix",
            rule: "RFC 9112 §7.1 chunk-size = 1*HEXDIG -> 400",
            request: cat(&[TE, b"0x5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "waitress CVE-2022-24761: chunk size with '+' sign",
            rule: "RFC 9112 §7.1 chunk-size = 1*HEXDIG -> 400",
            request: cat(&[TE, b"+5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "waitress CVE-2022-24761: Content-Length not all digits (' 5 5')",
            rule: "RFC 9110 §8.6 Content-Length = 1*DIGIT -> RFC 9112 §6.3 400",
            request: cat(&[POST, b"Content-Length: 5 5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        // ---- Puma ----
        Case {
            label: "Puma CVE-2021-41136: LF inside a chunk extension",
            rule: "RFC 9112 §7.1.1 chunk-ext grammar; line ends with CRLF -> 400",
            request: cat(&[TE, b"5;a\nb\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Puma CVE-2023-40175: empty Content-Length",
            rule: "RFC 9110 §8.6 1*DIGIT; RFC 9112 §6.3 -> 400",
            request: cat(&[POST, b"Content-Length:\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Puma CVE-2023-40175: Content-Length in the trailer section",
            rule: "RFC 9112 §7.1.2 MUST NOT merge a trailer into the header section: framing is the chunks'",
            request: cat(&[TE, b"5\r\nhello\r\n0\r\nContent-Length: 40\r\n\r\n"]),
            want: echo(b"hello"),
        },
        // ---- Apache httpd ----
        Case {
            label: "Apache CVE-2023-25690: CRLF percent-encoded in the target (not decoded)",
            rule: "RFC 9112 §3.2: the target is taken as sent; nothing is injected",
            request: b"GET /a%0d%0aX:%20y HTTP/1.1\r\nHost: t\r\n\r\n".to_vec(),
            want: Want::Serve(vec![(200, Body::Text("/a%0d%0aX:%20y"))]),
        },
        Case {
            label: "Apache CVE-2023-25690: raw CR in the target followed by a hidden request",
            rule: "RFC 9112 §2.2 bare CR invalid; §3 request-line grammar -> 400",
            request: cat(&[b"GET /a\r", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Apache CVE-2023-25690: raw LF in the target (HTTP/0.9-looking line)",
            rule: "RFC 9112 §3 request-line = method SP target SP version -> 400",
            request: cat(&[b"GET /a\n", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Apache CVE-2022-22720: GET with a Content-Length body holding a request",
            rule: "RFC 9112 §6.3 the body is CL bytes; §9.3 read the whole body or close",
            request: cat(&[b"GET /x HTTP/1.1\r\nHost: t\r\n", &cl(hidden_len), b"\r\n", HIDDEN]),
            want: Want::Serve(vec![(200, Body::Text("/x"))]),
        },
        Case {
            label: "Apache CVE-2022-22720: GET with a chunked body holding a request",
            rule: "RFC 9112 §6.3/§7.1 the body is the chunks; §9.3 read it or close",
            request: cat(&[
                b"GET /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                format!("{:x}\r\n", hidden_len).as_bytes(),
                HIDDEN,
                b"\r\n0\r\n\r\n",
            ]),
            want: Want::Serve(vec![(200, Body::Text("/x"))]),
        },
        Case {
            label: "Apache CVE-2022-22720: error (413) with the body unread, keep-alive expected",
            rule: "RFC 9112 §9.3: MUST read the body or close; §9.6 no request after a close",
            request: cat(&[POST, b"Content-Length: 9000000\r\n\r\n", HIDDEN]),
            want: Want::Refuse(&[413]),
        },
        Case {
            label: "Apache CVE-2022-22720: error (500, handler panic) after a CL body holding a request",
            rule: "RFC 9112 §9.3: the body is read (or the connection closed) before the next request",
            request: cat(&[b"POST /panic HTTP/1.1\r\nHost: t\r\n", &cl(hidden_len), b"\r\n", HIDDEN]),
            want: Want::Either(vec![
                Want::Refuse(&[500]),
                Want::Serve(vec![(500, Body::Any)]),
            ]),
        },
        Case {
            label: "Kettle 2025 (Expect desync): obfuscated 'Expect: y 100-continue' with a CL body",
            rule: "RFC 9110 §10.1.1: MAY 417 for an unknown expectation; the body is CL bytes either way",
            request: cat(&[POST, b"Expect: y 100-continue\r\n", &cl(hidden_len), b"\r\n", HIDDEN]),
            want: Want::Either(vec![Want::Refuse(&[417]), echo(HIDDEN)]),
        },
        // ---- gunicorn ----
        Case {
            label: "gunicorn CVE-2024-1135: 'Transfer-Encoding: chunked, identity' (TE.TE)",
            rule: "RFC 9112 §6.3: chunked not final -> 400 + close",
            request: cat(&[POST, b"Transfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "gunicorn CVE-2024-6827: unknown Transfer-Encoding with Content-Length (TE.CL fallback)",
            rule: "RFC 9112 §6.1 MAY reject CL+TE and MUST close; §6.3 chunked not final -> 400",
            request: cat(&[POST, b"Transfer-Encoding: foo\r\n", &cl(hidden_len), b"\r\n", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        // ---- aiohttp ----
        Case {
            label: "aiohttp CVE-2023-47627: 'Transfer-Encoding: xchunked' (substring match)",
            rule: "RFC 9112 §6.3: chunked not final -> 400",
            request: cat(&[POST, b"Transfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "aiohttp CVE-2023-47627: Content-Length '1_0' (Python int())",
            rule: "RFC 9110 §8.6 1*DIGIT -> 400",
            request: cat(&[POST, b"Content-Length: 1_0\r\n\r\nhellohello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "aiohttp CVE-2023-47627: Content-Length in non-ASCII digits (U+0665)",
            rule: "RFC 9110 §8.6 DIGIT is ASCII 0-9 -> 400",
            request: cat(&[POST, b"Content-Length: \xd9\xa5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "aiohttp CVE-2024-23829: NUL after 'chunked' in Transfer-Encoding",
            rule: "RFC 9110 §5.5 NUL in a field value MUST be rejected (or replaced by SP)",
            request: cat(&[POST, b"Transfer-Encoding: chunked\x00\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "aiohttp CVE-2024-23829: NUL inside a field value",
            rule: "RFC 9110 §5.5: NUL MUST be rejected or replaced with SP",
            request: cat(&[POST, b"X-A: a\x00b\r\nContent-Length: 5\r\n\r\nhello"]),
            want: Want::Either(vec![Want::Refuse(&[400]), echo(b"hello")]),
        },
        Case {
            label: "aiohttp CVE-2024-52304 / h11-style: LF ending a chunk-size line",
            rule: "RFC 9112 §7.1: CRLF after chunk-size -> 400",
            request: cat(&[TE, b"5\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        // ---- h11 ----
        Case {
            label: "h11 CVE-2025-43859: chunk data followed by two arbitrary bytes instead of CRLF",
            rule: "RFC 9112 §7.1 chunk = ... chunk-data CRLF -> 400",
            request: cat(&[TE, b"5\r\nhelloXX0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        // ---- PortSwigger classics ----
        Case {
            label: "PortSwigger CL.TE: Content-Length 4 with a chunked body hiding 'GPOST'",
            rule: "RFC 9112 §6.1 MAY reject CL+TE; MUST close; TE overrides CL (§6.3)",
            request: cat(&[POST, b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", &te_cl_chunk]),
            want: Want::Either(vec![
                Want::Refuse(&[400]),
                Want::ServeClose(vec![(200, Body::Any)]),
            ]),
        },
        Case {
            label: "PortSwigger TE.TE: 'Transfer-Encoding: chunked' + 'Transfer-encoding: cow'",
            rule: "RFC 9112 §6.3 combined 'chunked, cow': chunked not final -> 400",
            request: cat(&[POST, b"Transfer-Encoding: chunked\r\nTransfer-encoding: cow\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "PortSwigger TE.TE: 'Transfer-Encoding: chunked ' (trailing space, valid OWS)",
            rule: "RFC 9110 §5.5 OWS is not part of the value: this is chunked, served with exact framing",
            request: cat(&[POST, b"Transfer-Encoding: chunked \r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: echo(b"hello"),
        },
        Case {
            label: "PortSwigger TE.TE: 'Transfer-Encoding: ,chunked' (empty list element)",
            rule: "RFC 9110 §5.6.1: a recipient MUST ignore empty list elements: chunked, served",
            request: cat(&[POST, b"Transfer-Encoding: ,chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: echo(b"hello"),
        },
        Case {
            label: "PortSwigger TE.TE: 'Transfer-Encoding: CHUNKED' (case)",
            rule: "RFC 9112 §7: coding names are case-insensitive: served",
            request: cat(&[POST, b"Transfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: echo(b"hello"),
        },
        Case {
            label: "PortSwigger TE.TE: 'Transfer-Encoding: chunked, chunked'",
            rule: "RFC 9112 §6.1 chunked at most once; body cannot be framed -> 400 (or 501)",
            request: cat(&[POST, b"Transfer-Encoding: chunked, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400, 501]),
        },
        Case {
            label: "Transfer-Encoding in HTTP/1.0 (with CL hiding a request)",
            rule: "RFC 9112 §6.1: HTTP/1.0 + TE -> framing faulty, MUST close",
            request: cat(&[b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n", &cl(5 + hidden_len), b"\r\n0\r\n\r\n", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "HTTP/1.0 keep-alive with a CL body holding a request",
            rule: "RFC 9112 §6.3: the body is CL bytes; the next request follows it",
            request: cat(&[b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\n", &cl(hidden_len), b"\r\n", HIDDEN]),
            want: echo(HIDDEN),
        },
        // ---- hidden requests ----
        Case {
            label: "Request hidden in a quoted chunk extension (CRLF inside quotes)",
            rule: "RFC 9110 §5.6.4 quoted-string has no CR/LF; RFC 9112 §7.1.1 -> 400",
            request: cat(&[TE, b"5;x=\"\r\n", HIDDEN, b"\"\r\nhello\r\n0\r\n\r\n"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Request hidden in the trailer section",
            rule: "RFC 9112 §7.1.2 trailer-section = *(field-line CRLF): 'GET /smuggled HTTP/1.1' is no field line -> 400",
            request: cat(&[TE, b"5\r\nhello\r\n0\r\n", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Request hidden after a folded trailer field",
            rule: "RFC 9112 §5.2 obs-fold in trailers -> 400",
            request: cat(&[TE, b"5\r\nhello\r\n0\r\nX-T: a\r\n ", HIDDEN]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "CR inside a field value (response-splitting style)",
            rule: "RFC 9112 §2.2: bare CR invalid -> 400",
            request: cat(&[POST, b"X-A: a\rContent-Length: 5\r\n\r\nhello"]),
            want: Want::Refuse(&[400]),
        },
        Case {
            label: "Absolute-form target with a mismatched Host",
            rule: "RFC 9112 §3.2.2: the origin server MUST ignore Host and use the target's authority",
            request: b"GET http://a.example/authority HTTP/1.1\r\nHost: b.example\r\n\r\n".to_vec(),
            want: Want::Serve(vec![(200, Body::Text("a.example"))]),
        },
        Case {
            label: "Chunk size with leading zeros past 16 digits ('00000000000000005')",
            rule: "RFC 9112 §7.1 chunk-size = 1*HEXDIG: any number of leading zeros (hyper and node read them)",
            request: cat(&[TE, b"00000000000000005\r\nhello\r\n00000000000000000\r\n\r\n"]),
            want: echo(b"hello"),
        },
        Case {
            label: "Content-Length with OWS around the value",
            rule: "RFC 9110 §5.5: OWS is not part of the value: served with exact framing",
            request: cat(&[POST, b"Content-Length: \t5 \t\r\n\r\nhello"]),
            want: echo(b"hello"),
        },
    ]
}

#[derive(Debug)]
struct Resp {
    status: u16,
    close: bool,
    body: Vec<u8>,
}

/// The responses in `bytes`, and whatever could not be parsed as one.
fn parse(mut bytes: &[u8]) -> (Vec<Resp>, Vec<u8>) {
    let mut out = Vec::new();
    loop {
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            return (out, bytes.to_vec());
        };
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let Some(status) = lines
            .next()
            .and_then(|l| l.strip_prefix("HTTP/1.1 "))
            .and_then(|r| r.get(..3))
            .and_then(|c| c.parse().ok())
        else {
            return (out, bytes.to_vec());
        };
        let mut length = None;
        let mut chunked = false;
        let mut close = false;
        for line in lines {
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                close = value.eq_ignore_ascii_case("close");
            }
        }
        let mut rest = &bytes[end + 4..];
        let body;
        if let Some(n) = length {
            if rest.len() < n {
                return (out, bytes.to_vec());
            }
            body = rest[..n].to_vec();
            rest = &rest[n..];
        } else if chunked {
            let mut b = Vec::new();
            loop {
                let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
                    return (out, bytes.to_vec());
                };
                let size = usize::from_str_radix(&String::from_utf8_lossy(&rest[..eol]), 16)
                    .unwrap_or(usize::MAX);
                if size == usize::MAX || rest.len() < eol + 2 + size + 2 {
                    return (out, bytes.to_vec());
                }
                b.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
                rest = &rest[eol + 2 + size + 2..];
                if size == 0 {
                    break;
                }
            }
            body = b;
        } else if matches!(status, 100..=199 | 204 | 304) {
            body = Vec::new();
        } else {
            body = rest.to_vec();
            rest = &[];
        }
        out.push(Resp { status, close, body });
        bytes = rest;
    }
}

fn body_matches(want: &Body, got: &[u8]) -> bool {
    match want {
        Body::Echo(b) => got == echo_of(b).as_bytes(),
        Body::Text(t) => got == t.as_bytes(),
        Body::Any => true,
    }
}

/// Whether what came (`resps`, unparsed `rest`, how it `end`ed) is
/// `want`; if not, why.
fn check(want: &Want, resps: &[Resp], rest: &[u8], end: End) -> Result<(), String> {
    let closed = matches!(end, End::Eof | End::Reset);
    match want {
        Want::Refuse(statuses) => {
            if resps.len() != 1 {
                return Err(format!("{} responses, want 1 refusal", resps.len()));
            }
            let r = &resps[0];
            if !statuses.contains(&r.status) {
                return Err(format!("status {}, want one of {statuses:?}", r.status));
            }
            if !r.close {
                return Err("refusal without Connection: close".into());
            }
            if !rest.is_empty() {
                return Err("bytes after the refusal".into());
            }
            if !closed {
                return Err(format!("connection not closed after the refusal ({end:?})"));
            }
            Ok(())
        }
        Want::Serve(list) | Want::ServeClose(list) => {
            let mut expected: Vec<(u16, Body)> = list.clone();
            let keep = matches!(want, Want::Serve(_));
            if keep {
                expected.push((200, Body::Text("/after")));
            }
            if resps.len() != expected.len() {
                return Err(format!(
                    "{} responses ({:?}), want {}",
                    resps.len(),
                    resps.iter().map(|r| r.status).collect::<Vec<_>>(),
                    expected.len()
                ));
            }
            for (i, ((status, body), r)) in expected.iter().zip(resps).enumerate() {
                if r.status != *status || !body_matches(body, &r.body) {
                    return Err(format!(
                        "response {i}: {} {:?}, want {status} {body:?}",
                        r.status,
                        text(&r.body)
                    ));
                }
                let last = i + 1 == expected.len();
                if !last && r.close {
                    return Err(format!("response {i} closes, the connection should go on"));
                }
            }
            if !resps.last().is_some_and(|r| r.close) {
                return Err("last response without Connection: close".into());
            }
            if !rest.is_empty() {
                return Err("unparsed bytes after the responses".into());
            }
            if !closed {
                return Err(format!("connection not closed at the end ({end:?})"));
            }
            Ok(())
        }
        Want::Either(options) => {
            let mut why = Vec::new();
            for option in options {
                match check(option, resps, rest, end) {
                    Ok(()) => return Ok(()),
                    Err(e) => why.push(e),
                }
            }
            Err(why.join(" | "))
        }
    }
}

fn escape(bytes: &[u8]) -> String {
    let s: String = bytes.escape_ascii().to_string();
    if s.len() > 400 { format!("{}...({} bytes)", &s[..400], bytes.len()) } else { s }
}

/// Sends `case` (and `AFTER`) on a fresh connection, whole or a byte per
/// segment; returns the verdict and what came back.
fn run_case(
    addr: std::net::SocketAddr,
    case: &Case,
    bytewise: bool,
) -> (Result<(), String>, String) {
    let mut stream = connect(addr);
    let sent = [&case.request[..], AFTER].concat();
    // A server that refuses early may stop reading; the answer is what
    // counts, not whether every byte went.
    let writer = {
        let mut w = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            if bytewise {
                for b in &sent {
                    if w.write_all(std::slice::from_ref(b)).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            } else {
                let _ = w.write_all(&sent);
            }
        })
    };
    let limit = if bytewise { Duration::from_secs(8) } else { Duration::from_secs(4) };
    let (got, end) = read_for(&mut stream, limit);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = writer.join();
    let (resps, rest) = parse(&got);
    let mut verdict = check(&case.want, &resps, &rest, end);
    if verdict.is_ok() && got.windows(8).any(|w| w == b"smuggled") {
        verdict = Err("a hidden request was answered".into());
    }
    eprintln!(
        "{:<4} {:?} {end:?} | {}{}",
        if verdict.is_ok() { "ok" } else { "FAIL" },
        resps.iter().map(|r| (r.status, r.close)).collect::<Vec<_>>(),
        if bytewise { "[bytewise] " } else { "" },
        case.label
    );
    let report = format!(
        "FAIL {}{}\n  rule: {}\n  sent: {}\n  got ({end:?}): {}\n  why: ",
        if bytewise { "[bytewise] " } else { "" },
        case.label,
        case.rule,
        escape(&case.request),
        escape(&got)
    );
    (verdict, report)
}

fn run_table(bytewise: bool) {
    let server = serve(options(), Echo);
    let cases = cases();
    assert!(cases.len() >= 30);
    let mut failures = Vec::new();
    let mut held = 0;
    let mut tried = 0;
    for case in &cases {
        if bytewise && case.request.len() > 400 {
            continue;
        }
        tried += 1;
        match run_case(server.addr, case, bytewise) {
            (Ok(()), _) => held += 1,
            (Err(why), report) => failures.push(format!("{report}{why}")),
        }
    }
    eprintln!("{held} of {tried} cases held{}", if bytewise { " (bytewise)" } else { "" });
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
}

/// Each case whole, in one write.
#[test]
fn published_smuggling_cves_are_refused_or_framed_exactly() {
    run_table(false);
}

/// The same cases (those up to 400 bytes) a byte per segment: the verdict
/// must not depend on how the bytes arrive.
#[test]
fn published_smuggling_cves_bytewise() {
    run_table(true);
}
