//! Arbitrary bytes, after a valid preface and SETTINGS, through
//! falconet-server's HTTP/2 connection state machine, fed in pieces of
//! fuzzer-chosen sizes; every request is answered with a small response
//! whose body waits for send credit. Checks: no panic, whole frames only
//! consumed, and at most one GOAWAY, present exactly when the connection
//! reports an error.
#![no_main]

use std::sync::Arc;

use falconet_server::h2::connection::{Config, Connection, StreamInput, Streams};
use falconet_server::h2::frame::{FrameHeader, HEADER_LEN, PREFACE, kind};
use falconet_server::h2::head::Head;
use libfuzzer_sys::fuzz_target;

/// Remembers which streams to answer.
#[derive(Default)]
struct Answer {
    opened: Vec<u32>,
    writable: bool,
}

impl Streams for Answer {
    fn headers(&mut self, stream: u32, _: &Head, _: bool, _: &Arc<StreamInput>) {
        self.opened.push(stream);
    }
    fn data(&mut self, _: u32, _: &[u8], _: bool) -> bool {
        true
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
    start.extend(FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes());
    assert_eq!(conn.receive(&start, &mut answer), start.len());
    let mut pending = Vec::new();
    let mut output = Vec::new();
    for piece in input.chunks(usize::from(split).max(1)) {
        pending.extend_from_slice(piece);
        let used = conn.receive(&pending, &mut answer);
        assert!(used <= pending.len());
        pending.drain(..used);
        for stream in answer.opened.drain(..) {
            conn.send_headers(stream, 200, [], false);
            conn.send_data(stream, &[0; 100], true);
        }
        output.extend_from_slice(conn.output());
        let n = conn.output().len();
        conn.consume_output(n);
    }
    // Walk the frames we sent: whole frames, one GOAWAY at most.
    let mut goaways = 0;
    let mut rest = &output[..];
    while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
        let header = FrameHeader::parse(header);
        goaways += usize::from(header.kind == kind::GOAWAY);
        rest = &rest[HEADER_LEN + header.length as usize..];
    }
    assert!(rest.is_empty());
    assert_eq!(goaways, usize::from(conn.error().is_some()));
});
