//! Timeouts, the connection bound and back-pressure, over real sockets.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{Client, Echo, options, serve};
use falconet_server::hello::Hello;

const SHORT: Duration = Duration::from_millis(400);

#[test]
fn slowloris_heads_get_408() {
    let head = format!("GET / HTTP/1.1\r\nHost: t\r\nX-Slow: {}", "x".repeat(100));
    trickled_head_gets_408(head.as_bytes());
}

/// The first 23 bytes of the HTTP/2 preface, trickled: while they may
/// still become the preface they are a head under way, held to the header
/// timeout. (They were timed as an idle connection, every byte restarting
/// the keep-alive timer: 23 bytes could hold a connection for 23 minutes.)
#[test]
fn a_trickled_partial_preface_gets_408() {
    trickled_head_gets_408(&b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..23]);
}

/// A byte of `head` every 100 ms keeps the connection busy but the head
/// late: 408 and a close, counted from the head's first byte.
fn trickled_head_gets_408(head: &[u8]) {
    let server = serve(options().header_timeout(SHORT), Echo);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    let began = Instant::now();
    let mut writer = client.stream().try_clone().unwrap();
    let head = head.to_vec();
    let trickle = std::thread::spawn(move || {
        for b in head {
            if writer.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    assert!(reply.closes());
    let waited = began.elapsed();
    assert!(waited >= SHORT, "not before the timeout: {waited:?}");
    // Counted from the head's first byte, not from the last one: the
    // trickle (2.3 s or more) never lets the connection look idle.
    assert!(
        waited < Duration::from_secs(2),
        "the trickle kept the connection alive for {waited:?}"
    );
    trickle.join().unwrap();
    server.stop();
}

#[test]
fn stalled_bodies_get_408() {
    let server = serve(options().io_timeout(SHORT), Echo);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    // The body is incomplete: the connection closes (RFC 9112 §6.3).
    assert!(reply.closes());
    client.expect_closed();
    server.stop();
}

#[test]
fn idle_connections_are_closed_by_the_sweep() {
    let server = serve(options().keep_alive_timeout(SHORT), Hello);
    let addr = server.addr;
    // One that never sent a byte, one idle after a request.
    let mut silent = Client::connect(addr);
    let mut used = Client::connect(addr);
    assert_eq!(used.get("/plaintext").status, 200);
    let began = Instant::now();
    silent.expect_closed();
    used.expect_closed();
    assert!(began.elapsed() >= SHORT / 2);
    // An active connection is not idle: a request every eighth of the
    // timeout (a client late by 300 ms is still on time), for 1.25 of it.
    let mut active = Client::connect(addr);
    for _ in 0..10 {
        std::thread::sleep(SHORT / 8);
        assert_eq!(active.get("/plaintext").status, 200);
    }
    server.stop();
}

#[test]
fn connections_past_the_bound_get_503() {
    let server = serve(options().max_connections(3), Hello);
    let addr = server.addr;
    let mut held: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();
    for client in &mut held {
        assert_eq!(client.get("/plaintext").status, 200);
    }
    let mut refused = Client::connect(addr);
    let reply = refused.reply().unwrap();
    assert_eq!(reply.status, 503);
    assert!(reply.closes());
    refused.expect_closed();
    // The held ones still work; closing one makes room.
    assert_eq!(held[0].get("/json").status, 200);
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut client = Client::connect(addr);
        client.send(b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
        if client.reply().unwrap().status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "room was never made");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
}

/// A client that pipelines without reading is pushed back: the server's
/// input and output stay bounded, and every response arrives once it reads.
#[test]
fn back_pressure_bounds_a_client_that_does_not_read() {
    let server = serve(options().workers(1), Hello);
    let addr = server.addr;
    let handle = server.handle().clone();
    let client = Client::connect(addr);
    let mut writer = client.stream().try_clone().unwrap();
    writer.set_write_timeout(Some(Duration::from_millis(500))).unwrap();
    let request = b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";
    let batch = request.repeat(1000);
    let mut sent = 0usize;
    // Write until the kernel buffers and the server both stop taking bytes.
    while writer.write_all(&batch).is_ok() {
        sent += 1000;
        assert!(sent < 2_000_000, "the server kept reading: no back-pressure");
    }
    let pool = handle.stats().pool;
    let held = pool.leased * pool.block_size;
    // The input pipe's pause (256 KiB unexamined) and one read past it (a
    // block's tail and 256 KiB).
    assert!(held <= (512 + 8) << 10, "unparsed input held by the server stays small: {held} bytes");
    assert!(sent >= 1000);
    // Now read every response: nothing lost, in order.
    let expected = b"Hello, World!";
    let mut reader = client.reader;
    let mut answered = 0;
    let mut buf = vec![0u8; 1 << 16];
    let mut tail = Vec::new();
    let want = sent; // whole batches; a partial batch write also lands partly
    while answered < want {
        let n = reader.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {answered} responses");
        tail.extend_from_slice(&buf[..n]);
        while let Some(end) = tail.windows(expected.len()).position(|w| w == expected) {
            answered += 1;
            tail.drain(..end + expected.len());
        }
    }
    drop(writer);
    server.stop();
}

/// A client that never reads its responses is closed after `io_timeout`.
#[test]
fn a_client_that_never_reads_is_closed() {
    let server = serve(options().workers(1).io_timeout(SHORT), Hello);
    let addr = server.addr;
    let handle = server.handle().clone();
    let client = Client::connect(addr);
    let mut writer = client.stream().try_clone().unwrap();
    writer.set_write_timeout(Some(Duration::from_millis(300))).unwrap();
    let batch = b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n".repeat(1000);
    // Until the buffers fill (or the server already gave up on us).
    while writer.write_all(&batch).is_ok() {}
    let deadline = Instant::now() + Duration::from_secs(10);
    while handle.stats().connections > 0 {
        assert!(Instant::now() < deadline, "the stalled connection was never closed");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(client);
    server.stop();
}

/// Answers with `BIG` bytes, written at once.
struct Big;

const BIG: usize = 24 << 20;

impl falconet_server::Handler for Big {
    type State = ();

    fn head(&self, _: &falconet_server::Request<'_>) {}

    fn respond(&self, (): (), response: &mut falconet_server::Response<'_>) {
        let _ = response.body(&vec![b'x'; BIG]);
    }
}

/// A client that reads slowly but steadily is not cut off (a black-box
/// probe's find): after a short write, edge-triggered readiness returns
/// only once a third of the socket's send buffer (megabytes) has drained,
/// which at this pace takes longer than `io_timeout`, so the server took
/// the silence for a client that reads nothing and closed mid-body (over
/// HTTP/1.0, a truncation the client cannot detect).
#[test]
fn a_slow_steady_reader_is_not_cut_off() {
    let server = serve(options().workers(1).io_timeout(SHORT), Big);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut stream = client.stream().try_clone().unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = 0;
    let mut buf = vec![0; 4096];
    // 4 KiB every 5 ms (800 KB/s) for 10 io_timeouts, then at full speed.
    let slow_until = Instant::now() + SHORT * 10;
    while Instant::now() < slow_until {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut buf = vec![0; 1 << 20];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
        if got >= BIG {
            break;
        }
    }
    // The head, then every byte of the body.
    assert!(got > BIG, "{got} bytes of a {BIG}-byte body and its head arrived");
}
