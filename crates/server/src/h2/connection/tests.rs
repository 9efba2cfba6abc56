//! The connection state machine against hand-built client frames: each
//! case names the RFC 9113 section it checks.

use super::*;
use crate::h2::frame::{flag, kind};

/// What the sink saw.
#[derive(Debug, Default)]
struct Seen {
    events: Vec<String>,
    /// Each stream's receive side, as the sink got it.
    inputs: Vec<Arc<StreamInput>>,
    /// Leave DATA to be released later (a lent body), not consumed now.
    unconsumed: bool,
}

impl Streams for Seen {
    fn headers(&mut self, stream: u32, head: &Head, end_stream: bool, input: &Arc<StreamInput>) {
        self.inputs.push(Arc::clone(input));
        self.events.push(format!(
            "headers {stream} {} {} end={end_stream}",
            head.method().unwrap_or("-"),
            head.path().unwrap_or("-")
        ));
    }
    fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> bool {
        self.events.push(format!("data {stream} {} end={end_stream}", data.len()));
        !self.unconsumed
    }
    fn reset(&mut self, stream: u32) {
        self.events.push(format!("reset {stream}"));
    }
    fn writable(&mut self, stream: u32) {
        self.events.push(format!("writable {stream}"));
    }
}

/// A client: builds frames, feeds them, decodes what the server sent.
struct Client {
    conn: Connection,
    seen: Seen,
    encoder: Encoder,
    decoder: Decoder,
}

/// A frame the server sent, decoded loosely.
#[derive(Debug, PartialEq, Eq)]
enum Sent {
    Settings { ack: bool },
    WindowUpdate { stream: u32, increment: u32 },
    Ping { ack: bool },
    GoAway { code: ErrorCode },
    Rst { stream: u32, code: ErrorCode },
    Headers { stream: u32, status: String, end_stream: bool },
    Data { stream: u32, len: usize, end_stream: bool },
}

fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = FrameHeader { length: payload.len() as u32, kind, flags, stream }
        .to_bytes()
        .unwrap()
        .to_vec();
    out.extend_from_slice(payload);
    out
}

impl Client {
    fn new() -> Self {
        Self::with(Config::default())
    }

    fn with(config: Config) -> Self {
        let mut client = Self {
            conn: Connection::new(config).unwrap(),
            seen: Seen::default(),
            encoder: Encoder::new(),
            decoder: Decoder::default(),
        };
        let mut start = PREFACE.to_vec();
        start.extend(raw(kind::SETTINGS, 0, 0, &[]));
        client.feed(&start);
        let sent = client.sent();
        assert!(sent.contains(&Sent::Settings { ack: false }), "{sent:?}");
        assert!(sent.contains(&Sent::Settings { ack: true }), "{sent:?}");
        client
    }

    fn feed(&mut self, bytes: &[u8]) {
        let used = self.conn.receive(bytes, &mut self.seen);
        assert_eq!(used, bytes.len(), "whole frames are used");
    }

    fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        self.encoder
            .encode(fields.iter().map(|(n, v)| Field::new(n.as_bytes(), v.as_bytes())), &mut block);
        block
    }

    fn request(&mut self, stream: u32, path: &str, end_stream: bool) -> Vec<u8> {
        let block = self.block(&[(":method", "POST"), (":scheme", "http"), (":path", path)]);
        let flags = flag::END_HEADERS | if end_stream { flag::END_STREAM } else { 0 };
        raw(kind::HEADERS, flags, stream, &block)
    }

    /// Every byte of the output, across its pieces, taken.
    fn take_output(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let piece = self.conn.output();
            if piece.is_empty() {
                return out;
            }
            out.extend_from_slice(piece);
            let n = piece.len();
            self.conn.consume_output(n);
        }
    }

    fn sent(&mut self) -> Vec<Sent> {
        let out = self.take_output();
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
            let header = FrameHeader::parse(header);
            let payload = &rest[HEADER_LEN..HEADER_LEN + header.length as usize];
            let word = |at: usize| u32::from_be_bytes(payload[at..at + 4].try_into().unwrap());
            let end_stream = header.has(flag::END_STREAM);
            frames.push(match header.kind {
                kind::SETTINGS => Sent::Settings { ack: header.has(flag::ACK) },
                kind::WINDOW_UPDATE => {
                    Sent::WindowUpdate { stream: header.stream, increment: word(0) }
                }
                kind::PING => Sent::Ping { ack: header.has(flag::ACK) },
                kind::GOAWAY => Sent::GoAway { code: ErrorCode::from(word(4)) },
                kind::RST_STREAM => {
                    Sent::Rst { stream: header.stream, code: ErrorCode::from(word(0)) }
                }
                kind::HEADERS => {
                    let mut status = String::new();
                    self.decoder
                        .decode(payload, |f| {
                            if f.name == b":status" {
                                status = String::from_utf8_lossy(f.value).into_owned();
                            }
                        })
                        .unwrap();
                    Sent::Headers { stream: header.stream, status, end_stream }
                }
                kind::DATA => Sent::Data { stream: header.stream, len: payload.len(), end_stream },
                other => panic!("unexpected frame type {other}"),
            });
            rest = &rest[HEADER_LEN + header.length as usize..];
        }
        frames
    }

    fn events(&mut self) -> Vec<String> {
        std::mem::take(&mut self.seen.events)
    }

    fn goaway(&mut self) -> Option<ErrorCode> {
        self.sent().into_iter().find_map(|f| match f {
            Sent::GoAway { code } => Some(code),
            _ => None,
        })
    }
}

#[test]
fn a_request_and_its_response() {
    let mut c = Client::new();
    let headers = c.request(1, "/a", false);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, flag::END_STREAM, 1, b"hello"));
    assert_eq!(c.events(), ["headers 1 POST /a end=false", "data 1 5 end=true"]);
    c.conn.send_headers(1, 200, [Field::new(b"content-type", b"text/plain")], false);
    assert_eq!(c.conn.send_data(1, b"world", true), 5);
    let sent = c.sent();
    assert_eq!(
        &sent[sent.len() - 2..],
        [
            Sent::Headers { stream: 1, status: "200".into(), end_stream: false },
            Sent::Data { stream: 1, len: 5, end_stream: true }
        ]
    );
    assert_eq!(c.conn.open_streams(), 0);
}

/// 6.9: a finished stream whose body nobody released, and whose receive
/// side nobody holds any more, gives those bytes back to the connection
/// as it ends (a WINDOW_UPDATE), not when its receive side is reused:
/// kept for reuse with them still counted, they were lost to a
/// connection that then ran fewer streams at once.
#[test]
fn a_finished_stream_gives_back_what_nobody_released() {
    let mut c = Client::new();
    c.seen.unconsumed = true;
    let headers = c.request(1, "/a", false);
    c.feed(&headers);
    let body = 33 * 16_384; // past half the connection window
    for n in 1..=33 {
        c.feed(&raw(kind::DATA, if n == 33 { flag::END_STREAM } else { 0 }, 1, &[0; 16_384]));
    }
    assert_eq!(c.conn.recv.available(), (1 << 20) - body);
    // The application never read the body and let go of its reader.
    c.seen.inputs.clear();
    c.conn.send_headers(1, 401, [], true);
    assert_eq!(c.conn.open_streams(), 0);
    assert!(c.sent().contains(&Sent::WindowUpdate { stream: 0, increment: body }));
    assert_eq!(c.conn.recv.available(), 1 << 20);

    // Still held (a reader that may yet read and release): kept counted.
    let headers = c.request(3, "/b", false);
    c.feed(&headers);
    for n in 1..=33 {
        c.feed(&raw(kind::DATA, if n == 33 { flag::END_STREAM } else { 0 }, 3, &[0; 16_384]));
    }
    c.conn.send_headers(3, 200, [], true);
    assert_eq!(c.conn.open_streams(), 0);
    assert!(!c.sent().iter().any(|f| matches!(f, Sent::WindowUpdate { stream: 0, .. })));
    let reader = c.seen.inputs.pop().unwrap();
    assert_eq!(reader.release(body).unwrap().connection, Some(body));
}

/// 3.4: the preface must be exact, and SETTINGS must follow it.
#[test]
fn preface_rules() {
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut seen = Seen::default();
    assert_eq!(conn.receive(&PREFACE[..10], &mut seen), 0);
    assert!(conn.error().is_none());
    let mut wrong = PREFACE.to_vec();
    wrong[3] = b'X';
    conn.receive(&wrong, &mut seen);
    assert_eq!(conn.error().map(|e| e.code), Some(ErrorCode::PROTOCOL_ERROR));
    assert!(conn.is_closed());

    let mut conn = Connection::new(Config::default()).unwrap();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(raw(kind::PING, 0, 0, &[0; 8]));
    conn.receive(&bytes, &mut seen);
    assert_eq!(conn.error().map(|e| e.code), Some(ErrorCode::PROTOCOL_ERROR));
}

/// Frames split anywhere are reassembled by the caller: `receive` uses
/// whole frames only.
#[test]
fn partial_frames_wait() {
    let mut c = Client::new();
    let frame = raw(kind::PING, 0, 0, &[7; 8]);
    assert_eq!(c.conn.receive(&frame[..5], &mut c.seen), 0);
    assert_eq!(c.conn.receive(&frame[..12], &mut c.seen), 0);
    assert_eq!(c.conn.receive(&frame, &mut c.seen), frame.len());
    assert_eq!(c.sent(), [Sent::Ping { ack: true }]);
}

/// 5.1.1: client streams are odd and increasing.
#[test]
fn stream_ids() {
    let mut c = Client::new();
    let even = c.request(2, "/", true);
    c.feed(&even);
    assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));

    // An unused id below the last: PROTOCOL_ERROR (5.1.1).
    let mut c = Client::new();
    let five = c.request(5, "/", true);
    c.feed(&five);
    c.conn.send_headers(5, 204, [], true);
    let three = c.request(3, "/", true);
    c.feed(&three);
    assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));

    // A stream that completed: STREAM_CLOSED (5.1).
    let mut c = Client::new();
    let five = c.request(5, "/", true);
    c.feed(&five);
    c.conn.send_headers(5, 204, [], true);
    let again = c.request(5, "/", true);
    c.feed(&again);
    assert_eq!(c.goaway(), Some(ErrorCode::STREAM_CLOSED));
}

/// 5.1: frames on idle streams.
#[test]
fn idle_stream_frames() {
    for frame in [
        raw(kind::DATA, 0, 1, b"x"),
        raw(kind::RST_STREAM, 0, 1, &[0, 0, 0, 8]),
        raw(kind::WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1]),
    ] {
        let mut c = Client::new();
        c.feed(&frame);
        assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));
    }
    // PRIORITY on an idle stream is fine.
    let mut c = Client::new();
    c.feed(&raw(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]));
    assert_eq!(c.sent(), []);
    // A malformed one there is a stream error (5.3.1, 6.3), but no
    // RST_STREAM may go on an idle stream (6.4): the connection's, with
    // the frame's own code, and no RST at all.
    for (payload, code) in [
        (&[0, 0, 0, 1, 16][..], ErrorCode::PROTOCOL_ERROR),
        (&[0, 0, 0, 3], ErrorCode::FRAME_SIZE_ERROR),
    ] {
        let mut c = Client::new();
        c.feed(&raw(kind::PRIORITY, 0, 1, payload));
        let sent = c.sent();
        assert!(sent.contains(&Sent::GoAway { code }), "{payload:?}: {sent:?}");
        assert!(!sent.iter().any(|s| matches!(s, Sent::Rst { .. })), "{payload:?}: {sent:?}");
    }
}

