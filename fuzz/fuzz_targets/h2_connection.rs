//! Arbitrary bytes, after a valid preface and SETTINGS, through
//! falconet-server's HTTP/2 connection state machine, fed in pieces of
//! fuzzer-chosen sizes through `receive_chunk` (as the server reads its
//! input pipe's blocks); every request is answered with a small response
//! whose body waits for send credit, half copied and half sent in place.
//! Checks: no panic, trailers only for an opened stream, without
//! pseudo-fields and followed at once by its body's end, no more held
//! back than one frame, the output whole
//! frames, and the GOAWAYs as RFC 9113 6.8 allows them: at most one
//! without an error (the answer to the client's GOAWAY) and one with, the
//! latter present exactly when the connection reports its error and
//! nothing after it, the last stream id never growing.
#![no_main]

use std::sync::Arc;

use falconet_server::h2::connection::{Config, Connection, StreamInput, Streams};
use falconet_server::h2::frame::{FrameHeader, HEADER_LEN, PREFACE, kind};
use falconet_server::h2::head::Head;
use libfuzzer_sys::fuzz_target;

/// Remembers which streams to answer, and checks how trailers arrive.
#[derive(Default)]
struct Answer {
    opened: Vec<u32>,
    /// Every stream ever opened.
    known: std::collections::HashSet<u32>,
    /// Trailers just delivered: the body's end must follow at once.
    trailers_of: Option<u32>,
    writable: bool,
}

impl Streams for Answer {
    fn headers(&mut self, stream: u32, _: &Head, _: bool, _: &Arc<StreamInput>) {
        assert_eq!(self.trailers_of, None, "the end after trailers came first");
        self.opened.push(stream);
        self.known.insert(stream);
    }
    fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> bool {
        if let Some(id) = self.trailers_of.take() {
            assert_eq!((id, data.len(), end_stream), (stream, 0, true), "trailers end the body");
        }
        true
    }
    fn trailers(&mut self, stream: u32, head: &Head) {
        assert_eq!(self.trailers_of, None);
        assert!(self.known.contains(&stream), "trailers for a stream never opened");
        let pseudo = [head.method(), head.scheme(), head.authority(), head.path()];
        assert!(pseudo.iter().all(Option::is_none), "a pseudo-field in trailers");
        self.trailers_of = Some(stream);
    }
    fn reset(&mut self, _: u32) {}
    fn writable(&mut self, _: u32) {
        self.writable = true;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, input)) = data.split_first() else { return };
    let config = Config { reset_budget: 8, max_queued_control: 16, max_empty_frames: 8, ..Config::default() };
    let Ok(mut conn) = Connection::new(config) else { return };
    let mut answer = Answer::default();
    let mut start = PREFACE.to_vec();
    start.extend(FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes().unwrap());
    assert_eq!(conn.receive(&start, &mut answer), start.len());
    let mut held = Vec::new();
    let mut output = Vec::new();
    for piece in input.chunks(usize::from(split).max(1)) {
        conn.receive_chunk(&mut held, piece, &mut answer);
        assert!(held.len() <= HEADER_LEN + config.max_frame_size as usize);
        for stream in answer.opened.drain(..) {
            conn.send_headers(stream, 200, [], false);
            conn.send_data(stream, &[0; 50], false);
            let mut rest = bytes::Bytes::from_static(&[1; 50]);
            conn.send_shared(stream, &mut rest, true);
        }
        loop {
            let piece = conn.output();
            if piece.is_empty() {
                break;
            }
            output.extend_from_slice(piece);
            let n = piece.len();
            conn.consume_output(n);
        }
        assert_eq!(conn.output_len(), 0);
    }
    // Walk the frames we sent: whole frames; GOAWAYs as (last id, code).
    let mut goaways = Vec::new();
    let mut after_error = 0;
    let mut rest = &output[..];
    while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
        let header = FrameHeader::parse(header);
        let payload = &rest[HEADER_LEN..HEADER_LEN + header.length as usize];
        if goaways.last().is_some_and(|&(_, code)| code != 0) {
            after_error += 1;
        }
        if header.kind == kind::GOAWAY {
            let last = u32::from_be_bytes(payload[..4].try_into().unwrap()) & 0x7fff_ffff;
            let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
            goaways.push((last, code));
        }
        rest = &rest[HEADER_LEN + payload.len()..];
    }
    assert!(rest.is_empty());
    assert_eq!(after_error, 0, "frames after the error's GOAWAY");
    assert!(goaways.windows(2).all(|pair| pair[1].0 <= pair[0].0), "{goaways:?}");
    let errors: Vec<u32> = goaways.iter().map(|&(_, code)| code).filter(|&code| code != 0).collect();
    assert!(goaways.len() - errors.len() <= 1, "{goaways:?}");
    let reported = conn.error().map(|error| u32::from(error.code));
    assert_eq!(errors.first().copied(), reported, "{goaways:?}");
    assert!(errors.len() <= 1, "{goaways:?}");
});
