//! Zero allocations per request in steady state over HTTP/2 at any number
//! of concurrent streams up to `max_concurrent_streams` (100 by default),
//! not only at the 16 of tests/no_alloc_h2.rs: a connection kept 16
//! finished streams' receive windows and staging buffers, and every stream
//! past the 16th of a batch allocated 5 times, for ever (found by a
//! review: 2,500 allocations over 500 batches of 17, 40,000 of 32).
//! Counted by a global allocator while a real server answers h2c requests
//! over TCP.

use std::io::{Read, Write};
use std::net::TcpStream;

use falconet_server::h2::frame::{FrameHeader, PREFACE, flag, kind};
use falconet_server::h2::hpack::{Encoder, Field};
use falconet_server::{Options, Server, hello::Hello};

#[global_allocator]
static GLOBAL: falconet_testkit::CountingAll = falconet_testkit::CountingAll;

const MESSAGE: &[u8] = b"Hello, World!";

/// `n` GET /plaintext streams in one write, with the connection credit
/// their answers use.
fn batch(out: &mut Vec<u8>, block: &[u8], next_id: &mut u32, n: u32) {
    out.clear();
    for _ in 0..n {
        let header = FrameHeader {
            length: block.len() as u32,
            kind: kind::HEADERS,
            flags: flag::END_HEADERS | flag::END_STREAM,
            stream: *next_id,
        };
        out.extend_from_slice(&header.to_bytes());
        out.extend_from_slice(block);
        *next_id += 2;
    }
    let update = FrameHeader { length: 4, kind: kind::WINDOW_UPDATE, flags: 0, stream: 0 };
    out.extend_from_slice(&update.to_bytes());
    out.extend_from_slice(&(n * MESSAGE.len() as u32).to_be_bytes());
}

fn answers(stream: &mut TcpStream, count: usize, buf: &mut [u8]) {
    let mut seen = 0;
    let mut carry = 0;
    while seen < count {
        let n = stream.read(&mut buf[carry..]).unwrap();
        assert!(n > 0, "closed");
        let end = carry + n;
        let mut i = 0;
        while i + MESSAGE.len() <= end {
            if &buf[i..i + MESSAGE.len()] == MESSAGE {
                seen += 1;
                i += MESSAGE.len();
            } else {
                i += 1;
            }
        }
        let keep = end.saturating_sub(i).min(MESSAGE.len() - 1);
        buf.copy_within(end - keep..end, 0);
        carry = keep;
    }
}

#[test]
fn any_number_of_concurrent_streams_allocates_nothing_in_steady_state() {
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), Hello).unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_nodelay(true).unwrap();
    let mut start = PREFACE.to_vec();
    start.extend_from_slice(
        &FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes(),
    );
    tcp.write_all(&start).unwrap();
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
    let mut out = Vec::with_capacity(1 << 16);
    let header = FrameHeader {
        length: first.len() as u32,
        kind: kind::HEADERS,
        flags: flag::END_HEADERS | flag::END_STREAM,
        stream: next_id,
    };
    next_id += 2;
    tcp.write_all(&header.to_bytes()).unwrap();
    tcp.write_all(&first).unwrap();
    answers(&mut tcp, 1, &mut buf);
    let mut rounds = |n: usize, per: u32| {
        let before = falconet_testkit::all_allocations();
        for _ in 0..n {
            batch(&mut out, &block, &mut next_id, per);
            tcp.write_all(&out).unwrap();
            answers(&mut tcp, per as usize, &mut buf);
        }
        falconet_testkit::all_allocations() - before
    };
    let mut report = Vec::new();
    for per in [16u32, 17, 32, 100] {
        rounds(300, per); // warm-up at this concurrency
        report.push((per, rounds(500, per)));
    }
    eprintln!("(streams per batch, allocations over 500 batches): {report:?}");
    drop(tcp);
    running.handle().shutdown();
    running.join().unwrap();
    assert!(report.iter().all(|&(_, n)| n == 0), "{report:?}");
}
