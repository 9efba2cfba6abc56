//! Independent review: the Connection's shared output (send_shared,
//! output_slices, consume_output) and receive_chunk, through the public
//! `falconet_server::h2::connection` API.

mod common;

use std::io::IoSlice;
use std::sync::Arc;

use bytes::Bytes;
use common::h2raw::block;
use falconet_server::h2::connection::{Config, Connection, StreamInput, Streams};
use falconet_server::h2::frame::{FrameHeader, HEADER_LEN, PREFACE, kind};
use falconet_server::h2::head::Head;

#[derive(Default)]
struct Seen {
    events: Vec<String>,
}

impl Streams for Seen {
    fn headers(&mut self, stream: u32, head: &Head, end_stream: bool, _: &Arc<StreamInput>) {
        self.events.push(format!(
            "headers {stream} {} {} end={end_stream}",
            head.method().unwrap_or("-"),
            head.path().unwrap_or("-")
        ));
    }
    fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> bool {
        self.events
            .push(format!("data {stream} {:?} end={end_stream}", String::from_utf8_lossy(data)));
        true
    }
    fn reset(&mut self, stream: u32) {
        self.events.push(format!("reset {stream}"));
    }
    fn writable(&mut self, stream: u32) {
        self.events.push(format!("writable {stream}"));
    }
}

fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    FrameHeader { length: payload.len() as u32, kind, flags, stream }.encode(&mut out).unwrap();
    out.extend_from_slice(payload);
    out
}

fn get_block(path: &str) -> Vec<u8> {
    block(&[(":method", "GET"), (":scheme", "http"), (":path", path)])
}

fn take_all(conn: &mut Connection) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let piece = conn.output();
        if piece.is_empty() {
            return out;
        }
        out.extend_from_slice(piece);
        let n = piece.len();
        conn.consume_output(n);
    }
}

/// A connection with stream 1 open (its request ended, our head sent), windows opened
/// wide by the client, and the output drained.
fn open(window: u32) -> Connection {
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut seen = Seen::default();
    let mut input = PREFACE.to_vec();
    let mut settings = Vec::new();
    settings.extend_from_slice(&4u16.to_be_bytes());
    settings.extend_from_slice(&window.to_be_bytes());
    input.extend(raw(kind::SETTINGS, 0, 0, &settings));
    input.extend(raw(kind::WINDOW_UPDATE, 0, 0, &(window - 65_535).to_be_bytes()));
    input.extend(raw(kind::HEADERS, 0x5, 1, &get_block("/")));
    assert_eq!(conn.receive(&input, &mut seen), input.len());
    // The response's head: DATA may follow it (only it).
    conn.send_headers(1, 200, [], false);
    take_all(&mut conn);
    conn
}

