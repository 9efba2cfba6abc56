//! Zero heap allocations per request in steady state, counted by a global
//! allocator while a real server answers requests over TCP.

use std::io::{Read, Write};
use std::net::TcpStream;

use falconet_server::{Options, Server, hello::Hello};

mod common;

#[global_allocator]
static GLOBAL: falconet_testkit::CountingAll = falconet_testkit::CountingAll;

/// Sends `batch` (`count` requests) and reads until `count` responses
/// ended, into a fixed buffer (the client allocates nothing either).
fn exchange(stream: &mut TcpStream, batch: &[u8], count: usize, buf: &mut [u8]) {
    stream.write_all(batch).unwrap();
    common::read_markers(stream, b"Hello, World!", count, buf);
}

#[test]
fn steady_state_requests_allocate_nothing() {
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), Hello).unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    let mut plain = TcpStream::connect(addr).unwrap();
    let mut pipelined = TcpStream::connect(addr).unwrap();
    let one = b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
    let json = b"GET /json HTTP/1.1\r\nHost: t\r\n\r\n";
    let sixteen = one.repeat(16);
    let mut buf = vec![0u8; 1 << 16];
    let mut round = |buf: &mut [u8]| {
        for _ in 0..200 {
            exchange(&mut plain, one, 1, buf);
        }
        for _ in 0..200 {
            exchange(&mut pipelined, &sixteen, 16, buf);
        }
        // A JSON request on the plain connection, answered before the next.
        plain.write_all(json).unwrap();
        let mut got = 0;
        while got == 0 || !buf[..got].ends_with(b"}") {
            got += plain.read(&mut buf[got..]).unwrap();
        }
    };
    // Warm up: buffers reach their size, the pool its slabs, the thread
    // caches their blocks.
    for _ in 0..3 {
        round(&mut buf);
    }
    let before = falconet_testkit::all_allocations();
    for _ in 0..5 {
        round(&mut buf);
    }
    let after = falconet_testkit::all_allocations();
    let requests = 5 * (200 + 200 * 16 + 1);
    assert_eq!(after - before, 0, "{} allocations over {requests} requests", after - before);
    drop((plain, pipelined));
    running.handle().shutdown();
    running.join().unwrap();
}