/// 5.1: half-closed (remote) takes no more DATA or HEADERS.
#[test]
fn half_closed_remote() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, 0, 1, b"x"));
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::STREAM_CLOSED }));
    assert_eq!(c.events(), ["headers 1 POST / end=true", "reset 1"]);
    // The stream is gone; a response to it sends nothing.
    c.conn.send_headers(1, 200, [], true);
    assert_eq!(c.sent(), []);
}

/// 5.1: DATA for a stream we reset is ignored, but still counted
/// against the connection window (6.9).
#[test]
fn data_after_our_reset_is_ignored() {
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.conn.reset(1, ErrorCode::CANCEL);
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::CANCEL }));
    let before = c.conn.recv.available();
    c.feed(&raw(kind::DATA, 0, 1, &[0; 100]));
    assert_eq!(c.sent(), []);
    assert_eq!(c.conn.recv.available(), before, "counted, then given back");
}

/// 6.10: only the block's CONTINUATIONs may follow a HEADERS without
/// END_HEADERS.
#[test]
fn continuation_rules() {
    let mut c = Client::new();
    let block = c.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/split")]);
    assert!(!c.conn.in_field_block());
    assert_eq!(c.conn.field_blocks_ended(), 0);
    c.feed(&raw(kind::HEADERS, flag::END_STREAM, 1, &block[..2]));
    assert!(c.conn.in_field_block() && c.conn.open_streams() == 0, "no stream before the end");
    c.feed(&raw(kind::CONTINUATION, 0, 1, &block[2..4]));
    assert!(c.conn.in_field_block());
    assert_eq!(c.conn.field_blocks_ended(), 0, "not before its end");
    c.feed(&raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block[4..]));
    assert!(!c.conn.in_field_block());
    assert_eq!(c.conn.field_blocks_ended(), 1);
    assert_eq!(c.events(), ["headers 1 GET /split end=true"]);

    let mut c = Client::new();
    let block = c.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/")]);
    c.feed(&raw(kind::HEADERS, 0, 1, &block));
    c.feed(&raw(kind::PING, 0, 0, &[0; 8]));
    assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));
    assert!(!c.conn.in_field_block(), "a failed connection has no block under way");
    assert_eq!(c.conn.field_blocks_ended(), 0, "nor one that ended");

    let mut c = Client::new();
    c.feed(&raw(kind::HEADERS, 0, 1, &block));
    c.feed(&raw(kind::CONTINUATION, flag::END_HEADERS, 3, &[]));
    assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));

    let mut c = Client::new();
    c.feed(&raw(kind::CONTINUATION, flag::END_HEADERS, 1, &[]));
    assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));
}

/// 6.8: a connection that fails while a new request's field block is
/// under way names the stream before it as the last one (the request was
/// not acted on, so the client may retry it); trailers' streams stay named.
#[test]
fn a_goaway_mid_block_does_not_name_the_unfinished_request() {
    let goaway_last = |c: &mut Client| {
        let out = c.take_output();
        let mut rest = &out[..];
        while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
            let header = FrameHeader::parse(header);
            let payload = &rest[HEADER_LEN..HEADER_LEN + header.length as usize];
            if header.kind == kind::GOAWAY {
                return Some(u32::from_be_bytes(payload[..4].try_into().unwrap()) & 0x7fff_ffff);
            }
            rest = &rest[HEADER_LEN + header.length as usize..];
        }
        None
    };
    // A new request on 5 (not named: 3 is), trailers on 3 (named).
    for (trailers, id) in [(false, 5), (true, 3)] {
        let mut c = Client::new();
        let headers = c.request(1, "/", true);
        c.feed(&headers);
        let headers = c.request(3, "/", false);
        c.feed(&headers);
        let block = if trailers {
            c.block(&[("x-trailer", "1")])
        } else {
            c.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/")])
        };
        c.feed(&raw(kind::HEADERS, flag::END_STREAM, id, &block[..1]));
        c.feed(&raw(kind::PING, 0, 0, &[0; 8]));
        assert_eq!(goaway_last(&mut c), Some(3), "trailers {trailers}");
    }
    // With nothing before it, the unfinished request's GOAWAY names 0.
    let mut c = Client::new();
    c.feed(&raw(kind::HEADERS, flag::END_STREAM, 1, &[0x82]));
    c.conn.abort(ErrorCode::NO_ERROR);
    assert_eq!(goaway_last(&mut c), Some(0));
}

/// 4.3, 6.10: inside an open block any other frame is a connection
/// PROTOCOL_ERROR, a malformed one too, whatever its own error would be
/// (a PRIORITY of 4 bytes, a self-dependent PRIORITY or a zero
/// WINDOW_UPDATE on the block's stream are stream errors elsewhere; a short
/// PING or RST_STREAM, FRAME_SIZE_ERROR). The stream's block must not go
/// on after a reset and reopen its id as a new request.
#[test]
fn a_malformed_frame_inside_a_block_ends_the_connection() {
    let intruders: [(&str, Vec<u8>); 6] = [
        ("PRIORITY of 4 bytes", raw(kind::PRIORITY, 0, 1, &[0; 4])),
        ("PRIORITY on itself", raw(kind::PRIORITY, 0, 1, &[0, 0, 0, 1, 16])),
        ("zero WINDOW_UPDATE", raw(kind::WINDOW_UPDATE, 0, 1, &[0; 4])),
        ("RST_STREAM of 3 bytes", raw(kind::RST_STREAM, 0, 1, &[0; 3])),
        ("PING of 7 bytes", raw(kind::PING, 0, 0, &[0; 7])),
        ("DATA past the frame size", raw(kind::DATA, 0, 1, &[0; 16_385])),
    ];
    for (name, intruder) in intruders {
        // A new request's block, and trailers on an open stream.
        for trailers in [false, true] {
            let mut c = Client::new();
            let block = if trailers {
                let request = c.request(1, "/echo", false);
                c.feed(&request);
                c.block(&[("x-checksum", "abc")])
            } else {
                c.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/")])
            };
            let flags = if trailers { flag::END_STREAM } else { 0 };
            c.feed(&raw(kind::HEADERS, flags, 1, &block[..1]));
            c.events();
            c.sent();
            c.feed(&intruder);
            c.feed(&raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block[1..]));
            let sent = c.sent();
            assert!(
                sent.contains(&Sent::GoAway { code: ErrorCode::PROTOCOL_ERROR }),
                "{name}, trailers {trailers}: {sent:?}"
            );
            assert!(
                !sent.iter().any(|f| matches!(f, Sent::Rst { .. })),
                "{name}, trailers {trailers}: {sent:?}"
            );
            let events = c.events();
            assert!(!events.iter().any(|e| e.starts_with("headers")), "{name}: {events:?}");
        }
    }
}

/// Trailers that began while the stream was open and ended after our
/// side reset it (the response finished while the client was still
/// sending: RST_STREAM(NO_ERROR), 8.1) are decoded and dropped: not a
/// second RST_STREAM, and not a new request on the used id, whatever the
/// block holds.
#[test]
fn trailers_cut_by_our_reset_are_dropped_not_a_new_request() {
    let mut c = Client::new();
    let request = c.request(1, "/echo", false);
    c.feed(&request);
    let block = c.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/again")]);
    c.feed(&raw(kind::HEADERS, flag::END_STREAM, 1, &block[..1]));
    c.conn.send_headers(1, 200, [], false);
    c.conn.send_data(1, b"", true); // our side ends: RST_STREAM(NO_ERROR)
    c.events();
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::NO_ERROR }));
    c.feed(&raw(kind::CONTINUATION, flag::END_HEADERS, 1, &block[1..]));
    assert_eq!(c.sent(), []);
    assert_eq!(c.events(), Vec::<String>::new());
    // The table stayed in step: the next request decodes.
    let next = c.request(3, "/next", true);
    c.feed(&next);
    assert_eq!(c.events(), ["headers 3 POST /next end=true"]);
    // And stream 1 is closed for good (5.1).
    let again = c.request(1, "/again", true);
    c.feed(&again);
    assert_eq!(c.goaway(), Some(ErrorCode::STREAM_CLOSED));
}

/// 3.4: the first frame after the preface must be SETTINGS: a malformed
/// frame of another type is PROTOCOL_ERROR too, not its own frame error.
#[test]
fn a_malformed_first_frame_is_a_preface_error() {
    let firsts = [
        raw(kind::PING, 0, 0, &[0; 7]),
        raw(kind::PRIORITY, 0, 1, &[0; 4]),
        raw(kind::RST_STREAM, 0, 1, &[0; 3]),
        raw(kind::DATA, 0, 1, &[0; 16_385]),
    ];
    for first in firsts {
        let mut conn = Connection::new(Config::default()).unwrap();
        let mut bytes = PREFACE.to_vec();
        bytes.extend(&first);
        conn.receive(&bytes, &mut Seen::default());
        assert_eq!(conn.error().map(|e| e.code), Some(ErrorCode::PROTOCOL_ERROR), "{first:?}");
    }
    // A malformed SETTINGS is still SETTINGS' own error (6.5).
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(raw(kind::SETTINGS, 0, 0, &[0; 5]));
    conn.receive(&bytes, &mut Seen::default());
    assert_eq!(conn.error().map(|e| e.code), Some(ErrorCode::FRAME_SIZE_ERROR));
}

/// 6.10: a field block may be split anywhere; an 8 KiB block in 1 KiB
/// frames (HEADERS and seven CONTINUATIONs, more than h2's limit of 5) is
/// no flood.
#[test]
fn a_block_in_small_continuations_is_served() {
    let mut c = Client::new();
    let value: String = (0..1000).map(|i| char::from(b'!' + (i * 7 % 90) as u8)).collect();
    let names: Vec<String> = (0..8).map(|i| format!("x-field-{i}")).collect();
    let mut fields = vec![(":method", "GET"), (":scheme", "http"), (":path", "/split")];
    fields.extend(names.iter().map(|name| (name.as_str(), value.as_str())));
    let block = c.block(&fields);
    assert!(block.len() > 7 * 1024, "{} bytes", block.len());
    let mut pieces = block.chunks(1024).peekable();
    c.feed(&raw(kind::HEADERS, flag::END_STREAM, 1, pieces.next().unwrap()));
    let mut frames = 1;
    while let Some(piece) = pieces.next() {
        let flags = if pieces.peek().is_none() { flag::END_HEADERS } else { 0 };
        c.feed(&raw(kind::CONTINUATION, flags, 1, piece));
        frames += 1;
    }
    assert_eq!(frames, block.len().div_ceil(1024));
    assert_eq!(c.goaway(), None);
    assert_eq!(c.events(), ["headers 1 GET /split end=true"]);
}

/// 5.1: after our RST_STREAM (here for a body longer than its
/// content-length, 8.1.1) the client may still send what it sent before
/// it saw it: its trailers are decoded (the table stays in step: the next
/// request refers to entries added after them) and dropped, not a
/// connection error. Once they ended the stream, more HEADERS on it are.
#[test]
fn trailers_after_our_reset_are_decoded_and_dropped() {
    let mut c = Client::new();
    let block = c.block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/first"),
        ("content-length", "1"),
    ]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 1, &block));
    c.feed(&raw(kind::DATA, 0, 1, b"too long"));
    let sent = c.sent();
    assert!(sent.contains(&Sent::Rst { stream: 1, code: ErrorCode::PROTOCOL_ERROR }), "{sent:?}");
    let trailers = c.block(&[("x-checksum", "abc")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &trailers));
    // "/first" now sits one entry further down the client's table.
    let block = c.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/first")]);
    assert!(block.len() <= 4, "indexed: {block:?}");
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &block));
    assert_eq!(c.goaway(), None);
    let events = c.events();
    assert!(events.contains(&"headers 3 POST /first end=true".to_string()), "{events:?}");
    // The trailers ended stream 1: HEADERS on it now is a closed stream's.
    let trailers = c.block(&[("x-checksum", "abc")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &trailers));
    assert_eq!(c.goaway(), Some(ErrorCode::STREAM_CLOSED));
}

