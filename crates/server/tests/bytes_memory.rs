//! A client that asks for a large answer and does not read it holds a
//! bounded amount of server memory (its own test binary: it measures the
//! process's resident memory, which other tests would disturb).
#![cfg(feature = "tokio")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::serve;
use falconet_server::Options;
use falconet_server::hello::Demo;

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn a_64_mib_answer_to_clients_that_do_not_read_is_not_buffered_whole() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let server = serve(Options::new().workers(1), Demo::new(runtime.handle().clone()));
    // Warm up (the worker's buffers, the pool's first slabs).
    let mut warm = TcpStream::connect(server.addr).unwrap();
    warm.write_all(b"GET /bytes?n=1048576 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    warm.read_to_end(&mut answer).unwrap();
    let body_at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(answer.len() > body_at + (1 << 20), "the whole answer came, chunked");
    let before = rss();
    let idle: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut tcp = TcpStream::connect(server.addr).unwrap();
            tcp.write_all(b"GET /bytes?n=67108864 HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            tcp
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let grew = rss().saturating_sub(before);
    // Written at once, each answer sat whole in its connection's output:
    // 192 MiB for three.
    assert!(grew < 32 << 20, "three unread 64 MiB answers grew RSS by {} MiB", grew >> 20);
    drop(idle);
}