/// Pieces of many sizes (1 byte to several frames), mixed with copied
/// sends and control frames, then drained by writes of every size and
/// slice arrays of every length: the same bytes as the copying path, and
/// output_len always what is left.
#[test]
fn shared_output_through_every_write_size() {
    let sizes = [1usize, 2, 9, 16_383, 16_384, 16_385, 3, 40_000, 1, 7, 0, 5];
    let window = 1 << 24;
    // Expected: the copying path.
    let mut copied = open(window);
    let mut shared = open(window);
    let all: Vec<u8> = (0..sizes.iter().sum::<usize>()).map(|i| (i * 7 % 253) as u8).collect();
    let mut at = 0;
    for (i, &s) in sizes.iter().enumerate() {
        let piece = &all[at..at + s];
        let last = i == sizes.len() - 1;
        if i % 3 == 2 {
            copied.send_data(1, piece, last);
            shared.send_data(1, piece, last);
        } else {
            assert_eq!(copied.send_data(1, piece, last), s);
            let mut b = Bytes::copy_from_slice(piece);
            assert_eq!(shared.send_shared(1, &mut b, last), s);
            assert!(b.is_empty());
        }
        at += s;
    }
    let expected = take_all(&mut copied);
    assert_eq!(shared.output_len(), expected.len());
    for slots in [1usize, 2, 3, 5, 64] {
        for step in [1usize, 8, 9, 10, 17, 4_096, 16_393, usize::MAX / 2] {
            let mut conn = open(window);
            let mut at = 0;
            for (i, &s) in sizes.iter().enumerate() {
                let piece = &all[at..at + s];
                let last = i == sizes.len() - 1;
                if i % 3 == 2 {
                    conn.send_data(1, piece, last);
                } else {
                    conn.send_shared(1, &mut Bytes::copy_from_slice(piece), last);
                }
                at += s;
            }
            let mut out = Vec::new();
            let mut guard = 0;
            while conn.output_len() > 0 {
                guard += 1;
                assert!(guard < 10_000_000);
                let mut slices = vec![IoSlice::new(&[]); slots];
                let count = conn.output_slices(&mut slices);
                assert!(count > 0, "output_len {} but no slice", conn.output_len());
                let bytes: Vec<u8> =
                    slices[..count].iter().flat_map(|s| s.iter().copied()).collect();
                assert!(slices[..count].iter().all(|s| !s.is_empty()), "an empty slice");
                let n = bytes.len().min(step);
                out.extend_from_slice(&bytes[..n]);
                let before = conn.output_len();
                conn.consume_output(n);
                assert_eq!(conn.output_len(), before - n);
            }
            assert!(out == expected, "slots {slots} step {step}");
            assert!(conn.output().is_empty());
        }
    }
}

/// Control frames queued between shared frames (a PING ack, a GOAWAY by
/// abort) go out in order and whole; after abort, more sends are dropped.
#[test]
fn control_frames_between_shared_frames() {
    let mut conn = open(1 << 20);
    let mut seen = Seen::default();
    conn.send_shared(1, &mut Bytes::from_static(b"first"), false);
    // Half the first payload goes out.
    conn.consume_output(HEADER_LEN + 2);
    conn.receive(&raw(kind::PING, 0, 0, b"12345678"), &mut seen);
    conn.send_shared(1, &mut Bytes::from_static(b"second"), false);
    conn.abort(falconet_server::h2::frame::ErrorCode::NO_ERROR);
    assert_eq!(conn.send_shared(1, &mut Bytes::from_static(b"late"), true), 4);
    let out = take_all(&mut conn);
    // Parse: rest of "first", then PING ack, DATA "second", GOAWAY.
    assert_eq!(&out[..3], b"rst");
    let mut rest = &out[3..];
    let mut kinds = Vec::new();
    while rest.len() >= HEADER_LEN {
        let h = FrameHeader::parse(rest[..HEADER_LEN].try_into().unwrap());
        let end = HEADER_LEN + h.length as usize;
        kinds.push((h.kind, rest[HEADER_LEN..end].to_vec()));
        rest = &rest[end..];
    }
    assert!(rest.is_empty());
    assert_eq!(
        kinds.iter().map(|k| k.0).collect::<Vec<_>>(),
        [kind::PING, kind::DATA, kind::GOAWAY]
    );
    assert_eq!(kinds[1].1, b"second");
}

/// The input every receive_chunk test feeds: preface, SETTINGS, a HEADERS
/// block in CONTINUATIONs, padded DATA, PING, a second request, trailers.
fn request_bytes() -> Vec<u8> {
    let mut bytes = PREFACE.to_vec();
    bytes.extend(raw(kind::SETTINGS, 0, 0, &[]));
    let head = block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/up"),
        ("x-a", "bbbbbbbbbbbb"),
    ]);
    let (a, rest) = head.split_at(5);
    let (b, c) = rest.split_at(7);
    bytes.extend(raw(kind::HEADERS, 0, 1, a));
    bytes.extend(raw(kind::CONTINUATION, 0, 1, b));
    bytes.extend(raw(kind::CONTINUATION, 0x4, 1, c));
    let mut padded = vec![3u8];
    padded.extend_from_slice(b"hello");
    padded.extend_from_slice(&[0; 3]);
    bytes.extend(raw(kind::DATA, 0x8, 1, &padded));
    bytes.extend(raw(kind::DATA, 0, 1, &[]));
    bytes.extend(raw(kind::PING, 0, 0, b"pingpong"));
    bytes.extend(raw(kind::HEADERS, 0x5, 3, &get_block("/two")));
    bytes.extend(raw(kind::DATA, 0, 1, b"world"));
    bytes.extend(raw(kind::HEADERS, 0x5, 1, &block(&[("x-t", "1")])));
    bytes
}