/// 5.1: a stream refused past MAX_CONCURRENT_STREAMS may still get its
/// body and trailers; each dropped HEADERS counts as a frame that does no
/// work, so a client that sends them again and again is a flood.
#[test]
fn headers_on_a_reset_stream_again_and_again_are_a_flood() {
    let mut c = Client::with(Config { max_concurrent_streams: 1, ..Config::default() });
    let request = c.request(1, "/open", false);
    c.feed(&request);
    let request = c.request(3, "/refused", false);
    c.feed(&request);
    let sent = c.sent();
    assert!(sent.contains(&Sent::Rst { stream: 3, code: ErrorCode::REFUSED_STREAM }), "{sent:?}");
    let mut frames = 0;
    while c.conn.error().is_none() {
        // Without END_STREAM: never the stream's last word.
        let trailers = c.block(&[("x-again", "1")]);
        c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 3, &trailers));
        frames += 1;
        assert!(frames <= 1000, "still reading after {frames} frames");
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// Stream 1 reset by us: a body longer than its content-length (8.1.1).
fn reset_stream_1(c: &mut Client) {
    let block = c.block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/"),
        ("content-length", "1"),
    ]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 1, &block));
    c.feed(&raw(kind::DATA, 0, 1, b"too long"));
    let sent = c.sent();
    assert!(sent.contains(&Sent::Rst { stream: 1, code: ErrorCode::PROTOCOL_ERROR }), "{sent:?}");
    assert_eq!(c.events(), ["headers 1 POST / end=false", "reset 1"]);
}

/// From a review: a DATA frame dropped on a reset stream paid back the
/// idle-frame count that each discarded HEADERS adds, so HEADERS (15 KiB
/// of never-indexed fields, decoded every time) and a 1-byte DATA, again
/// and again, went on for ever. Only DATA that an open stream takes pays
/// back now.
#[test]
fn dropped_data_does_not_pay_for_discarded_headers() {
    let mut c = Client::new();
    reset_stream_1(&mut c);
    let value = "v".repeat(1000);
    let mut rounds = 0;
    while c.conn.error().is_none() {
        let mut block = Vec::new();
        for i in 0..15 {
            let name = format!("x-pad-{i}");
            c.encoder.encode([Field::sensitive(name.as_bytes(), value.as_bytes())], &mut block);
        }
        c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 1, &block));
        c.feed(&raw(kind::DATA, 0, 1, b"x"));
        rounds += 1;
        assert!(rounds <= 200, "still reading after {rounds} rounds");
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// From a review: after trailers that ended a reset stream, a DATA frame
/// (answered with RST_STREAM(STREAM_CLOSED)) put the id back among the
/// reset ones, and the next HEADERS on it was dropped again. A stream the
/// client ended stays closed: HEADERS on it is STREAM_CLOSED.
#[test]
fn a_stream_ended_by_dropped_trailers_stays_closed() {
    let mut c = Client::new();
    reset_stream_1(&mut c);
    let trailers = c.block(&[("x-checksum", "abc")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &trailers));
    assert_eq!(c.goaway(), None);
    c.feed(&raw(kind::DATA, 0, 1, b"after end_stream"));
    let trailers = c.block(&[("x-checksum", "def")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &trailers));
    assert_eq!(c.goaway(), Some(ErrorCode::STREAM_CLOSED));
}

/// A dropped block in CONTINUATIONs, past the header-list limit midway
/// (ten references to a 3,000-byte entry), then an entry added after the
/// overflow: decoded to the end, so the next request's reference to that
/// entry (its `:path`, index 62) finds it.
#[test]
fn a_dropped_block_in_continuations_keeps_the_table_in_step() {
    let mut c = Client::new();
    reset_stream_1(&mut c);
    // A string literal without Huffman coding (RFC 7541 5.2): short, or
    // the 3,000 bytes below (the length's integer: 127 + 57 + 22 x 128).
    let string = |out: &mut Vec<u8>, s: &[u8]| {
        match s.len() {
            len @ 0..127 => out.push(len as u8),
            3000 => out.extend([127, 0x80 | 57, 22]),
            len => panic!("no encoding here for {len}"),
        }
        out.extend_from_slice(s);
    };
    let big = vec![b'b'; 3000];
    let mut block = vec![0x40]; // literal, incremental indexing, new name
    string(&mut block, b"x-big");
    string(&mut block, &big);
    block.extend([0x80 | 62; 10]); // 30 KB decoded: past the limit
    block.push(0x40 | 4); // `:path` (static 4), incremental indexing
    string(&mut block, b"/from-the-discard");
    let mut pieces = block.chunks(700).peekable();
    c.feed(&raw(kind::HEADERS, 0, 1, pieces.next().unwrap()));
    while let Some(piece) = pieces.next() {
        let flags = if pieces.peek().is_none() { flag::END_HEADERS } else { 0 };
        c.feed(&raw(kind::CONTINUATION, flags, 1, piece));
    }
    assert_eq!(c.goaway(), None);
    // :method GET, :scheme http, then index 62: the `:path` entry.
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &[0x82, 0x86, 0x80 | 62]));
    assert_eq!(c.goaway(), None);
    assert_eq!(c.events(), ["headers 3 GET /from-the-discard end=true"]);
}

/// Another frame inside a dropped block (HEADERS without END_HEADERS on a
/// reset stream): PROTOCOL_ERROR, as inside any block (6.10).
#[test]
fn a_frame_inside_a_dropped_block_is_a_connection_error() {
    let mut c = Client::new();
    reset_stream_1(&mut c);
    let trailers = c.block(&[("x-checksum", "abc")]);
    c.feed(&raw(kind::HEADERS, 0, 1, &trailers));
    c.feed(&raw(kind::PING, 0, 0, &[0; 8]));
    assert_eq!(c.goaway(), Some(ErrorCode::PROTOCOL_ERROR));
}

