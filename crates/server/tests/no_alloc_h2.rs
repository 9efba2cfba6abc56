//! Zero heap allocations per HTTP/2 request in steady state, counted by a
//! global allocator while a real server answers h2c requests over TCP (the
//! synchronous handler path: `Hello`'s `/plaintext`), at any number of
//! concurrent streams up to `max_concurrent_streams` (100 by default): a
//! connection kept 16 finished streams' receive windows and staging
//! buffers, and every stream past the 16th of a batch allocated 5 times,
//! for ever (2,500 allocations over 500 batches of 17, 40,000 of 32),
//! while this test ran 16 a batch only.

use std::io::Write;
use std::net::TcpStream;

use falconet_server::h2::frame::{FrameHeader, PREFACE, flag, kind};
use falconet_server::h2::hpack::{Encoder, Field};
use falconet_server::{Options, Server, hello::Hello};

mod common;

#[global_allocator]
static GLOBAL: falconet_testkit::CountingAll = falconet_testkit::CountingAll;

/// Streams per batch, all in one write: at, past and far past the 16
/// that once were kept, up to the default `max_concurrent_streams`.
const BATCHES: [u32; 4] = [16, 17, 32, 100];
const MESSAGE: &[u8] = b"Hello, World!";

/// Writes a batch of `n` GET /plaintext streams from `next_id` into
/// `out` (cleared, never grown past its capacity), with a WINDOW_UPDATE
/// that gives back the connection credit the answers will use.
fn batch(out: &mut Vec<u8>, block: &[u8], next_id: &mut u32, n: u32) {
    out.clear();
    for _ in 0..n {
        let header = FrameHeader {
            length: block.len() as u32,
            kind: kind::HEADERS,
            flags: flag::END_HEADERS | flag::END_STREAM,
            stream: *next_id,
        };
        out.extend_from_slice(&header.to_bytes().unwrap());
        out.extend_from_slice(block);
        *next_id += 2;
    }
    let update = FrameHeader { length: 4, kind: kind::WINDOW_UPDATE, flags: 0, stream: 0 };
    out.extend_from_slice(&update.to_bytes().unwrap());
    out.extend_from_slice(&(n * MESSAGE.len() as u32).to_be_bytes());
}

/// Reads until `count` answers' bodies have arrived.
fn answers(stream: &mut TcpStream, count: usize, buf: &mut [u8]) {
    common::read_markers(stream, MESSAGE, count, buf);
}

#[test]
fn steady_state_h2_requests_allocate_nothing() {
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), Hello).unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    let mut tcp = TcpStream::connect(addr).unwrap();
    let mut start = PREFACE.to_vec();
    start.extend_from_slice(
        &FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes().unwrap(),
    );
    tcp.write_all(&start).unwrap();
    // The request's field block: literal the first time, indexed after
    // (the encoder's table then holds every field), so blocks 2.. are the
    // same bytes.
    let mut encoder = Encoder::new();
    let fields = [
        Field::new(b":method", b"GET"),
        Field::new(b":scheme", b"http"),
        Field::new(b":path", b"/plaintext"),
        Field::new(b":authority", b"localhost"),
    ];
    let mut first = Vec::new();
    encoder.encode(fields, &mut first);
    let mut block = Vec::new();
    encoder.encode(fields, &mut block);
    let mut next_id = 1;
    let mut buf = vec![0u8; 1 << 16];
    let mut out = Vec::with_capacity(4096);
    // The first stream alone, with the literal block.
    let header = FrameHeader {
        length: first.len() as u32,
        kind: kind::HEADERS,
        flags: flag::END_HEADERS | flag::END_STREAM,
        stream: next_id,
    };
    next_id += 2;
    tcp.write_all(&header.to_bytes().unwrap()).unwrap();
    tcp.write_all(&first).unwrap();
    answers(&mut tcp, 1, &mut buf);
    let mut rounds = |n: usize, per: u32, buf: &mut [u8], out: &mut Vec<u8>, next_id: &mut u32| {
        for _ in 0..n {
            batch(out, &block, next_id, per);
            tcp.write_all(out).unwrap();
            answers(&mut tcp, per as usize, buf);
        }
    };
    for per in BATCHES {
        // Warm up at this concurrency: buffers reach their size, the pool
        // its slabs, the spare stream windows and staging buffers their
        // count.
        rounds(300, per, &mut buf, &mut out, &mut next_id);
        let before = falconet_testkit::all_allocations();
        rounds(500, per, &mut buf, &mut out, &mut next_id);
        let allocations = falconet_testkit::all_allocations() - before;
        let requests = 500 * per;
        assert_eq!(
            allocations, 0,
            "{allocations} allocations over {requests} requests, {per} a batch"
        );
    }
    drop(tcp);
    running.handle().shutdown();
    running.join().unwrap();
}
