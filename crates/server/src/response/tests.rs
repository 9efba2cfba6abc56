use super::*;
use crate::handler::{BodyLength, Request, Version};

const FIELDS: &[u8; FIELDS_LEN] = b"Server: falconet\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n";

fn respond(version: Version, head_only: bool, f: impl FnOnce(&mut Response<'_>)) -> (String, bool) {
    let mut out = Vec::new();
    let mut app = AppSlots::new(Pool::new());
    let encoder = Encoder::new(version, head_only, true);
    let mut response = Response::new(&mut out, FIELDS, encoder, &mut app);
    f(&mut response);
    let Answered::Now { keep_alive } = response.finish() else { panic!("not deferred") };
    (String::from_utf8(out).unwrap(), keep_alive)
}

/// The `Bytes` forms misused as a new user might: a second body, a body
/// after a streamed piece, a piece after the body. Each is a typed
/// error, with and without a place to share pieces (HTTP/2, HTTP/1),
/// and nothing is kept or written by the refused call.
#[test]
fn bytes_forms_refuse_misuse() {
    for share in [false, true] {
        let mut out = Vec::new();
        let mut pieces = Pieces::default();
        let mut app = AppSlots::new(Pool::new());
        let version = if share { Version::Http2 } else { Version::Http11 };
        let encoder = Encoder::new(version, false, true);
        let mut response = Response::new(&mut out, FIELDS, encoder, &mut app);
        if share {
            response = response.sharing(&mut pieces);
        }
        response.body_bytes(Bytes::from_static(&LARGE)).unwrap();
        let second = response.body_bytes(Bytes::from_static(b"two"));
        assert_eq!(second, Err(ResponseError::Finished), "share={share}");
        let piece = response.write_bytes(Bytes::from_static(b"three"));
        assert_eq!(piece, Err(ResponseError::Finished), "share={share}");
        // Only the first body: in place when shared, copied otherwise.
        assert!(out.ends_with(b"Content-Length: 4096\r\n\r\n") == share, "share={share}");
        assert!(out.ends_with(&LARGE) != share, "share={share}");
        assert_eq!((pieces.count(), pieces.len()), if share { (1, LARGE.len()) } else { (0, 0) });

        let mut out = Vec::new();
        let mut pieces = Pieces::default();
        let encoder = Encoder::new(version, false, true);
        let mut response = Response::new(&mut out, FIELDS, encoder, &mut app);
        if share {
            response = response.sharing(&mut pieces);
        }
        response.write_bytes(Bytes::new()).unwrap();
        response.write_bytes(Bytes::from_static(&LARGE)).unwrap();
        let late = response.body_bytes(Bytes::from_static(b"b"));
        assert_eq!(late, Err(ResponseError::HeadSent), "share={share}");
        assert_eq!(pieces.count(), usize::from(share), "an empty piece is not kept");
    }
}

/// The smallest piece HTTP/2 sends in place: [`HTTP2_COPY_BELOW`] bytes.
static LARGE: [u8; HTTP2_COPY_BELOW] = [b'x'; HTTP2_COPY_BELOW];

/// With a place to share pieces (HTTP/2), pieces under 4 KiB are
/// copied among the response's other bytes (small ones written one after
/// another then share DATA frames) and larger ones are kept in place,
/// each after what was written before it; a small body likewise.
#[test]
fn small_pieces_are_copied_and_large_ones_kept() {
    let mut app = AppSlots::new(Pool::new());
    let (mut out, mut pieces) = (Vec::new(), Pieces::default());
    let encoder = Encoder::new(Version::Http2, false, true);
    let mut response = Response::new(&mut out, FIELDS, encoder, &mut app).sharing(&mut pieces);
    for piece in [&b"a"[..], b"b", &LARGE[..HTTP2_COPY_BELOW - 1], &LARGE, b"c", &LARGE] {
        response.write_bytes(Bytes::from_static(piece)).unwrap();
    }
    let head_end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let copied = out.len() - head_end;
    assert_eq!(copied, 2 + (HTTP2_COPY_BELOW - 1) + 1, "the small pieces, copied");
    let kept: Vec<(usize, usize)> =
        pieces.iter().map(|(at, p)| (*at - head_end, p.len())).collect();
    assert_eq!(kept, [(HTTP2_COPY_BELOW + 1, LARGE.len()), (HTTP2_COPY_BELOW + 2, LARGE.len())]);

    for (body, in_place) in [(&LARGE[..1], false), (&LARGE[1..], false), (&LARGE[..], true)] {
        let (mut out, mut pieces) = (Vec::new(), Pieces::default());
        let encoder = Encoder::new(Version::Http2, false, true);
        let mut response = Response::new(&mut out, FIELDS, encoder, &mut app).sharing(&mut pieces);
        response.body_bytes(Bytes::from_static(body)).unwrap();
        assert_eq!(pieces.len(), if in_place { body.len() } else { 0 }, "{}", body.len());
        assert_eq!(out.ends_with(body), !in_place, "{}", body.len());
    }
}

#[test]
fn sized_body() {
    let (text, keep_alive) = respond(Version::Http11, false, |r| {
        r.header("Content-Type", "text/plain").unwrap().body(b"hi").unwrap();
    });
    assert_eq!(
        text,
        "HTTP/1.1 200 OK\r\nServer: falconet\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
         Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
    );
    assert!(keep_alive);
}

#[test]
fn the_application_names_the_server_once() {
    for name in ["Server", "server", "SERVER"] {
        let (text, _) = respond(Version::Http11, false, |r| {
            r.header(name, "mine/1.0").unwrap().body(b"").unwrap();
        });
        assert_eq!(text.matches("falconet").count(), 0, "{text}");
        assert_eq!(text.to_ascii_lowercase().matches("server:").count(), 1, "{text}");
    }
    let (text, _) = respond(Version::Http11, false, |r| {
        r.field(Field::new("Server: mine/1.0")).unwrap().body(b"").unwrap();
    });
    assert_eq!(text.matches("Server:").count(), 1, "{text}");
    assert!(text.contains("Server: mine/1.0\r\n"), "{text}");
    // A name that only starts like it is another field.
    let (text, _) = respond(Version::Http11, false, |r| {
        r.header("Server-Timing", "db;dur=1").unwrap().body(b"").unwrap();
    });
    assert!(text.contains("Server: falconet\r\n"), "{text}");
}

#[test]
fn streamed_body_is_chunked_for_1_1_and_close_delimited_for_1_0() {
    let (text, keep_alive) = respond(Version::Http11, false, |r| {
        r.write(b"hello ").unwrap();
        r.write(b"").unwrap();
        r.write(b"world, twenty bytes.").unwrap();
    });
    assert!(text.ends_with(
        "Transfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n14\r\nworld, twenty bytes.\r\n0\r\n\r\n"
    ));
    assert!(keep_alive);
    let (text, keep_alive) = respond(Version::Http10, false, |r| r.write(b"old").unwrap());
    assert!(text.ends_with("Connection: close\r\n\r\nold"), "{text}");
    assert!(!keep_alive);
}

#[test]
fn head_requests_get_the_length_but_no_body() {
    let (text, _) = respond(Version::Http11, true, |r| r.body(b"12345").unwrap());
    assert!(text.ends_with("Content-Length: 5\r\n\r\n"), "{text}");
}

#[test]
fn an_empty_response_has_length_zero_and_1_0_keep_alive_is_announced() {
    let (text, _) = respond(Version::Http10, false, |_| {});
    assert!(text.ends_with("Content-Length: 0\r\nConnection: keep-alive\r\n\r\n"), "{text}");
    let (text, _) = respond(Version::Http11, false, |r| {
        r.status(Status::NO_CONTENT).unwrap();
    });
    assert!(
        text.starts_with("HTTP/1.1 204 No Content\r\n") && text.ends_with("GMT\r\n\r\n"),
        "{text}"
    );
}

/// RFC 9112 §6.1: no Transfer-Encoding in a 204 response, and (§6.3)
/// no body after a 204 or 304 head, streamed or not, for HTTP/1.1 and
/// 1.0 alike (a 1.0 client keeps its connection). A 1xx is no final
/// status at all: refused.
#[test]
fn a_bodiless_status_streams_no_framing_and_no_body() {
    for version in [Version::Http11, Version::Http10] {
        for status in [Status::NO_CONTENT, Status::new(304).unwrap()] {
            let (text, keep_alive) = respond(version, false, |r| {
                r.status(status).unwrap();
                r.write(b"ignored").unwrap();
                r.write(b"too").unwrap();
            });
            assert!(!text.contains("Transfer-Encoding"), "{text}");
            assert!(
                text.ends_with("GMT\r\n\r\n") || text.ends_with("keep-alive\r\n\r\n"),
                "{text}"
            );
            assert!(keep_alive, "{version:?} {status:?}");
        }
    }
}

#[test]
fn the_path_of_a_target_with_an_empty_path_is_the_root() {
    let request = |target| Request {
        method: "GET",
        target,
        authority: b"a",
        scheme: "http",
        absolute: false,
        version: Version::Http11,
        headers: &[],
        body: BodyLength::Empty,
        stream: std::cell::Cell::new(false),
        peer: None,
    };
    assert_eq!(request("?q=1").path(), "/", "http://a?q=1 in absolute-form");
    assert_eq!(request("/x?q").path(), "/x");
    assert_eq!(request("/x").path(), "/x");
    assert_eq!(request("*").path(), "*");
    assert_eq!(request("/x").authority(), "a");
}

/// RFC 9112 §4: the space after the status code is sent even when the
/// reason phrase is empty.
#[test]
fn a_status_without_a_reason_keeps_its_space() {
    let (text, _) = respond(Version::Http11, false, |r| {
        r.status(Status::new(299).unwrap()).unwrap();
    });
    assert!(text.starts_with("HTTP/1.1 299 \r\n"), "{text}");
}

/// A 1xx alone would leave the client waiting for the final answer
/// (and pair the next one with this request): refused, and the
/// response goes on with its status unchanged.
#[test]
fn an_informational_status_is_no_final_answer() {
    for code in [100, 101, 103, 199] {
        let status = Status::new(code).unwrap();
        let (text, _) = respond(Version::Http11, false, |r| {
            assert_eq!(r.status(status).unwrap_err(), ResponseError::InformationalStatus(code));
            r.body(b"ok").unwrap();
        });
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    }
}

#[test]
fn misuse_is_a_typed_error_and_writes_nothing() {
    respond(Version::Http11, false, |r| {
        assert_eq!(r.header("Bad Name", "x").unwrap_err(), ResponseError::InvalidHeaderName);
        assert_eq!(r.header("X", "a\r\nb").unwrap_err(), ResponseError::InvalidHeaderValue);
        assert_eq!(r.header("content-length", "1").unwrap_err(), ResponseError::ReservedHeader);
        assert_eq!(
            r.header("Transfer-Encoding", "gzip").unwrap_err(),
            ResponseError::ReservedHeader
        );
        assert_eq!(Status::new(42).unwrap_err(), ResponseError::InvalidStatus(42));
        r.header("X", "1").unwrap();
        assert_eq!(r.status(Status::NOT_FOUND).unwrap_err(), ResponseError::HeadSent);
        r.body(b"").unwrap();
        assert_eq!(r.body(b"").unwrap_err(), ResponseError::Finished);
        assert_eq!(r.write(b"x").unwrap_err(), ResponseError::Finished);
    });
}

#[test]
fn compile_time_fields() {
    const TEXT: Field = Field::new("Content-Type: text/plain");
    let (text, _) = respond(Version::Http11, false, |r| {
        r.field(TEXT).unwrap().body(b"x").unwrap();
    });
    assert!(text.contains("\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx"), "{text}");
    for bad in ["", "No colon", ": empty", "Bad Name: x", "X:no-space", "Date: now", "X: a\rb"] {
        let line: &'static str = Box::leak(bad.to_string().into_boxed_str());
        assert!(std::panic::catch_unwind(|| Field::new(line)).is_err(), "{bad:?}");
    }
}