/// A SETTINGS frame of up to MAX_SETTINGS_PARAMS parameters is applied
/// (the last INITIAL_WINDOW_SIZE wins); one more is
/// ENHANCE_YOUR_CALM (CVE-2020-11080 class: each such parameter is applied
/// to every open stream).
#[test]
fn long_settings_frames() {
    let entry = |value: u32| {
        let mut entry = setting::INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
        entry.extend(value.to_be_bytes());
        entry
    };
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    let most: Vec<u8> = (0..MAX_SETTINGS_PARAMS as u32).flat_map(|i| entry(1000 + i)).collect();
    c.feed(&raw(kind::SETTINGS, 0, 0, &most));
    assert!(c.conn.error().is_none());
    assert_eq!(c.conn.send_credit(1), 1000 + MAX_SETTINGS_PARAMS - 1);
    let too_many: Vec<u8> = (0..=MAX_SETTINGS_PARAMS as u32).flat_map(entry).collect();
    c.feed(&raw(kind::SETTINGS, 0, 0, &too_many));
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// CVE-2024-27316 class: endless CONTINUATION frames end the connection
/// early, with bounded memory.
#[test]
fn continuation_flood() {
    let mut c = Client::new();
    c.feed(&raw(kind::HEADERS, 0, 1, &[0x82]));
    let mut frames = 0;
    while c.conn.error().is_none() {
        c.feed(&raw(kind::CONTINUATION, 0, 1, &[0x40, 1, b'a', 1, b'b']));
        frames += 1;
        assert!(frames < 100, "still reading after {frames} frames");
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    // Large fragments hit the byte limit first.
    let mut c = Client::new();
    c.feed(&raw(kind::HEADERS, 0, 1, &[0x82]));
    for _ in 0..2 {
        c.feed(&raw(kind::CONTINUATION, 0, 1, &vec![0x82; 16_000]));
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// CVE-2023-44487: HEADERS then RST_STREAM, again and again.
#[test]
fn rapid_reset() {
    let mut c = Client::with(Config { reset_budget: 50, ..Config::default() });
    let mut stream = 1;
    while c.conn.error().is_none() {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
        c.feed(&raw(kind::RST_STREAM, 0, stream, &[0, 0, 0, 8]));
        stream += 2;
        assert!(stream < 200, "no limit");
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    assert_eq!(stream, 1 + 2 * 51);
}

/// Completed streams refill the budget: a client that cancels now and
/// then is never cut off.
#[test]
fn ordinary_cancels_are_not_an_attack() {
    let mut c = Client::with(Config { reset_budget: 5, ..Config::default() });
    for i in 0..200u32 {
        let stream = 1 + 2 * i;
        let headers = c.request(stream, "/", true);
        c.feed(&headers);
        if i % 3 == 0 {
            c.feed(&raw(kind::RST_STREAM, 0, stream, &[0, 0, 0, 8]));
        } else {
            c.conn.send_headers(stream, 200, [], true);
        }
    }
    assert!(c.conn.error().is_none());
}

/// CVE-2025-8671 (MadeYouReset): frames that make the server reset
/// streams spend the same budget.
#[test]
fn made_you_reset() {
    let mut c = Client::with(Config { reset_budget: 20, ..Config::default() });
    let mut stream = 1;
    while c.conn.error().is_none() {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
        c.feed(&raw(kind::WINDOW_UPDATE, 0, stream, &[0, 0, 0, 0])); // stream error
        stream += 2;
        assert!(stream < 100, "no limit");
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// HEADERS then RST_STREAM on stream `stream`, with the clock at `now`
/// (ms) first.
fn reset_at(c: &mut Client, stream: u32, now: u64) {
    c.conn.tick(now);
    let headers = c.request(stream, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::RST_STREAM, 0, stream, &[0, 0, 0, 8]));
}

/// Time earns resets back, `reset_refill_per_second` a second, never
/// past the budget: 5 at once, then one each 100 ms at 10 a second.
#[test]
fn time_earns_resets_back() {
    let config = Config { reset_budget: 5, reset_refill_per_second: 10, ..Config::default() };
    let mut c = Client::with(config);
    let mut stream = 1;
    for _ in 0..5 {
        reset_at(&mut c, stream, 0);
        stream += 2;
    }
    // An hour idle earns the budget back, not an hour's worth.
    reset_at(&mut c, stream, 3_600_000);
    stream += 2;
    for _ in 0..4 {
        reset_at(&mut c, stream, 3_600_000);
        stream += 2;
    }
    assert!(c.conn.error().is_none());
    // Spent: 99 ms earns 0.99 of one, the 100th ms the whole one.
    reset_at(&mut c, stream, 3_600_100);
    stream += 2;
    assert!(c.conn.error().is_none());
    reset_at(&mut c, stream, 3_600_199);
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// A flood runs dry within the burst even as time refills it: at one
/// reset a millisecond, the default budget (1,000 at once, 33 a second)
/// lasts about 1,034 resets.
#[test]
fn rapid_reset_with_the_clock_running() {
    let mut c = Client::with(Config::default());
    let mut stream = 1;
    let mut now = 0;
    while c.conn.error().is_none() {
        reset_at(&mut c, stream, now);
        stream += 2;
        now += 1;
        assert!(stream < 3_000, "no limit");
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    let resets = (stream - 1) / 2;
    assert!((1_030..=1_040).contains(&resets), "{resets} resets");
}

/// Go's TestIssue20704Race: 1,000 downloads, each cancelled once its
/// response's HEADERS arrived, none read to the end, on one connection;
/// then it goes on cancelling one every 100 ms for a minute (a client
/// that abandons downloads now and then, for ever).
#[test]
fn cancelled_downloads_are_not_an_attack() {
    let mut c = Client::with(Config::default());
    let mut now = 0;
    for i in 0..1_600u32 {
        let stream = 1 + 2 * i;
        c.conn.tick(now);
        let headers = c.request(stream, "/", true);
        c.feed(&headers);
        c.conn.send_headers(stream, 200, [], false);
        c.conn.send_data(stream, b"partial", false);
        c.feed(&raw(kind::RST_STREAM, 0, stream, &[0, 0, 0, 8]));
        now += if i < 1_000 { 1 } else { 100 };
        assert!(c.conn.error().is_none(), "cut off at the {}th download", i + 1);
    }
}

/// Without a refill rate only completed streams earn resets back, as
/// before the clock.
#[test]
fn no_refill_rate_no_time_refill() {
    let config = Config { reset_budget: 3, reset_refill_per_second: 0, ..Config::default() };
    let mut c = Client::with(config);
    for (i, now) in [0, 1_000_000, 2_000_000].into_iter().enumerate() {
        reset_at(&mut c, 1 + 2 * i as u32, now);
    }
    assert!(c.conn.error().is_none());
    reset_at(&mut c, 7, u64::MAX);
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// CVE-2019-9512: PINGs from a client that does not read the answers.
#[test]
fn ping_flood() {
    let mut c = Client::with(Config { max_queued_control: 10, ..Config::default() });
    for _ in 0..5 {
        c.feed(&raw(kind::PING, 0, 0, &[0; 8]));
    }
    c.sent(); // the client read these
    for _ in 0..11 {
        c.feed(&raw(kind::PING, 0, 0, &[0; 8]));
    }
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// `answer_bytes` counts what the client's own frames made us queue
/// (acknowledgements, resets), whole frames, and nothing else: not an
/// acknowledgement of ours coming back, not a response.
#[test]
fn answer_bytes_count_acknowledgements_and_resets_only() {
    let mut c = Client::new();
    assert_eq!(c.conn.answer_bytes(), 9, "the SETTINGS acknowledgement");
    c.feed(&raw(kind::PING, 0, 0, &[7; 8]));
    assert_eq!(c.conn.answer_bytes(), 9 + 17);
    c.feed(&raw(kind::PING, flag::ACK, 0, &[7; 8]));
    assert_eq!(c.conn.answer_bytes(), 9 + 17, "an acknowledgement asks for nothing");
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    let mut body = Bytes::from_static(b"response");
    c.conn.send_headers(1, 200, [], false);
    c.conn.send_shared(1, &mut body, true);
    assert_eq!(c.conn.answer_bytes(), 9 + 17, "a response is not an answer to a frame");
    let headers = c.request(3, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 3, &[0, 0, 0, 0])); // a stream error: RST_STREAM
    assert_eq!(c.conn.answer_bytes(), 9 + 17 + 13);
}

/// `data_header_bytes` counts the 9-byte header of each DATA frame the
/// client's credit cut short, and nothing else: not full frames, not
/// frames the data itself made small (a response's small pieces are its
/// own framing, as chunks are over HTTP/1).
#[test]
fn data_header_bytes_count_frames_cut_short_by_credit() {
    let mut c = Client::new();
    assert_eq!(c.conn.data_header_bytes(), 0);
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], false);
    assert_eq!(c.conn.data_header_bytes(), 0, "HEADERS are the response's");
    // 40,000 bytes within the 65,535 of credit: the data ends the frames.
    assert_eq!(c.conn.send_data(1, &[b'x'; 40_000], false), 40_000);
    let mut piece = Bytes::from_static(b"tail");
    c.conn.send_shared(1, &mut piece, false);
    assert_eq!(c.conn.data_header_bytes(), 0, "small pieces with credit to spare");
    // 30,000 more against the 25,531 left: a full frame, then one of
    // 9,147 that spends the last of the credit.
    assert_eq!(c.conn.send_data(1, &[b'x'; 30_000], false), 25_531);
    assert_eq!(c.conn.data_header_bytes(), 9);
    // A byte of credit at a time: each frame is the client's doing.
    for granted in 1..=3u64 {
        c.feed(&raw(kind::WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()));
        c.feed(&raw(kind::WINDOW_UPDATE, 0, 1, &1u32.to_be_bytes()));
        assert_eq!(c.conn.send_data(1, &[b'x'; 100], false), 1);
        assert_eq!(c.conn.data_header_bytes(), 9 + 9 * granted);
    }
    // The end, with no credit left: an empty frame the data made, not
    // the credit; billed.
    c.conn.send_data(1, b"", true);
    assert_eq!(c.conn.data_header_bytes(), 36);
}

/// `request_frames` counts the frames that carry part of a request
/// (what the I/O timeout takes for the client's progress) and nothing
/// that moves no request on.
#[test]
fn request_frames_count_heads_and_bodies_only() {
    let mut c = Client::new();
    assert_eq!(c.conn.request_frames(), 0, "the preface and SETTINGS");
    c.feed(&raw(kind::PING, 0, 0, &[7; 8]));
    c.feed(&raw(kind::SETTINGS, 0, 0, &[]));
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()));
    c.feed(&raw(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]));
    assert_eq!(c.conn.request_frames(), 0, "control and ignored frames");
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    assert_eq!(c.conn.request_frames(), 1, "HEADERS");
    c.feed(&raw(kind::DATA, 0, 1, b"body"));
    assert_eq!(c.conn.request_frames(), 2, "DATA with data");
    c.feed(&raw(kind::DATA, 0, 1, &[]));
    assert_eq!(c.conn.request_frames(), 2, "an empty DATA frame moves nothing");
    c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[]));
    assert_eq!(c.conn.request_frames(), 3, "END_STREAM ends the body");
    c.feed(&raw(kind::DATA, 0, 1, b"late"));
    assert_eq!(c.conn.request_frames(), 3, "DATA on a closed stream");
    let no_path = c.block(&[(":method", "GET"), (":scheme", "http")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &no_path));
    assert_eq!(c.conn.request_frames(), 3, "a refused request");
}

/// `counts_when_whole` tells, from a frame's first bytes, whether
/// `request_frames` will count it.
#[test]
fn frames_still_arriving_count_as_they_will_when_whole() {
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    assert!(!c.conn.counts_when_whole(&[]), "nothing yet");
    assert!(!c.conn.counts_when_whole(&headers[..8]), "a header not yet whole");
    assert!(c.conn.counts_when_whole(&headers[..10]), "HEADERS opening a stream");
    assert!(
        !c.conn.counts_when_whole(&raw(kind::HEADERS, flag::END_HEADERS, 2, &[0x82])),
        "an even id"
    );
    c.feed(&headers);
    assert!(c.conn.counts_when_whole(&raw(kind::DATA, 0, 1, b"body")[..10]), "DATA with data");
    assert!(c.conn.counts_when_whole(&raw(kind::DATA, flag::END_STREAM, 1, &[])), "END_STREAM");
    assert!(!c.conn.counts_when_whole(&raw(kind::DATA, 0, 1, &[])), "empty DATA");
    let padded_empty = raw(kind::DATA, flag::PADDED, 1, &[4, 0, 0, 0, 0]);
    assert!(!c.conn.counts_when_whole(&padded_empty[..9]), "padding not known yet");
    assert!(!c.conn.counts_when_whole(&padded_empty[..10]), "padding only");
    let padded_past = raw(kind::DATA, flag::PADDED, 1, &[255, 0]);
    assert!(!c.conn.counts_when_whole(&padded_past[..10]), "padding past the length");
    let padded = raw(kind::DATA, flag::PADDED, 1, &[1, b'x', 0]);
    assert!(c.conn.counts_when_whole(&padded[..10]), "padded DATA with data");
    assert!(!c.conn.counts_when_whole(&raw(kind::DATA, 0, 3, b"x")[..10]), "an idle stream");
    assert!(!c.conn.counts_when_whole(&raw(kind::PING, 0, 0, &[0; 8])[..10]), "PING");
    let trailers = raw(kind::HEADERS, flag::END_STREAM, 1, &[0x88]);
    assert!(c.conn.counts_when_whole(&trailers[..9]), "trailers");
    let reopened = raw(kind::HEADERS, 0, 1, &[0x88]);
    assert!(
        !c.conn.counts_when_whole(&reopened[..9]),
        "HEADERS without END_STREAM on an open stream"
    );
    c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[]));
    assert!(!c.conn.counts_when_whole(&raw(kind::DATA, 0, 1, b"x")[..10]), "a closed stream");
    assert!(!c.conn.counts_when_whole(&trailers[..9]), "trailers after the end");
    let huge = FrameHeader { length: 0xff_ffff, kind: kind::DATA, flags: 0, stream: 1 }
        .to_bytes()
        .unwrap();
    assert!(!c.conn.counts_when_whole(&huge), "past the frame size, on a closed stream");

    // At the stream limit, and after our GOAWAY, HEADERS open nothing.
    let mut c = Client::with(Config { max_concurrent_streams: 1, ..Config::default() });
    let first = c.request(1, "/", false);
    c.feed(&first);
    assert!(
        !c.conn.counts_when_whole(&raw(kind::HEADERS, flag::END_HEADERS, 3, &[0x82])),
        "past the limit"
    );
    let mut c = Client::new();
    c.feed(&raw(kind::GOAWAY, 0, 0, &[0; 8]));
    assert!(
        !c.conn.counts_when_whole(&raw(kind::HEADERS, flag::END_HEADERS, 1, &[0x82])),
        "after our GOAWAY"
    );
}

