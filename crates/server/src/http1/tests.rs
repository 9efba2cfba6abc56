//! The field and version checks of a request head.

use super::fields::*;
use super::head::*;
use super::*;

/// `Fields::read` over `(name, value)` lines.
fn fields(version: Version, lines: &[(&'static str, &'static [u8])]) -> Result<(), Status> {
    let headers: Vec<httparse::Header<'static>> =
        lines.iter().map(|&(name, value)| httparse::Header { name, value }).collect();
    Fields::read(&headers, version, &mut KnownHost::new()).map(drop)
}

#[test]
fn field_names_match_in_any_case_and_only_themselves() {
    for field in [
        Field::Host,
        Field::Upgrade,
        Field::Expect,
        Field::Connection,
        Field::ContentLength,
        Field::TransferEncoding,
    ] {
        let lower = field.name().as_bytes();
        assert!(is_named(lower, lower));
        assert!(is_named(&lower.to_ascii_uppercase(), lower));
        // Every token byte in every place: a match only where the
        // byte is the same letter in either case.
        for place in 0..lower.len() {
            for byte in (0..=255u8).filter(|&b| crate::syntax::TOKEN[usize::from(b)]) {
                let mut name = lower.to_vec();
                name[place] = byte;
                assert_eq!(
                    is_named(&name, lower),
                    name.eq_ignore_ascii_case(lower),
                    "{:?}",
                    String::from_utf8_lossy(&name)
                );
            }
        }
    }
}

#[test]
fn host_is_required_in_1_1_single_and_valid_in_any_version() {
    use Version::{Http10, Http11};
    assert_eq!(fields(Http11, &[("Host", b"a")]), Ok(()));
    assert_eq!(fields(Http11, &[("host", b"")]), Ok(()));
    assert_eq!(fields(Http10, &[]), Ok(()));
    assert_eq!(fields(Http10, &[("Host", b"[::1]:80")]), Ok(()));
    for (version, lines) in [
        (Http11, &[][..]),
        (Http11, &[("Host", &b"a"[..]), ("Host", b"a")]),
        (Http10, &[("Host", b"a"), ("HOST", b"b")]),
        (Http11, &[("Host", b"a b")]),
        (Http10, &[("Host", b"u@a")]),
    ] {
        assert_eq!(fields(version, lines), Err(Status::BAD_REQUEST), "{version:?} {lines:?}");
    }
}

#[test]
fn transfer_encoding_must_end_in_chunked_and_needs_1_1() {
    use Version::{Http10, Http11};
    let host = ("Host", &b"a"[..]);
    let te = |value: &'static [u8]| ("Transfer-Encoding", value);
    assert_eq!(fields(Http11, &[host, te(b"chunked")]), Ok(()));
    assert_eq!(fields(Http11, &[host, te(b"gzip, chunked")]), Err(Status::NOT_IMPLEMENTED));
    for (version, value) in [
        (Http11, &b"gzip"[..]),
        (Http11, b""),
        (Http11, b"chunked, gzip"),
        (Http11, b"chunked, chunked"),
        (Http11, b"chunked;a=b"),
        (Http10, b"chunked"),
        (Http10, b"gzip, chunked"),
    ] {
        assert_eq!(
            fields(version, &[host, te(value)]),
            Err(Status::BAD_REQUEST),
            "{version:?} {:?}",
            String::from_utf8_lossy(value)
        );
    }
}

/// `505` only for a well-formed request line with another major
/// version, HTTP/1.1 for a later HTTP/1 minor one; wherever the line
/// is cut, no verdict before its end and the same one after it.
#[test]
fn a_bad_version_slot_is_400_another_version_505() {
    const REFUSE_505: Verdict = Verdict::Refuse(Status::VERSION_NOT_SUPPORTED);
    const REFUSE_400: Verdict = Verdict::Refuse(Status::BAD_REQUEST);
    for (line, verdict) in [
        (&b"GET / HTTP/2.0\r\n\r\n"[..], REFUSE_505),
        (b"\r\nGET / HTTP/1.2\r\n\r\n", Verdict::AsHttp11(15)),
        (b"GET /x HTTP/1.9\r\nHost: a\r\n\r\n", Verdict::AsHttp11(14)),
        (b"GET / HTTP/1.2 \r\n\r\n", REFUSE_400),
        (b"GET / HTTP/3.0\r\nHost: a\r\n\r\n", REFUSE_505),
        (b"GET / HTTP/9\r\n\r\n", REFUSE_400),
        (b"GET / HTTP/1.\r\n\r\n", REFUSE_400),
        (b"GET / HTTP/1.a\r\n\r\n", REFUSE_400),
        (b"GET / HTTP/1.2.3\r\n\r\n", REFUSE_400),
        (b"GET / HTTP/01.1\r\n\r\n", REFUSE_400),
        (b"GET / HTTP/1\r\n\r\n", REFUSE_400),
        (b"GET / http/1.1\r\n\r\n", REFUSE_400),
        (b"GET /  HTTP/1.1\r\n\r\n", REFUSE_400),
        (b"GET / HTTP/x.1\r\n\r\n", REFUSE_400),
        (b"GET / HTTP-1.1\r\n\r\n", REFUSE_400),
        (b"GET / 1.1\r\n\r\n", REFUSE_400),
        // The proptest's find: the bad byte comes before a space.
        (b"CONNECT a:443 HTTP/001.1:Host: a:443\r\n\r\n", REFUSE_400),
    ] {
        let mut refused = 0;
        for end in 1..=line.len() {
            let mut headers = [httparse::EMPTY_HEADER; 4];
            let result = httparse::Request::new(&mut headers).parse(&line[..end]);
            if result == Err(httparse::Error::Version) {
                refused += 1;
                let ended = line[..end]
                    .iter()
                    .skip_while(|&&b| b == b'\r' || b == b'\n')
                    .any(|&b| b == b'\r');
                let expected = ended.then_some(verdict);
                assert_eq!(version_verdict(&line[..end]), expected, "{:?}", &line[..end]);
            }
        }
        assert!(refused > 0, "httparse refused {line:?} at its version");
    }
}