fn whole(bytes: &[u8]) -> (Vec<String>, Vec<u8>, usize) {
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut seen = Seen::default();
    let used = conn.receive(bytes, &mut seen);
    (seen.events, take_all(&mut conn), bytes.len() - used)
}

fn chunked(bytes: &[u8], cuts: &[usize], empties: bool) -> (Vec<String>, Vec<u8>, usize) {
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut seen = Seen::default();
    let mut held = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        if empties {
            conn.receive_chunk(&mut held, &[], &mut seen);
        }
        conn.receive_chunk(&mut held, &bytes[at..cut], &mut seen);
        at = cut;
    }
    (seen.events, take_all(&mut conn), held.len())
}

/// Cut into two and three chunks at every position (and with empty chunks
/// between): the same events, output and leftover as receiving it whole.
#[test]
fn receive_chunk_at_every_cut() {
    let bytes = request_bytes();
    let expected = whole(&bytes);
    assert!(expected.0.iter().any(|e| e.contains("hello")), "{:?}", expected.0);
    assert!(expected.0.iter().any(|e| e.contains("headers 3")), "{:?}", expected.0);
    for i in 0..=bytes.len() {
        assert_eq!(chunked(&bytes, &[i], i % 2 == 0), expected, "cut at {i}");
        for j in (i..=bytes.len()).step_by(7) {
            assert_eq!(chunked(&bytes, &[i, j], false), expected, "cuts at {i}, {j}");
        }
    }
    // Byte by byte.
    let cuts: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(chunked(&bytes, &cuts, true), expected, "bytewise");
}

/// A connection error mid-chunk (a frame over the max size, a DATA frame
/// on an idle stream), at every cut: GOAWAY, the rest ignored, nothing
/// held.
#[test]
fn receive_chunk_errors_at_every_cut() {
    for bad in [
        {
            let mut h = Vec::new();
            FrameHeader { length: (1 << 24) - 1, kind: kind::DATA, flags: 0, stream: 1 }
                .encode(&mut h)
                .unwrap();
            h
        },
        raw(kind::DATA, 0, 99, b"zz"),
    ] {
        let mut bytes = request_bytes();
        bytes.extend_from_slice(&bad);
        bytes.extend(raw(kind::PING, 0, 0, b"after..."));
        let expected = whole(&bytes);
        assert_eq!(expected.2, 0, "a closed connection holds nothing");
        for i in 0..=bytes.len() {
            let got = chunked(&bytes, &[i], false);
            assert_eq!(got, expected, "cut at {i}");
        }
    }
}

/// A frame header that claims 16 MiB: only its header is ever held.
#[test]
fn oversized_header_is_not_waited_for() {
    let mut conn = Connection::new(Config::default()).unwrap();
    let mut seen = Seen::default();
    let mut held = Vec::new();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(raw(kind::SETTINGS, 0, 0, &[]));
    FrameHeader { length: (1 << 24) - 1, kind: kind::DATA, flags: 0, stream: 1 }
        .encode(&mut bytes)
        .unwrap();
    let cut = bytes.len() - 3;
    conn.receive_chunk(&mut held, &bytes[..cut], &mut seen);
    assert_eq!(held.len(), HEADER_LEN - 3);
    assert!(conn.wants(&held) == 3, "wants {}", conn.wants(&held));
    conn.receive_chunk(&mut held, &bytes[cut..], &mut seen);
    assert!(conn.error().is_some(), "the header alone ends the connection");
    conn.receive_chunk(&mut held, &[0u8; 100_000], &mut seen);
    assert!(held.is_empty());
}