/// CVE-2019-9518: empty DATA frames.
#[test]
fn empty_frame_flood() {
    let mut c = Client::with(Config { max_empty_frames: 10, ..Config::default() });
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    for _ in 0..11 {
        c.feed(&raw(kind::DATA, 0, 1, &[]));
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// The same flood broken up by a byte of DATA every few frames (a
/// black-box probe's bypass of an "in a row" count): empty frames are
/// counted against the work done, so it ends the same way; a byte of work
/// per empty frame goes on for ever.
#[test]
fn idle_frames_are_counted_against_work() {
    let mut c = Client::with(Config { max_empty_frames: 10, ..Config::default() });
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    for round in 0..20 {
        c.feed(&raw(kind::DATA, 0, 1, &[]));
        c.feed(&raw(kind::DATA, 0, 1, &[]));
        c.feed(&raw(kind::DATA, 0, 1, &[]));
        c.feed(&raw(kind::DATA, 0, 1, b"x"));
        if c.conn.error().is_some() {
            assert!(round >= 4, "not before the budget is spent ({round})");
            break;
        }
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    // One idle frame per frame of work is no flood.
    let mut c = Client::with(Config { max_empty_frames: 10, ..Config::default() });
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    for _ in 0..1_000 {
        c.feed(&raw(kind::DATA, 0, 1, &[]));
        c.feed(&raw(kind::DATA, 0, 1, b"x"));
    }
    assert_eq!(c.conn.error(), None);
}

/// PRIORITY and unknown frames (ignored) have an allowance per stream
/// opened: a client that reprioritizes each request twice is served (an
/// adversarial review's case), one that sends them without opening
/// streams is cut off.
#[test]
fn ignored_frames_have_an_allowance_per_stream() {
    let mut c = Client::new();
    for stream in (1..).step_by(2).take(150) {
        let headers = c.request(stream, "/", true);
        c.feed(&headers);
        for _ in 0..2 {
            c.feed(&raw(kind::PRIORITY, 0, stream, &[0, 0, 0, 0, 16]));
        }
        c.feed(&raw(0x10, 0, 0, &[0, 0, 0, 1, b'u', b'=', b'1'])); // PRIORITY_UPDATE
    }
    assert_eq!(c.conn.error(), None);
    // One stream reprioritized 101 times: still within its allowance.
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    for _ in 0..101 {
        c.feed(&raw(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]));
    }
    assert_eq!(c.conn.error(), None);
    // A flood with no stream opened ends the connection.
    let mut c = Client::new();
    for _ in 0..IGNORED_PER_STREAM + 1 {
        c.feed(&raw(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]));
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// Frames on a closed stream that change nothing (WINDOW_UPDATE, 6.9;
/// RST_STREAM, 5.1) and acknowledgements or GOAWAYs with nothing to
/// acknowledge are ignored from the same allowance as PRIORITY: a client
/// whose cancel or credit crosses our END_STREAM is served, a flood of them
/// on a finished stream is not (before, it went on for ever).
#[test]
fn frames_with_nothing_to_do_spend_the_ignored_allowance() {
    let floods: [fn() -> Vec<u8>; 5] = [
        || raw(kind::WINDOW_UPDATE, 0, 1, &[0, 0, 1, 0]),
        || raw(kind::RST_STREAM, 0, 1, &[0, 0, 0, 8]),
        || raw(kind::SETTINGS, flag::ACK, 0, &[]),
        || raw(kind::PING, flag::ACK, 0, &[7; 8]),
        || raw(kind::GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]),
    ];
    for (case, frame) in floods.iter().enumerate() {
        let mut c = Client::new();
        // The first SETTINGS ACK and the first GOAWAY do something.
        c.feed(&raw(kind::SETTINGS, flag::ACK, 0, &[]));
        let headers = c.request(1, "/", true);
        c.feed(&headers);
        c.feed(&raw(kind::GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]));
        c.conn.send_headers(1, 200, [], true);
        c.sent();
        // One stream opened: the connection's allowance and the stream's.
        for _ in 0..2 * IGNORED_PER_STREAM {
            c.feed(&frame());
        }
        assert_eq!(c.conn.error(), None, "case {case}: within the allowance");
        assert_eq!(c.sent(), [], "case {case}: ignored, nothing answered");
        c.feed(&frame());
        assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM), "case {case}: a flood");
    }
}

/// A stream we reset still gets its client's end (sent before it saw our
/// RST_STREAM): free, once. An empty DATA with END_STREAM repeated on it
/// (an outside review's flood: 300,000 a second were taken, uncounted) is
/// ignored, as 5.1 asks of frames on a stream we reset, and not reset
/// again (5.4.2), but each spends the allowance of ignored frames, so a
/// flood of them ends the connection.
#[test]
fn a_reset_stream_ends_once() {
    let mut c = Client::with(Config { reset_budget: 10, ..Config::default() });
    for stream in (1..).step_by(2).take(50) {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
        c.conn.reset(stream, ErrorCode::CANCEL);
        c.feed(&raw(kind::DATA, 0, stream, b"in flight"));
        c.feed(&raw(kind::DATA, flag::END_STREAM, stream, &[]));
    }
    assert_eq!(c.conn.error(), None, "one end per stream");
    c.sent();
    for _ in 0..=IGNORED_ALLOWANCE_MAX {
        c.feed(&raw(kind::DATA, flag::END_STREAM, 99, &[]));
    }
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::ENHANCE_YOUR_CALM));
    assert!(!c.sent().iter().any(|f| matches!(f, Sent::Rst { .. })), "reset once only");
}

/// DATA on a stream the client ended and we never reset: STREAM_CLOSED
/// (5.1), once (5.4.2: an outside review's differential run against
/// nghttpd saw one RST_STREAM per frame, five for five); the rest are
/// ignored, from the allowance.
#[test]
fn data_after_the_clients_end_is_reset_once() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], true);
    c.sent();
    for _ in 0..5 {
        c.feed(&raw(kind::DATA, 0, 1, b"a"));
    }
    assert_eq!(c.sent(), [Sent::Rst { stream: 1, code: ErrorCode::STREAM_CLOSED }]);
    assert_eq!(c.conn.error(), None);
    for _ in 0..=2 * IGNORED_PER_STREAM {
        c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[]));
    }
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// A well-behaved uploader's frames in flight when it learns of our early
/// answer and RST_STREAM (an adversarial review's case: 100-byte frames,
/// 960 of them a round trip of 50 ms away, cut the connection off when
/// dropped frames under 256 bytes spent the ignored-frame allowance):
/// dropped, their credit given back, never a flood.
#[test]
fn an_upload_in_small_frames_in_flight_after_an_early_answer_is_no_flood() {
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.conn.send_headers(1, 413, [], true);
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::NO_ERROR }));
    for _ in 0..10_000 {
        c.feed(&raw(kind::DATA, 0, 1, &[b'a'; 100]));
    }
    c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[]));
    assert_eq!(c.conn.error(), None, "1 MB in 100-byte frames in flight");
    assert!(
        c.sent().iter().any(|f| matches!(f, Sent::WindowUpdate { stream: 0, .. })),
        "the dropped bytes' credit goes back to the connection"
    );
    assert_eq!(c.events(), ["headers 1 POST / end=false"]);
}

/// A body the application gave up while its response still goes out (the
/// stream open, its input aborted): DATA is dropped as on a reset stream,
/// and the client's END_STREAM still ends the request, once; an empty one
/// repeated (an adversarial review found them taken without limit there
/// too) is DATA after the end, STREAM_CLOSED.
#[test]
fn a_given_up_body_ends_once() {
    let mut c = Client::with(Config { reset_budget: 10, ..Config::default() });
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], false);
    c.seen.inputs.last().unwrap().abort().unwrap();
    c.sent();
    for _ in 0..1_000 {
        c.feed(&raw(kind::DATA, 0, 1, &[b'a'; 100]));
    }
    c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[]));
    assert_eq!(c.conn.error(), None, "bytes the client sent are dropped");
    assert_eq!(c.events(), ["headers 1 POST / end=false", "data 1 0 end=true"]);
    // The response ends the stream; the client's repeats are its error:
    // reset once, then ignored from the allowance.
    c.conn.send_data(1, b"", true);
    c.sent();
    for _ in 0..=2 * IGNORED_PER_STREAM + 1 {
        c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[]));
    }
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::ENHANCE_YOUR_CALM));
    let resets = c.sent().iter().filter(|f| matches!(f, Sent::Rst { .. })).count();
    assert_eq!(resets, 1);
}

/// A given-up body with a content-length, ended by trailers (an
/// adversarial review's case): the bytes dropped after the application
/// gave the body up still count toward the length the trailers are
/// checked against, so the response goes on (it was reset with
/// PROTOCOL_ERROR).
#[test]
fn a_given_up_body_ended_by_trailers_keeps_its_response() {
    let mut c = Client::new();
    let block = c.block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/"),
        ("content-length", "300"),
    ]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 1, &block));
    c.feed(&raw(kind::DATA, 0, 1, &[b'a'; 100]));
    c.conn.send_headers(1, 200, [], false);
    c.seen.inputs.last().unwrap().abort().unwrap();
    c.sent();
    c.feed(&raw(kind::DATA, 0, 1, &[b'a'; 200]));
    let trailers = c.block(&[("x-checksum", "1")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &trailers));
    let sent = c.sent();
    assert!(!sent.iter().any(|f| matches!(f, Sent::Rst { .. } | Sent::GoAway { .. })), "{sent:?}");
    assert_eq!(c.conn.send_data(1, b"rest", true), 4, "the response still streams");
    assert_eq!(c.conn.open_streams(), 0);
}

/// Graceful shutdown while early answers' ends are in flight (an
/// adversarial review's case: counting each end as an empty frame, 120
/// of them at most 100 streams at a time cut the connection off, and its
/// download with it).
#[test]
fn shutdown_after_early_answers_keeps_the_download() {
    let mut c = Client::new();
    let h = c.request(1, "/download", true);
    c.feed(&h);
    c.conn.send_headers(1, 200, [], false);
    let first: Vec<u32> = (3..).step_by(2).take(60).collect();
    for &s in &first {
        let h = c.request(s, "/upload", false);
        c.feed(&h);
        c.conn.send_headers(s, 413, [], true);
    }
    for &s in &first {
        c.feed(&raw(kind::DATA, flag::END_STREAM, s, &[]));
    }
    assert_eq!(c.conn.error(), None, "first batch");
    c.conn.goodbye();
    c.sent();
    for s in (first.last().unwrap() + 2..).step_by(2).take(60) {
        let h = c.request(s, "/upload", false);
        c.feed(&h);
        c.feed(&raw(kind::DATA, 0, s, b"some bytes"));
        c.feed(&raw(kind::DATA, flag::END_STREAM, s, &[]));
    }
    assert_eq!(c.conn.error(), None, "120 stream ends, at most 100 streams at once");
}

/// A first flight past MAX_CONCURRENT_STREAMS, sent before the client saw
/// our SETTINGS (the review's other case): 100 uploads answered early, 50
/// refused, and each upload's end arriving afterwards: no flood.
#[test]
fn a_first_flight_refused_and_answered_early_is_no_flood() {
    let mut c = Client::new();
    for s in (1..).step_by(2).take(150) {
        let h = c.request(s, "/upload", false);
        c.feed(&h);
    }
    for s in (1..).step_by(2).take(100) {
        c.conn.send_headers(s, 401, [], true);
    }
    c.sent();
    for s in (1..).step_by(2).take(150) {
        c.feed(&raw(kind::DATA, flag::END_STREAM, s, &[]));
    }
    assert_eq!(c.conn.error(), None, "one end per stream");
}

/// After our final GOAWAY, streams opened past it are ignored (6.8), but
/// not for free (an outside review kept a connection alive with one slow
/// upload and sent 185,000 ignored HEADERS and 9.3 million empty DATA
/// frames on them in 10 s): each ignored HEADERS spends the ignored
/// allowance, an empty DATA frame ending such a stream is an empty frame,
/// and an ignored request pays back no empty frame.
#[test]
fn streams_ignored_after_goaway_spend_the_ignored_allowance() {
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.conn.goodbye();
    assert_eq!(c.goaway(), Some(ErrorCode::NO_ERROR));
    let mut frames = 0;
    for stream in (3..).step_by(2).take(1_000) {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
        frames += 1;
        if c.conn.error().is_some() {
            break;
        }
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));
    assert!(frames > 2 * IGNORED_PER_STREAM, "not before the allowance: {frames}");
    assert_eq!(c.events(), ["headers 1 POST / end=false"], "none of them reached the sink");

    // Ignored requests pay back no empty frames.
    let mut c = Client::with(Config { max_empty_frames: 10, ..Config::default() });
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.conn.goodbye();
    c.sent();
    for round in 0..12u32 {
        let headers = c.request(3 + 2 * round, "/", false);
        c.feed(&headers);
        c.feed(&raw(kind::DATA, 0, 1, &[]));
    }
    assert_eq!(c.goaway(), Some(ErrorCode::ENHANCE_YOUR_CALM));

    // The in-flight requests of a well-behaved client are dropped quietly.
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.goodbye();
    for stream in [3, 5, 7, 9] {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
        for _ in 0..1_000 {
            c.feed(&raw(kind::DATA, 0, stream, b"a line"));
        }
        c.feed(&raw(kind::DATA, flag::END_STREAM, stream, &[]));
    }
    assert_eq!(c.conn.error(), None);
}

/// The ordinary crossings: a cancel and a WINDOW_UPDATE arriving after
/// each response ended, on every stream of a long connection, and
/// acknowledgements of our SETTINGS and shutdown PING, are no flood.
#[test]
fn crossing_frames_on_finished_streams_are_served() {
    let mut c = Client::new();
    c.feed(&raw(kind::SETTINGS, flag::ACK, 0, &[]));
    for i in 0..1_000u32 {
        let stream = 1 + 2 * i;
        let headers = c.request(stream, "/", true);
        c.feed(&headers);
        c.conn.send_headers(stream, 200, [], true);
        c.feed(&raw(kind::WINDOW_UPDATE, 0, stream, &[0, 0, 1, 0]));
        c.feed(&raw(kind::RST_STREAM, 0, stream, &[0, 0, 0, 8]));
    }
    c.conn.shutdown();
    c.feed(&raw(kind::PING, flag::ACK, 0, &SHUTDOWN_PING));
    assert_eq!(c.conn.error(), None);
    let sent = c.sent();
    assert_eq!(sent.iter().filter(|f| matches!(f, Sent::GoAway { .. })).count(), 2, "{sent:?}");
}

/// 5.1.2: streams past MAX_CONCURRENT_STREAMS are refused.
#[test]
fn concurrency_limit() {
    let mut c = Client::with(Config { max_concurrent_streams: 2, ..Config::default() });
    for stream in [1, 3, 5] {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
    }
    assert!(c.sent().contains(&Sent::Rst { stream: 5, code: ErrorCode::REFUSED_STREAM }));
    assert_eq!(c.conn.open_streams(), 2);
    assert_eq!(c.events().len(), 2);
}

/// A client's first flight may pass a MAX_CONCURRENT_STREAMS it has not
/// seen (6.5.2): one limit's worth of refusals before it acknowledges our
/// SETTINGS costs no reset budget; after that, and after the ack, each
/// refusal does.
#[test]
fn first_flight_refusals_are_free_once() {
    let config = Config { max_concurrent_streams: 2, reset_budget: 1, ..Config::default() };
    let mut c = Client::with(config);
    for stream in [1, 3, 5, 7, 9] {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
    }
    assert_eq!(c.conn.error(), None, "two free refusals, then the budget's one");
    let headers = c.request(11, "/", false);
    c.feed(&headers);
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::ENHANCE_YOUR_CALM));

    let mut c = Client::with(config);
    for stream in [1, 3] {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
    }
    c.feed(&raw(kind::SETTINGS, flag::ACK, 0, &[]));
    for stream in [5, 7] {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
    }
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

/// 8.1.1: malformed requests are stream errors, and the table stays in
/// step for the next request.
#[test]
fn malformed_requests_are_reset() {
    let mut c = Client::new();
    let block = c.block(&[(":method", "GET"), (":path", "/")]); // no :scheme
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &block));
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::PROTOCOL_ERROR }));
    let block = c.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/"), ("Upper", "x")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &block));
    assert!(c.sent().contains(&Sent::Rst { stream: 3, code: ErrorCode::PROTOCOL_ERROR }));
    let fine = c.request(5, "/ok", true);
    c.feed(&fine);
    assert_eq!(c.events(), ["headers 5 POST /ok end=true"]);
}

/// 8.1.1: DATA that disagrees with content-length.
#[test]
fn content_length_mismatch() {
    for (length, chunks) in [("3", &[&b"ab"[..], b"cd"][..]), ("5", &[&b"ab"[..]][..])] {
        let mut c = Client::new();
        let block = c.block(&[
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/"),
            ("content-length", length),
        ]);
        c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 1, &block));
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            c.feed(&raw(kind::DATA, if last { flag::END_STREAM } else { 0 }, 1, chunk));
        }
        assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::PROTOCOL_ERROR }));
    }
}

/// 6.9.1: DATA past the stream window is a stream error; past the
/// connection window, a connection error.
#[test]
fn receive_windows() {
    let config =
        Config { initial_window_size: 10, connection_window_size: 65_535, ..Config::default() };
    let mut c = Client::with(config);
    c.feed(&raw(kind::SETTINGS, flag::ACK, 0, &[]));
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, 0, 1, &[0; 11]));
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::FLOW_CONTROL_ERROR }));

    let config =
        Config { initial_window_size: 65_535, connection_window_size: 65_535, ..Config::default() };
    let mut c = Client::with(config);
    for stream in [1, 3] {
        let headers = c.request(stream, "/", false);
        c.feed(&headers);
    }
    // The sink consumes at once, so credit returns: the client must
    // overrun in one go. 16,384 * 4 = 65,536 > 65,535.
    c.conn.recv.try_advance(65_535 - 16_384 * 3).unwrap();
    for _ in 0..3 {
        c.feed(&raw(kind::DATA, 0, 1, &[0; 16_384]));
    }
    assert!(c.conn.error().is_none());
}

/// 6.9.3: a stream window below the default binds only once the client
/// acknowledged it; streams opened before keep 65,535 and, at the
/// acknowledgement, get the difference back, so the client's view (our
/// delta applied, 6.9.2) meets ours.
#[test]
fn a_smaller_stream_window_waits_for_its_acknowledgement() {
    let mut c = Client::with(Config { initial_window_size: 1_000, ..Config::default() });
    for (stream, end_stream) in [(1, false), (3, true)] {
        let headers = c.request(stream, "/", end_stream);
        c.feed(&headers);
    }
    // Sent before the client processed our SETTINGS: within the default.
    c.feed(&raw(kind::DATA, 0, 1, &[0; 16_384]));
    c.feed(&raw(kind::DATA, 0, 1, &[0; 5_000]));
    assert!(c.conn.error().is_none());
    // No reset, and each frame's credit came back at once (our window's
    // share, 500 bytes, not the default's).
    assert_eq!(
        c.sent(),
        [
            Sent::WindowUpdate { stream: 1, increment: 16_384 },
            Sent::WindowUpdate { stream: 1, increment: 5_000 }
        ]
    );
    c.feed(&raw(kind::SETTINGS, flag::ACK, 0, &[]));
    // Stream 3 sends nothing more: no update for it.
    assert_eq!(c.sent(), [Sent::WindowUpdate { stream: 1, increment: 64_535 }]);
    c.feed(&raw(kind::DATA, 0, 1, &[0; 5_000]));
    assert!(!c.sent().iter().any(|f| matches!(f, Sent::Rst { .. })));
    // Opened after the acknowledgement: our window binds.
    let headers = c.request(5, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, 0, 5, &[0; 1_001]));
    assert!(c.sent().contains(&Sent::Rst { stream: 5, code: ErrorCode::FLOW_CONTROL_ERROR }));
    assert!(c.conn.error().is_none());
}

/// 6.9: consumed DATA comes back as WINDOW_UPDATEs past half a window.
#[test]
fn window_updates_follow_consumption() {
    let config =
        Config { initial_window_size: 32_768, connection_window_size: 65_535, ..Config::default() };
    let mut c = Client::with(config);
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.sent();
    c.feed(&raw(kind::DATA, 0, 1, &[0; 16_000]));
    assert_eq!(c.sent(), []);
    c.feed(&raw(kind::DATA, 0, 1, &[0; 1_000]));
    assert_eq!(c.sent(), [Sent::WindowUpdate { stream: 1, increment: 17_000 }]);
    c.feed(&raw(kind::DATA, 0, 1, &[0; 16_000]));
    assert!(c.sent().contains(&Sent::WindowUpdate { stream: 0, increment: 33_000 }));
}

/// 6.9, 6.9.2: send windows bound DATA; WINDOW_UPDATE and SETTINGS move
/// them.
#[test]
fn send_windows() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], false);
    c.sent();
    let body = vec![7u8; 100_000];
    let n = c.conn.send_data(1, &body, true);
    assert_eq!(n, 65_535, "the initial windows");
    let frames = c.sent();
    assert_eq!(frames.len(), 4, "16 KiB frames: {frames:?}");
    assert!(frames.iter().all(|f| matches!(f, Sent::Data { end_stream: false, .. })));
    assert_eq!(c.conn.send_data(1, &body[n..], true), 0);
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 1, &100_000u32.to_be_bytes()));
    assert_eq!(c.conn.send_data(1, &body[n..], true), 0, "the connection window is empty");
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes()));
    assert_eq!(c.events()[1..], ["writable 1", "writable 0"]);
    assert_eq!(c.conn.send_data(1, &body[n..], true), 100_000 - n);
    assert!(matches!(c.sent().last(), Some(Sent::Data { end_stream: true, .. })));

    // SETTINGS_INITIAL_WINDOW_SIZE shrinks an open stream's window below 0.
    let headers = c.request(3, "/", true);
    c.feed(&headers);
    c.conn.send_headers(3, 200, [], false);
    assert_eq!(c.conn.send_data(3, &[0; 1000], false), 1000);
    let mut settings = setting::INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    settings.extend(500u32.to_be_bytes());
    c.feed(&raw(kind::SETTINGS, 0, 0, &settings));
    assert_eq!(c.conn.send_credit(3), 0);
    assert_eq!(c.conn.send_data(3, &[0; 10], false), 0);
}

/// Shared payloads go out in place, between their frame headers, as the
/// windows allow; the output's pieces and any split of the writes that
/// sends them give the same bytes as the copying path.
#[test]
fn shared_payloads_go_out_in_place() {
    use bytes::Bytes;
    use std::io::IoSlice;

    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    // The copying path, for the bytes to expect.
    let mut copied = Client::new();
    let headers = copied.request(1, "/", true);
    copied.feed(&headers);
    copied.take_output();
    copied.conn.send_headers(1, 200, [], false);
    assert_eq!(copied.conn.send_data(1, &body, true), 65_535);
    let expected = copied.take_output();

    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.take_output();
    c.conn.send_headers(1, 200, [], false);
    let mut data = Bytes::from(body.clone());
    let start = data.as_ptr();
    assert_eq!(c.conn.send_shared(1, &mut data, true), 65_535, "the initial windows");
    assert_eq!(data.len(), 100_000 - 65_535, "what was sent is taken off the front");
    assert_eq!(c.conn.output_len(), expected.len());
    let mut slices = [IoSlice::new(&[]); 16];
    let count = c.conn.output_slices(&mut slices);
    assert_eq!(count, 8, "HEADERS with the first DATA header, then payload and header pairs");
    let payload = &slices[1];
    assert_eq!(payload.as_ptr(), start, "the payload is the caller's buffer, not a copy");
    assert_eq!(payload.len(), 16_384);
    // Fewer slices than pieces: the first ones, in order.
    let mut three = [IoSlice::new(&[]); 3];
    assert_eq!(c.conn.output_slices(&mut three), 3);
    assert_eq!(three[2].len(), HEADER_LEN);
    // Sent in writes of 1,000 bytes, across the pieces' edges.
    let mut out = Vec::new();
    while c.conn.output_len() > 0 {
        let mut slices = [IoSlice::new(&[]); 16];
        let count = c.conn.output_slices(&mut slices);
        let all: Vec<u8> = slices[..count].iter().flat_map(|s| s.iter().copied()).collect();
        let n = all.len().min(1_000);
        out.extend_from_slice(&all[..n]);
        c.conn.consume_output(n);
    }
    assert_eq!(out, expected);
    assert!(c.conn.output().is_empty());

    // The rest, once both windows open, ends the stream.
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 1, &100_000u32.to_be_bytes()));
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes()));
    c.take_output();
    assert_eq!(c.conn.send_shared(1, &mut data, true), 100_000 - 65_535);
    assert!(data.is_empty());
    let frames = c.sent();
    assert!(matches!(frames.last(), Some(Sent::Data { end_stream: true, .. })), "{frames:?}");
    // A stream that is gone takes everything and sends nothing.
    let mut more = Bytes::from_static(b"late");
    assert_eq!(c.conn.send_shared(1, &mut more, true), 4);
    assert!(more.is_empty());
    assert_eq!(c.conn.output_len(), 0);
}

/// 6.9.1: a WINDOW_UPDATE past 2^31-1.
#[test]
fn send_window_overflow() {
    let mut c = Client::new();
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 0, &(u32::MAX >> 1).to_be_bytes()));
    assert_eq!(c.goaway(), Some(ErrorCode::FLOW_CONTROL_ERROR));

    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.feed(&raw(kind::WINDOW_UPDATE, 0, 1, &(u32::MAX >> 1).to_be_bytes()));
    assert!(c.sent().contains(&Sent::Rst { stream: 1, code: ErrorCode::FLOW_CONTROL_ERROR }));
}

/// 8.1: trailers end the body; they need END_STREAM and no pseudo-field.
#[test]
fn trailers() {
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, 0, 1, b"abc"));
    let block = c.block(&[("x-checksum", "1")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &block));
    assert_eq!(c.events()[1..], ["data 1 3 end=false", "data 1 0 end=true"]);

    let headers = c.request(3, "/", false);
    c.feed(&headers);
    let block = c.block(&[("x-checksum", "1")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 3, &block));
    assert!(c.sent().contains(&Sent::Rst { stream: 3, code: ErrorCode::PROTOCOL_ERROR }));
}

/// 8.1: response trailers are a HEADERS frame with END_STREAM and no
/// `:status`, after DATA without END_STREAM; the stream is then done, and
/// nothing more is sent on it.
#[test]
fn response_trailers_end_the_stream() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], false);
    c.conn.send_data(1, b"abc", false);
    c.conn.send_trailers(1, [Field::new(b"grpc-status", b"0")]);
    assert_eq!(
        c.sent(),
        [
            Sent::Headers { stream: 1, status: "200".into(), end_stream: false },
            Sent::Data { stream: 1, len: 3, end_stream: false },
            Sent::Headers { stream: 1, status: String::new(), end_stream: true },
        ]
    );
    // Done: later sends on the stream go nowhere.
    c.conn.send_trailers(1, [Field::new(b"grpc-status", b"0")]);
    c.conn.send_data(1, b"x", true);
    assert_eq!(c.sent(), []);
    assert!(c.conn.error().is_none());
}

/// 8.1: a response is 1xx heads, one final head, DATA, then trailers.
/// Out of that order (the public API allows it) the stream is reset with
/// INTERNAL_ERROR, the server's fault, never sent malformed: DATA or
/// trailers before the final head, a second final head, a 1xx that ends
/// the stream. 101 is not a status HTTP/2 has (8.6): sent as 500.
#[test]
fn a_response_out_of_order_resets_its_stream() {
    let internal = |stream| Sent::Rst { stream, code: ErrorCode::INTERNAL_ERROR };
    let mut c = Client::new();
    for id in [1, 3, 5, 7, 9, 11, 13] {
        let headers = c.request(id, "/", true);
        c.feed(&headers);
    }
    c.sent();
    c.conn.send_trailers(1, [Field::new(b"grpc-status", b"0")]);
    assert_eq!(c.conn.send_data(3, b"abc", true), 3);
    c.conn.send_headers(5, 200, [], false);
    c.conn.send_headers(5, 200, [], true);
    c.conn.send_headers(7, 103, [], true);
    // The in-place send takes everything too, and sends none of it.
    let mut shared = Bytes::from_static(b"abc");
    assert_eq!(c.conn.send_shared(13, &mut shared, false), 3);
    assert!(shared.is_empty());
    assert_eq!(c.conn.output_slices(&mut [IoSlice::new(&[]); 4]), 1);
    assert_eq!(
        c.sent(),
        [
            internal(1),
            internal(3),
            Sent::Headers { stream: 5, status: "200".into(), end_stream: false },
            internal(5),
            internal(7),
            internal(13),
        ]
    );
    // In order: any number of 1xx, then the final head, DATA, trailers.
    c.conn.send_headers(9, 100, [], false);
    c.conn.send_headers(9, 103, [], false);
    c.conn.send_headers(9, 200, [], false);
    c.conn.send_data(9, b"abc", false);
    c.conn.send_trailers(9, [Field::new(b"grpc-status", b"0")]);
    c.conn.send_headers(11, 101, [], true);
    assert_eq!(
        c.sent(),
        [
            Sent::Headers { stream: 9, status: "100".into(), end_stream: false },
            Sent::Headers { stream: 9, status: "103".into(), end_stream: false },
            Sent::Headers { stream: 9, status: "200".into(), end_stream: false },
            Sent::Data { stream: 9, len: 3, end_stream: false },
            Sent::Headers { stream: 9, status: String::new(), end_stream: true },
            Sent::Headers { stream: 11, status: "500".into(), end_stream: true },
        ]
    );
    assert_eq!(c.conn.open_streams(), 0);
    assert!(c.conn.error().is_none());
}

/// Trailers too big for one frame continue in CONTINUATION frames, as a
/// head's fields do (6.10).
#[test]
fn large_trailers_continue() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], false);
    let value = vec![b'v'; 40_000];
    c.conn.send_trailers(1, [Field::new(b"x-big", &value)]);
    let out = c.take_output();
    let mut kinds = Vec::new();
    let mut rest = &out[..];
    while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
        let header = FrameHeader::parse(header);
        kinds.push((header.kind, header.flags & (flag::END_STREAM | flag::END_HEADERS)));
        rest = &rest[HEADER_LEN + header.length as usize..];
    }
    assert_eq!(kinds[0], (kind::HEADERS, flag::END_HEADERS));
    assert_eq!(kinds[1], (kind::HEADERS, flag::END_STREAM));
    assert!(kinds[2..].iter().all(|&(k, _)| k == kind::CONTINUATION), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&(kind::CONTINUATION, flag::END_HEADERS)));
}

/// 6.8: graceful shutdown in two steps. The first GOAWAY (2^31-1) and a
/// PING; streams the client opened meanwhile are served; the PING's ACK
/// brings the final GOAWAY, after which new streams are ignored.
#[test]
fn graceful_shutdown() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.shutdown();
    let sent = c.sent();
    assert_eq!(sent, [Sent::GoAway { code: ErrorCode::NO_ERROR }, Sent::Ping { ack: false }]);
    let in_flight = c.request(3, "/", true);
    c.feed(&in_flight);
    c.feed(&raw(kind::PING, flag::ACK, 0, b"goaway\0\0"));
    assert_eq!(c.goaway(), Some(ErrorCode::NO_ERROR), "the final GOAWAY");
    let late = c.request(5, "/", true);
    c.feed(&late);
    assert_eq!(c.events(), ["headers 1 POST / end=true", "headers 3 POST / end=true"]);
    assert!(!c.conn.is_closed());
    c.conn.send_headers(1, 200, [], true);
    assert!(!c.conn.is_closed());
    c.conn.send_headers(3, 200, [], true);
    assert!(c.conn.is_closed());
}

/// 6.8: after the client's GOAWAY, the connection ends with its streams,
/// and our GOAWAY (naming the last stream we process) goes out before it
/// closes, on an idle connection too.
#[test]
fn client_goaway() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.events();
    c.feed(&raw(kind::GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]));
    assert_eq!(c.sent(), [Sent::GoAway { code: ErrorCode::NO_ERROR }]);
    assert!(!c.conn.is_closed());
    let late = c.request(3, "/late", true);
    c.feed(&late);
    assert_eq!(c.events(), Vec::<String>::new(), "a stream after our GOAWAY is ignored");
    c.conn.send_headers(1, 200, [], true);
    assert!(c.conn.is_closed());

    let mut c = Client::new();
    c.feed(&raw(kind::GOAWAY, 0, 0, &[0; 8]));
    assert_eq!(c.sent(), [Sent::GoAway { code: ErrorCode::NO_ERROR }]);
    assert!(c.conn.is_closed());
}

/// 6.8: after our GOAWAY answering the client's, a connection error still
/// gets its own GOAWAY (circumstances changed; the id does not grow), and
/// nothing follows it (the fuzzer's case: a frame past the size limit).
#[test]
fn an_error_after_the_clients_goaway_gets_a_second_goaway() {
    let mut c = Client::new();
    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.feed(&raw(kind::GOAWAY, 0, 0, &[0; 8]));
    assert_eq!(c.sent(), [Sent::GoAway { code: ErrorCode::NO_ERROR }]);
    let huge =
        FrameHeader { length: 0xff_ffff, kind: 0xff, flags: 0xff, stream: 0 }.to_bytes().unwrap();
    c.conn.receive(&huge, &mut c.seen);
    assert_eq!(c.sent(), [Sent::GoAway { code: ErrorCode::FRAME_SIZE_ERROR }]);
    assert_eq!(c.conn.error().map(|e| e.code), Some(ErrorCode::FRAME_SIZE_ERROR));
    c.conn.send_headers(1, 200, [], true);
    assert_eq!(c.sent(), [], "nothing after the error's GOAWAY");
}

/// 6.8: once the client's GOAWAY is answered with ours, a graceful
/// shutdown sends no GOAWAY(2^31-1) and PING after it: the last stream id
/// must never increase (a review found exactly that).
#[test]
fn a_shutdown_after_the_clients_goaway_keeps_the_last_stream_id() {
    let mut c = Client::new();
    let headers = c.request(1, "/slow", true);
    c.feed(&headers);
    c.feed(&raw(kind::GOAWAY, 0, 0, &[0; 8]));
    assert_eq!(c.sent(), [Sent::GoAway { code: ErrorCode::NO_ERROR }]);
    c.conn.shutdown();
    assert!(!c.conn.finish_shutdown());
    assert_eq!(c.sent(), [], "nothing after our final GOAWAY");
    c.conn.send_headers(1, 200, [], true);
    assert!(c.conn.is_closed());
}

/// 8.1: a complete response while the request body still arrives ends
/// the stream with RST_STREAM(NO_ERROR), and its unread credit returns.
#[test]
fn early_response_resets_with_no_error() {
    let mut c = Client::new();
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, 0, 1, &[0; 1000]));
    c.sent();
    c.conn.send_headers(1, 413, [], true);
    let sent = c.sent();
    assert_eq!(sent[1..], [Sent::Rst { stream: 1, code: ErrorCode::NO_ERROR }]);
    assert_eq!(c.conn.open_streams(), 0);
    // The rest of the body, in flight, is ignored.
    c.feed(&raw(kind::DATA, flag::END_STREAM, 1, &[0; 1000]));
    assert!(c.sent().iter().all(|f| !matches!(f, Sent::Rst { .. })));
}

/// 8.1 with the application still reading the body (`keep_reading`): the
/// response's end does not reset the stream, which the body's end then
/// completes; a reader that gives the body up is seen (`body_wanted`)
/// and `reset` ends the stream with NO_ERROR. Unknown ids are no-ops.
#[test]
fn keep_reading_holds_the_stream_past_the_response() {
    let no_reset = |sent: &[Sent]| sent.iter().all(|f| !matches!(f, Sent::Rst { .. }));
    let mut c = Client::new();
    c.conn.keep_reading(99);
    assert!(!c.conn.body_wanted(99));
    for (id, give_up) in [(1, false), (3, true)] {
        let headers = c.request(id, "/", false);
        c.feed(&headers);
        c.feed(&raw(kind::DATA, 0, id, &[0; 1000]));
        c.conn.keep_reading(id);
        c.sent();
        c.conn.send_headers(id, 202, [], true);
        assert!(no_reset(&c.sent()), "stream {id}");
        assert_eq!(c.conn.open_streams(), 1, "stream {id}");
        if give_up {
            c.seen.inputs.last().unwrap().abort().unwrap();
            assert!(!c.conn.body_wanted(id));
            c.conn.reset(id, ErrorCode::NO_ERROR);
            assert!(c.sent().contains(&Sent::Rst { stream: id, code: ErrorCode::NO_ERROR }));
        } else {
            assert!(c.conn.body_wanted(id));
            c.feed(&raw(kind::DATA, flag::END_STREAM, id, &[0; 1000]));
            assert!(no_reset(&c.sent()), "stream {id}");
        }
        assert_eq!(c.conn.open_streams(), 0, "stream {id}");
        assert!(!c.conn.body_wanted(id), "stream {id} is closed");
    }
}

/// 4.3: a field block that does not decode is a connection error.
#[test]
fn compression_error() {
    let mut c = Client::new();
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS, 1, &[0x80]));
    assert_eq!(c.goaway(), Some(ErrorCode::COMPRESSION_ERROR));
}

/// A header list over the limit opens the stream marked oversized (the
/// server answers 431, RFC 9113 10.5.1), and the connection goes on; so
/// does one that lost its pseudo-fields to the limit: fields not kept are
/// no sign of a malformed request.
#[test]
fn header_list_limit() {
    let mut c = Client::with(Config { max_header_list_size: 1024, ..Config::default() });
    let big = "x".repeat(900);
    let block = c.block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        ("a", &big),
        ("b", &big),
    ]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &block));
    assert_eq!(c.events(), ["headers 1 GET / end=true"]);
    assert!(c.conn.error().is_none());
    let block = c.block(&[("a", &big), ("b", &big), (":method", "GET")]);
    c.feed(&raw(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &block));
    // Opened with what fit, none of its pseudo-fields (the server's
    // dispatch answers it 431: `request_line` `the_line_is_judged_before_the_head`).
    assert_eq!(c.events(), ["headers 3 - - end=true"]);
    assert!(!c.sent().iter().any(|sent| matches!(sent, Sent::Rst { .. })), "{:?}", c.sent());
    assert!(c.conn.error().is_none());
}

/// Unknown frame types and flags are ignored (4.1, 5.5).
#[test]
fn unknown_frames_are_ignored() {
    let mut c = Client::new();
    c.feed(&raw(0xfa, 0xff, 0, b"anything"));
    c.feed(&raw(0xfa, 0, 7, b""));
    assert_eq!(c.sent(), []);
    assert!(c.conn.error().is_none());
}

/// Up to `max` frames with well-formed headers and random types, flags,
/// stream ids and payloads, one after another.
fn random_frames(max: usize) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::collection::vec;
    use proptest::strategy::Strategy;
    vec((0u8..12, proptest::num::u8::ANY, 0u32..8, vec(proptest::num::u8::ANY, 0..40)), 0..max)
        .prop_map(|frames| {
            frames
                .into_iter()
                .flat_map(|(kind, flags, stream, payload)| raw(kind, flags, stream, &payload))
                .collect()
        })
}

proptest::proptest! {
    /// Arbitrary frames (well-formed headers, random types, flags, ids and
    /// payloads) never panic the connection, and it ends in an orderly
    /// state: a GOAWAY with an error code if and only if it failed (one
    /// with NO_ERROR may come first, answering the client's).
    #[test]
    fn random_frames_never_panic(
        bytes in random_frames(40),
        split in 1usize..64,
    ) {
        let mut c = Client::new();
        // Fed in pieces, as socket reads would deliver them.
        let mut pending = Vec::new();
        for piece in bytes.chunks(split) {
            pending.extend_from_slice(piece);
            let used = c.conn.receive(&pending, &mut c.seen);
            pending.drain(..used);
            if c.conn.open_streams() > 0 {
                c.conn.send_headers(1, 200, [], false);
                c.conn.send_data(1, b"x", false);
            }
        }
        let sent = c.sent();
        let goaways: Vec<_> = sent
            .iter()
            .filter_map(|f| match f {
                Sent::GoAway { code } => Some(*code),
                _ => None,
            })
            .collect();
        let errors = goaways.iter().filter(|code| **code != ErrorCode::NO_ERROR).count();
        proptest::prop_assert_eq!(errors, usize::from(c.conn.error().is_some()));
        proptest::prop_assert!(goaways.len() <= 2, "{:?}", goaways);
    }
}

proptest::proptest! {
    /// Input received chunk by chunk in place (`receive_chunk`, as the
    /// server reads a pipe's blocks) does exactly what the same bytes
    /// received whole do: the same events and the same output, with no
    /// more held back than a frame that a chunk's end cut.
    #[test]
    fn chunks_received_in_place_as_whole(
        random in random_frames(12),
        bodies in proptest::collection::vec(0usize..40_000, 1..6),
        cuts in proptest::collection::vec(1usize..20_000, 1..40),
    ) {
        let mut bytes = PREFACE.to_vec();
        bytes.extend(raw(kind::SETTINGS, 0, 0, &[]));
        let mut client = Client::new();
        for (i, len) in bodies.iter().enumerate() {
            let stream = 2 * i as u32 + 1;
            bytes.extend(client.request(stream, "/up", false));
            for piece in vec![7u8; *len].chunks(16_384) {
                bytes.extend(raw(kind::DATA, 0, stream, piece));
            }
            bytes.extend(raw(kind::DATA, flag::END_STREAM, stream, b""));
            bytes.extend(raw(kind::PING, 0, 0, &[1; 8]));
        }
        bytes.extend(random);
        bytes.extend_from_slice(&[0, 0]); // a frame cut short at the end

        let mut whole = Connection::new(Config::default()).unwrap();
        let mut whole_seen = Seen::default();
        let used = whole.receive(&bytes, &mut whole_seen);

        let mut chunked = Connection::new(Config::default()).unwrap();
        let mut chunked_seen = Seen::default();
        let mut held = Vec::new();
        let (mut at, mut cut) = (0, cuts.iter().cycle());
        while at < bytes.len() {
            let end = (at + cut.next().unwrap()).min(bytes.len());
            chunked.receive_chunk(&mut held, &bytes[at..end], &mut chunked_seen);
            proptest::prop_assert!(held.len() <= HEADER_LEN + 16_384 + 40, "held {}", held.len());
            at = end;
        }
        proptest::prop_assert_eq!(&chunked_seen.events, &whole_seen.events);
        proptest::prop_assert_eq!(held.len(), bytes.len() - used);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (conn, out) in [(&mut whole, &mut a), (&mut chunked, &mut b)] {
            while !conn.output().is_empty() {
                out.extend_from_slice(conn.output());
                let n = conn.output().len();
                conn.consume_output(n);
            }
        }
        proptest::prop_assert_eq!(a, b);
    }
}

/// Config edges: a window past 2^31-1 is refused; a connection window
/// below the protocol's 65,535 is raised to it (the client may use that
/// much before it reads our SETTINGS).
#[test]
fn config_edges() {
    let too_large = Config { initial_window_size: 1 << 31, ..Config::default() };
    assert!(Connection::new(too_large).is_err());
    let at_max = Config {
        initial_window_size: (1 << 31) - 1,
        connection_window_size: (1 << 31) - 1,
        ..Config::default()
    };
    let mut c = Client::with(at_max);
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    c.feed(&raw(kind::DATA, 0, 1, &[0; 16_384]));
    assert!(c.conn.error().is_none());
    let small = Config { connection_window_size: 0, ..Config::default() };
    let mut c = Client::with(small);
    assert_eq!(c.conn.recv.available(), 65_535);
    let headers = c.request(1, "/", false);
    c.feed(&headers);
    for _ in 0..3 {
        c.feed(&raw(kind::DATA, 0, 1, &[0; 16_384]));
    }
    assert!(c.conn.error().is_none());
}

/// `send_headers` at the ends of its status range: 100 and 999 go out as
/// they are; 0, 99, 1000 and 65535 are not statuses and go out as 500.
/// A zero control-frame limit still takes the client's SETTINGS.
#[test]
fn status_edges_and_a_zero_control_limit() {
    let mut c = Client::with(Config { max_queued_control: 0, ..Config::default() });
    assert!(c.conn.error().is_none(), "the client's SETTINGS was acknowledged");
    for (stream, status, sent) in [
        (1, 100u16, "100"),
        (3, 999, "999"),
        (5, 0, "500"),
        (7, 99, "500"),
        (9, 1000, "500"),
        (11, u16::MAX, "500"),
    ] {
        let headers = c.request(stream, "/", true);
        c.feed(&headers);
        // Without END_STREAM: a 1xx may not end a stream.
        c.conn.send_headers(stream, status, [], false);
        let frames = c.sent();
        assert!(
            frames.contains(&Sent::Headers { stream, status: sent.into(), end_stream: false }),
            "{status}: {frames:?}"
        );
    }
}

/// The sending side at its edges, and a user's misuse on day one: every
/// call on a stream that never was, or is gone, does nothing (and
/// `send_data` says it took everything); empty data without END_STREAM
/// sends no frame; consuming more output than there is empties it.
#[test]
fn sending_on_streams_that_are_not_there() {
    let mut c = Client::new();
    c.conn.send_headers(7, 200, [], true);
    assert_eq!(c.conn.send_data(7, b"lost", true), 4);
    c.conn.reset(7, ErrorCode::CANCEL);
    c.conn.send_updates(7, Updates { stream: Some(10), connection: Some(20) });
    assert_eq!(c.sent(), [Sent::WindowUpdate { stream: 0, increment: 20 }]);
    assert_eq!(c.conn.send_credit(7), 0);

    let headers = c.request(1, "/", true);
    c.feed(&headers);
    c.conn.send_headers(1, 200, [], false);
    assert_eq!(c.conn.send_data(1, b"", false), 0);
    assert_eq!(c.sent().len(), 1, "HEADERS only: no empty DATA without END_STREAM");
    assert_eq!(c.conn.send_data(1, b"", true), 0);
    assert_eq!(c.sent(), [Sent::Data { stream: 1, len: 0, end_stream: true }]);
    // The stream is done: more is dropped.
    assert_eq!(c.conn.send_data(1, b"late", true), 4);
    assert_eq!(c.sent(), []);

    c.feed(&raw(kind::PING, 0, 0, &[0; 8]));
    assert!(!c.conn.output().is_empty());
    c.conn.consume_output(usize::MAX);
    assert!(c.conn.output().is_empty());
    c.conn.consume_output(1);
    assert!(c.conn.output().is_empty());

    // Updates no window gives (an application's own, made by hand): an
    // increment of 0 or past 2^31-1 sends nothing, and nothing panics;
    // the edges go out.
    c.conn.send_updates(1, Updates { stream: Some(0), connection: Some(0) });
    c.conn.send_updates(1, Updates { stream: Some(1 << 31), connection: Some(u32::MAX) });
    assert_eq!(c.sent(), []);
    c.conn.send_updates(1, Updates { stream: None, connection: Some(1) });
    assert_eq!(c.sent(), [Sent::WindowUpdate { stream: 0, increment: 1 }]);
}
